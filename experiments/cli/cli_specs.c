/* Where the figure specs are, wherever zepsim runs from: see cli.h. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "zs_suggest.h"

static int is_dir(const char *p)
{
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int zs_cli_specs_dir(const char *given, char *out, size_t n, zs_err *e)
{
    if (given) {
        if (!is_dir(given))
            return zs_err_set(e, ZS_EIO, given, "give the folder of the *.json specs",
                              "cannot open the spec folder");
        snprintf(out, n, "%s", given);
        return ZS_OK;
    }
    const char *env = getenv("ZEPSIM_SPECS");
    const char *cand[] = {env, "experiments/specs", ZS_SPECS_INSTALL_DIR, ZS_SPECS_SOURCE_DIR};
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
        if (is_dir(cand[i])) {
            snprintf(out, n, "%s", cand[i]);
            return ZS_OK;
        }
    return zs_err_set(
        e, ZS_EIO, "experiment specs",
        "pass --dir DIR or set ZEPSIM_SPECS (looked in ./experiments/specs, " ZS_SPECS_INSTALL_DIR
        " and " ZS_SPECS_SOURCE_DIR ")",
        "cannot find the spec folder");
}

void zs_cli_spec_path(const char *spec, const char *dir, char *out, size_t n)
{
    char d[1024];
    zs_err e;
    size_t l = strlen(spec);
    /* a readable file, or anything with a folder in it, is taken as given */
    if (access(spec, R_OK) == 0 || strchr(spec, '/') || zs_cli_specs_dir(dir, d, sizeof d, &e)) {
        snprintf(out, n, "%s", spec);
        return;
    }
    snprintf(out, n, "%s/%s%s", d, spec, l > 5 && !strcmp(spec + l - 5, ".json") ? "" : ".json");
    if (access(out, R_OK) != 0)
        snprintf(out, n, "%s", spec);
}

int zs_cli_spec_missing(const char *spec, const char *dir, zs_err *e)
{
    char d[1024], path[2048];
    zs_err ignored;
    zs_cli_spec_path(spec, dir, path, sizeof path);
    if (access(path, R_OK) == 0 || strchr(spec, '/') ||
        zs_cli_specs_dir(dir, d, sizeof d, &ignored))
        return ZS_OK; /* a path: the reader says what is wrong with it */
    /* a name that is no spec of the folder: the nearest one, as for every
     * other name (issue 35 item 7) */
    static char names[256][128];
    int n = 0;
    DIR *dp = opendir(d);
    struct dirent *de;
    while (dp && n < 256 && (de = readdir(dp))) {
        size_t l = strlen(de->d_name);
        if (l > 5 && l - 5 < sizeof names[0] && !strcmp(de->d_name + l - 5, ".json"))
            snprintf(names[n++], sizeof names[0], "%.*s", (int)(l - 5), de->d_name);
    }
    if (dp)
        closedir(dp);
    char base[128];
    size_t l = strlen(spec);
    snprintf(base, sizeof base, "%.*s", (int)(l > 5 && !strcmp(spec + l - 5, ".json") ? l - 5 : l),
             spec);
    zs_suggest sg;
    zs_suggest_init(&sg, base);
    for (int i = 0; i < n; i++)
        zs_suggest_add(&sg, names[i]);
    char dym[200];
    zs_suggest_phrase(&sg, dym, sizeof dym);
    char fix[1400];
    snprintf(fix, sizeof fix,
             "%s`zepsim list specs` lists the specs in %s (or give a spec file's path)", dym, d);
    return zs_err_set(e, ZS_EUSAGE, spec, fix, "no such spec file or spec name");
}

/* Where the figure specs are, wherever zepsim runs from: see cli.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

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

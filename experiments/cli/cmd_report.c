/* `zepsim report DB -o report.html`: the results database as one
 * self-contained web page (experiments/zs_html.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "zs_html.h"

static const char report_help[] =
    "usage: zepsim report DB [-o FILE.html] [--dir SPECS]\n"
    "\n"
    "Writes one static web page of the results database DB: a summary of every\n"
    "figure spec that stored points (points, paper comparisons within 15%), then\n"
    "each spec's plot (inline SVG), its paper-vs-ours table, every point and its\n"
    "configuration, as `zepsim experiment report` writes them. The page has no\n"
    "script and loads nothing (open it offline, mail it); the database is only\n"
    "read.\n"
    "\n"
    "options:\n";

enum { MAX_SPECS = 256 };

/* The specs that stored points in db, as paths (caller frees each); a
 * spec whose file is not found is left out with a warning. */
static int spec_paths(zs_db *db, const char *dir, char **paths, int *n, zs_err *e)
{
    *n = 0;
    zs_table *t = zs_table_new(NULL);
    if (!t)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int rc = zs_db_query(db, "SELECT DISTINCT spec FROM results WHERE spec <> '' ORDER BY spec", 0,
                         t, e);
    for (int r = 0; !rc && r < zs_table_nrows(t) && *n < MAX_SPECS; r++) {
        const char *name = zs_table_text(t, r, 0);
        char path[2048];
        zs_cli_spec_path(name, dir, path, sizeof path);
        if (access(path, R_OK) != 0) {
            fprintf(stderr,
                    "zepsim: warning: spec '%s' stored points but its file is not in the spec "
                    "folder: left out (give --dir)\n",
                    name);
            continue;
        }
        if (!(paths[(*n)++] = strdup(path)))
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    zs_table_free(t);
    return rc;
}

/* A scratch folder beside out, for zs_report's files. */
static int scratch(const char *out, char *tmp, size_t n, zs_err *e)
{
    const char *slash = strrchr(out, '/');
    snprintf(tmp, n, "%.*s%s.zepsim-report-XXXXXX", slash ? (int)(slash - out + 1) : 0, out, "");
    if (!mkdtemp(tmp))
        return zs_err_set(e, ZS_EIO, out, "write the page into a folder you can write",
                          "cannot create a scratch folder beside it");
    return ZS_OK;
}

int zs_cmd_report(int argc, char **argv)
{
    static const zs_cli_use uses[] = {
        {ZS_F_OUT, "the page (default report.html; -o is the same option)"},
        {ZS_F_DIR, NULL},
        {0, NULL}};
    static const int o_ids[] = {ZS_F_OUT};
    static const zs_cli_cmd cmd = {
        .name = "report", .head = report_help, .uses = uses, .letters = "o", .letter_ids = o_ids};
    zs_cli_flags fl;
    int bad = zs_cli_parse(&cmd, argc, argv, NULL, &fl);
    if (bad >= 0)
        return bad;
    const char *out = fl.out ? fl.out : "report.html", *dir = fl.dir;
    if (optind != argc - 1)
        return zs_cli_usage_error("report", "give one results database (zepsim report DB)");
    zs_err e;
    zs_err_clear(&e);
    zs_db *db = NULL;
    if (zs_db_open_readonly(argv[optind], &db, &e))
        return zs_cli_fail(&e);
    char *paths[MAX_SPECS];
    int n = 0;
    char tmp[4096];
    int rc = spec_paths(db, dir, paths, &n, &e);
    if (!rc && n == 0)
        rc = zs_err_set(&e, ZS_EINPUT, argv[optind], "run `zepsim experiment run SPEC` into it",
                        "no spec's points in the database");
    zs_html_stats st;
    if (!rc && !(rc = scratch(out, tmp, sizeof tmp, &e))) {
        rc = zs_html_write(db, (const char *const *)paths, n, out, tmp, &st, &e);
        rmdir(tmp);
    }
    for (int i = 0; i < n; i++)
        free(paths[i]);
    zs_db_close(db);
    if (rc)
        return zs_cli_fail(&e);
    printf("wrote %s: %d specs, %d points, %d plots inlined%s\n", out, st.specs, st.points,
           st.plotted, st.plotted < st.specs ? " (gnuplot is missing or failed for the rest)" : "");
    return 0;
}

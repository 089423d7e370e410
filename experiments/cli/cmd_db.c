/* `zepsim db query|merge|schema`: the results database from the command
 * line (plain sqlite3 works on the same file). */
#include <string.h>

#include "cli.h"
#include "zs_db.h"

static const char db_help[] =
    "usage: zepsim db query SQL [--db FILE] [--format table|csv|json]\n"
    "       zepsim db merge OUT IN...\n"
    "       zepsim db schema\n"
    "\n"
    "query   runs one SQL statement that only reads (SELECT) on the results database,\n"
    "        opened read-only\n"
    "        (e.g. \"SELECT method, tokens_per_s FROM results WHERE spec = 'fig8'\");\n"
    "        the view `points` has the stored figures under the names and units of\n"
    "        compare and simulate (iter_ms, mfu_pct, ...: `zepsim list columns`)\n"
    "merge   copies into OUT every row of the IN databases whose configuration OUT\n"
    "        lacks (shards of one sweep run on several machines)\n"
    "schema  prints the schema with a comment per column\n"
    "\n"
    "options:\n";

int zs_cmd_db(int argc, char **argv)
{
    static const zs_cli_use uses[] = {
        {ZS_F_DB, NULL}, {ZS_F_FORMAT, "query only (default table)"}, {0, NULL}};
    static const zs_cli_cmd cmd = {.name = "db", .head = db_help, .uses = uses};
    zs_cli_flags fl;
    int st = zs_cli_parse(&cmd, argc, argv, NULL, &fl);
    if (st >= 0)
        return st;
    const char *dbpath = fl.db ? fl.db : "zepsim.db";
    zs_format fmt = fl.fmt;
    zs_err e;
    zs_err_clear(&e);
    if (optind >= argc)
        return zs_cli_usage_error("db", "give a subcommand: query, merge or schema");
    const char *sub = argv[optind++];
    int nargs = argc - optind;
    char **rest = argv + optind;
    if (!strcmp(sub, "schema")) {
        if (nargs)
            return zs_cli_usage_error("db", "schema takes no arguments");
        fputs(zs_db_schema(), stdout);
        return 0;
    }
    if (!strcmp(sub, "query")) {
        if (nargs != 1)
            return zs_cli_usage_error("db", "query takes one SQL statement (quote it)");
        zs_db *db = NULL;
        if (zs_db_open_readonly(dbpath, &db, &e))
            return zs_cli_fail(&e);
        zs_table *t = zs_table_new(NULL);
        int rc = zs_db_query(db, rest[0], 0, t, &e);
        zs_db_close(db);
        if (rc) {
            zs_table_free(t);
            return zs_cli_fail(&e);
        }
        return zs_cli_print1("db", fmt, "rows", t);
    }
    if (!strcmp(sub, "merge")) {
        if (nargs < 2)
            return zs_cli_usage_error("db", "merge needs OUT and at least one IN database");
        long copied = 0, skipped = 0;
        if (zs_db_merge(rest[0], rest + 1, nargs - 1, &copied, &skipped, &e))
            return zs_cli_fail(&e);
        printf("merged %d database%s into %s: %ld rows copied, %ld already present\n", nargs - 1,
               nargs == 2 ? "" : "s", rest[0], copied, skipped);
        return 0;
    }
    return zs_cli_usage_error("db", "unknown subcommand '%s' (use query, merge or schema)", sub);
}

/* The results database: see zs_db.h. */
#include "zs_db.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "zs_calib.h"
#include "zs_step.h"
#include "zs_version.h"

struct zs_db {
    sqlite3 *h;
    char path[1024];
    char owner[320]; /* this process in the claims table: "host pid start" */
};

static const char schema_sql[] =
    "-- zepsim results database (schema version 4; a version 2 or 3 file gets\n"
    "-- the later columns, NULL in its old rows, from the first writer).\n"
    "-- One row per run point. `key` is the canonical configuration (every\n"
    "-- field that can change a number, the software version and the\n"
    "-- calibration's SHA-256); it is UNIQUE, so a resumed run skips stored\n"
    "-- points and `zepsim db merge` copies only new ones.\n"
    "CREATE TABLE IF NOT EXISTS meta (\n"
    "  key TEXT PRIMARY KEY,        -- 'schema_version'\n"
    "  value TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS results (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  key TEXT NOT NULL UNIQUE,     -- canonical configuration (see above)\n"
    "  status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),\n"
    "  error TEXT,                   -- why a failed point failed\n"
    "  spec TEXT,                    -- name of the spec that first stored it\n"
    "  version TEXT NOT NULL,        -- zepsim version (ZS_VERSION)\n"
    "  model TEXT NOT NULL,          -- configuration: one column per zs_point_cfg field\n"
    "  cluster TEXT NOT NULL,\n"
    "  nodes INTEGER NOT NULL,       -- 0: the cluster preset's node count\n"
    "  trace TEXT NOT NULL,\n"
    "  method TEXT NOT NULL,\n"
    "  opts TEXT NOT NULL,           -- method options k=v,k=v\n"
    "  context INTEGER NOT NULL,     -- tokens per context group\n"
    "  group_gpus INTEGER NOT NULL,  -- GPUs per context group\n"
    "  iterations INTEGER NOT NULL,\n"
    "  seed INTEGER NOT NULL,\n"
    "  backend TEXT NOT NULL,        -- sim | analytic\n"
    "  calib TEXT NOT NULL,          -- calibration file ('' : analytical costs)\n"
    "  calib_sha256 TEXT NOT NULL,   -- its SHA-256 ('' when none)\n"
    "  zero_stage INTEGER NOT NULL,\n"
    "  recompute TEXT NOT NULL,      -- none | full\n"
    "  validate INTEGER NOT NULL,    -- plans checked by the plan validator\n"
    "  timeline TEXT NOT NULL,       -- Chrome trace file name ('' none)\n"
    "  config TEXT NOT NULL,         -- zs_point_cfg_format: the configuration as text\n"
    "  cost_desc TEXT,               -- the cost model used\n"
    "  iters_done INTEGER,           -- figures (NULL for failed points):\n"
    "  tokens REAL,                  --   tokens trained, all iterations\n"
    "  seconds REAL,                 --   simulated seconds, all iterations\n"
    "  iter_time REAL,               --   mean iteration time, s\n"
    "  tokens_per_s REAL,\n"
    "  mfu REAL,                     --   0..1\n"
    "  exposed_share REAL,           --   exposed communication / iteration time\n"
    "  max_nic_util REAL,            --   busiest NIC busy / iteration time\n"
    "  attn_imbalance REAL,          --   max/mean attention work per rank\n"
    "  linear_imbalance REAL,        --   max/mean linear tokens per rank\n"
    "  plan_ms REAL,                 --   planning time per batch (host)\n"
    "  imbalance_degree REAL,        --   max micro-batch latency x micro-batches / total\n"
    "                                --   (mean; 0: no micro-batches)\n"
    "  delay_iters REAL,             --   iterations a trained token waited (mean)\n"
    "  ops INTEGER,                  --   ops executed, all iterations\n"
    "  wall_s REAL,                  --   host seconds for the point\n"
    "  planner_notes TEXT,           -- the planner's notes (last iteration)\n"
    "  backend_notes TEXT,           -- what the backend approximated\n"
    "  slowest_why TEXT,             -- why the slowest rank was slowest\n"
    "  host TEXT,                    -- machine that ran it\n"
    "  created TEXT,                 -- UTC time it was stored\n"
    "  nodes_run INTEGER,            -- version 3: nodes as run (the cluster's when nodes = 0)\n"
    "  gpus INTEGER,                 --   GPUs as run\n"
    "  attn_kernel TEXT,             --   attention kernel ('' : the GPU's own)\n"
    "  compute_share REAL,           --   mean time computing / iteration time\n"
    "  idle_share REAL,              --   mean time waiting on peers / iteration time\n"
    "  peak_mem REAL,                --   peak memory of one GPU, bytes (memory model)\n"
    "  mem_capacity REAL,            --   usable bytes of one GPU\n"
    "  baseline_key TEXT,            --   key of the storing spec's baseline point of\n"
    "                                --   the same case (speedup; NULL: none)\n"
    "  xnode_p2p_n INTEGER,          -- version 4: cross-node transfers in the timeline\n"
    "  xnode_p2p_time REAL           --   their median duration, s (NULL: no timeline)\n"
    ");\n"
    "-- Points being run now: a runner claims a point here before running it\n"
    "-- and drops the claim when it stores the result, so two runners on one\n"
    "-- spec share the work. A claim whose process is gone is stale.\n"
    "CREATE TABLE IF NOT EXISTS claims (\n"
    "  key TEXT PRIMARY KEY,         -- the point's configuration key\n"
    "  owner TEXT NOT NULL,          -- 'host pid start-time' of the runner\n"
    "  host TEXT NOT NULL,\n"
    "  pid INTEGER NOT NULL,\n"
    "  created TEXT NOT NULL         -- UTC time of the claim\n"
    ");\n";

static const char *const cols =
    "key, status, error, spec, version, model, cluster, nodes, trace, method, opts, context, "
    "group_gpus, iterations, seed, backend, calib, calib_sha256, zero_stage, recompute, "
    "validate, timeline, config, cost_desc, iters_done, tokens, seconds, iter_time, "
    "tokens_per_s, mfu, exposed_share, max_nic_util, attn_imbalance, linear_imbalance, "
    "plan_ms, imbalance_degree, delay_iters, ops, wall_s, planner_notes, backend_notes, "
    "slowest_why, host, created";

/* The columns schema versions 3 and 4 added, in order, with their types:
 * an older file gets them from its first writer (ALTER TABLE), and a
 * reader of one reads NULL for them. Named v3 for the first of them. */
static const char *const v3_cols[][2] = {
    {"nodes_run", "INTEGER"},   {"gpus", "INTEGER"},      {"attn_kernel", "TEXT"},
    {"compute_share", "REAL"},  {"idle_share", "REAL"},   {"peak_mem", "REAL"},
    {"mem_capacity", "REAL"},   {"baseline_key", "TEXT"}, {"xnode_p2p_n", "INTEGER"},
    {"xnode_p2p_time", "REAL"},
};
#define ZS_DB_NV3 ((int)(sizeof v3_cols / sizeof v3_cols[0]))

const char *zs_db_schema(void)
{
    return schema_sql;
}

/* The zs_err for a failed SQLite call, in words: what happened (disk full,
 * locked, read-only, not a database, corrupt) and what to do about it,
 * with SQLite's own message in parentheses. */
static int db_error(sqlite3 *h, int src, const char *where, const char *doing, zs_err *e)
{
    const char *msg = h ? sqlite3_errmsg(h) : sqlite3_errstr(src);
    const char *what, *fix;
    int code = ZS_ERUNTIME;
    /* a full disk can surface as an I/O error (the -shm file on a full
     * tmpfs): the system's errno tells */
    if ((src & 0xff) == SQLITE_IOERR && h && sqlite3_system_errno(h) == ENOSPC)
        src = SQLITE_FULL;
    switch (src & 0xff) {
    case SQLITE_FULL:
        what = "disk full";
        fix = "free space on the disk (or move the database) and rerun: stored points are kept";
        code = ZS_EIO;
        break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        what = "database locked by another process";
        fix = "wait for the other zepsim (or sqlite3) using the file to finish, then rerun";
        break;
    case SQLITE_READONLY:
        what = "database is read-only";
        fix = "check the permissions of the file and its folder (db query, experiment list and "
              "report only read)";
        code = ZS_EIO;
        break;
    case SQLITE_CANTOPEN:
        what = "cannot open the database";
        fix = "check the path, and that the folder exists and can be written (SQLite keeps its "
              "-wal and -shm files beside the database)";
        code = ZS_EIO;
        break;
    case SQLITE_NOTADB:
        what = "not an SQLite database";
        fix = "give a results database written by `zepsim experiment run`";
        code = ZS_EINPUT;
        break;
    case SQLITE_CORRUPT:
        what = "the database file is corrupt";
        fix = "restore it from a copy, or merge its shards again (`zepsim db merge`)";
        code = ZS_EINPUT;
        break;
    case SQLITE_IOERR:
        what = "I/O error on the database";
        fix = "check the disk and the file system";
        code = ZS_EIO;
        break;
    case SQLITE_NOMEM:
        what = "out of memory in SQLite";
        fix = NULL;
        code = ZS_ENOMEM;
        break;
    default:
        what = "database error";
        fix = NULL;
    }
    return zs_err_set(e, code, where, fix, "%s while %s (%s)", what, doing, msg);
}

static int exec(zs_db *db, const char *sql, const char *doing, zs_err *e)
{
    int src = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    return src == SQLITE_OK ? ZS_OK : db_error(db->h, src, db->path, doing, e);
}

/* One integer from a query ("SELECT count(*) ..."): ZS_OK with *out, or an
 * error saying what failed. */
static int query_int(zs_db *db, const char *sql, const char *doing, long *out, zs_err *e)
{
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
    if (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
        *out = (long)sqlite3_column_int64(st, 0);
        src = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return src == SQLITE_OK ? ZS_OK : db_error(db->h, src, db->path, doing, e);
}

/* A zepsim results database of this schema version: its meta and results
 * tables exist and meta holds ZS_DB_SCHEMA_VERSION. `fresh` is set for an SQLite file
 * without any table (a new database: the schema may be created). */
static int check_schema(zs_db *db, int *fresh, zs_err *e)
{
    long tables = 0, ours = 0;
    int rc;
    if ((rc = query_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                        "reading the schema", &tables, e)) ||
        (rc = query_int(db,
                        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                        "('meta', 'results')",
                        "reading the schema", &ours, e)))
        return rc;
    *fresh = tables == 0;
    if (tables == 0)
        return ZS_OK;
    if (ours != 2)
        return zs_err_set(e, ZS_EINPUT, db->path,
                          "give a results database written by `zepsim experiment run` (or a new "
                          "file name)",
                          "not a zepsim results database (an SQLite file without its meta and "
                          "results tables)");
    sqlite3_stmt *st = NULL;
    char ver[32] = "";
    int src = sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = 'schema_version'", -1,
                                 &st, NULL);
    if (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW)
        snprintf(ver, sizeof ver, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (src != SQLITE_OK && src != SQLITE_ROW && src != SQLITE_DONE)
        return db_error(db->h, src, db->path, "reading the schema version", e);
    int v = atoi(ver);
    if (v < 2 || v > ZS_DB_SCHEMA_VERSION || strspn(ver, "0123456789") != strlen(ver))
        return zs_err_set(e, ZS_EINPUT, db->path,
                          "use a zepsim of the version that wrote it, or a new database file",
                          "database schema version '%s'; this zepsim reads versions 2 to %d", ver,
                          ZS_DB_SCHEMA_VERSION);
    return ZS_OK;
}

/* Whether the results table of schema ("main", "src") has column name. */
static int has_col(zs_db *db, const char *schema, const char *name)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT count(*) FROM pragma_table_info('results', ?) WHERE name = ?",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, schema, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    }
    sqlite3_finalize(st);
    return found;
}

/* The version 3 columns of schema's results table, each ", name" (or
 * ", NULL" where a version 2 file lacks it), prefixed by `prefix.`. */
static void v3_select(zs_db *db, const char *schema, char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < ZS_DB_NV3 && o < n; i++)
        o += (size_t)snprintf(out + o, n - o, ", %s",
                              has_col(db, schema, v3_cols[i][0]) ? v3_cols[i][0] : "NULL");
}

/* An older file gets the columns it lacks (NULL in its rows), in the
 * writer's schema transaction. */
static int migrate(zs_db *db, zs_err *e)
{
    int rc = ZS_OK;
    for (int i = 0; i < ZS_DB_NV3 && !rc; i++) {
        if (has_col(db, "main", v3_cols[i][0]))
            continue;
        char sql[160];
        snprintf(sql, sizeof sql, "ALTER TABLE results ADD COLUMN %s %s", v3_cols[i][0],
                 v3_cols[i][1]);
        rc = exec(db, sql, "upgrading the schema", e);
    }
    char ver[96];
    snprintf(ver, sizeof ver, "INSERT OR REPLACE INTO meta VALUES ('schema_version', '%d');",
             ZS_DB_SCHEMA_VERSION);
    return rc ? rc : exec(db, ver, "upgrading the schema", e);
}

/* The process start time in clock ticks since boot (field 22 of
 * /proc/PID/stat), which tells a live runner from a later process that got
 * the same pid; 0 when unknown. */
static unsigned long long proc_start(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold blanks */
    unsigned long long t = 0;
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (p)
        sscanf(p, "%llu", &t);
    return t;
}

static void self_owner(zs_db *db)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(db->owner, sizeof db->owner, "%s %ld %llu", host, (long)getpid(),
             proc_start((long)getpid()));
}

/* A WAL database in a folder this user cannot write (a read-only mount,
 * another user's folder), with no -wal file: SQLite cannot make the -shm
 * file a reader needs (SQLITE_CANTOPEN on a read-only mount,
 * SQLITE_READONLY where permissions forbid it), but every committed row is
 * in the main file and no writer is running (a writer keeps a -wal file),
 * so it is opened as immutable. */
static int reopen_immutable(zs_db *db)
{
    char wal[1100], uri[3400];
    snprintf(wal, sizeof wal, "%s-wal", db->path);
    if (access(wal, F_OK) == 0 || access(db->path, R_OK) != 0)
        return 0;
    size_t n = (size_t)snprintf(uri, sizeof uri, "file:");
    for (const unsigned char *p = (const unsigned char *)db->path; *p && n + 4 < sizeof uri; p++)
        n += (size_t)(strchr("?#%", *p) || *p < 0x21 ? snprintf(uri + n, 4, "%%%02X", *p)
                                                     : snprintf(uri + n, 2, "%c", *p));
    snprintf(uri + n, sizeof uri - n, "?immutable=1");
    sqlite3_close(db->h);
    db->h = NULL;
    return sqlite3_open_v2(uri, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) == SQLITE_OK;
}

/* Reading needs the -shm file, which this user cannot create, and a -wal
 * file holds rows not yet in the main file (a runner is at work, or one
 * was killed), so immutable would miss them: say what to do. */
static int wal_unreadable(zs_db *db, int rc, zs_err *e)
{
    char wal[1100];
    snprintf(wal, sizeof wal, "%s-wal", db->path);
    if (access(wal, F_OK) != 0)
        return rc;
    return zs_err_set(e, ZS_EIO, db->path,
                      "wait for the runner writing it to finish, or run `zepsim db query "
                      "'SELECT 1' --db FILE` once as a user who can write its folder (that "
                      "folds the -wal file in), or copy the database with its -wal file to a "
                      "folder you can write",
                      "cannot read the database as this user: its -wal file holds results not "
                      "yet in the main file, and SQLite needs to create the -shm file beside "
                      "it to read them");
}

/* How long a writer waits for another process's lock (SQLite's busy
 * timeout, and the journal-mode switch's retries below), ms. */
#define BUSY_MS 30000

/* Puts the file in WAL mode (once per file: the mode is kept in it). The
 * switch needs the file to itself, and SQLite answers SQLITE_BUSY at once,
 * without the busy handler, while another connection holds a write lock
 * (waiting could deadlock): two runners started together on a new file
 * (reproduce-figures' lanes) met it, and the second gave up on its first
 * spec. So it is retried here, every 20 ms, for as long as the busy timeout. */
static int set_wal(zs_db *db, zs_err *e)
{
    int src = SQLITE_BUSY;
    for (int waited = 0; waited <= BUSY_MS; waited += 20) {
        src = sqlite3_exec(db->h, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
                           NULL);
        if ((src & 0xff) != SQLITE_BUSY && (src & 0xff) != SQLITE_LOCKED)
            break;
        sqlite3_sleep(20);
    }
    return src == SQLITE_OK ? ZS_OK : db_error(db->h, src, db->path, "setting the journal mode", e);
}

static int db_open(const char *path, int readonly, zs_db **out, zs_err *e)
{
    zs_db *db = calloc(1, sizeof *db);
    if (!db)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory opening a database");
    snprintf(db->path, sizeof db->path, "%s", path);
    self_owner(db);
    int src = sqlite3_open_v2(
        path, &db->h, readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
        NULL);
    int rc = ZS_OK, fresh = 0;
    if (src != SQLITE_OK)
        rc = db_error(db->h, src, path, "opening the results database", e);
    /* several processes (runners, `db query`) may use the file at once */
    if (!rc)
        sqlite3_busy_timeout(db->h, BUSY_MS);
    if (!rc && readonly) {
        rc = check_schema(db, &fresh, e);
        int ec = rc ? sqlite3_errcode(db->h) & 0xff : SQLITE_OK;
        if ((ec == SQLITE_CANTOPEN || ec == SQLITE_READONLY) && reopen_immutable(db))
            rc = check_schema(db, &fresh, e);
        else if (ec == SQLITE_CANTOPEN || ec == SQLITE_READONLY)
            rc = wal_unreadable(db, rc, e);
        if (!rc && fresh)
            rc = zs_err_set(e, ZS_EINPUT, path, "run `zepsim experiment run SPEC --db FILE` first",
                            "an empty database (no results)");
    }
    /* Only a writer sets the schema and the journal mode: a reader changes
     * nothing, so a read-only file or folder can be queried. The schema is
     * checked and created in one IMMEDIATE transaction: a second runner
     * started on the same new file waits for it, instead of finding the
     * meta table without the results table and calling the file foreign. */
    if (!rc && !readonly)
        rc = exec(db, "BEGIN IMMEDIATE", "opening the results database", e);
    if (!rc && !readonly) {
        /* IF NOT EXISTS: a database from before the claims table gets it */
        rc = check_schema(db, &fresh, e);
        if (!rc)
            rc = exec(db, schema_sql, "creating the schema", e);
        if (!rc)
            rc = migrate(db, e);
        if (!rc)
            rc = exec(db, "COMMIT", "creating the schema", e);
        else
            sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    }
    if (!rc && !readonly)
        rc = set_wal(db, e);
    if (rc) {
        zs_db_close(db);
        return rc;
    }
    *out = db;
    return ZS_OK;
}

int zs_db_open(const char *path, zs_db **out, zs_err *e)
{
    return db_open(path, 0, out, e);
}

int zs_db_open_readonly(const char *path, zs_db **out, zs_err *e)
{
    if (access(path, F_OK) != 0)
        return zs_err_set(e, ZS_EIO, path,
                          "pass --db FILE, or run `zepsim experiment run SPEC --db FILE` first",
                          "no results database");
    return db_open(path, 1, out, e);
}

void zs_db_busy_timeout(zs_db *db, int ms)
{
    sqlite3_busy_timeout(db->h, ms);
}

void zs_db_close(zs_db *db)
{
    if (!db)
        return;
    sqlite3_close(db->h);
    free(db);
}

int zs_db_key(const zs_point_cfg *c, char *buf, size_t n, zs_err *e)
{
    char sha[65] = "";
    if (c->calib[0]) {
        int rc = zs_sha256_file(c->calib, sha, e);
        if (rc)
            return rc;
    }
    snprintf(buf, n,
             "version=%s; model=%s; cluster=%s; nodes=%d; trace=%s; method=%s; opts=%s; "
             "context=%lld; group=%d; iterations=%d; seed=%llu; backend=%s; calib=%s; "
             "calib_sha256=%s; zero=%d; recompute=%s; validate=%d; timeline=%s; fold=%s",
             ZS_VERSION, c->model, c->cluster, c->nodes, c->trace, c->method, c->opts,
             (long long)c->context, c->group, c->iterations, (unsigned long long)c->seed,
             c->backend, c->calib, sha, c->zero_stage,
             c->recompute == ZS_RECOMPUTE_FULL ? "full" : "none", c->validate, c->timeline,
             c->fold == 0   ? "off"
             : c->fold == 1 ? "on"
                            : "steady");
    if (c->interference) /* off (the default) keeps the keys stored before it existed */
        snprintf(buf + strlen(buf), n - strlen(buf), "; interference=on");
    if (c->precision) /* the same for bf16 */
        snprintf(buf + strlen(buf), n - strlen(buf), "; precision=%s",
                 zs_precision_name((zs_precision)c->precision));
    if (c->fsdp != ZS_FSDP2) /* the same for fsdp2 */
        snprintf(buf + strlen(buf), n - strlen(buf), "; fsdp=%s", zs_fsdp_name(c->fsdp));
    if (c->grad == ZS_GRAD_BF16) /* the same for fp32 */
        snprintf(buf + strlen(buf), n - strlen(buf), "; grad_dtype=bf16");
    return ZS_OK;
}

int zs_db_has(zs_db *db, const char *key, int *found, int *ok, zs_err *e)
{
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(db->h, "SELECT status FROM results WHERE key = ?", -1, &st, NULL);
    if (src)
        return db_error(db->h, src, db->path, "looking up a point", e);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    *found = s == SQLITE_ROW;
    if (ok)
        *ok = *found && !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return db_error(db->h, s, db->path, "looking up a point", e);
    return ZS_OK;
}

static void text_col(sqlite3_stmt *st, int i, char *dst, size_t n)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

/* The version 3 columns from column i on (NULL in a version 2 file: 0). */
static void get_v3(sqlite3_stmt *st, int i, zs_db_row *row)
{
    zs_point_result *r = &row->r;
    r->nodes = sqlite3_column_int(st, i);
    r->gpus = sqlite3_column_int(st, i + 1);
    r->compute_share = sqlite3_column_double(st, i + 3);
    r->idle_share = sqlite3_column_double(st, i + 4);
    r->peak_mem = sqlite3_column_double(st, i + 5);
    r->mem_capacity = sqlite3_column_double(st, i + 6);
    text_col(st, i + 7, row->baseline_key, sizeof row->baseline_key);
    if (sqlite3_column_type(st, i + 9) != SQLITE_NULL) {
        r->xnode_n = sqlite3_column_int64(st, i + 8);
        r->xnode_us = sqlite3_column_double(st, i + 9) * 1e6;
    }
}

int zs_db_get(zs_db *db, const char *key, zs_db_row *row, int *found, zs_err *e)
{
    sqlite3_stmt *st = NULL;
    char sql[1024], v3[256];
    v3_select(db, "main", v3, sizeof v3);
    snprintf(sql, sizeof sql,
             "SELECT status, error, iters_done, tokens, seconds, iter_time, tokens_per_s, mfu, "
             "exposed_share, max_nic_util, attn_imbalance, linear_imbalance, plan_ms, ops, "
             "wall_s, cost_desc, planner_notes, backend_notes, slowest_why, imbalance_degree, "
             "delay_iters%s FROM results WHERE key = ?",
             v3);
    int src = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
    if (src)
        return db_error(db->h, src, db->path, "reading a point", e);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    *found = 0;
    if (s == SQLITE_ROW) {
        memset(row, 0, sizeof *row);
        *found = 1;
        row->ok = !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
        text_col(st, 1, row->error, sizeof row->error);
        zs_point_result *r = &row->r;
        r->iterations = sqlite3_column_int(st, 2);
        r->tokens = sqlite3_column_double(st, 3);
        r->seconds = sqlite3_column_double(st, 4);
        r->iter_time = sqlite3_column_double(st, 5);
        r->tokens_per_s = sqlite3_column_double(st, 6);
        r->mfu = sqlite3_column_double(st, 7);
        r->exposed_share = sqlite3_column_double(st, 8);
        r->max_nic_util = sqlite3_column_double(st, 9);
        r->attn_imbalance = sqlite3_column_double(st, 10);
        r->linear_imbalance = sqlite3_column_double(st, 11);
        r->plan_ms = sqlite3_column_double(st, 12);
        r->ops = sqlite3_column_int64(st, 13);
        r->wall_s = sqlite3_column_double(st, 14);
        text_col(st, 15, r->cost_desc, sizeof r->cost_desc);
        text_col(st, 16, r->notes, sizeof r->notes);
        text_col(st, 17, row->backend_notes, sizeof row->backend_notes);
        text_col(st, 18, row->slowest_why, sizeof row->slowest_why);
        r->imbalance_degree = sqlite3_column_double(st, 19);
        r->delay_iters = sqlite3_column_double(st, 20);
        r->tokens_per_iter = r->iterations > 0 ? r->tokens / r->iterations : 0;
        get_v3(st, 21, row);
    }
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return db_error(db->h, s, db->path, "reading a point", e);
    return ZS_OK;
}

/* Runs one statement that returns no rows with its text parameters bound
 * in order (NULL ends them; at most three). */
static int exec_bound(zs_db *db, const char *sql, const char *doing, zs_err *e, const char *a,
                      const char *b, const char *c)
{
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
    const char *v[] = {a, b, c};
    for (int i = 0; src == SQLITE_OK && i < 3 && v[i]; i++)
        src = sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
    if (src == SQLITE_OK)
        src = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db->h);
    sqlite3_finalize(st);
    return src == SQLITE_OK ? ZS_OK : db_error(db->h, src, db->path, doing, e);
}

/* Drops the claim on key: this runner's only (mine), or anyone's. */
static int unclaim(zs_db *db, const char *key, int mine, const char *doing, zs_err *e)
{
    return mine ? exec_bound(db, "DELETE FROM claims WHERE key = ? AND owner = ?", doing, e, key,
                             db->owner, NULL)
                : exec_bound(db, "DELETE FROM claims WHERE key = ?", doing, e, key, NULL, NULL);
}

/* Whether the runner that made a claim still runs: same host, the pid
 * alive and started when the claim says. SQLite's WAL mode works on one
 * host only, so a claim from another host came with a copied file and
 * nobody is running it. */
static int claim_live(const zs_db *db, const char *owner)
{
    char host[256], me[256];
    long pid;
    unsigned long long start;
    if (sscanf(owner, "%255s %ld %llu", host, &pid, &start) != 3 ||
        sscanf(db->owner, "%255s", me) != 1 || strcmp(host, me) != 0 || pid <= 0)
        return 0;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
        return 0;
    unsigned long long now = proc_start(pid);
    return !start || !now || now == start;
}

int zs_db_claim(zs_db *db, const char *key, int retry_failed, zs_db_claim_result *res, zs_err *e)
{
    int rc = exec(db, "BEGIN IMMEDIATE", "claiming a point", e), found = 0, ok = 0, src;
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    if ((rc = zs_db_has(db, key, &found, &ok, e)))
        goto out;
    if (found && (ok || !retry_failed)) {
        *res = ZS_DB_STORED;
        goto out;
    }
    if ((src =
             sqlite3_prepare_v2(db->h, "SELECT owner FROM claims WHERE key = ?", -1, &st, NULL))) {
        rc = db_error(db->h, src, db->path, "claiming a point", e);
        goto out;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    src = sqlite3_step(st);
    if (src == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), db->owner) &&
        claim_live(db, (const char *)sqlite3_column_text(st, 0))) {
        *res = ZS_DB_CLAIMED_ELSEWHERE;
        goto out;
    }
    if (src != SQLITE_ROW && src != SQLITE_DONE) {
        rc = db_error(db->h, src, db->path, "claiming a point", e);
        goto out;
    }
    sqlite3_finalize(st);
    st = NULL;
    char host[256] = "", created[32];
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if ((src = sqlite3_prepare_v2(db->h, "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)", -1,
                                  &st, NULL)) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, db->owner, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, host, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)getpid());
        sqlite3_bind_text(st, 5, created, -1, SQLITE_STATIC);
        src = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db->h);
    }
    if (src != SQLITE_OK)
        rc = db_error(db->h, src, db->path, "claiming a point", e);
    else
        *res = ZS_DB_CLAIMED;
out:
    sqlite3_finalize(st);
    if (rc) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return exec(db, "COMMIT", "claiming a point", e);
}

int zs_db_unclaim(zs_db *db, const char *key, zs_err *e)
{
    return unclaim(db, key, 1, "releasing a point", e);
}

int zs_db_release_claims(zs_db *db, zs_err *e)
{
    return exec_bound(db, "DELETE FROM claims WHERE owner = ?", "releasing points", e, db->owner,
                      NULL, NULL);
}

/* ", nodes_run, gpus, ...": the version 3 column names. */
static void v3_names(char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < ZS_DB_NV3 && o < n; i++)
        o += (size_t)snprintf(out + o, n - o, ", %s", v3_cols[i][0]);
}

/* The version 3 columns of a row, from parameter i on (v3_cols' order). */
static void bind_v3(sqlite3_stmt *st, int i, const zs_point_cfg *c, const zs_db_row *row)
{
    const zs_point_result *r = &row->r;
    if (row->ok) {
        sqlite3_bind_int(st, i++, r->nodes);
        sqlite3_bind_int(st, i++, r->gpus);
    } else {
        i += 2;
    }
    sqlite3_bind_text(st, i++, c->attn_kernel, -1, SQLITE_STATIC);
    if (row->ok) {
        sqlite3_bind_double(st, i++, r->compute_share);
        sqlite3_bind_double(st, i++, r->idle_share);
        if (r->peak_mem > 0)
            sqlite3_bind_double(st, i, r->peak_mem);
        i++;
        if (r->mem_capacity > 0)
            sqlite3_bind_double(st, i, r->mem_capacity);
        i++;
    } else {
        i += 4;
    }
    if (row->baseline_key[0])
        sqlite3_bind_text(st, i, row->baseline_key, -1, SQLITE_STATIC);
    i++;
    if (row->ok && r->xnode_n > 0) {
        sqlite3_bind_int64(st, i, r->xnode_n);
        sqlite3_bind_double(st, i + 1, r->xnode_us * 1e-6);
    }
}

int zs_db_put(zs_db *db, const char *key, const char *spec, const zs_point_cfg *c,
              const zs_db_row *row, int replace, zs_err *e)
{
    char sql[2048], cfgtxt[2048], sha[65] = "", host[256] = "", created[32], v3[256];
    v3_names(v3, sizeof v3);
    char marks[256] = "?"; /* one per column */
    for (const char *p = cols; *p; p++)
        if (*p == ',')
            strcat(marks, ",?");
    for (int k = 0; k < ZS_DB_NV3; k++)
        strcat(marks, ",?");
    snprintf(sql, sizeof sql, "INSERT OR %s INTO results (%s%s) VALUES (%s)",
             replace ? "REPLACE" : "IGNORE", cols, v3, marks);
    if (c->calib[0]) {
        int rc = zs_sha256_file(c->calib, sha, e);
        if (rc)
            return rc;
    }
    zs_point_cfg_format(c, cfgtxt, sizeof cfgtxt);
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);

    sqlite3_stmt *st = NULL;
    int rc = exec(db, "BEGIN IMMEDIATE", "storing a result", e), src;
    if (rc)
        return rc;
    if ((src = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL))) {
        rc = db_error(db->h, src, db->path, "storing a result", e);
        goto out;
    }
    const zs_point_result *r = &row->r;
    int i = 1;
    sqlite3_bind_text(st, i++, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, row->ok ? "ok" : "failed", -1, SQLITE_STATIC);
    if (row->ok)
        sqlite3_bind_null(st, i++);
    else
        sqlite3_bind_text(st, i++, row->error, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, spec ? spec : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, ZS_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, c->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, c->cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, i++, c->nodes);
    sqlite3_bind_text(st, i++, c->trace, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, c->method, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, c->opts, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, i++, c->context);
    sqlite3_bind_int(st, i++, c->group);
    sqlite3_bind_int(st, i++, c->iterations);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)c->seed);
    sqlite3_bind_text(st, i++, c->backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, c->calib, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, i++, c->zero_stage);
    sqlite3_bind_text(st, i++, c->recompute == ZS_RECOMPUTE_FULL ? "full" : "none", -1,
                      SQLITE_STATIC);
    sqlite3_bind_int(st, i++, c->validate);
    sqlite3_bind_text(st, i++, c->timeline, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, cfgtxt, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, r->cost_desc, -1, SQLITE_STATIC);
    if (row->ok) {
        sqlite3_bind_int(st, i++, r->iterations);
        double v[] = {r->tokens,
                      r->seconds,
                      r->iter_time,
                      r->tokens_per_s,
                      r->mfu,
                      r->exposed_share,
                      r->max_nic_util,
                      r->attn_imbalance,
                      r->linear_imbalance,
                      r->plan_ms,
                      r->imbalance_degree,
                      r->delay_iters};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            sqlite3_bind_double(st, i++, v[k]);
        sqlite3_bind_int64(st, i++, r->ops);
    } else {
        for (int k = 0; k < 14; k++)
            sqlite3_bind_null(st, i++);
    }
    sqlite3_bind_double(st, i++, r->wall_s);
    sqlite3_bind_text(st, i++, r->notes, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, row->backend_notes, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, row->slowest_why, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, host, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, created, -1, SQLITE_STATIC);
    bind_v3(st, i, c, row);
    if ((src = sqlite3_step(st)) != SQLITE_DONE)
        rc = db_error(db->h, src, db->path, "storing a result", e);
    /* the point is done: its claim goes in the same transaction */
    if (!rc)
        rc = unclaim(db, key, 0, "storing a result", e);
out:
    sqlite3_finalize(st);
    if (rc) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return exec(db, "COMMIT", "storing a result", e);
}

/* What a read-only query may do: read tables and call functions. ATTACH
 * (which creates a file), PRAGMA, writes and schema changes are denied when
 * the statement is prepared. */
static int reader_only(void *arg, int action, const char *a, const char *b, const char *c,
                       const char *d)
{
    (void)arg, (void)a, (void)b, (void)c, (void)d;
    return action == SQLITE_SELECT || action == SQLITE_READ || action == SQLITE_FUNCTION ||
                   action == SQLITE_RECURSIVE
               ? SQLITE_OK
               : SQLITE_DENY;
}

/* The results under the names and units of every other output, in the
 * order of experiments/zs_cols.c (docs/output.md's result columns; spec
 * first): a view of this connection only (TEMP), so the file and its
 * schema stay as they are. A version 2 file has NULL where it lacks a
 * version 3 column. */
static void points_view(zs_db *db, char *sql, size_t n)
{
    const char *c[ZS_DB_NV3];
    for (int i = 0; i < ZS_DB_NV3; i++)
        c[i] = has_col(db, "main", v3_cols[i][0]) ? v3_cols[i][0] : "NULL";
    snprintf(
        sql, n,
        "CREATE TEMP VIEW IF NOT EXISTS points AS SELECT spec, model, cluster, "
        "COALESCE(%s, NULLIF(nodes, 0)) AS nodes, CASE WHEN nodes > 0 THEN '--nodes' ELSE "
        "'cluster' END AS nodes_from, %s AS gpus, trace, method, NULLIF(opts, '') AS opts, "
        "context, group_gpus AS \"group\", iterations, seed, backend, NULLIF(calib, '') AS calib, "
        "NULLIF(%s, '') AS attn_kernel, zero_stage, recompute, status, error, tokens_per_s, "
        "tokens / iters_done AS tokens_per_iter, iter_time * 1000 AS iter_ms, %s%s%s AS speedup, "
        "mfu * 100 AS mfu_pct, %s * 100 AS busy_pct, exposed_share * 100 AS exposed_pct, "
        "%s * 100 AS idle_pct, max_nic_util * 100 AS max_nic_pct, %s * 1e6 AS xnode_p2p_us, "
        "NULLIF(%s, 0) / 1073741824.0 "
        "AS peak_mem_gib, attn_imbalance, linear_imbalance, NULLIF(imbalance_degree, 0) AS "
        "imbalance_degree, delay_iters, plan_ms, ops, wall_s, slowest_why AS why FROM results r",
        c[0], c[1], c[2],
        strcmp(c[7], "NULL")
            ? "tokens_per_s / (SELECT b.tokens_per_s FROM results b WHERE b.key = r."
            : "NULL",
        strcmp(c[7], "NULL") ? c[7] : "", strcmp(c[7], "NULL") ? " AND b.status = 'ok')" : "", c[3],
        c[4], c[9], c[5]);
}

int zs_db_query(zs_db *db, const char *sql, int writable, zs_table *t, zs_err *e)
{
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    char view[2048];
    points_view(db, view, sizeof view);
    sqlite3_exec(db->h, view, NULL, NULL, NULL); /* a failure shows as "no such table" */
    if (!writable)
        sqlite3_set_authorizer(db->h, reader_only, NULL);
    int src = sqlite3_prepare_v2(db->h, sql, -1, &st, &tail);
    if (!writable)
        sqlite3_set_authorizer(db->h, NULL, NULL);
    if (src == SQLITE_AUTH)
        return zs_err_set(e, ZS_EINPUT, "SQL", "use sqlite3 on the file to change it",
                          "the statement would change the database or attach another file "
                          "(only SELECT statements run)");
    if (src != SQLITE_OK)
        return zs_err_set(e, ZS_EINPUT, "SQL", "check the statement (`zepsim db schema`)",
                          "bad query: %s", sqlite3_errmsg(db->h));
    if (!st)
        return zs_err_set(e, ZS_EINPUT, "SQL", "give one statement", "empty query");
    while (tail && isspace((unsigned char)*tail))
        tail++;
    if (tail && *tail && strcmp(tail, ";")) {
        sqlite3_finalize(st);
        return zs_err_set(e, ZS_EINPUT, "SQL", "run one statement per call (or use sqlite3)",
                          "more than one statement");
    }
    if (!writable && !sqlite3_stmt_readonly(st)) {
        sqlite3_finalize(st);
        return zs_err_set(e, ZS_EINPUT, "SQL", "use sqlite3 on the file to change it",
                          "the statement would change the database");
    }
    int n = sqlite3_column_count(st), s;
    /* each cell keeps SQLite's type: numbers are numbers in JSON, text
     * stays text even when it reads like a number */
    for (int k = 0; k < n; k++)
        zs_table_col(t, sqlite3_column_name(st, k), ZS_COL_MIXED);
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        zs_table_row(t);
        for (int k = 0; k < n; k++) {
            int ty = sqlite3_column_type(st, k);
            if (ty == SQLITE_NULL)
                continue;
            if (ty == SQLITE_FLOAT)
                zs_table_num(t, k, "%.10g", sqlite3_column_double(st, k));
            else if (ty == SQLITE_INTEGER)
                zs_table_numtext(t, k, (const char *)sqlite3_column_text(st, k));
            else
                zs_table_str(t, k, (const char *)sqlite3_column_text(st, k));
        }
    }
    int rc = ZS_OK;
    if (s != SQLITE_DONE)
        rc = db_error(db->h, s, db->path, "running the query", e);
    sqlite3_finalize(st);
    return rc;
}

/* Whether two paths name one file (the output of a merge among its inputs
 * would copy a database into itself). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Copies the rows of one input into db (attached as src). */
static int merge_one(zs_db *db, const char *in, long *copied, long *skipped, zs_err *e)
{
    /* the input is checked on its own connection first, read-only */
    zs_db *src_db = NULL;
    int rc = zs_db_open_readonly(in, &src_db, e), src;
    zs_db_close(src_db);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    if ((src = sqlite3_prepare_v2(db->h, "ATTACH DATABASE ? AS src", -1, &st, NULL)) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, in, -1, SQLITE_STATIC);
        src = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db->h);
    }
    sqlite3_finalize(st);
    if (src != SQLITE_OK)
        return db_error(db->h, src, in, "attaching the database to merge", e);
    long n = 0;
    if (!(rc = query_int(db, "SELECT count(*) FROM src.results", "reading the database to merge",
                         &n, e))) {
        char sql[2048], names[256], from[256];
        v3_names(names, sizeof names);
        v3_select(db, "src", from, sizeof from);
        snprintf(sql, sizeof sql,
                 "BEGIN IMMEDIATE; INSERT OR IGNORE INTO main.results (%s%s) SELECT %s%s FROM "
                 "src.results ORDER BY id; ",
                 cols, names, cols, from);
        rc = exec(db, sql, "merging", e);
        if (!rc) {
            long c = sqlite3_changes(db->h);
            if (!(rc = exec(db, "COMMIT", "merging", e))) {
                *copied += c;
                *skipped += n - c;
            }
        }
        if (rc)
            sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_exec(db->h, "DETACH DATABASE src", NULL, NULL, NULL);
    return rc;
}

int zs_db_merge(const char *out, char *const *in, int nin, long *copied, long *skipped, zs_err *e)
{
    for (int i = 0; i < nin; i++)
        if (!strcmp(in[i], out) || same_file(in[i], out))
            return zs_err_set(e, ZS_EUSAGE, in[i],
                              "give the output once, first, and the databases to merge into "
                              "it after it",
                              "a database cannot be merged into itself");
    zs_db *db = NULL;
    int rc = zs_db_open(out, &db, e);
    if (rc)
        return rc;
    *copied = *skipped = 0;
    for (int i = 0; i < nin && !rc; i++)
        rc = merge_one(db, in[i], copied, skipped, e);
    zs_db_close(db);
    return rc;
}

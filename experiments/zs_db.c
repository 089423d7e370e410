/* The results database: see zs_db.h. */
#include "zs_db.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "zs_calib.h"

struct zs_db {
    sqlite3 *h;
    char path[1024];
};

static const char schema_sql[] =
    "-- zepsim results database (schema version 2).\n"
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
    "  created TEXT                  -- UTC time it was stored\n"
    ");\n";

static const char *const cols =
    "key, status, error, spec, version, model, cluster, nodes, trace, method, opts, context, "
    "group_gpus, iterations, seed, backend, calib, calib_sha256, zero_stage, recompute, "
    "validate, timeline, config, cost_desc, iters_done, tokens, seconds, iter_time, "
    "tokens_per_s, mfu, exposed_share, max_nic_util, attn_imbalance, linear_imbalance, "
    "plan_ms, imbalance_degree, delay_iters, ops, wall_s, planner_notes, backend_notes, "
    "slowest_why, host, created";

const char *zs_db_schema(void)
{
    return schema_sql;
}

static int db_fail(sqlite3 *h, const char *where, const char *fix, const char *doing, zs_err *e)
{
    return zs_err_set(e, ZS_ERUNTIME, where, fix, "%s: %s", doing,
                      h ? sqlite3_errmsg(h) : "cannot open");
}

static int exec(zs_db *db, const char *sql, zs_err *e)
{
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = zs_err_set(e, ZS_ERUNTIME, db->path, "check the file is a zepsim database",
                            "database error: %s", msg ? msg : "unknown");
        sqlite3_free(msg);
        return rc;
    }
    return ZS_OK;
}

int zs_db_open(const char *path, zs_db **out, zs_err *e)
{
    zs_db *db = calloc(1, sizeof *db);
    if (!db)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory opening a database");
    snprintf(db->path, sizeof db->path, "%s", path);
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        int rc = zs_err_set(e, ZS_EIO, path, "check the folder exists and is writable",
                            "cannot open the results database: %s",
                            db->h ? sqlite3_errmsg(db->h) : "out of memory");
        zs_db_close(db);
        return rc;
    }
    /* several processes (shards, `db query`) may use the file at once */
    sqlite3_busy_timeout(db->h, 30000);
    int rc = exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", e);
    if (!rc)
        rc = exec(db, schema_sql, e);
    if (!rc)
        rc = exec(db, "INSERT OR IGNORE INTO meta VALUES ('schema_version', '2');", e);
    if (!rc) {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st,
                           NULL);
        if (st && sqlite3_step(st) == SQLITE_ROW &&
            atoi((const char *)sqlite3_column_text(st, 0)) != ZS_DB_SCHEMA_VERSION)
            rc = zs_err_set(e, ZS_EINPUT, path, "use a new database file",
                            "database schema version %s, this zepsim writes %d",
                            (const char *)sqlite3_column_text(st, 0), ZS_DB_SCHEMA_VERSION);
        sqlite3_finalize(st);
    }
    if (rc) {
        zs_db_close(db);
        return rc;
    }
    *out = db;
    return ZS_OK;
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
             "calib_sha256=%s; zero=%d; recompute=%s; validate=%d; timeline=%s",
             ZS_VERSION, c->model, c->cluster, c->nodes, c->trace, c->method, c->opts,
             (long long)c->context, c->group, c->iterations, (unsigned long long)c->seed,
             c->backend, c->calib, sha, c->zero_stage,
             c->recompute == ZS_RECOMPUTE_FULL ? "full" : "none", c->validate, c->timeline);
    return ZS_OK;
}

int zs_db_has(zs_db *db, const char *key, int *found, int *ok, zs_err *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT status FROM results WHERE key = ?", -1, &st, NULL))
        return db_fail(db->h, db->path, NULL, "database lookup", e);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    *found = s == SQLITE_ROW;
    if (ok)
        *ok = *found && !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return db_fail(db->h, db->path, NULL, "database lookup", e);
    return ZS_OK;
}

static void text_col(sqlite3_stmt *st, int i, char *dst, size_t n)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

int zs_db_get(zs_db *db, const char *key, zs_db_row *row, int *found, zs_err *e)
{
    sqlite3_stmt *st = NULL;
    const char *sql =
        "SELECT status, error, iters_done, tokens, seconds, iter_time, tokens_per_s, mfu, "
        "exposed_share, max_nic_util, attn_imbalance, linear_imbalance, plan_ms, ops, wall_s, "
        "cost_desc, planner_notes, backend_notes, slowest_why, imbalance_degree, delay_iters "
        "FROM results WHERE key = ?";
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL))
        return db_fail(db->h, db->path, NULL, "database lookup", e);
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
    }
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return db_fail(db->h, db->path, NULL, "database lookup", e);
    return ZS_OK;
}

int zs_db_put(zs_db *db, const char *key, const char *spec, const zs_point_cfg *c,
              const zs_db_row *row, int replace, zs_err *e)
{
    char sql[2048], cfgtxt[2048], sha[65] = "", host[256] = "", created[32];
    snprintf(sql, sizeof sql,
             "INSERT OR %s INTO results (%s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
             "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
             replace ? "REPLACE" : "IGNORE", cols);
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
    int rc = exec(db, "BEGIN IMMEDIATE", e);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL)) {
        rc = db_fail(db->h, db->path, NULL, "storing a result", e);
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
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = db_fail(db->h, db->path, NULL, "storing a result", e);
out:
    sqlite3_finalize(st);
    if (rc) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return exec(db, "COMMIT", e);
}

/* The results under the names and units of every other output
 * (experiments/zs_cols.h, docs/output.md): a view of this connection only
 * (TEMP), so the file and its schema stay as they are. */
static const char points_view[] =
    "CREATE TEMP VIEW IF NOT EXISTS points AS SELECT spec, model, cluster, nodes, trace, method, "
    "opts, context, group_gpus AS \"group\", iterations, seed, backend, calib, zero_stage, "
    "recompute, status, error, tokens_per_s, tokens / iters_done AS tokens_per_iter, "
    "iter_time * 1000 AS iter_ms, mfu * 100 AS mfu_pct, exposed_share * 100 AS exposed_pct, "
    "max_nic_util * 100 AS max_nic_pct, attn_imbalance, linear_imbalance, "
    "NULLIF(imbalance_degree, 0) AS imbalance_degree, delay_iters, plan_ms, ops, wall_s, "
    "slowest_why AS why FROM results";

int zs_db_query(zs_db *db, const char *sql, int writable, zs_table *t, zs_err *e)
{
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    sqlite3_exec(db->h, points_view, NULL, NULL, NULL); /* a failure shows as "no such table" */
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, &tail) != SQLITE_OK)
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
        rc = zs_err_set(e, ZS_ERUNTIME, "SQL", NULL, "query failed: %s", sqlite3_errmsg(db->h));
    sqlite3_finalize(st);
    return rc;
}

int zs_db_merge(const char *out, char *const *in, int nin, long *copied, long *skipped, zs_err *e)
{
    zs_db *db = NULL;
    int rc = zs_db_open(out, &db, e);
    if (rc)
        return rc;
    *copied = *skipped = 0;
    for (int i = 0; i < nin && !rc; i++) {
        if (access(in[i], R_OK)) {
            rc = zs_err_set(e, ZS_EIO, in[i], "check the path", "cannot read database");
            break;
        }
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db->h, "ATTACH DATABASE ? AS src", -1, &st, NULL);
        sqlite3_bind_text(st, 1, in[i], -1, SQLITE_STATIC);
        int s = sqlite3_step(st);
        sqlite3_finalize(st);
        if (s != SQLITE_DONE) {
            rc = db_fail(db->h, in[i], "check it is an SQLite file", "cannot attach", e);
            break;
        }
        long n = -1;
        char ver[32] = "";
        if (sqlite3_prepare_v2(db->h,
                               "SELECT (SELECT value FROM src.meta WHERE key = 'schema_version'), "
                               "(SELECT count(*) FROM src.results)",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            text_col(st, 0, ver, sizeof ver);
            n = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        if (n < 0 || atoi(ver) != ZS_DB_SCHEMA_VERSION) {
            rc = zs_err_set(
                e, ZS_EINPUT, in[i], "give a database written by `zepsim experiment run`",
                "not a zepsim results database of schema version %d", ZS_DB_SCHEMA_VERSION);
        } else {
            char sql[2048];
            snprintf(sql, sizeof sql,
                     "BEGIN IMMEDIATE; INSERT OR IGNORE INTO main.results (%s) SELECT %s FROM "
                     "src.results ORDER BY id; ",
                     cols, cols);
            rc = exec(db, sql, e);
            if (!rc) {
                long c = sqlite3_changes(db->h);
                rc = exec(db, "COMMIT", e);
                *copied += c;
                *skipped += n - c;
            } else {
                sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
            }
        }
        sqlite3_exec(db->h, "DETACH DATABASE src", NULL, NULL, NULL);
    }
    zs_db_close(db);
    return rc;
}

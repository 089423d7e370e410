/* The results database: one SQLite file (WAL mode) with one row per run
 * point, holding the point's full configuration (every zs_point_cfg field
 * as a column, the formatted configuration, the software version and the
 * calibration's SHA-256) and its figures. A UNIQUE key over the
 * configuration makes runs resumable: a point already stored is skipped,
 * and merging databases copies only rows whose key is new. Each point is
 * written in its own transaction, so a killed run loses at most the points
 * still running; a runner claims a point in the database before running
 * it, so two runners on one spec share the work. Commands that only read
 * open the file read-only and change nothing in it. Errors say what
 * happened (disk full, locked, read-only, not a zepsim database, another
 * schema version). The schema is zs_db_schema() and experiments/README.md.
 * Depends on zs_point and SQLite; nothing here knows about specs. */
#ifndef ZS_DB_H
#define ZS_DB_H

#include "zs_err.h"
#include "zs_point.h"
#include "zs_table.h"

#define ZS_DB_SCHEMA_VERSION 4

typedef struct zs_db zs_db;

/* The figures a row holds, as stored (zs_point_result without the
 * last iteration's full result, plus the backend's notes). */
typedef struct zs_db_row {
    int ok; /* 1: status 'ok'; 0: 'failed' (error holds why) */
    char error[1024];
    zs_point_result r; /* r.last is always NULL */
    char backend_notes[1024];
    char slowest_why[256];
    /* the key of the baseline point of the same case in the storing spec
     * (the points view's speedup); "" : none */
    char baseline_key[4096];
} zs_db_row;

/* Opens (creating when absent) the database and its schema, for writing.
 * An SQLite file that is not a zepsim results database is refused, and
 * left as it was. */
int zs_db_open(const char *path, zs_db **out, zs_err *e);
/* Opens an existing results database read-only (SQLITE_OPEN_READONLY: no
 * journal mode set, no schema written), for the commands that only read;
 * a read-only file or folder works. ZS_EIO when it does not exist. */
int zs_db_open_readonly(const char *path, zs_db **out, zs_err *e);
void zs_db_close(zs_db *db);
/* How long a call waits for another process's lock before failing with
 * "database locked" (30 s unless changed). */
void zs_db_busy_timeout(zs_db *db, int ms);

/* The canonical configuration key: every field that can change a number,
 * the software version and the calibration file's SHA-256. */
int zs_db_key(const zs_point_cfg *c, char *buf, size_t n, zs_err *e);

/* *found = 1 when a row with this key exists (ok or failed). */
int zs_db_has(zs_db *db, const char *key, int *found, int *ok, zs_err *e);
/* Reads the row with this key; *found = 0 when there is none. */
int zs_db_get(zs_db *db, const char *key, zs_db_row *row, int *found, zs_err *e);

/* Stores one point in its own transaction. row->ok = 0 stores a failure
 * (with row->error) so that a deterministic failure is not retried on
 * every resume. An existing row with the same key is replaced only when
 * `replace` is set (retrying failures). */
int zs_db_put(zs_db *db, const char *key, const char *spec, const zs_point_cfg *c,
              const zs_db_row *row, int replace, zs_err *e);

/* Claiming a point before running it, in one transaction: ZS_DB_CLAIMED
 * (this process runs it), ZS_DB_STORED (a result is stored: another
 * runner finished it; a stored failure counts only without retry_failed)
 * or ZS_DB_CLAIMED_ELSEWHERE (a live runner holds it). A claim whose
 * process has exited is taken over. zs_db_put drops the claim of the point
 * it stores; zs_db_unclaim drops this process's claim on a point it did
 * not store, zs_db_release_claims all of them. */
typedef enum zs_db_claim_result {
    ZS_DB_CLAIMED = 0,
    ZS_DB_STORED,
    ZS_DB_CLAIMED_ELSEWHERE
} zs_db_claim_result;
int zs_db_claim(zs_db *db, const char *key, int retry_failed, zs_db_claim_result *res, zs_err *e);
int zs_db_unclaim(zs_db *db, const char *key, zs_err *e);
int zs_db_release_claims(zs_db *db, zs_err *e);

/* Runs one SQL statement and appends its rows to t (columns from the
 * statement). Unless `writable`, only statements that read run: writes,
 * ATTACH, PRAGMA and schema changes are refused (an SQLite authorizer and
 * sqlite3_stmt_readonly). */
int zs_db_query(zs_db *db, const char *sql, int writable, zs_table *t, zs_err *e);

/* Copies every row of each input whose key `out` lacks; counts copied and
 * skipped (already present) rows. An input that is `out` itself is a
 * ZS_EUSAGE error; each input must be a results database of this schema. */
int zs_db_merge(const char *out, char *const *in, int nin, long *copied, long *skipped, zs_err *e);

/* The schema as SQL with comments (what `zepsim db schema` prints). */
const char *zs_db_schema(void);

#endif

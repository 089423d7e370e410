/* The results database under hostile conditions (issue 21): read-only
 * opening that changes nothing, files that are not zepsim databases,
 * queries that would write or attach, a merge into itself, a full disk and
 * a lock held by another process told apart in the message, and two
 * runners sharing one spec through claims. */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "zs_db.h"
#include "zs_runner.h"
#include "zs_spec.h"
#include "zs_test.h"

static const char tiny[] =
    "{\"name\": \"tiny\", \"title\": \"Tiny\",\n"
    " \"base\": {\"model\": \"llama-550m\", \"cluster\": \"cluster-a\", \"nodes\": 2,\n"
    "          \"context\": 32768, \"iterations\": 1, \"backend\": \"analytic\"},\n"
    " \"sweep\": {\"trace\": [\"arxiv\", \"github\"]},\n"
    " \"series\": [{\"label\": \"TE CP\", \"method\": \"te-cp\"},\n"
    "            {\"label\": \"Local\", \"method\": \"local\"}]}\n";

static const char *tmp_path(const char *name)
{
    static char path[8][1024];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, sizeof path[0], "%s/%s", zs_test_tmpdir(), name);
    return p;
}

/* A fresh database at name holding the tiny spec's four points. */
static const char *filled_db(const char *name, zs_spec **spec)
{
    const char *path = tmp_path(name);
    char wal[1100];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(path);
    unlink(wal);
    zs_err e;
    zs_err_clear(&e);
    zs_spec *s = NULL;
    ZS_ASSERT_OK(zs_spec_load_text("tiny.json", tiny, &s, &e), &e);
    zs_db *db = NULL;
    ZS_ASSERT_OK(zs_db_open(path, &db, &e), &e);
    zs_runner_opts o;
    zs_runner_opts_init(&o);
    zs_runner_stats st;
    ZS_ASSERT_OK(zs_runner_run(s, db, &o, &st, &e), &e);
    ZS_ASSERT_INT_EQ(st.ran, 4);
    zs_db_close(db);
    if (spec)
        *spec = s;
    else
        zs_spec_free(s);
    return path;
}

/* Runs sql on path with the sqlite3 library directly; returns the first
 * column of the first row as text (static), "" when none. */
static const char *raw(const char *path, const char *sql)
{
    static char out[256];
    out[0] = '\0';
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open(path, &h) == SQLITE_OK &&
        sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0))
        snprintf(out, sizeof out, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

static long query_count(zs_db *db, const char *sql, zs_err *e)
{
    zs_table *t = zs_table_new(NULL);
    int rc = zs_db_query(db, sql, 0, t, e);
    long n = -1;
    if (rc == ZS_OK) {
        FILE *f = tmpfile();
        zs_table_print(t, f, ZS_FMT_CSV);
        rewind(f);
        char line[128], val[128];
        if (fgets(line, sizeof line, f) && fgets(val, sizeof val, f))
            n = atol(val);
        fclose(f);
    }
    zs_table_free(t);
    return n;
}

/* Commands that only read open the file read-only: the journal mode is
 * left as it was and no -wal file appears (before, `db query` switched a
 * database to WAL and failed on a read-only file with "attempt to write a
 * readonly database"). */
static void test_readonly_changes_nothing(void)
{
    const char *path = filled_db("ro.db", NULL);
    raw(path, "PRAGMA journal_mode=DELETE");
    CU_ASSERT_STRING_EQUAL(raw(path, "PRAGMA journal_mode"), "delete");
    char wal[1100];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CU_ASSERT(access(wal, F_OK) != 0);
    zs_db *db = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_db_open_readonly(path, &db, &e), &e);
    ZS_ASSERT_INT_EQ(query_count(db, "SELECT count(*) FROM results", &e), 4);
    zs_db_close(db);
    CU_ASSERT_STRING_EQUAL(raw(path, "PRAGMA journal_mode"), "delete");
    CU_ASSERT(access(wal, F_OK) != 0);
    if (geteuid() != 0) { /* root writes through file permissions */
        chmod(path, 0444);
        ZS_ASSERT_OK(zs_db_open_readonly(path, &db, &e), &e);
        ZS_ASSERT_INT_EQ(query_count(db, "SELECT count(*) FROM results", &e), 4);
        zs_db_close(db);
        chmod(path, 0644);
    }
    ZS_ASSERT_INT_EQ(zs_db_open_readonly(tmp_path("absent.db"), &db, &e), ZS_EIO);
    ZS_ASSERT_STR_CONTAINS(e.what, "no results database");
}

/* Files that are not zepsim databases are refused for what they are, and
 * left as they were (before, zepsim added its tables to any SQLite file). */
static void test_foreign_files(void)
{
    const char *other = tmp_path("other.db");
    unlink(other);
    raw(other, "CREATE TABLE t(x)");
    zs_db *db = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_INT_EQ(zs_db_open(other, &db, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "not a zepsim results database");
    ZS_ASSERT_INT_EQ(zs_db_open_readonly(other, &db, &e), ZS_EINPUT);
    CU_ASSERT_STRING_EQUAL(raw(other, "SELECT count(*) FROM sqlite_master"), "1");
    const char *text = zs_test_write("text.db", "not a database, just text\n");
    ZS_ASSERT_INT_EQ(zs_db_open(text, &db, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "not an SQLite database");
    const char *v9 = filled_db("v9.db", NULL);
    raw(v9, "UPDATE meta SET value = '9' WHERE key = 'schema_version'");
    ZS_ASSERT_INT_EQ(zs_db_open_readonly(v9, &db, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "schema version '9'");
    ZS_ASSERT_INT_EQ(zs_db_open(v9, &db, &e), ZS_EINPUT);
    CU_ASSERT_PTR_NULL(db);
}

/* `db query` runs only statements that read: ATTACH created a file before. */
static void test_query_refuses_writes(void)
{
    const char *path = filled_db("q.db", NULL);
    zs_db *db = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_db_open_readonly(path, &db, &e), &e);
    const char *x = tmp_path("attached.db");
    unlink(x);
    char attach[1200], vacuum[1200];
    snprintf(attach, sizeof attach, "ATTACH '%s' AS x", x);
    snprintf(vacuum, sizeof vacuum, "VACUUM INTO '%s'", x);
    const char *bad[] = {attach,
                         vacuum,
                         "DETACH main",
                         "PRAGMA journal_mode=DELETE",
                         "PRAGMA writable_schema=1",
                         "DELETE FROM results",
                         "INSERT INTO meta VALUES ('a', 'b')",
                         "CREATE TEMP TABLE z(x)",
                         "DROP TABLE results"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zs_table *t = zs_table_new(NULL);
        int rc = zs_db_query(db, bad[i], 0, t, &e);
        if (rc != ZS_EINPUT)
            fprintf(stderr, "ran: %s\n", bad[i]);
        ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
        zs_table_free(t);
    }
    CU_ASSERT(access(x, F_OK) != 0);
    ZS_ASSERT_INT_EQ(query_count(db,
                                 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                                 "WHERE i < 3) SELECT count(*) FROM n, results",
                                 &e),
                     12);
    zs_db_close(db);
}

static void test_merge_into_itself(void)
{
    const char *path = filled_db("self.db", NULL);
    char other[1200];
    snprintf(other, sizeof other, "%s/./self.db", zs_test_tmpdir());
    long copied = 0, skipped = 0;
    zs_err e;
    zs_err_clear(&e);
    char *in[] = {other};
    ZS_ASSERT_INT_EQ(zs_db_merge(path, in, 1, &copied, &skipped, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "merged into itself");
    CU_ASSERT_STRING_EQUAL(raw(path, "SELECT count(*) FROM results"), "4");
}

/* A full disk and another process's lock are told apart (both printed
 * "check the file is a zepsim database" before). */
static void test_full_and_locked(void)
{
    zs_spec *s = NULL;
    const char *path = filled_db("full.db", &s);
    zs_db *db = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_db_open(path, &db, &e), &e);
    zs_db_row row;
    memset(&row, 0, sizeof row);
    row.ok = 1;
    /* SQLite's page limit (never below the pages in use) gives the same
     * SQLITE_FULL as a full disk, once the free room in them is used up */
    zs_table *t = zs_table_new(NULL);
    ZS_ASSERT_OK(zs_db_query(db, "PRAGMA max_page_count = 1", 1, t, &e), &e);
    zs_table_free(t);
    int rc = ZS_OK;
    for (int i = 0; i < 1000 && rc == ZS_OK; i++) {
        char key[64];
        snprintf(key, sizeof key, "new key %d", i);
        rc = zs_db_put(db, key, "tiny", &s->points[0].cfg, &row, 0, &e);
    }
    ZS_ASSERT_INT_EQ(rc, ZS_EIO);
    ZS_ASSERT_STR_CONTAINS(e.what, "disk full");
    ZS_ASSERT_STR_CONTAINS(e.fix, "free space");
    zs_db_close(db);

    ZS_ASSERT_OK(zs_db_open(path, &db, &e), &e);
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL(sqlite3_open(path, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    zs_db_busy_timeout(db, 50);
    CU_ASSERT(zs_db_put(db, "another key", "tiny", &s->points[0].cfg, &row, 0, &e) != ZS_OK);
    ZS_ASSERT_STR_CONTAINS(e.what, "locked by another process");
    sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(h);
    zs_db_close(db);
    zs_spec_free(s);
}

/* Two runners on one spec share the work: a point claimed by a live
 * process is left to it (before, both ran every point), and a claim whose
 * process is gone is taken over. */
static void test_runners_share(void)
{
    const char *path = tmp_path("share.db");
    unlink(path);
    zs_spec *s = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_spec_load_text("tiny.json", tiny, &s, &e), &e);
    char key[4096];
    ZS_ASSERT_OK(zs_db_key(&s->points[0].cfg, key, sizeof key, &e), &e);
    int up[2], hold[2];
    CU_ASSERT_FATAL(pipe(up) == 0 && pipe(hold) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* another runner: claims point 0 and keeps running */
        close(hold[1]);
        close(up[0]);
        zs_db *db = NULL;
        zs_db_claim_result got = ZS_DB_STORED;
        char c =
            zs_db_open(path, &db, &e) || zs_db_claim(db, key, 0, &got, &e) || got != ZS_DB_CLAIMED
                ? 'n'
                : 'y';
        zs_db_close(db);
        if (write(up[1], &c, 1) != 1 || read(hold[0], &c, 1) < 0)
            _exit(1);
        _exit(0); /* exits without storing or releasing */
    }
    close(hold[0]);
    close(up[1]);
    char c = 0;
    CU_ASSERT(read(up[0], &c, 1) == 1 && c == 'y');
    zs_db *db = NULL;
    ZS_ASSERT_OK(zs_db_open(path, &db, &e), &e);
    zs_runner_opts o;
    zs_runner_opts_init(&o);
    o.jobs = 2;
    zs_runner_stats st;
    ZS_ASSERT_OK(zs_runner_run(s, db, &o, &st, &e), &e);
    ZS_ASSERT_INT_EQ(st.ran, 3);
    ZS_ASSERT_INT_EQ(st.elsewhere, 1);
    close(hold[1]);
    waitpid(pid, NULL, 0);
    ZS_ASSERT_OK(zs_runner_run(s, db, &o, &st, &e), &e);
    ZS_ASSERT_INT_EQ(st.stored_before, 3);
    ZS_ASSERT_INT_EQ(st.ran, 1);
    ZS_ASSERT_INT_EQ(st.elsewhere, 0);
    zs_db_close(db);
    CU_ASSERT_STRING_EQUAL(raw(path, "SELECT count(*) FROM claims"), "0");
    CU_ASSERT_STRING_EQUAL(raw(path, "SELECT count(*) FROM results"), "4");
    close(up[0]);
    zs_spec_free(s);
}

/* Runners started together on a new file all open it: the switch to WAL
 * needs the file to itself and SQLite refuses it at once, without the busy
 * timeout, while another opener holds a write lock (reproduce-figures'
 * second lane once gave up on its first spec so). Eight openers at once,
 * on thirty new files. The race is timing-dependent: the old code failed
 * this test on 3 of 8 runs here, the retry on none of many. */
static void test_open_together(void)
{
    enum { OPENERS = 8, ROUNDS = 30 };
    for (int round = 0; round < ROUNDS; round++) {
        const char *path = tmp_path("together.db");
        char side[1100];
        unlink(path);
        snprintf(side, sizeof side, "%s-wal", path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", path);
        unlink(side);
        int go[2];
        CU_ASSERT_FATAL(pipe(go) == 0);
        pid_t pid[OPENERS];
        fflush(NULL);
        for (int i = 0; i < OPENERS; i++) {
            pid[i] = fork();
            if (pid[i] == 0) {
                close(go[1]);
                char c;
                if (read(go[0], &c, 1) != 0) /* all start when the pipe closes */
                    _exit(3);
                zs_err e;
                zs_err_clear(&e);
                zs_db *db = NULL;
                int rc = zs_db_open(path, &db, &e);
                if (rc)
                    fprintf(stderr, "opener %d: %s\n", i, e.what);
                zs_db_close(db);
                _exit(rc ? 1 : 0);
            }
        }
        close(go[0]);
        close(go[1]);
        int ok = 0;
        for (int i = 0; i < OPENERS; i++) {
            int status = 0;
            waitpid(pid[i], &status, 0);
            ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
        }
        ZS_ASSERT_INT_EQ(ok, OPENERS);
        CU_ASSERT_STRING_EQUAL(raw(path, "PRAGMA journal_mode"), "wal");
    }
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"readonly_changes_nothing", test_readonly_changes_nothing},
        {"foreign_files", test_foreign_files},
        {"query_refuses_writes", test_query_refuses_writes},
        {"merge_into_itself", test_merge_into_itself},
        {"full_and_locked", test_full_and_locked},
        {"runners_share", test_runners_share},
        {"open_together", test_open_together},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"db", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

/* The experiment pipeline end to end on a tiny spec (analytic backend,
 * 2 nodes, LLaMA-550M, 32K context, 1 iteration): run into a temporary
 * database with worker processes, resume (nothing rerun or duplicated),
 * identical numbers from identical seeds, shards + merge equal one run,
 * stored failures, and a report with the expected rows. */
#include <stdlib.h>
#include <unistd.h>

#include "zs_db.h"
#include "zs_report.h"
#include "zs_runner.h"
#include "zs_spec.h"
#include "zs_test.h"
#include "zs_version.h"

static const char tiny[] =
    "{\n"
    "  \"name\": \"tiny\",\n"
    "  \"title\": \"Tiny\",\n"
    "  \"base\": {\"model\": \"llama-550m\", \"cluster\": \"cluster-a\", \"nodes\": 2,\n"
    "           \"context\": 32768, \"iterations\": 1, \"backend\": \"analytic\"},\n"
    "  \"sweep\": {\"trace\": [\"arxiv\", \"github\"]},\n"
    "  \"series\": [{\"label\": \"TE CP\", \"method\": \"te-cp\"},\n"
    "             {\"label\": \"Local\", \"method\": \"local\"}],\n"
    "  \"baseline\": \"TE CP\",\n"
    "  \"plot\": {\"metric\": \"speedup\"},\n"
    "  \"paper\": [{\"what\": \"local speedup on arxiv\", \"series\": \"Local\",\n"
    "             \"metric\": \"speedup\", \"agg\": \"value\", \"match\": {\"trace\": "
    "\"arxiv\"},\n"
    "             \"value\": 2.0, \"source\": \"made up for the test\"}]\n"
    "}\n";

static zs_spec *load_tiny(void)
{
    zs_spec *s = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_spec_load_text("tiny.json", tiny, &s, &e), &e);
    return s;
}

static zs_db *fresh_db(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", zs_test_tmpdir(), name);
    unlink(path);
    zs_db *db = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_db_open(path, &db, &e), &e);
    return db;
}

static long count_rows(zs_db *db, const char *where)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM results %s", where);
    zs_table *t = zs_table_new(NULL);
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_db_query(db, sql, 0, t, &e), &e);
    FILE *f = tmpfile();
    zs_table_print(t, f, ZS_FMT_CSV);
    rewind(f);
    char line[128] = "", val[128] = "";
    if (!fgets(line, sizeof line, f) || !fgets(val, sizeof val, f))
        val[0] = '\0';
    fclose(f);
    zs_table_free(t);
    return atol(val);
}

static void run(const zs_spec *s, zs_db *db, int jobs, int si, int sn, zs_runner_stats *st)
{
    zs_runner_opts o;
    zs_runner_opts_init(&o);
    o.jobs = jobs;
    o.shard_i = si;
    o.shard_n = sn;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_runner_run(s, db, &o, st, &e), &e);
}

static void test_run_resume(void)
{
    zs_spec *s = load_tiny();
    zs_db *db = fresh_db("run.db");
    zs_runner_stats st;
    run(s, db, 2, 1, 1, &st);
    ZS_ASSERT_INT_EQ(st.points, 4);
    ZS_ASSERT_INT_EQ(st.ran, 4);
    ZS_ASSERT_INT_EQ(st.failed, 0);
    ZS_ASSERT_INT_EQ(count_rows(db, "WHERE status = 'ok' AND spec = 'tiny'"), 4);
    ZS_ASSERT_INT_EQ(count_rows(db, "WHERE version = '" ZS_VERSION "' AND tokens_per_s > 0"), 4);
    /* the full configuration is stored */
    ZS_ASSERT_INT_EQ(count_rows(db, "WHERE model = 'llama-550m' AND cluster = 'cluster-a' AND "
                                    "nodes = 2 AND seed = 1 AND backend = 'analytic' AND "
                                    "config LIKE '%trace=github%'"),
                     2);
    /* a second run finds everything stored */
    run(s, db, 2, 1, 1, &st);
    ZS_ASSERT_INT_EQ(st.stored_before, 4);
    ZS_ASSERT_INT_EQ(st.ran, 0);
    ZS_ASSERT_INT_EQ(count_rows(db, ""), 4);
    /* a lost row is run again, and only it */
    zs_table *t = zs_table_new(NULL);
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(
        zs_db_query(db, "DELETE FROM results WHERE method = 'local' AND trace = 'arxiv'", 1, t, &e),
        &e);
    zs_table_free(t);
    ZS_ASSERT_INT_EQ(count_rows(db, ""), 3);
    run(s, db, 1, 1, 1, &st);
    ZS_ASSERT_INT_EQ(st.stored_before, 3);
    ZS_ASSERT_INT_EQ(st.ran, 1);
    ZS_ASSERT_INT_EQ(count_rows(db, ""), 4);
    zs_db_close(db);
    zs_spec_free(s);
}

static void test_same_seed_same_numbers(void)
{
    zs_spec *s = load_tiny();
    zs_db *a = fresh_db("seed-a.db"), *b = fresh_db("seed-b.db");
    zs_runner_stats st;
    run(s, a, 1, 1, 1, &st);
    run(s, b, 2, 1, 1, &st);
    for (int i = 0; i < s->npoints; i++) {
        char key[4096];
        zs_db_row ra, rb;
        int fa = 0, fb = 0;
        zs_err e;
        zs_err_clear(&e);
        ZS_ASSERT_OK(zs_db_key(&s->points[i].cfg, key, sizeof key, &e), &e);
        ZS_ASSERT_OK(zs_db_get(a, key, &ra, &fa, &e), &e);
        ZS_ASSERT_OK(zs_db_get(b, key, &rb, &fb, &e), &e);
        CU_ASSERT(fa && fb && ra.ok && rb.ok);
        /* bit-identical, not merely close */
        CU_ASSERT(ra.r.tokens_per_s == rb.r.tokens_per_s);
        CU_ASSERT(ra.r.iter_time == rb.r.iter_time);
        CU_ASSERT(ra.r.mfu == rb.r.mfu);
        CU_ASSERT(ra.r.exposed_share == rb.r.exposed_share);
        CU_ASSERT(ra.r.max_nic_util == rb.r.max_nic_util);
        CU_ASSERT(ra.r.attn_imbalance == rb.r.attn_imbalance);
        CU_ASSERT(ra.r.tokens == rb.r.tokens && ra.r.tokens > 0);
    }
    zs_db_close(a);
    zs_db_close(b);
    zs_spec_free(s);
}

static void test_shards_merge(void)
{
    zs_spec *s = load_tiny();
    zs_db *a = fresh_db("shard1.db"), *b = fresh_db("shard2.db");
    zs_runner_stats st;
    run(s, a, 1, 1, 2, &st);
    ZS_ASSERT_INT_EQ(st.in_shard, 2);
    ZS_ASSERT_INT_EQ(st.ran, 2);
    run(s, b, 1, 2, 2, &st);
    ZS_ASSERT_INT_EQ(st.ran, 2);
    zs_db_close(a);
    zs_db_close(b);
    char out[1024], in1[1024], in2[1024];
    snprintf(out, sizeof out, "%s/merged.db", zs_test_tmpdir());
    snprintf(in1, sizeof in1, "%s/shard1.db", zs_test_tmpdir());
    snprintf(in2, sizeof in2, "%s/shard2.db", zs_test_tmpdir());
    unlink(out);
    char *ins[] = {in1, in2, in1};
    long copied = 0, skipped = 0;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_db_merge(out, ins, 3, &copied, &skipped, &e), &e);
    ZS_ASSERT_INT_EQ(copied, 4);
    ZS_ASSERT_INT_EQ(skipped, 2); /* in1 twice */
    zs_db *m = NULL;
    ZS_ASSERT_OK(zs_db_open(out, &m, &e), &e);
    run(s, m, 1, 1, 1, &st);
    ZS_ASSERT_INT_EQ(st.stored_before, 4);
    ZS_ASSERT_INT_EQ(st.ran, 0);
    zs_db_close(m);
    /* merging something that is not a results database is an error */
    char *bad[] = {"/nonexistent.db"};
    CU_ASSERT(zs_db_merge(out, bad, 1, &copied, &skipped, &e) != ZS_OK);
    zs_spec_free(s);
}

static void test_failure_stored(void)
{
    /* more GPUs per group than the cluster has: rejected by zs_point_run */
    const char *spec = "{\"name\": \"fails\", \"base\": {\"model\": \"llama-550m\", \"nodes\": 2,"
                       " \"group\": 48, \"iterations\": 1, \"backend\": \"analytic\"},"
                       " \"series\": [{\"label\": \"TE CP\", \"method\": \"te-cp\"}]}";
    zs_spec *s = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_spec_load_text("fails.json", spec, &s, &e), &e);
    zs_db *db = fresh_db("fail.db");
    zs_runner_stats st;
    run(s, db, 1, 1, 1, &st);
    ZS_ASSERT_INT_EQ(st.failed, 1);
    ZS_ASSERT_STR_CONTAINS(st.first_error, "context groups");
    ZS_ASSERT_INT_EQ(count_rows(db, "WHERE status = 'failed' AND error LIKE '%group%'"), 1);
    run(s, db, 1, 1, 1, &st); /* not retried */
    ZS_ASSERT_INT_EQ(st.stored_before, 1);
    ZS_ASSERT_INT_EQ(st.failed, 0);
    zs_runner_opts o;
    zs_runner_opts_init(&o);
    o.retry_failed = 1;
    ZS_ASSERT_OK(zs_runner_run(s, db, &o, &st, &e), &e);
    ZS_ASSERT_INT_EQ(st.failed, 1);
    ZS_ASSERT_INT_EQ(count_rows(db, ""), 1);
    zs_db_close(db);
    zs_spec_free(s);
}

static void test_report(void)
{
    zs_spec *s = load_tiny();
    zs_db *db = fresh_db("report.db");
    zs_runner_stats st;
    run(s, db, 2, 1, 1, &st);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/report", zs_test_tmpdir());
    zs_report_opts o;
    zs_report_opts_init(&o);
    o.out_dir = dir;
    o.plot = 0; /* gnuplot is exercised by the CLI test */
    zs_report_stats rs;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_report_write(s, db, &o, &rs, &e), &e);
    ZS_ASSERT_INT_EQ(rs.stored, 4);
    ZS_ASSERT_INT_EQ(rs.missing, 0);
    char *md = zs_test_slurp(rs.md_path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    ZS_ASSERT_STR_CONTAINS(md, "# Tiny");
    ZS_ASSERT_STR_CONTAINS(md, "| arxiv | TE CP |");
    ZS_ASSERT_STR_CONTAINS(md, "| arxiv | Local |");
    ZS_ASSERT_STR_CONTAINS(md, "| github | TE CP |");
    ZS_ASSERT_STR_CONTAINS(md, "| github | Local |");
    ZS_ASSERT_STR_CONTAINS(md, "| local speedup on arxiv | Local |");
    ZS_ASSERT_STR_CONTAINS(md, "| 2.00x |"); /* the paper's value beside ours */
    ZS_ASSERT_STR_CONTAINS(md, "1/1 | made up for the test");
    /* our value and the ratio are the stored numbers */
    int rows[4] = {0};
    zs_db_row r[4];
    for (int i = 0; i < 4; i++) {
        char key[4096];
        ZS_ASSERT_OK(zs_db_key(&s->points[i].cfg, key, sizeof key, &e), &e);
        ZS_ASSERT_OK(zs_db_get(db, key, &r[i], &rows[i], &e), &e);
    }
    double sp = zs_report_metric(s, r, rows, 1, "speedup");
    ZS_ASSERT_REL(sp, r[1].r.tokens_per_s / r[0].r.tokens_per_s, 1e-12);
    ZS_ASSERT_REL(zs_report_metric(s, r, rows, 0, "speedup"), 1.0, 1e-12);
    char want[128];
    snprintf(want, sizeof want, "| %.2fx | 2.00x | %.2f |", sp, sp / 2.0);
    ZS_ASSERT_STR_CONTAINS(md, want);
    free(md);
    /* the same database gives the same report, byte for byte */
    char *a = zs_test_slurp(rs.md_path);
    ZS_ASSERT_OK(zs_report_write(s, db, &o, &rs, &e), &e);
    char *b = zs_test_slurp(rs.md_path);
    CU_ASSERT(a && b && !strcmp(a, b));
    free(a);
    free(b);
    zs_db_close(db);
    zs_spec_free(s);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"run_resume", test_run_resume},
                                         {"same_seed_same_numbers", test_same_seed_same_numbers},
                                         {"shards_merge", test_shards_merge},
                                         {"failure_stored", test_failure_stored},
                                         {"report", test_report},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"experiment", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

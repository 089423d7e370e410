/* Output a user can script (issue 18): tables with typed cells, one JSON or
 * CSV document per command (zs_output), compare's verdict and its NIC note
 * (zs_verdict), and the progress lines of long runs (zs_progress), on
 * small hand-checked cases; the JSON is read back with jansson; notes cut
 * when full are marked. */
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>

#include "zs_output.h"
#include "zs_point.h"
#include "zs_progress.h"
#include "zs_result.h"
#include "zs_test.h"
#include "zs_verdict.h"

/* The document d printed into a file, read back as text (caller frees). */
static char *render(zs_output *d, FILE *f, const char *path)
{
    ZS_ASSERT_INT_EQ(zs_output_end(d), ZS_OK);
    zs_output_free(d);
    fclose(f);
    return zs_test_slurp(path);
}

static zs_table *sample(void)
{
    zs_table *t = zs_table_new("title for people");
    zs_table_col(t, "name", ZS_COL_TEXT);
    zs_table_col(t, "n", ZS_COL_NUM);
    zs_table_col(t, "value", ZS_COL_MIXED);
    zs_table_row(t);
    zs_table_set(t, 0, "a, \"quoted\"");
    zs_table_set(t, 1, "%+.2f", 5.65); /* "+5.65": a number, the sign dropped */
    zs_table_set(t, 2, "%s", "text");
    zs_table_row(t);
    zs_table_set(t, 0, "b");
    zs_table_num(t, 1, "%.1f", NAN); /* not finite: null */
    zs_table_set(t, 2, "%d", 20000); /* a number in a mixed column */
    zs_table_row(t);
    zs_table_set(t, 0, "c");
    zs_table_set(t, 1, "n/a");        /* text in a numeric column stays text */
    zs_table_num(t, 2, "%.0f", -0.2); /* "-0" reads 0 */
    return t;
}

static void test_json(void)
{
    const char *path = zs_test_write("doc.json", "");
    FILE *f = fopen(path, "w");
    zs_output *d = zs_output_new("unit", ZS_FMT_JSON, f);
    zs_output_set_text(d, NULL, "model", "llama-7b");
    zs_output_set_num(d, "verdict", "margin_pct", 12.5);
    zs_output_set_num(d, "verdict", "bad", INFINITY);
    zs_output_table(d, "rows", sample());
    zs_output_note(d, "a note");
    char *text = render(d, f, path);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(doc, "command")), "unit");
    CU_ASSERT(json_is_string(json_object_get(doc, "zepsim")));
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(doc, "model")), "llama-7b");
    json_t *v = json_object_get(doc, "verdict");
    ZS_ASSERT_NEAR(json_number_value(json_object_get(v, "margin_pct")), 12.5, 1e-12);
    CU_ASSERT(json_is_null(json_object_get(v, "bad")));
    json_t *rows = json_object_get(doc, "rows");
    ZS_ASSERT_INT_EQ(json_array_size(rows), 3);
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1),
           *r2 = json_array_get(rows, 2);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r0, "name")), "a, \"quoted\"");
    CU_ASSERT(json_is_real(json_object_get(r0, "n")));
    ZS_ASSERT_NEAR(json_real_value(json_object_get(r0, "n")), 5.65, 1e-12);
    CU_ASSERT(json_is_null(json_object_get(r1, "n")));
    CU_ASSERT(json_is_integer(json_object_get(r1, "value")));
    ZS_ASSERT_INT_EQ(json_integer_value(json_object_get(r1, "value")), 20000);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r2, "n")), "n/a");
    ZS_ASSERT_INT_EQ(json_integer_value(json_object_get(r2, "value")), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(json_object_get(doc, "notes"), 0)),
                           "a note");
    /* one row per line, for people and grep */
    ZS_ASSERT_STR_CONTAINS(text, "\n  {\"name\": \"b\", \"n\": null, \"value\": 20000}");
    json_decref(doc);
    free(text);
}

static void test_csv(void)
{
    const char *path = zs_test_write("doc.csv", "");
    FILE *f = fopen(path, "w");
    zs_output *d = zs_output_new("unit", ZS_FMT_CSV, f);
    zs_output_set_text(d, NULL, "model", "not in a CSV with tables");
    zs_output_table(d, "rows", sample());
    zs_table *t = zs_table_new(NULL);
    zs_table_col(t, "value", ZS_COL_NUM);
    zs_table_col(t, "extra", ZS_COL_TEXT);
    zs_table_row(t);
    zs_table_num(t, 0, "%.3f", 1.5);
    zs_table_set(t, 1, "x");
    zs_output_table(d, "more", t);
    char *text = render(d, f, path);
    /* one header: the union of the columns, each row's table first */
    CU_ASSERT_STRING_EQUAL(text, "table,name,n,value,extra\n"
                                 "rows,\"a, \"\"quoted\"\"\",5.65,text,\n"
                                 "rows,b,,20000,\n"
                                 "rows,c,n/a,-0.2,\n"
                                 "more,,,1.5,x\n");
    free(text);
    /* a document of values only: one row */
    path = zs_test_write("values.csv", "");
    f = fopen(path, "w");
    d = zs_output_new("unit", ZS_FMT_CSV, f);
    zs_output_set_int(d, NULL, "copied", 4);
    text = render(d, f, path);
    ZS_ASSERT_STR_CONTAINS(text, ",command,copied\n");
    ZS_ASSERT_STR_CONTAINS(text, ",unit,4\n");
    free(text);
}

static void test_table_text(void)
{
    const char *path = zs_test_write("doc.txt", "");
    FILE *f = fopen(path, "w");
    zs_output *d = zs_output_new("unit", ZS_FMT_TABLE, f);
    zs_output_text(d, "# header\n");
    zs_output_table(d, "rows", sample());
    zs_output_set_text(d, NULL, "model", "json only");
    zs_output_note(d, "a note");
    char *text = render(d, f, path);
    CU_ASSERT_STRING_EQUAL(text, "# header\n"
                                 "title for people\n"
                                 "name             n  value\n"
                                 "-----------  -----  -----\n"
                                 "a, \"quoted\"  +5.65  text\n"
                                 "b                   20000\n"
                                 "c              n/a  0\n"
                                 "a note\n");
    free(text);
}

static zs_point_result res(double tps, double tpi, double nic)
{
    zs_point_result r;
    memset(&r, 0, sizeof r);
    r.tokens_per_s = tps;
    r.tokens_per_iter = tpi;
    r.max_nic_util = nic;
    return r;
}

static void test_verdict(void)
{
    const char *m[] = {"te-cp", "usp", "zeppelin", "hybrid-dp"};
    zs_point_result a = res(100, 1000, 0.5), b = res(150, 1000, 0.2), c = res(120, 1000, 1.98);
    const zs_point_result *r[] = {&a, &b, NULL, &c};
    zs_verdict v;
    zs_verdict_make(m, r, 4, 0, &v);
    ZS_ASSERT_INT_EQ(v.fastest, 1);
    ZS_ASSERT_INT_EQ(v.second, 3);
    ZS_ASSERT_NEAR(v.margin_pct, 25.0, 1e-9);
    CU_ASSERT_STRING_EQUAL(v.line, "verdict: usp is fastest at 150 tokens/s, 25.0% ahead of "
                                   "hybrid-dp (120); 1.50x te-cp");
    /* methods that train different amounts: said */
    c.tokens_per_iter = 900;
    zs_verdict_make(m, r, 4, -1, &v);
    ZS_ASSERT_STR_CONTAINS(v.line, "the methods train different tokens per iteration");
    /* one method ran */
    const zs_point_result *one[] = {NULL, &b};
    zs_verdict_make(m, one, 2, -1, &v);
    CU_ASSERT_STRING_EQUAL(v.line, "verdict: usp is fastest at 150 tokens/s (the only method that "
                                   "ran)");
    const zs_point_result *none[] = {NULL, NULL};
    zs_verdict_make(m, none, 2, -1, &v);
    ZS_ASSERT_INT_EQ(v.fastest, -1);
    CU_ASSERT_STRING_EQUAL(v.line, "");
    /* the NIC note names the method over 100% and the backend's reason */
    char note[1024];
    ZS_ASSERT_INT_EQ(zs_verdict_nic_note(m, r, 4, "analytic", note, sizeof note), 1);
    ZS_ASSERT_STR_CONTAINS(note, "max_nic_pct above 100 (hybrid-dp 198%)");
    ZS_ASSERT_STR_CONTAINS(note, "--backend sim shares every link");
    /* SimGrid shares every link: a NIC over 100% there is a bug to report */
    ZS_ASSERT_INT_EQ(zs_verdict_nic_note(m, r, 4, "sim", note, sizeof note), 1);
    ZS_ASSERT_STR_CONTAINS(note, "max_nic_pct above 100 (hybrid-dp 198%): a NIC was busy longer "
                                 "than the iteration on the sim backend, which should not happen");
    c.max_nic_util = 1.0;
    ZS_ASSERT_INT_EQ(zs_verdict_nic_note(m, r, 4, "analytic", note, sizeof note), 0);
    CU_ASSERT_STRING_EQUAL(note, "");
}

static void test_progress(void)
{
    const char *path = zs_test_write("progress.txt", "");
    FILE *f = fopen(path, "w");
    zs_progress p;
    zs_progress_init(&p, f, 0, "compare", 100.0);
    zs_progress_report(&p, 101, 0.1, 0, "a");   /* no step, under 10 s: nothing */
    zs_progress_report(&p, 105, 0.25, 1, "b");  /* a step: a line */
    zs_progress_report(&p, 111, 0.3, 0, "c");   /* 6 s after the last: nothing */
    zs_progress_report(&p, 115.5, 0.5, 0, "d"); /* 10.5 s after: a line */
    zs_progress_report(&p, 130, 1.0, 1, "e");   /* done: no estimate */
    zs_progress_end(&p);
    fclose(f);
    char *text = zs_test_slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "compare: b; 5 s, about 15 s left\n"
                                 "compare: d; 16 s, about 16 s left\n"
                                 "compare: e; 30 s\n");
    free(text);
    zs_progress_init(&p, NULL, 0, "quiet", 0); /* --quiet: silent */
    zs_progress_report(&p, 50, 0.5, 1, "x");
    ZS_ASSERT_INT_EQ(p.lines, 0);
}

/* Fig. 9's 28 points as `experiment run` runs them (4 GPU counts x 7
 * methods, in spec order): each one's host seconds in the runner (the
 * results' wall_s, median of 3 runs, 2-core machine, December 2026). */
static const struct {
    int gpus;
    double s;
} fig9[] = {{16, .077},   {16, .033},   {16, .074},   {16, .371},   {16, .060},  {16, .039},
            {16, .171},   {32, .408},   {32, .132},   {32, .121},   {32, .480},  {32, .370},
            {32, .220},   {32, .333},   {64, .888},   {64, .254},   {64, .224},  {64, .864},
            {64, .843},   {64, .424},   {64, .794},   {128, 2.059}, {128, .582}, {128, .428},
            {128, 2.334}, {128, 1.836}, {128, 1.035}, {128, 1.648}};
#define NFIG9 ((int)(sizeof fig9 / sizeof fig9[0]))

/* Runs n points of gpus[i] GPUs taking secs[i] s on `jobs` workers (at
 * most 8) in order, each on the first one free, with a fake clock, and
 * reads the estimate of the time left at every point's end (when the
 * runner prints) where a line carries one (2 s on) and a tenth of the run
 * or more is left (in the last tenth one point's own variation decides).
 * Returns the worst ratio of estimate to truth, either way (1: exact); old:
 * the estimator before (points left x elapsed / points done). */
static double worst_eta(const int *gpus, const double *secs, int n, int jobs, int old)
{
    zs_eta_item items[64];
    double free_at[8] = {0}, end = 0;
    for (int i = 0; i < n; i++) { /* the schedule, known in advance */
        int k = 0;
        for (int m = 1; m < jobs; m++)
            k = free_at[m] < free_at[k] ? m : k;
        zs_point_cfg c;
        zs_point_cfg_default(&c);
        c.nodes = gpus[i] / 8; /* cluster-a: 8 GPUs per node */
        c.iterations = 1;
        items[i].cost = zs_point_cost_hint(&c);
        items[i].start = free_at[k];
        free_at[k] += secs[i];
        items[i].end = free_at[k];
        end = free_at[k] > end ? free_at[k] : end;
    }
    double worst = 1;
    for (int i = 0; i < n; i++) {
        double now = items[i].end, truth = end - now;
        zs_eta_item seen[64]; /* what the runner knows at now */
        int done = 0;
        for (int j = 0; j < n; j++) {
            seen[j] = items[j];
            if (seen[j].start > now)
                seen[j].start = -1;
            if (seen[j].end > now)
                seen[j].end = -1;
            done += seen[j].end >= 0;
        }
        double eta = old ? now / done * (n - done) : zs_progress_eta(seen, n, jobs, now);
        if (eta < 0 || now < 2 || truth < end / 10)
            continue;
        double r = eta > 0 ? (eta > truth ? eta / truth : truth / eta) : 1e9;
        worst = r > worst ? r : worst;
    }
    return worst;
}

/* Both estimators on one sequence: the new within 2x, the old not. */
static void eta_case(const char *what, const int *g, const double *t, int n)
{
    for (int jobs = 1; jobs <= 4; jobs *= 2) {
        double now = worst_eta(g, t, n, jobs, 0), before = worst_eta(g, t, n, jobs, 1);
        printf("%s, %d job(s): worst %.2fx, before %.2fx\n", what, jobs, now, before);
        CU_ASSERT(now <= 2.0);
        CU_ASSERT(before > 2.0);
    }
}

/* The time left comes within 2x of the truth on Fig. 9's measured points
 * (cheap 16-GPU points first: after the first 14, 2.9 s, the estimate from
 * the points done was 2.9 s left where 14.2 s were) and on
 * sweeps of 256-2048 GPUs whose time grows as GPUs^1.15 and GPUs^1.45
 * (the exponent the weights assume is 1.3), with one, two and four
 * workers; the estimator before misses by more than 2x on each. No
 * estimate before 5% of the cost is done. */
static void test_progress_eta(void)
{
    int g[64];
    double t[64];
    for (int i = 0; i < NFIG9; i++) {
        g[i] = fig9[i].gpus;
        t[i] = fig9[i].s * 10; /* a run of minutes, where an estimate matters */
    }
    eta_case("fig9", g, t, NFIG9);
    static const double method[] = {1.0, 0.35, 0.3, 0.8, 0.85, 0.45, 0.65};
    for (int k = 0; k < 2; k++) {
        int n = 0;
        for (int gpus = 256; gpus <= 2048; gpus *= 2)
            for (int m = 0; m < 7; m++, n++) {
                g[n] = gpus;
                t[n] = 0.01 * pow(gpus, k ? 1.45 : 1.15) * method[m];
            }
        eta_case(k ? "256-2048 GPUs, GPUs^1.45" : "256-2048 GPUs, GPUs^1.15", g, t, n);
    }
    /* after Fig. 9's first point (0.7% of its cost): no estimate yet */
    zs_eta_item first[NFIG9];
    for (int i = 0; i < NFIG9; i++)
        first[i] = (zs_eta_item){pow(fig9[i].gpus, 1.3), i ? -1 : 0, i ? -1 : fig9[i].s};
    CU_ASSERT_EQUAL(zs_progress_eta(first, NFIG9, 1, fig9[0].s), -1);
    /* an item left out (run by another runner) weighs nothing */
    zs_eta_item two[2] = {{1, 0, 10}, {0, -1, -1}};
    CU_ASSERT_DOUBLE_EQUAL(zs_progress_eta(two, 2, 1, 10), 0, 1e-12);
    /* a running item past its cost: a quarter of its time again */
    zs_eta_item run[2] = {{1, 0, 10}, {1, 10, -1}};
    CU_ASSERT_DOUBLE_EQUAL(zs_progress_eta(run, 2, 1, 30), 5, 1e-12);
}

static void notes_add(char *notes, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zs_notes_vappend(notes, n, fmt, ap);
    va_end(ap);
}

/* Notes are "; "-separated; one that does not fit is cut and the cut is
 * marked, so a reader never takes half a decision for all of it. */
static void test_notes_cut(void)
{
    char n[32] = "";
    notes_add(n, sizeof n, "a=%d", 1);
    notes_add(n, sizeof n, "b");
    CU_ASSERT_STRING_EQUAL(n, "a=1; b");
    notes_add(n, sizeof n, "a long note that does not fit");
    CU_ASSERT_EQUAL(strlen(n), sizeof n - 1);
    CU_ASSERT_STRING_EQUAL(n, "a=1; b; a long note [notes cut]");
    char exact[8] = "";
    notes_add(exact, sizeof exact, "1234567"); /* fits exactly: no mark */
    CU_ASSERT_STRING_EQUAL(exact, "1234567");
}

/* Scripts get every digit a double carries, people the rounded text; the
 * same cell. */
static void test_full_precision(void)
{
    zs_table *t = zs_table_new(NULL);
    zs_table_col(t, "x", ZS_COL_NUM);
    zs_table_row(t);
    zs_table_num(t, 0, "%.1f", 2.0 / 3);
    CU_ASSERT_STRING_EQUAL(zs_table_text(t, 0, 0), "0.7");
    CU_ASSERT_STRING_EQUAL(zs_table_value(t, 0, 0), "0.666666666666667");
    zs_table_row(t);
    zs_table_num_as(t, 0, "1,234,567", 1234567.25);
    CU_ASSERT_STRING_EQUAL(zs_table_text(t, 0 + 1, 0), "1,234,567");
    CU_ASSERT_STRING_EQUAL(zs_table_value(t, 1, 0), "1234567.25");
    zs_table_row(t);
    zs_table_num(t, 0, "%.0f", -1e-9); /* -0 reads 0 for people */
    CU_ASSERT_STRING_EQUAL(zs_table_text(t, 2, 0), "0");
    CU_ASSERT_STRING_EQUAL(zs_table_value(t, 2, 0), "-1e-09");
    const char *path = zs_test_write("prec.json", "");
    FILE *f = fopen(path, "w");
    zs_output *d = zs_output_new("unit", ZS_FMT_JSON, f);
    zs_output_table(d, "rows", t);
    char *text = render(d, f, path);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *rows = json_object_get(doc, "rows");
    ZS_ASSERT_NEAR(json_number_value(json_object_get(json_array_get(rows, 0), "x")), 2.0 / 3,
                   1e-15);
    ZS_ASSERT_NEAR(json_number_value(json_object_get(json_array_get(rows, 1), "x")), 1234567.25,
                   1e-9);
    /* every documented key, also when there is nothing in it */
    CU_ASSERT(json_is_array(json_object_get(doc, "notes")));
    ZS_ASSERT_INT_EQ(json_array_size(json_object_get(doc, "notes")), 0);
    json_decref(doc);
    free(text);
}

/* Key/value tables: the number alone in value, its unit and note in their
 * own fields (null when none), and for people "key  value unit  note". */
static void test_kv(void)
{
    zs_table *t = zs_table_kv_new("kv");
    zs_table_kv_num(t, "time", "ms", "%.2f", 1.23456);
    zs_table_kv_note(t, "HBM floor");
    zs_table_kv_text(t, "gpu", "%s", "h100");
    const char *path = zs_test_write("kv.json", "");
    FILE *f = fopen(path, "w");
    zs_output *d = zs_output_new("unit", ZS_FMT_JSON, f);
    zs_output_table(d, "kv", t);
    char *text = render(d, f, path);
    ZS_ASSERT_STR_CONTAINS(text, "{\"key\": \"time\", \"value\": 1.23456, \"unit\": \"ms\", "
                                 "\"note\": \"HBM floor\"}");
    ZS_ASSERT_STR_CONTAINS(text, "{\"key\": \"gpu\", \"value\": \"h100\", \"unit\": null, "
                                 "\"note\": null}");
    free(text);
    t = zs_table_kv_new(NULL);
    zs_table_kv_num(t, "time", "ms", "%.2f", 1.23456);
    zs_table_kv_note(t, "HBM floor");
    zs_table_kv_num(t, "len", "tokens", "%.0f", 16384);
    path = zs_test_write("kv.txt", "");
    f = fopen(path, "w");
    zs_table_print_text(t, f);
    fclose(f);
    zs_table_free(t);
    text = zs_test_slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "key   value         note\n"
                                 "----  ------------  ----\n"
                                 "time   1.23 ms      HBM floor\n"
                                 "len   16384 tokens\n");
    free(text);
}

static const zs_test_case cases[] = {{"json", test_json},
                                     {"full_precision", test_full_precision},
                                     {"kv", test_kv},
                                     {"csv", test_csv},
                                     {"table", test_table_text},
                                     {"verdict", test_verdict},
                                     {"progress", test_progress},
                                     {"progress_eta", test_progress_eta},
                                     {"notes_cut", test_notes_cut},
                                     {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"output", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

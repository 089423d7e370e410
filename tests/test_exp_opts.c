/* The option tables: the study-point table (zs_point_opts.h) from which
 * the command line, --help, the spec reader and the defaults come, and the
 * planners' --opt tables (zs_opts.h): every default parses and lies in its
 * range, the ends of every range are accepted and one past them is not
 * (the same on the command line and in a spec), names resolve in any case,
 * and every planner reads exactly the options its table declares. */
#include <stdlib.h>

#include "zs_point_opts.h"
#include "zs_spec.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void test_defaults(void)
{
    zs_point_cfg c;
    zs_point_cfg_default(&c);
    CU_ASSERT_STRING_EQUAL(c.model, "llama-7b");
    CU_ASSERT_STRING_EQUAL(c.cluster, "cluster-a");
    CU_ASSERT_STRING_EQUAL(c.trace, "arxiv");
    CU_ASSERT_STRING_EQUAL(c.method, "zeppelin");
    CU_ASSERT_STRING_EQUAL(c.backend, "sim");
    CU_ASSERT_STRING_EQUAL(c.opts, "");
    CU_ASSERT_STRING_EQUAL(c.calib, "");
    ZS_ASSERT_INT_EQ(c.nodes, 0); /* the cluster's own count */
    ZS_ASSERT_INT_EQ(c.context, 262144);
    ZS_ASSERT_INT_EQ(c.group, 16);
    ZS_ASSERT_INT_EQ(c.iterations, 3);
    ZS_ASSERT_INT_EQ(c.seed, 1);
    ZS_ASSERT_INT_EQ(c.zero_stage, 1);
    ZS_ASSERT_INT_EQ(c.recompute, ZS_RECOMPUTE_FULL);
    ZS_ASSERT_INT_EQ(c.validate, 0);
    CU_ASSERT_STRING_EQUAL(c.tl_ranks, ""); /* automatic */
    ZS_ASSERT_INT_EQ(c.tl_layer1, -1);
    /* every row's default parses and passes its check */
    for (int i = 0; i < zs_popt_count(); i++) {
        const zs_opt_spec *o = zs_popt_at(i);
        if (o->type == ZS_OPT_OPTSET)
            continue;
        zs_point_cfg d;
        memset(&d, 0, sizeof d);
        zs_err e;
        zs_err_clear(&e);
        ZS_ASSERT_OK(zs_opt_parse(o, o->deftext, ZS_EINPUT, "default", &d, &e), &e);
        ZS_ASSERT_OK(zs_opt_check(o, &d, ZS_EINPUT, "default", &e), &e);
    }
}

/* Names unique, every row reachable from the command line or a spec, and
 * help and a value name for every option that takes one. */
static void test_rows(void)
{
    for (int i = 0; i < zs_popt_count(); i++) {
        const zs_opt_spec *o = zs_popt_at(i);
        CU_ASSERT(o->cli || o->key);
        CU_ASSERT(o->help && o->help[0]);
        CU_ASSERT(o->size > 0);
        if (o->cli)
            CU_ASSERT_PTR_EQUAL(zs_popt_find_cli(o->cli), o);
        if (o->key)
            CU_ASSERT_PTR_EQUAL(zs_popt_find_key(o->key), o);
        if (o->type != ZS_OPT_FLAG && o->type != ZS_OPT_OPTSET)
            CU_ASSERT_PTR_NOT_NULL(o->arg);
        if (o->key)
            ZS_ASSERT_STR_CONTAINS(zs_popt_keys(), o->key);
    }
}

/* Value text as a spec writes it: numbers bare, strings quoted. */
static void spec_value(const zs_opt_spec *o, const char *text, char *buf, size_t n)
{
    int number = o->type == ZS_OPT_INT || o->type == ZS_OPT_I64 || o->type == ZS_OPT_U64;
    snprintf(buf, n, number ? "%s" : "\"%s\"", text);
}

/* The same text on the command line and in a spec's base: both accept it
 * or both reject it, and accepted values land in the same field value. */
static void expect_cli(const zs_opt_spec *o, const char *text, int ok, zs_point_cfg *cli)
{
    zs_point_cfg_default(cli);
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_opt_parse(o, text, ZS_EUSAGE, "--x", cli, &e);
    if (rc != (ok ? ZS_OK : ZS_EUSAGE))
        fprintf(stderr, "--%s '%s': rc %d\n", o->cli, text, rc);
    ZS_ASSERT_INT_EQ(rc, ok ? ZS_OK : ZS_EUSAGE);
}

static void expect_both(const zs_opt_spec *o, const char *text, int ok)
{
    zs_point_cfg cli;
    expect_cli(o, text, ok, &cli);
    if (!o->key)
        return;
    zs_err e;
    int rc;
    char json[1024], v[128];
    spec_value(o, text, v, sizeof v);
    snprintf(json, sizeof json,
             "{\"name\": \"x\", \"base\": {\"%s\": %s}, \"series\": [{\"label\": \"A\"}]}", o->key,
             v);
    zs_spec *s = NULL;
    zs_err_clear(&e);
    rc = zs_spec_load_text("t.json", json, &s, &e);
    if (rc != (ok ? ZS_OK : ZS_EINPUT))
        fprintf(stderr, "spec %s = %s: rc %d (%s)\n", o->key, v, rc, e.what);
    ZS_ASSERT_INT_EQ(rc, ok ? ZS_OK : ZS_EINPUT);
    if (s && ok)
        CU_ASSERT(memcmp((char *)&s->points[0].cfg + o->off, (char *)&cli + o->off, o->size) == 0);
    zs_spec_free(s);
}

static void test_ranges(void)
{
    for (int i = 0; i < zs_popt_count(); i++) {
        const zs_opt_spec *o = zs_popt_at(i);
        char lo[32], hi[32], below[32], above[32];
        if (o->type != ZS_OPT_INT && o->type != ZS_OPT_I64 && o->type != ZS_OPT_U64)
            continue;
        snprintf(lo, sizeof lo, "%lld", (long long)o->min);
        snprintf(below, sizeof below, "%lld", (long long)o->min - 1);
        snprintf(hi, sizeof hi, "%llu", (unsigned long long)o->max);
        snprintf(above, sizeof above, "%llu", (unsigned long long)o->max + 1);
        expect_both(o, lo, 1);
        expect_both(o, below, 0);
        if (o->max < INT64_MAX) { /* a spec integer is an int64 */
            expect_both(o, hi, 1);
            expect_both(o, above, 0);
        }
        zs_point_cfg c; /* strict: no blanks, no trailing text */
        expect_cli(o, " 1", 0, &c);
        expect_cli(o, "1x", 0, &c);
    }
    expect_both(zs_popt_find_cli("recompute"), "none", 1);
    expect_both(zs_popt_find_cli("recompute"), "some", 0);
    expect_both(zs_popt_find_cli("opt"), "tp=2, cp=4", 0);
    expect_both(zs_popt_find_cli("model"), "", 0); /* a name that has a default */
    expect_both(zs_popt_find_cli("calib"), "", 1); /* "" is "none" */
    expect_both(zs_popt_find_cli("timeline-ranks"), "3-1", 0);
    expect_both(zs_popt_find_cli("timeline-ranks"), "2-5", 1);
}

/* Names are checked and canonicalised on both paths. */
static void test_checks(void)
{
    const zs_opt_spec *m = zs_popt_find_cli("method");
    zs_point_cfg c;
    zs_point_cfg_default(&c);
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_opt_parse(m, "WLB-LLM", ZS_EUSAGE, "--method", &c, &e), &e);
    ZS_ASSERT_OK(zs_opt_check(m, &c, ZS_EUSAGE, "--method", &e), &e);
    CU_ASSERT_STRING_EQUAL(c.method, "wlb-llm");
    ZS_ASSERT_OK(zs_opt_parse(m, "zeppeln", ZS_EUSAGE, "--method", &c, &e), &e);
    ZS_ASSERT_INT_EQ(zs_opt_check(m, &c, ZS_EUSAGE, "--method", &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.where, "--method");
    ZS_ASSERT_STR_CONTAINS(e.fix, "did you mean 'zeppelin'");
    const char *json = "{\"name\": \"x\", \"series\": [{\"label\": \"A\", \"method\": \"Te-CP\"},"
                       " {\"label\": \"B\", \"method\": \"usp\", \"backend\": \"Analytic\"}]}";
    zs_spec *s = NULL;
    ZS_ASSERT_OK(zs_spec_load_text("t.json", json, &s, &e), &e);
    if (s) {
        CU_ASSERT_STRING_EQUAL(s->points[0].cfg.method, "te-cp");
        CU_ASSERT_STRING_EQUAL(s->points[1].cfg.backend, "analytic");
    }
    zs_spec_free(s);
}

/* ---- the planners' option tables ---------------------------------------- */

static void test_planner_tables(void)
{
    for (int i = 0; i < zs_planner_count(); i++) {
        const zs_planner_ops *p = zs_planner_at(i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p->options);
        char help[4096];
        zs_opt_help(p->options, help, sizeof help);
        for (int k = 0; p->options[k]; k++) {
            const zs_opt_spec *s = p->options[k];
            CU_ASSERT(s->key && s->help && s->help[0]);
            ZS_ASSERT_STR_CONTAINS(help, s->key);
            for (int j = 0; j < k; j++)
                CU_ASSERT(strcmp(p->options[j]->key, s->key) != 0);
            if (s->type == ZS_OPT_INT) {
                CU_ASSERT(s->min <= s->max);
                if (!s->computed)
                    CU_ASSERT(s->def >= s->min && s->def <= s->max);
            }
            if (s->type == ZS_OPT_ENUM)
                CU_ASSERT(s->values && s->def == 0);
        }
    }
}

/* Small hand-checked reads through a row. */
static void test_opt_reads(void)
{
    static const zs_opt_spec n = {
        .key = "n", .type = ZS_OPT_INT, .min = 2, .max = 8, .def = 4, .help = "h"};
    static const zs_opt_spec b = {.key = "b", .type = ZS_OPT_BOOL, .max = 1, .def = 1, .help = "h"};
    static const zs_opt_spec m = {.key = "m", .type = ZS_OPT_ENUM, .values = "x|yy|z", .help = "h"};
    static const zs_opt_spec *const tbl[] = {&n, &b, &m, NULL};
    zs_opts o;
    zs_opts_init(&o);
    zs_err e;
    zs_err_clear(&e);
    long v = 0;
    int f = 0;
    ZS_ASSERT_OK(zs_opt_int(&o, &n, &v, &e), &e);
    ZS_ASSERT_INT_EQ(v, 4);
    ZS_ASSERT_OK(zs_opt_int_def(&o, &n, 7, &v, &e), &e);
    ZS_ASSERT_INT_EQ(v, 7);
    ZS_ASSERT_OK(zs_opts_parse(&o, "n=8,b=off,m=z", &e), &e);
    ZS_ASSERT_OK(zs_opt_int(&o, &n, &v, &e), &e);
    ZS_ASSERT_INT_EQ(v, 8);
    ZS_ASSERT_OK(zs_opt_bool(&o, &b, &f, &e), &e);
    ZS_ASSERT_INT_EQ(f, 0);
    ZS_ASSERT_OK(zs_opt_enum(&o, &m, &f, &e), &e);
    ZS_ASSERT_INT_EQ(f, 2);
    ZS_ASSERT_OK(zs_opts_check_used(&o, "t", tbl, &e), &e);
    ZS_ASSERT_OK(zs_opts_check_declared(&o, "t", tbl, &e), &e);
    const zs_opt_spec *const partial[] = {&n, NULL};
    ZS_ASSERT_INT_EQ(zs_opts_check_declared(&o, "t", partial, &e), ZS_EINVALID);
    ZS_ASSERT_STR_CONTAINS(e.what, "reads option 'b'");
    ZS_ASSERT_OK(zs_opts_parse(&o, "n=9,m=y,nn=3", &e), &e);
    ZS_ASSERT_INT_EQ(zs_opt_int(&o, &n, &v, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.fix, "[2, 8]");
    ZS_ASSERT_INT_EQ(zs_opt_enum(&o, &m, &f, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.fix, "x|yy|z");
    ZS_ASSERT_INT_EQ(zs_opts_check_used(&o, "t", tbl, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "no option 'nn'");
    ZS_ASSERT_STR_CONTAINS(e.fix, "did you mean 'n'");
    char row[256];
    zs_opt_help_row(&n, row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "n=N (2..8, default 4): h");
    zs_opt_help_row(&m, row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "m=x|yy|z (default x): h");
}

/* Every planner reads exactly the options its table declares: planning a
 * batch asks for every row, and for nothing else (zs_plan_batch checks
 * the second). */
static void test_planners_read_their_tables(void)
{
    zs_batch *b = zs_batch_from_lengths((int32_t[]){30000, 9000, 4000, 1200, 800, 500}, 6);
    for (int i = 0; i < zs_planner_count(); i++) {
        const zs_planner_ops *p = zs_planner_at(i);
        int fourd = 0;
        for (int k = 0; p->options[k]; k++)
            fourd |= !strcmp(p->options[k]->key, "pp");
        zs_test_env v;
        zs_test_env_init(&v, "llama-550m", 2, fourd ? "tp=4,cp=2,pp=2,window=32768" : "");
        zs_schedule *s = NULL;
        zs_plan_report rep;
        zs_err e;
        zs_err_clear(&e);
        ZS_ASSERT_OK(zs_plan_batch(p, &v.ctx, b, 0, &s, &rep, &e), &e);
        for (int k = 0; p->options[k]; k++) {
            int asked = 0;
            for (int j = 0; j < v.opts.nasked; j++)
                asked |= !strcmp(v.opts.asked[j], p->options[k]->key);
            if (!asked)
                fprintf(stderr, "%s never reads '%s'\n", p->name, p->options[k]->key);
            CU_ASSERT(asked);
        }
        zs_schedule_free(s);
        zs_cost_free(v.cost);
    }
    zs_batch_free(b);
}

/* The field kinds of commands' own rows: a real number in its range, and
 * a value its row's own parser sets (the engine gives its error the
 * caller's code and the option as its place). */
typedef struct kinds {
    double x;
    int n, twice;
} kinds;

static int set_twice(const char *text, void *base, zs_err *e)
{
    kinds *k = base;
    k->n++;
    if (strcmp(text, "bad") == 0)
        return zs_err_set(e, ZS_EINPUT, NULL, "say good", "bad value");
    k->twice = 2 * atoi(text);
    return ZS_OK;
}

static void test_field_kinds(void)
{
    static const zs_opt_spec rows[] = {
        ZS_OPT_ROW("x", ZS_OPT_F64, kinds, x, 1, 10, "2.5", "X", "a real"),
        ZS_OPT_SET("twice", set_twice, "4", "N", "twice N"),
    };
    kinds k;
    memset(&k, 0, sizeof k);
    zs_opt_defaults(rows, 2, &k);
    CU_ASSERT_DOUBLE_EQUAL(k.x, 2.5, 0);
    ZS_ASSERT_INT_EQ(k.twice, 8);
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_opt_parse(&rows[0], "10", ZS_EUSAGE, "--x", &k, &e), &e);
    CU_ASSERT_DOUBLE_EQUAL(k.x, 10, 0);
    ZS_ASSERT_INT_EQ(zs_opt_parse(&rows[0], "10.5", ZS_EUSAGE, "--x", &k, &e), ZS_EUSAGE);
    CU_ASSERT_DOUBLE_EQUAL(k.x, 10, 0); /* untouched on failure */
    zs_err_clear(&e);
    ZS_ASSERT_INT_EQ(zs_opt_parse(&rows[1], "bad", ZS_EUSAGE, "--twice", &k, &e), ZS_EUSAGE);
    ZS_ASSERT_INT_EQ(e.code, ZS_EUSAGE);
    CU_ASSERT_STRING_EQUAL(e.where, "--twice");
    ZS_ASSERT_INT_EQ(k.n, 2);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"defaults", test_defaults},
        {"rows", test_rows},
        {"ranges", test_ranges},
        {"checks", test_checks},
        {"planner_tables", test_planner_tables},
        {"opt_reads", test_opt_reads},
        {"planners_read_their_tables", test_planners_read_their_tables},
        {"field_kinds", test_field_kinds},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"opts", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

/* Figure specs: expansion of a good spec (cases x series, accumulated
 * method options, labels, timeline names, paper entries) and clear errors
 * (what, file:line:col, key path) for malformed ones. */
#include <stdlib.h>

#include "zs_spec.h"
#include "zs_test.h"

static const char good[] =
    "{\n"
    "  \"name\": \"t1\",\n"
    "  \"title\": \"test\",\n"
    "  \"assumptions\": [\"a\", \"b\"],\n"
    "  \"base\": {\"model\": \"llama-550m\", \"nodes\": 2, \"context\": 32768,\n"
    "           \"iterations\": 1, \"backend\": \"analytic\", \"opts\": \"tp=1\",\n"
    "           \"timeline\": \"tl-{case}-{series}.json\"},\n"
    "  \"sweep\": {\"trace\": [\"arxiv\", \"github\"],\n"
    "            \"size\": [{\"label\": \"small\", \"context\": 16384, \"x\": 16},\n"
    "                     {\"label\": \"big\", \"context\": 32768, \"x\": 32}]},\n"
    "  \"cases\": [{\"label\": \"extra\", \"trace\": \"fineweb\", \"seed\": 7}],\n"
    "  \"series\": [{\"label\": \"TE CP\", \"method\": \"te-cp\"},\n"
    "             {\"label\": \"Z no routing\", \"method\": \"zeppelin\", \"opts\": "
    "\"routing=0\"}],\n"
    "  \"baseline\": \"TE CP\",\n"
    "  \"plot\": {\"kind\": \"lines\", \"x\": \"size\", \"metric\": \"speedup\"},\n"
    "  \"paper\": [{\"what\": \"w\", \"series\": \"Z no routing\", \"metric\": \"speedup\",\n"
    "             \"agg\": \"max\", \"match\": {\"trace\": \"arxiv\"}, \"value\": 2.5}]\n"
    "}\n";

static void test_expand(void)
{
    zs_spec *s = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_spec_load_text("good.json", good, &s, &e), &e);
    ZS_ASSERT_INT_EQ(s->naxes, 2);
    ZS_ASSERT_INT_EQ(s->ncases, 5); /* 2 x 2 sweep + 1 explicit case */
    ZS_ASSERT_INT_EQ(s->nseries, 2);
    ZS_ASSERT_INT_EQ(s->npoints, 10);
    ZS_ASSERT_INT_EQ(s->baseline, 0);
    ZS_ASSERT_INT_EQ(s->nassumptions, 2);
    /* case-major order, the last axis fastest */
    CU_ASSERT_STRING_EQUAL(s->cases[0].label, "arxiv / small");
    CU_ASSERT_STRING_EQUAL(s->cases[1].label, "arxiv / big");
    CU_ASSERT_STRING_EQUAL(s->cases[2].label, "github / small");
    CU_ASSERT_STRING_EQUAL(s->cases[4].label, "extra");
    CU_ASSERT_STRING_EQUAL(s->cases[4].axis[0], "fineweb");
    ZS_ASSERT_NEAR(s->cases[1].x, 32, 0);
    const zs_point_cfg *p = &s->points[3].cfg; /* arxiv / big, second series */
    ZS_ASSERT_INT_EQ(s->points[3].case_idx, 1);
    ZS_ASSERT_INT_EQ(s->points[3].series_idx, 1);
    CU_ASSERT_STRING_EQUAL(p->method, "zeppelin");
    CU_ASSERT_STRING_EQUAL(p->opts, "tp=1,routing=0");
    CU_ASSERT_STRING_EQUAL(p->trace, "arxiv");
    ZS_ASSERT_INT_EQ(p->context, 32768);
    ZS_ASSERT_INT_EQ(p->nodes, 2);
    CU_ASSERT_STRING_EQUAL(p->backend, "analytic");
    CU_ASSERT_STRING_EQUAL(p->timeline, "tl-arxiv---big-z-no-routing.json");
    ZS_ASSERT_INT_EQ(s->points[8].cfg.seed, 7);
    ZS_ASSERT_INT_EQ(s->points[0].cfg.seed, 1); /* the default */
    CU_ASSERT_STRING_EQUAL(s->points[0].cfg.opts, "tp=1");
    ZS_ASSERT_INT_EQ(s->npaper, 1);
    CU_ASSERT_STRING_EQUAL(s->paper[0].match_axis[0], "trace");
    CU_ASSERT_STRING_EQUAL(s->paper[0].match_val[0], "arxiv");
    ZS_ASSERT_NEAR(s->paper[0].value, 2.5, 0);
    zs_spec_free(s);
    zs_spec_free(NULL);
}

/* Every spec shipped in experiments/specs loads. */
static void test_shipped_specs(void)
{
    const char *names[] = {"zeppelin-fig8",  "zeppelin-fig9", "zeppelin-fig10", "zeppelin-fig11",
                           "zeppelin-fig12", "wlb-e2e",       "wlb-breakdown"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/experiments/specs/%s.json", ZS_SOURCE_DIR, names[i]);
        zs_spec *s = NULL;
        zs_err e;
        zs_err_clear(&e);
        ZS_ASSERT_OK(zs_spec_load(path, &s, &e), &e);
        CU_ASSERT_STRING_EQUAL(s->name, names[i]);
        CU_ASSERT(s->npoints > 0 && s->npaper > 0 && s->nassumptions > 0);
        zs_spec_free(s);
    }
}

typedef struct bad_case {
    const char *name;
    const char *text;
    const char *what;  /* expected in e.what */
    const char *where; /* expected in e.where */
} bad_case;

#define SERIES "\"series\": [{\"label\": \"A\", \"method\": \"te-cp\"}]"

static const bad_case bad[] = {
    {"syntax", "{\n  \"name\": \"x\"\n  \"series\": []\n}\n", "", "bad.json:3:"},
    {"not-object", "[1, 2]\n", "must be a JSON object", "bad.json:1:1"},
    {"no-name", "{" SERIES "}", "missing key 'name'", "bad.json"},
    {"bad-name", "{\"name\": \"a b\", " SERIES "}", "bad spec name", "bad.json:1:2: name"},
    {"unknown-top", "{\"name\": \"x\",\n \"sereis\": []}", "unknown key 'sereis'",
     "bad.json:2:2: sereis"},
    {"no-series", "{\"name\": \"x\"}", "missing key 'series'", "bad.json"},
    {"empty-series", "{\"name\": \"x\", \"series\": []}", "non-empty list", "series"},
    {"unknown-method",
     "{\"name\": \"x\",\n \"series\": [{\"label\": \"A\", \"method\": \"te-cp\"},\n"
     "   {\"label\": \"B\", \"method\": \"zepelin\"}]}",
     "unknown method 'zepelin'", "bad.json:3:19: series[1].method"},
    {"unknown-model", "{\"name\": \"x\",\n \"base\": {\"model\": \"llama-9b\"}, " SERIES "}",
     "bad model 'llama-9b'", "bad.json:2:11: base.model"},
    {"nodes-range", "{\"name\": \"x\", \"base\": {\"nodes\": 0}, " SERIES "}", "bad value '0'",
     "base.nodes"},
    {"nodes-type", "{\"name\": \"x\", \"base\": {\"nodes\": \"two\"}, " SERIES "}",
     "must be an integer", "base.nodes"},
    {"backend", "{\"name\": \"x\", \"base\": {\"backend\": \"gpu\"}, " SERIES "}",
     "unknown backend 'gpu'", "base.backend"},
    {"unknown-field", "{\"name\": \"x\", \"base\": {\"contxt\": 5}, " SERIES "}",
     "unknown key 'contxt'", "base.contxt"},
    {"axis-not-list", "{\"name\": \"x\", \"sweep\": {\"trace\": \"arxiv\"}, " SERIES "}",
     "an axis must be a list", "sweep.trace"},
    {"axis-scalar", "{\"name\": \"x\", \"sweep\": {\"size\": [1, 2]}, " SERIES "}",
     "axis 'size' is not a configuration field", "sweep.size[0]"},
    {"axis-bad-trace",
     "{\"name\": \"x\",\n \"sweep\": {\"trace\": [\"arxiv\",\n   \"arxvi\"]}, " SERIES "}",
     "bad trace 'arxvi'", "bad.json:3:4: sweep.trace[1]"},
    {"dup-series",
     "{\"name\": \"x\", \"series\": [{\"label\": \"A\", \"method\": \"te-cp\"}, {\"label\": "
     "\"A\", \"method\": \"zeppelin\"}]}",
     "duplicate series label", "series[1]"},
    {"no-label", "{\"name\": \"x\", \"series\": [{\"method\": \"te-cp\"}]}", "missing key 'label'",
     "series[0]"},
    {"bad-baseline", "{\"name\": \"x\", \"baseline\": \"B\", " SERIES "}",
     "'baseline' is not a series label", "baseline"},
    {"bad-metric", "{\"name\": \"x\", \"plot\": {\"metric\": \"speed\"}, " SERIES "}",
     "unknown metric", "plot.metric"},
    {"lines-no-x", "{\"name\": \"x\", \"plot\": {\"kind\": \"lines\"}, " SERIES "}", "needs \"x\"",
     "plot"},
    {"speedup-no-baseline",
     "{\"name\": \"x\", " SERIES ", \"paper\": [{\"what\": \"w\", \"series\": \"A\", "
     "\"metric\": \"speedup\"}]}",
     "needs a baseline", "paper[0].metric"},
    {"paper-series",
     "{\"name\": \"x\", " SERIES
     ", \"paper\": [{\"what\": \"w\", \"series\": \"Z\", \"metric\": \"mfu\"}]}",
     "unknown series", "paper[0].series"},
    {"paper-axis",
     "{\"name\": \"x\", " SERIES ", \"paper\": [{\"what\": \"w\", \"series\": \"A\", "
     "\"metric\": \"mfu\", \"match\": {\"planet\": \"earth\"}}]}",
     "unknown axis in 'match'", "paper[0].match.planet"},
    {"paper-value",
     "{\"name\": \"x\", " SERIES
     ", \"paper\": [{\"what\": \"w\", \"series\": \"A\", \"metric\": \"mfu\", "
     "\"value\": \"2.8x\"}]}",
     "'value' must be a number", "paper[0].value"},
    {"opts-space", "{\"name\": \"x\", \"base\": {\"opts\": \"tp=2, cp=4\"}, " SERIES "}",
     "contain a space", "base.opts"},
    {"cases-not-list", "{\"name\": \"x\", \"cases\": {\"label\": \"c\"}, " SERIES "}",
     "'cases' must be a non-empty list", "cases"},
};

static void test_malformed(void)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zs_spec *s = NULL;
        zs_err e;
        zs_err_clear(&e);
        int rc = zs_spec_load_text("bad.json", bad[i].text, &s, &e);
        if (rc != ZS_EINPUT)
            fprintf(stderr, "case %s: rc %d\n", bad[i].name, rc);
        ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
        CU_ASSERT_PTR_NULL(s);
        if (bad[i].what[0])
            ZS_ASSERT_STR_CONTAINS(e.what, bad[i].what);
        ZS_ASSERT_STR_CONTAINS(e.where, bad[i].where);
        zs_spec_free(s);
    }
}

static void test_missing_file(void)
{
    zs_spec *s = NULL;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_spec_load("/nonexistent/spec.json", &s, &e);
    CU_ASSERT(rc != ZS_OK);
    CU_ASSERT_PTR_NULL(s);
    ZS_ASSERT_STR_CONTAINS(e.where, "/nonexistent/spec.json");
}

static void test_metrics(void)
{
    CU_ASSERT(zs_spec_metric_valid("speedup"));
    CU_ASSERT(zs_spec_metric_valid("tokens_per_s"));
    CU_ASSERT(!zs_spec_metric_valid("speed"));
    ZS_ASSERT_STR_CONTAINS(zs_spec_metric_list(), "max_nic_util");
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"expand", test_expand},       {"shipped_specs", test_shipped_specs},
        {"malformed", test_malformed}, {"missing_file", test_missing_file},
        {"metrics", test_metrics},     {NULL, NULL}};
    static const zs_test_suite suites[] = {{"spec", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

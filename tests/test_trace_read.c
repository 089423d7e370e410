/* Trace readers: the three formats read what they should, every malformed
 * input is a ZS_EINPUT error naming file:line, written traces read back
 * unchanged, and the shared WLB-LLM trace has its published statistics. */
#include <stdlib.h>

#include "zs_test.h"
#include "zs_trace_read.h"
#include "zs_trace_src.h"
#include "zs_trace_stats.h"

static zs_trace *read_ok(const char *name, const char *text, zs_trace_format fmt,
                         const char *column)
{
    zs_trace_read_cfg cfg = {fmt, column, 0};
    zs_trace *t = NULL;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_trace_read_text(name, text, strlen(text), &cfg, &t, &e);
    ZS_ASSERT_OK(rc, &e);
    return t;
}

static void expect_lengths(const zs_trace *t, const int32_t *want, int n)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    ZS_ASSERT_INT_EQ(t->n, n);
    for (int i = 0; i < n && i < t->n; i++)
        ZS_ASSERT_INT_EQ(t->len[i], want[i]);
}

static void test_lines(void)
{
    static const int32_t want[] = {12, 4096, 7, 131072};
    zs_trace *t = read_ok("a.lengths",
                          "\xEF\xBB\xBF# header comment\n12\n\n  4096  \r\n7 # trailing note\n"
                          "\t131072",
                          ZS_TRACE_FMT_AUTO, NULL);
    expect_lengths(t, want, 4);
    zs_trace_free(t);
}

static void test_csv(void)
{
    static const int32_t want[] = {100, 200, 300};
    const char *named = "id,length,source\n1,100,a\n2,200,\"b, c\"\n# comment\n3,300,d\n";
    zs_trace *t = read_ok("t.csv", named, ZS_TRACE_FMT_AUTO, NULL); /* found by its name */
    expect_lengths(t, want, 3);
    zs_trace_free(t);
    t = read_ok("t.csv", named, ZS_TRACE_FMT_AUTO, "LENGTH"); /* names match without case */
    expect_lengths(t, want, 3);
    zs_trace_free(t);
    t = read_ok("t.csv", "7,100\n8,200\n9,\"300\"\n", ZS_TRACE_FMT_AUTO, "2"); /* numbered */
    expect_lengths(t, want, 3);
    zs_trace_free(t);
    t = read_ok("t.csv", "tokens\n100\n200\n300\n", ZS_TRACE_FMT_AUTO, NULL); /* one column */
    expect_lengths(t, want, 3);
    zs_trace_free(t);
    /* No extension: the comma in the first data line says CSV. */
    t = read_ok("noext", "# c\nx,len\na,100\nb,200\nc,300\n", ZS_TRACE_FMT_AUTO, NULL);
    expect_lengths(t, want, 3);
    zs_trace_free(t);
}

static void test_json(void)
{
    static const int32_t want[] = {5, 6, 70000};
    zs_trace *t = read_ok("t.json", "[5, 6,\n 70000]\n", ZS_TRACE_FMT_AUTO, NULL);
    expect_lengths(t, want, 3);
    zs_trace_free(t);
    t = read_ok("t.json", "{\"name\": \"x\", \"lengths\": [5,6,70000]}", ZS_TRACE_FMT_AUTO, NULL);
    expect_lengths(t, want, 3);
    zs_trace_free(t);
    t = read_ok("stdin-like", "  [5,6,70000]", ZS_TRACE_FMT_AUTO, NULL); /* sniffed */
    expect_lengths(t, want, 3);
    zs_trace_free(t);
}

typedef struct bad_case {
    const char *name; /* file name: its extension picks the format */
    const char *text;
    const char *column;
    const char *where; /* expected in e.where */
    const char *what;  /* expected in e.what */
} bad_case;

static void test_malformed(void)
{
    static const bad_case cases[] = {
        {"empty.lengths", "", NULL, "empty.lengths:1", "no lengths"},
        {"comments.lengths", "# a\n\n# b\n", NULL, "comments.lengths:1", "no lengths"},
        {"word.lengths", "12\nabc\n", NULL, "word.lengths:2:1", "not an integer: 'abc'"},
        {"frac.lengths", "12\n\n 12.5\n", NULL, "frac.lengths:3:2", "not a whole number"},
        {"exp.lengths", "1e3\n", NULL, "exp.lengths:1:1", "not a whole number"},
        {"zero.lengths", "5\n0\n", NULL, "zero.lengths:2:1", "zero length"},
        {"neg.lengths", "5\n6\n-7\n", NULL, "neg.lengths:3:1", "negative length"},
        {"big.lengths", "2147483648\n", NULL, "big.lengths:1:1", "above the limit"},
        {"huge.lengths", "1\n99999999999999999999999\n", NULL, "huge.lengths:2:1", "above"},
        {"two.lengths", "12 34\n", NULL, "two.lengths:1:4", "unexpected text"},
        {"glued.lengths", "12abc\n", NULL, "glued.lengths:1:1", "not an integer"},
        {"nul.lengths", "12\n\0013\n", NULL, "nul.lengths:2:1", "not an integer"},
        {"trunc.json", "[1, 2,\n 3", NULL, "trunc.json:2:", "malformed JSON"},
        {"str.json", "[1,\n 2,\n \"x\"]", NULL, "str.json:3:2", "not an integer at element 2"},
        {"float.json", "[1, 2.5]", NULL, "float.json:1:5", "not a whole number"},
        {"neg.json", "[1, -2]", NULL, "neg.json:1:5", "negative"},
        {"zero.json", "[0]", NULL, "zero.json:1:2", "zero length"},
        {"obj.json", "{\"a\": 1}", NULL, "obj.json:1:1", "without a \"lengths\" array"},
        {"empty.json", "[]", NULL, "empty.json:1", "no lengths"},
        {"col.csv", "id,len\n1,5\n", "size", "col.csv:1", "no column named 'size'"},
        {"colnum.csv", "1,5\n2,6\n", "3", "colnum.csv:1", "column 3 does not exist"},
        {"which.csv", "a,b\n1,5\n", NULL, "which.csv:1", "2 columns"},
        {"short.csv", "id,length\n1,5\n2\n", NULL, "short.csv:3", "length column 2 is missing"},
        {"cell.csv", "length\n5\nfive\n", NULL, "cell.csv:3:1", "not an integer"},
        {"header.csv", "length\n", NULL, "header.csv:1", "a header but no data rows"},
        {"quote.csv", "length\n\"5\n", NULL, "quote.csv:2:1", "unterminated quote"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *c = &cases[i];
        zs_trace_read_cfg cfg = {ZS_TRACE_FMT_AUTO, c->column, 0};
        zs_trace *t = NULL;
        zs_err e;
        zs_err_clear(&e);
        /* The NUL case needs its true length. */
        size_t n = strcmp(c->name, "nul.lengths") == 0 ? 6 : strlen(c->text);
        int rc = zs_trace_read_text(c->name, c->text, n, &cfg, &t, &e);
        if (rc != ZS_EINPUT)
            fprintf(stderr, "case %s: rc %d\n", c->name, rc);
        ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
        CU_ASSERT_PTR_NULL(t);
        ZS_ASSERT_STR_CONTAINS(e.where, c->where);
        ZS_ASSERT_STR_CONTAINS(e.what, c->what);
        CU_ASSERT(e.fix[0] != '\0');
        zs_trace_free(t);
    }
}

static void test_missing_file_and_max_docs(void)
{
    zs_trace *t = NULL;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_trace_read_file("/nonexistent/x.lengths", NULL, &t, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "/nonexistent/x.lengths");
    zs_trace_read_cfg cfg = {ZS_TRACE_FMT_LINES, NULL, 2};
    ZS_ASSERT_OK(zs_trace_read_text("m", "1\n2\n3\nnot read\n", 16, &cfg, &t, &e), &e);
    ZS_ASSERT_INT_EQ(t->n, 2);
    zs_trace_free(t);
}

static void test_round_trip(void)
{
    static const zs_trace_format fmts[] = {ZS_TRACE_FMT_LINES, ZS_TRACE_FMT_CSV, ZS_TRACE_FMT_JSON};
    static const char *names[] = {"rt.lengths", "rt.csv", "rt.json"};
    zs_err e;
    zs_trace_src *src;
    zs_trace_src_cfg scfg;
    memset(&scfg, 0, sizeof scfg);
    scfg.seed = 42;
    ZS_ASSERT_OK(zs_trace_src_open("prolong64k", &scfg, &src, &e), &e);
    zs_trace *t;
    ZS_ASSERT_OK(zs_trace_src_collect(src, 5000, &t, &e), &e);
    for (int k = 0; k < 3; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", zs_test_tmpdir(), names[k]);
        FILE *f = fopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        ZS_ASSERT_OK(zs_trace_write(t, f, fmts[k], "a comment\nover two lines", &e), &e);
        fclose(f);
        zs_trace *back;
        ZS_ASSERT_OK(zs_trace_read_file(path, NULL, &back, &e), &e);
        ZS_ASSERT_INT_EQ(back->n, t->n);
        CU_ASSERT(back->n == t->n && memcmp(back->len, t->len, sizeof(int32_t) * t->n) == 0);
        zs_trace_free(back);
    }
    zs_trace_free(t);
    zs_trace_src_free(src);
}

/* The done-when check of issue 3: figures computed from the data itself. */
static void test_shared_wlb_trace(void)
{
    const char *path = zs_test_shared("traces/wlb-meta-128k.lengths");
    if (!path)
        return;
    zs_trace *t;
    zs_err e;
    ZS_ASSERT_OK(zs_trace_read_file(path, NULL, &t, &e), &e);
    zs_trace_stats st;
    ZS_ASSERT_OK(zs_trace_stats_compute(t->len, t->n, NULL, 0, &st, &e), &e);
    ZS_ASSERT_INT_EQ(st.n, 99519);
    ZS_ASSERT_NEAR(st.mean, 3962, 0.5);
    ZS_ASSERT_NEAR(st.median, 3227, 0);
    ZS_ASSERT_NEAR(st.p10, 646, 0.5);
    ZS_ASSERT_NEAR(st.p90, 5784, 0.5);
    ZS_ASSERT_NEAR(st.p99, 26058, 0.5);
    ZS_ASSERT_INT_EQ(st.max, 124913);
    /* tail[1] is > 8K (8192): 22.445% of tokens, published rounded as 22.5%;
     * 2.37% of documents (published 2.4%); attention work 82.8%. */
    ZS_ASSERT_INT_EQ(st.tail[1].above, 8192);
    ZS_ASSERT_NEAR(100 * st.tail[1].token_share, 22.5, 0.06);
    ZS_ASSERT_NEAR(100 * st.tail[1].doc_share, 2.4, 0.05);
    ZS_ASSERT_NEAR(100 * st.tail[1].attn_share, 82.8, 0.05);
    ZS_ASSERT_NEAR(100 * st.tail[2].token_share, 17.0, 0.05); /* > 32K */
    ZS_ASSERT_NEAR(100 * st.tail[3].token_share, 12.8, 0.05); /* > 64K */
    ZS_ASSERT_NEAR(100 * st.tail[2].doc_share, 0.89, 0.005);
    zs_trace_free(t);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"lines", test_lines},
        {"csv", test_csv},
        {"json", test_json},
        {"malformed", test_malformed},
        {"missing_file_and_max_docs", test_missing_file_and_max_docs},
        {"round_trip", test_round_trip},
        {"shared_wlb_trace", test_shared_wlb_trace},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"trace_read", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

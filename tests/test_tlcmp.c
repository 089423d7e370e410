/* Timeline comparison (zs_tlcmp): a hand-checked pair of small timelines,
 * matching by rank, label, kind and start order, malformed inputs, and a
 * large timeline read as a stream: its peak memory far below its size,
 * gzip alike, an error's line number past the first read block. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <jansson.h>

#include "zs_test.h"

/* 1 in an AddressSanitizer build (gcc defines __SANITIZE_ADDRESS__, clang
 * has __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
#define ZS_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZS_TEST_SANITIZED 1
#endif
#endif
#ifndef ZS_TEST_SANITIZED
#define ZS_TEST_SANITIZED 0
#endif
#include "zs_tlcmp.h"
#include "zs_tlxnode_internal.h"

#define META "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": \"n\"}}"

static void test_hand_checked_pair(void)
{
    /* Measured: rank 0 runs attn 100 us then attn 50 us, a GEMM of 10 us;
     * rank 1 one send of 40 us. Predicted: attn 110 and 40 (written out of
     * order: pairing follows ts), GEMM 12, the send 50, and an extra op. */
    const char *a = zs_test_write(
        "a.json", "{\"traceEvents\": [" META ",\n"
                  "{\"name\": \"attn\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 0, \"dur\": "
                  "100, \"args\": {\"rank\": 0}},\n"
                  "{\"name\": \"attn\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 200, \"dur\": "
                  "50, \"args\": {\"rank\": 0}},\n"
                  "{\"name\": \"qkv\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 100, \"dur\": "
                  "10, \"args\": {\"rank\": 0}},\n"
                  "{\"name\": \"kv\", \"cat\": \"send\", \"ph\": \"X\", \"ts\": 10, \"dur\": 40, "
                  "\"args\": {\"rank\": 1, \"peer\": 0}}]}\n");
    const char *b = zs_test_write(
        "b.json", "[{\"name\": \"attn\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 300, "
                  "\"dur\": 40, \"args\": {\"rank\": 0}},\n"
                  "{\"name\": \"attn\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 5, \"dur\": "
                  "110, \"args\": {\"rank\": 0}},\n"
                  "{\"name\": \"qkv\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 120, \"dur\": "
                  "12, \"args\": {\"rank\": 0}},\n"
                  "{\"name\": \"kv\", \"cat\": \"send\", \"ph\": \"X\", \"ts\": 10, \"dur\": 50, "
                  "\"args\": {\"rank\": 1}},\n"
                  "{\"name\": \"extra\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 0, \"dur\": "
                  "1, \"args\": {\"rank\": 1}}]\n");
    zs_tlcmp *c = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_tlcmp_files(a, b, &c, &e), &e);
    ZS_ASSERT_INT_EQ(c->a_events, 4);
    ZS_ASSERT_INT_EQ(c->b_events, 5);
    ZS_ASSERT_NEAR(c->a_span_us, 250, 1e-9); /* 0 .. 200 + 50 */
    ZS_ASSERT_NEAR(c->b_span_us, 340, 1e-9); /* 0 .. 300 + 40 */
    ZS_ASSERT_INT_EQ(c->only_a, 0);
    ZS_ASSERT_INT_EQ(c->only_b, 1);
    ZS_ASSERT_INT_EQ(c->nrows, 3);
    /* attn: pairs (100, 110) and (50, 40): errors +10% and -20%. */
    const zs_tlcmp_row *r = &c->rows[0];
    CU_ASSERT_STRING_EQUAL(r->name, "attn");
    ZS_ASSERT_INT_EQ(r->pairs, 2);
    ZS_ASSERT_NEAR(r->a_total_us, 150, 1e-9);
    ZS_ASSERT_NEAR(r->a_med_us, 75, 1e-9);
    ZS_ASSERT_NEAR(r->b_med_us, 75, 1e-9);
    ZS_ASSERT_NEAR(r->err_med_pct, -5, 1e-9);
    ZS_ASSERT_NEAR(r->abs_err_med_pct, 15, 1e-9);
    /* Then the send (40 us measured) and the GEMM (10 us). */
    CU_ASSERT_STRING_EQUAL(c->rows[1].name, "kv");
    CU_ASSERT_STRING_EQUAL(c->rows[1].cat, "send");
    ZS_ASSERT_NEAR(c->rows[1].err_med_pct, 25, 1e-9);
    CU_ASSERT_STRING_EQUAL(c->rows[2].name, "qkv");
    ZS_ASSERT_NEAR(c->rows[2].err_med_pct, 20, 1e-9);
    /* Compute errors 10, 20, 20 -> median 20; communication 25. */
    ZS_ASSERT_INT_EQ(c->compute_pairs, 3);
    ZS_ASSERT_INT_EQ(c->comm_pairs, 1);
    ZS_ASSERT_NEAR(c->compute_abs_err_med_pct, 20, 1e-9);
    ZS_ASSERT_NEAR(c->comm_abs_err_med_pct, 25, 1e-9);
    zs_tlcmp_free(c);

    /* The measured side split into one file per rank (a multi-process GPU
     * run): the same comparison. */
    const char *a0 = zs_test_write(
        "a0.json", "[{\"name\": \"attn\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 200, "
                   "\"dur\": 50, \"args\": {\"rank\": 0}},\n"
                   "{\"name\": \"qkv\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 100, \"dur\": "
                   "10, \"args\": {\"rank\": 0}},\n"
                   "{\"name\": \"attn\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 0, \"dur\": "
                   "100, \"args\": {\"rank\": 0}}]\n");
    const char *a1 = zs_test_write(
        "a1.json", "[{\"name\": \"kv\", \"cat\": \"send\", \"ph\": \"X\", \"ts\": 10, \"dur\": "
                   "40, \"args\": {\"rank\": 1}}]\n");
    const char *as[2] = {a0, a1}, *bs[1] = {b};
    ZS_ASSERT_OK(zs_tlcmp_files_n(as, 2, bs, 1, &c, &e), &e);
    ZS_ASSERT_INT_EQ(c->a_events, 4);
    ZS_ASSERT_NEAR(c->a_span_us, 250, 1e-9);
    ZS_ASSERT_INT_EQ(c->only_b, 1);
    ZS_ASSERT_NEAR(c->rows[0].err_med_pct, -5, 1e-9);
    ZS_ASSERT_NEAR(c->compute_abs_err_med_pct, 20, 1e-9);
    ZS_ASSERT_NEAR(c->comm_abs_err_med_pct, 25, 1e-9);
    zs_tlcmp_free(c);
    ZS_ASSERT_INT_EQ(zs_tlcmp_files_n(as, 0, bs, 1, &c, &e), ZS_EUSAGE);

    /* A file against itself: every op matches with zero error. */
    ZS_ASSERT_OK(zs_tlcmp_files(b, b, &c, &e), &e);
    ZS_ASSERT_INT_EQ(c->only_a + c->only_b, 0);
    ZS_ASSERT_NEAR(c->compute_abs_err_med_pct, 0, 0);
    zs_tlcmp_free(c);
    zs_tlcmp_free(NULL);
}

static void expect_error(const char *name, const char *text, const char *where, const char *what)
{
    const char *good = zs_test_write(
        "good.json", "[{\"name\": \"x\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1, \"args\": "
                     "{\"rank\": 0}}]");
    const char *p = zs_test_write(name, text);
    zs_tlcmp *c = (zs_tlcmp *)1;
    zs_err e;
    int rc = zs_tlcmp_files(good, p, &c, &e);
    ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
    CU_ASSERT_PTR_NULL(c);
    ZS_ASSERT_STR_CONTAINS(e.where, where);
    ZS_ASSERT_STR_CONTAINS(e.what, what);
    /* The same file first: the same error. */
    rc = zs_tlcmp_files(p, good, &c, &e);
    ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
}

static void test_malformed(void)
{
    expect_error("broken.json", "[{\"name\": \"x\",\n \"ph\": \"X\" \"ts\": 0}]", "broken.json:2",
                 "");
    expect_error("obj.json", "{\"events\": []}", "obj.json", "traceEvents");
    expect_error("empty.json", "{\"traceEvents\": [" META "]}", "empty.json", "no complete");
    expect_error("norank.json",
                 "[" META ", {\"name\": \"x\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1}]",
                 "norank.json: traceEvents[1]", "rank");
    expect_error("negdur.json",
                 "[{\"name\": \"x\", \"ph\": \"X\", \"ts\": 0, \"dur\": -1, \"args\": {\"rank\": "
                 "0}}]",
                 "negdur.json: traceEvents[0]", "dur");
    expect_error("noname.json",
                 "[{\"name\": 3, \"ph\": \"X\", \"ts\": 0, \"dur\": 1, \"args\": {\"rank\": 0}}]",
                 "traceEvents[0]", "name");
    expect_error("notobj.json", "[1]", "traceEvents[0]", "not an object");
    zs_tlcmp *c = NULL;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_tlcmp_files("/nonexistent/t.json", "/nonexistent/u.json", &c, &e),
                     ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "/nonexistent/t.json");
}

#define EV(ts, dur)                                                                                \
    "{\"name\": \"a\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": " ts ", \"dur\": " dur         \
    ", \"args\": {\"rank\": 0}}"

/* No figure is inf or NaN: a measured span of 0 has no relative error
 * (n/a, not -nan%), durations under 1 ns are no base for one, and
 * timestamps or durations whose sums would overflow are refused. */
static void test_not_finite(void)
{
    const char *zero = zs_test_write("zero.json", "[" EV("5", "0") "]");
    const char *tiny = zs_test_write("tiny.json", "[" EV("5", "1e-300") "]");
    zs_tlcmp *c = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_tlcmp_files(zero, zero, &c, &e), &e);
    CU_ASSERT(isnan(c->span_err_pct)); /* the "no value" mark, printed n/a */
    ZS_ASSERT_INT_EQ(c->rows[0].err_pairs, 0);
    zs_tlcmp_free(c);
    ZS_ASSERT_OK(zs_tlcmp_files(tiny, zero, &c, &e), &e);
    ZS_ASSERT_INT_EQ(c->rows[0].err_pairs, 0);
    ZS_ASSERT_INT_EQ(c->compute_pairs, 0);
    zs_tlcmp_free(c);
    expect_error("huge-ts.json", "[" EV("1e308", "1") "]", "traceEvents[0]", "ts");
    expect_error("huge-dur.json", "[" EV("0", "1e300") "]", "traceEvents[0]", "dur");

    /* The command prints no nan and its JSON parses ("+0.00" did not). */
    char cmd[4096], out[8192];
    snprintf(cmd, sizeof cmd, "%s timeline compare %s %s", zs_test_zepsim(), zero, zero);
    ZS_ASSERT_INT_EQ(zs_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "nan") == NULL);
    ZS_ASSERT_STR_CONTAINS(out, "error n/a");
    const char *pair = zs_test_write("pair.json", "[" EV("0", "10") ", " EV("20", "10") "]");
    const char *files[][2] = {{zero, zero}, {pair, pair}, {tiny, zero}};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s timeline compare --format json %s %s 2>/dev/null",
                 zs_test_zepsim(), files[i][0], files[i][1]);
        ZS_ASSERT_INT_EQ(zs_test_run(cmd, out, sizeof out), 0);
        json_error_t je;
        json_t *j = json_loads(out, 0, &je);
        if (!j)
            fprintf(stderr, "not JSON (%s):\n%s\n", je.text, out);
        CU_ASSERT_PTR_NOT_NULL(j);
        json_decref(j);
        CU_ASSERT(strstr(out, "nan") == NULL);
    }
}

/* A timeline as zepsim writes it (one event a line): n_ops complete
 * events of 4 ranks under 3 labels, a flow pair after each send, metadata
 * first, `tail` last; durations 10 + (k % 7) us. Returns the bytes
 * written. */
static long write_big(const char *path, int n_ops, int gz, const char *tail)
{
    FILE *f = gz ? NULL : fopen(path, "w");
    gzFile g = gz ? gzopen(path, "wb1") : NULL;
    if (!f && !g)
        return -1;
    char line[512];
    long bytes = 0;
    const char *names[3] = {"attn", "mlp-gate-up", "ring-xfer"};
    const char *cats[3] = {"compute", "compute", "send"};
    for (int k = -1; k < n_ops; k++) {
        int n;
        if (k < 0) {
            n = snprintf(line, sizeof line,
                         "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{\"name\":"
                         "\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"node 0\"}}");
        } else {
            int r = k % 4, l = (k / 4) % 3;
            n = snprintf(line, sizeof line,
                         ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,"
                         "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"rank\":%d,\"layer\":%d,\"iter\":0,"
                         "\"peer\":%d,\"tag\":7,\"bytes\":42680320}}",
                         names[l], cats[l], r, k * 20.0, 10.0 + k % 7, r, k % 32, (r + 1) % 4);
            if (l == 2)
                n += snprintf(line + n, sizeof line - (size_t)n,
                              ",\n{\"name\":\"p2p\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%d,"
                              "\"pid\":0,\"tid\":%d,\"ts\":%.3f},\n{\"name\":\"p2p\",\"cat\":"
                              "\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%d,\"pid\":0,\"tid\":%d,"
                              "\"ts\":%.3f}",
                              k, r, k * 20.0, k, (r + 1) % 4, k * 20.0 + 5);
        }
        if (k == n_ops - 1)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s\n]}\n", tail);
        if (f ? fwrite(line, 1, (size_t)n, f) != (size_t)n : gzwrite(g, line, (unsigned)n) != n)
            bytes = -1 - (long)1e15;
        bytes += n;
    }
    if (f ? fclose(f) : gzclose(g) != Z_OK)
        return -1;
    return bytes;
}

/* kB of a /proc/self/status line ("VmHWM:"); -1 when unknown. */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key)))
            v = atol(line + strlen(key));
    if (f)
        fclose(f);
    return v;
}

/* Peak resident memory reset to now (Linux 4.0+); 0 when it was. */
static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* A 50 MB timeline: read as a stream, a comparison's peak memory grows
 * by a fraction of the file (32 bytes per op, about a seventh: read whole,
 * it grew by 25 times the file); against itself, every op matched with no
 * error, as for a small file; gzip alike. */
static void test_large_streamed(void)
{
    char path[600], gzpath[600];
    snprintf(path, sizeof path, "%s/big.json", zs_test_tmpdir());
    snprintf(gzpath, sizeof gzpath, "%s/big.json.gz", zs_test_tmpdir());
    const int n = 240000;
    long bytes = write_big(path, n, 0, "");
    CU_ASSERT_FATAL(bytes > 50L << 20);
    const char *small = zs_test_write("small.json", "[" EV("0", "10") "]");
    zs_tlcmp *c = NULL;
    zs_err e;
    int peak_known = reset_peak() == 0;
    long rss0 = status_kb("VmRSS:");
    ZS_ASSERT_OK(zs_tlcmp_files(path, small, &c, &e), &e);
    long grown = status_kb("VmHWM:") - rss0;
    if (ZS_TEST_SANITIZED) {
        /* ASan's shadow memory and quarantine keep what was freed: the
         * memory bound is checked by the plain build */
        fprintf(stderr, "[sanitizer build: peak memory not checked] ");
    } else if (peak_known && rss0 > 0) {
        fprintf(stderr, "[%ld MB timeline: peak memory +%ld MB] ", bytes >> 20, grown >> 10);
        CU_ASSERT(grown * 1024 < bytes / 3);
    } else {
        fprintf(stderr, "[peak memory unknown here (no /proc/self/clear_refs): not checked] ");
    }
    ZS_ASSERT_INT_EQ(c->a_events, n);
    ZS_ASSERT_INT_EQ(c->b_events, 1);
    ZS_ASSERT_INT_EQ(c->only_a, n); /* the small file's label is another */
    ZS_ASSERT_INT_EQ(c->only_b, 1);
    zs_tlcmp_free(c);
    ZS_ASSERT_OK(zs_tlcmp_files(path, path, &c, &e), &e);
    ZS_ASSERT_INT_EQ(c->a_events, n);
    ZS_ASSERT_INT_EQ(c->b_events, n);
    ZS_ASSERT_INT_EQ(c->only_a + c->only_b, 0);
    ZS_ASSERT_INT_EQ(c->nrows, 3);
    ZS_ASSERT_INT_EQ(c->compute_pairs, 2 * n / 3);
    ZS_ASSERT_INT_EQ(c->comm_pairs, n / 3);
    ZS_ASSERT_NEAR(c->compute_abs_err_med_pct, 0, 0);
    ZS_ASSERT_NEAR(c->a_span_us, (n - 1) * 20.0 + 10 + (n - 1) % 7, 1e-6);
    for (size_t i = 0; i < c->nrows; i++)
        ZS_ASSERT_NEAR(c->rows[i].a_med_us, 13, 0); /* 10 + 0..6, evenly */
    zs_tlcmp_free(c);
    /* gzip-compressed: the same figures. */
    CU_ASSERT_FATAL(write_big(gzpath, n, 1, "") == bytes);
    ZS_ASSERT_OK(zs_tlcmp_files(gzpath, path, &c, &e), &e);
    ZS_ASSERT_INT_EQ(c->a_events, n);
    ZS_ASSERT_INT_EQ(c->only_a + c->only_b, 0);
    ZS_ASSERT_NEAR(c->comm_abs_err_med_pct, 0, 0);
    zs_tlcmp_free(c);
    /* A broken event at the end: its line, past many read blocks (the
     * header, the metadata, the ops, two flow lines per send, then it). */
    write_big(path, n, 0, ",\n{\"name\": \"x\",\n \"ph\" \"X\"}");
    ZS_ASSERT_INT_EQ(zs_tlcmp_files(gzpath, path, &c, &e), ZS_EINPUT);
    char want[64];
    snprintf(want, sizeof want, "big.json:%d:", 2 + n + n / 3 * 2 + 2);
    ZS_ASSERT_STR_CONTAINS(e.where, want);
    ZS_ASSERT_STR_CONTAINS(e.what, "malformed JSON");
    remove(path);
    remove(gzpath);
}

/* The scanner's own checks: brackets, the top level, NUL bytes, values
 * that end early, strings holding brackets and escaped quotes. */
static void test_stream_syntax(void)
{
    expect_error("close.json", "[{\"a\": [1}]", "close.json:1:10", "does not close");
    expect_error("trail.json", "[{\"name\": \"x\", \"ph\": \"M\"}] x", "trail.json:1:28",
                 "end of file expected");
    expect_error("cut.json", "{\"traceEvents\": [{\"name\": ", "cut.json:1:", "end of file");
    expect_error("comma.json", "[{\"name\": \"x\"},]", "comma.json:1:", "value expected");
    expect_error("te.json", "{\"traceEvents\": 3}", "te.json", "traceEvents");
    expect_error("dup.json", "{\"traceEvents\": [], \"traceEvents\": []}",
                 "dup.json:1:", "duplicate");
    expect_error("dupkey.json",
                 "[{\"name\": \"x\", \"name\": \"y\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1, "
                 "\"args\": {\"rank\": 0}}]",
                 "dupkey.json:1:", "duplicate");
    expect_error("scalar.json", "\"traceEvents\"", "scalar.json:1:1", "expected");
    expect_error("nothing.json", "  \n ", "nothing.json:2:2", "end of file");
    /* Brackets and quotes inside strings do not count; other members of
     * the root are read and dropped, before or after the events. */
    const char *odd = zs_test_write(
        "odd.json", "{\"otherData\": {\"note\": \"a ] } [ \\\" {\"}, \"traceEvents\": [\n"
                    "{\"name\": \"a]\\\"[b\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 0, "
                    "\"dur\": 2, \"args\": {\"rank\": 1}}],\n \"displayTimeUnit\": \"ms\"}");
    zs_tlcmp *c = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_tlcmp_files(odd, odd, &c, &e), &e);
    ZS_ASSERT_INT_EQ(c->a_events, 1);
    CU_ASSERT_STRING_EQUAL(c->rows[0].name, "a]\"[b");
    zs_tlcmp_free(c);
    /* A NUL byte: a binary file. */
    char nul[600];
    snprintf(nul, sizeof nul, "%s/nul.json", zs_test_tmpdir());
    FILE *f = fopen(nul, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite("[{\"name\": \"x\"}\0]", 1, 16, f);
    fclose(f);
    ZS_ASSERT_INT_EQ(zs_tlcmp_files(odd, nul, &c, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "NUL");
}

/* A p2p event: name, cat, ts, dur, rank, peer, tag, phase ("" none). */
#define P2P(n, c, ts, dur, r, p, tag, ph)                                                          \
    "{\"name\": \"" n "\", \"cat\": \"" c "\", \"ph\": \"X\", \"ts\": " ts ", \"dur\": " dur       \
    ", \"args\": {\"rank\": " r ", \"layer\": 0, \"iter\": 0, \"peer\": " p ", \"tag\": " tag ph   \
    "}}"
#define FWD ", \"phase\": \"forward\""
#define BWD ", \"phase\": \"backward\""

/* Cross-node transfers, two GPUs to a node, hand-checked:
 * - direct 1 -> 2 (tag 5): receives posted at 0 and 0, sends posted at 10
 *   and 12; the first arrives at 110 (100 us from both posts), the second
 *   waits for it and arrives at 150 (40 us);
 * - routed (tag 9): first chunk sent at 200, last received at 260 (60 us),
 *   over 0 -> 1 (same node) and 1 -> 3 (across);
 * - not counted: 0 -> 1 on one node, a backward 1 -> 2, a routed transfer
 *   inside node 1 (tag 11), and a send whose receive is not in the file.
 * Median of {100, 40, 60} = 60, mean 66.67, max 100. */
static void test_xnode_hand_checked(void)
{
    const char *p = zs_test_write("xnode.json", "{\"traceEvents\": [" META ",\n" P2P(
                                                    "ring-kv", "recv", "0", "110", "2", "1", "5", FWD) ",\n" P2P("ring-kv", "recv", "0", "150", "2", "1", "5", FWD) ",\n" P2P("ring-kv", "send", "10", "100", "1", "2", "5", FWD) ",\n" P2P("ring-kv", "send", "12", "138", "1", "2", "5", FWD) ",\n" P2P("ring-kv",
                                                                                                                                                                                                                                                                                                          "send",
                                                                                                                                                                                                                                                                                                          "0", "5", "0", "1", "5", FWD) ",\n" P2P("ring-kv",
                                                                                                                                                                                                                                                                                                                                                  "recv", "0", "5", "1", "0", "5", FWD) ",\n" P2P("ring-dkv", "send", "0",
                                                                                                                                                                                                                                                                                                                                                                                                  "999", "1", "2", "6", BWD) ",\n" P2P("ring-dkv",
                                                                                                                                                                                                                                                                                                                                                                                                                                       "recv",
                                                                                                                                                                                                                                                                                                                                                                                                                                       "0",
                                                                                                                                                                                                                                                                                                                                                                                                                                       "999",
                                                                                                                                                                                                                                                                                                                                                                                                                                       "2",
                                                                                                                                                                                                                                                                                                                                                                                                                                       "1", "6", BWD) ",\n" P2P("ring-kv", "send", "0", "77",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                "3",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                "0", "7", FWD) ",\n" P2P("route-nvlink",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         "send", "200", "10", "0",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         "1",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         "9", "") ",\n" P2P("route-nvlink", "recv",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            "190",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            "20",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            "1", "0", "9", "") ",\n" P2P("route-net",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         "send",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         "210", "40", "1", "3", "9", "") ",\n" P2P("route-net",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   "recv",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   "150",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   "110", "3", "1", "9",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   "") ",\n" P2P("route-nvlink",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 "send",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 "300", "10", "2", "3", "11", "") ",\n" P2P("route-nvlink",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                            "recv", "300", "10", "3", "2", "11", "") "]}");
    zs_tlxnode x;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_tlxnode_file(p, 2, &x, &e), 0);
    ZS_ASSERT_INT_EQ((int)x.n, 3);
    ZS_ASSERT_INT_EQ((int)x.n_routed, 1);
    ZS_ASSERT_NEAR(x.median_us, 60, 1e-9);
    ZS_ASSERT_NEAR(x.mean_us, 200.0 / 3, 1e-9);
    ZS_ASSERT_NEAR(x.max_us, 100, 1e-9);
    /* one GPU per node: 0 -> 1 crosses too (5 us) */
    ZS_ASSERT_INT_EQ(zs_tlxnode_file(p, 1, &x, &e), 0);
    ZS_ASSERT_INT_EQ((int)x.n, 5);
    const char *bad = zs_test_write("xnode_bad.json",
                                    "[" P2P("ring-kv", "send", "0", "1", "-3", "1", "5", "") "]");
    ZS_ASSERT_INT_EQ(zs_tlxnode_file(bad, 2, &x, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "event 0");
}

static const zs_test_case cases[] = {{"hand_checked_pair", test_hand_checked_pair},
                                     {"xnode_hand_checked", test_xnode_hand_checked},
                                     {"malformed", test_malformed},
                                     {"not_finite", test_not_finite},
                                     {"large_streamed", test_large_streamed},
                                     {"stream_syntax", test_stream_syntax},
                                     {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"tlcmp", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

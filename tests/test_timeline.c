/* The timeline writer (exec/zs_timeline) and the JSON string escaping it
 * uses (base/zs_json_esc): escaping by hand-checked cases and through a
 * real JSON parser, flow pairs in any write order, the documents a merged
 * transfer carries, the rank and layer
 * filters, a gzip round trip through zlib, atomic writing, the size note. */
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "zs_json_esc.h"
#include "zs_test.h"
#include "zs_timeline.h"

static void check_escape(const char *in, const char *want)
{
    char buf[256];
    size_t n = zs_json_escape(buf, sizeof buf, in);
    ZS_ASSERT_INT_EQ(n, strlen(want));
    if (strcmp(buf, want))
        fprintf(stderr, "escape: got %s want %s\n", buf, want);
    CU_ASSERT_STRING_EQUAL(buf, want);
}

static void test_escape(void)
{
    check_escape("qkv", "\"qkv\"");
    check_escape(NULL, "\"\"");
    check_escape("a\"b\\c", "\"a\\\"b\\\\c\"");
    check_escape("l1\nl2\tx\r\b\f", "\"l1\\nl2\\tx\\r\\b\\f\"");
    check_escape("\x01\x1f", "\"\\u0001\\u001f\"");
    check_escape("\x7f", "\"\x7f\""); /* DEL is allowed as is */
    /* valid UTF-8 (2, 3 and 4 bytes) is kept */
    check_escape("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                 "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
    /* invalid: a stray continuation, a truncated sequence, an overlong
     * '/', a surrogate, a code point above U+10FFFF, 0xff */
    check_escape("\x80", "\"\\ufffd\"");
    check_escape("a\xe2\x82", "\"a\\ufffd\\ufffd\"");
    check_escape("\xc0\xaf", "\"\\ufffd\\ufffd\"");
    check_escape("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
    check_escape("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    check_escape("\xff", "\"\\ufffd\"");
    /* A short buffer: cut and terminated, the full length returned. */
    char small[5];
    ZS_ASSERT_INT_EQ(zs_json_escape(small, sizeof small, "abcdef"), 8);
    CU_ASSERT_STRING_EQUAL(small, "\"abc");
    ZS_ASSERT_INT_EQ(zs_json_escape(NULL, 0, "ab"), 4);
    /* Every byte string escapes to JSON that a parser reads back (as the
     * same text where it was valid UTF-8). */
    uint64_t rng = 99;
    for (int k = 0; k < 2000; k++) {
        char in[16];
        int len = (int)(zs_test_rng(&rng) % 15);
        for (int i = 0; i < len; i++)
            in[i] = (char)(1 + zs_test_rng(&rng) % 255);
        in[len] = '\0';
        char doc[256];
        size_t n = zs_json_escape(doc + 1, sizeof doc - 2, in);
        doc[0] = '[';
        doc[n + 1] = ']';
        doc[n + 2] = '\0';
        json_error_t je;
        json_t *j = json_loads(doc, 0, &je);
        if (!j)
            fprintf(stderr, "unparsable escape of case %d: %s (%s)\n", k, doc, je.text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        json_decref(j);
    }
    json_t *j = json_loads("[\"a\\\"b\\u0001\xc3\xa9\"]", 0, NULL);
    char doc[64];
    zs_json_escape(doc, sizeof doc, json_string_value(json_array_get(j, 0)));
    CU_ASSERT_STRING_EQUAL(doc, "\"a\\\"b\\u0001\xc3\xa9\"");
    json_decref(j);
}

/* Two ranks of one node, two streams. Rank 0: layer 0 marker, a compute op
 * labelled with a quote and a newline, a send to rank 1; in a segment
 * repeated twice, a layer marker counting up and a send. Rank 1 receives
 * all three. */
static zs_schedule *two_ranks(void)
{
    zs_schedule *s = zs_schedule_new(2);
    zs_schedule_set_docs(s, (int32_t[]){10, 20}, 2);
    /* The first message merges two documents' ring steps: 24 + 40 bytes. */
    int64_t c0 = zs_schedule_carry(s, (zs_carry[]){{0, 24}, {1, 40}}, 2);
    zs_sched_marker(s, 0, ZS_MARK_LAYER, 0);
    zs_sched_gemm(s, 0, 0, "odd \"label\"\n\xff", 4, 4, 4, 1e-6, NULL, 0);
    zs_sched_set_carry(s, 0, zs_sched_send(s, 0, 1, "kv", 1, 5, 64, NULL, 0), c0, 2);
    zs_schedule_begin_segment(s, 0, 2);
    zs_sched_marker(s, 0, ZS_MARK_LAYER, 1);
    zs_sched_send(s, 0, 1, "kv", 1, 5, 64, NULL, 0);
    zs_sched_set_carry(s, 1, zs_sched_recv(s, 1, 1, "kv", 0, 5, 64, NULL, 0), c0, 2);
    zs_schedule_begin_segment(s, 1, 2);
    zs_sched_recv(s, 1, 1, "kv", 0, 5, 64, NULL, 0);
    return s;
}

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        fprintf(stderr, "%s: %s at %d:%d\n", path, je.text, je.line, je.column);
    return j;
}

static int count_ph(json_t *doc, const char *ph)
{
    size_t i;
    json_t *x;
    int n = 0;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, x)
    {
        const char *p = json_string_value(json_object_get(x, "ph"));
        n += p && !strcmp(p, ph);
    }
    return n;
}

static json_t *event(json_t *doc, const char *ph, int nth)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, x)
    {
        const char *p = json_string_value(json_object_get(x, "ph"));
        if (p && !strcmp(p, ph) && nth-- == 0)
            return x;
    }
    return NULL;
}

static double num(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* Writes the schedule's ops with times: rank 1's receives first (a backend
 * reports ends as they complete, in any order). Message k: send posted at
 * 10k, receive at 10k + 2, both end at 10k + 6 (microseconds). */
static int write_two_ranks(const zs_schedule *s, const char *path, const zs_tl_cfg *c,
                           double *bytes, zs_err *e)
{
    zs_timeline *t = NULL;
    int rc = zs_timeline_open(path, s, c, &t, e);
    if (rc)
        return rc;
    for (int k = 0; k < 3; k++)
        zs_timeline_op(t, 1, k == 0 ? 0 : 1, k == 2, (10 * k + 2) * 1e-6, (10 * k + 6) * 1e-6, k);
    zs_timeline_op(t, 0, 1, 0, 0, 1e-6, ZS_TL_SEQ_NONE);
    zs_timeline_op(t, 0, 2, 0, 0, 6e-6, 0);
    zs_timeline_op(t, 0, 4, 0, 10e-6, 16e-6, 1);
    zs_timeline_op(t, 0, 4, 1, 20e-6, 26e-6, 2);
    return zs_timeline_close(t, bytes, e);
}

static void test_flows_and_escaping(void)
{
    zs_schedule *s = two_ranks();
    char path[600];
    snprintf(path, sizeof path, "%s/two.json", zs_test_tmpdir());
    zs_tl_cfg c;
    zs_tl_cfg_init(&c);
    double bytes = 0;
    zs_err e;
    ZS_ASSERT_OK(write_two_ranks(s, path, &c, &bytes, &e), &e);
    char *text = zs_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    ZS_ASSERT_INT_EQ(bytes, strlen(text));
    json_t *doc = load(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    ZS_ASSERT_INT_EQ(count_ph(doc, "X"), 7);
    ZS_ASSERT_INT_EQ(count_ph(doc, "s"), 3);
    ZS_ASSERT_INT_EQ(count_ph(doc, "f"), 3);
    /* The label survives escaping (the invalid byte as U+FFFD). */
    json_t *x = event(doc, "X", 3);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(x, "name")),
                           "odd \"label\"\n\xef\xbf\xbd");
    /* The merged message names its documents and their bytes at both ends
     * (event 0: rank 1's first receive, 4: rank 0's first send); the
     * others carry no list. */
    for (int ev = 0; ev <= 4; ev += 4) {
        json_t *a = json_object_get(event(doc, "X", ev), "args");
        json_t *docs = json_object_get(a, "docs"), *db = json_object_get(a, "doc_bytes");
        ZS_ASSERT_INT_EQ(json_array_size(docs), 2);
        ZS_ASSERT_INT_EQ(json_integer_value(json_array_get(docs, 1)), 1);
        ZS_ASSERT_NEAR(json_number_value(json_array_get(db, 0)), 24, 0);
        ZS_ASSERT_NEAR(json_number_value(json_array_get(db, 1)), 40, 0);
    }
    CU_ASSERT_PTR_NULL(json_object_get(json_object_get(event(doc, "X", 1), "args"), "docs"));
    /* Layers: the marker's value, plus the iteration in a repeated segment. */
    json_t *args = json_object_get(event(doc, "X", 6), "args");
    ZS_ASSERT_INT_EQ(json_integer_value(json_object_get(args, "layer")), 2);
    ZS_ASSERT_INT_EQ(json_integer_value(json_object_get(args, "iter")), 1);
    /* Each flow: one id on both ends, leaving the send (rank 0, comm
     * stream: tid 1) at the match (10k + 2) and landing inside the
     * receive (rank 1: tid 3) halfway to its end (10k + 4). */
    for (int k = 0; k < 3; k++) {
        json_t *fs = event(doc, "s", k), *ff = event(doc, "f", k);
        ZS_ASSERT_INT_EQ(json_integer_value(json_object_get(fs, "id")),
                         json_integer_value(json_object_get(ff, "id")));
        ZS_ASSERT_INT_EQ(num(fs, "tid"), 1);
        ZS_ASSERT_INT_EQ(num(ff, "tid"), 3);
        ZS_ASSERT_NEAR(num(fs, "ts"), 10 * k + 2, 1e-9);
        ZS_ASSERT_NEAR(num(ff, "ts"), 10 * k + 4, 1e-9);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(ff, "bp")), "e");
    }
    json_decref(doc);

    /* Only rank 0: no flows (their other ends are not written). */
    c.ranks = "0";
    ZS_ASSERT_OK(write_two_ranks(s, path, &c, NULL, &e), &e);
    doc = load(path);
    ZS_ASSERT_INT_EQ(count_ph(doc, "X"), 4);
    ZS_ASSERT_INT_EQ(count_ph(doc, "s") + count_ph(doc, "f"), 0);
    json_decref(doc);
    /* Layers 2 only: the last send (layer 1 + iteration 1); rank 1 has no
     * layer marker (its ops are layer -1), so no receive is written. */
    zs_tl_cfg_init(&c);
    c.layer0 = c.layer1 = 2;
    ZS_ASSERT_OK(write_two_ranks(s, path, &c, NULL, &e), &e);
    doc = load(path);
    ZS_ASSERT_INT_EQ(count_ph(doc, "X"), 1);
    json_decref(doc);
    free(text);
    zs_schedule_free(s);
}

/* Messages numbered by the writer in call order (ZS_TL_SEQ_ORDER) pair the
 * same way as numbers given by the caller. */
static void test_order_numbering(void)
{
    zs_schedule *s = two_ranks();
    char path[600];
    snprintf(path, sizeof path, "%s/order.json", zs_test_tmpdir());
    zs_timeline *t = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_timeline_open(path, s, NULL, &t, &e), &e);
    zs_timeline_op(t, 0, 2, 0, 0, 6e-6, ZS_TL_SEQ_ORDER);
    zs_timeline_op(t, 0, 4, 0, 10e-6, 16e-6, ZS_TL_SEQ_ORDER);
    zs_timeline_op(t, 0, 4, 1, 20e-6, 26e-6, ZS_TL_SEQ_ORDER);
    for (int k = 0; k < 3; k++)
        zs_timeline_op(t, 1, k == 0 ? 0 : 1, k == 2, (10 * k + 2) * 1e-6, (10 * k + 6) * 1e-6,
                       ZS_TL_SEQ_ORDER);
    ZS_ASSERT_OK(zs_timeline_close(t, NULL, &e), &e);
    json_t *doc = load(path);
    ZS_ASSERT_INT_EQ(count_ph(doc, "s"), 3);
    for (int k = 0; k < 3; k++)
        ZS_ASSERT_NEAR(num(event(doc, "f", k), "ts"), 10 * k + 4, 1e-9);
    json_decref(doc);
    zs_schedule_free(s);
}

static char *gunzip(const char *path)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    int k;
    while (buf && (k = gzread(g, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)k;
        if (n == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    gzclose(g);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static void test_gzip_round_trip(void)
{
    zs_schedule *s = two_ranks();
    char plain[600], gz[600];
    snprintf(plain, sizeof plain, "%s/rt.json", zs_test_tmpdir());
    snprintf(gz, sizeof gz, "%s/rt.json.gz", zs_test_tmpdir());
    zs_err e;
    double b1 = 0, b2 = 0;
    ZS_ASSERT_OK(write_two_ranks(s, plain, NULL, &b1, &e), &e);
    ZS_ASSERT_OK(write_two_ranks(s, gz, NULL, &b2, &e), &e);
    char *a = zs_test_slurp(plain), *b = gunzip(gz);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(a, b);
    ZS_ASSERT_INT_EQ(b1, b2);
    /* It really is gzip (magic 1f 8b), not plain text. */
    FILE *f = fopen(gz, "rb");
    unsigned char m[2] = {0, 0};
    CU_ASSERT(f && fread(m, 1, 2, f) == 2);
    if (f)
        fclose(f);
    CU_ASSERT(m[0] == 0x1f && m[1] == 0x8b);
    free(a);
    free(b);
    zs_schedule_free(s);
}

static void test_atomic_and_note(void)
{
    zs_schedule *s = two_ranks();
    char dir[600], path[700], cmd[800], out[64];
    snprintf(dir, sizeof dir, "%s/atomic", zs_test_tmpdir());
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/t.json", dir);
    zs_timeline *t = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_timeline_open(path, s, NULL, &t, &e), &e);
    zs_timeline_op(t, 0, 1, 0, 0, 1e-6, ZS_TL_SEQ_NONE);
    zs_timeline_free(t); /* a run that failed half-way */
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    zs_test_run(cmd, out, sizeof out);
    ZS_ASSERT_INT_EQ(atoi(out), 0);
    zs_timeline_free(NULL);
    ZS_ASSERT_INT_EQ(zs_timeline_open("/nonexistent-dir/t.json", s, NULL, &t, &e), ZS_EIO);
    ZS_ASSERT_STR_CONTAINS(e.where, "/nonexistent-dir/t.json");
    /* The size note: none below the threshold, the options above it. */
    zs_result *r = zs_result_new(1, 0);
    zs_timeline_note(r, "small.json", 1e6, NULL);
    ZS_ASSERT_INT_EQ(r->timeline_bytes, 1e6);
    CU_ASSERT(strstr(r->notes, "timeline") == NULL);
    zs_timeline_note(r, "big.json", 3e8, "");
    ZS_ASSERT_STR_CONTAINS(r->notes, "big.json is 300 MB");
    ZS_ASSERT_STR_CONTAINS(r->notes, "--timeline-ranks");
    ZS_ASSERT_STR_CONTAINS(r->notes, "--timeline-layers");
    zs_result_free(r);
    zs_schedule_free(s);
}

/* 40 ranks, one GEMM each repeated over 10 layers (a layer marker
 * counting up), rank r computing 1 + (7r + 3) % 40 us: rank 28 computes
 * most, rank 11 least. Each rank's timeline is 10 events of about 152
 * bytes. */
static zs_schedule *forty_ranks(void)
{
    zs_schedule *s = zs_schedule_new(40);
    for (int r = 0; r < 40; r++) {
        zs_schedule_begin_segment(s, r, 10);
        zs_sched_marker(s, r, ZS_MARK_LAYER, 0);
        zs_sched_gemm(s, r, 0, "mm", 4, 4, 4, (1 + (7 * r + 3) % 40) * 1e-6, NULL, 0);
    }
    return s;
}

static void check_bad_list(const char *spec)
{
    zs_err e;
    int rc = zs_tl_ranks_check(spec, ZS_EUSAGE, "--timeline-ranks", &e);
    if (rc != ZS_EUSAGE)
        fprintf(stderr, "rank list '%s' accepted\n", spec);
    ZS_ASSERT_INT_EQ(rc, ZS_EUSAGE);
}

/* Timelines sized for people (issue 35 item 5): over the size limit and
 * told nothing, a timeline keeps as many of 8 chosen ranks as fit (the
 * most compute, the least, rank 0, the last, then evenly spaced), says so
 * in its metadata and in a note; a list or "all" is written as given. */
static void test_automatic_subset(void)
{
    zs_schedule *s = forty_ranks();
    zs_tl_cfg c;
    zs_tl_cfg_init(&c);
    uint8_t on[40];
    char note[ZS_TL_NOTE_LEN], list[ZS_TL_RANKS_LEN];
    zs_err e;
    /* Under the default limit (64 MB): every rank, no note. */
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    zs_tl_ranks_format(on, 40, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "0-39");
    CU_ASSERT_STRING_EQUAL(note, "");
    /* 10 kB: six ranks fit (6 x 1520 bytes). */
    zs_timeline_limit_set(10000);
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    zs_tl_ranks_format(on, 40, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "0,5,10-11,28,39");
    ZS_ASSERT_STR_CONTAINS(note, "6 of 40 ranks: 0,5,10-11,28,39 (kept in this order while they "
                                 "fit: the most compute in the plan, 28; the least, 11; rank 0; "
                                 "the last; evenly spaced ones)");
    ZS_ASSERT_STR_CONTAINS(note, "every rank would be about 0 MB");
    ZS_ASSERT_STR_CONTAINS(note, "--timeline-ranks all");
    ZS_ASSERT_STR_CONTAINS(note, "ZEPSIM_TIMELINE_MAX_MB");
    /* A larger limit still keeps 8 at most; a tiny one the busiest alone. */
    zs_timeline_limit_set(50000);
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    zs_tl_ranks_format(on, 40, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "0,5,10-11,15,20,28,39");
    zs_timeline_limit_set(1);
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    zs_tl_ranks_format(on, 40, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "28");
    /* Layers 2-3 only: 2 events a rank, all 40 fit in 20 kB. */
    zs_timeline_limit_set(20000);
    c.layer0 = 2;
    c.layer1 = 3;
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    CU_ASSERT_STRING_EQUAL(note, "");
    c.layer0 = c.layer1 = -1;
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    CU_ASSERT(note[0] != '\0');
    /* Told which: as told, whatever the size. */
    c.ranks = "all";
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    zs_tl_ranks_format(on, 40, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "0-39");
    CU_ASSERT_STRING_EQUAL(note, "");
    c.ranks = "3,7-9,38-45,9";
    ZS_ASSERT_OK(zs_tl_select(s, &c, on, note, sizeof note, &e), &e);
    zs_tl_ranks_format(on, 40, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "3,7-9,38-39");
    const char *bad[] = {"x",  "1-", "-1",   "3-1",   "1,,2",     ",",
                         "1,", " 1", "1 ,2", "all,1", "16777217", "0-99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        check_bad_list(bad[i]);
    char longlist[400];
    memset(longlist, '1', sizeof longlist - 1);
    longlist[sizeof longlist - 1] = '\0';
    check_bad_list(longlist);
    ZS_ASSERT_OK(zs_tl_ranks_check("", ZS_EUSAGE, "x", &e), &e);
    ZS_ASSERT_OK(zs_tl_ranks_check(NULL, ZS_EUSAGE, "x", &e), &e);
    ZS_ASSERT_OK(zs_tl_ranks_check("16777216", ZS_EUSAGE, "x", &e), &e);

    /* The file: the kept ranks' events only, its metadata saying so. */
    char path[600];
    snprintf(path, sizeof path, "%s/forty.json", zs_test_tmpdir());
    zs_timeline_limit_set(10000);
    zs_tl_cfg_init(&c);
    zs_timeline *t = NULL;
    ZS_ASSERT_OK(zs_timeline_open(path, s, &c, &t, &e), &e);
    ZS_ASSERT_STR_CONTAINS(zs_timeline_subset(t), "6 of 40 ranks");
    for (int r = 0; r < 40; r++)
        for (int it = 0; it < 10; it++)
            zs_timeline_op(t, r, 1, it, it * 1e-5, it * 1e-5 + 1e-6, ZS_TL_SEQ_NONE);
    double bytes = 0;
    ZS_ASSERT_OK(zs_timeline_close(t, &bytes, &e), &e);
    json_t *doc = load(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *meta = json_object_get(doc, "otherData");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(meta, "ranks")), "0,5,10-11,28,39");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(meta, "rank_choice")), "automatic");
    ZS_ASSERT_INT_EQ(json_integer_value(json_object_get(meta, "nranks")), 40);
    ZS_ASSERT_STR_CONTAINS(json_string_value(json_object_get(meta, "note")), "6 of 40 ranks");
    ZS_ASSERT_INT_EQ(count_ph(doc, "X"), 60);
    json_decref(doc);
    /* The estimate was 6 x 1520 bytes of events; the file has its header too. */
    CU_ASSERT(bytes > 6 * 1520 * 0.8 && bytes < 6 * 1520 * 1.5);
    zs_timeline_limit_set(ZS_TL_LIMIT_DEFAULT);
    ZS_ASSERT_OK(zs_timeline_open(path, s, &c, &t, &e), &e);
    CU_ASSERT_STRING_EQUAL(zs_timeline_subset(t), "");
    ZS_ASSERT_OK(zs_timeline_close(t, NULL, &e), &e);
    doc = load(path);
    meta = json_object_get(doc, "otherData");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(meta, "ranks")), "all");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(meta, "rank_choice")), "all");
    CU_ASSERT_PTR_NULL(json_object_get(meta, "note"));
    json_decref(doc);
    zs_schedule_free(s);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"escape", test_escape},
                                         {"flows_and_escaping", test_flows_and_escaping},
                                         {"order_numbering", test_order_numbering},
                                         {"gzip_round_trip", test_gzip_round_trip},
                                         {"atomic_and_note", test_atomic_and_note},
                                         {"automatic_subset", test_automatic_subset},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"timeline", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

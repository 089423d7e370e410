/* `zepsim trace stats|gen|batches|presets`: summarise a trace (a file or a
 * generator preset), write generated lengths to a file the readers accept,
 * show how the batcher cuts a trace into global batches, and list the
 * presets with the statistics they reproduce. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "zs_afile.h"
#include "zs_batcher_greedy.h"
#include "zs_lengen.h"
#include "zs_trace_src.h"
#include "zs_trace_stats.h"

static const char trace_help[] =
    "usage: zepsim trace stats SOURCE [options]\n"
    "       zepsim trace gen SPEC --n N [--seed S] [--out FILE] [options]\n"
    "       zepsim trace batches SOURCE (--budget T | --ranks R --tokens-per-rank T) [options]\n"
    "       zepsim trace presets\n"
    "\n"
    "SOURCE is a trace file (.lengths/.len/.txt: one length per line with '#' comments;\n"
    ".csv: a length column; .json: an array of integers; '-' reads stdin) or a generator:\n"
    "a preset (see `zepsim trace presets`), fixed:N, uniform:A-B, lognormal:MU,SIGMA[,MAX]\n"
    "or mix:SPEC=W,SPEC=W (W: shares of tokens).\n"
    "\n"
    "  stats    count, mean, percentiles, max, and the share of documents, tokens and\n"
    "           attention work (sum of d^2) above 4K, 8K, 32K, 64K and 128K (K = 1024)\n"
    "  gen      draw N lengths from a generator and write them (stdout or --out)\n"
    "  batches  cut the trace into global batches of a token budget (greedy, in order;\n"
    "           a document that does not fit is carried whole to the next batch)\n"
    "\n"
    "options:\n";

typedef struct trace_args {
    long n;
    int n_set;
    uint64_t seed;
    zs_trace_src_cfg src;
    int long_set;
    const char *out;
    int64_t th[ZS_TRACE_STATS_MAX_TH];
    int nth;
    long budget, ranks, per_rank;
    int cycle, timing;
    zs_format fmt;
    zs_cli_flags fl; /* the shared flags as given */
} trace_args;

/* "1,234,567" in tables; plain digits in machine formats. */
static void num(char *buf, size_t n, double v, zs_format fmt, int decimals)
{
    if (fmt != ZS_FMT_TABLE) {
        snprintf(buf, n, "%.*f", decimals, v);
        return;
    }
    char raw[64];
    snprintf(raw, sizeof raw, "%.0f", v < 0 ? -v : v);
    size_t len = strlen(raw), o = 0;
    if (v < 0 && o + 1 < n)
        buf[o++] = '-';
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
}

static void kv(zs_table *t, const char *key, const char *value)
{
    zs_table_kv_text(t, key, "%s", value);
}

/* A count or length: "1,234,567" for people, every digit for scripts. */
static void kvnum(zs_table *t, const char *key, double v, int dec, const char *unit)
{
    char b[64], fmt[16];
    snprintf(fmt, sizeof fmt, "%%.%df", dec);
    zs_table_kv_num(t, key, unit, fmt, v);
    num(b, sizeof b, v, ZS_FMT_TABLE, dec);
    zs_table_num_as(t, 1, b, v);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_above(const char *s, trace_args *a, zs_err *e)
{
    a->nth = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 1 || (*end && *end != ',') || a->nth == ZS_TRACE_STATS_MAX_TH)
            return zs_err_set(e, ZS_EUSAGE, "--above",
                              "give up to 16 comma-separated token counts, e.g. 8192,32768",
                              "bad threshold list '%s'", s);
        a->th[a->nth++] = v;
        p = *end ? end + 1 : end;
    }
    if (!a->nth)
        return zs_err_set(e, ZS_EUSAGE, "--above", "give comma-separated token counts",
                          "empty threshold list");
    return ZS_OK;
}

static int cmd_stats(const char *spec, trace_args *a, zs_err *e)
{
    if (a->n_set)
        a->src.read.max_docs = a->n;
    double t0 = now();
    zs_trace_src *src;
    int rc = zs_trace_src_open(spec, &a->src, &src, e);
    if (rc)
        return rc;
    double t1 = now();
    zs_trace *t = NULL;
    long n = a->n_set ? a->n : zs_trace_src_size(src) >= 0 ? 0 : 100000;
    rc = zs_trace_src_collect(src, n, &t, e);
    zs_trace_stats st;
    if (rc == ZS_OK)
        rc = zs_trace_stats_compute(t->len, t->n, a->th, a->nth, &st, e);
    double t2 = now();
    if (rc == ZS_OK) {
        zs_format fmt = a->fmt;
        zs_table *k = zs_table_kv_new(NULL);
        char note[256];
        kv(k, "source", zs_trace_src_describe(src));
        zs_trace_src_window_note(src, note, sizeof note);
        kv(k, "window", note);
        kvnum(k, "docs", (double)st.n, 0, "");
        kvnum(k, "tokens", (double)st.tokens, 0, "");
        kvnum(k, "mean", st.mean, 2, "tokens");
        kvnum(k, "min", st.min, 0, "tokens");
        kvnum(k, "p10", st.p10, 1, "tokens");
        kvnum(k, "median", st.median, 1, "tokens");
        kvnum(k, "p90", st.p90, 1, "tokens");
        kvnum(k, "p95", st.p95, 1, "tokens");
        kvnum(k, "p99", st.p99, 1, "tokens");
        kvnum(k, "p99.9", st.p999, 1, "tokens");
        kvnum(k, "max", st.max, 0, "tokens");
        zs_table_kv_num(k, "attention_work", "tokens^2", "%.6g", st.attn_work);
        zs_table_kv_note(k, "sum of d^2 over the documents");
        zs_table *tl = zs_table_new("Documents longer than each threshold (K = 1024 tokens), "
                                    "as shares of documents, tokens and attention work:");
        zs_table_col(tl, "above", 0);
        zs_table_col(tl, "tokens", 1);
        zs_table_col(tl, "docs", 1);
        zs_table_col(tl, "docs_pct", 1);
        zs_table_col(tl, "tokens_pct", 1);
        zs_table_col(tl, "attn_pct", 1);
        for (int i = 0; i < st.nth; i++) {
            char lab[32], b[64];
            zs_trace_threshold_label(st.tail[i].above, lab, sizeof lab);
            zs_table_row(tl);
            zs_table_set(tl, 0, "%s", lab);
            num(b, sizeof b, (double)st.tail[i].above, fmt, 0);
            zs_table_set(tl, 1, "%s", b);
            num(b, sizeof b, (double)st.tail[i].docs, fmt, 0);
            zs_table_set(tl, 2, "%s", b);
            zs_table_num(tl, 3, "%.3f", 100 * st.tail[i].doc_share);
            zs_table_num(tl, 4, "%.2f", 100 * st.tail[i].token_share);
            zs_table_num(tl, 5, "%.2f", 100 * st.tail[i].attn_share);
        }
        zs_output *d = zs_output_new("trace", fmt, stdout);
        if (d) {
            zs_output_table(d, "summary", k);
            zs_output_table(d, "above", tl);
        } else {
            zs_table_free(k);
            zs_table_free(tl);
        }
        if (zs_cli_doc_end(d))
            rc = ZS_EIO;
        if (a->timing)
            fprintf(stderr, "zepsim: timing: read %lld lengths in %.3f s, statistics in %.3f s\n",
                    (long long)t->n, t1 - t0, t2 - t1);
    }
    zs_trace_free(t);
    zs_trace_src_free(src);
    return rc;
}

static int cmd_gen(const char *spec, trace_args *a, zs_err *e)
{
    if (!a->n_set)
        return zs_err_set(e, ZS_EUSAGE, "--n", "give the number of documents with --n N",
                          "trace gen needs --n");
    if (!zs_lengen_is_spec(spec))
        return zs_err_set(e, ZS_EUSAGE, spec,
                          "give a preset (zepsim trace presets), fixed:N, uniform:A-B, "
                          "lognormal:MU,SIGMA or mix:...",
                          "not a generator");
    zs_trace_src *src;
    int rc = zs_trace_src_open(spec, &a->src, &src, e);
    if (rc)
        return rc;
    zs_trace *t = NULL;
    rc = zs_trace_src_collect(src, a->n, &t, e);
    if (rc == ZS_OK) {
        zs_trace_format f = a->src.read.format;
        if (f == ZS_TRACE_FMT_AUTO && a->out)
            f = zs_trace_format_from_path(a->out);
        char note[256], comment[1400];
        zs_trace_src_window_note(src, note, sizeof note);
        snprintf(comment, sizeof comment,
                 "Document lengths (tokens), one per line: zepsim trace gen %s --n %ld --seed "
                 "%llu\n%s\nwindow: %s",
                 spec, a->n, (unsigned long long)a->seed, zs_trace_src_describe(src), note);
        zs_afile out;
        if (!a->out) {
            rc = zs_trace_write(t, stdout, f, comment, e);
        } else if (!(rc = zs_afile_open(&out, a->out, e))) {
            rc = zs_trace_write(t, out.f, f, comment, e);
            rc = rc ? zs_afile_fail(&out, rc, e) : zs_afile_commit(&out, e);
        }
    }
    zs_trace_free(t);
    zs_trace_src_free(src);
    return rc;
}

static int cmd_batches(const char *spec, trace_args *a, zs_err *e)
{
    int64_t budget = a->budget;
    if (!budget && a->ranks && a->per_rank)
        budget = (int64_t)a->ranks * a->per_rank;
    if (!budget)
        return zs_err_set(e, ZS_EUSAGE, "--budget",
                          "give --budget TOKENS, or --ranks R and --tokens-per-rank T",
                          "trace batches needs a token budget");
    zs_trace_src *src;
    int rc = zs_trace_src_open(spec, &a->src, &src, e);
    if (rc)
        return rc;
    zs_batcher_cfg bc = {budget, a->src.window, a->long_set ? a->src.policy : ZS_LONG_SPLIT,
                         a->cycle};
    zs_batcher *b = NULL;
    if ((rc = zs_batcher_greedy_new(src, &bc, &b, e))) {
        zs_trace_src_free(src);
        return rc;
    }
    zs_format fmt = a->fmt;
    zs_table *t = zs_table_new("Global batches (greedy, in trace order):");
    const char *cols[] = {"batch",    "docs",   "tokens",  "fill_pct",
                          "shortest", "median", "longest", "attn_top_pct"};
    for (int i = 0; i < 8; i++)
        zs_table_col(t, cols[i], 1);
    long want = a->n_set ? a->n : 8;
    for (long i = 0; i < want && rc == ZS_OK; i++) {
        zs_batch *bt;
        if ((rc = zs_batcher_next(b, &bt, e)) || !bt)
            break;
        zs_trace_stats st;
        if ((rc = zs_trace_stats_compute(bt->len, bt->ndocs, NULL, 0, &st, e)) == ZS_OK) {
            double top = (double)st.max * st.max;
            char c[6][64];
            num(c[0], 64, (double)bt->ndocs, fmt, 0);
            num(c[1], 64, (double)bt->tokens, fmt, 0);
            num(c[2], 64, st.min, fmt, 0);
            num(c[3], 64, st.median, fmt, 1);
            num(c[4], 64, st.max, fmt, 0);
            zs_table_row(t);
            zs_table_set(t, 0, "%d", bt->index);
            zs_table_set(t, 1, "%s", c[0]);
            zs_table_set(t, 2, "%s", c[1]);
            zs_table_num(t, 3, "%.2f", 100.0 * (double)bt->tokens / (double)budget);
            zs_table_set(t, 4, "%s", c[2]);
            zs_table_set(t, 5, "%s", c[3]);
            zs_table_set(t, 6, "%s", c[4]);
            zs_table_num(t, 7, "%.2f", 100.0 * top / st.attn_work);
        }
        zs_batch_free(bt);
    }
    if (rc == ZS_OK) {
        const zs_batcher_counts *c = zs_batcher_counts_get(b);
        const zs_trace_src_counts *sc = zs_trace_src_counts_get(src);
        zs_table *k = zs_table_kv_new(NULL);
        char note[256];
        kv(k, "source", zs_trace_src_describe(src));
        kv(k, "batcher", b->ops->name);
        kvnum(k, "budget", (double)budget, 0, "tokens");
        zs_table_kv_note(k, "per global batch");
        zs_trace_src_window_note(src, note, sizeof note);
        kv(k, "window", note);
        kvnum(k, "batches", (double)c->batches, 0, "");
        kvnum(k, "docs", (double)c->docs, 0, "");
        kvnum(k, "tokens", (double)c->tokens, 0, "");
        kvnum(k, "budget_unused", (double)c->budget_unused, 0, "tokens");
        kvnum(k, "docs_carried", (double)c->docs_carried, 0, "documents");
        zs_table_kv_note(k, "moved whole to the next batch");
        kvnum(k, "tokens_carried", (double)c->tokens_carried, 0, "tokens");
        kvnum(k, "tokens_dropped", (double)sc->tokens_dropped, 0, "tokens");
        zs_table_kv_note(k, "truncation");
        kvnum(k, "epochs_restarted", (double)c->epochs, 0, "");
        if (c->batches < want)
            kv(k, "note", "the trace ran out before --n batches (use --cycle to restart it)");
        zs_output *d = zs_output_new("trace", fmt, stdout);
        if (d) {
            zs_output_table(d, "summary", k);
            zs_output_table(d, "batches", t);
        } else {
            zs_table_free(k);
            zs_table_free(t);
        }
        t = NULL;
        if (zs_cli_doc_end(d))
            rc = ZS_EIO;
    }
    zs_table_free(t);
    zs_batcher_free(b);
    zs_trace_src_free(src);
    return rc;
}

static int cmd_presets(zs_format fmt)
{
    zs_table *t = zs_table_new(NULL);
    zs_table_col(t, "preset", 0);
    zs_table_col(t, "model", 0);
    zs_table_col(t, "matches", 0);
    zs_table_col(t, "assumes", 0);
    for (int i = 0; zs_lengen_preset_at(i); i++) {
        const zs_lengen_preset_info *p = zs_lengen_preset_at(i);
        zs_table_row(t);
        zs_table_set(t, 0, "%s", p->name);
        zs_table_set(t, 1, "%s", p->model);
        zs_table_set(t, 2, "%s", p->matches);
        zs_table_set(t, 3, "%s", p->assumes);
    }
    return zs_cli_print1("trace", fmt, "presets", t);
}

/* ---- the options: rows of the option engine (cli_flags.h) ---------------- */

/* Parsers of the rows with values of their own shape (ZS_OPT_PARSE). */
static int set_long(const char *s, void *base, zs_err *e)
{
    return zs_long_policy_parse(s, &((trace_args *)base)->src.policy, e);
}

static int set_tformat(const char *s, void *base, zs_err *e)
{
    return zs_trace_format_parse(s, &((trace_args *)base)->src.read.format, e);
}

static int set_above(const char *s, void *base, zs_err *e)
{
    return parse_above(s, base, e);
}

/* trace's own options, by their place in own[]. */
enum {
    T_N,
    T_WINDOW,
    T_LONG,
    T_TRACE_FORMAT,
    T_COLUMN,
    T_ABOVE,
    T_BUDGET,
    T_RANKS,
    T_PER_RANK,
    T_CYCLE,
    T_TIMING
};

/* Every number here is at least 1 (a flag: given, 1). */
#define ROW(r, name, type, m, hi, arg, help)                                                       \
    [T_##r] = ZS_OPT_ROW(name, type, trace_args, m, 1, hi, NULL, arg, help)
static const zs_opt_spec own[] = {
    ROW(N, "n", ZS_OPT_INT, n, 1LL << 34, "N",
        "documents to draw (stats: default all of a file, 100000 for a generator; gen: "
        "required) or batches to build (default 8)"),
    ROW(WINDOW, "window", ZS_OPT_INT, src.window, ZS_TRACE_MAX_LEN, "N",
        "context window in tokens (batches: at most the budget)"),
    [T_LONG] = ZS_OPT_SET("long", set_long, NULL, "truncate|split",
                          "what happens to documents longer than the window (default truncate; "
                          "batches: split)"),
    [T_TRACE_FORMAT] = ZS_OPT_SET("trace-format", set_tformat, NULL, "F",
                                  "auto|lines|csv|json for a trace file or --out (default auto)"),
    ROW(COLUMN, "column", ZS_OPT_TEXT, src.read.column, 0, "C",
        "CSV length column: header name or 1-based number"),
    [T_ABOVE] = ZS_OPT_SET("above", set_above, NULL, "LIST",
                           "stats thresholds in tokens, e.g. 8000,16384 (default "
                           "4096,8192,32768,65536,131072)"),
    ROW(BUDGET, "budget", ZS_OPT_INT, budget, 1LL << 40, "T", "batches: tokens per global batch"),
    ROW(RANKS, "ranks", ZS_OPT_INT, ranks, 1 << 20, "R", "batches: budget = R x --tokens-per-rank"),
    ROW(PER_RANK, "tokens-per-rank", ZS_OPT_INT, per_rank, 1 << 30, "T",
        "batches: budget = --ranks x T"),
    ROW(CYCLE, "cycle", ZS_OPT_FLAG, cycle, 1, NULL, "batches: restart a file when it runs out"),
    ROW(TIMING, "timing", ZS_OPT_FLAG, timing, 1, NULL,
        "stats: print read and summary times to stderr"),
};
#undef ROW

static const zs_cli_use uses[] = {{ZS_FP(SEED), "only generators draw with it (default 1)"},
                                  {ZS_F_OUT, "gen: write here (format by extension) instead "
                                             "of stdout"},
                                  {ZS_F_FORMAT, NULL},
                                  {0, NULL}};

static const zs_cli_cmd trace_cmd = {
    .name = "trace", .head = trace_help, ZS_CLI_OWN_ROWS(own), .uses = uses};

/* The subcommands, their operands and the options each takes (getopt
 * values), so none is silently ignored. */
#define O(r)   (ZS_CLI_OWN + T_##r)
#define COMMON ZS_F_FORMAT, O(N), ZS_FP(SEED), O(WINDOW), O(LONG), O(TRACE_FORMAT)
static const struct {
    const char *name;
    int nargs;
    int allowed[16];
} subs[] = {{"stats", 1, {COMMON, O(COLUMN), O(ABOVE), O(TIMING)}},
            {"gen", 1, {COMMON, ZS_F_OUT}},
            {"batches", 1, {COMMON, O(COLUMN), O(BUDGET), O(RANKS), O(PER_RANK), O(CYCLE)}},
            {"presets", 0, {ZS_F_FORMAT}}};
#undef COMMON

/* The subcommand's index, or -(exit status) after printing why the
 * options or arguments do not fit it. */
static int check_sub(int argc, char **argv, const trace_args *a)
{
    const char *sub = argv[optind];
    int k = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(sub, subs[i].name) == 0)
            k = i;
    if (k < 0)
        return -zs_cli_usage_error("trace",
                                   "unknown subcommand '%s' (use stats, gen, batches or "
                                   "presets)",
                                   sub);
    int st = zs_cli_only(&trace_cmd, sub, &a->fl, subs[k].allowed);
    if (st)
        return -st;
    if (argc - optind - 1 != subs[k].nargs)
        return -zs_cli_usage_error("trace", "trace %s takes %s", sub,
                                   subs[k].nargs ? "one SOURCE" : "no arguments");
    if (a->long_set && a->src.policy != ZS_LONG_KEEP && !a->src.window && k != 2)
        return -zs_cli_usage_error("trace", "--long needs --window N");
    if ((a->ranks != 0) != (a->per_rank != 0) || (a->budget && a->ranks))
        return -zs_cli_usage_error("trace",
                                   "give either --budget or both --ranks and --tokens-per-rank");
    return k;
}

int zs_cmd_trace(int argc, char **argv)
{
    zs_err e;
    zs_err_clear(&e);
    trace_args a;
    memset(&a, 0, sizeof a);
    int st = zs_cli_parse(&trace_cmd, argc, argv, &a, &a.fl);
    if (st >= 0)
        return st;
    a.n_set = zs_cli_was_given(&a.fl, O(N));
    a.long_set = zs_cli_was_given(&a.fl, O(LONG));
    a.seed = a.fl.p.seed;
    a.out = a.fl.out;
    a.fmt = a.fl.fmt;
    a.src.seed = a.seed;
    if (optind >= argc)
        return zs_cli_usage_error("trace", "expected stats, gen, batches or presets");
    int k = check_sub(argc, argv, &a);
    if (k < 0)
        return -k;
    int rc;
    switch (k) {
    case 0:
        rc = cmd_stats(argv[optind + 1], &a, &e);
        break;
    case 1:
        rc = cmd_gen(argv[optind + 1], &a, &e);
        break;
    case 2:
        rc = cmd_batches(argv[optind + 1], &a, &e);
        break;
    default:
        return cmd_presets(a.fmt);
    }
    if (rc == ZS_EIO && !e.what[0]) /* the output failed: already said */
        return 1;
    return rc ? zs_cli_fail(&e) : 0;
}

/* `zepsim timeline compare MEASURED.json PREDICTED.json`: compares two
 * timelines of one schedule op by op (zs_tlcmp.h), e.g. a GPU run against
 * the simulator with the same calibration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_tlcmp.h"

static const char timeline_help[] =
    "usage: zepsim timeline compare [options] MEASURED.json PREDICTED.json\n"
    "\n"
    "Compares two Chrome-trace timelines of the same schedule, typically a GPU run\n"
    "(`zepsim hw run PLAN --timeline hw.json`) and the simulator on the same plan\n"
    "(`zepsim run --backend sim PLAN --timeline sim.json`). Ops are matched by rank,\n"
    "label and kind, in order of start time. Prints the iteration span of each, the\n"
    "median durations and errors per op label (largest measured total first) and the\n"
    "median absolute error of compute and of communication ops. Errors are\n"
    "(predicted - measured) / measured. Either side may be a comma-separated list of\n"
    "files read as one timeline: a multi-process GPU run writes hw.json.rank0.json,\n"
    "hw.json.rank1.json, ... Files may be gzip-compressed (.json.gz) and of any size:\n"
    "they are read as streams, keeping 32 bytes per op (ZEPSIM_MAX_INPUT_MB bounds\n"
    "the ops kept). Timelines of a subset of ranks (--timeline-ranks, or the automatic\n"
    "subset over 64 MB) compare on the ranks both hold.\n"
    "\n"
    "options:\n";

/* NAN marks a figure without a value (zs_tlcmp.h); why says why. */
static void pct_text(double v, const char *fmt, const char *why, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "n/a (%s)", why);
    else
        snprintf(buf, n, fmt, v);
}

/* The summary: lines for people, values of the JSON document. */
static void print_summary(zs_output *d, const zs_tlcmp *c, const char *a, const char *b)
{
    char se[64], ce[64], me[64];
    pct_text(c->span_err_pct, "%+.2f%%", "the measured span is 0", se, sizeof se);
    pct_text(c->compute_abs_err_med_pct, "%.2f%%", "no ops", ce, sizeof ce);
    pct_text(c->comm_abs_err_med_pct, "%.2f%%", "no ops", me, sizeof me);
    zs_output_text(d, "measured:  %s (%zu ops)\npredicted: %s (%zu ops)\n", a, c->a_events, b,
                   c->b_events);
    zs_output_text(d, "iteration span: measured %.3f ms, predicted %.3f ms, error %s\n",
                   c->a_span_us / 1e3, c->b_span_us / 1e3, se);
    zs_output_text(
        d,
        "matched %d compute and %d communication ops (with a measured duration >= 1 ns); "
        "%zu only measured, %zu only predicted\n",
        c->compute_pairs, c->comm_pairs, c->only_a, c->only_b);
    zs_output_text(d, "median absolute error: compute %s, communication %s\n\n", ce, me);
    zs_output_set_text(d, "measured", "files", a);
    zs_output_set_int(d, "measured", "ops", (long long)c->a_events);
    zs_output_set_num(d, "measured", "span_ms", c->a_span_us / 1e3);
    zs_output_set_text(d, "predicted", "files", b);
    zs_output_set_int(d, "predicted", "ops", (long long)c->b_events);
    zs_output_set_num(d, "predicted", "span_ms", c->b_span_us / 1e3);
    zs_output_set_num(d, NULL, "span_err_pct", c->span_err_pct);
    zs_output_set_int(d, NULL, "compute_pairs", c->compute_pairs);
    zs_output_set_int(d, NULL, "comm_pairs", c->comm_pairs);
    zs_output_set_int(d, NULL, "only_measured", (long long)c->only_a);
    zs_output_set_int(d, NULL, "only_predicted", (long long)c->only_b);
    zs_output_set_num(d, NULL, "compute_abs_err_med_pct", c->compute_abs_err_med_pct);
    zs_output_set_num(d, NULL, "comm_abs_err_med_pct", c->comm_abs_err_med_pct);
}

static int print_cmp(const zs_tlcmp *c, const char *a, const char *b, int top, zs_format fmt)
{
    zs_output *d = zs_output_new("timeline", fmt, stdout);
    if (!d)
        return zs_cli_doc_end(NULL);
    print_summary(d, c, a, b);
    zs_table *t = zs_table_new(NULL);
    const char *cols[] = {
        "op",          "kind",           "pairs", "measured_med_us", "predicted_med_us",
        "err_med_pct", "abs_err_med_pct"};
    for (int i = 0; i < 7; i++)
        zs_table_col(t, cols[i], i >= 2);
    for (size_t i = 0; i < c->nrows && (int)i < top; i++) {
        const zs_tlcmp_row *r = &c->rows[i];
        zs_table_row(t);
        zs_table_set(t, 0, "%s", r->name);
        zs_table_set(t, 1, "%s", r->cat);
        zs_table_num(t, 2, "%.0f", r->pairs);
        zs_table_num(t, 3, "%.2f", r->a_med_us);
        zs_table_num(t, 4, "%.2f", r->b_med_us);
        if (r->err_pairs) { /* no pair with a measured duration: the cells stay empty */
            zs_table_num(t, 5, "%+.2f", r->err_med_pct);
            zs_table_num(t, 6, "%.2f", r->abs_err_med_pct);
        }
    }
    zs_output_table(d, "ops", t);
    if (c->nrows > (size_t)top)
        zs_output_note(d, "%zu more op labels; raise --top to see them", c->nrows - (size_t)top);
    return zs_cli_doc_end(d);
}

typedef struct tl_args {
    long top;
} tl_args;

int zs_cmd_timeline(int argc, char **argv)
{
    static const zs_opt_spec own[] = {ZS_OPT_ROW("top", ZS_OPT_INT, tl_args, top, 1, 1000000, "20",
                                                 "N",
                                                 "print the N op labels with the most "
                                                 "measured time")};
    static const zs_cli_use uses[] = {{ZS_F_FORMAT, NULL}, {0, NULL}};
    static const zs_cli_cmd cmd = {
        .name = "timeline", .head = timeline_help, ZS_CLI_OWN_ROWS(own), .uses = uses};
    tl_args a;
    zs_cli_flags fl;
    int parsed = zs_cli_parse(&cmd, argc, argv, &a, &fl);
    if (parsed >= 0)
        return parsed;
    zs_format fmt = fl.fmt;
    long top = a.top;
    zs_err e;
    zs_err_clear(&e);
    if (optind >= argc || strcmp(argv[optind], "compare") != 0)
        return zs_cli_usage_error("timeline", "expected `timeline compare MEASURED PREDICTED`");
    if (argc - optind != 3)
        return zs_cli_usage_error("timeline", "compare takes two timeline files");
    /* Each side: a comma-separated list, split in a copy (one slot per comma
     * bounds the number of files). */
    char *lists[2] = {strdup(argv[optind + 1]), strdup(argv[optind + 2])};
    const char **files[2] = {NULL, NULL};
    int nf[2] = {0, 0}, rc = ZS_OK;
    for (int side = 0; side < 2 && rc == ZS_OK; side++) {
        size_t slots = 1;
        for (const char *q = argv[optind + 1 + side]; *q; q++)
            slots += *q == ',';
        files[side] = lists[side] ? malloc(slots * sizeof *files[side]) : NULL;
        if (!files[side]) {
            rc = zs_err_set(&e, ZS_ENOMEM, NULL, NULL, "out of memory");
            break;
        }
        char *save = NULL;
        for (char *p = strtok_r(lists[side], ",", &save); p; p = strtok_r(NULL, ",", &save))
            files[side][nf[side]++] = p;
    }
    zs_tlcmp *cmp = NULL;
    if (rc == ZS_OK)
        rc = zs_tlcmp_files_n(files[0], nf[0], files[1], nf[1], &cmp, &e);
    for (int side = 0; side < 2; side++) {
        free(files[side]);
        free(lists[side]);
    }
    if (rc)
        return zs_cli_fail(&e);
    int st = print_cmp(cmp, argv[optind + 1], argv[optind + 2], (int)top, fmt);
    zs_tlcmp_free(cmp);
    return st;
}

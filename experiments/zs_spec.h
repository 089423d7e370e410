/* Figure specs: one JSON file per paper figure that says which points to
 * run (a base configuration, a sweep of axes and/or explicit cases, times
 * the series = the methods of the figure), how to plot them and what the
 * paper reports, so `zepsim experiment run|report` can regenerate the
 * figure and put the paper's numbers beside ours. The format is documented
 * in experiments/README.md. Loading expands the spec into a flat list of
 * points; errors name file:line:col and the key path (series[2].method).
 * Depends on zs_point (the configuration of a point) and jansson. */
#ifndef ZS_SPEC_H
#define ZS_SPEC_H

#include "zs_err.h"
#include "zs_point.h"

#define ZS_SPEC_MAX_AXES   8
#define ZS_SPEC_MAX_MATCH  8
#define ZS_SPEC_MAX_POINTS 20000

/* One row of the figure: a combination of axis values (or an explicit case). */
typedef struct zs_spec_case {
    char label[256];                 /* "llama-7b / arxiv / 65536" */
    char axis[ZS_SPEC_MAX_AXES][64]; /* label per axis ("" when the case does not set it) */
    double x;                        /* numeric x for line plots (NAN when none) */
} zs_spec_case;

/* One column of the figure: a method with its options. */
typedef struct zs_spec_series {
    char label[64];
} zs_spec_series;

typedef struct zs_spec_point {
    zs_point_cfg cfg;
    int case_idx;
    int series_idx;
} zs_spec_point;

/* A number the paper reports and how to compute ours to compare with it:
 * `agg` of `metric` over the points of `series` in the cases that `match`. */
typedef struct zs_spec_paper {
    char what[256];
    char series[64];
    char metric[32];
    char agg[16]; /* value (exactly one point), mean, geomean, min, max */
    int nmatch;
    char match_axis[ZS_SPEC_MAX_MATCH][32]; /* an axis name or "case" */
    char match_val[ZS_SPEC_MAX_MATCH][256];
    int has_value;
    double value;
    char note[512];
    char source[128];
} zs_spec_paper;

typedef struct zs_spec_plot {
    char kind[16];   /* "bars" (clustered by case) or "lines" (x = a numeric axis) */
    char metric[32]; /* a metric name (zs_spec_metric_valid) */
    char x[32];      /* lines: the axis giving x */
    char xlabel[128];
    char ylabel[128];
    int logx, logy;
} zs_spec_plot;

typedef struct zs_spec {
    char path[1024];
    char name[64];
    char title[256];
    char description[2048];
    int nassumptions;
    char (*assumptions)[512];
    int naxes;
    char axis_name[ZS_SPEC_MAX_AXES][32];
    int ncases;
    zs_spec_case *cases;
    int nseries;
    zs_spec_series *series;
    int baseline; /* series index the speedups are over; -1 when none */
    int npoints;
    zs_spec_point *points; /* case-major: point = case * nseries + series */
    zs_spec_plot plot;
    int npaper;
    zs_spec_paper *paper;
} zs_spec;

/* Loads and expands a spec file; ZS_EINPUT with file:line:col and key on
 * bad input. The caller owns *out (zs_spec_free). */
int zs_spec_load(const char *path, zs_spec **out, zs_err *e);
/* The same from text (source names it in messages). */
int zs_spec_load_text(const char *source, const char *text, zs_spec **out, zs_err *e);
void zs_spec_free(zs_spec *s);

/* Metrics a plot or paper entry can name: tokens_per_s, iter_time_ms,
 * speedup (over the baseline series in the same case), mfu, exposed_share,
 * max_nic_util, attn_imbalance, linear_imbalance, plan_ms. */
int zs_spec_metric_valid(const char *name);
/* "tokens_per_s, iter_time_ms, ..." for messages. */
const char *zs_spec_metric_list(void);

#endif

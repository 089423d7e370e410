/* Trace statistics: what TRACES.md asks every trace to report. Count,
 * mean, percentiles, maximum, and above each threshold the share of
 * documents, of tokens and of attention work (sum of d^2, which is what
 * drives imbalance). Percentiles interpolate linearly between order
 * statistics (position p*(n-1), as numpy's default and GSL's
 * gsl_stats_quantile_from_sorted_data). Thresholds are strict: "above 8K"
 * is d > 8192. Depends on zs_err only. */
#ifndef ZS_TRACE_STATS_H
#define ZS_TRACE_STATS_H

#include <stdint.h>

#include "zs_err.h"

#define ZS_TRACE_STATS_MAX_TH 16

typedef struct zs_trace_tail {
    int64_t above;      /* threshold in tokens */
    int64_t docs;       /* documents longer than it */
    double doc_share;   /* of documents, 0..1 */
    double token_share; /* of tokens, 0..1 */
    double attn_share;  /* of sum d^2, 0..1 */
} zs_trace_tail;

typedef struct zs_trace_stats {
    int64_t n, tokens;
    int32_t min, max;
    double mean, p10, median, p90, p95, p99, p999;
    double attn_work; /* sum of d^2 */
    int nth;
    zs_trace_tail tail[ZS_TRACE_STATS_MAX_TH];
} zs_trace_stats;

/* 4K, 8K, 32K, 64K, 128K (binary K: 4096 ... 131072). */
extern const int64_t zs_trace_default_thresholds[5];

/* Computes the statistics of len[0..n). th/nth: thresholds (NULL/0: the
 * defaults); at most ZS_TRACE_STATS_MAX_TH. n == 0 is ZS_EINPUT. */
int zs_trace_stats_compute(const int32_t *len, int64_t n, const int64_t *th, int nth,
                           zs_trace_stats *out, zs_err *e);

/* Quantile p in [0,1] of sorted data (linear interpolation). */
double zs_quantile_sorted(const int32_t *sorted, int64_t n, double p);

/* "4K", "8K", "128K", "1M" for multiples of 1024 tokens, else the number. */
void zs_trace_threshold_label(int64_t th, char *buf, size_t n);

#endif

/* Trace statistics: see zs_trace_stats.h. */
#include "zs_trace_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const int64_t zs_trace_default_thresholds[5] = {4096, 8192, 32768, 65536, 131072};

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

double zs_quantile_sorted(const int32_t *s, int64_t n, double p)
{
    if (n <= 0)
        return 0;
    double k = p * (double)(n - 1);
    int64_t lo = (int64_t)k;
    if (lo >= n - 1)
        return s[n - 1];
    return s[lo] + (s[lo + 1] - (double)s[lo]) * (k - (double)lo);
}

void zs_trace_threshold_label(int64_t th, char *buf, size_t n)
{
    if (th >= 1048576 && th % 1048576 == 0)
        snprintf(buf, n, "%lldM", (long long)(th / 1048576));
    else if (th >= 1024 && th % 1024 == 0)
        snprintf(buf, n, "%lldK", (long long)(th / 1024));
    else
        snprintf(buf, n, "%lld", (long long)th);
}

int zs_trace_stats_compute(const int32_t *len, int64_t n, const int64_t *th, int nth,
                           zs_trace_stats *out, zs_err *e)
{
    if (n <= 0)
        return zs_err_set(e, ZS_EINPUT, NULL, "give a trace with at least one document",
                          "no documents to summarise");
    if (!th || nth <= 0) {
        th = zs_trace_default_thresholds;
        nth = 5;
    }
    if (nth > ZS_TRACE_STATS_MAX_TH)
        return zs_err_set(e, ZS_EUSAGE, "--above", "give at most 16 thresholds", "%d thresholds",
                          nth);
    /* Sorting ints needs no tie-break: equal lengths are indistinguishable. */
    int32_t *s = malloc(sizeof(int32_t) * (size_t)n);
    if (!s)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory sorting %lld lengths",
                          (long long)n);
    memcpy(s, len, sizeof(int32_t) * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_i32);
    zs_trace_stats st;
    memset(&st, 0, sizeof st);
    st.n = n;
    st.min = s[0];
    st.max = s[n - 1];
    st.p10 = zs_quantile_sorted(s, n, 0.10);
    st.median = zs_quantile_sorted(s, n, 0.50);
    st.p90 = zs_quantile_sorted(s, n, 0.90);
    st.p95 = zs_quantile_sorted(s, n, 0.95);
    st.p99 = zs_quantile_sorted(s, n, 0.99);
    st.p999 = zs_quantile_sorted(s, n, 0.999);
    st.nth = nth;
    for (int k = 0; k < nth; k++)
        st.tail[k].above = th[k];
    /* Sums run over the sorted array from the longest down, so every tail
     * sum is a suffix sum computed in one fixed order (deterministic). */
    double tok = 0, attn = 0;
    double *tt = calloc((size_t)nth, sizeof *tt), *ta = calloc((size_t)nth, sizeof *ta);
    if (!tt || !ta) {
        free(s);
        free(tt);
        free(ta);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        double d = s[i];
        tok += d;
        attn += d * d;
        st.tokens += s[i];
        for (int k = 0; k < nth; k++)
            if (s[i] > th[k]) {
                st.tail[k].docs++;
                tt[k] += d;
                ta[k] += d * d;
            }
    }
    st.mean = (double)st.tokens / (double)n;
    st.attn_work = attn;
    for (int k = 0; k < nth; k++) {
        st.tail[k].doc_share = (double)st.tail[k].docs / (double)n;
        st.tail[k].token_share = tt[k] / tok;
        st.tail[k].attn_share = ta[k] / attn;
    }
    free(s);
    free(tt);
    free(ta);
    *out = st;
    return ZS_OK;
}

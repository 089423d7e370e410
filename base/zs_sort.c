/* Sorting helpers: see zs_sort.h. */
#include "zs_sort.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void zs_sort_doubles(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_double);
}

double zs_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    zs_sort_doubles(v, n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct by_len {
    int32_t len, idx;
} by_len;

static int cmp_longest(const void *a, const void *b)
{
    const by_len *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

int zs_sort_longest_first(int32_t *idx, int32_t n, const int32_t *len)
{
    if (n < 2)
        return 0;
    by_len *t = malloc(sizeof *t * (size_t)n);
    if (!t)
        return -1;
    for (int32_t i = 0; i < n; i++)
        t[i] = (by_len){len[idx[i]], idx[i]};
    qsort(t, (size_t)n, sizeof *t, cmp_longest);
    for (int32_t i = 0; i < n; i++)
        idx[i] = t[i].idx;
    free(t);
    return 0;
}

int32_t *zs_order_longest_first(const int32_t *len, int32_t n)
{
    int32_t *o = malloc(sizeof *o * (n > 0 ? (size_t)n : 1));
    if (!o)
        return NULL;
    for (int32_t i = 0; i < n; i++)
        o[i] = i;
    if (zs_sort_longest_first(o, n, len)) {
        free(o);
        return NULL;
    }
    return o;
}

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

int32_t *zs_order_longest_first(const int32_t *len, int32_t n)
{
    size_t m = n > 0 ? (size_t)n : 1;
    by_len *t = malloc(sizeof *t * m);
    int32_t *o = malloc(sizeof *o * m);
    if (!t || !o) {
        free(t);
        free(o);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++)
        t[i] = (by_len){len[i], i};
    if (n > 1)
        qsort(t, (size_t)n, sizeof *t, cmp_longest);
    for (int32_t i = 0; i < n; i++)
        o[i] = t[i].idx;
    free(t);
    return o;
}

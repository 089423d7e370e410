/* Sorting helpers: double arrays and their medians (the statistics fits,
 * benchmarks and reports print), and the longest-first order of documents
 * that the planners and packers place greedily. */
#ifndef ZS_SORT_H
#define ZS_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts v ascending in place (qsort comparator on doubles; no NaN). */
void zs_sort_doubles(double *v, size_t n);
/* The median of v (sorted in place first); NAN when n == 0. */
double zs_median(double *v, size_t n);
/* A new array of the indices 0..n-1 ordered by len descending, ties by
 * lower index (free with free()); NULL when out of memory. */
int32_t *zs_order_longest_first(const int32_t *len, int32_t n);
/* Sorts the indices idx[0..n) in place by len[idx[i]] descending, ties by
 * lower index; 0, or -1 when out of memory (idx untouched). */
int zs_sort_longest_first(int32_t *idx, int32_t n, const int32_t *len);

#endif

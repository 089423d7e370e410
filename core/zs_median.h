/* Sorting and medians of double arrays: one definition for the statistics
 * the fits, benchmarks and reports print (medians of runs, of errors). */
#ifndef ZS_MEDIAN_H
#define ZS_MEDIAN_H

#include <stddef.h>

/* Sorts v ascending in place (qsort comparator on doubles; no NaN). */
void zs_sort_doubles(double *v, size_t n);
/* The median of v (sorted in place first); NAN when n == 0. */
double zs_median(double *v, size_t n);

#endif

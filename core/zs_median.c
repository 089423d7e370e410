/* Sorting and medians: see zs_median.h. */
#include "zs_median.h"

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

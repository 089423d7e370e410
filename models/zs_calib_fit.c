/* Fits: every slot's curve time = steps*t0 + W/rmax * (1 + (half/x)^p) by
 * nonlinear least squares on relative residuals (GSL's trust-region
 * gsl_multifit_nlinear, parameters in log space so they stay positive).
 * Relative residuals weight an 8 MB transfer like an 8 GB one, which is
 * what a per-point error target asks for. Several deterministic starting
 * points guard against local minima; the best fit wins. See zs_calib.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "zs_calib.h"
#include "zs_calib_internal.h"
#include "zs_sort.h"

typedef struct fit_data {
    const zs__fit_pt *pt;
    size_t n;
    const int *free_mask; /* 4 entries: t0, rmax, half, p */
    double fixed[4];      /* values of parameters that are not free */
} fit_data;

static void unpack(const fit_data *d, const gsl_vector *x, double par[4])
{
    size_t j = 0;
    for (int i = 0; i < 4; i++)
        par[i] = d->free_mask[i] ? exp(gsl_vector_get(x, j++)) : d->fixed[i];
}

static int resid(const gsl_vector *x, void *arg, gsl_vector *f)
{
    const fit_data *d = arg;
    double par[4];
    unpack(d, x, par);
    zs_curve c = {par[0], par[1], par[2], par[3], 1, 0, 0, 0};
    for (size_t i = 0; i < d->n; i++) {
        const zs__fit_pt *p = &d->pt[i];
        double t = zs_curve_time(&c, p->steps, p->work, p->x);
        gsl_vector_set(f, i, isfinite(t) ? (t - p->t) / p->t : 1e6);
    }
    return GSL_SUCCESS;
}

static double run_fit(fit_data *d, const double start[4], double out[4])
{
    size_t np = 0;
    for (int i = 0; i < 4; i++)
        np += d->free_mask[i] != 0;
    gsl_multifit_nlinear_fdf fdf;
    memset(&fdf, 0, sizeof fdf);
    fdf.f = resid;
    fdf.df = NULL; /* finite differences */
    fdf.n = d->n;
    fdf.p = np;
    fdf.params = d;
    gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, d->n, np);
    gsl_vector *x = gsl_vector_alloc(np);
    if (!w || !x) {
        if (w)
            gsl_multifit_nlinear_free(w);
        if (x)
            gsl_vector_free(x);
        return INFINITY;
    }
    size_t j = 0;
    for (int i = 0; i < 4; i++)
        if (d->free_mask[i])
            gsl_vector_set(x, j++, log(start[i]));
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int info;
    double cost = INFINITY;
    if (gsl_multifit_nlinear_init(x, &fdf, w) == GSL_SUCCESS) {
        gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 1e-12, NULL, NULL, &info, w);
        gsl_vector *f = gsl_multifit_nlinear_residual(w);
        double c2;
        gsl_blas_ddot(f, f, &c2);
        if (isfinite(c2)) {
            cost = c2;
            unpack(d, gsl_multifit_nlinear_position(w), out);
        }
    }
    gsl_set_error_handler(old);
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(x);
    return cost;
}

int zs__fit_curve(const zs__fit_pt *pt, size_t n, const int free_mask[4], const double fixed[4],
                  zs_curve *out)
{
    size_t nfree = 0;
    for (int i = 0; i < 4; i++)
        nfree += free_mask[i] != 0;
    if (n < nfree || n == 0)
        return 0;
    fit_data d = {pt, n, free_mask, {fixed[0], fixed[1], fixed[2], fixed[3]}};
    /* Starting points from the data: the fastest observed rate, the
     * smallest time, and the quartiles of the size variable. */
    double rmax = 0, tmin = INFINITY;
    double *xs = malloc(n * sizeof *xs);
    if (!xs)
        return 0;
    for (size_t i = 0; i < n; i++) {
        double r = pt[i].work / pt[i].t;
        rmax = r > rmax ? r : rmax;
        tmin = pt[i].t < tmin ? pt[i].t : tmin;
        xs[i] = pt[i].x > 0 ? pt[i].x : 1;
    }
    zs_sort_doubles(xs, n);
    double halves[3] = {xs[n / 4], xs[n / 2], xs[(3 * n) / 4]};
    free(xs);
    static const double ps[3] = {0.5, 1.0, 2.0};
    double best = INFINITY, bp[4] = {0, 0, 0, 0};
    for (int h = 0; h < 3; h++)
        for (int q = 0; q < 3; q++) {
            double start[4] = {tmin / 4 / (pt[0].steps > 0 ? pt[0].steps : 1), rmax * 1.1,
                               halves[h] * 0.5, ps[q]};
            for (int i = 0; i < 4; i++)
                if (!free_mask[i])
                    start[i] = fixed[i];
            double par[4] = {0, 0, 0, 0};
            double c2 = run_fit(&d, start, par);
            if (c2 < best) {
                best = c2;
                memcpy(bp, par, sizeof bp);
            }
        }
    if (!isfinite(best))
        return 0;
    *out = (zs_curve){bp[0], bp[1], bp[2], bp[3], 1, (int)n, 0, 0};
    double ss = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        double t = zs_curve_time(out, pt[i].steps, pt[i].work, pt[i].x);
        double r = fabs(t - pt[i].t) / pt[i].t;
        ss += r * r;
        mx = r > mx ? r : mx;
    }
    out->rms_rel = sqrt(ss / n);
    out->max_rel = mx;
    return 1;
}

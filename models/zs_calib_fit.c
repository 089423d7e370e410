/* Fits: nonlinear least squares on relative residuals (GSL's trust-region
 * gsl_multifit_nlinear, parameters in log space so they stay positive) of
 * a model with a few parameters: every curve slot's
 * time = steps*t0 + W/rmax * (1 + (half/x)^p), and the attention kernel's
 * rate and fixed costs (zs_kernel.h). Relative residuals weight an 8 MB
 * transfer like an 8 GB one, which is what a per-point error target asks
 * for. Several deterministic starting points guard against local minima;
 * the best fit wins. See zs_calib.h. */
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
    size_t n;
    const double *t;
    int npar;
    const int *free_mask;
    const double *upper;          /* > 0: the parameter stays below it (NULL: no bounds) */
    double fixed[ZS__FIT_MAXPAR]; /* values of parameters that are not free */
    zs__fit_model f;
    void *arg;
} fit_data;

/* Free parameters live in log space (positive), or as a logistic of the
 * upper bound where one is given (positive and below it). */
static double to_par(const fit_data *d, int i, double x)
{
    double u = d->upper ? d->upper[i] : 0;
    return u > 0 ? u / (1 + exp(-x)) : exp(x);
}

static double from_par(const fit_data *d, int i, double v)
{
    double u = d->upper ? d->upper[i] : 0;
    if (u <= 0)
        return log(v);
    double r = v / u;
    r = r < 1e-9 ? 1e-9 : (r > 1 - 1e-9 ? 1 - 1e-9 : r);
    return log(r / (1 - r));
}

static void unpack(const fit_data *d, const gsl_vector *x, double *par)
{
    size_t j = 0;
    for (int i = 0; i < d->npar; i++)
        par[i] = d->free_mask[i] ? to_par(d, i, gsl_vector_get(x, j++)) : d->fixed[i];
}

static int resid(const gsl_vector *x, void *arg, gsl_vector *f)
{
    const fit_data *d = arg;
    double par[ZS__FIT_MAXPAR];
    unpack(d, x, par);
    for (size_t i = 0; i < d->n; i++) {
        double t = d->f(par, i, d->arg);
        gsl_vector_set(f, i, isfinite(t) ? (t - d->t[i]) / d->t[i] : 1e6);
    }
    return GSL_SUCCESS;
}

static double run_fit(fit_data *d, const double *start, double *out)
{
    size_t np = 0;
    for (int i = 0; i < d->npar; i++)
        np += d->free_mask[i] != 0;
    for (int i = 0; i < d->npar; i++)
        d->fixed[i] = start[i];
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
    for (int i = 0; i < d->npar; i++)
        if (d->free_mask[i])
            gsl_vector_set(x, j++, from_par(d, i, start[i]));
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

int zs__fit_params(size_t n, const double *t, int npar, const int *free_mask, const double *upper,
                   const double *starts, int nstart, zs__fit_model f, void *arg, double *out,
                   double *rms, double *max)
{
    size_t nfree = 0;
    for (int i = 0; i < npar; i++)
        nfree += free_mask[i] != 0;
    if (n < nfree || n == 0 || npar > ZS__FIT_MAXPAR)
        return 0;
    fit_data d = {n, t, npar, free_mask, upper, {0}, f, arg};
    double best = INFINITY, bp[ZS__FIT_MAXPAR] = {0};
    for (int s = 0; s < nstart; s++) {
        double par[ZS__FIT_MAXPAR] = {0};
        double c2 = nfree ? run_fit(&d, starts + (size_t)s * npar, par) : 0;
        if (!nfree)
            memcpy(par, starts + (size_t)s * npar, sizeof(double) * (size_t)npar);
        if (c2 < best) {
            best = c2;
            memcpy(bp, par, sizeof bp);
        }
    }
    if (!isfinite(best))
        return 0;
    memcpy(out, bp, sizeof(double) * (size_t)npar);
    double ss = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs(f(out, i, arg) - t[i]) / t[i];
        ss += r * r;
        mx = r > mx ? r : mx;
    }
    *rms = sqrt(ss / n);
    *max = mx;
    return 1;
}

/* ---- curves -------------------------------------------------------------------- */

static double curve_model(const double *par, size_t i, void *arg)
{
    const zs__fit_pt *p = (const zs__fit_pt *)arg + i;
    zs_curve c = {par[0], par[1], par[2], par[3], 1, 0, 0, 0, 0};
    return zs_curve_time(&c, p->steps, p->work, p->x);
}

int zs__fit_curve(const zs__fit_pt *pt, size_t n, const int free_mask[4], const double fixed[4],
                  zs_curve *out)
{
    if (n == 0)
        return 0;
    /* Starting points from the data: the fastest observed rate, the
     * smallest time, and the quartiles of the size variable. */
    double rmax = 0, tmin = INFINITY;
    double *xs = malloc(n * sizeof *xs), *t = malloc(n * sizeof *t);
    if (!xs || !t) {
        free(xs);
        free(t);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        double r = pt[i].work / pt[i].t;
        rmax = r > rmax ? r : rmax;
        tmin = pt[i].t < tmin ? pt[i].t : tmin;
        xs[i] = pt[i].x > 0 ? pt[i].x : 1;
        t[i] = pt[i].t;
    }
    zs_sort_doubles(xs, n);
    double halves[3] = {xs[n / 4], xs[n / 2], xs[(3 * n) / 4]};
    free(xs);
    static const double ps[3] = {0.5, 1.0, 2.0};
    double starts[9 * 4];
    int ns = 0;
    for (int h = 0; h < 3; h++)
        for (int q = 0; q < 3; q++, ns++) {
            double *s = starts + ns * 4;
            s[0] = tmin / 4 / (pt[0].steps > 0 ? pt[0].steps : 1);
            s[1] = rmax * 1.1;
            s[2] = halves[h] * 0.5;
            s[3] = ps[q];
            for (int i = 0; i < 4; i++)
                if (!free_mask[i])
                    s[i] = fixed[i];
        }
    double par[4], rms, mx;
    int ok = zs__fit_params(n, t, 4, free_mask, NULL, starts, ns, curve_model, (void *)pt, par,
                            &rms, &mx);
    free(t);
    if (!ok)
        return 0;
    *out = (zs_curve){par[0], par[1], par[2], par[3], 1, (int)n, rms, mx, 0};
    return 1;
}

/* ---- attention kernels ------------------------------------------------------------ */

/* Parameters: tflops, cta_us, seq_us, half, p (launch_us and the structure
 * kept from the base kernel). */
enum { A_RATE, A_CTA, A_SEQ, A_HALF, A_P, A_NPAR };

typedef struct attn_pt {
    zs_attn_block *blk;
    int n, heads, kv_heads;
    const zs_meas *m;
} attn_pt;

typedef struct attn_arg {
    attn_pt *pt;
    zs_attn_kernel k;
    int backward, sms;
} attn_arg;

static zs_attn_dir dir_of(const double *par, double launch_us)
{
    return (zs_attn_dir){par[A_RATE], par[A_CTA], par[A_SEQ], launch_us, par[A_HALF], par[A_P], 0};
}

static double attn_model(const double *par, size_t i, void *arg)
{
    attn_arg *a = arg;
    const attn_pt *p = &a->pt[i];
    zs_attn_kernel k = a->k;
    zs_attn_dir *d = a->backward ? &k.bwd : &k.fwd;
    *d = dir_of(par, d->launch_us);
    zs_attn_shape sh = {p->heads, p->kv_heads, p->m->head_dim, a->sms, 0, 2};
    return zs_attn_kernel_time(&k, a->backward, p->blk, p->n, &sh, NULL) / p->n;
}

int zs__fit_attn(zs_calib *c, int slot, const zs__fit_pt *pt, size_t n, const zs_attn_kernel *base,
                 int sms, double peak_tflops)
{
    int backward = slot == ZS_CAL_ATTN_BWD, ok = 0;
    attn_arg a = {calloc(n ? n : 1, sizeof(attn_pt)), *base, backward, sms};
    double *t = malloc((n ? n : 1) * sizeof *t), *w = malloc((n ? n : 1) * sizeof *w);
    if (!a.pt || !t || !w)
        goto out;
    /* Starting points: the fastest apparent tile rate, the tile time on one
     * slot for the fixed costs, the quartiles of the launch work. */
    double rate = 0, tile_slot = 0;
    int short_docs = 0;
    for (size_t i = 0; i < n; i++) {
        attn_pt *p = &a.pt[i];
        p->m = pt[i].m;
        zs_err e;
        if (zs_meas_attn_launch(p->m, &p->blk, &p->n, &p->heads, &p->kv_heads, &e))
            goto out;
        t[i] = pt[i].t;
        zs_attn_work wk;
        zs_attn_shape sh = {p->heads, p->kv_heads, p->m->head_dim, sms, 0, 2};
        zs_attn_kernel k = *base;
        zs_attn_dir *d = backward ? &k.bwd : &k.fwd;
        *d = (zs_attn_dir){1, 0, 0, 0, 0, 1, 0};
        zs_attn_kernel_time(&k, backward, p->blk, p->n, &sh, &wk);
        w[i] = wk.flops_tiles;
        double r = wk.flops_tiles / (t[i] * p->n) / 1e12;
        rate = r > rate ? r : rate;
        short_docs |= p->m->docs > 1 && p->m->seq_len < base->tile_q;
    }
    tile_slot = 4.0 * base->tile_q * base->tile_k * 128 * (backward ? 2.5 : 1) / (rate * 1.2e12) *
                sms * 1e6; /* us */
    zs_sort_doubles(w, n);
    /* What the data can identify: the rate and the per-CTA cost always; a
     * per-sequence cost only with short documents packed in one launch; a
     * size effect only with 8 points or more. */
    int mask[A_NPAR] = {1, 1, short_docs, n >= 8, n >= 8};
    double halves[3] = {w[n / 4], w[n / 2], w[(3 * n) / 4]};
    static const double ctas[2] = {0.3, 3.0}, ps[2] = {0.3, 0.8};
    double starts[2 * 3 * 2 * A_NPAR];
    int ns = 0;
    for (int ci = 0; ci < 2; ci++)
        for (int h = 0; h < (mask[A_HALF] ? 3 : 1); h++)
            for (int q = 0; q < (mask[A_P] ? 2 : 1); q++, ns++) {
                double *s = starts + ns * A_NPAR;
                s[A_RATE] = rate * 1.2 < peak_tflops * 0.95 ? rate * 1.2 : peak_tflops * 0.95;
                s[A_CTA] = ctas[ci] * tile_slot;
                s[A_SEQ] = mask[A_SEQ] ? tile_slot : 0;
                s[A_HALF] = mask[A_HALF] ? halves[h] * 0.5 : 0;
                s[A_P] = mask[A_P] ? ps[q] : 1;
            }
    /* A kernel never beats the GPU's dense peak, and the size effect stays a
     * saturation inside the data (half below the largest launch, p <= 3),
     * not a power law that the rate could trade against without bound. */
    const double upper[A_NPAR] = {peak_tflops, 0, 0, w[n - 1], 3};
    double par[A_NPAR], rms, mx;
    if (!zs__fit_params(n, t, A_NPAR, mask, upper, starts, ns, attn_model, &a, par, &rms, &mx))
        goto out;
    if (c->curve[ZS_CAL_ATTN_FWD].fitted || c->curve[ZS_CAL_ATTN_BWD].fitted) {
        /* the other direction was fitted first: same structure */
    } else {
        c->attn = *base;
        c->attn_sms = sms;
    }
    zs_attn_dir *d = backward ? &c->attn.bwd : &c->attn.fwd;
    *d = dir_of(par, d->launch_us);
    /* The size effect is a saturation seen inside the data: a launch smaller
     * than any fitted keeps the slowdown of the smallest (w is sorted), so a
     * CP shard or a short document priced from a fit on larger launches is
     * not slowed by a power law beyond what was measured. */
    d->half_floor = mask[A_HALF] && d->half > 0 ? w[0] : 0;
    zs_curve *cv = &c->curve[slot];
    memset(cv, 0, sizeof *cv);
    cv->fitted = 1;
    cv->npoints = (int)n;
    cv->rms_rel = rms;
    cv->max_rel = mx;
    ok = 1;
out:
    if (a.pt)
        for (size_t i = 0; i < n; i++)
            free(a.pt[i].blk);
    free(a.pt);
    free(t);
    free(w);
    return ok;
}

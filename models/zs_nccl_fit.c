/* Fitting NCCL's model to measurements: each observation is priced as the
 * pair NCCL would run (its choice does not depend on the parameters), and
 * the parameters the data can identify are fitted by nonlinear least
 * squares on relative errors (GSL's trust-region gsl_multifit_nlinear,
 * parameters in log space, the reduce rate through a logistic below its
 * physical bound, several deterministic starting points, the best kept).
 *
 * What the data identifies (the rest keeps NCCL's values, fitted = 0):
 *   - a link class's efficiency: some observation runs on it (single-node
 *     NVLink or PCIe, or the network across nodes);
 *   - the intra-node latency scale: single-node observations on at least
 *     two GPU counts (one count cannot tell a per-step latency from the
 *     size ramp); the network one: at least two node counts;
 *   - an algorithm's efficiency: at least 3 observations run it and 3 run
 *     ring (the reference that sets the link efficiency);
 *   - the size ramp: at least 6 observations on 3 sizes;
 *   - the reduce step: 3 reduce-scatter observations on ring or PAT (its
 *     ramp: 6).
 * See zs_nccl.h and docs/cost-model.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "zs_nccl.h"
#include "zs_sort.h"

typedef struct fit_ctx {
    zs_nccl_obs *obs;
    const zs_nccl_topo *topo; /* one per observation */
    size_t n;
    int idx[ZS_NP_NPARAMS]; /* free parameters, in order */
    int nfree;
    zs_nccl_params base; /* fixed values */
} fit_ctx;

static double logistic(double u)
{
    return 1.0 / (1.0 + exp(-u));
}

static void unpack(const fit_ctx *c, const double *x, zs_nccl_params *p)
{
    *p = c->base;
    for (int j = 0; j < c->nfree; j++) {
        int i = c->idx[j];
        double m = zs_nccl_param_max(i);
        p->v[i] = isfinite(m) ? m * logistic(x[j]) : exp(x[j] < 700 ? x[j] : 700);
    }
}

static double pack1(int i, double v)
{
    double m = zs_nccl_param_max(i);
    if (isfinite(m)) {
        double f = v / m;
        f = f < 1e-6 ? 1e-6 : f > 1 - 1e-6 ? 1 - 1e-6 : f;
        return log(f / (1 - f));
    }
    return log(v > 1e-300 ? v : 1e-300);
}

static double predict(const fit_ctx *c, size_t i, const zs_nccl_params *p)
{
    zs_nccl_choice ch;
    const zs_nccl_obs *o = &c->obs[i];
    if (zs_nccl_eval(&c->topo[i], o->kind, o->nbytes, o->algo, o->proto, p, &ch, NULL))
        return INFINITY;
    return ch.seconds;
}

static int resid(const gsl_vector *x, void *arg, gsl_vector *f)
{
    const fit_ctx *c = arg;
    zs_nccl_params p;
    unpack(c, x->data, &p);
    for (size_t i = 0; i < c->n; i++) {
        double t = predict(c, i, &p);
        double r = (t - c->obs[i].seconds) / c->obs[i].seconds;
        gsl_vector_set(f, i, isfinite(r) ? r : 1e6);
    }
    return GSL_SUCCESS;
}

/* One trust-region run from x0; the cost (sum of squares) and the end point. */
static double run(fit_ctx *c, const double *x0, double *xout)
{
    gsl_multifit_nlinear_fdf fdf;
    memset(&fdf, 0, sizeof fdf);
    fdf.f = resid;
    fdf.n = c->n;
    fdf.p = (size_t)c->nfree;
    fdf.params = c;
    gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, c->n, (size_t)c->nfree);
    gsl_vector *x = gsl_vector_alloc((size_t)c->nfree);
    double cost = INFINITY;
    if (w && x) {
        for (int j = 0; j < c->nfree; j++)
            gsl_vector_set(x, (size_t)j, x0[j]);
        gsl_error_handler_t *old = gsl_set_error_handler_off();
        int info;
        if (gsl_multifit_nlinear_init(x, &fdf, w) == GSL_SUCCESS) {
            gsl_multifit_nlinear_driver(300, 1e-10, 1e-10, 1e-12, NULL, NULL, &info, w);
            double c2;
            gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w), &c2);
            if (isfinite(c2)) {
                cost = c2;
                memcpy(xout, gsl_multifit_nlinear_position(w)->data,
                       sizeof(double) * (size_t)c->nfree);
            }
        }
        gsl_set_error_handler(old);
    }
    if (w)
        gsl_multifit_nlinear_free(w);
    if (x)
        gsl_vector_free(x);
    return cost;
}

static int count_distinct(const int *v, size_t n)
{
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = v[j] == v[i];
        k += !seen;
    }
    return k;
}

/* Which parameters the observations identify (see the file comment). */
static void choose_free(fit_ctx *c)
{
    size_t n = c->n, nring = 0, nrs = 0, nalgo[ZS_NCCL_NALGOS + 1] = {0};
    int intra_nv = 0, intra_pci = 0, net = 0;
    int *gpus = malloc(sizeof(int) * (n ? n : 1)), *nodes = malloc(sizeof(int) * (n ? n : 1));
    double *sz = malloc(sizeof(double) * (n ? n : 1));
    size_t ng = 0, nn = 0;
    for (size_t i = 0; i < n; i++) {
        const zs_nccl_obs *o = &c->obs[i];
        const zs_nccl_topo *t = &c->topo[i];
        if (t->nnodes == 1) {
            intra_nv |= t->nvlink;
            intra_pci |= !t->nvlink;
            if (gpus)
                gpus[ng++] = t->nranks;
        } else {
            net = 1;
            if (nodes)
                nodes[nn++] = t->nnodes;
        }
        nalgo[o->algo]++;
        nring += o->algo == ZS_NCCL_RING || o->algo == ZS_NCCL_P2P;
        nrs +=
            o->kind == ZS_COLL_REDUCESCATTER && (o->algo == ZS_NCCL_RING || o->algo == ZS_NCCL_PAT);
        if (sz)
            sz[i] = o->nbytes;
    }
    int net_sizes = 0;
    for (size_t i = 0; i < n; i++) {
        if (c->topo[i].nnodes == 1)
            continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = c->topo[j].nnodes > 1 && c->obs[j].nbytes == c->obs[i].nbytes;
        net_sizes += !seen;
    }
    int nsizes = 0;
    if (sz) {
        zs_sort_doubles(sz, n);
        for (size_t i = 0; i < n; i++)
            nsizes += i == 0 || sz[i] != sz[i - 1];
    }
    int want[ZS_NP_NPARAMS] = {0};
    want[ZS_NP_NVL_EFF] = intra_nv;
    want[ZS_NP_PCI_EFF] = intra_pci;
    want[ZS_NP_NET_EFF] = net;
    want[ZS_NP_INTRA_LAT] = gpus && count_distinct(gpus, ng) >= 2;
    /* Two node counts tell the network's per-step latency from the
     * intra-node one; so does one node count once single-node runs on two
     * GPU counts have pinned the intra-node latency. */
    want[ZS_NP_NET_LAT] =
        nodes && (count_distinct(nodes, nn) >= 2 || (nn >= 6 && want[ZS_NP_INTRA_LAT]));
    static const struct {
        int param;
        zs_nccl_algo a, b;
    } eff[] = {{ZS_NP_TREE_EFF, ZS_NCCL_TREE, ZS_NCCL_TREE},
               {ZS_NP_NVLS_EFF, ZS_NCCL_NVLS, ZS_NCCL_NVLS},
               {ZS_NP_NVLS_TREE_EFF, ZS_NCCL_NVLS_TREE, ZS_NCCL_NVLS_TREE},
               {ZS_NP_COLLNET_EFF, ZS_NCCL_COLLNET_DIRECT, ZS_NCCL_COLLNET_CHAIN},
               {ZS_NP_PAT_EFF, ZS_NCCL_PAT, ZS_NCCL_PAT}};
    for (size_t j = 0; j < sizeof eff / sizeof eff[0]; j++) {
        size_t k = nalgo[eff[j].a] + (eff[j].b != eff[j].a ? nalgo[eff[j].b] : 0);
        want[eff[j].param] = k >= 3 && nring >= 3;
    }
    want[ZS_NP_RAMP_HALF] = want[ZS_NP_RAMP_POW] = n >= 6 && nsizes >= 3;
    /* The network's own ramp: 6 multi-node observations on 3 sizes, and
     * single-node ones to keep the other ramp determined. */
    want[ZS_NP_NET_RAMP_HALF] = want[ZS_NP_NET_RAMP_POW] = nn >= 6 && ng >= 6 && net_sizes >= 3;
    want[ZS_NP_RED_FRAC] = nrs >= 3;
    want[ZS_NP_RED_HALF] = want[ZS_NP_RED_POW] = nrs >= 6;
    c->nfree = 0;
    for (int i = 0; i < ZS_NP_NPARAMS; i++)
        if (want[i])
            c->idx[c->nfree++] = i;
    /* Fewer observations than parameters: keep only the link efficiencies
     * and the reduce rate. */
    if ((size_t)c->nfree > n) {
        c->nfree = 0;
        for (int i = ZS_NP_NVL_EFF; i <= ZS_NP_NET_EFF; i++)
            if (want[i])
                c->idx[c->nfree++] = i;
        if (want[ZS_NP_RED_FRAC] && (size_t)c->nfree < n)
            c->idx[c->nfree++] = ZS_NP_RED_FRAC;
    }
    free(gpus);
    free(nodes);
    free(sz);
}

static int cmp_obs_size(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int zs_nccl_fit(const zs_cluster *cl, zs_nccl_obs *obs, size_t n, zs_nccl_params *out, zs_err *e)
{
    zs_nccl_topo *topo = calloc(n ? n : 1, sizeof *topo);
    double *bus = malloc(sizeof(double) * (n ? n : 1));
    if (!topo || !bus) {
        free(topo);
        free(bus);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory fitting");
    }
    int rc = ZS_OK;
    for (size_t i = 0; i < n && rc == ZS_OK; i++) {
        zs_nccl_obs *o = &obs[i];
        if (!(o->seconds > 0) || !(o->nbytes > 0))
            rc = zs_err_set(e, ZS_EINPUT, zs_coll_kind_name(o->kind), NULL,
                            "a measurement needs a positive size and time");
        if (rc == ZS_OK)
            rc = zs_nccl_topo_init(cl, o->nodes, o->ppn, 0, &topo[i], e);
        zs_nccl_choice ch;
        if (rc == ZS_OK)
            rc = zs_nccl_choose(&topo[i], o->kind, o->nbytes, o->algo_mask, o->proto_mask, NULL,
                                &ch, e);
        if (rc == ZS_OK) {
            o->algo = ch.algo;
            o->proto = ch.proto;
            bus[i] = zs_nccl_bus_bytes(o->kind, topo[i].nranks, o->nbytes);
        }
    }
    fit_ctx c;
    memset(&c, 0, sizeof c);
    c.obs = obs;
    c.topo = topo;
    c.n = n;
    zs_nccl_params_default(&c.base);
    if (rc == ZS_OK)
        choose_free(&c);
    /* The model reads the network ramp only once it is fitted. */
    for (int j = 0; j < c.nfree; j++)
        c.base.fitted[c.idx[j]] = c.idx[j] == ZS_NP_NET_RAMP_HALF;
    if (rc == ZS_OK && c.nfree > 0) {
        qsort(bus, n, sizeof *bus, cmp_obs_size);
        double q1 = bus[n / 4], q2 = bus[n / 2], q3 = bus[(3 * n) / 4];
        double start[ZS_NP_NPARAMS], x[ZS_NP_NPARAMS], best_x[ZS_NP_NPARAMS];
        double best = INFINITY;
        static const double pows[3] = {0.5, 1.0, 2.0};
        const double halves[3] = {q1, q2, q3};
        const double red_halves[2] = {q2, 10 * q2};
        for (int h = 0; h < 3; h++)
            for (int q = 0; q < 3; q++)
                for (int r = 0; r < 2; r++) {
                    zs_nccl_params s0 = c.base;
                    s0.v[ZS_NP_RAMP_HALF] = halves[h];
                    s0.v[ZS_NP_RAMP_POW] = pows[q];
                    s0.v[ZS_NP_RED_FRAC] = 0.25;
                    s0.v[ZS_NP_RED_HALF] = red_halves[r];
                    s0.v[ZS_NP_RED_POW] = 0.5;
                    s0.v[ZS_NP_NET_RAMP_HALF] = halves[h];
                    s0.v[ZS_NP_NET_RAMP_POW] = pows[q];
                    for (int j = 0; j < c.nfree; j++)
                        start[j] = pack1(c.idx[j], s0.v[c.idx[j]]);
                    double c2 = run(&c, start, x);
                    if (c2 < best) {
                        best = c2;
                        memcpy(best_x, x, sizeof x);
                    }
                }
        if (!isfinite(best))
            rc = zs_err_set(e, ZS_ERUNTIME, NULL,
                            "check that the measurements are times of the collectives named",
                            "the NCCL model fit did not converge");
        else
            unpack(&c, best_x, &c.base);
        for (int j = 0; j < c.nfree && rc == ZS_OK; j++)
            c.base.fitted[c.idx[j]] = 1;
    }
    for (size_t i = 0; i < n && rc == ZS_OK; i++)
        obs[i].predicted = predict(&c, i, &c.base);
    free(topo);
    free(bus);
    if (rc == ZS_OK)
        *out = c.base;
    return rc;
}

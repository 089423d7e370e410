/* DistCA's core-attention scheduler: see zs_distca_sched_internal.h. */
#include "zs_distca_sched_internal.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

typedef struct need {
    double v;
    int s;
} need;

static int cmp_need(const void *a, const void *b)
{
    const need *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return x->s < y->s ? -1 : (x->s > y->s);
}

/* The sub-item of the innermost np mirrored pairs of it (np < its pairs). */
static zs_ca_item inner(const zs_ca_item *it, int32_t np)
{
    zs_ca_item s = *it;
    s.h0 = it->h1 - np;
    s.t1 = it->t0 + np;
    return s;
}

static double imbalance(const double *load, int n)
{
    double mx = 0, sum = 0;
    for (int s = 0; s < n; s++) {
        sum += load[s];
        mx = load[s] > mx ? load[s] : mx;
    }
    return sum > 0 ? mx * n / sum : 1.0;
}

/* The most inner pairs, in whole blocks and fewer than the item's pairs,
 * whose load is at most df (0: none). Loads need not be proportional to
 * pairs (kernel efficiency grows with the shard), so the proportional
 * guess is only where the search starts: it halves the step from there. */
static int32_t sub_pairs(const zs_ca_sched_in *in, const zs_ca_item *it, int32_t pairs, double df,
                         double F)
{
    int32_t b = in->block, lo = 0, hi = (pairs - 1) / b; /* in blocks */
    if (hi < 1)
        return 0;
    int32_t guess = (int32_t)((double)pairs * df / F) / b;
    guess = guess < 1 ? 1 : guess > hi ? hi : guess;
    zs_ca_item sub = inner(it, guess * b);
    if (in->load(in->arg, &sub) <= df)
        lo = guess;
    else
        hi = guess - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        sub = inner(it, mid * b);
        if (in->load(in->arg, &sub) <= df)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo * b;
}

/* A candidate move: item i (whole when np == 0, else its inner np pairs). */
typedef struct cand {
    int32_t i, np;
    double df, score;
} cand;

/* The best candidate for destination d, or i = -1. */
static cand best_move(const zs_ca_sched_in *in, const zs_ca_item *items, int32_t n,
                      const double *load, const double *F, double mean, int d, double want)
{
    cand best = {-1, 0, 0, -1};
    for (int32_t i = 0; i < n; i++) {
        const zs_ca_item *it = &items[i];
        int s = it->server;
        double surplus = load[s] - mean;
        if (s == d || surplus <= 0 || F[i] <= 0)
            continue;
        double df = want < surplus ? want : surplus;
        cand c = {i, 0, F[i], 0};
        double t;
        if (F[i] <= df) {
            t = in->comm(in->arg, it, d);
        } else {
            int32_t pairs = it->h1 - it->h0 < it->t1 - it->t0 ? it->h1 - it->h0 : it->t1 - it->t0;
            int32_t np = sub_pairs(in, it, pairs, df, F[i]);
            if (np < 1)
                continue;
            zs_ca_item sub = inner(it, np);
            c.np = np;
            c.df = in->load(in->arg, &sub);
            t = in->comm(in->arg, &sub, d);
        }
        c.score = t > 0 ? c.df / t : DBL_MAX;
        if (c.df > 0 && c.score > best.score)
            best = c;
    }
    return best;
}

int zs_ca_schedule(const zs_ca_sched_in *in, zs_ca_item **items, int32_t *n, int32_t *cap,
                   zs_ca_sched_out *out, zs_err *e)
{
    memset(out, 0, sizeof *out);
    int S = in->nservers;
    if (S < 1 || in->block < 1 || !(in->tol >= 0))
        return zs_err_set(e, ZS_EINVALID, "distca scheduler", NULL,
                          "%d servers, block %d, tolerance %g", S, in->block, in->tol);
    double *load = calloc((size_t)S, sizeof(double));
    need *nd = malloc(sizeof(need) * (size_t)S);
    double *F = malloc(sizeof(double) * (size_t)(*cap > 0 ? *cap : 1));
    if (!load || !nd || !F) {
        free(load);
        free(nd);
        free(F);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int rc = ZS_OK;
    double total = 0;
    for (int32_t i = 0; i < *n; i++) {
        zs_ca_item *it = &(*items)[i];
        if (it->server < 0 || it->server >= S) {
            rc = zs_err_set(e, ZS_EINVALID, "distca scheduler", NULL,
                            "item %d is on server %d of %d", i, it->server, S);
            break;
        }
        F[i] = in->load(in->arg, it);
        load[it->server] += F[i];
        total += F[i];
    }
    double mean = total / S;
    if (!rc) {
        out->imb_before = imbalance(load, S);
        for (int s = 0; s < S; s++)
            nd[s] = (need){mean - load[s], s};
        qsort(nd, (size_t)S, sizeof *nd, cmp_need);
    }
    for (int k = 0; k < S && !rc && nd[k].v > 0; k++) {
        int d = nd[k].s;
        /* Every pass moves load to d; the guard only bounds a cost model
         * whose sub-items never add up. */
        for (int guard = 0; !rc && guard < 65536 && mean - load[d] > in->tol * mean; guard++) {
            cand c = best_move(in, *items, *n, load, F, mean, d, mean - load[d]);
            if (c.i < 0)
                break;
            zs_ca_item *it = &(*items)[c.i];
            if (c.np == 0) {
                load[it->server] -= F[c.i];
                load[d] += F[c.i];
                it->server = d;
                out->moved++;
                continue;
            }
            if (*n == *cap) {
                int32_t nc = *cap ? *cap * 2 : 64;
                zs_ca_item *v = realloc(*items, sizeof(zs_ca_item) * (size_t)nc);
                double *f = v ? realloc(F, sizeof(double) * (size_t)nc) : NULL;
                if (v)
                    *items = v;
                if (!v || !f) {
                    rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
                    break;
                }
                F = f;
                *cap = nc;
                it = &(*items)[c.i];
            }
            zs_ca_item sub = inner(it, c.np);
            sub.server = d;
            it->h1 -= c.np;
            it->t0 += c.np;
            (*items)[*n] = sub;
            F[*n] = c.df;
            double rest = in->load(in->arg, it);
            load[it->server] += rest - F[c.i];
            F[c.i] = rest;
            load[d] += c.df;
            (*n)++;
            out->split++;
        }
    }
    if (!rc)
        out->imb_after = imbalance(load, S);
    free(load);
    free(nd);
    free(F);
    return rc;
}

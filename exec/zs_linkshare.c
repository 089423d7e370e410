/* Shared links for the analytic backend: see zs_linkshare_internal.h. */
#include "zs_linkshare_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"
#include "zs_prefetch.h"

typedef struct load {
    int32_t res;
    double rate; /* load / T: bytes/s it asks of the resource */
} load;

typedef struct item {
    double T, w, u, tu; /* duration alone, remaining (at speed 1), speed, time of last update */
    uint32_t gen;
    load *ld; /* its loads (kept, with their capacity, when the id is reused) */
    int32_t n, capld;
    int active;
    /* An item on many resources (a collective across nodes): the smallest
     * of its resources' shares and which resource gives it, kept up to
     * date as they change, so that a transfer starting or ending on one of
     * them costs O(1), not O(its resources); stale: recompute (the
     * smallest one's share grew). */
    double fmin;
    int32_t amin;
    int stale;
} item;

/* Items on more resources than this keep fmin (below it a scan is cheaper). */
#define BIG_ITEM 16

typedef struct res_st {
    double cap, demand;
    int32_t *items, n, capn;
} res_st;

struct zs_linkshare {
    int nres;
    res_st *res;
    item *it;
    int32_t nit, capit;
    int32_t *freeid, nfree, capfree;
    int32_t *changed, nchanged, capchanged;
    uint32_t *mark, stamp; /* per item: last stamp it was visited in */
};

zs_linkshare *zs_linkshare_new(int nres, const double *cap)
{
    zs_linkshare *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nres = nres;
    s->res = calloc((size_t)(nres > 0 ? nres : 1), sizeof *s->res);
    if (!s->res) {
        free(s);
        return NULL;
    }
    for (int r = 0; r < nres; r++)
        s->res[r].cap = cap[r];
    return s;
}

void zs_linkshare_free(zs_linkshare *s)
{
    if (!s)
        return;
    for (int r = 0; r < s->nres; r++)
        free(s->res[r].items);
    free(s->res);
    for (int32_t i = 0; i < s->nit; i++)
        free(s->it[i].ld);
    free(s->it);
    free(s->freeid);
    free(s->changed);
    free(s->mark);
    free(s);
}

static int grow32(void **p, int32_t *cap, int32_t need, size_t size)
{
    int64_t c = *cap;
    int rc = zs_grow(p, &c, need, size);
    *cap = (int32_t)c;
    return rc;
}

/* A resource's share for its items: 1 when it is not oversubscribed. */
static double share_of(const res_st *r)
{
    return r->demand > r->cap && r->demand > 0 ? r->cap / r->demand : 1.0;
}

/* The smallest share over x's resources (the same value in any order). */
static double speed_of(const zs_linkshare *s, item *x)
{
    double u = 1.0;
    int32_t a = -1;
    for (int32_t i = 0; i < x->n; i++) {
        double f = share_of(&s->res[x->ld[i].res]);
        if (f < u) {
            u = f;
            a = x->ld[i].res;
        }
    }
    x->fmin = u;
    x->amin = a;
    x->stale = 0;
    return u;
}

/* Resource r of big item x changed its share to f. */
static void big_update(item *x, int32_t r, double f)
{
    if (x->stale)
        return;
    if (r == x->amin) {
        if (f <= x->fmin)
            x->fmin = f;
        else
            x->stale = 1; /* the smallest grew: another may be smallest now */
    } else if (f < x->fmin) {
        x->fmin = f;
        x->amin = r;
    }
}

/* Brings item id to `now` at its old speed and gives it its new one. */
static int resync(zs_linkshare *s, int32_t id, double now)
{
    item *x = &s->it[id];
    double u = x->n > BIG_ITEM && !x->stale ? x->fmin : speed_of(s, x);
    if (fabs(u - x->u) <= 1e-12 * x->u)
        return 0;
    x->w -= (now - x->tu) * x->u;
    if (x->w < 0)
        x->w = 0;
    x->tu = now;
    x->u = u;
    x->gen++;
    return 1;
}

static int note_changed(zs_linkshare *s, int32_t id)
{
    if (grow32((void **)&s->changed, &s->capchanged, s->nchanged + 1, sizeof(int32_t)))
        return ZS_ENOMEM;
    s->changed[s->nchanged++] = id;
    return ZS_OK;
}

/* Revisits every active item on the resources of item `id` (but `id`). */
static int revisit(zs_linkshare *s, int32_t id, double now)
{
    const item *x = &s->it[id];
    /* First the big items' smallest shares, over every resource that
     * changed (an item may share several with x)... */
    for (int32_t i = 0; i < x->n; i++) {
        const res_st *r = &s->res[x->ld[i].res];
        double f = share_of(r);
        for (int32_t k = 0; k < r->n; k++) {
            item *y = &s->it[r->items[k]];
            if (r->items[k] != id && y->n > BIG_ITEM)
                big_update(y, x->ld[i].res, f);
        }
    }
    /* ...then every item once, in the order first met. */
    s->stamp++;
    s->mark[id] = s->stamp;
    for (int32_t i = 0; i < x->n; i++) {
        const res_st *r = &s->res[x->ld[i].res];
        for (int32_t k = 0; k < r->n; k++) {
            int32_t j = r->items[k];
            if (s->mark[j] == s->stamp)
                continue;
            s->mark[j] = s->stamp;
            if (resync(s, j, now) && note_changed(s, j))
                return ZS_ENOMEM;
        }
    }
    return ZS_OK;
}

int zs_linkshare_add(zs_linkshare *s, double now, double T, const int *res, const double *ld, int n,
                     int32_t *out)
{
    s->nchanged = 0;
    int32_t id;
    if (s->nfree > 0) {
        id = s->freeid[--s->nfree];
    } else {
        if (grow32((void **)&s->it, &s->capit, s->nit + 1, sizeof(item)))
            return ZS_ENOMEM;
        int32_t cm = s->capit;
        uint32_t *m = realloc(s->mark, sizeof(uint32_t) * (size_t)cm);
        if (!m)
            return ZS_ENOMEM;
        s->mark = m;
        s->mark[s->nit] = 0;
        s->it[s->nit].ld = NULL;
        s->it[s->nit].capld = 0;
        s->it[s->nit].gen = 0;
        id = s->nit++;
    }
    item *x = &s->it[id];
    load *keep = x->ld;
    int32_t keepcap = x->capld;
    uint32_t gen = x->gen;
    memset(x, 0, sizeof *x);
    x->ld = keep;
    x->capld = keepcap;
    x->gen = gen + 1; /* never the generation of an earlier item with this id */
    x->T = T > 0 ? T : 0;
    x->w = x->T;
    x->u = 1;
    x->tu = now;
    x->active = 1;
    if (grow32((void **)&x->ld, &x->capld, n, sizeof(load)))
        return ZS_ENOMEM;
    for (int i = 0; i < n; i++) {
        if (res[i] < 0 || res[i] >= s->nres || !(ld[i] > 0) || x->T <= 0)
            continue;
        res_st *r = &s->res[res[i]];
        if (grow32((void **)&r->items, &r->capn, r->n + 1, sizeof(int32_t)))
            return ZS_ENOMEM;
        r->items[r->n++] = id;
        double rate = ld[i] / x->T;
        r->demand += rate;
        x->ld[x->n++] = (load){res[i], rate};
    }
    x->u = speed_of(s, x);
    if (note_changed(s, id) || revisit(s, id, now))
        return ZS_ENOMEM;
    *out = id;
    return ZS_OK;
}

void zs_linkshare_remove(zs_linkshare *s, double now, int32_t id)
{
    s->nchanged = 0;
    item *x = &s->it[id];
    if (!x->active)
        return;
    x->active = 0;
    for (int32_t i = 0; i < x->n; i++) {
        const load *l = &x->ld[i];
        res_st *r = &s->res[l->res];
        for (int32_t k = 0; k < r->n; k++)
            if (r->items[k] == id) {
                r->items[k] = r->items[--r->n];
                break;
            }
        r->demand = r->n ? r->demand - l->rate : 0; /* no drift once empty */
    }
    /* Out of memory growing the changed list leaves some items at their
     * (slower) speeds: late, never early. */
    (void)revisit(s, id, now);
    if (!grow32((void **)&s->freeid, &s->capfree, s->nfree + 1, sizeof(int32_t)))
        s->freeid[s->nfree++] = id;
}

int zs_linkshare_changed(const zs_linkshare *s, const int32_t **ids)
{
    *ids = s->changed;
    return s->nchanged;
}

double zs_linkshare_finish(const zs_linkshare *s, int32_t id)
{
    const item *x = &s->it[id];
    return x->tu + (x->u > 0 ? x->w / x->u : 0);
}

uint32_t zs_linkshare_gen(const zs_linkshare *s, int32_t id)
{
    return s->it[id].gen;
}

double zs_linkshare_speed(const zs_linkshare *s, int32_t id)
{
    return s->it[id].u;
}

void zs_linkshare_prefetch(const zs_linkshare *s, int32_t id, int stage)
{
    if (id < 0 || id >= s->nit)
        return;
    const item *x = &s->it[id];
    if (stage == 1) {
        ZS_PF(x);
        return;
    }
    if (!x->active || !x->ld)
        return;
    if (stage == 2) {
        ZS_PF(x->ld);
        return;
    }
    int32_t n = x->n < 4 ? x->n : 4; /* a transfer's two; a collective's first few */
    for (int32_t i = 0; i < n; i++) {
        const res_st *r = &s->res[x->ld[i].res];
        if (stage == 3)
            ZS_PF(r);
        else if (r->items)
            ZS_PF(r->items);
    }
}

/* Scoring a cost model against measurements: see zs_calib_score.h. */
#include "zs_calib_score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_sort.h"

static int is_coll(const char *op)
{
    int s = zs_calib_slot_parse(op);
    return s >= ZS_CAL_COLL_AG && s <= ZS_CAL_COLL_A2A;
}

static int is_attn(const char *op)
{
    return strncmp(op, "attn_", 5) == 0;
}

int zs_holdout_held(const zs_meas *m, void *arg)
{
    const zs_holdout *h = arg;
    for (int i = 0; i < h->nterms; i++) {
        if ((strcmp(h->t[i].key, "gpus") == 0 || strcmp(h->t[i].key, "nodes") == 0) &&
            is_coll(m->op)) {
            int v = h->t[i].key[0] == 'g' ? m->gpus : (m->nodes > 0 ? m->nodes : 1), in = 0;
            for (int j = 0; j < h->t[i].ngpus; j++)
                in |= v == h->t[i].gpus[j];
            if (!in)
                return 1;
        } else if (strcmp(h->t[i].key, "seq") == 0 && is_attn(m->op)) {
            if (m->seq_len > h->t[i].limit)
                return 1;
        } else if (strcmp(h->t[i].key, "cp") == 0 && is_attn(m->op)) {
            if ((m->cp > 1 ? m->cp : 1) > h->t[i].limit)
                return 1;
        } else if (strcmp(h->t[i].key, "bytes") == 0 &&
                   (is_coll(m->op) || strncmp(m->op, "p2p", 3) == 0)) {
            if (m->bytes > h->t[i].limit)
                return 1;
        }
    }
    return 0;
}

int zs_holdout_add(zs_holdout *h, const char *spec, zs_err *e)
{
    static const char fix[] = "use gpus=2[+4...], nodes=1[+2...], seq<=N, cp<=N or bytes<=N[K|M|G]";
    if (h->nterms == ZS_HOLDOUT_MAX_TERMS)
        return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "too many --holdout terms");
    zs_holdout_term t;
    memset(&t, 0, sizeof t);
    if (strncmp(spec, "gpus=", 5) == 0 || strncmp(spec, "nodes=", 6) == 0) {
        int g = spec[0] == 'g';
        snprintf(t.key, sizeof t.key, "%s", g ? "gpus" : "nodes");
        const char *p = spec + (g ? 5 : 6);
        while (*p && t.ngpus < 16) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 1 || (*end && *end != '+'))
                return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "bad count list in '%s'", spec);
            t.gpus[t.ngpus++] = (int)v;
            p = *end ? end + 1 : end;
        }
        if (!t.ngpus)
            return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "no counts in '%s'", spec);
    } else if (strncmp(spec, "seq<=", 5) == 0 || strncmp(spec, "cp<=", 4) == 0 ||
               strncmp(spec, "bytes<=", 7) == 0) {
        int seq = spec[0] == 's', cp = spec[0] == 'c';
        snprintf(t.key, sizeof t.key, "%s", seq ? "seq" : cp ? "cp" : "bytes");
        char *end;
        const char *p = spec + (seq ? 5 : cp ? 4 : 7);
        double v = strtod(p, &end);
        double mul = 1;
        if (*end == 'K' || *end == 'k')
            mul = 1024, end++;
        else if (*end == 'M')
            mul = 1048576, end++;
        else if (*end == 'G')
            mul = 1073741824, end++;
        if (end == p || *end || !(v > 0))
            return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "bad limit in '%s'", spec);
        t.limit = v * mul;
    } else {
        return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "unknown hold-out '%s'", spec);
    }
    h->t[h->nterms++] = t;
    return ZS_OK;
}

int zs_score_points(const zs_cost *cost, const zs_calib *cal, const zs_meas_set *s,
                    const zs_model *model, const zs_holdout *h, zs_score_point **out, size_t *n,
                    zs_err *e)
{
    zs_score_point *p = calloc(s->n ? s->n : 1, sizeof *p);
    if (!p)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    size_t np = 0;
    for (size_t i = 0; i < s->n; i++) {
        double pred;
        zs_err pe;
        zs_nccl_choice ch;
        if (is_coll(s->v[i].op)) {
            int rc = zs_calib_predict(cost, cal, &s->v[i], NULL, &pred, &ch, e);
            if (rc) { /* a collective the cluster cannot hold: an input error */
                free(p);
                return rc;
            }
            snprintf(p[np].nccl, sizeof p[np].nccl, "%s/%s", zs_nccl_algo_name(ch.algo),
                     zs_nccl_proto_name(ch.proto));
        } else if (zs_calib_predict(cost, cal, &s->v[i], model, &pred, NULL, &pe)) {
            continue; /* unpriceable (layer ops without a model) */
        } else {
            snprintf(p[np].nccl, sizeof p[np].nccl, "-");
        }
        p[np].m = &s->v[i];
        p[np].pred = pred;
        p[np].err = (pred - s->v[i].seconds) / s->v[i].seconds;
        p[np].held = h && h->nterms ? zs_holdout_held(&s->v[i], (void *)h) : 0;
        np++;
    }
    *out = p;
    *n = np;
    return ZS_OK;
}

/* Median and max |err| of the points selected by keep() (only held-out
 * ones with only_held); the number of points, -1 when out of memory. */
static int stats(const zs_score_point *p, size_t n, int only_held,
                 int (*keep)(const zs_meas *, const void *), const void *arg, double *med,
                 double *mx)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    int k = 0;
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((!only_held || p[i].held) && keep(p[i].m, arg))
            v[k++] = fabs(p[i].err);
    *med = k ? zs_median(v, (size_t)k) : 0; /* sorts v */
    *mx = k ? v[k - 1] : 0;
    free(v);
    return k;
}

static int keep_op(const zs_meas *m, const void *arg)
{
    return strcmp(m->op, (const char *)arg) == 0;
}

static int keep_coll_ge(const zs_meas *m, const void *arg)
{
    return is_coll(m->op) && m->bytes >= *(const double *)arg;
}

typedef struct op_ge {
    const char *op;
    double min_bytes;
} op_ge;

static int keep_op_ge(const zs_meas *m, const void *arg)
{
    const op_ge *x = arg;
    return strcmp(m->op, x->op) == 0 && m->bytes >= x->min_bytes;
}

static int keep_attn_1k(const zs_meas *m, const void *arg)
{
    (void)arg;
    return strcmp(m->op, "attn_fwd") == 0 && m->seq_len >= 1024;
}

/* Appends a row when its class has points; -1 when out of memory. */
static int add_row(zs_score_row *rows, int *nrows, const char *cls, int held, int k, double med,
                   double mx, double target)
{
    if (k < 0)
        return -1;
    if (k == 0)
        return 0;
    zs_score_row *r = &rows[(*nrows)++];
    snprintf(r->cls, sizeof r->cls, "%s", cls);
    r->held = held;
    r->points = k;
    r->median = med;
    r->max = mx;
    r->target = target;
    return 0;
}

/* The op classes, in first-seen order (at most 64). */
static int classes(const zs_score_point *p, size_t n, char seen[64][32])
{
    int nseen = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < nseen; j++)
            dup |= strcmp(seen[j], p[i].m->op) == 0;
        if (dup || nseen == 64)
            continue;
        snprintf(seen[nseen++], 32, "%s", p[i].m->op);
    }
    return nseen;
}

int zs_score_summary(const zs_score_point *p, size_t n, int holdout, zs_score_row **rows,
                     int *nrows, zs_err *e)
{
    static const struct {
        const char *name;
        double min_bytes, target;
    } coll[] = {{"collectives >= 64 MB", 64e6, 0.05}, {"collectives >= 8 MB", 8e6, 0.10}};
    static const char *const kinds[] = {"all-gather", "reduce-scatter", "all-reduce", "all-to-all"};
    char seen[64][32];
    int nseen = classes(p, n, seen), nr = 0, bad = 0;
    zs_score_row *r = calloc((size_t)nseen * 2 + 3 + 8, sizeof *r);
    if (!r)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    double med, mx;
    int k;
    for (int j = 0; j < nseen; j++) {
        if (holdout) {
            k = stats(p, n, 1, keep_op, seen[j], &med, &mx);
            bad |= add_row(r, &nr, seen[j], 1, k, med, mx, 0);
        }
        k = stats(p, n, 0, keep_op, seen[j], &med, &mx);
        bad |= add_row(r, &nr, seen[j], 0, k, med, mx, 0);
    }
    /* The targets for each collective, then for all of them. */
    for (size_t c = 0; c < 4; c++)
        for (size_t j = 0; j < 2; j++) {
            op_ge sel = {kinds[c], coll[j].min_bytes};
            char name[48];
            snprintf(name, sizeof name, "%s %s", kinds[c], coll[j].name + 12);
            k = stats(p, n, holdout, keep_op_ge, &sel, &med, &mx);
            bad |= add_row(r, &nr, name, holdout, k, med, mx, coll[j].target);
        }
    for (size_t j = 0; j < 2; j++) {
        k = stats(p, n, holdout, keep_coll_ge, &coll[j].min_bytes, &med, &mx);
        bad |= add_row(r, &nr, coll[j].name, holdout, k, med, mx, coll[j].target);
    }
    k = stats(p, n, holdout, keep_attn_1k, NULL, &med, &mx);
    bad |= add_row(r, &nr, "attn_fwd >= 1K tokens", holdout, k, med, mx, 0.10);
    if (bad) {
        free(r);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    *rows = r;
    *nrows = nr;
    return ZS_OK;
}

void zs_meas_shape(const zs_meas *m, char *buf, size_t n)
{
    if (is_coll(m->op) && m->nodes > 1)
        snprintf(buf, n, "%d x %d GPUs, %.0f B", m->nodes, m->gpus / m->nodes, m->bytes);
    else if (is_coll(m->op) || strncmp(m->op, "p2p", 3) == 0)
        snprintf(buf, n, "%d GPUs, %.0f B", m->gpus, m->bytes);
    else if (is_attn(m->op) && (m->docs > 1 || m->cp > 1 || m->tp > 1))
        snprintf(buf, n, "%d tokens x%d, %d/%d heads, d=%d, cp=%d tp=%d", m->seq_len, m->docs,
                 m->heads, m->kv_heads, m->head_dim, m->cp > 1 ? m->cp : 1, m->tp > 1 ? m->tp : 1);
    else if (is_attn(m->op))
        snprintf(buf, n, "%d tokens, %d/%d heads, d=%d", m->seq_len, m->heads, m->kv_heads,
                 m->head_dim);
    else if (strncmp(m->op, "layer:", 6) == 0)
        snprintf(buf, n, "%.0f tokens, tp=%d cp=%d", m->tokens, m->tp, m->cp);
    else if (strcmp(m->op, "gemm") == 0)
        snprintf(buf, n, "%.0fx%.0fx%.0f", m->m, m->n, m->k);
    else
        snprintf(buf, n, "%.0f B", m->bytes);
}

/* Zeppelin's remapping layer: see zs_remap.h. */
#include "zs_remap.h"

#include <stdlib.h>
#include <string.h>

typedef struct rk {
    int64_t t;
    int id;
} rk;

static int cmp_desc(const void *a, const void *b)
{
    const rk *x = a, *y = b;
    if (x->t != y->t)
        return x->t > y->t ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

static int cmp_flow(const void *a, const void *b)
{
    const zs_remap_flow *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return x->to < y->to ? -1 : (x->to > y->to);
}

void zs_remap_free(zs_remap *m)
{
    if (!m)
        return;
    free(m->target);
    free(m->flows);
    free(m);
}

/* Two pointers over surplus and deficit slots of [s0, s1): appends flows. */
static void match(int64_t *bal, int s0, int s1, zs_remap_flow *f, int *nf)
{
    int i = s0, j = s0;
    for (;;) {
        while (i < s1 && bal[i] <= 0)
            i++;
        while (j < s1 && bal[j] >= 0)
            j++;
        if (i >= s1 || j >= s1)
            return;
        int64_t n = bal[i] < -bal[j] ? bal[i] : -bal[j];
        f[(*nf)++] = (zs_remap_flow){i, j, n};
        bal[i] -= n;
        bal[j] += n;
    }
}

static int plan(const int64_t *attn, int nslots, int slots_per_node, double c_intra, double c_inter,
                int per_node, zs_remap **out, zs_err *e)
{
    zs_remap *m = calloc(1, sizeof *m);
    int64_t *bal = malloc(sizeof(int64_t) * (size_t)nslots);
    rk *o = malloc(sizeof(rk) * (size_t)nslots);
    if (m) {
        m->target = malloc(sizeof(int64_t) * (size_t)nslots);
        /* Each match step zeroes a surplus or a deficit: < 2 * nslots flows. */
        m->flows = malloc(sizeof(zs_remap_flow) * (size_t)(2 * nslots + 1));
    }
    if (!m || !bal || !o || !m->target || !m->flows) {
        zs_remap_free(m);
        free(bal);
        free(o);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    m->nslots = nslots;
    for (int r = 0; r < nslots; r++)
        o[r] = (rk){attn[r], r};
    int span = per_node ? slots_per_node : nslots;
    for (int s0 = 0; s0 < nslots; s0 += span) {
        /* The scope's share each; the extra tokens to its slots with the
         * largest attention share (o sorted per scope). */
        int s1 = s0 + span < nslots ? s0 + span : nslots, n = s1 - s0;
        int64_t tot = 0;
        for (int r = s0; r < s1; r++)
            tot += attn[r];
        qsort(o + s0, (size_t)n, sizeof *o, cmp_desc);
        for (int i = 0; i < n; i++)
            m->target[o[s0 + i].id] = tot / n + (i < tot % n);
    }
    for (int r = 0; r < nslots; r++)
        bal[r] = attn[r] - m->target[r];
    int nf = 0;
    for (int s0 = 0; s0 < nslots; s0 += slots_per_node) {
        int s1 = s0 + slots_per_node < nslots ? s0 + slots_per_node : nslots;
        match(bal, s0, s1, m->flows, &nf);
    }
    int intra_end = nf;
    match(bal, 0, nslots, m->flows, &nf);
    for (int i = 0; i < nf; i++) {
        int inter = i >= intra_end;
        if (inter)
            m->inter_tokens += m->flows[i].tokens;
        else
            m->intra_tokens += m->flows[i].tokens;
        m->cost += (double)m->flows[i].tokens * (inter ? c_inter : c_intra);
    }
    qsort(m->flows, (size_t)nf, sizeof *m->flows, cmp_flow);
    m->nflows = nf;
    free(bal);
    free(o);
    *out = m;
    return ZS_OK;
}

int zs_remap_plan(const int64_t *attn, int nslots, int slots_per_node, double c_intra,
                  double c_inter, zs_remap **out, zs_err *e)
{
    return plan(attn, nslots, slots_per_node, c_intra, c_inter, 0, out, e);
}

int zs_remap_plan_nodes(const int64_t *attn, int nslots, int slots_per_node, double c_intra,
                        zs_remap **out, zs_err *e)
{
    return plan(attn, nslots, slots_per_node, c_intra, 0, 1, out, e);
}

/* ByteScale's data-aware sharding and balance scheduler: see
 * zs_bytescale_sched_internal.h. */
#include "zs_bytescale_sched_internal.h"

#include <stdlib.h>
#include <string.h>

#include "zs_sort.h"

int zs_bytescale_needed(int32_t len, long cap, int max_n)
{
    /* The unpadded bound ceil(len / cap) is where the search starts; the
     * zigzag padding can need a slot or two more. */
    int64_t n = cap > 0 ? ((int64_t)len + cap - 1) / cap : 1;
    if (n < 1)
        n = 1;
    while (n <= max_n && zs_dyncp_share(len, (int)n) > cap)
        n++;
    return n <= max_n ? (int)n : 0;
}

/* The scheduler's state: per slot its work, its micro-batch count and its
 * open local micro-batch (a group of one slot that can take more
 * documents); per document its group; per group its wave, slots. */
typedef struct bs_state {
    int nslots, ngroups;
    double *work;
    int *count, *open;
    int64_t *open_tok;
    int *g_of;                      /* per document */
    int *g_wave, *g_first, *g_size; /* per group (at most ndocs) */
} bs_state;

static void state_free(bs_state *s)
{
    free(s->work);
    free(s->count);
    free(s->open);
    free(s->open_tok);
    free(s->g_of);
    free(s->g_wave);
    free(s->g_first);
    free(s->g_size);
}

static int state_alloc(bs_state *s, int nslots, int32_t ndocs, zs_err *e)
{
    size_t n = (size_t)nslots, d = (size_t)ndocs + 1;
    memset(s, 0, sizeof *s);
    s->nslots = nslots;
    s->work = calloc(n, sizeof(double));
    s->count = calloc(n, sizeof(int));
    s->open = malloc(sizeof(int) * n);
    s->open_tok = calloc(n, sizeof(int64_t));
    s->g_of = malloc(sizeof(int) * d);
    s->g_wave = malloc(sizeof(int) * d);
    s->g_first = malloc(sizeof(int) * d);
    s->g_size = malloc(sizeof(int) * d);
    if (!s->work || !s->count || !s->open || !s->open_tok || !s->g_of || !s->g_wave ||
        !s->g_first || !s->g_size) {
        state_free(s);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int sl = 0; sl < nslots; sl++)
        s->open[sl] = -1;
    return ZS_OK;
}

static int new_group(bs_state *s, int wave, int first, int size)
{
    int g = s->ngroups++;
    s->g_wave[g] = wave;
    s->g_first[g] = first;
    s->g_size[g] = size;
    return g;
}

/* A document of n > 1 slots: the block with the lowest largest work, then
 * the fewest micro-batches (so the ring's slots wait least for each other),
 * then the lowest first slot. */
static void place_wide(bs_state *s, int32_t d, int n, double w)
{
    int best = 0, best_wave = 0;
    double best_work = 0;
    for (int f = 0; f + n <= s->nslots; f++) {
        double mx = 0;
        int wave = 0;
        for (int k = f; k < f + n; k++) {
            if (s->work[k] > mx)
                mx = s->work[k];
            if (s->count[k] > wave)
                wave = s->count[k];
        }
        if (f == 0 || mx < best_work || (mx == best_work && wave < best_wave)) {
            best = f;
            best_work = mx;
            best_wave = wave;
        }
    }
    s->g_of[d] = new_group(s, best_wave, best, n);
    for (int k = best; k < best + n; k++) {
        s->work[k] += w / n;
        s->count[k] = best_wave + 1;
        s->open[k] = -1; /* a later local document opens a new micro-batch */
    }
}

/* A document of one slot: the slot with the least work, into its open
 * micro-batch while that holds at most cap tokens. */
static void place_local(bs_state *s, int32_t d, int32_t len, long cap, double w)
{
    int sl = 0;
    for (int k = 1; k < s->nslots; k++)
        if (s->work[k] < s->work[sl])
            sl = k;
    if (s->open[sl] < 0 || s->open_tok[sl] + len > cap) {
        s->open[sl] = new_group(s, s->count[sl]++, sl, 1);
        s->open_tok[sl] = 0;
    }
    s->g_of[d] = s->open[sl];
    s->open_tok[sl] += len;
    s->work[sl] += w;
}

typedef struct bs_key {
    int wave, first, g;
} bs_key;

static int key_cmp(const void *a, const void *b)
{
    const bs_key *x = a, *y = b;
    if (x->wave != y->wave)
        return x->wave < y->wave ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Writes the groups ordered by (wave, first slot), each with its documents
 * in placement order, into the plan. */
static int emit_plan(const bs_state *s, const int32_t *order, int32_t ndocs, zs_dyncp_plan *p,
                     zs_err *e)
{
    int G = s->ngroups, nw = 0;
    for (int g = 0; g < G; g++)
        if (s->g_wave[g] + 1 > nw)
            nw = s->g_wave[g] + 1;
    memset(p, 0, sizeof *p);
    p->nslots = s->nslots;
    p->nwaves = nw;
    p->ngroups = G;
    p->wave_start = calloc((size_t)nw + 1, sizeof(int));
    p->first = malloc(sizeof(int) * ((size_t)G + 1));
    p->size = malloc(sizeof(int) * ((size_t)G + 1));
    p->doc_start = calloc((size_t)G + 1, sizeof(int));
    p->docs = malloc(sizeof(int32_t) * ((size_t)ndocs + 1));
    int *pos = malloc(sizeof(int) * ((size_t)G + 1)); /* group -> its place in the plan */
    int *fill = calloc((size_t)G + 1, sizeof(int));
    bs_key *key = malloc(sizeof(bs_key) * ((size_t)G + 1));
    int rc = ZS_OK;
    if (!p->wave_start || !p->first || !p->size || !p->doc_start || !p->docs || !pos || !fill ||
        !key) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    /* Groups ordered by (wave, first slot): the slots of a wave's groups
     * never overlap, so the key is unique. */
    for (int g = 0; g < G; g++)
        key[g] = (bs_key){s->g_wave[g], s->g_first[g], g};
    qsort(key, (size_t)G, sizeof *key, key_cmp);
    int at = 0;
    for (int i = 0; i < G; i++) {
        int g = key[i].g;
        pos[g] = at;
        p->first[at] = s->g_first[g];
        p->size[at++] = s->g_size[g];
    }
    /* wave_start[w]: the first group of wave w or later. */
    for (int w = nw, i = G; w >= 0; w--) {
        while (i > 0 && key[i - 1].wave >= w)
            i--;
        p->wave_start[w] = i;
    }
    for (int32_t d = 0; d < ndocs; d++)
        p->doc_start[pos[s->g_of[d]] + 1]++;
    for (int g = 0; g < G; g++)
        p->doc_start[g + 1] += p->doc_start[g];
    for (int32_t i = 0; i < ndocs; i++) {
        int g = pos[s->g_of[order[i]]];
        p->docs[p->doc_start[g] + fill[g]++] = order[i];
    }
out:
    free(pos);
    free(fill);
    free(key);
    if (rc)
        zs_dyncp_plan_free(p);
    return rc;
}

int zs_bytescale_schedule(const int32_t *len, int32_t ndocs, int nslots, long cap, int max_cp,
                          zs_bytescale_work w, zs_dyncp_plan *out, zs_err *e)
{
    return zs_bytescale_schedule_need(len, ndocs, nslots, cap, max_cp, w, NULL, out, e);
}

/* The slots document d needs: the caller's, or the fewest that hold it. */
static int need_of(const int *need, const int32_t *len, int32_t d, long cap, int max_n)
{
    return need ? need[d] : zs_bytescale_needed(len[d], cap, max_n);
}

int zs_bytescale_schedule_need(const int32_t *len, int32_t ndocs, int nslots, long cap, int max_cp,
                               zs_bytescale_work w, const int *need, zs_dyncp_plan *out, zs_err *e)
{
    int max_n = max_cp < nslots ? max_cp : nslots;
    for (int32_t d = 0; d < ndocs; d++)
        if (need_of(need, len, d, cap, max_n) == 0) {
            char what[64];
            snprintf(what, sizeof what, "document %d of the batch", d);
            return zs_err_set(e, ZS_EINPUT, what,
                              "raise max_cp, use more GPUs or a shorter context",
                              "document of %d tokens needs more than %d GPUs of %ld tokens each",
                              len[d], max_n, cap);
        }
    int32_t *order = zs_order_longest_first(len, ndocs);
    if (!order)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    bs_state s;
    int rc = state_alloc(&s, nslots, ndocs, e);
    if (rc) {
        free(order);
        return rc;
    }
    /* The mean work per slot: the balance target no document's share may
     * exceed (see the header). */
    double mean = 0;
    for (int32_t d = 0; d < ndocs; d++)
        mean += (w.lin_w * len[d] + w.attn_w * (double)len[d] * len[d]) / nslots;
    for (int32_t i = 0; i < ndocs; i++) {
        int32_t d = order[i];
        double l = len[d], wd = w.lin_w * l + w.attn_w * l * l;
        int n = need_of(need, len, d, cap, max_n);
        while (n < max_n && mean > 0 && wd / n > mean * (1 + 1e-9))
            n++;
        if (n > 1)
            place_wide(&s, d, n, wd);
        else
            place_local(&s, d, len[d], cap, wd);
    }
    rc = emit_plan(&s, order, ndocs, out, e);
    state_free(&s);
    free(order);
    return rc;
}

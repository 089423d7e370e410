/* Megatron-Core Dynamic CP's scheduler: see zs_dyncp_sched_internal.h. */
#include "zs_dyncp_sched_internal.h"

#include <stdlib.h>
#include <string.h>

#include "zs_sort.h"

/* Megatron's balance slack on the per-rank work bound of a wave
 * (_DYNAMIC_CP_WORKLOAD_CAP_DELTA in megatron/core/datasets/
 * data_schedule_utils.py, dev branch). */
#define DYNCP_CAP_DELTA 0.05

int64_t zs_dyncp_share(int32_t len, int n)
{
    if (n == 1)
        return len; /* whole on one GPU: no chunks, no padding */
    int64_t chunk = ((int64_t)len + 2 * (int64_t)n - 1) / (2 * (int64_t)n);
    return 2 * chunk;
}

int zs_dyncp_needed(int32_t len, long max_seqlen, int min_cp, int nslots)
{
    int64_t n = min_cp > 1 ? min_cp : 1;
    /* Megatron: 2^ceil(log2(len / max_seqlen)); the padded share can need
     * one doubling more (a document just under n x max_seqlen). */
    while (n <= nslots && zs_dyncp_share(len, (int)n) > max_seqlen)
        n *= 2;
    return n <= nslots ? (int)n : 0;
}

void zs_dyncp_plan_free(zs_dyncp_plan *p)
{
    if (!p)
        return;
    free(p->wave_start);
    free(p->first);
    free(p->size);
    free(p->doc_start);
    free(p->docs);
    memset(p, 0, sizeof *p);
}

/* A plan under construction: at most ndocs groups (every group holds a
 * document) and waves. */
static int plan_alloc(zs_dyncp_plan *p, int32_t ndocs, int nslots, zs_err *e)
{
    size_t n = (size_t)ndocs + 1;
    memset(p, 0, sizeof *p);
    p->nslots = nslots;
    p->wave_start = calloc(n, sizeof(int));
    p->first = malloc(sizeof(int) * n);
    p->size = malloc(sizeof(int) * n);
    p->doc_start = calloc(n, sizeof(int));
    p->docs = malloc(sizeof(int32_t) * n);
    if (!p->wave_start || !p->first || !p->size || !p->doc_start || !p->docs) {
        zs_dyncp_plan_free(p);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    return ZS_OK;
}

/* Appends a group of documents docs[0 .. n) to the current wave. */
static void add_group(zs_dyncp_plan *p, int first, int size, const int32_t *docs, int n)
{
    int g = p->ngroups++, at = p->doc_start[g];
    p->first[g] = first;
    p->size[g] = size;
    memcpy(p->docs + at, docs, sizeof(int32_t) * (size_t)n);
    p->doc_start[g + 1] = at + n;
}

static void end_wave(zs_dyncp_plan *p)
{
    p->wave_start[++p->nwaves] = p->ngroups;
}

static int doc_error(zs_err *e, int32_t d, int32_t len, const char *fix, const char *what, long a,
                     long b)
{
    char w[64];
    snprintf(w, sizeof w, "document %d of the batch", d);
    return zs_err_set(e, ZS_EINPUT, w, fix, "%s (%d tokens; %ld, %ld)", what, len, a, b);
}

/* One wave's groups while it is being placed. */
typedef struct wave {
    int n, used; /* groups; slots taken: [0, used) */
    int *first, *size;
    double *work;  /* per group: work on each of its ranks (len^2 / size summed) */
    int64_t *pack; /* per group: packed tokens per rank */
    double top;    /* the largest work on any rank */
} wave;

/* Places rem[0 .. nrem) (longest first) into one wave: grp[i] is the
 * group of rem[i], or -1 when it waits. */
static void place_wave(wave *w, const int32_t *len, const int32_t *rem, int nrem, int nslots,
                       long max_seqlen, int min_cp, int *grp)
{
    double bound = (double)len[rem[0]] * (double)max_seqlen * (1.0 + DYNCP_CAP_DELTA);
    w->n = w->used = 0;
    w->top = 0;
    for (int i = 0; i < nrem; i++) {
        int32_t L = len[rem[i]];
        int best_g = -1, best_new = 0;
        double best = 0;
        int n0 = zs_dyncp_needed(L, max_seqlen, min_cp, nslots);
        /* The wave's first (longest) document opens it on its smallest
         * group: with no work placed yet, a larger one would always look
         * better. */
        for (int cp = n0; cp > 0 && cp <= nslots && (i == 0 ? cp == n0 : 1); cp *= 2) {
            double cost = (double)L * (double)L / cp;
            int64_t share = zs_dyncp_share(L, cp);
            for (int g = 0; g < w->n; g++) {
                if (w->size[g] != cp || w->pack[g] + share > max_seqlen)
                    continue;
                double proj = w->work[g] + cost > w->top ? w->work[g] + cost : w->top;
                if (proj <= bound && (best_g < 0 && !best_new ? 1 : proj < best)) {
                    best = proj;
                    best_g = g;
                    best_new = 0;
                }
            }
            if (nslots - w->used >= cp) {
                /* Free slots have no work yet. */
                double proj = cost > w->top ? cost : w->top;
                if (proj <= bound && (best_g < 0 && !best_new ? 1 : proj < best)) {
                    best = proj;
                    best_g = -1;
                    best_new = cp;
                }
            }
        }
        grp[i] = -1;
        if (best_g < 0 && !best_new)
            continue;
        int g = best_g;
        if (best_new) {
            g = w->n++;
            w->first[g] = w->used;
            w->size[g] = best_new;
            w->work[g] = 0;
            w->pack[g] = 0;
            w->used += best_new;
        }
        w->work[g] += (double)L * (double)L / w->size[g];
        w->pack[g] += zs_dyncp_share(L, w->size[g]);
        if (w->work[g] > w->top)
            w->top = w->work[g];
        grp[i] = g;
    }
}

/* Fills the wave's free slots by doubling its smallest group; returns 0
 * when some group could not double (the caller falls back). */
static int fill_wave(wave *w, int nslots)
{
    while (w->used < nslots) {
        int min = nslots;
        for (int g = 0; g < w->n; g++)
            if (w->size[g] < min)
                min = w->size[g];
        int next = 2 * min < nslots ? 2 * min : nslots, need = next - min, found = -1;
        for (int g = 0; g < w->n && found < 0; g++)
            if (w->size[g] == min && w->first[g] + min - 1 + need < nslots &&
                w->used + need <= nslots)
                found = g;
        if (found < 0 || need == 0)
            return 0;
        int end = w->first[found] + min - 1;
        for (int g = 0; g < w->n; g++)
            if (w->first[g] > end)
                w->first[g] += need;
        w->size[found] = next;
        w->used += need;
    }
    return 1;
}

/* The fallback: one group of all slots with the longest documents that
 * fit. */
static void full_wave(wave *w, const int32_t *len, const int32_t *rem, int nrem, int nslots,
                      long max_seqlen, int *grp)
{
    int64_t acc = 0;
    w->n = 1;
    w->first[0] = 0;
    w->size[0] = nslots;
    w->used = nslots;
    for (int i = 0; i < nrem; i++) {
        int64_t share = zs_dyncp_share(len[rem[i]], nslots);
        grp[i] = acc + share <= max_seqlen ? 0 : -1;
        if (grp[i] == 0)
            acc += share;
    }
}

int zs_dyncp_dynamic(const int32_t *len, int32_t ndocs, int nslots, long max_seqlen, int min_cp,
                     zs_dyncp_plan *out, zs_err *e)
{
    for (int32_t d = 0; d < ndocs; d++)
        if (zs_dyncp_needed(len[d], max_seqlen, min_cp, nslots) == 0)
            return doc_error(e, d, len[d],
                             "raise max_seqlen (up to one GPU's capacity) or use more GPUs",
                             "no power-of-two group of the DP x CP slots holds it within "
                             "max_seqlen tokens per GPU (max_seqlen, slots)",
                             max_seqlen, nslots);
    zs_dyncp_plan p;
    int rc = plan_alloc(&p, ndocs, nslots, e);
    if (rc)
        return rc;
    size_t ns = (size_t)nslots, nd = (size_t)(ndocs > 0 ? ndocs : 1);
    wave w = {0};
    int32_t *rem = malloc(sizeof(int32_t) * nd), *buf = malloc(sizeof(int32_t) * nd);
    int *grp = malloc(sizeof(int) * nd);
    w.first = malloc(sizeof(int) * ns);
    w.size = malloc(sizeof(int) * ns);
    w.work = malloc(sizeof(double) * ns);
    w.pack = malloc(sizeof(int64_t) * ns);
    if (!rem || !buf || !grp || !w.first || !w.size || !w.work || !w.pack) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int32_t d = 0; d < ndocs; d++)
        rem[d] = d;
    if (zs_sort_longest_first(rem, ndocs, len) != 0) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int nrem = ndocs;
    while (nrem > 0) {
        place_wave(&w, len, rem, nrem, nslots, max_seqlen, min_cp, grp);
        if (!fill_wave(&w, nslots))
            full_wave(&w, len, rem, nrem, nslots, max_seqlen, grp);
        for (int g = 0; g < w.n; g++) {
            int n = 0;
            for (int i = 0; i < nrem; i++)
                if (grp[i] == g)
                    buf[n++] = rem[i];
            add_group(&p, w.first[g], w.size[g], buf, n);
        }
        end_wave(&p);
        int left = 0;
        for (int i = 0; i < nrem; i++)
            if (grp[i] < 0)
                rem[left++] = rem[i];
        nrem = left;
    }
out:
    free(rem);
    free(buf);
    free(grp);
    free(w.first);
    free(w.size);
    free(w.work);
    free(w.pack);
    if (rc) {
        zs_dyncp_plan_free(&p);
        return rc;
    }
    *out = p;
    return ZS_OK;
}

int zs_dyncp_static(const int32_t *len, int32_t ndocs, int cp, int dp, long max_seqlen,
                    zs_dyncp_plan *out, zs_err *e)
{
    for (int32_t d = 0; d < ndocs; d++)
        if (zs_dyncp_share(len[d], cp) > max_seqlen)
            return doc_error(e, d, len[d], "raise max_seqlen (up to one GPU's capacity) or cp",
                             "its share on a CP group exceeds max_seqlen tokens per GPU "
                             "(max_seqlen, cp)",
                             max_seqlen, cp);
    zs_dyncp_plan p;
    size_t nd = (size_t)(ndocs > 0 ? ndocs : 1);
    /* pack_of[i]: the pack of the i-th document in batch order (packs are
     * consecutive runs, and moved documents become packs of their own). */
    int *pack_of = malloc(sizeof(int) * nd), *cnt = calloc(nd + (size_t)dp, sizeof(int));
    int32_t *order = malloc(sizeof(int32_t) * nd);
    int rc = !pack_of || !cnt || !order ? zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory")
                                        : plan_alloc(&p, ndocs + dp, cp * dp, e);
    if (rc)
        goto out;
    int npacks = 0;
    int64_t acc = 0;
    for (int32_t d = 0; d < ndocs; d++) {
        int64_t share = zs_dyncp_share(len[d], cp);
        if (npacks == 0 || acc + share > max_seqlen) {
            npacks++;
            acc = 0;
        }
        acc += share;
        pack_of[d] = npacks - 1;
        cnt[npacks - 1]++;
    }
    /* Megatron raises the number of packs to a multiple of dp: the last
     * document of the last pack holding several becomes a pack of its own. */
    int move = npacks % dp ? dp - npacks % dp : 0;
    for (int32_t d = ndocs - 1; d >= 0 && move > 0; d--) {
        int k = pack_of[d];
        if (k < 0 || cnt[k] < 2)
            continue;
        /* d is the last document of pack k still in it (documents of a pack
         * are consecutive and are taken from its end). */
        cnt[k]--;
        pack_of[d] = npacks++;
        cnt[pack_of[d]] = 1;
        move--;
    }
    int nmicro = (npacks + dp - 1) / dp;
    for (int m = 0; m < nmicro; m++) {
        for (int j = 0; j < dp; j++) {
            int k = m * dp + j, n = 0;
            for (int32_t d = 0; d < ndocs; d++)
                if (pack_of[d] == k)
                    order[n++] = d;
            if (n > 0)
                add_group(&p, j * cp, cp, order, n);
        }
        end_wave(&p);
    }
out:
    free(pack_of);
    free(cnt);
    free(order);
    if (rc)
        return rc;
    *out = p;
    return ZS_OK;
}

/* FlexSP's solver, reconstructed: see zs_flexsp_solve_internal.h. */
#include "zs_flexsp_solve_internal.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "zs_sort.h"

/* The branch and bound stops trying assignments past this many search
 * nodes per multiset of group sizes (and falls back to the greedy one), so
 * a planning step stays bounded whatever exact_max says. */
#define FLEXSP_BB_NODES 2000000L

int zs_flexsp_min_sp(int32_t len, long cap, int min_sp)
{
    int64_t n = min_sp > 1 ? min_sp : 1;
    while (n * (int64_t)cap < (int64_t)len && n < (1L << 30))
        n *= 2;
    return (int)n;
}

/* A partition of len[0..n) into k contiguous parts by dynamic programming
 * over prefix sums P: row k of dp holds, per end i, the best cost of k parts
 * ending at i, and arg the end of the part before (the first on ties, as
 * the released DP). Rows are filled one at a time. */
typedef struct part_dp {
    size_t w; /* n + 1: a row */
    int64_t *P, *dp;
    int *arg;
} part_dp;

static int part_dp_new(const int32_t *len, int n, int rows, part_dp *t)
{
    t->w = (size_t)n + 1;
    t->P = malloc(sizeof(int64_t) * t->w);
    t->dp = malloc(sizeof(int64_t) * t->w * ((size_t)rows + 1));
    t->arg = malloc(sizeof(int) * t->w * ((size_t)rows + 1));
    if (!t->P || !t->dp || !t->arg) {
        free(t->P);
        free(t->dp);
        free(t->arg);
        return -1;
    }
    t->P[0] = 0;
    for (int i = 1; i <= n; i++)
        t->P[i] = t->P[i - 1] + len[i - 1];
    for (size_t i = 0; i < t->w; i++)
        t->dp[i] = i == 0 ? 0 : INT64_MAX;
    return 0;
}

static void part_dp_free(part_dp *t)
{
    free(t->P);
    free(t->dp);
    free(t->arg);
}

/* Fills row k of the chunking DP: a part costs its tokens, the largest
 * part counting. */
static void chunk_row(part_dp *t, int n, int k)
{
    size_t w = t->w;
    const int64_t *P = t->P;
    int64_t *cur = t->dp + (size_t)k * w, *prev = cur - w;
    for (int i = 0; i <= n; i++) {
        cur[i] = INT64_MAX;
        for (int j = k - 1; j < i; j++) {
            if (prev[j] == INT64_MAX)
                continue;
            int64_t run = P[i] - P[j];
            int64_t c = prev[j] > run ? prev[j] : run;
            if (c < cur[i]) {
                cur[i] = c;
                t->arg[(size_t)k * w + (size_t)i] = j;
            }
        }
    }
}

/* Row k of the padding DP for ends lo..hi, whose first-on-ties best
 * previous ends lie in [jlo, jhi]. A part's padding, sum over it of (its
 * longest - len), satisfies the quadrangle inequality for ascending
 * lengths, so the first best previous end never decreases with the end
 * (Knuth; Yao 1980): the middle end's scan bounds both halves', and a row
 * costs O(n log n) instead of O(n^2) with the same costs and ties (integer
 * arithmetic: the scan in each range finds the very j the full scan does).
 * Recursion depth log2(n). */
static void pad_row_dc(part_dp *t, const int32_t *len, int k, int lo, int hi, int jlo, int jhi)
{
    if (lo > hi)
        return;
    int mid = lo + (hi - lo) / 2;
    const int64_t *P = t->P, *prev = t->dp + (size_t)(k - 1) * t->w;
    int64_t best = INT64_MAX;
    int bj = -1, top = jhi < mid - 1 ? jhi : mid - 1;
    for (int j = jlo; j <= top; j++) {
        if (prev[j] == INT64_MAX)
            continue;
        int64_t c = prev[j] + (int64_t)len[mid - 1] * (mid - j) - (P[mid] - P[j]);
        if (c < best) {
            best = c;
            bj = j;
        }
    }
    t->dp[(size_t)k * t->w + (size_t)mid] = best;
    if (bj >= 0)
        t->arg[(size_t)k * t->w + (size_t)mid] = bj;
    pad_row_dc(t, len, k, lo, mid - 1, jlo, bj >= 0 ? bj : jhi);
    pad_row_dc(t, len, k, mid + 1, hi, bj >= 0 ? bj : jlo, jhi);
}

/* Row k of the padding DP: a part costs the padding of its documents to
 * its longest, summed over parts. */
static void pad_row(part_dp *t, const int32_t *len, int n, int k)
{
    int64_t *cur = t->dp + (size_t)k * t->w;
    for (int i = 0; i < k && i <= n; i++)
        cur[i] = INT64_MAX; /* fewer ends than parts */
    pad_row_dc(t, len, k, k, n, k - 1, n - 1);
}

/* Bucketing DP over ascending lengths: B buckets (or, with limit >= 0, the
 * first B >= B0 whose padded tokens are at most limit); fills bound and
 * *used; returns the padded tokens, or -1 when out of memory. */
static int64_t bucket_dp(const int32_t *len, int n, int B0, int64_t limit, int32_t *bound,
                         int *used)
{
    if (n <= 0) {
        *used = 0;
        return 0;
    }
    int Bmax = limit >= 0 ? n : (B0 < n ? B0 : n);
    if (B0 > n)
        B0 = n;
    part_dp t;
    if (part_dp_new(len, n, Bmax, &t))
        return -1;
    int B = 0;
    for (int b = 1; b <= Bmax; b++) {
        pad_row(&t, len, n, b);
        B = b;
        if (b >= B0 && (limit < 0 || t.P[n] + t.dp[(size_t)b * t.w + (size_t)n] <= limit || b == n))
            break;
    }
    int i = n;
    for (int b = B; b > 0; b--) {
        int j = t.arg[(size_t)b * t.w + (size_t)i];
        for (int k = j; k < i; k++)
            bound[k] = len[i - 1];
        i = j;
    }
    int64_t padded = t.P[n] + t.dp[(size_t)B * t.w + (size_t)n];
    part_dp_free(&t);
    *used = B;
    return padded;
}

int64_t zs_flexsp_bucket(const int32_t *len, int n, int B, int32_t *bound)
{
    int used;
    return bucket_dp(len, n, B > 0 ? B : 1, -1, bound, &used);
}

int zs_flexsp_chunk(const int32_t *len, int n, int m, int *cut)
{
    if (m < 1 || n < m)
        return -1;
    part_dp t;
    if (part_dp_new(len, n, m, &t))
        return -1;
    for (int k = 1; k <= m; k++)
        chunk_row(&t, n, k);
    int i = n;
    cut[m] = n;
    for (int k = m; k > 0; k--) {
        i = t.arg[(size_t)k * t.w + (size_t)i];
        cut[k - 1] = i;
    }
    part_dp_free(&t);
    return 0;
}

void zs_flexsp_plan_free(zs_flexsp_plan *p)
{
    if (!p)
        return;
    free(p->micro_start);
    free(p->first);
    free(p->size);
    free(p->doc_start);
    free(p->docs);
    free(p->pred);
    free(p->nbuckets);
    memset(p, 0, sizeof *p);
}

/* One micro-batch's planner problem while multisets of group sizes are
 * enumerated: the items longest first, their costs per group size, the
 * multiset under evaluation and the best plan so far. */
typedef struct micro {
    const zs_flexsp_cfg *cfg;
    int n, K;
    const int32_t *plen; /* per item */
    const int *need;     /* per item: the smallest size index it fits */
    const double *c;     /* c[i * K + k]: item i on a group of size index k */
    int G, nonempty;
    int *gk;        /* per group: its size index (largest first) */
    double *load;   /* per group: predicted seconds */
    int64_t *tok;   /* per group: planning tokens */
    int *cnt, *asg; /* per group: items; per item: its group */
    long nodes;
    double best; /* the best largest group time so far (all multisets) */
    int best_G, *best_gk, *best_asg;
} micro;

static int size_of(const micro *M, int k)
{
    return M->cfg->min_sp << k;
}

static int fits(const micro *M, int i, int g)
{
    return M->gk[g] >= M->need[i] &&
           M->tok[g] + M->plen[i] <= (int64_t)M->cfg->cap * size_of(M, M->gk[g]);
}

static void record(micro *M, double top)
{
    M->best = top;
    M->best_G = M->G;
    memcpy(M->best_gk, M->gk, sizeof(int) * (size_t)M->G);
    memcpy(M->best_asg, M->asg, sizeof(int) * (size_t)M->n);
}

static void reset(micro *M)
{
    for (int g = 0; g < M->G; g++) {
        M->load[g] = 0;
        M->tok[g] = 0;
        M->cnt[g] = 0;
    }
}

static void put(micro *M, int i, int g, int sign)
{
    M->load[g] += sign * M->c[(size_t)i * M->K + M->gk[g]];
    M->tok[g] += sign * M->plen[i];
    M->cnt[g] += sign;
    M->asg[i] = sign > 0 ? g : -1;
}

/* The greedy assignment: each item, longest first, to the group that
 * would finish it first (the first such group on ties). */
static void greedy(micro *M)
{
    reset(M);
    double top = 0;
    for (int i = 0; i < M->n; i++) {
        int best = -1;
        double t = 0;
        for (int g = 0; g < M->G; g++) {
            if (!fits(M, i, g))
                continue;
            double nl = M->load[g] + M->c[(size_t)i * M->K + M->gk[g]];
            if (best < 0 || nl < t) {
                best = g;
                t = nl;
            }
        }
        if (best < 0 || t >= M->best)
            return; /* infeasible, or no better than the best so far */
        put(M, i, best, 1);
        if (t > top)
            top = t;
    }
    for (int g = 0; g < M->G && M->nonempty; g++)
        if (M->cnt[g] == 0)
            return;
    record(M, top);
}

/* Branch and bound over assignments of items i.. given the partial one;
 * top is the largest group time so far. Identical groups (same size, same
 * load and tokens) are tried once. */
static void search(micro *M, int i, double top)
{
    if (++M->nodes > FLEXSP_BB_NODES)
        return;
    int empty = 0;
    for (int g = 0; g < M->G; g++)
        empty += M->cnt[g] == 0;
    if (M->nonempty && M->n - i < empty)
        return;
    if (i == M->n) {
        if (top < M->best)
            record(M, top);
        return;
    }
    for (int g = 0; g < M->G; g++) {
        if (!fits(M, i, g))
            continue;
        int twin = 0;
        for (int h = 0; h < g && !twin; h++)
            twin = M->gk[h] == M->gk[g] && M->load[h] == M->load[g] && M->tok[h] == M->tok[g];
        double nl = M->load[g] + M->c[(size_t)i * M->K + M->gk[g]];
        if (twin || nl >= M->best)
            continue;
        put(M, i, g, 1);
        search(M, i + 1, nl > top ? nl : top);
        put(M, i, g, -1);
    }
}

/* Evaluates the multiset in gk[0 .. G): the greedy assignment, then the
 * exhaustive one when the micro-batch is small; either is recorded when it
 * beats the best so far. */
static void evaluate(micro *M)
{
    greedy(M);
    if (M->n <= M->cfg->exact_max) {
        reset(M);
        M->nodes = 0;
        search(M, 0, 0);
    }
}

/* Sets gk from counts per size index, largest sizes first. */
static void from_counts(micro *M, const int *cnt)
{
    M->G = 0;
    for (int k = M->K - 1; k >= 0; k--)
        for (int j = 0; j < cnt[k]; j++)
            M->gk[M->G++] = k;
}

/* The local search for clusters too large to enumerate: from each
 * partition into as many groups of one size as fit (the rest filled with
 * the next smaller sizes), repeatedly take the best of the multisets one
 * split (a group into two halves) or one merge (two equal groups into one)
 * away, while that improves the largest group time. */
static void climb(micro *M)
{
    int cnt[32], cur[32];
    for (int k = 0; k < M->K; k++) {
        int left = M->cfg->nslots;
        for (int j = M->K - 1; j >= 0; j--) {
            cnt[j] = j <= k ? left / size_of(M, j) : 0;
            left -= cnt[j] * size_of(M, j);
        }
        from_counts(M, cnt);
        evaluate(M);
    }
    for (double before = DBL_MAX; M->best < before;) {
        before = M->best;
        memset(cur, 0, sizeof cur);
        for (int g = 0; g < M->best_G; g++)
            cur[M->best_gk[g]]++;
        for (int k = 0; k < M->K; k++) {
            memcpy(cnt, cur, sizeof cnt);
            if (k > 0 && cur[k] > 0) { /* split */
                cnt[k]--;
                cnt[k - 1] += 2;
                from_counts(M, cnt);
                evaluate(M);
            }
            memcpy(cnt, cur, sizeof cnt);
            if (k + 1 < M->K && cur[k] >= 2) { /* merge */
                cnt[k] -= 2;
                cnt[k + 1]++;
                from_counts(M, cnt);
                evaluate(M);
            }
        }
    }
}

/* Enumerates the multisets of group sizes (size indices k and below) that
 * fill `left` slots, largest sizes first, and evaluates each complete one. */
static void enumerate(micro *M, int k, int left)
{
    if (left == 0) {
        evaluate(M);
        return;
    }
    if (k < 0)
        return;
    int s = size_of(M, k), G0 = M->G;
    for (int c = left / s; c >= 0; c--) {
        M->G = G0;
        for (int j = 0; j < c; j++)
            M->gk[M->G++] = k;
        enumerate(M, k - 1, left - c * s);
    }
    M->G = G0;
}

/* The per-item tables of a micro-batch: the sizes each item fits and its
 * cost on each. 1 when every item fits some size, 0 when one does not. */
static int tables(micro *M, int *need, double *c)
{
    const zs_flexsp_cfg *cfg = M->cfg;
    for (int i = 0; i < M->n; i++) {
        int s = zs_flexsp_min_sp(M->plen[i], cfg->cap, cfg->min_sp), k = 0;
        while (size_of(M, k) < s)
            k++;
        if (k >= M->K)
            return 0;
        need[i] = k;
        for (int j = 0; j < M->K; j++)
            c[(size_t)i * M->K + j] =
                j >= k ? cfg->cost(cfg->cost_arg, M->plen[i], size_of(M, j)) : 0;
    }
    return 1;
}

int zs_flexsp_plan_micro(const zs_flexsp_cfg *cfg, const int32_t *plen, int n, int *ngroups,
                         int *size, int *first, int *grp, double *pred)
{
    micro M = {.cfg = cfg, .n = n, .best = DBL_MAX};
    while ((cfg->min_sp << M.K) <= cfg->max_sp && (cfg->min_sp << M.K) <= cfg->nslots)
        M.K++;
    size_t nn = (size_t)(n > 0 ? n : 1), G = (size_t)cfg->nslots / (size_t)cfg->min_sp + 1;
    int32_t *order = malloc(sizeof(int32_t) * nn), *pl = malloc(sizeof(int32_t) * nn);
    int *need = malloc(sizeof(int) * nn), *asg = malloc(sizeof(int) * nn);
    int *best_asg = malloc(sizeof(int) * nn);
    double *c = malloc(sizeof(double) * nn * (size_t)(M.K > 0 ? M.K : 1));
    M.gk = malloc(sizeof(int) * G);
    M.best_gk = malloc(sizeof(int) * G);
    M.cnt = malloc(sizeof(int) * G);
    M.load = malloc(sizeof(double) * G);
    M.tok = malloc(sizeof(int64_t) * G);
    int rc = -1;
    if (!order || !pl || !need || !asg || !best_asg || !c || !M.gk || !M.best_gk || !M.cnt ||
        !M.load || !M.tok)
        goto out;
    for (int i = 0; i < n; i++)
        order[i] = i;
    if (zs_sort_longest_first(order, n, plen) != 0)
        goto out;
    for (int i = 0; i < n; i++)
        pl[i] = plen[order[i]];
    M.plen = pl;
    M.need = need;
    M.c = c;
    M.asg = asg;
    M.best_asg = best_asg;
    rc = 0;
    if (M.K == 0 || cfg->nslots % cfg->min_sp != 0 || !tables(&M, need, c))
        goto out;
    /* Every group used (the released MILP's constraint); when no multiset
     * can use all its groups (fewer sequences than any partition needs),
     * groups may stay idle. */
    for (M.nonempty = 1; M.nonempty >= 0 && M.best == DBL_MAX; M.nonempty--) {
        if (cfg->nslots / cfg->min_sp <= ZS_FLEXSP_ENUM_UNITS)
            enumerate(&M, M.K - 1, cfg->nslots);
        else
            climb(&M);
    }
    if (M.best == DBL_MAX)
        goto out;
    int at = 0;
    for (int g = 0; g < M.best_G; g++) {
        size[g] = size_of(&M, M.best_gk[g]);
        first[g] = at;
        at += size[g];
    }
    for (int i = 0; i < n; i++)
        grp[order[i]] = best_asg[i];
    *ngroups = M.best_G;
    *pred = M.best;
    rc = 1;
out:
    free(order);
    free(pl);
    free(need);
    free(asg);
    free(best_asg);
    free(c);
    free(M.gk);
    free(M.best_gk);
    free(M.cnt);
    free(M.load);
    free(M.tok);
    return rc;
}

/* The planning lengths of a run (longest first): its bucket bounds, with
 * B growing from cfg->buckets until the padded tokens are at most half way
 * from the run's tokens to the cluster's capacity (the released rule).
 * Returns the buckets used, or -1 when out of memory. */
static int run_bounds(const zs_flexsp_cfg *cfg, const int32_t *len, int n, int32_t *plen)
{
    if (cfg->buckets <= 0 || n <= cfg->buckets) {
        memcpy(plen, len, sizeof(int32_t) * (size_t)n);
        return 0;
    }
    int32_t *asc = malloc(sizeof(int32_t) * (size_t)n),
            *bound = malloc(sizeof(int32_t) * (size_t)n);
    int used = -1;
    if (asc && bound) {
        int64_t total = 0;
        for (int i = 0; i < n; i++) {
            asc[i] = len[n - 1 - i];
            total += len[i];
        }
        int64_t limit = (total + (int64_t)cfg->cap * cfg->nslots) / 2;
        if (bucket_dp(asc, n, cfg->buckets, limit, bound, &used) < 0)
            used = -1;
        for (int i = 0; i < n && used >= 0; i++)
            plen[i] = bound[n - 1 - i];
    }
    free(asc);
    free(bound);
    return used;
}

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Work space of one attempt with m micro-batches. */
typedef struct attempt {
    int *cut, *ng, *size, *first, *grp; /* grp: per position in the longest-first order */
    int32_t *plen;
    double *pred;
    int *nb;
} attempt;

/* Tries m micro-batches: 1 feasible, 0 not, -1 out of memory. */
static int try_m(const zs_flexsp_cfg *cfg, const int32_t *L, int n, int m, attempt *A)
{
    int G = cfg->nslots / cfg->min_sp;
    int64_t clus = (int64_t)cfg->cap * cfg->nslots;
    if (zs_flexsp_chunk(L, n, m, A->cut) != 0)
        return -1;
    for (int r = 0; r < m; r++) {
        int64_t t = 0;
        for (int i = A->cut[r]; i < A->cut[r + 1]; i++)
            t += L[i];
        if (t > clus)
            return 0;
    }
    for (int r = 0; r < m; r++) {
        int a = A->cut[r], k = A->cut[r + 1] - a;
        A->nb[r] = run_bounds(cfg, L + a, k, A->plen + a);
        if (A->nb[r] < 0)
            return -1;
        int rc = zs_flexsp_plan_micro(cfg, A->plen + a, k, &A->ng[r], A->size + (size_t)r * G,
                                      A->first + (size_t)r * G, A->grp + a, &A->pred[r]);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

static int plan_alloc(zs_flexsp_plan *p, int m, int G, int32_t n)
{
    size_t gm = (size_t)m * (size_t)G + 1;
    memset(p, 0, sizeof *p);
    p->micro_start = calloc((size_t)m + 1, sizeof(int));
    p->first = malloc(sizeof(int) * gm);
    p->size = malloc(sizeof(int) * gm);
    p->doc_start = calloc(gm + 1, sizeof(int));
    p->docs = malloc(sizeof(int32_t) * ((size_t)n + 1));
    p->pred = calloc((size_t)m + 1, sizeof(double));
    p->nbuckets = calloc((size_t)m + 1, sizeof(int));
    return p->micro_start && p->first && p->size && p->doc_start && p->docs && p->pred &&
                   p->nbuckets
               ? 0
               : -1;
}

/* Writes the feasible attempt into p: per micro-batch its groups, each
 * group's documents in batch order. */
static int assemble(const attempt *A, const int32_t *order, int m, int G, int32_t n, int nslots,
                    zs_flexsp_plan *p)
{
    if (plan_alloc(p, m, G, n) != 0)
        return -1;
    p->nslots = nslots;
    p->nmicro = m;
    int32_t *run = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int *pos = malloc(sizeof(int) * ((size_t)n + 1));
    if (!run || !pos) {
        free(run);
        free(pos);
        return -1;
    }
    for (int i = 0; i < n; i++)
        pos[order[i]] = i;
    int at = 0;
    for (int r = 0; r < m; r++) {
        int a = A->cut[r], k = A->cut[r + 1] - a;
        memcpy(run, order + a, sizeof(int32_t) * (size_t)k);
        qsort(run, (size_t)k, sizeof(int32_t), cmp_int32);
        for (int g = 0; g < A->ng[r]; g++) {
            int gi = p->ngroups++;
            p->first[gi] = A->first[(size_t)r * G + g];
            p->size[gi] = A->size[(size_t)r * G + g];
            for (int i = 0; i < k; i++)
                if (A->grp[pos[run[i]]] == g)
                    p->docs[at++] = run[i];
            p->doc_start[gi + 1] = at;
        }
        p->micro_start[r + 1] = p->ngroups;
        p->pred[r] = A->pred[r];
        p->nbuckets[r] = A->nb[r];
    }
    free(run);
    free(pos);
    return 0;
}

int zs_flexsp_solve(const int32_t *len, int32_t ndocs, const zs_flexsp_cfg *cfg,
                    zs_flexsp_plan *out, zs_err *e)
{
    for (int32_t d = 0; d < ndocs; d++)
        if (zs_flexsp_min_sp(len[d], cfg->cap, cfg->min_sp) > cfg->max_sp) {
            char w[64];
            snprintf(w, sizeof w, "document %d of the batch", d);
            return zs_err_set(e, ZS_EINPUT, w,
                              "use more GPUs, recomputation, a higher ZeRO stage or a shorter "
                              "context",
                              "%d tokens need a group of %d GPUs at %ld tokens per GPU, but "
                              "groups have at most %d (max_sp)",
                              len[d], zs_flexsp_min_sp(len[d], cfg->cap, cfg->min_sp), cfg->cap,
                              cfg->max_sp);
        }
    size_t n1 = (size_t)ndocs + 1, G = (size_t)(cfg->nslots / cfg->min_sp);
    int32_t *order = zs_order_longest_first(len, ndocs), *L = malloc(sizeof(int32_t) * n1);
    attempt A = {0};
    int rc = ZS_OK, m = 0, ok = 0;
    if (!order || !L)
        goto oom;
    int64_t total = 0, clus = (int64_t)cfg->cap * cfg->nslots;
    for (int32_t i = 0; i < ndocs; i++) {
        L[i] = len[order[i]];
        total += L[i];
    }
    m = (int)((total + clus - 1) / clus);
    if (m < 1)
        m = 1;
    for (; ndocs > 0 && m <= ndocs && !ok; m += !ok) {
        free(A.cut);
        free(A.ng);
        free(A.size);
        free(A.first);
        free(A.pred);
        free(A.nb);
        A.cut = malloc(sizeof(int) * ((size_t)m + 1));
        A.ng = malloc(sizeof(int) * (size_t)m);
        A.size = malloc(sizeof(int) * (size_t)m * G);
        A.first = malloc(sizeof(int) * (size_t)m * G);
        A.pred = malloc(sizeof(double) * (size_t)m);
        A.nb = malloc(sizeof(int) * (size_t)m);
        if (!A.grp)
            A.grp = malloc(sizeof(int) * n1);
        if (!A.plen)
            A.plen = malloc(sizeof(int32_t) * n1);
        if (!A.cut || !A.ng || !A.size || !A.first || !A.pred || !A.nb || !A.grp || !A.plen)
            goto oom;
        ok = try_m(cfg, L, ndocs, m, &A);
        if (ok < 0)
            goto oom;
    }
    if (ndocs > 0 && !ok) {
        rc = zs_err_set(e, ZS_EINPUT, "flexsp", "use more GPUs or a smaller batch",
                        "no cut of the batch into micro-batches has a feasible plan");
        goto out;
    }
    if (assemble(&A, order, ndocs > 0 ? m : 0, (int)G, ndocs, cfg->nslots, out) != 0) {
        zs_flexsp_plan_free(out);
        goto oom;
    }
    goto out;
oom:
    rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
out:
    free(order);
    free(L);
    free(A.cut);
    free(A.ng);
    free(A.size);
    free(A.first);
    free(A.grp);
    free(A.plen);
    free(A.pred);
    free(A.nb);
    return rc;
}

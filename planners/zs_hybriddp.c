/* The `hybrid-dp` planner: ByteScale-style hybrid data / context
 * parallelism inside each CP group (the DP group of cp GPUs that gets its
 * share of the batch like every other baseline).
 *
 * A document that fits one GPU's token capacity (whole_max) goes whole to
 * one GPU (data parallel, no attention communication). A longer one goes to
 * a ring of the smallest power-of-two number n of consecutive GPUs (aligned
 * to n inside the group) whose zigzag shares (padded to a multiple of 2n)
 * fit; when no
 * free aligned block of n GPUs has room it joins an existing ring of n GPUs
 * that has room, else the next power of two is tried. Work is balanced by
 * FLOPs (attention + linear forward FLOPs, not predicted time): long
 * documents first, each to the candidate ring whose busiest member ends
 * lowest (its FLOPs charged evenly to the members), then the short ones by
 * LPT to the GPU with the fewest FLOPs that has room. A GPU may hold
 * several local documents and belong to at most one ring; a ring may carry
 * several documents. Per GPU the ring's attention (ring steps overlapped
 * with their KV transfers) runs first, then one attention op over its
 * local documents. Linear modules run on the same layout (no remapping).
 * Options: cp=N (default 16), tp=N (default 1), whole_max=N (default: each
 * GPU's even share of the batch, capped by the memory model's capacity;
 * ByteScale's per-GPU budget is a setting, and a higher one trades balance
 * for less communication). */
#include <limits.h>
#include <stdlib.h>

#include "zs_cpgroup.h"
#include "zs_ring.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, or all GPUs / tp when fewer",
                   "GPUs per group that share a slice of the batch (rings stay inside a group)");
/* Its upper bound, one GPU's capacity, depends on the model and cluster:
 * whole_max() checks it. */
static const zs_opt_spec opt_whole_max = {
    .key = "whole_max",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = LONG_MAX,
    .computed = "each GPU's share of the batch, at most its capacity",
    .help = "longest document kept whole on one GPU (at most its capacity); longer ones go to "
            "rings whose shares stay within N"};

typedef struct hdp {
    zs_cpg c;
    int cp_stream;
    long whole;    /* longest document kept whole on one GPU; also the ring share bound */
    int *slots;    /* identity: a ring of n slots from first is slots + first */
    int *doc_slot; /* per document: its GPU's slot, or -1 for ring documents */
    int *doc_ring; /* per document: its ring, or -1 */
    int nrings;
    int *ring_first, *ring_n; /* per ring: first slot and size */
    int32_t *ring_docs;       /* documents of ring r: ring_docs[ring_start[r] ..) */
    int *ring_start;
    int32_t *slot_docs; /* local documents of slot s: slot_docs[slot_start[s] ..) */
    int *slot_start;
    int64_t *lin; /* per slot: tokens held (ring shares padded) */
} hdp;

typedef struct item {
    double w;
    int32_t len, doc;
} item;

static int cmp_desc(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return x->doc < y->doc ? -1 : (x->doc > y->doc);
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    hdp *H = arg;
    const zs_cpg *c = &H->c;
    (void)micro;
    int64_t *dep = malloc(sizeof(int64_t) * (size_t)c->nslots);
    if (!dep)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int rc = ZS_OK;
    for (int sl = 0; sl < c->nslots; sl++)
        dep[sl] = zs_iter_entry(it, sl);
    for (int r = 0; r < H->nrings && rc == ZS_OK; r++) {
        zs_ring_spec rs = {H->ring_n[r],
                           H->slots + H->ring_first[r],
                           H->ring_start[r + 1] - H->ring_start[r],
                           H->ring_docs + H->ring_start[r],
                           ZS_RING_PAD,
                           H->cp_stream,
                           "ring",
                           NULL,
                           NULL,
                           ZS_CPL_ZIGZAG};
        rc = zs_ring_emit(it, stage, &rs, backward, dep + H->ring_first[r], e);
    }
    for (int sl = 0; sl < c->nslots && rc == ZS_OK; sl++) {
        int n = H->slot_start[sl + 1] - H->slot_start[sl];
        rc = zs_cpg_local_attn(it, stage, sl, H->slot_docs + H->slot_start[sl], n, 0, backward,
                               &dep[sl], e);
        zs_iter_set_exit(it, sl, dep[sl]);
    }
    free(dep);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

static double doc_flops(const zs_model *m, int32_t len)
{
    return zs_model_attn_flops_causal(m, len) + zs_model_linear_flops_per_token(m) * len;
}

static int doc_error(int d, const char *fix, const char *what, int32_t len, int n, zs_err *e)
{
    char w[64];
    snprintf(w, sizeof w, "document %d of the batch", d);
    return zs_err_set(e, ZS_EINPUT, w, fix, "%s (%d tokens, ring of %d GPUs)", what, len, n);
}

/* Places the documents of CP group g: rings for the long ones, LPT for the
 * rest. load/tok/ring are per slot of the whole layout. */
static int place_group(hdp *H, const zs_model *m, int g, const item *items, int nitems,
                       double *load, int64_t *tok, int *ring, int *ring_cap, zs_err *e)
{
    const zs_cpg *c = &H->c;
    int base = zs_cpg_slot(c, g, 0);
    for (int i = 0; i < nitems; i++) {
        int d = items[i].doc;
        int32_t len = items[i].len;
        if (len <= H->whole)
            continue;
        int n = 1;
        while (n < c->cp && zs_cpg_fp_zigzag(len, n) > H->whole)
            n *= 2;
        if (n > c->cp || zs_cpg_fp_zigzag(len, n) > c->cap)
            return doc_error(d, "use a power-of-two cp large enough, or recomputation",
                             "no power-of-two ring inside the CP group holds this document", len, n,
                             e);
        int found = 0;
        for (; n <= c->cp && !found; n *= 2) {
            int64_t share = zs_cpg_fp_zigzag(len, n);
            double best = 0;
            int best_first = -1, best_ring = -1;
            for (int first = 0; first + n <= c->cp; first += n) {
                int sl0 = base + first, r0 = ring[sl0], ok = 1;
                /* Either a free block or exactly an existing ring of n. */
                int existing = r0 >= 0 && H->ring_first[r0] == sl0 && H->ring_n[r0] == n;
                double worst = 0;
                for (int k = 0; k < n && ok; k++) {
                    int sl = sl0 + k;
                    if ((!existing && ring[sl] >= 0) || tok[sl] + share > c->cap)
                        ok = 0;
                    if (load[sl] > worst)
                        worst = load[sl];
                }
                if (!ok)
                    continue;
                double score = worst + items[i].w / n;
                if (best_first < 0 || score < best) {
                    best = score;
                    best_first = sl0;
                    best_ring = existing ? r0 : -1;
                }
            }
            if (best_first < 0)
                continue;
            found = 1;
            if (best_ring < 0) {
                if (H->nrings >= *ring_cap)
                    return zs_err_set(e, ZS_EINVALID, "hybrid-dp", NULL, "too many rings");
                best_ring = H->nrings++;
                H->ring_first[best_ring] = best_first;
                H->ring_n[best_ring] = n;
                for (int k = 0; k < n; k++)
                    ring[best_first + k] = best_ring;
            }
            H->doc_ring[d] = best_ring;
            for (int k = 0; k < n; k++) {
                load[best_first + k] += items[i].w / n;
                tok[best_first + k] += share;
            }
        }
        if (!found)
            return doc_error(d, "use a larger cp, recomputation or a smaller batch",
                             "no ring of GPUs in its CP group has room left for this document", len,
                             n / 2, e);
    }
    for (int i = 0; i < nitems; i++) {
        int d = items[i].doc;
        int32_t len = items[i].len;
        if (len > H->whole)
            continue;
        int best = -1;
        for (int k = 0; k < c->cp; k++) {
            int sl = base + k;
            if (tok[sl] + len <= c->cap && (best < 0 || load[sl] < load[best]))
                best = sl;
        }
        if (best < 0)
            return doc_error(d, "use a larger cp, recomputation or a smaller batch",
                             "no GPU of its CP group has room left for this document", len, 1, e);
        H->doc_slot[d] = best;
        load[best] += items[i].w;
        tok[best] += len;
    }
    (void)m;
    return ZS_OK;
}

static int place(hdp *H, const zs_model *m, zs_schedule *s, zs_err *e)
{
    const zs_cpg *c = &H->c;
    int ns = c->nslots, nd = c->ndocs;
    double *load = calloc((size_t)ns, sizeof(double));
    int64_t *tok = calloc((size_t)ns, sizeof(int64_t));
    int *ring = malloc(sizeof(int) * (size_t)ns);
    item *items = malloc(sizeof(item) * (size_t)nd);
    int ring_cap = ns;
    int rc = ZS_OK;
    if (!load || !tok || !ring || !items) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int sl = 0; sl < ns; sl++)
        ring[sl] = -1;
    for (int d = 0; d < nd; d++)
        H->doc_slot[d] = H->doc_ring[d] = -1;
    for (int g = 0; g < c->dp && !rc; g++) {
        int n = 0;
        for (int i = c->gstart[g]; i < c->gstart[g + 1]; i++) {
            int d = c->gdocs[i];
            items[n++] = (item){doc_flops(m, c->len[d]), c->len[d], d};
        }
        qsort(items, (size_t)n, sizeof *items, cmp_desc);
        rc = place_group(H, m, g, items, n, load, tok, ring, &ring_cap, e);
    }
    if (rc)
        goto out;
    /* Ring and slot document lists, in batch order. */
    for (int d = 0; d < nd; d++) {
        if (H->doc_ring[d] >= 0)
            H->ring_start[H->doc_ring[d] + 1]++;
        else
            H->slot_start[H->doc_slot[d] + 1]++;
    }
    for (int r = 0; r < H->nrings; r++)
        H->ring_start[r + 1] += H->ring_start[r];
    for (int sl = 0; sl < ns; sl++)
        H->slot_start[sl + 1] += H->slot_start[sl];
    /* The per-slot ring ids are no longer needed: reuse them as cursors. */
    int *rfill = ring, *sfill = malloc(sizeof(int) * (size_t)ns);
    if (!sfill) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int r = 0; r < H->nrings; r++)
        rfill[r] = H->ring_start[r];
    for (int sl = 0; sl < ns; sl++)
        sfill[sl] = H->slot_start[sl];
    for (int d = 0; d < nd; d++) {
        if (H->doc_ring[d] >= 0)
            H->ring_docs[rfill[H->doc_ring[d]]++] = d;
        else
            H->slot_docs[sfill[H->doc_slot[d]]++] = d;
    }
    free(sfill);
    /* Pieces: local documents whole, ring documents in zigzag chunks. */
    for (int d = 0; d < nd && !rc; d++) {
        if (H->doc_ring[d] < 0) {
            rc = zs_cpg_piece(s, c, d, 0, c->len[d], H->doc_slot[d], e);
            H->lin[H->doc_slot[d]] += c->len[d];
            continue;
        }
        int r = H->doc_ring[d], n = H->ring_n[r];
        for (int k = 0; k < n && !rc; k++) {
            int sl = H->ring_first[r] + k, chunks[2] = {k, 2 * n - 1 - k};
            for (int h = 0; h < 2 && !rc; h++) {
                int32_t t0, t1;
                zs_ring_chunk(c->len[d], n, ZS_RING_PAD, chunks[h], &t0, &t1);
                rc = zs_cpg_piece(s, c, d, t0, t1, sl, e);
            }
            H->lin[sl] += zs_cpg_fp_zigzag(c->len[d], n);
        }
    }
out:
    free(load);
    free(tok);
    free(ring);
    free(items);
    return rc;
}

/* whole_max, at most what one GPU holds. */
static int whole_max(const zs_plan_ctx *ctx, const zs_cpg *c, long def, long *out, zs_err *e)
{
    long v;
    int rc = zs_opt_int_def(ctx->opts, &opt_whole_max, def, &v, e);
    if (rc)
        return rc;
    if (v > c->cap) {
        char fix[128];
        snprintf(fix, sizeof fix, "give an integer in [1, %ld]", c->cap);
        return zs_err_set(e, ZS_EUSAGE, opt_whole_max.key, fix,
                          "whole_max=%ld is more than one GPU holds (%ld tokens)", v, c->cap);
    }
    *out = v;
    return ZS_OK;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    hdp H = {0};
    int rc = zs_cpg_init(ctx, batch, &opt_cp, 16, zs_cpg_fp_even, &H.c, e);
    if (rc)
        return rc;
    zs_cpg *c = &H.c;
    zs_schedule *s = NULL;
    int ns = c->nslots, nd = c->ndocs;
    /* ByteScale's per-GPU token budget is a setting; the default is each
     * GPU's even share of the batch (what a data-parallel rank would hold),
     * never above what fits in memory. Raising it to the memory capacity
     * keeps every document that fits whole, trading balance for less
     * communication. */
    long share = (long)((batch->tokens + c->nslots - 1) / c->nslots);
    if (share > c->cap)
        share = c->cap;
    if ((rc = whole_max(ctx, c, share, &H.whole, e))) {
        zs_cpg_free(&H.c);
        return rc;
    }
    H.slots = malloc(sizeof(int) * (size_t)ns);
    H.doc_slot = malloc(sizeof(int) * (size_t)nd);
    H.doc_ring = malloc(sizeof(int) * (size_t)nd);
    H.ring_first = malloc(sizeof(int) * (size_t)ns);
    H.ring_n = malloc(sizeof(int) * (size_t)ns);
    H.ring_docs = malloc(sizeof(int32_t) * (size_t)nd);
    H.ring_start = calloc((size_t)ns + 1, sizeof(int));
    H.slot_docs = malloc(sizeof(int32_t) * (size_t)nd);
    H.slot_start = calloc((size_t)ns + 1, sizeof(int));
    H.lin = calloc((size_t)ns, sizeof(int64_t));
    if (!H.slots || !H.doc_slot || !H.doc_ring || !H.ring_first || !H.ring_n || !H.ring_docs ||
        !H.ring_start || !H.slot_docs || !H.slot_start || !H.lin) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int sl = 0; sl < ns; sl++)
        H.slots[sl] = sl;
    if ((rc = zs_cpg_schedule(c, &s, &H.cp_stream, e)) || (rc = place(&H, ctx->model, s, e)))
        goto out;
    int ring_docs = H.ring_start[H.nrings], largest = 0;
    for (int r = 0; r < H.nrings; r++)
        if (H.ring_n[r] > largest)
            largest = H.ring_n[r];
    zs_cpg_note(c, rep,
                "hybrid-dp: documents that fit one GPU whole on one GPU (LPT on FLOPs), longer "
                "ones on power-of-two rings of consecutive GPUs (zigzag, padded), at most one "
                "ring per GPU, ring attention before local attention");
    zs_plan_report_note(rep,
                        "%d documents local, %d on %d rings (largest %d GPUs); documents up to "
                        "%ld tokens kept whole",
                        nd - ring_docs, ring_docs, H.nrings, largest, H.whole);
    rc = zs_cpg_build(c, ctx, s, H.lin, emit, &H, e);
out:
    free(H.slots);
    free(H.doc_slot);
    free(H.doc_ring);
    free(H.ring_first);
    free(H.ring_n);
    free(H.ring_docs);
    free(H.ring_start);
    free(H.slot_docs);
    free(H.slot_start);
    free(H.lin);
    return zs_cpg_finish(&H.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &opt_whole_max, &zs_opt_tp, NULL};

const zs_planner_ops zs_planner_hybriddp = {
    .name = "hybrid-dp",
    .summary =
        "ByteScale-style hybrid DP: short documents whole per GPU, long ones on power-of-two rings",
    .options = options,
    .plan = plan};

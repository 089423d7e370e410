/* Lowering a plan of CP groups per micro-batch: see zs_groups_internal.h. */
#include "zs_groups_internal.h"

#include <stdint.h>
#include <stdlib.h>

#include "zs_ring.h"

int zs_groups_emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    zs_groups *D = arg;
    const zs_dyncp_plan *p = &D->p;
    int rc = ZS_OK;
    int64_t *dep = malloc(sizeof(int64_t) * (size_t)p->nslots);
    if (!dep)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    /* A GPU without a group in this micro-batch (it runs fewer of them, or
     * dyn-cp's sched=static has fewer packs than DP groups) has no
     * attention. */
    for (int sl = 0; sl < p->nslots; sl++)
        zs_iter_set_exit(it, sl, zs_iter_entry(it, sl));
    if (D->hook)
        rc = D->hook(D->hook_arg, it, stage, micro, backward, -1, 0, 0, NULL, e);
    int g0 = micro < p->nwaves ? p->wave_start[micro] : 0;
    int g1 = micro < p->nwaves ? p->wave_start[micro + 1] : 0;
    for (int g = g0; g < g1 && rc == ZS_OK; g++) {
        int n = p->size[g], first = p->first[g], nd = p->doc_start[g + 1] - p->doc_start[g];
        const int32_t *docs = p->docs + p->doc_start[g];
        for (int k = 0; k < n; k++)
            dep[k] = zs_iter_entry(it, first + k);
        if (D->hook && (rc = D->hook(D->hook_arg, it, stage, micro, backward, g, first, n, dep, e)))
            break;
        if (n == 1) {
            rc = zs_cpg_local_attn(it, stage, first, docs, nd, 0, backward, &dep[0], e);
        } else {
            zs_ring_spec rs = {.g = n,
                               .slots = D->slots + first,
                               .ndocs = nd,
                               .docs = docs,
                               .chunking = ZS_RING_PAD,
                               .comm_stream = D->cp_stream,
                               .label = "ring",
                               .layout = ZS_CPL_ZIGZAG};
            rc = zs_ring_emit(it, stage, &rs, backward, dep, e);
        }
        for (int k = 0; k < n && rc == ZS_OK; k++)
            zs_iter_set_exit(it, first + k, dep[k]);
    }
    free(dep);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

/* Places every document's tokens (whole on a group of one, zigzag chunks
 * on a ring) in its micro-batch and sums each GPU's linear tokens per
 * micro-batch (padding included: padded tokens run through every layer). */
int zs_groups_place(const zs_groups *D, zs_schedule *s, int64_t *lin, int64_t *pad, zs_err *e)
{
    const zs_dyncp_plan *p = &D->p;
    const zs_cpg *c = &D->c;
    int rc = ZS_OK;
    for (int m = 0; m < p->nwaves && !rc; m++)
        for (int g = p->wave_start[m]; g < p->wave_start[m + 1] && !rc; g++)
            for (int i = p->doc_start[g]; i < p->doc_start[g + 1] && !rc; i++) {
                int32_t d = p->docs[i], len = c->len[d];
                int n = p->size[g];
                int64_t share = zs_dyncp_share(len, n);
                *pad += share * n - len;
                for (int k = 0; k < n && !rc; k++) {
                    int sl = p->first[g] + k, rank = zs_cpg_rank(c, sl);
                    int chunks[2] = {k, 2 * n - 1 - k};
                    for (int h = 0; h < (n > 1 ? 2 : 1); h++) {
                        int32_t t0 = 0, t1 = len;
                        if (n > 1)
                            zs_ring_chunk(len, n, ZS_RING_PAD, chunks[h], &t0, &t1);
                        if (t1 <= t0)
                            continue;
                        zs_schedule_add_piece(s, d, t0, t1, rank, ZS_LAYOUT_ATTN, m);
                        zs_schedule_add_piece(s, d, t0, t1, rank, ZS_LAYOUT_LINEAR, m);
                    }
                    lin[(size_t)m * p->nslots + sl] += share;
                    rc = zs_schedule_check(s, e);
                }
            }
    return rc;
}

int zs_groups_build(zs_groups *G, const zs_plan_ctx *ctx, const char *method, zs_schedule **s,
                    int64_t *pad, zs_err *e)
{
    const zs_cpg *c = &G->c;
    if (G->p.nwaves > INT16_MAX)
        return zs_err_set(e, ZS_EINPUT, method, "raise max_seqlen or use a smaller batch",
                          "%d micro-batches, more than a plan holds (%d)", G->p.nwaves, INT16_MAX);
    size_t nlin = (size_t)(G->p.nwaves > 0 ? G->p.nwaves : 1) * (size_t)c->nslots;
    int64_t *lin = calloc(nlin, sizeof(int64_t));
    G->slots = malloc(sizeof(int) * (size_t)c->nslots);
    int rc = ZS_OK;
    if (!lin || !G->slots) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int sl = 0; sl < c->nslots; sl++)
        G->slots[sl] = sl;
    if ((rc = zs_cpg_schedule(c, s, &G->cp_stream, e)))
        goto out;
    if (G->hook_stream) {
        G->hook_stream_id = zs_schedule_add_stream(*s, G->hook_stream);
        if (G->hook_stream_id < 0) {
            rc = zs_err_set(e, ZS_EINVALID, G->hook_stream, NULL, "cannot add the stream");
            goto out;
        }
    }
    if ((rc = zs_groups_place(G, *s, lin, pad, e)))
        goto out;
    zs_iter_spec spec = {{c->tp, c->cp, 1, c->dp},
                         G->p.nwaves > 0 ? G->p.nwaves : 1,
                         lin,
                         c->mc.recompute,
                         c->mc.zero_stage,
                         ctx->seed,
                         zs_groups_emit,
                         G,
                         NULL,
                         0,
                         c->mc.fsdp};
    rc = zs_iter_build(*s, ctx->cost, &spec, e);
out:
    free(lin);
    free(G->slots);
    G->slots = NULL;
    return rc;
}

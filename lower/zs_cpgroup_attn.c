/* A CP group's attention under a token layout, shared by te-cp and
 * llama-cp (they differ in padding, default layout and routing): see
 * zs_cpgroup.h. */
#include <stdlib.h>
#include <string.h>

#include "zs_cpgroup.h"

int zs_cpg_layout(zs_opts *o, const zs_opt_spec *row, zs_cp_layout *out, zs_err *e)
{
    int idx = 0;
    int rc = zs_opt_enum(o, row, &idx, e);
    if (rc)
        return rc;
    const char *v = row->values;
    for (int i = 0; i < idx && v; i++) /* the idx-th of the '|'-separated names */
        if ((v = strchr(v, '|')))
            v++;
    char name[16] = "";
    if (v)
        snprintf(name, sizeof name, "%.*s", (int)strcspn(v, "|"), v);
    return zs_cpl_parse(name, row->key, out, e);
}

int zs_cpg_place(zs_schedule *s, const zs_cpg *c, const zs_cpg_attn *a, int64_t *lin,
                 int64_t *padded, zs_err *e)
{
    int pad = a->chunking == ZS_RING_PAD, n = zs_cpl_nchunks(a->layout, c->cp);
    int rc = ZS_OK;
    for (int g = 0; g < c->dp && !rc; g++)
        for (int i = c->gstart[g]; i < c->gstart[g + 1] && !rc; i++) {
            int d = c->gdocs[i];
            for (int k = 0; k < c->cp && !rc; k++) {
                int sl = zs_cpg_slot(c, g, k);
                int64_t real = 0;
                for (int h = 0; h < zs_cpl_nowned(a->layout) && !rc; h++) {
                    int32_t t0, t1;
                    zs_cpl_chunk(c->len[d], n, pad, zs_cpl_owned(a->layout, c->cp, k, h), &t0, &t1);
                    rc = zs_cpg_piece(s, c, d, t0, t1, sl, e);
                    real += t1 - t0;
                }
                /* Padded tokens run through every layer too. */
                int64_t run = pad ? zs_cpl_member_tokens(a->layout, c->len[d], c->cp, 1, k) : real;
                lin[sl] += run;
                *padded += run - real;
            }
        }
    return rc;
}

/* Ring layouts: one ring per CP group over all its documents. */
static int ring_emit(zs_iter *it, int stage, const zs_cpg *c, const zs_cpg_attn *a, int backward,
                     int64_t *dep, int *slots, zs_err *e)
{
    int rc = ZS_OK;
    for (int g = 0; g < c->dp && rc == ZS_OK; g++) {
        int n = c->gstart[g + 1] - c->gstart[g];
        const int32_t *docs = c->gdocs + c->gstart[g];
        for (int k = 0; k < c->cp; k++) {
            slots[k] = zs_cpg_slot(c, g, k);
            dep[k] = zs_iter_entry(it, slots[k]);
        }
        if (n > 0 && c->cp == 1) {
            rc = zs_cpg_local_attn(it, stage, slots[0], docs, n, 0, backward, &dep[0], e);
        } else if (n > 0) {
            zs_ring_spec rs = {c->cp,        slots,  n,       docs,        a->chunking,
                               a->cp_stream, "ring", a->xfer, a->xfer_arg, a->layout};
            rc = zs_ring_emit(it, stage, &rs, backward, dep, e);
        }
        for (int k = 0; k < c->cp && rc == ZS_OK; k++)
            zs_iter_set_exit(it, slots[k], dep[k]);
    }
    return rc;
}

/* llama3: the blocks of slot k of group g once K and V are gathered, real
 * into blk and priced into cblk; returns the count of each through nr, nc. */
static void gather_blocks(const zs_cpg *c, const zs_cpg_attn *a, const zs_schedule *s, int g, int k,
                          zs_attn_block *blk, int *nr, zs_attn_block *cblk, int *nc)
{
    *nr = *nc = 0;
    for (int i = c->gstart[g]; i < c->gstart[g + 1]; i++) {
        int d = c->gdocs[i], r, q;
        zs_cpl_gather_blocks(d, s->doc_len[d], c->cp, a->chunking == ZS_RING_PAD, k, blk + *nr, &r,
                             cblk + *nc, &q);
        *nr += r;
        *nc += q;
    }
}

/* One member's part: the all-gather, its attention, backward the
 * reduce-scatter (every member joins the collectives, even one whose chunks
 * of tiny documents are empty). */
static int64_t gather_member(zs_iter *it, int rank, int cp_stream, int grp, double kvb,
                             int64_t last, const zs_attn_block *blk, int nr,
                             const zs_attn_block *cblk, int nc, int backward)
{
    zs_schedule *s = zs_iter_schedule(it);
    int heads = zs_iter_heads(it);
    int64_t d1[1] = {last};
    if (grp >= 0) {
        last = zs_sched_coll(s, rank, cp_stream, "cp-kv-all-gather", grp, ZS_COLL_ALLGATHER, kvb,
                             d1, 1);
        d1[0] = last;
    }
    if (nr > 0) {
        double t = zs_cost_attn(zs_iter_cost(it), cblk, nc, heads, backward);
        last = zs_sched_attn(s, rank, ZS_STREAM_COMPUTE, backward ? "cp-attn-bwd" : "cp-attn-fwd",
                             backward, blk, nr, heads, t, d1, 1);
        d1[0] = last;
    }
    if (backward && grp >= 0)
        last = zs_sched_coll(s, rank, cp_stream, "cp-dkv-reduce-scatter", grp,
                             ZS_COLL_REDUCESCATTER, kvb, d1, 1);
    return last;
}

static int gather_emit(zs_iter *it, int stage, const zs_cpg *c, const zs_cpg_attn *a, int backward,
                       int *ranks, zs_err *e)
{
    zs_schedule *s = zs_iter_schedule(it);
    const zs_model *m = &zs_iter_cost(it)->model;
    int maxdocs = 1;
    for (int g = 0; g < c->dp; g++)
        if (c->gstart[g + 1] - c->gstart[g] > maxdocs)
            maxdocs = c->gstart[g + 1] - c->gstart[g];
    zs_attn_block *blk = malloc(sizeof(zs_attn_block) * (size_t)maxdocs * 4);
    if (!blk)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_attn_block *cblk = blk + (size_t)maxdocs * 2;
    for (int g = 0; g < c->dp; g++) {
        int64_t most = 0;
        for (int k = 0; k < c->cp; k++) {
            int sl = zs_cpg_slot(c, g, k);
            ranks[k] = zs_iter_rank(it, stage, sl);
            most = a->shard[sl] > most ? a->shard[sl] : most;
        }
        int grp = c->cp > 1 ? zs_schedule_group(s, ranks, c->cp) : -1;
        double kvb = zs_cpg_kv_bytes(m, c->tp, most);
        for (int k = 0; k < c->cp; k++) {
            int sl = zs_cpg_slot(c, g, k), nr, nc;
            int64_t last = zs_iter_entry(it, sl);
            if (c->gstart[g + 1] > c->gstart[g]) {
                gather_blocks(c, a, s, g, k, blk, &nr, cblk, &nc);
                last = gather_member(it, ranks[k], a->cp_stream, grp, kvb, last, blk, nr, cblk, nc,
                                     backward);
            }
            zs_iter_set_exit(it, sl, last);
        }
    }
    free(blk);
    return ZS_OK;
}

int zs_cpg_attn_emit(zs_iter *it, int stage, const zs_cpg *c, const zs_cpg_attn *a, int backward,
                     zs_err *e)
{
    int64_t *dep = malloc(sizeof(int64_t) * (size_t)c->cp);
    int *slots = malloc(sizeof(int) * (size_t)c->cp);
    int rc;
    if (!dep || !slots)
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    else if (zs_cpl_is_ring(a->layout))
        rc = ring_emit(it, stage, c, a, backward, dep, slots, e);
    else
        rc = gather_emit(it, stage, c, a, backward, slots, e);
    free(dep);
    free(slots);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

/* Ring attention (lower/zs_ring.c): zigzag chunking, exact causal coverage
 * (checked by the validator), bytes per step, and the forward/backward
 * structure, on a tiny ring planner written here. */
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_ring.h"
#include "zs_test.h"
#include "zs_validate.h"

static void test_chunks(void)
{
    int32_t t0, t1;
    /* 37 tokens, g=2: PAD cuts ceil(37/4)=10-token chunks, the last one short. */
    zs_ring_chunk(37, 2, ZS_RING_PAD, 0, &t0, &t1);
    ZS_ASSERT_INT_EQ(t0, 0);
    ZS_ASSERT_INT_EQ(t1, 10);
    zs_ring_chunk(37, 2, ZS_RING_PAD, 3, &t0, &t1);
    ZS_ASSERT_INT_EQ(t0, 30);
    ZS_ASSERT_INT_EQ(t1, 37);
    /* EXACT: 9 each and the remainder (1) to chunk 0. */
    zs_ring_chunk(37, 2, ZS_RING_EXACT, 0, &t0, &t1);
    ZS_ASSERT_INT_EQ(t1 - t0, 10);
    zs_ring_chunk(37, 2, ZS_RING_EXACT, 1, &t0, &t1);
    ZS_ASSERT_INT_EQ(t0, 10);
    ZS_ASSERT_INT_EQ(t1, 19);
    zs_ring_chunk(37, 2, ZS_RING_EXACT, 3, &t0, &t1);
    ZS_ASSERT_INT_EQ(t1, 37);
    /* Tiny document: PAD leaves trailing chunks empty. */
    zs_ring_chunk(3, 4, ZS_RING_PAD, 5, &t0, &t1);
    ZS_ASSERT_INT_EQ(t1 - t0, 0);
}

typedef struct tiny {
    zs_ring_spec rs;
} tiny;

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    tiny *t = arg;
    int g = t->rs.g;
    int64_t *dep = malloc(sizeof(int64_t) * (size_t)g);
    for (int k = 0; k < g; k++)
        dep[k] = zs_iter_entry(it, t->rs.slots[k]);
    int rc = zs_ring_emit(it, stage, &t->rs, backward, dep, e);
    for (int k = 0; k < g && !rc; k++)
        zs_iter_set_exit(it, t->rs.slots[k], dep[k]);
    free(dep);
    return rc;
}

/* Builds a one-ring schedule over g GPUs of one cluster-a node. */
static zs_schedule *ring_schedule(zs_cost *cost, int g, zs_ring_chunking ch, const int32_t *len,
                                  int ndocs)
{
    zs_err e;
    zs_schedule *s = zs_schedule_new(g);
    int slots[8], docs[8];
    int64_t lin[8] = {0};
    for (int k = 0; k < g; k++)
        slots[k] = k;
    for (int d = 0; d < ndocs; d++)
        docs[d] = d;
    ZS_ASSERT_OK(zs_schedule_set_docs(s, len, ndocs), &e);
    tiny t = {{g, slots, ndocs, docs, ch, ZS_STREAM_COMM, "ring", NULL, NULL, ZS_CPL_ZIGZAG}};
    zs_layout_dims dims = {1, g, 1, 1};
    ZS_ASSERT_OK(zs_ring_add_pieces(s, &dims, &t.rs, 0, &e), &e);
    int64_t nattn = s->npieces;
    for (int64_t i = 0; i < nattn; i++) {
        zs_piece p = s->pieces[i];
        zs_schedule_add_piece(s, p.doc, p.t0, p.t1, p.rank, ZS_LAYOUT_LINEAR, 0);
        lin[p.rank] += p.t1 - p.t0;
    }
    zs_iter_spec spec = {dims, 1, lin, ZS_RECOMPUTE_NONE, 1, 1, emit, &t, NULL, 0, ZS_FSDP2};
    ZS_ASSERT_OK(zs_iter_build(s, cost, &spec, &e), &e);
    return s;
}

static zs_cost *cost_new(void)
{
    zs_model m;
    zs_cluster c;
    zs_err e;
    zs_model_load("llama-550m", &m, &e);
    zs_cluster_load("cluster-a", 1, &c, &e);
    return zs_cost_analytic_new(&m, &c);
}

static void test_ring_validates(void)
{
    zs_cost *cost = cost_new();
    int32_t len[3] = {37, 8, 3};
    for (int g = 1; g <= 4; g++)
        for (int ch = 0; ch < 2; ch++) {
            zs_schedule *s = ring_schedule(cost, g, (zs_ring_chunking)ch, len, 3);
            zs_validate_opts vo = {0, 0};
            zs_err e;
            ZS_ASSERT_OK(zs_validate(s, &vo, &e), &e);
            zs_result *r = NULL;
            ZS_ASSERT_OK(zs_analytic_run(s, cost, NULL, &r, &e), &e);
            CU_ASSERT(r->iter_time > 0);
            zs_result_free(r);
            zs_schedule_free(s);
        }
    zs_cost_free(cost);
}

/* Forward: g-1 KV sends per rank per layer of 2 * chunk tokens each;
 * backward: g-1 KV sends and g dK/dV sends. */
static void test_ring_bytes(void)
{
    zs_cost *cost = cost_new();
    int g = 4;
    int32_t len[1] = {4096};
    zs_schedule *s = ring_schedule(cost, g, ZS_RING_PAD, len, 1);
    const zs_model *m = &cost->model;
    double step = 2.0 * (4096 / 8) * 2 * m->kv_heads * m->head_dim * m->dtype_bytes;
    int kv = zs_schedule_label(s, "ring-kv"), dkv = zs_schedule_label(s, "ring-dkv");
    for (int r = 0; r < g; r++) {
        double kv_bytes = 0, dkv_bytes = 0;
        const zs_rank_prog *p = &s->ranks[r];
        for (int32_t sg = 0; sg < p->nsegs; sg++)
            for (int64_t i = p->segs[sg].op0; i < p->segs[sg].op0 + p->segs[sg].nops; i++) {
                const zs_op *op = &p->ops[i];
                if (op->kind != ZS_OP_SEND)
                    continue;
                if (op->label == kv)
                    kv_bytes += op->u.p2p.bytes * p->segs[sg].repeat;
                if (op->label == dkv)
                    dkv_bytes += op->u.p2p.bytes * p->segs[sg].repeat;
            }
        /* Forward and backward each send g-1 KV shards per layer. */
        ZS_ASSERT_REL(kv_bytes, 2.0 * (g - 1) * step * m->layers, 1e-12);
        ZS_ASSERT_REL(dkv_bytes, (double)g * step * m->layers, 1e-12);
    }
    zs_schedule_free(s);
    zs_cost_free(cost);
}

/* Backward: every dK/dV send after a member's first waits for an
 * accumulation op that depends on both the step's attention and the dK/dV
 * received from the predecessor (by time, not by op number): g-1 per member
 * per layer, and the send depends on it. */
static void test_ring_dkv_waits(void)
{
    zs_cost *cost = cost_new();
    int g = 4;
    int32_t len[1] = {4096};
    zs_schedule *s = ring_schedule(cost, g, ZS_RING_EXACT, len, 1);
    int acc = zs_schedule_label(s, "ring-dkv-acc"), dkv = zs_schedule_label(s, "ring-dkv");
    for (int r = 0; r < g; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        int nacc = 0, nsend = 0, nsend_acc = 0;
        for (int64_t i = 0; i < p->nops; i++) {
            const zs_op *op = &p->ops[i];
            const int32_t *d = zs_schedule_deps(s, r, op);
            if (op->label == acc) {
                nacc++;
                ZS_ASSERT_INT_EQ(op->ndeps, 2);
                ZS_ASSERT_INT_EQ(p->ops[d[0]].kind, ZS_OP_COMPUTE);
                ZS_ASSERT_INT_EQ(p->ops[d[1]].kind, ZS_OP_RECV);
                ZS_ASSERT_INT_EQ(p->ops[d[1]].label, dkv);
            }
            if (op->kind == ZS_OP_SEND && op->label == dkv) {
                nsend++;
                nsend_acc += op->ndeps == 1 && p->ops[d[0]].label == acc;
            }
        }
        /* One layer body (stored once, repeated): g-1 accumulations and g sends. */
        ZS_ASSERT_INT_EQ(nacc, g - 1);
        ZS_ASSERT_INT_EQ(nsend, g);
        ZS_ASSERT_INT_EQ(nsend_acc, g - 1);
    }
    zs_schedule_free(s);
    zs_cost_free(cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"chunks", test_chunks},
                                         {"ring_validates", test_ring_validates},
                                         {"ring_bytes", test_ring_bytes},
                                         {"ring_dkv_waits", test_ring_dkv_waits},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"ring", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

/* Zeppelin's attention engine: the attention emitter of the iteration
 * builder for a partitioned batch. Per pass (a layer's attention forward or
 * backward) every GPU runs whichever of its attention work is ready:
 *   - the steps of every ring it belongs to, interleaved step by step
 *     (inter-node rings first, then intra-node ones: the slowest
 *     communication starts first), each step as soon as its KV shard has
 *     arrived, backward each dK/dV accumulation as soon as the incoming
 *     dK/dV has;
 *   - its local documents (no communication) in the waits of its rings: a
 *     batch of them that fits before the next ring step is ready, longest
 *     first, as one kernel; all of them once its rings are done;
 *   - with remapping, the work on tokens whose linear modules run on another
 *     GPU as soon as their inputs arrived, first among its local work, so
 *     their outputs return early.
 * The schedule IR runs each stream in program order, so "ready" is decided
 * at plan time: the engine simulates the pass on predicted times (compute
 * from the cost model, transfers from zs_zep_clock_internal.h along the paths
 * the routing layer chose, GPUs starting at their predicted attention
 * entry) and writes every op at its predicted start, so each stream's order
 * is the predicted order and every dependency points to an op written
 * before it (no deadlock by construction; the validator checks it too).
 *
 * Ring transfers go one per peer per step, as TE CP posts them for a
 * packed batch (ZS_ZEP_XFER_RING, the default): the documents of rings over
 * the same GPUs in the same order form one ring, and the KV (or dK/dV)
 * sends of their step j from one GPU are one transfer of their summed
 * bytes, appended once every part is ready, after all their dependencies,
 * carrying each document's part (zs_carry); each part's next step waits for
 * its arrival, and a member's sends of one kind go in step order.
 * ZS_ZEP_XFER_MERGED merges the step-j sends of any rings that share a
 * stream, a source and a destination GPU, whatever their order: measured,
 * that couples chains of rings in different orders (-8.3%..+7.6% on 25 of
 * the 34 Zeppelin figure points, docs/simulator.md), and no source says
 * Zeppelin's engine groups different rings' sends into one NCCL call.
 * ZS_ZEP_XFER_PER_DOC sends each ring step of each document on its own (the
 * schedule before merging, reproduced op for op).
 * Streams: inter-node rings on "comm-inter" (through the routing hook),
 * intra-node rings on "zep-intra", remap transfers and their joins on
 * "remap" (never "comm", where the previous layer's gradient all-reduce
 * holds the stream in backward); routed transfers relay on the routing
 * layer's "route", "route-send" and "route-join". A ring's receives stay on
 * its own stream: there a send that waits for its data holds the receives
 * behind it, which serialises the transfers of one GPU in the predicted
 * order; putting receives on a stream of their own (always posted) let
 * every transfer run at once sharing the links, slower for the ring steps
 * on the critical path (GitHub, 16 nodes, routing off: 99.8K -> 43.7K
 * tokens/s on the analytic backend) and ~10x slower to simulate.
 * Remapping: the linear holder's moved tokens leave after their own QKV
 * projection (forward) or output-projection input gradient (backward), cut
 * off by the iteration builder (zs_iter_spec.moved_tokens); their outputs
 * return as soon as the work on them is done, and the builder runs the
 * kept tokens' output projection (QKV input gradient) while they travel.
 * A GPU exports the tokens it would compute last: the attention pieces of
 * a slot are its rings' then its local documents' (longest first), and the
 * last ones beyond its linear share go to other GPUs (zs_zep_engine_pieces).
 * Depends on the iteration builder, the ring runs, the routing layer, the
 * clock, the partition and the remap plan. */
#ifndef ZS_ZEP_ENGINE_INTERNAL_H
#define ZS_ZEP_ENGINE_INTERNAL_H

#include "zs_ring.h"
#include "zs_zep_clock_internal.h"
#include "zs_zep_part.h"
#include "zs_remap.h"
#include "zs_route.h"

/* How ring steps become transfers (zs_zep_engine.xfer). */
enum {
    ZS_ZEP_XFER_RING = 0,   /* one per peer per step of rings over the same GPUs in the same
                             * order (their documents as one ring, as TE CP) */
    ZS_ZEP_XFER_MERGED = 1, /* one per peer per step: every member whose next member is on the
                             * same GPU, over the same stream */
    ZS_ZEP_XFER_PER_DOC = 2 /* one per document's ring step */
};

typedef struct zs_zep_engine {
    const zs_zep_part *part;
    const zs_remap *remap; /* NULL: the linear modules run on the attention layout */
    zs_route *route;       /* routing (k = 1: every transfer direct) */
    int intra_stream;      /* intra-node rings */
    int inter_stream;      /* inter-node and global rings */
    int remap_stream;      /* remap transfers and their joins */
    const int32_t *len;    /* document lengths */
    const zs_cost *cost;
    int tp;
    int xfer; /* ring transfers: ZS_ZEP_XFER_RING (0), _MERGED or _PER_DOC */
    /* Filled by zs_zep_engine_init: */
    int32_t *local_off, *local_docs; /* per slot (CSR), longest first */
    uint8_t *local_imp;              /* per local_docs entry: holds exported tokens */
    int32_t *mem_off;                /* per ring: its members' index in mem_imp */
    uint8_t *mem_imp;                /* per ring member: holds exported tokens */
    int64_t *moved;                  /* per slot: linear tokens whose attention is elsewhere */
    zs_iter_lin *lin;                /* per slot: predicted linear times */
    zs_zep_clock *clock;
    int32_t *shape; /* per ring: the first ring over the same slots in the same order */
} zs_zep_engine;

/* Fills the lists, export flags, moved tokens and predicted linear times.
 * ZS_OK or an error; zs_zep_engine_fini frees what it made either way. */
int zs_zep_engine_init(zs_zep_engine *en, zs_err *e);
void zs_zep_engine_fini(zs_zep_engine *en);

/* The zs_iter_spec emitter (arg: a zs_zep_engine). */
int zs_zep_engine_emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e);

/* Adds the plan's pieces (attention layout from the partition, linear
 * layout from the remap plan or equal to the attention one) to s, whose
 * documents are set. */
int zs_zep_engine_pieces(const zs_zep_engine *en, zs_schedule *s, const zs_layout_dims *dims,
                         zs_err *e);

#endif

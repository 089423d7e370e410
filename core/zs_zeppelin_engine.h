/* Zeppelin's attention engine: the attention emitter of the iteration
 * builder for a partitioned batch. Per pass (a layer's attention forward or
 * backward) and per slot:
 *   1. remapping in (when on): the tokens a slot computes attention for but
 *      holds for the linear modules elsewhere arrive (forward: their Q, K, V
 *      from the QKV projection on the linear holder; backward: dO from the
 *      output projection's backward), as one all-to-all-v expressed as a
 *      group of sends and receives between the pairs that exchange tokens;
 *   2. the slot's queues: inter-node rings (stream "comm-inter", transfers
 *      through the routing hook), intra-node rings (stream "zep-intra",
 *      shared with the remap transfers; never "comm", where the gradient
 *      all-reduce of the previous layer holds the stream), local
 *      documents (no communication). Every ring's transfers start as soon
 *      as the slot's inputs are there, so the network rings, the NVLink
 *      rings and the compute all overlap. Compute order on the GPU: forward
 *      runs local work first while the rings' KV shards travel (forward ring
 *      transfers do not wait for compute, so local work fills the waits),
 *      then the inter-node and intra-node ring steps; backward mirrors it
 *      (ring steps first, since their dK/dV transfers wait for compute and
 *      partners wait for them, then local work);
 *   3. remapping out: the attention output O (forward) or dQ, dK, dV
 *      (backward) return to the linear holder, whose output projection
 *      (forward) or QKV backward (backward) waits for it.
 * Q, K, V and O are therefore computed on the linear layout; attention and
 * its saved inputs (Q, K, V, O, log-sum-exp) live on the attention layout.
 * Depends on the iteration builder, the ring emitter, the routing layer,
 * the partition and the remap plan. */
#ifndef ZS_ZEPPELIN_ENGINE_H
#define ZS_ZEPPELIN_ENGINE_H

#include "zs_ring.h"
#include "zs_zeppelin_part.h"
#include "zs_zeppelin_remap.h"
#include "zs_zeppelin_route.h"

typedef struct zs_zep_engine {
    const zs_zep_part *part;
    const zs_zep_remap *remap; /* NULL: the linear modules run on the attention layout */
    zs_zep_route *route;       /* routing (k = 1: every transfer direct) */
    int intra_stream;          /* stream of the remap transfers and intra-node rings */
    int inter_stream;          /* stream of inter-node and global rings */
    const int32_t *len;        /* document lengths */
    /* Local documents per slot (CSR): local_docs[local_off[s] .. local_off[s+1]). */
    int32_t *local_off, *local_docs;
} zs_zep_engine;

/* Fills the CSR lists from the partition. */
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

/* ByteScale's selective activation offloading (Ge et al., arXiv
 * 2502.21231), reconstructed from the paper's description (docs/methods.md
 * says what is reconstructed and what assumed): a long document's saved
 * activations partly go to pinned host memory during the forward (device
 * to host on a copy stream, under the layer's compute) and come back
 * before the backward needs them (host to device, prefetched on the same
 * stream), so a GPU holds more of its tokens and the document needs fewer
 * CP ranks.
 *
 * Memory (the memory model's terms, models/zs_memory.h): F bytes per GPU
 * are left for activations (usable memory less weights, gradients and
 * optimizer state; at most max_seqlen tokens' worth), one token keeps a
 * bytes in each of L layers. With a
 * share r of every layer's saved activations offloaded, a GPU keeps the
 * rest, (1 - r) L layers' worth, plus the offloaded part of 2 layers (the
 * layer being copied and the one being computed: assumed double
 * buffering), so it holds F / (a (L - (L - 2) r)) tokens.
 *
 * Ratio: a document of len tokens on n GPUs leaves s = zs_dyncp_share(len,
 * n) tokens on each; copying r a s bytes per layer at the host link's
 * rate B (the GPU's host_gbs) hides under the layer's forward compute T(s)
 * while r <= r_max = B T / (a s) (capped at 1). T is the cost model's:
 * the linear ops of s tokens (zs_iter_linear_time) plus the document's
 * zigzag attention on one of the n ranks (zs_cost_attn_zigzag, rank 0).
 * Attention's compute grows with len^2 / n while s grows with len / n,
 * so longer documents can offload more. The backward's copies (host to
 * device) hide under the backward, two to three times the forward. A
 * document is offloaded only where it does not fit n GPUs without it, and
 * then with the least r that makes it fit (copies as short as possible;
 * the paper's figure for the ratio's choice is not in the sources read).
 *
 * Depends on the cost model, the memory model and the iteration builder
 * (its linear-time estimate and, for the copies, its emitter interface). */
#ifndef ZS_BYTESCALE_OFFLOAD_INTERNAL_H
#define ZS_BYTESCALE_OFFLOAD_INTERNAL_H

#include "zs_cost.h"
#include "zs_dyncp_sched_internal.h"
#include "zs_iteration.h"
#include "zs_memory.h"
#include "zs_model.h"

typedef struct zs_bs_offload {
    const zs_cost *cost;
    int tp, slots_per_node, heads, layers;
    zs_recompute recompute;
    double free_bytes; /* F: device bytes for activations */
    double act_layer;  /* a: bytes one token keeps per layer */
    double host_bps;   /* B: host copy rate per direction, bytes/s */
    long cap;          /* tokens per GPU without offloading (max_seqlen) */
    /* After zs_bs_offload_assign: per group of the plan, the share r of its
     * GPUs' activations offloaded (0: none) and the bytes each of its GPUs
     * copies per layer each way. */
    int ngroups;
    double *ratio, *bytes;
    /* Lowering state: the copy stream and, per micro-batch, how many
     * forward passes the emitter has seen (the second is full
     * recomputation's, before the backward). */
    int stream;
    int *fwd_seen;
} zs_bs_offload;

/* Fills o for the model, GPU and memory configuration; ZS_EINPUT naming the
 * GPU when it has no host copy rate. cap: the tokens per GPU the planner
 * holds without offloading. */
int zs_bs_offload_init(zs_bs_offload *o, const zs_cost *cost, const zs_mem_cfg *mc, int tp,
                       long cap, zs_err *e);
void zs_bs_offload_free(zs_bs_offload *o);

/* Tokens one GPU holds with a share r offloaded (r = 0: F / (a L)). */
long zs_bs_offload_capacity(const zs_bs_offload *o, double r);
/* The largest share whose copies hide under the forward compute of a
 * document of len tokens on n GPUs, in [0, 1]; *fwd_s receives that
 * compute per layer (seconds, may be NULL). */
double zs_bs_offload_max_ratio(const zs_bs_offload *o, int32_t len, int n, double *fwd_s);
/* The least share that makes s tokens fit one GPU (0 when they fit
 * without), or a value above 1 when none does. */
double zs_bs_offload_min_ratio(const zs_bs_offload *o, int64_t s);
/* The fewest GPUs (up to max_n) a document of len tokens needs with
 * offloading (hidden copies only), 0 when more; its share there in *r. */
int zs_bs_offload_needed(const zs_bs_offload *o, int32_t len, int max_n, double *r);
/* Per group of p: the share its GPUs offload and the bytes they copy per
 * layer (a group of one GPU: its documents' tokens). ZS_EINPUT when a
 * group's tokens do not fit even so. */
int zs_bs_offload_assign(zs_bs_offload *o, const zs_dyncp_plan *p, const int32_t *len, zs_err *e);
/* After zs_bs_offload_assign: the most tokens' worth of activations any
 * GPU of p keeps on the device (an offloading group's share s keeps s (L -
 * (L - 2) r) / L), for the memory peak (zs_plan_report). */
int64_t zs_bs_offload_resident(const zs_bs_offload *o, const zs_dyncp_plan *p, const int32_t *len);
/* Seconds a copy of `bytes` takes on the host link. */
double zs_bs_offload_copy_s(const zs_bs_offload *o, double bytes);

/* For the attention emitter of micro-batch `micro`, group g on slots
 * [first, first + n) (dep[k]: the slot's attention entry, updated): in
 * the forward a device-to-host copy per slot after the layer's start; in
 * the pass before the backward's attention (full recomputation's forward,
 * else the backward) a host-to-device copy per slot, which the slot's
 * attention then waits for. backward: the emitter's flag. */
int zs_bs_offload_emit(zs_bs_offload *o, zs_iter *it, int stage, int micro, int backward, int g,
                       int first, int n, int64_t *dep, zs_err *e);
/* Counts the emitter's pass (call once per emitter call, before the
 * groups): returns 1 when it is the forward, 2 the recomputation, 3 the
 * backward. */
int zs_bs_offload_pass(zs_bs_offload *o, int micro, int backward);

#endif

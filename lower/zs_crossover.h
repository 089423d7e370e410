/* Cost crossovers (Zeppelin's thresholds; te-cp and auto use them too): the per-GPU sequence length
 * above which one ring step's attention compute hides the transfer of its KV shard, for an NVLink
 * ring (m_intra) and for a network ring (m_inter, direct through one NIC, and for information
 * routed over k NICs). Derived from the cost model and the cluster by bisection, never constants;
 * `zepsim zeppelin thresholds` prints them with the figures at the crossover. Depends on the cost
 * model only. */
#ifndef ZS_CROSSOVER_H
#define ZS_CROSSOVER_H

#include "zs_cost.h"

typedef struct zs_crossover {
    double m_intra;        /* tokens per GPU: NVLink ring step hides its transfer */
    double m_inter;        /* tokens per GPU: network ring step through one NIC */
    double m_inter_routed; /* the same spread over k NICs by the routing layer */
    int k;                 /* NICs a routed transfer is spread over */
    double chunk_bytes;    /* routing chunk */
    int heads, kv_heads;   /* per GPU (divided by tp) */
    /* Step figures at each crossover (seconds): compute vs transfer. */
    double intra_compute_s, intra_xfer_s;
    double inter_compute_s, inter_xfer_s;
    double routed_compute_s, routed_xfer_s;
    int intra_always, inter_always; /* 1: compute hides the transfer at every length */
} zs_crossover;

/* Attention time of one forward ring step for `tokens` per GPU: the
 * queries of two zigzag chunks against the KV of two chunks, half of the
 * four chunk pairs below the diagonal (tokens^2 / 2 query-key pairs),
 * at the rate the cost model gives large attention kernels. */
double zs_crossover_step_compute(const zs_cost *c, int heads, double tokens);
/* KV bytes of `tokens` with kv_heads heads per GPU. */
double zs_crossover_kv_bytes(const zs_model *m, int kv_heads, double tokens);
/* Transfer time of one step's KV shard: NVLink (net=0), or across nodes
 * through k NICs in parallel (net=1), each slice pipelined through an
 * NVLink scatter and gather of chunk_bytes. */
double zs_crossover_step_xfer(const zs_cost *c, int kv_heads, double tokens, int net, int k,
                              double chunk_bytes);

/* Default routing parameters from the bandwidths: k = the NICs one GPU's
 * NVLink can feed (capped by the NICs of a node and the TP-rank-0 GPUs that
 * can act as proxies), chunk = ten times the bytes a NIC moves in one
 * network latency (so the per-chunk latency costs < 10%), rounded up to a
 * power of two of at least 256 KiB. */
int zs_route_default_k(const zs_cluster *cl, int tp);
double zs_route_default_chunk(const zs_cluster *cl);

/* Solves both crossovers for tensor-parallel degree tp, k NICs, chunk. */
int zs_crossover_solve(const zs_cost *c, int tp, int k, double chunk_bytes, zs_crossover *out,
                       zs_err *e);

#endif

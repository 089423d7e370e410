/* DCP's block model and placement (SOSP '25, arXiv 2510.10620;
 * github chenyu-jiang/dcp), reconstructed: the blocks of one global batch,
 * the hypergraph over them, and a deterministic partitioner standing in for
 * the KaHyPar / PaToH runs DCP makes (we have neither).
 *
 * Blocks. Every document is cut into data blocks of `block` tokens (the
 * last one shorter); a data block stands for the Q, K, V and O of its tokens
 * on all of a GPU's heads (DCP constrains them to one device; its head
 * blocks are not modelled). A compute block is query data block q against
 * key data block k of the same document, k <= q (causal: blocks above the
 * diagonal are never built), numbered by (document, q, k).
 *
 * Hypergraph. Vertices: the data blocks (memory weight: tokens) and the
 * compute blocks (compute weight: the query-key pairs they evaluate, half a
 * square on the diagonal). Nets: per data block a KV net (the block and the
 * compute blocks reading its keys, weight wkv x tokens) and a Q net (the
 * block and the compute blocks reading its queries and writing its output,
 * weight wq x tokens). The objective is DCP's: connectivity minus one
 * (km1), the bytes sent when every part a net spans fetches its data once.
 *
 * Partitioner. Hierarchical as DCP's: the nodes first (compute tolerance
 * eps_comp x inter_factor), then the devices of each node on the vertices
 * placed there (eps_comp). Each level: data blocks split into contiguous
 * runs of equal tokens (documents in batch order), compute blocks put with
 * their query block, then moved off parts above the compute cap (best km1
 * gain first), then greedy positive-gain refinement passes (Fiduccia-
 * Mattheyses moves without the negative-gain moves and rollback, as in
 * label-propagation refinement) under both caps: memory
 * (1 + eps_mem) x mean (at least the contiguous split's largest part),
 * compute (1 + eps) x mean (at least the mean plus the heaviest block).
 * Ties: lowest vertex id, then lowest part.
 * Pure algorithm; depends on zs_err only. */
#ifndef ZS_DCP_PART_INTERNAL_H
#define ZS_DCP_PART_INTERNAL_H

#include <stdint.h>

#include "zs_err.h"

typedef struct zs_dcp_blocks {
    int32_t ndata;
    int32_t *ddoc, *dt0, *dt1; /* data block i: tokens [dt0, dt1) of document ddoc */
    int64_t ncomp;
    int32_t *cq, *ck; /* compute block c: data blocks (query, key), same document */
} zs_dcp_blocks;

/* Cuts ndocs documents into blocks of `block` tokens (block >= 1). */
int zs_dcp_blocks_build(const int32_t *len, int32_t ndocs, int32_t block, zs_dcp_blocks *out,
                        zs_err *e);
void zs_dcp_blocks_free(zs_dcp_blocks *b);

/* Query-key pairs compute block c evaluates (its compute weight). */
double zs_dcp_comp_work(const zs_dcp_blocks *b, int64_t c);

typedef struct zs_dcp_part_in {
    const zs_dcp_blocks *b;
    double wkv, wq;      /* net weight per token: KV net, Q net (bytes) */
    int nodes, per_node; /* parts: part = node * per_node + device */
    double eps_mem;      /* memory imbalance tolerance (0.2: 20%) */
    double eps_comp;     /* compute imbalance tolerance inside a node */
    double inter_factor; /* the node level's tolerance is eps_comp x this */
    int passes;          /* refinement passes per level (0: none) */
} zs_dcp_part_in;

typedef struct zs_dcp_part_out {
    int *dpart;               /* per data block: its part */
    int *cpart;               /* per compute block: its part */
    double km1;               /* objective of the placement (bytes) */
    double comp_imb, mem_imb; /* max / mean over the parts */
    int moves;                /* refinement and rebalancing moves, all levels */
} zs_dcp_part_out;

/* Partitions the hypergraph of in->b. Errors: a bad count, out of memory. */
int zs_dcp_partition(const zs_dcp_part_in *in, zs_dcp_part_out *out, zs_err *e);
void zs_dcp_part_free(zs_dcp_part_out *o);

/* The km1 objective of a placement over `parts` parts. */
double zs_dcp_km1(const zs_dcp_blocks *b, double wkv, double wq, const int *dpart, const int *cpart,
                  int parts);

#endif

/* The search of the `auto` planner: which documents go to which node and,
 * per node, which attention layout each of them gets, chosen by predicted
 * time. Kept apart from the planner so that it can be tested with hand-made
 * prices.
 *
 * Hierarchy (as in Zeppelin): a document whose predicted work exceeds a
 * fraction (span_frac) of a node's share of the batch, or whose tokens do
 * not fit a node, spans a window of m consecutive nodes (a head x ring
 * unit: Ulysses groups of u GPUs inside each node, one zigzag ring over the
 * m x G / u groups, shared by the documents of the same window); the rest
 * go to nodes most work first (LPT). Inside a node the k documents of most
 * work go to one of the node's layouts: head-parallel (Ulysses over u GPUs
 * through NVLink; with G / u groups per node, the documents LPT over the
 * groups; u > 1) or the node's ring (the window of one node: Ulysses u x a
 * zigzag ring over the node's G / u groups, every document cut over all
 * its G slots, through NVLink; G / u > 1, the only layout that splits a
 * document inside a node when no head-parallel degree divides the heads);
 * the others stay whole on one GPU (LPT over the GPUs). k and the layout
 * are searched, each candidate priced GPU by GPU (span shares, ring or
 * Ulysses attention, the all-to-all time that local attention does not
 * hide, local attention, the linear modules; with MoE layers, whose expert
 * all-to-alls make the node wait for its slowest GPU twice a layer, the
 * slowest attention plus the slowest linear modules) and the smallest
 * predicted makespan wins; its local documents are then moved or swapped
 * between GPUs while that lowers the slower. With remap, each node also
 * prices every candidate with its linear tokens remapped to the node's
 * mean (local documents placed on attention alone, remap_time charged)
 * and keeps whichever is lower. All prices come from the caller (the
 * planner asks the cost model), per layer in seconds.
 * Deterministic: ties go to the lower index (and k, head-parallel before
 * the ring; without remapping before with). Depends on zs_err only. */
#ifndef ZS_AUTO_SEARCH_INTERNAL_H
#define ZS_AUTO_SEARCH_INTERNAL_H

#include <stdint.h>

#include "zs_err.h"

/* Per-node strategies the search may use. */
typedef enum zs_auto_mode {
    ZS_AUTO_SEARCH = 0, /* k searched per node */
    ZS_AUTO_LOCAL = 1,  /* k as small as capacity allows (documents whole on a GPU) */
    ZS_AUTO_HEADS = 2,  /* every document of a node head-parallel */
    ZS_AUTO_RING = 3    /* every document of a node on the node's ring */
} zs_auto_mode;

typedef struct zs_auto_in {
    int nodes, G; /* nodes, slots (TP groups) per node */
    int u;        /* Ulysses degree inside a node (divides G); 1: no head parallelism */
    long cap;     /* tokens one slot holds */
    int span;     /* 1: documents may span nodes (head x ring units) */
    /* A document spans nodes when its work exceeds span_frac x a node's
     * share of the batch (0: 1), over ceil(work / (span_frac x share))
     * nodes at most the cluster's. */
    double span_frac;
    zs_auto_mode mode;
    int32_t ndocs;
    const int32_t *len;
    /* Per document, seconds per layer of its attention on one slot (forward
     * passes and backward) with all heads (full) and with heads / u (heads). */
    const double *attn_full, *attn_heads;
    double lin_tok; /* seconds per token per layer of the linear modules */
    int moe;        /* 1: the node synchronises between attention and linear modules */
    /* Seconds per layer of a Ulysses group's all-to-alls (every pass) with
     * `tokens` per GPU; in *hidden the part that local attention on the
     * same GPU runs under (the rest is exposed). */
    double (*a2a)(void *arg, double tokens, double *hidden);
    /* Seconds per layer per GPU of document d's attention over a window of
     * m nodes (ring steps with their transfers, all-to-alls); m = 1: the
     * node's ring. */
    double (*span_time)(void *arg, int32_t d, int m);
    void *arg;
    /* 1: per node, also weigh remapping inside it: the node's local
     * documents LPT over its GPUs on attention alone, every GPU's linear
     * modules at the node's mean tokens (the tokens above it, all from
     * local documents, computed on GPUs below it), each GPU charged
     * remap_time of the tokens it sends or receives; taken in a node
     * where it prices lower than the layout without it. */
    int remap;
    /* Seconds per layer of moving `tokens` tokens' activations in and out
     * of attention (every pass), counted whole on the GPU (not hidden). */
    double (*remap_time)(void *arg, double tokens);
} zs_auto_in;

typedef enum zs_auto_kind {
    ZS_AUTO_UNIT_SPAN = 0,  /* u x r over a window of nodes */
    ZS_AUTO_UNIT_HEADS = 1, /* Ulysses over u GPUs of a node (r = 1) */
    ZS_AUTO_UNIT_LOCAL = 2, /* whole documents on one GPU (u = r = 1) */
    ZS_AUTO_UNIT_RING = 3   /* u x r = G over one node's slots (its ring, NVLink) */
} zs_auto_kind;

/* A set of slots running one layout over its documents: slots first ..
 * first + u x r - 1; Ulysses group i is slots first + i u .. first + i u +
 * u - 1, ring j (head subset j) is slot first + i u + j of every group i. */
typedef struct zs_auto_unit {
    zs_auto_kind kind;
    int u, r, first;
    int start, n; /* documents docs[start .. start + n), batch order */
} zs_auto_unit;

typedef struct zs_auto_plan {
    int nunits; /* span units first, then ring, head and local units */
    zs_auto_unit *unit;
    int32_t *docs;
    double makespan; /* predicted seconds per layer of the slowest GPU */
    /* The same with the same partition and every node's k the smallest
     * (local) or all its documents (head-parallel, the node's ring);
     * HUGE_VAL when not feasible or not searched (a forced mode). */
    double makespan_local, makespan_heads, makespan_ring;
    double *node_time; /* per node: predicted seconds per layer */
    int *node_k;       /* per node: documents head-parallel or on the node's ring */
    int *node_ring;    /* per node: 1 when those k are on the ring */
    int *node_n;       /* per node: documents (span documents not counted) */
    int *node_remap;   /* per node: 1 when its linear tokens are remapped (in->remap) */
    int remap_nodes;   /* nodes remapped */
    int nspan, max_m;  /* documents spanning nodes, the widest window */
    int heads_docs, ring_docs, local_docs; /* ring: on a node's ring (capacity ones too) */
    int nodes_heads, nodes_ring, nodes_local, nodes_mixed; /* nodes by strategy */
} zs_auto_plan;

/* Runs the search. Errors: a document no layout can hold (ZS_EINPUT,
 * naming it), out of memory. *out untouched on failure. */
int zs_auto_search(const zs_auto_in *in, zs_auto_plan **out, zs_err *e);
void zs_auto_plan_free(zs_auto_plan *p);

#endif

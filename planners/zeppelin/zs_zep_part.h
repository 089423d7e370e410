/* Zeppelin's hierarchical sequence partitioning (SYSTEM.md 5.1,
 * Algorithms 1 and 2): decides for every document of a global batch whether
 * it stays whole on one GPU (local), is split over GPUs of one node
 * (intra-node ring) or over GPUs of several nodes (inter-node ring), and
 * which GPUs hold it. Works on slots (one per TP group; slots_per_node per
 * node, node-major) and a token capacity per slot from the memory model.
 * Pure placement: the caller prices documents and rings (hooks, in seconds;
 * zs_zep_predict.h prices them through the cost model), so this module
 * depends on zs_err only. */
#ifndef ZS_ZEP_PART_H
#define ZS_ZEP_PART_H

#include <stdint.h>

#include "zs_err.h"

#define ZS_ZEP_MAX_SLOTS_PER_NODE 64 /* inter-node rings are rotated up to this node size */

typedef enum zs_zep_class {
    ZS_ZEP_LOCAL = 0, /* whole on one slot */
    ZS_ZEP_INTRA = 1, /* ring over slots of one node */
    ZS_ZEP_INTER = 2, /* ring over slots of several nodes */
    ZS_ZEP_GLOBAL = 3 /* hier=0: the one ring over every slot */
} zs_zep_class;

const char *zs_zep_class_name(int c);

typedef struct zs_zep_part_in {
    int nodes, slots_per_node;
    int64_t cap;    /* tokens per slot (memory model) */
    double m_intra; /* hier=0: documents longer than this join the global ring */
    int hier;       /* 0: every document longer than m_intra joins one global ring */
    int32_t ndocs;
    const int32_t *len;
    const double *w; /* cost of each whole document on one slot (= member(len, 1)) */
    /* Pricing (same unit as w): a member's share of a document of len
     * tokens split over a ring of g slots, and the ring's span (its
     * duration however idle its members are) when it spans `nodes` nodes
     * whose NICs `sharing` inter-node rings share, itself included. */
    double (*member)(void *arg, int32_t len, int g);
    double (*span)(void *arg, int32_t len, int g, int nodes, int sharing);
    void *price_arg;
    /* NICs per node (0 or 1: one). An inter-node ring enters and leaves each
     * node through one GPU's NIC; the k-th ring on a node is rotated so it
     * uses the k-th NIC (mod the node's NICs), so up to that many rings
     * cross a node without sharing a NIC even with routing off. */
    int nics_per_node;
    /* Optional GPU-level pricing (NULL: the same as above): the cost of
     * each whole document on one slot, and the hooks' argument, for
     * placing documents inside a node (Algorithm 2) and for every slot's
     * load and span. A plan that remaps tokens inside each node balances
     * nodes on attention plus linear modules (w, price_arg) and GPUs on
     * attention alone (w_gpu, price_arg_gpu). */
    const double *w_gpu;
    void *price_arg_gpu;
    /* Optional: the documents longest first, ties on the lower index (what
     * zs_zep_partition sorts itself when NULL); a caller partitioning one
     * batch several times sorts it once (zs_zep_part_order). */
    const int32_t *order;
} zs_zep_part_in;

/* Fills order[0..ndocs) with the documents longest first, ties on the lower
 * index. */
int zs_zep_part_order(const int32_t *len, int32_t ndocs, int32_t *order, zs_err *e);

/* One ring group: slots in ring order (slot k holds zigzag chunks k and
 * 2g-1-k of each document, exact chunking): node by node, inside a node in
 * slot order from the ring's entry slot (inter-node rings are rotated, see
 * nics_per_node). */
typedef struct zs_zep_ring {
    int cls; /* zs_zep_class */
    int g;
    int *slots;
    int ndocs;
    int32_t *docs;
} zs_zep_ring;

typedef struct zs_zep_part {
    int nslots, nodes, slots_per_node;
    int32_t ndocs;
    int8_t *cls;      /* per document */
    int32_t *ring_of; /* per document: ring index, -1 when local */
    int32_t *slot_of; /* per document: slot when local, -1 otherwise */
    int nrings;
    zs_zep_ring *rings; /* inter-node rings first, then intra-node, in placement order */
    int64_t *tokens;    /* per slot: attention-layout tokens */
    double *load;       /* per slot: attention cost charged */
    double *span;       /* per slot: longest span of the rings it belongs to */
    double makespan;    /* predicted: max over slots of max(load, span) */
    int count[4];       /* documents per class */
} zs_zep_part;

/* Places the batch. A document no placement can hold (memory) is a
 * ZS_EINPUT error naming it. *out is new (free with zs_zep_part_free). */
int zs_zep_partition(const zs_zep_part_in *in, zs_zep_part **out, zs_err *e);
void zs_zep_part_free(zs_zep_part *p);

/* Tokens slot k of a ring of g slots holds of a document of len tokens
 * (chunks k and 2g-1-k, exact chunking). */
int64_t zs_zep_ring_share(int32_t len, int g, int k);

#endif

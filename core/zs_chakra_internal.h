/* Internal to the Chakra reader (zs_chakra_read.c decodes the files into
 * these compact nodes, zs_chakra_build.c turns them into a schedule): one
 * node per Chakra node, its dependencies as the ids the file gave, the
 * names and communicators of the whole trace set interned once. Not for
 * use outside core/zs_chakra_*.c. */
#ifndef ZS_CHAKRA_INTERNAL_H
#define ZS_CHAKRA_INTERNAL_H

#include <stdint.h>

#include "zs_chakra.h"

/* Chakra's NodeType values (core/zs_chakra_et.proto). */
enum {
    CK_INVALID_NODE = 0,
    CK_METADATA_NODE = 1,
    CK_MEM_LOAD_NODE = 2,
    CK_MEM_STORE_NODE = 3,
    CK_COMP_NODE = 4,
    CK_COMM_SEND_NODE = 5,
    CK_COMM_RECV_NODE = 6,
    CK_COMM_COLL_NODE = 7
};

/* Chakra's CollectiveCommType values. */
enum {
    CK_ALL_REDUCE = 0,
    CK_REDUCE = 1,
    CK_ALL_GATHER = 2,
    CK_GATHER = 3,
    CK_SCATTER = 4,
    CK_BROADCAST = 5,
    CK_ALL_TO_ALL = 6,
    CK_REDUCE_SCATTER = 7,
    CK_REDUCE_SCATTER_BLOCK = 8,
    CK_BARRIER = 9
};

#define CK_PASS (-1) /* a node that only passes its dependencies on */

typedef struct ck_node {
    uint64_t id;
    int8_t kind;    /* zs_op_kind, or CK_PASS */
    int8_t ck;      /* compute kind, collective kind or marker kind */
    int8_t stream;  /* the op's stream */
    uint16_t flags; /* ZS_OPF_* */
    int32_t label;  /* ck_set.labels */
    int32_t peer, tag;
    int32_t pg; /* ck_set.pgs */
    int32_t heads;
    int32_t value;            /* marker value */
    int32_t nblk;             /* attention: blocks [blk0, blk0 + nblk) of the rank's pool */
    int64_t blk0;             /* (zepsim) or of ck_rank.blocks; a send or receive: its
                                 carry list, ck_rank.carry[blk0, blk0 + nblk) */
    double t, bytes, m, n, k; /* seconds, bytes, GEMM shape */
    int64_t dep0;             /* ck_rank.deps[dep0 .. dep0 + ndata + nctrl) */
    int32_t ndata, nctrl;     /* data_deps, then ctrl_deps (ids) */
    int32_t nown;             /* leading data_deps that are the op's own dependencies */
} ck_node;

typedef struct ck_rank {
    const char *path;
    ck_node *nodes;
    int64_t n, cap;
    uint64_t *deps;
    int64_t ndeps, deps_cap;
    zs_attn_block *blocks; /* zepsim: the rank's attention block pool */
    int64_t nblocks;
    zs_carry *carry; /* zepsim: carry lists of the rank's transfers (zs_carry) */
    int64_t ncarry, carry_cap;
    int32_t *segs; /* zepsim: (ops, repeat) pairs */
    int32_t nsegs;
    int zs; /* 1 when the file carries zepsim's metadata */
} ck_rank;

/* A communicator, by pg_name. */
typedef struct ck_pg {
    char name[64];
    int32_t *ranks; /* NULL until known */
    int32_t n;
    int32_t tag;
    int has_tag;   /* tag given (zs_pg_tag) */
    int32_t rank0; /* where it was first used: rank, node index */
    int64_t node0;
} ck_pg;

/* zepsim's metadata (rank 0's file). */
typedef struct ck_meta {
    int have;
    int nranks, layers, heads, micro;
    int dims[4];
    char method[64], model[64], cluster[64], cost[256];
    char streams[ZS_MAX_STREAMS][16];
    int nstreams;
    int32_t *docs;
    int32_t ndocs;
    int32_t *pieces; /* (doc, t0, t1, rank, layout, micro) */
    int64_t npieces;
} ck_meta;

typedef struct ck_set {
    int nranks;       /* ranks of the trace */
    int nranks_alloc; /* rank files allocated (>= nranks) */
    ck_rank *ranks;
    char **labels;
    int32_t nlabels, labels_cap;
    int32_t *label_hash; /* open addressing: label index + 1, 0 empty */
    int32_t hash_cap;
    ck_pg *pgs;
    int32_t npgs, pgs_cap;
    ck_meta meta;
    int cpu_stream; /* 1 when some node runs on the "cpu" stream */
    zs_plan_limits lim;
    int64_t total; /* nodes read so far, all ranks */
    zs_err *e;
} ck_set;

/* Interns a node name (truncated to 127 bytes): its index, or < 0. */
int32_t zs__ck_label(ck_set *set, const char *name, size_t len);
/* Finds or adds a communicator by name: its index, or < 0. */
int32_t zs__ck_pg(ck_set *set, const char *name);
/* Reads rank `rank`'s file (set->ranks[rank].path) into its nodes. */
int zs__ck_read_file(ck_set *set, int rank);
/* Builds the schedule from a read trace set. */
int zs__ck_build(ck_set *set, zs_schedule **out);
/* A ZS_EINPUT error at a file and node: "<path>: node <id> ('name')". */
int zs__ck_bad(ck_set *set, const ck_rank *r, const ck_node *nd, const char *fix, const char *fmt,
               ...) __attribute__((format(printf, 5, 6)));

#endif

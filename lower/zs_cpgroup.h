/* Shared setup of the context-parallel baselines (te-cp, llama-cp,
 * hybrid-dp, ulysses, usp), so that every one of them sees the same batch
 * split the same way and differs only in how a CP group runs attention.
 *
 * Layout: tp x cp x dp with pp = 1; a CP group is cp consecutive TP groups
 * (so CP fills a node before it crosses one), DP runs across CP groups.
 * The global batch is split over the DP groups by a balanced greedy:
 * documents longest first (ties by batch index) to the group with the
 * fewest tokens that still has room, where "room" is the method's own
 * per-GPU footprint of the document against the memory model's capacity.
 * Internal to the baseline planners (zs__ names). Depends on the planner
 * interface, the iteration builder and the memory model. */
#ifndef ZS_CPGROUP_H
#define ZS_CPGROUP_H

#include "zs_iteration.h"
#include "zs_planner.h"
#include "zs_ring.h"

/* Upper bound on the tokens one GPU of a CP group of cp GPUs holds when the
 * group takes a document of len tokens (padding included). */
typedef int64_t (*zs_cpg_footprint_fn)(int32_t len, int cp);

typedef struct zs_cpg {
    int tp, cp, dp, nslots, nranks;
    zs_mem_cfg mc;
    long cap; /* tokens one GPU can hold (memory model) */
    int32_t ndocs;
    const int32_t *len; /* borrowed from the batch */
    int32_t *gdocs;     /* documents of group g: gdocs[gstart[g] .. gstart[g+1]), batch order */
    int *gstart;        /* dp + 1 entries */
    int64_t *gtokens;   /* tokens per group */
} zs_cpg;

/* Reads the options tp (zs_opt_tp) and cp (the planner's cp_row; cp_default,
 * capped at the number of TP groups when it is the default), checks the layout, computes the token
 * capacity and splits the batch. Errors name the option or the document. */
int zs_cpg_init(const zs_plan_ctx *ctx, const zs_batch *b, const zs_opt_spec *cp_row,
                long cp_default, zs_cpg_footprint_fn fp, zs_cpg *out, zs_err *e);

/* The cp row of a baseline's option table (the planner words its default
 * and meaning; the range is the same for all). */
#define ZS__CPB_OPT_CP(computed_, help_)                                                           \
    {                                                                                              \
        .key = "cp", .type = ZS_OPT_INT, .min = 1, .max = 1L << 20, .def = 16,                     \
        .computed = computed_, .help = help_                                                       \
    }
void zs_cpg_free(zs_cpg *c);

/* Slot of CP rank k of DP group g, and the rank (TP rank 0) of a slot. */
static inline int zs_cpg_slot(const zs_cpg *c, int g, int k)
{
    return g * c->cp + k;
}
static inline int zs_cpg_rank(const zs_cpg *c, int slot)
{
    return slot * c->tp;
}

/* Footprints: zigzag chunks of a document padded to a multiple of 2cp, and
 * an even share (ceil(len / cp)). */
int64_t zs_cpg_fp_zigzag(int32_t len, int cp);
int64_t zs_cpg_fp_even(int32_t len, int cp);

/* Bytes of K and V (or dK and dV) of n tokens in one layer on one GPU. */
double zs_cpg_kv_bytes(const zs_model *m, int tp, int64_t tokens);

/* Adds the layout note every baseline reports. */
void zs_cpg_note(const zs_cpg *c, zs_plan_report *rep, const char *method_layout);

/* Error for a CP group whose GPU would hold more tokens than fit. */
int zs_cpg_overflow(const zs_cpg *c, int g, int64_t tokens, zs_err *e);

/* A new schedule for the layout with the batch's documents set and an
 * extra stream "cp" for the method's attention communication (real systems
 * run CP traffic on its own stream, so it never queues behind the
 * data-parallel gradient collectives). */
int zs_cpg_schedule(const zs_cpg *c, zs_schedule **out, int *cp_stream, zs_err *e);

/* Places tokens [t0, t1) of a document on a slot for attention and for the
 * linear modules alike (these baselines do not remap); returns the
 * schedule's check. */
int zs_cpg_piece(zs_schedule *s, const zs_cpg *c, int32_t doc, int32_t t0, int32_t t1, int slot,
                 zs_err *e);

/* Cuts a packed sequence, documents docs[0..n) in this order, into
 * `shards` contiguous shards (the remainder tokens one each to the first
 * shards) and places shard k on slot first + k, for attention and the
 * linear modules alike, in micro-batch `micro`; slot_tokens[slot] adds
 * each slot's tokens. Ulysses-style sequence parallelism (ulysses, flexsp).
 * Returns the schedule's check. */
int zs_cpg_place_packed(zs_schedule *s, const zs_cpg *c, const int32_t *docs, int n, int shards,
                        int first, int micro, int64_t *slot_tokens, zs_err *e);

/* Appends one attention op over whole documents (local attention, no
 * communication) with `heads` query heads (0: the iteration's) to a slot's
 * rank after *dep and sets *dep to it (unchanged when there is nothing to
 * compute). Returns ZS_OK, or ZS_ENOMEM when its scratch space cannot be
 * had; a failed append is the schedule's to report (zs_schedule_check). */
int zs_cpg_local_attn(zs_iter *it, int stage, int slot, const int32_t *docs, int n, int heads,
                      int backward, int64_t *dep, zs_err *e);

/* A planner's last step: frees c, then hands s to *out when rc is ZS_OK
 * and frees it otherwise; returns rc. */
int zs_cpg_finish(zs_cpg *c, zs_schedule *s, int rc, zs_schedule **out);

/* Runs the iteration builder with one micro-batch, pp = 1 and the given
 * linear tokens per slot. */
int zs_cpg_build(const zs_cpg *c, const zs_plan_ctx *ctx, zs_schedule *s, const int64_t *lin,
                 int (*emit)(void *, zs_iter *, int, int, int, zs_err *), void *arg, zs_err *e);

/* ---- a CP group's attention under a token layout (te-cp, llama-cp;
 * zs_cplayout.h), in lower/zs_cpgroup_attn.c --------------------------------------- */

/* The layout option of both planners; values_ lists the layouts with the
 * planner's default first (option tables default ENUMs to their first
 * value). */
#define ZS__CPB_OPT_LAYOUT(values_)                                                                \
    {                                                                                              \
        .key = "layout", .type = ZS_OPT_ENUM, .values = values_,                                   \
        .help = "CP token layout: zigzag and ring and stripe pass KV around a ring, llama3 "       \
                "all-gathers it (docs/methods.md)"                                                 \
    }

/* Reads the layout option through its row. */
int zs_cpg_layout(zs_opts *o, const zs_opt_spec *row, zs_cp_layout *out, zs_err *e);

typedef struct zs_cpg_attn {
    zs_cp_layout layout;
    zs_ring_chunking chunking; /* PAD: padded to whole chunks (TE), EXACT: cut exactly */
    int cp_stream;
    const int *slots;     /* nslots, identity: group g's ring is slots[g*cp .. (g+1)*cp) */
    zs_ring_xfer_fn xfer; /* ring transfers (NULL: direct send/receive) */
    void *xfer_arg;
    const int64_t *shard; /* llama3: per slot, tokens held (collectives move the largest) */
} zs_cpg_attn;

/* Places every document's chunks on its group's slots by the layout (for
 * attention and the linear modules alike) and adds to lin[slot] the tokens
 * each slot runs (padding included with PAD) and to *padded the padding. */
int zs_cpg_place(zs_schedule *s, const zs_cpg *c, const zs_cpg_attn *a, int64_t *lin,
                 int64_t *padded, zs_err *e);

/* Emits one attention pass of every CP group: a ring per group (ring
 * layouts, lower/zs_ring.c) or an all-gather of K and V, the attention of
 * the local queries against the gathered keys and, backward, a
 * reduce-scatter of dK and dV (llama3). */
int zs_cpg_attn_emit(zs_iter *it, int stage, const zs_cpg *c, const zs_cpg_attn *a, int backward,
                     zs_err *e);

#endif

/* Lowering a plan of context-parallel groups per micro-batch (the
 * zs_dyncp_plan of zs_dyncp_sched_internal.h), shared by the methods that
 * draw a group per document or pack from all GPUs (dyn-cp, bytescale):
 * each group of one GPU runs its documents' attention locally, each larger
 * one a TE zigzag ring over its consecutive slots; every GPU holds its
 * documents' zigzag chunks (padded) in the micro-batch the plan gives, and
 * a GPU without a group in a micro-batch has no attention in it. Private to
 * planners/. */
#ifndef ZS_GROUPS_INTERNAL_H
#define ZS_GROUPS_INTERNAL_H

#include "zs_cpgroup.h"
#include "zs_dyncp_sched_internal.h"

/* A planner's addition to each group's attention (ByteScale's offloading
 * copies): called at the start of every emitter call with g = -1, then
 * before each group's attention, first and n its slots and dep[k] slot k's
 * attention entry, which it may replace (the attention then follows it). */
typedef int (*zs_groups_hook)(void *arg, zs_iter *it, int stage, int micro, int backward, int g,
                              int first, int n, int64_t *dep, zs_err *e);

typedef struct zs_groups {
    zs_cpg c;
    int cp_stream;
    int *slots; /* identity: a group's ring is slots + first */
    zs_dyncp_plan p;
    zs_groups_hook hook; /* NULL: none */
    void *hook_arg;
    const char *hook_stream; /* a stream zs_groups_build adds for it (NULL: none) */
    int hook_stream_id;      /* its index, set by zs_groups_build */
} zs_groups;

/* The attention emitter of the iteration builder (arg: a zs_groups). */
int zs_groups_emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e);

/* Places every document's tokens (whole on a group of one, zigzag chunks
 * on a ring) in its micro-batch, adds each GPU's linear tokens per
 * micro-batch into lin[micro * nslots + slot] (padding included: padded
 * tokens run through every layer) and the padding into *pad. */
int zs_groups_place(const zs_groups *D, zs_schedule *s, int64_t *lin, int64_t *pad, zs_err *e);

/* Lowers G->p (its scheduler's plan) to a new schedule in *s: at most
 * INT16_MAX micro-batches (else an error naming `method`), every GPU's
 * pieces and linear tokens per micro-batch, and the iteration around the
 * groups' attention; *pad receives the padding tokens. On failure *s may
 * hold a partial schedule, which the caller's zs_cpg_finish frees. */
int zs_groups_build(zs_groups *G, const zs_plan_ctx *ctx, const char *method, zs_schedule **s,
                    int64_t *pad, zs_err *e);

#endif

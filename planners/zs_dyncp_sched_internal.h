/* Megatron-Core Dynamic Context Parallelism's scheduler (Megatron-LM,
 * `--dynamic-context-parallel --sequence-packing-scheduler
 * default_dynamic_cp`), and the static scheduler it is measured against
 * (`dp_balanced`), reconstructed from the documented algorithm
 * (docs/methods.md, docs/peers.md): which documents a micro-batch packs,
 * on which power-of-two group of the DP x CP ranks each runs.
 *
 * Dynamic: documents longest first (ties: batch order) are placed one
 * micro-batch ("wave") at a time over all N = DP x CP slots. A document of
 * len tokens needs the smallest power of two n >= min_cp whose padded
 * per-rank share (zigzag: 2 * ceil(len / 2n); len for n = 1) is at most
 * max_seqlen.
 * Its work on each of n ranks is len^2 / n. For each document in order, the
 * sizes n, 2n, 4n, .. up to N are tried: an existing group of that size
 * whose packed shares stay within max_seqlen, or a new group of the
 * lowest-numbered free slots; the candidate whose largest rank work after
 * the placement is lowest wins (first found on ties), provided it stays
 * within 1.05 x max_seqlen x the wave's longest document; a document that
 * finds none waits for the next wave. Free slots left at the end are
 * filled by doubling the smallest group (its documents spread over twice
 * the slots, later groups moved up), and when no group can double, the
 * wave is redone as one group of all N slots holding as many documents,
 * longest first, as fit. Waves repeat until every document is placed.
 *
 * Static: documents in batch order are packed into sequences of at most
 * max_seqlen tokens per rank of a CP group of cp slots (padded shares),
 * the number of packs is raised to a multiple of dp by moving the last
 * documents of the last packs that hold several into packs of their own,
 * and micro-batch m gives pack m * dp + j to CP group j (slots j*cp ..).
 *
 * Pure algorithm on lengths (the planner lowers the plan to a schedule);
 * depends on zs_err only. */
#ifndef ZS_DYNCP_SCHED_INTERNAL_H
#define ZS_DYNCP_SCHED_INTERNAL_H

#include <stdint.h>

#include "zs_err.h"

/* A plan: waves (micro-batches) of groups, each group a block of
 * consecutive slots running some documents. */
typedef struct zs_dyncp_plan {
    int nslots;
    int nwaves, ngroups;
    int *wave_start; /* groups of wave w: [wave_start[w], wave_start[w + 1]) */
    int *first;      /* per group: its first slot */
    int *size;       /* per group: its slots (a power of two, or nslots) */
    int *doc_start;  /* per group: its documents docs[doc_start[g] .. doc_start[g + 1]) */
    int32_t *docs;   /* document indices, each exactly once */
} zs_dyncp_plan;

/* Per-rank tokens of a document of len tokens on a group of n slots
 * (zigzag chunks padded to a multiple of 2n, as TransformerEngine needs;
 * len itself when n = 1). */
int64_t zs_dyncp_share(int32_t len, int n);

/* The group size a document needs: the smallest power of two n >= min_cp
 * (min_cp a power of two) with zs_dyncp_share(len, n) <= max_seqlen, or 0
 * when that n would exceed nslots. */
int zs_dyncp_needed(int32_t len, long max_seqlen, int min_cp, int nslots);

/* The dynamic schedule of ndocs documents over nslots slots. ZS_EINPUT
 * naming the document when one needs more than nslots slots. */
int zs_dyncp_dynamic(const int32_t *len, int32_t ndocs, int nslots, long max_seqlen, int min_cp,
                     zs_dyncp_plan *out, zs_err *e);

/* The static (dp_balanced) schedule: dp CP groups of cp slots. ZS_EINPUT
 * naming the document when one does not fit max_seqlen on cp slots. When
 * there are fewer documents than DP groups to fill, the last micro-batch
 * leaves some groups empty (Megatron stops with an assertion there). */
int zs_dyncp_static(const int32_t *len, int32_t ndocs, int cp, int dp, long max_seqlen,
                    zs_dyncp_plan *out, zs_err *e);

void zs_dyncp_plan_free(zs_dyncp_plan *p);

#endif

/* A synthetic but representative training iteration for benchmarking the
 * simulator (until the real planners exist): context parallelism with ring
 * attention. Every CP group of `cp` consecutive ranks (spanning nodes) holds
 * one long sequence, `tokens` per rank; per layer the forward runs the QKV
 * GEMM, `cp` ring steps (each a causal/full attention block on the compute
 * stream while the next KV shard moves to the ring neighbour on the comm
 * stream), the output projection and the MLP; the backward mirrors it (KV
 * and dKV move, GEMMs cost twice); then a data-parallel gradient all-reduce
 * over the ranks with the same CP index. Durations come from the cost
 * model, with a fixed per-rank jitter (+-5%, from `seed`) so that ranks are
 * not in lockstep. Layers are segments (forward x L, backward x L), so the
 * schedule stays small. Depends on the schedule IR and the cost model. */
#ifndef ZS_SYNTH_H
#define ZS_SYNTH_H

#include <stdint.h>

#include "zs_cost.h"
#include "zs_schedule.h"

typedef struct zs_synth_spec {
    int gpus;   /* ranks; a multiple of cp */
    int layers; /* transformer layers simulated (the model's, or fewer for folding) */
    int cp;     /* ring size */
    int tokens; /* tokens per rank */
    uint64_t seed;
} zs_synth_spec;

/* Builds the schedule; *out is new (free with zs_schedule_free). */
int zs_synth_cp_ring(const zs_cost *cost, const zs_synth_spec *sp, zs_schedule **out, zs_err *e);

#endif

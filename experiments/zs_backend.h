/* The backends a schedule runs on, by name: one row per backend ({name,
 * run} and what a reader needs to know about its numbers), so `simulate`,
 * `compare`, `run`, the spec reader and the experiment runner accept,
 * list and run the same set without comparing strings. Adding a backend is
 * one row in zs_backend.c.
 *   sim       SimGrid (sim/): flows share links max-min fairly;
 *   analytic  the analytic evaluator (exec/zs_analytic.c): no contention.
 * The CUDA/NCCL backend runs through `zepsim hw run` (hw/), not here.
 * Depends on the core and sim/. */
#ifndef ZS_BACKEND_H
#define ZS_BACKEND_H

#include <stddef.h>

#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_result.h"
#include "zs_schedule.h"

/* What a backend runs a schedule with (all borrowed). */
typedef struct zs_backend_in {
    const zs_cluster *cluster;
    const zs_cost *cost;  /* prices ops on backends that price them (analytic) */
    const char *timeline; /* timeline path (zs_timeline.h), NULL: none; every backend writes one */
    const char *tl_ranks; /* timeline ranks (zs_tl_cfg.ranks): NULL or "" automatic */
    int tl_layer0, tl_layer1; /* timeline layers, -1: all */
    int fold; /* repeated segments: 0 simulate every iteration, 1 fold exact repeats,
               * 2 also steady ones (exec/zs_fold.h) */
} zs_backend_in;

typedef struct zs_backend {
    const char *name;
    const char *summary;
    /* What sets the ops' durations, for a report's header: NULL when it is
     * the cost model (cost->desc), else a phrase. */
    const char *durations;
    /* A caveat printed under comparisons on this backend, or NULL. */
    const char *caveat;
    /* Why a NIC can be busy longer than the iteration on this backend (a
     * note under a comparison that shows it), or NULL: it cannot, and a
     * result that shows it is a bug to report. */
    const char *nic_over;
    /* Runs s; *out is a new result (zs_result_free). Any number of calls
     * per process. */
    int (*run)(const zs_schedule *s, const zs_backend_in *in, zs_result **out, zs_err *e);
    /* The same run in this process, nothing around it (what a benchmark
     * times); SimGrid allows one platform per process, so a caller of the
     * sim row's runs it once, in a fresh child. */
    int (*run_here)(const zs_schedule *s, const zs_backend_in *in, zs_result **out, zs_err *e);
    /* Host time of a study point on this backend relative to SimGrid's (1),
     * for progress estimates only (zs_point_cost_hint). */
    double rel_cost;
} zs_backend;

const zs_backend *zs_backend_find(const char *name); /* case-insensitive; NULL: none */
const zs_backend *zs_backend_at(int i);              /* NULL past the end */
int zs_backend_count(void);
/* The names joined by sep ("sim|analytic"), into buf (truncated to n). */
void zs_backend_names(const char *sep, char *buf, size_t n);
/* zs_backend_find, or `code` "unknown backend 'x'" with where and a fix
 * listing them (and the nearest). *out untouched on failure. */
int zs_backend_lookup(const char *name, const char *where, int code, const zs_backend **out,
                      zs_err *e);
/* A zs_backend_in with no timeline. */
void zs_backend_in_init(zs_backend_in *in, const zs_cluster *cluster, const zs_cost *cost);

#endif

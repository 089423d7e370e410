/* The backends a schedule runs on, by name: one row per backend ({name,
 * run} and what a reader needs to know about its numbers), so `simulate`,
 * `compare`, `run`, `bench`, the spec reader and the experiment runner
 * accept, list and run the same set without comparing strings. Adding a
 * backend is one row in zs_backend.c.
 *   sim       SimGrid (sim/): flows share links max-min fairly;
 *   analytic  the analytic evaluator (exec/zs_analytic.c): no contention;
 *   hw        the GPUs, through CUDA and NCCL (hw/): measured. A row in
 *             every build; where the CUDA toolkit was missing it is
 *             listed as not built and choosing it says so. `zepsim hw run`
 *             adds its own options (warm-up, iterations, processes).
 * What every backend executes with (timeline, folding) is one
 * zs_exec_opts (exec/zs_exec.h). Depends on the core, sim/ and hw/. */
#ifndef ZS_BACKEND_H
#define ZS_BACKEND_H

#include <stddef.h>

#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_exec.h"
#include "zs_result.h"
#include "zs_schedule.h"
#include "zs_sim.h"

/* What a backend runs a schedule with (all borrowed). */
typedef struct zs_backend_in {
    const zs_cluster *cluster;
    const zs_cost *cost; /* prices ops on backends that price them (analytic) */
    zs_exec_opts exec;   /* timeline and folding; every backend writes timelines */
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
    /* ZS_OK when this build can run the backend, else an error saying why
     * (hw without the CUDA toolkit); NULL: always. */
    int (*usable)(zs_err *e);
    /* The counters of the engine run_here just ran in this process
     * (zs_sim_last_stats), for `bench`; NULL: the backend keeps none. */
    void (*engine_stats)(zs_sim_stats *out);
    /* 1: the timeline it writes is the configuration's path and holds
     * simulated transfers, so a study point reads the cross-node ones back
     * (zs_tlxnode_internal.h); 0: measured, and one file per process (hw). */
    int xnode_from_timeline;
} zs_backend;

const zs_backend *zs_backend_find(const char *name); /* case-insensitive; NULL: none */
const zs_backend *zs_backend_at(int i);              /* NULL past the end; usable or not */
int zs_backend_count(void);
/* Adds a backend at run time (a program embedding zepsim, a test): one
 * row, borrowed (it must outlive its use), found by every lookup after the
 * built-in ones. Errors: no name or run functions, a name already taken,
 * more than ZS_BACKEND_ADDED_MAX rows. Register before forking workers. */
#define ZS_BACKEND_ADDED_MAX 8
int zs_backend_register(const zs_backend *b, zs_err *e);
/* ZS_OK when this build can run b (its usable hook), else why not. */
int zs_backend_usable(const zs_backend *b, zs_err *e);
/* The usable backends' names joined by sep ("sim|analytic"), into buf
 * (truncated to n). */
void zs_backend_names(const char *sep, char *buf, size_t n);
/* zs_backend_find, or `code` "unknown backend 'x'" with where and a fix
 * listing them (and the nearest); a backend this build cannot run is its
 * usable hook's error. *out untouched on failure. */
int zs_backend_lookup(const char *name, const char *where, int code, const zs_backend **out,
                      zs_err *e);
/* A zs_backend_in with zs_exec_opts_init's execution (no timeline, exact
 * repeats folded). */
void zs_backend_in_init(zs_backend_in *in, const zs_cluster *cluster, const zs_cost *cost);

#endif

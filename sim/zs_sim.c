/* The SimGrid executor's entry point (see zs_sim.h for what is modelled,
 * zs_sim_internal.h for how the files divide the work): checks the schedule,
 * proves it can finish, starts the engine on the generated platform, runs
 * one actor per rank, and turns the counters into a zs_result. */
#include "zs_sim_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "zs_analytic.h"

/* SimGrid holds one platform and one engine per process and cannot be
 * reset: a second zs_sim_run in the same process is refused (callers that
 * simulate several schedules use zs_sim_run_forked). */
static int g_ran;
/* The counters of that one simulation, kept for zs_sim_last_stats. */
static zs_sim_stats g_stats;

void zs_sim_last_stats(zs_sim_stats *out)
{
    *out = g_stats;
}

void zs_sim_opts_init(zs_sim_opts *o)
{
    memset(o, 0, sizeof *o);
    zs_exec_opts_init(&o->exec);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Everything that can be checked before the engine starts. */
static int check_first(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o, zs_err *e)
{
    if (g_ran)
        return zs_err_set(e, ZS_EUNSUPPORTED, "zs_sim_run",
                          "use zs_sim_run_forked to simulate several schedules in one process",
                          "SimGrid allows one platform per process and this process already "
                          "ran a simulation");
    if (s->nranks > zs_cluster_gpus(c))
        return zs_err_set(e, ZS_EINPUT, c->name, "raise --nodes or plan for fewer GPUs",
                          "the schedule has %d ranks but cluster '%s' has %d GPUs", s->nranks,
                          c->name, zs_cluster_gpus(c));
    if (s->nstreams < 1 || s->nstreams > ZS_MAX_STREAMS)
        return zs_err_set(e, ZS_EINVALID, NULL, "rebuild the schedule",
                          "the schedule has %d streams", s->nstreams);
    int rc = zs_platform_check(c, e);
    if (rc)
        return rc;
    /* Prove it can finish first: a deadlocked schedule gets a clear error
     * instead of SimGrid's deadlock report. */
    zs_analytic_opts dry;
    zs_analytic_opts_init(&dry);
    dry.dry = 1;
    dry.exec.fold = o ? o->exec.fold : ZS_FOLD_EXACT;
    zs_result *tmp = NULL;
    if ((rc = zs_analytic_run(s, NULL, &dry, &tmp, e)))
        return rc;
    zs_result_free(tmp);
    if (o && o->platform_out && (rc = zs_platform_write_file(c, o->platform_out, e)))
        return rc;
    return ZS_OK;
}

/* After the engine stopped: the result, or why the run failed. */
static int finish(sim *x, zs_result **out, zs_err *e)
{
    const zs_schedule *s = x->s;
    double end = simgrid_get_clock();
    int all = 1;
    for (int r = 0; r < s->nranks; r++)
        all &= x->ranks[r].finished;
    if (x->failed || !all) {
        if (x->failed)
            *e = x->err;
        else
            zs__sim_describe_stuck(x, e);
        return e->code;
    }
    for (int r = 0; r < s->nranks; r++)
        if (x->ranks[r].acct.failed)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory accounting rank %d", r);
    zs_result *res = x->r;
    for (int r = 0; r < s->nranks; r++) {
        zs_foldacct_close(&x->ranks[r].acct, &res->ranks[r], end);
        res->ranks[r].end = x->ranks[r].end;
    }
    zs_result_finish(res);
    double tl_bytes = 0;
    char tl_subset[ZS_TL_NOTE_LEN] = "";
    if (x->tl) {
        snprintf(tl_subset, sizeof tl_subset, "%s", zs_timeline_subset(x->tl));
        int rc = zs_timeline_close(x->tl, &tl_bytes, e);
        x->tl = NULL;
        if (rc)
            return rc;
    }
    zs_result_note(res,
                   "simgrid %s: CM02 max-min flows on a generated platform (NVLink, PCIe, NIC "
                   "affinity, rail leaves%s); compute ops take their predicted duration (ops "
                   "running at once on one GPU share it)",
                   "3.32", x->c->nodes > x->c->nodes_per_leaf ? ", spine" : "");
    zs_result_note(res, "collectives: the algorithm NCCL 2.29.2's model runs (as the cost model "
                        "prices it) as aggregated flows once all members arrive (one per edge of "
                        "NCCL's channel rings over the members' NICs, carrying what that "
                        "algorithm moves there; all-to-all one per pair), stretched to the cost "
                        "model's time when alone; not per message");
    zs_result_note(res, "link bytes count each flow once per class it crosses; NIC bytes count "
                        "in + out");
    if (x->o.exec.timeline)
        zs_timeline_note(res, x->o.exec.timeline, tl_bytes, tl_subset);
    if (x->fold) {
        zs_fold_stats fst;
        zs_fold_get_stats(x->fold, &fst);
        res->ops_replayed = fst.ops_replayed;
        zs_fold_note(x->fold, res);
        if (fst.folded > 0)
            zs_result_note(res, "link and NIC busy time of replayed iterations: each GPU's share "
                                "in its last simulated one");
    }
    x->r = NULL;
    *out = res;
    return ZS_OK;
}

int zs_sim_run(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o, zs_result **out,
               zs_err *e)
{
    double t0 = now_s();
    int rc = check_first(s, c, o, e);
    if (rc)
        return rc;
    g_ran = 1;
    sim x;
    memset(&x, 0, sizeof x);
    x.s = s;
    x.c = c;
    if (o)
        x.o = *o;
    else
        zs_sim_opts_init(&x.o);
    zs__sim_engine_init();
    if ((rc = zs__sim_load_platform(c, e)) || (rc = zs__sim_setup(&x, e))) {
        zs__sim_release(&x);
        return rc;
    }
    for (int r = 0; r < s->nranks; r++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", r);
        sg_actor_t a = sg_actor_init(name, x.hosts[r]);
        sg_actor_set_data(a, &x.ranks[r]);
        sg_actor_start(a, zs__sim_actor_main, 0, NULL);
    }
    simgrid_run();
    g_stats = x.stats;
    zs_result *res = NULL;
    rc = finish(&x, &res, e);
    zs__sim_release(&x);
    if (rc)
        return rc;
    res->wall_seconds = now_s() - t0;
    *out = res;
    return ZS_OK;
}

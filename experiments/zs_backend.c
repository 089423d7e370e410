/* The backend registry: see zs_backend.h. */
#include "zs_backend.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "zs_analytic.h"
#include "zs_hw.h"
#include "zs_sim.h"
#include "zs_suggest.h"

/* Every backend's result passes here: a figure that is not finite (inf or
 * NaN) is an error, never a number in a table, a database or a plot. */
static int checked(int rc, zs_result **out, zs_err *e)
{
    if (rc == ZS_OK && (rc = zs_result_check(*out, e))) {
        zs_result_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Only the analytic backend models compute-communication interference. */
static int no_interference(const char *backend, const zs_backend_in *in, zs_err *e)
{
    if (!in->exec.interference)
        return ZS_OK;
    return zs_err_set(e, ZS_EUSAGE, "--interference on",
                      "use --backend analytic, or --interference off",
                      "the %s backend does not model compute-communication interference; only "
                      "the analytic backend does",
                      backend);
}

static void sim_opts(const zs_backend_in *in, zs_sim_opts *so)
{
    zs_sim_opts_init(so);
    so->exec = in->exec;
    /* The cost model's NCCL parameters: SimGrid runs the algorithm it priced. */
    so->nccl = in->cost ? zs_cost_nccl(in->cost) : NULL;
}

/* SimGrid allows one platform per process, so every run is forked. */
static int run_sim(const zs_schedule *s, const zs_backend_in *in, zs_result **out, zs_err *e)
{
    zs_sim_opts so;
    sim_opts(in, &so);
    int rc = no_interference("sim", in, e);
    if (rc)
        return rc;
    return checked(zs_sim_run_forked(s, in->cluster, &so, out, e), out, e);
}

static int run_sim_here(const zs_schedule *s, const zs_backend_in *in, zs_result **out, zs_err *e)
{
    zs_sim_opts so;
    sim_opts(in, &so);
    int rc = no_interference("sim", in, e);
    if (rc)
        return rc;
    return checked(zs_sim_run(s, in->cluster, &so, out, e), out, e);
}

/* It knows every op's start and end, so it writes timelines too. */
static int run_analytic(const zs_schedule *s, const zs_backend_in *in, zs_result **out, zs_err *e)
{
    zs_analytic_opts ao;
    zs_analytic_opts_init(&ao);
    ao.exec = in->exec;
    return checked(zs_analytic_run(s, in->cost, &ao, out, e), out, e);
}

/* One thread per GPU of this machine, `hw run`'s defaults otherwise; the
 * timeline's nodes are the cluster's. */
static int run_hw(const zs_schedule *s, const zs_backend_in *in, zs_result **out, zs_err *e)
{
    int rc = no_interference("hw", in, e);
    if (rc)
        return rc;
    zs_hw_run_cfg cfg = zs_hw_run_cfg_default();
    cfg.exec = in->exec;
    if (in->cluster)
        cfg.gpus_per_node = in->cluster->gpus_per_node;
    return checked(zs_hw_run(s, &cfg, out, e), out, e);
}

static const zs_backend registry[] = {
    {"sim", "SimGrid: flows share NVLink, PCIe, NIC and fabric links max-min fairly",
     "durations stamped in the plan", NULL, NULL, run_sim, run_sim_here, 1.0, NULL,
     zs_sim_last_stats, 1},
    {"analytic",
     "the analytic evaluator: each op its predicted time; transfers in flight share NIC "
     "directions, NVLink, PCIe and the fabric are uncontended",
     NULL,
     "backend analytic: NICs shared, NVLink, PCIe and fabric uncontended (use --backend sim "
     "for SimGrid)",
     "The analytic backend prices transfers from bandwidth formulas (NCCL's model for "
     "collectives) and shares a NIC only in proportion to the demands it is given, so the NIC "
     "is oversubscribed and the iteration time optimistic; --backend sim shares every link",
     /* 0.16-0.5 of SimGrid's time for te-cp at 16-128 GPUs (simulate, one
      * iteration, December 2026) */
     run_analytic, run_analytic, 0.25, NULL, NULL, 1},
    /* Its cost is the GPUs' time, not the host's: counted as SimGrid's
     * for progress estimates, there being no measurement to scale by. */
    {"hw", "the GPUs of this machine through CUDA and NCCL: every op measured",
     "measured on the GPUs", NULL, NULL, run_hw, run_hw, 1.0, zs_hw_available, NULL, 0},
};

/* Rows added at run time (zs_backend_register), after the built-in ones. */
static const zs_backend *added[ZS_BACKEND_ADDED_MAX];
static int nadded;

#define NBUILTIN ((int)(sizeof registry / sizeof registry[0]))

int zs_backend_count(void)
{
    return NBUILTIN + nadded;
}

const zs_backend *zs_backend_at(int i)
{
    if (i < 0 || i >= zs_backend_count())
        return NULL;
    return i < NBUILTIN ? &registry[i] : added[i - NBUILTIN];
}

int zs_backend_register(const zs_backend *b, zs_err *e)
{
    if (!b || !b->name || !b->name[0] || !b->run || !b->run_here)
        return zs_err_set(e, ZS_EUSAGE, "backend registry",
                          "give the row a name and both run functions",
                          "a backend row needs a name, run and run_here");
    if (zs_backend_find(b->name))
        return zs_err_set(e, ZS_EUSAGE, "backend registry", "give the new backend another name",
                          "backend '%s' is already registered", b->name);
    if (nadded == ZS_BACKEND_ADDED_MAX)
        return zs_err_set(e, ZS_EUSAGE, "backend registry",
                          "add built-in backends to the table in experiments/zs_backend.c",
                          "at most %d backends can be added at run time", ZS_BACKEND_ADDED_MAX);
    added[nadded++] = b;
    return ZS_OK;
}

const zs_backend *zs_backend_find(const char *name)
{
    for (int i = 0; i < zs_backend_count(); i++)
        if (strcasecmp(zs_backend_at(i)->name, name) == 0)
            return zs_backend_at(i);
    return NULL;
}

int zs_backend_usable(const zs_backend *b, zs_err *e)
{
    return b->usable ? b->usable(e) : ZS_OK;
}

void zs_backend_names(const char *sep, char *buf, size_t n)
{
    size_t o = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < zs_backend_count() && o < n; i++)
        if (zs_backend_usable(zs_backend_at(i), NULL) == ZS_OK)
            o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? sep : "", zs_backend_at(i)->name);
}

int zs_backend_lookup(const char *name, const char *where, int code, const zs_backend **out,
                      zs_err *e)
{
    const zs_backend *b = zs_backend_find(name);
    if (b) {
        int rc = zs_backend_usable(b, e);
        if (!rc)
            *out = b;
        return rc;
    }
    zs_suggest sg;
    zs_suggest_init(&sg, name);
    for (int i = 0; i < zs_backend_count(); i++)
        zs_suggest_add(&sg, zs_backend_at(i)->name);
    char fix[256], names[128];
    zs_suggest_phrase(&sg, fix, sizeof fix);
    zs_backend_names(" or ", names, sizeof names);
    snprintf(fix + strlen(fix), sizeof fix - strlen(fix), "use %s", names);
    return zs_err_set(e, code, where, fix, "unknown backend '%s'", name);
}

void zs_backend_in_init(zs_backend_in *in, const zs_cluster *cluster, const zs_cost *cost)
{
    memset(in, 0, sizeof *in);
    in->cluster = cluster;
    in->cost = cost;
    zs_exec_opts_init(&in->exec);
}

/* SimGrid's floor: see zs_sim_floor.h. */
#include "zs_sim_floor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "zs_fork.h"
#include "zs_sim_internal.h"
#include "zs_sort.h"

typedef struct floor_run floor_run;

typedef struct floor_actor { /* one GPU's actor */
    floor_run *run;
    sg_mailbox_t out[ZS_SIM_FLOOR_WIDTH_MAX], in[ZS_SIM_FLOOR_WIDTH_MAX];
} floor_actor;

struct floor_run {
    zs_sim_floor_cfg f;
    floor_actor *a;
    long comms, wakes;
    int failed;
    char dummy; /* every message's payload: SimGrid refuses NULL */
};

static int partner(const zs_cluster *c, const zs_sim_floor_cfg *f, int g)
{
    if (!f->across)
        return g ^ 1;
    int node = g / c->gpus_per_node, local = g % c->gpus_per_node;
    return (node ^ 1) * c->gpus_per_node + local;
}

static void floor_actor_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    floor_actor *A = sg_actor_self_get_data();
    floor_run *x = A->run;
    int w = x->f.width;
    sg_comm_t comms[2 * ZS_SIM_FLOOR_WIDTH_MAX];
    void *got[ZS_SIM_FLOOR_WIDTH_MAX];
    zs_sgw *sgw = zs__sgw_new();
    if (!sgw) {
        x->failed = 1;
        return;
    }
    for (int r = 0; r < x->f.rounds && !x->failed; r++) {
        for (int k = 0; k < w; k++) {
            comms[2 * k] = sg_mailbox_put_async(A->out[k], &x->dummy, 1 << 20);
            comms[2 * k + 1] = sg_mailbox_get_async(A->in[k], &got[k]);
        }
        for (size_t left = 2 * (size_t)w; left > 0; left--) {
            ssize_t i = zs__sgw_wait_any_for(sgw, comms, left, -1);
            if (i < 0 || (size_t)i >= left) {
                x->failed = 1;
                break;
            }
            x->wakes++;
            comms[i] = comms[left - 1];
        }
        x->comms += w; /* each transfer counted once, at its sender */
    }
    zs__sgw_free(sgw);
}

typedef struct floor_job {
    const zs_cluster *c;
    const zs_sim_floor_cfg *f;
} floor_job;

static int floor_child(void *arg, zs_fork_buf *out, zs_err *e)
{
    const floor_job *j = arg;
    floor_run x;
    memset(&x, 0, sizeof x);
    x.f = *j->f;
    zs__sim_engine_init();
    int rc = zs__sim_load_platform(j->c, e);
    if (rc)
        return rc;
    x.a = calloc((size_t)x.f.gpus, sizeof *x.a);
    if (!x.a)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int g = 0; g < x.f.gpus; g++) {
        floor_actor *A = &x.a[g];
        A->run = &x;
        int p = partner(j->c, &x.f, g);
        for (int k = 0; k < x.f.width; k++) {
            char name[64];
            snprintf(name, sizeof name, "f%d-%d-%d", g, p, k);
            A->out[k] = sg_mailbox_by_name(name);
            snprintf(name, sizeof name, "f%d-%d-%d", p, g, k);
            A->in[k] = sg_mailbox_by_name(name);
        }
        char host[32];
        snprintf(host, sizeof host, "g%d", g);
        sg_host_t h = sg_host_by_name(host);
        if (!h) {
            free(x.a);
            return zs_err_set(e, ZS_ERUNTIME, host, NULL, "the platform has no such host");
        }
        sg_actor_t a = sg_actor_init(host, h);
        sg_actor_set_data(a, A);
        sg_actor_start(a, floor_actor_main, 0, NULL);
    }
    clock_t t0 = clock();
    simgrid_run();
    zs_sim_floor_out o = {x.comms, x.wakes, (double)(clock() - t0) / CLOCKS_PER_SEC,
                          simgrid_get_clock(), 0};
    free(x.a);
    if (x.failed)
        return zs_err_set(e, ZS_ERUNTIME, "floor benchmark", NULL,
                          "SimGrid reported a failed communication");
    return zs_fork_buf_add(out, &o, sizeof o, e);
}

int zs_sim_floor_forked(const zs_cluster *c, const zs_sim_floor_cfg *f, zs_sim_floor_out *out,
                        zs_err *e)
{
    int gpus = zs_cluster_gpus(c);
    if (f->gpus < 2 || f->gpus % 2 || f->gpus > gpus)
        return zs_err_set(e, ZS_EUSAGE, "floor benchmark", "use an even count up to the cluster's",
                          "%d GPUs on a cluster of %d", f->gpus, gpus);
    if (f->across && (c->nodes < 2 || f->gpus % (2 * c->gpus_per_node)))
        return zs_err_set(e, ZS_EUSAGE, "floor benchmark", "across nodes, use whole pairs of nodes",
                          "%d GPUs do not fill pairs of %d-GPU nodes", f->gpus, c->gpus_per_node);
    if (f->width < 1 || f->width > ZS_SIM_FLOOR_WIDTH_MAX || f->rounds < 1)
        return zs_err_set(e, ZS_EUSAGE, "floor benchmark", NULL,
                          "width must be 1..%d and rounds at least 1", ZS_SIM_FLOOR_WIDTH_MAX);
    floor_job j = {c, f};
    zs_fork_buf b = {0};
    zs_child_usage u = {0, 0};
    int rc = zs_fork_call("floor benchmark", floor_child, &j, &b, &u, e);
    size_t pos = 0;
    if (rc == ZS_OK && zs_fork_buf_get(&b, &pos, out, sizeof *out))
        rc = zs_err_set(e, ZS_ERUNTIME, "floor benchmark", NULL, "the run sent no result");
    if (rc == ZS_OK)
        out->peak_rss = u.max_rss;
    zs_fork_buf_free(&b);
    return rc;
}

int zs_sim_floor_rounds(int gpus, int width, long transfers)
{
    long per_round = (long)(gpus > 0 ? gpus : 1) * (width > 0 ? width : 1);
    long r = transfers / per_round;
    return r < 1 ? 1 : r > 1000000000L ? 1000000000 : (int)r;
}

int zs_sim_floor_measure(const zs_cluster *c, const zs_sim_floor_cfg *f, int runs, FILE *log,
                         zs_sim_floor_out *out, double *cpu_lo, double *cpu_hi, zs_err *e)
{
    if (runs < 1 || runs > ZS_SIM_FLOOR_RUNS_MAX)
        return zs_err_set(e, ZS_EUSAGE, "floor benchmark", NULL, "runs must be 1..%d",
                          ZS_SIM_FLOOR_RUNS_MAX);
    double cpu[ZS_SIM_FLOOR_RUNS_MAX], rss = 0;
    zs_sim_floor_out o = {0};
    for (int r = 0; r < runs; r++) {
        int rc = zs_sim_floor_forked(c, f, &o, e);
        if (rc)
            return rc;
        cpu[r] = o.cpu_s;
        rss = o.peak_rss > rss ? o.peak_rss : rss;
        if (log)
            fprintf(log, "bench floor: %d GPUs, %s nodes: run %d/%d took %.2f CPU s\n", f->gpus,
                    f->across ? "across" : "inside", r + 1, runs, o.cpu_s);
    }
    o.cpu_s = zs_median(cpu, (size_t)runs); /* sorts: the ends are the extremes */
    o.peak_rss = rss;
    if (cpu_lo)
        *cpu_lo = cpu[0];
    if (cpu_hi)
        *cpu_hi = cpu[runs - 1];
    *out = o;
    return ZS_OK;
}

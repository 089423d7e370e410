/* Simulations in child processes (see zs_sim.h): SimGrid allows one
 * platform per process, so every simulation of a caller that runs several
 * goes through zs_fork_call. The child sends its zs_result as plain data
 * (zs_result_pack). */
#include "zs_sim_internal.h"

#include <string.h>
#include <sys/resource.h>

#include "zs_fork.h"

typedef struct job {
    const zs_schedule *s;
    const zs_cluster *c;
    const zs_sim_opts *o;
} job;

static int child(void *arg, zs_fork_buf *out, zs_err *e)
{
    const job *j = arg;
    zs_result *r = NULL;
    int rc = zs_sim_run(j->s, j->c, j->o, &r, e);
    if (rc == ZS_OK)
        rc = zs_result_pack(r, out, e);
    zs_result_free(r);
    return rc;
}

/* The run in a fork, also giving the child's peak resident set size
 * (bytes) and CPU time (user + system seconds); either pointer may be
 * NULL. */
static int run_forked_rss(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o,
                          zs_result **out, double *child_rss, double *child_cpu, zs_err *e)
{
    job j = {s, c, o};
    zs_fork_buf b = {0};
    zs_child_usage u = {0, 0};
    int rc = zs_fork_call("simulation", child, &j, &b, &u, e);
    if (child_rss)
        *child_rss = u.max_rss;
    if (child_cpu)
        *child_cpu = u.cpu_s;
    if (rc)
        return rc;
    size_t pos = 0;
    zs_result *r = zs_result_unpack(&b, &pos);
    if (r && pos != b.n) {
        zs_result_free(r);
        r = NULL;
    }
    zs_fork_buf_free(&b);
    if (!r)
        return zs_err_set(e, ZS_ERUNTIME, "simulation process", NULL,
                          "the simulation's result came back incomplete or out of memory");
    *out = r;
    return ZS_OK;
}

double zs_sim_peak_rss(int children)
{
    struct rusage ru;
    if (getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_maxrss * 1024.0;
}

int zs_sim_run_forked(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o,
                      zs_result **out, zs_err *e)
{
    return run_forked_rss(s, c, o, out, NULL, NULL, e);
}

/* The machine loader: see zs_machine.h. */
#include "zs_machine.h"

#include <string.h>

void zs_machine_cfg_init(zs_machine_cfg *c)
{
    memset(c, 0, sizeof *c);
}

static int given(const char *s)
{
    return s && s[0];
}

/* The cluster, sized: to the ranks, its GPUs per node read from the
 * cluster at one node first. */
static int load_cluster(const zs_machine_cfg *c, zs_cluster *cl, zs_err *e)
{
    if (c->ranks <= 0)
        return zs_cluster_load(c->cluster, c->nodes, cl, e);
    int rc = zs_cluster_load(c->cluster, 1, cl, e);
    return rc ? rc
              : zs_cluster_load(c->cluster, (c->ranks + cl->gpus_per_node - 1) / cl->gpus_per_node,
                                cl, e);
}

/* The replaced attention shape, checked as the model's own is. */
static int reshape(const zs_machine_cfg *c, zs_model *m, zs_err *e)
{
    if (c->heads > 0)
        m->heads = c->heads;
    if (c->kv_heads > 0)
        m->kv_heads = c->kv_heads;
    if (c->head_dim > 0)
        m->head_dim = c->head_dim;
    if (m->kv_heads > m->heads)
        return zs_err_set(e, ZS_EUSAGE, "--kv-heads", "use at most as many KV heads as heads",
                          "%d KV heads but %d heads", m->kv_heads, m->heads);
    return ZS_OK;
}

static int load_parts(const zs_machine_cfg *c, zs_machine *m, zs_err *e)
{
    int rc = given(c->model) ? zs_model_load(c->model, &m->model, e) : ZS_OK;
    if (!rc)
        rc = load_cluster(c, &m->cluster, e);
    if (!rc && given(c->gpu))
        rc = zs_gpu_load(c->gpu, &m->cluster.gpu, e);
    if (!rc && given(c->kernel))
        rc = zs_gpu_select_kernel(&m->cluster.gpu, c->kernel, e);
    if (rc)
        return rc;
    if (c->mem_gib > 0)
        m->cluster.gpu.mem_gib = c->mem_gib;
    if (given(c->model) && (c->heads > 0 || c->kv_heads > 0 || c->head_dim > 0))
        rc = reshape(c, &m->model, e);
    if (!rc && given(c->calib))
        rc = zs_calib_load(c->calib, &m->calib, e);
    return rc;
}

int zs_machine_load(const zs_machine_cfg *c, zs_machine *m, zs_err *e)
{
    memset(m, 0, sizeof *m);
    int rc = load_parts(c, m, e);
    if (!rc && given(c->model)) {
        m->cost_model = zs_cost_model_for(m->calib);
        rc = zs_cost_build(&m->model, &m->cluster, m->calib, &m->cost, e);
    } else if (!rc && m->calib) /* no cost to build: the links still calibrated */
        zs_calib_apply_links(m->calib, &m->cluster);
    if (rc)
        zs_machine_clear(m);
    return rc;
}

void zs_machine_clear(zs_machine *m)
{
    zs_cost_free(m->cost);
    zs_calib_free(m->calib);
    m->cost = NULL;
    m->calib = NULL;
}

/* `zepsim show model|gpu|cluster NAME_OR_FILE`: a description and the
 * figures derived from it, as one key/value/unit table (--format). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_cluster.h"
#include "zs_memory.h"
#include "zs_model.h"

static const char show_help[] =
    "usage: zepsim show model|gpu|cluster NAME_OR_FILE [options]\n"
    "\n"
    "Prints a description (a built-in preset or a JSON file) and derived figures.\n"
    "\n"
    "options:\n";

/* A model's memory figures: the pipeline degree, into a zs_mem_cfg (tp
 * and dp are the shared --tp and --dp). */
static const zs_opt_spec show_own[] = {
    ZS_OPT_ROW("pp", ZS_OPT_INT, zs_mem_cfg, pp, 1, 1 << 20, "1", "N",
               "model: pipeline-parallel degree for the memory figures")};
static const zs_cli_use show_uses[] = {
    {ZS_FP(NODES), "cluster only"},
    {ZS_F_TP, "model: for the memory figures (default 1)"},
    {ZS_F_DP, "model: for the memory figures (default 1)"},
    {ZS_F_GPU, "model: the GPU for the memory figures (default h100-sxm)"},
    {ZS_FP(ZERO), "model only (default 1)"},
    {ZS_FP(RECOMPUTE), "model only (default none)"},
    {ZS_F_FORMAT, NULL},
    {0, NULL}};

/* Human tables read better as "value unit" in one column; machine formats
 * keep the unit in its own column. */
static int g_join_unit;

static void set_value(zs_table *t, const char *value, const char *unit)
{
    if (g_join_unit && unit && *unit)
        zs_table_set(t, 1, "%s %s", value, unit);
    else
        zs_table_set(t, 1, "%s", value);
    if (!g_join_unit)
        zs_table_set(t, 2, "%s", unit ? unit : "");
}

static void add_desc(zs_table *t, const zs_field *fields, size_t n, const void *obj,
                     const char *prefix)
{
    for (size_t i = 0; i < n; i++) {
        const zs_field *f = &fields[i];
        const char *p = (const char *)obj + f->offset;
        zs_table_row(t);
        zs_table_set(t, 0, "%s%s", prefix, f->key);
        char v[1024]; /* string fields run to ZS_KERNEL_SOURCE (640) characters */
        switch (f->type) {
        case ZS_F_INT:
            snprintf(v, sizeof v, "%d", *(const int *)p);
            break;
        case ZS_F_BOOL:
            snprintf(v, sizeof v, "%s", *(const int *)p ? "true" : "false");
            break;
        case ZS_F_DOUBLE:
            snprintf(v, sizeof v, "%g", *(const double *)p);
            break;
        case ZS_F_STRING:
            snprintf(v, sizeof v, "%s", p);
            break;
        }
        set_value(t, v, f->unit);
    }
}

static void add(zs_table *t, const char *key, const char *unit, const char *fmt, double v)
{
    char buf[128];
    zs_table_row(t);
    zs_table_set(t, 0, "%s", key);
    snprintf(buf, sizeof buf, fmt, v);
    set_value(t, buf, unit);
}

/* The GPU's compute kernels: each attention kernel's two curves and its
 * source, and the GEMM curve (`zepsim cost` prices with them). */
static void add_kernels(zs_table *t, const zs_gpu *g)
{
    for (int i = 0; i < g->nkernels; i++) {
        const zs_attn_kernel *k = &g->kernels[i];
        const zs_attn_dir *d[2] = {&k->fwd, &k->bwd};
        char key[96], v[256];
        for (int j = 0; j < 2; j++) {
            zs_table_row(t);
            snprintf(key, sizeof key, "attn.%s.%s", k->name, j ? "bwd" : "fwd");
            zs_table_set(t, 0, "%s", key);
            snprintf(v, sizeof v,
                     "%.1f TFLOP/s on %dx%d tiles, cta %.3f us, seq %.3f us, launch %.1f us%s",
                     d[j]->tflops, k->tile_q, k->tile_k, d[j]->cta_us, d[j]->seq_us,
                     d[j]->launch_us, d[j]->half > 0 ? ", size effect" : "");
            set_value(t, v, "");
        }
        zs_table_row(t);
        zs_table_set(t, 0, "attn.%s.source", k->name);
        set_value(t, k->source, "");
    }
    char v[256];
    snprintf(v, sizeof v, "%.1f TFLOP/s, half at min dim %.0f, p %.2f, launch %.1f us",
             g->gemm.tflops, g->gemm.half_dim, g->gemm.p, g->gemm.launch_us);
    zs_table_row(t);
    zs_table_set(t, 0, "gemm");
    set_value(t, v, "");
    zs_table_row(t);
    zs_table_set(t, 0, "gemm.source");
    set_value(t, g->gemm.source, "");
}

static int show_model(const char *name, const char *gpu_name, zs_mem_cfg *mc, zs_table *t,
                      zs_err *e)
{
    zs_model m;
    zs_gpu g;
    int rc = zs_model_load(name, &m, e);
    if (rc || (rc = zs_gpu_load(gpu_name, &g, e)))
        return rc;
    mc->dp = mc->dp < 1 ? 1 : mc->dp;
    zs_mem_breakdown mb;
    if ((rc = zs_mem_breakdown_compute(&m, &g, mc, &mb, e)))
        return rc;
    add_desc(t, zs_model_fields, zs_model_nfields, &m, "");
    add(t, "params", "", "%.4g", zs_model_params(&m));
    add(t, "params_per_layer", "", "%.4g", zs_model_params_per_layer(&m));
    add(t, "linear_flops_per_token_layer", "FLOP (fwd)", "%.4g",
        zs_model_linear_flops_per_token(&m));
    add(t, "attn_flops_per_token_layer_4k", "FLOP (fwd, 4K causal doc)", "%.4g",
        zs_model_attn_flops_causal(&m, 4096) / 4096);
    add(t, "attn_flops_per_token_layer_32k", "FLOP (fwd, 32K causal doc)", "%.4g",
        zs_model_attn_flops_causal(&m, 32768) / 32768);
    add(t, "kv_bytes_per_token_layer", "bytes", "%.0f", zs_model_kv_bytes(&m, 1));
    zs_table_row(t);
    zs_table_set(t, 0, "memory_for");
    char cfgs[256];
    snprintf(cfgs, sizeof cfgs, "%s tp=%d pp=%d dp=%d zero=%d recompute=%s", g.name, mc->tp, mc->pp,
             mc->dp, mc->zero_stage, mc->recompute == ZS_RECOMPUTE_FULL ? "full" : "none");
    set_value(t, cfgs, "");
    add(t, "mem_weights", "GiB", "%.2f", mb.weights / 1073741824.0);
    add(t, "mem_grads", "GiB", "%.2f", mb.grads / 1073741824.0);
    add(t, "mem_optimizer", "GiB", "%.2f", mb.optimizer / 1073741824.0);
    add(t, "mem_act_per_token", "KiB (all layers)", "%.1f", mb.act_per_token / 1024.0);
    add(t, "mem_usable", "GiB", "%.2f", mb.capacity / 1073741824.0);
    if (mb.max_tokens > 0) {
        add(t, "max_tokens_per_gpu", "tokens", "%.0f", (double)mb.max_tokens);
        return ZS_OK;
    }
    /* 0 alone reads as a bug (issue 35 item 7): say that the model state
     * leaves no room for activations, and what shrinks it */
    char why[300];
    double state = mb.weights + mb.grads + mb.optimizer;
    snprintf(why, sizeof why,
             "tokens: none fit, the model state (%.2f GiB) leaves no room for activations in "
             "%.2f GiB; shard it with --dp N and --zero 2|3, or --tp N / --pp N",
             state / 1073741824.0, mb.capacity / 1073741824.0);
    add(t, "max_tokens_per_gpu", why, "%.0f", 0.0);
    return ZS_OK;
}

static int show_cluster(const char *name, int nodes, zs_table *t, zs_table **map, zs_err *e)
{
    zs_cluster c;
    int rc = zs_cluster_load(name, nodes, &c, e);
    if (rc)
        return rc;
    add_desc(t, zs_cluster_fields, zs_cluster_nfields, &c, "");
    zs_table_row(t);
    zs_table_set(t, 0, "nodes_from");
    set_value(t, nodes > 0 ? "--nodes" : "cluster file", "");
    add_desc(t, zs_gpu_fields, zs_gpu_nfields, &c.gpu, "gpu.");
    add(t, "total_gpus", "", "%.0f", zs_cluster_gpus(&c));
    add(t, "total_nics", "", "%.0f", (double)c.nodes * c.nics_per_node);
    add(t, "gpus_per_nic", "", "%.0f", zs_cluster_gpus_per_nic(&c));
    for (int lc = 0; lc < ZS_LINK_NCLASSES; lc++) {
        char key[64];
        snprintf(key, sizeof key, "bw_%s", zs_link_class_name(lc));
        add(t, key, "GB/s per link per direction", "%.1f",
            zs_cluster_link_bw(&c, (zs_link_class)lc) / 1e9);
    }
    double lat, bw;
    zs_cluster_path(&c, 0, 1, &lat, &bw);
    add(t, "path_intra_node_latency", "us", "%.2f", lat * 1e6);
    add(t, "path_intra_node_bw", "GB/s", "%.1f", bw / 1e9);
    if (c.nodes > 1) {
        zs_cluster_path(&c, 0, c.gpus_per_node, &lat, &bw);
        add(t, "path_inter_node_latency", "us", "%.2f", lat * 1e6);
        add(t, "path_inter_node_bw", "GB/s", "%.1f", bw / 1e9);
    }
    *map = zs_table_new("GPU-to-NIC map (each NIC sits on a PCIe switch with these GPUs, by "
                        "global rank):");
    zs_table_col(*map, "node", 1);
    zs_table_col(*map, "nic", 1);
    zs_table_col(*map, "rail_leaf", 1);
    zs_table_col(*map, "gpus", 0); /* global ranks */
    for (int n = 0; n < c.nodes; n++) {
        for (int k = 0; k < c.nics_per_node; k++) {
            char gpus[256];
            size_t o = 0;
            gpus[0] = '\0';
            for (int g = 0; g < c.gpus_per_node; g++) {
                int r = n * c.gpus_per_node + g;
                if (zs_cluster_nic_of(&c, r) == k && o < sizeof gpus)
                    o += (size_t)snprintf(gpus + o, sizeof gpus - o, "%s%d", o ? "," : "", r);
            }
            zs_table_row(*map);
            zs_table_set(*map, 0, "%d", n);
            zs_table_set(*map, 1, "%d", k);
            zs_table_set(*map, 2, "%d", k + (n / c.nodes_per_leaf) * c.nics_per_node);
            zs_table_set(*map, 3, "%s", gpus);
        }
    }
    return ZS_OK;
}

int zs_cmd_show(int argc, char **argv)
{
    static const zs_cli_cmd cmd = {
        .name = "show", .head = show_help, ZS_CLI_OWN_ROWS(show_own), .uses = show_uses};
    zs_mem_cfg mc = zs_mem_cfg_default();
    zs_cli_flags fl;
    int st = zs_cli_parse(&cmd, argc, argv, &mc, &fl);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    zs_format fmt = fl.fmt;
    long nodes = fl.p.nodes;
    const char *gpu = fl.gpu ? fl.gpu : "h100-sxm";
    mc.tp = fl.tp;
    mc.dp = fl.dp;
    mc.zero_stage = fl.p.zero_stage; /* the study point's default, 1, as before */
    if (zs_cli_given(&fl, ZS_P_RECOMPUTE))
        mc.recompute = (zs_recompute)fl.p.recompute;
    if (argc - optind != 2)
        return zs_cli_usage_error("show", "expected a kind (model, gpu, cluster) and a name");
    const char *kind = argv[optind], *name = argv[optind + 1];
    zs_table *t = zs_table_new(NULL), *map = NULL;
    g_join_unit = fmt == ZS_FMT_TABLE;
    zs_table_col(t, "key", 0);
    zs_table_col(t, "value", ZS_COL_MIXED);
    if (!g_join_unit)
        zs_table_col(t, "unit", 0);
    int rc;
    if (strcmp(kind, "model") == 0) {
        rc = show_model(name, gpu, &mc, t, &e);
    } else if (strcmp(kind, "gpu") == 0) {
        zs_gpu g;
        rc = zs_gpu_load(name, &g, &e);
        if (rc == ZS_OK) {
            add_desc(t, zs_gpu_fields, zs_gpu_nfields, &g, "");
            add_kernels(t, &g);
        }
    } else if (strcmp(kind, "cluster") == 0) {
        rc = show_cluster(name, (int)nodes, t, &map, &e);
    } else {
        zs_table_free(t);
        return zs_cli_usage_error("show", "unknown kind '%s' (use model, gpu or cluster)", kind);
    }
    if (rc) {
        zs_table_free(t);
        zs_table_free(map);
        return zs_cli_fail(&e);
    }
    zs_output *d = zs_output_new("show", fmt, stdout);
    if (d) {
        zs_output_table(d, kind, t);
        if (map)
            zs_output_table(d, "nic_map", map);
    } else {
        zs_table_free(t);
        zs_table_free(map);
    }
    return zs_cli_doc_end(d);
}

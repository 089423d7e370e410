/* `zepsim cost attention|gemm|collective|p2p|step`: a calculator over the
 * cost model the simulator uses. Each prints the predicted time, the rate
 * it amounts to and what priced it (the kernel curve and its source, the
 * calibration, or how the collective model went about it), as a key /
 * value / unit table (--format); `step` prints the op inventory of one
 * training step (models/zs_step.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "cli.h"
#include "zs_calib.h"
#include "zs_machine.h"
#include "zs_cost.h"
#include "zs_cplayout_price.h"
#include "zs_step.h"

static const char cost_help[] =
    "usage: zepsim cost attention [--gpu G | --cluster C] [--model M] --len L [options]\n"
    "       zepsim cost gemm [--gpu G | --cluster C] (--m M --n N --k K | [--model M] --len T)\n"
    "       zepsim cost collective --cluster C [--nodes N] --op OP --bytes S --gpus n\n"
    "       zepsim cost p2p --cluster C [--nodes N] --src A --dst B --bytes S\n"
    "       zepsim cost step [--gpu G | --cluster C] [--model M] --len N [--tp T]\n"
    "                        [--precision bf16|fp8|fp8-cs] [--recompute R] [--kernels K]\n"
    "                        [--lora R] [--zero S] [--fsdp F]\n"
    "\n"
    "Prices one op with the cost model the simulator uses and prints the time, the\n"
    "rate and which curve (and its source) priced it.\n"
    "\n"
    "  attention   one document of --len tokens on one GPU: forward (or --bwd),\n"
    "              one launch; with --cp N the zigzag shard of the busiest rank,\n"
    "              one launch per ring step (its chunks against the KV chunks of\n"
    "              that step); --docs N packs N equal documents in one launch;\n"
    "              with --layout one row per CP layout: time, imbalance,\n"
    "              communication and efficiency against the ideal\n"
    "  gemm        one GEMM (--m --n --k), or a layer's GEMMs for --len tokens of\n"
    "              --model (QKV, output projection, MLP), split over --tp\n"
    "  collective  OP (all-gather, reduce-scatter, all-reduce, all-to-all) over\n"
    "              ranks 0..n-1 with --bytes per rank (the whole buffer for\n"
    "              all-reduce); prints what the collective model does\n"
    "  p2p         --bytes from rank --src to rank --dst, uncontended\n"
    "  step        every op of one training step of --model on one GPU for a\n"
    "              micro-batch of --len tokens (one causal sequence): each layer's\n"
    "              forward and backward (GEMMs, core attention, norms, RoPE,\n"
    "              activation, residual adds, TP collectives, FP8 casts), the\n"
    "              embedding, the LM head with cross-entropy, the gradient norm and\n"
    "              Adam; each op's FLOPs, HBM bytes, time and share of the step,\n"
    "              then the time per op class\n"
    "\n"
    "options:\n";

typedef struct cost_args {
    const char *gpu, *cluster, *model, *kernel, *calib, *op;
    long nodes, len, docs, cp, tp, heads, kv_heads, head_dim, gpus, src, dst, dp, zero, lora;
    zs_fsdp fsdp;
    double m, n, k, bytes;
    int bwd, sp, layout, pass; /* layout: -1 none, ZS_CPL_N all; pass: 1 fwd, 2 bwd, 3 both */
    int nlens;                 /* --lens: documents of these lengths (with --layout) */
    zs_cpl_impl impl;          /* --impl: what runs around the ring layouts' kernels */
    int32_t lens[64];
    zs_precision prec;
    zs_step_rc rc;
    zs_step_kernels kern;
    zs_format fmt;
    zs_cli_flags fl; /* the shared flags as given: model, calib, kernel point into it */
} cost_args;

/* "64M", "1.5G", "4096": bytes (binary suffixes). */
static int parse_bytes(const char *s, double *out, zs_err *e)
{
    char buf[64];
    size_t n = strlen(s);
    double mul = 1;
    if (n > 0 && n < sizeof buf && strchr("KkMmGg", s[n - 1])) {
        char c = s[n - 1];
        mul = c == 'K' || c == 'k' ? 1024.0 : c == 'M' || c == 'm' ? 1048576.0 : 1073741824.0;
        memcpy(buf, s, n - 1);
        buf[n - 1] = '\0';
        s = buf;
    }
    double v;
    int rc = zs_cli_parse_double("--bytes", s, 0, 1e15, &v, e);
    if (rc == ZS_OK)
        *out = v * mul;
    return rc;
}

/* Rows of key/value tables (zs_table_kv_new): a number with its unit and
 * a note in words, or a text value. */
#define num      zs_table_kv_num
#define text     zs_table_kv_text
#define note     zs_table_kv_note
#define kv_table zs_table_kv_new

/* The cluster (a preset or file, or one node around --gpu), the GPU and
 * kernel choice, the model with its overrides, and the cost model. */
static int setup(const cost_args *a, int need_cluster, zs_model *m, zs_cluster *cl, zs_cost **cost,
                 zs_err *e)
{
    if (need_cluster && !a->cluster)
        return zs_err_set(e, ZS_EUSAGE, "--cluster", "name a cluster (`zepsim list clusters`)",
                          "this op needs a cluster");
    zs_machine_cfg mc;
    zs_machine_cfg_init(&mc);
    mc.model = a->model ? a->model : "llama-7b";
    mc.cluster = a->cluster ? a->cluster : "dgx-h100";
    mc.nodes = (int)a->nodes;
    mc.gpu = a->gpu ? a->gpu : !a->cluster ? "h100-sxm" : NULL;
    mc.kernel = a->kernel;
    mc.heads = (int)a->heads;
    mc.kv_heads = (int)a->kv_heads;
    mc.head_dim = (int)a->head_dim;
    mc.calib = a->calib;
    zs_machine mach;
    int rc = zs_machine_load(&mc, &mach, e);
    if (rc)
        return rc;
    /* A fit applied beyond its data (another GPU, another head shape)
     * says so, as compare and simulate do. */
    char lines[4096];
    if (mach.calib &&
        zs_calib_check_use(mach.calib, mach.cluster.gpu.name, &mach.model, lines, sizeof lines))
        fputs(lines, stderr);
    *m = mach.model;
    *cl = mach.cluster;
    *cost = mach.cost;
    mach.cost = NULL; /* the caller's now */
    zs_machine_clear(&mach);
    return ZS_OK;
}

static void add_kernel(zs_table *t, const zs_cost *c, int bwd)
{
    const zs_attn_kernel *k = zs_cost_attn_kernel(c);
    const zs_attn_dir *d = bwd ? &k->bwd : &k->fwd;
    text(t, "kernel", "%s", k->name);
    if (k->unfused) {
        note(t, "Megatron-LM's attention before FlashAttention");
        text(t, "kernel_curve",
             "none: batched GEMMs on the GPU's GEMM curve, the score "
             "matrix's softmax and dropout passes at the memory-bound rate");
        text(t, "kernel_source", "%s", k->source);
        return;
    }
    note(t, "%s", bwd ? "backward curve" : "forward curve");
    text(t, "kernel_curve",
         "%.1f TFLOP/s on whole %dx%d tiles at d=128, %.3f us per CTA, %.3f us per sequence x "
         "head, %.1f us per launch%s",
         d->tflops, k->tile_q, k->tile_k, d->cta_us, d->seq_us, d->launch_us,
         d->half > 0 ? ", rate slowed by (1 + (half/W)^p)" : "");
    text(t, "kernel_source", "%s", k->source);
}

/* One row of the layout table: one layout, the pass(es) asked for. */
static int layout_row(zs_table *t, const cost_args *a, const zs_model *m, const zs_cost *c,
                      int heads, zs_cp_layout l, zs_err *e)
{
    int tp = (int)a->tp, kvh = m->kv_heads / tp > 0 ? m->kv_heads / tp : 1;
    int32_t *lens = malloc(sizeof(int32_t) * (size_t)a->docs);
    if (!lens)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (long d = 0; d < a->docs; d++)
        lens[d] = a->nlens ? a->lens[d] : (int32_t)a->len;
    zs_cpl_price sum = {0};
    double mean = 0;
    for (int b = 0; b < 2; b++) {
        if (!(a->pass & (1 << b)))
            continue;
        zs_cpl_pass p = {l, lens, (int)a->docs, (int)a->cp, tp, 0, heads, kvh, b, a->impl};
        zs_cpl_price o;
        int rc = zs_cpl_price_pass(c, &p, &o, e);
        if (rc) {
            free(lens);
            return rc;
        }
        sum.time += o.time, sum.compute += o.compute, sum.merge += o.merge, sum.comm += o.comm;
        sum.ideal += o.ideal, sum.flops += o.flops, sum.kv_bytes = o.kv_bytes;
        mean += o.compute_mean;
    }
    free(lens);
    static const char *const comm[ZS_CPL_N] = {"ring p2p", "ring p2p", "ring p2p", "all-gather"};
    zs_table_row(t);
    zs_table_set(t, 0, "%s", zs_cpl_name(l));
    zs_table_set(t, 1, "%s", comm[l]);
    zs_table_num(t, 2, "%.4f", sum.time * 1e3);
    zs_table_num(t, 3, "%.4f", sum.compute * 1e3);
    zs_table_num(t, 4, "%.3f", mean > 0 ? sum.compute / mean : 0);
    zs_table_num(t, 5, "%.4f", sum.merge * 1e3);
    zs_table_num(t, 6, "%.4f", sum.comm * 1e3);
    zs_table_num(t, 7, "%.4f", sum.kv_bytes / 1048576.0);
    zs_table_num(t, 8, "%.4f", sum.ideal * 1e3);
    zs_table_num(t, 9, "%.1f", sum.time > 0 ? 100 * sum.ideal / sum.time : 0);
    zs_table_num(t, 10, "%.1f", sum.time > 0 ? sum.flops / sum.time / 1e12 / a->cp : 0);
    return ZS_OK;
}

/* `cost attention --layout`: one row per CP layout (zs_cplayout_price.h),
 * then what priced them. */
static int cost_layouts(const cost_args *a, const zs_model *m, const zs_cluster *cl,
                        const zs_cost *c, int heads, zs_err *e)
{
    if (a->cp < 2)
        return zs_err_set(e, ZS_EUSAGE, "--cp", "give --cp 2 or more with --layout",
                          "a CP layout needs a CP group");
    if (a->cp * a->tp > cl->nodes * cl->gpus_per_node)
        return zs_err_set(e, ZS_EUSAGE, "--cp", "use fewer ranks or a larger --cluster/--nodes",
                          "cp x tp = %ld GPUs but the cluster has %d", a->cp * a->tp,
                          cl->nodes * cl->gpus_per_node);
    cost_args b = *a;
    if (!b.pass)
        b.pass = a->bwd ? 2 : 1;
    static const char *const cols[] = {"layout",    "comm",           "time_ms",       "compute_ms",
                                       "imbalance", "merge_ms",       "comm_ms",       "kv_mib",
                                       "ideal_ms",  "efficiency_pct", "tflops_per_gpu"};
    zs_table *t = zs_table_new("CP layouts");
    for (int i = 0; i < 11; i++)
        zs_table_col(t, cols[i], i < 2 ? ZS_COL_TEXT : ZS_COL_NUM);
    int rc = ZS_OK;
    for (int l = 0; l < ZS_CPL_N && !rc; l++)
        if (a->layout == ZS_CPL_N || a->layout == l)
            rc = layout_row(t, &b, m, c, heads, (zs_cp_layout)l, e);
    if (rc) {
        zs_table_free(t);
        return rc;
    }
    zs_table *k = kv_table("setup");
    text(k, "gpu", "%s", cl->gpu.name);
    note(k, "%s, ranks 0..%ld", cl->name, a->cp * a->tp - 1);
    text(k, "model", "%s", m->name);
    note(k, "%d heads, %d KV heads, head dim %d", m->heads, m->kv_heads, m->head_dim);
    text(k, "pass", "%s", b.pass == 1 ? "fwd" : b.pass == 2 ? "bwd" : "fwd+bwd");
    if (a->nlens) {
        char l[512] = "";
        for (int i = 0, o = 0; i < a->nlens && o < (int)sizeof l - 16; i++)
            o += snprintf(l + o, sizeof l - (size_t)o, "%s%d", i ? "," : "", a->lens[i]);
        text(k, "lens", "%s", l);
        note(k, "tokens of each document, all in each launch, cut exactly (no padding)");
    } else {
        num(k, "len", "tokens", "%.0f", (double)a->len);
        note(k, "per document, %ld per launch, cut exactly (no padding)", a->docs);
    }
    num(k, "cp", NULL, "%.0f", (double)a->cp);
    num(k, "tp", NULL, "%.0f", (double)a->tp);
    note(k, "%d heads on each GPU", heads);
    if (a->impl != ZS_CPL_IMPL_FUSED) { /* the default's table stays as it was */
        text(k, "impl", "%s", zs_cpl_impl_name(a->impl));
        note(k, "%s",
             a->impl == ZS_CPL_IMPL_RFA
                 ? "ring-flash-attention 01c8baf5's ops around each kernel, its TorchScript "
                   "correction as the TensorExpr fuser compiles it; llama3 as its "
                   "llama3_flash_attn_varlen_func runs: contiguous over the pack, K and V "
                   "gathered 4 KV heads at a time"
                 : "ring-flash-attention 01c8baf5's ops around each kernel, its correction "
                   "unfused (one kernel per op); llama3 as its llama3_flash_attn_varlen_func "
                   "runs: contiguous over the pack, K and V gathered 4 KV heads at a time");
    }
    text(k, "ideal",
         "exact causal FLOPs / cp at the rate of one GPU on a 1/%ld share of each "
         "document",
         a->cp);
    add_kernel(k, c, b.pass == 2);
    text(k, "cost_model", "%s", c->desc);
    zs_output *d = zs_output_new("cost", a->fmt, stdout);
    if (d) {
        zs_output_table(d, "layouts", t);
        zs_output_table(d, "setup", k);
    } else {
        zs_table_free(t);
        zs_table_free(k);
    }
    return zs_cli_doc_end(d) ? ZS_EIO : ZS_OK;
}

/* The options that only `--layout` uses, given without it. */
static int layout_only(const cost_args *a, zs_err *e)
{
    if (a->nlens && a->layout < 0)
        return zs_err_set(e, ZS_EUSAGE, "--lens", "add --layout L|all, or use --len and --docs",
                          "--lens prices CP layouts only");
    if (a->impl != ZS_CPL_IMPL_FUSED && a->layout < 0)
        return zs_err_set(e, ZS_EUSAGE, "--impl", "add --layout L|all",
                          "--impl prices CP layouts only");
    return ZS_OK;
}

/* The launch's compute and memory times: a tiled kernel's compute and its
 * HBM floor, or the unfused attention's GEMMs and score passes. */
static void add_times(zs_table *t, const zs_cost *c, double tc, double tm)
{
    int unfused = zs_cost_attn_kernel(c)->unfused;
    num(t, "compute_time", "ms", "%.4f", tc * 1e3);
    if (unfused)
        note(t, "the batched GEMMs");
    num(t, "memory_time", "ms", "%.4f", tm * 1e3);
    if (unfused)
        note(t, "the score matrix's softmax and dropout passes, added to the GEMMs");
    else
        note(t, "HBM floor, %s", tm > tc ? "binding" : "not binding");
}

static int cost_attention(const cost_args *a, zs_err *e)
{
    if (a->len < 1)
        return zs_err_set(e, ZS_EUSAGE, "--len", "give the document length in tokens",
                          "attention needs --len");
    if (layout_only(a, e))
        return e->code;
    zs_model m;
    zs_cluster cl;
    zs_cost *c = NULL;
    int rc = setup(a, 0, &m, &cl, &c, e);
    if (rc)
        return rc;
    int tp = (int)a->tp, cp = (int)a->cp, docs = (int)a->docs;
    if (m.heads % tp != 0 || (m.kv_heads % tp != 0 && tp % m.kv_heads != 0)) {
        zs_cost_free(c);
        return zs_err_set(e, ZS_EUSAGE, "--tp", "use a TP degree that divides the heads",
                          "tp=%d does not divide %d heads / %d KV heads", tp, m.heads, m.kv_heads);
    }
    if ((double)a->len * a->docs > 2147483648.0) {
        zs_cost_free(c);
        return zs_err_set(e, ZS_EUSAGE, "--docs", "price at most 2^31 tokens in one launch",
                          "%ld documents of %ld tokens is too large a launch", a->docs, a->len);
    }
    if (cp > 1 && a->len < 2 * cp) {
        zs_cost_free(c);
        return zs_err_set(e, ZS_EUSAGE, "--cp", "use fewer CP ranks or a longer document",
                          "%ld tokens cannot be cut into %d zigzag chunks", a->len, 2 * cp);
    }
    int heads = m.heads / tp, bwd = a->bwd;
    if (a->layout >= 0 || a->pass) {
        rc = cost_layouts(a, &m, &cl, c, heads, e);
        zs_cost_free(c);
        return rc;
    }
    int32_t len = (int32_t)a->len;
    /* The busiest rank: per rank, one launch per ring step over its blocks
     * (docs equal documents each). */
    zs_attn_block *blk = malloc(sizeof *blk * 4 * (size_t)docs);
    if (!blk) {
        zs_cost_free(c);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    double best = -1, flops = 0, tiles = 0, ctas = 0, tc = 0, tm = 0;
    int launches = 0, busiest = 0;
    for (int r = 0; r < cp; r++) {
        double t = 0, f = 0, ti = 0, ct = 0, c1 = 0, m1 = 0;
        int l = 0;
        for (int j = 0; j < cp; j++) {
            zs_attn_block step[4];
            int k = cp > 1 ? zs_zigzag_step_blocks(0, len, cp, r, j, step) : 1;
            if (cp == 1)
                step[0] = (zs_attn_block){0, 0, len, 0, len};
            int n = 0;
            for (int i = 0; i < k; i++) /* equal blocks next to each other: walked once */
                for (int d = 0; d < docs; d++) {
                    blk[n] = step[i];
                    blk[n++].doc = d;
                }
            zs_attn_work w;
            t += zs_cost_attn_work(c, blk, n, heads, bwd, &w);
            f += w.flops_exact;
            ti += (double)w.tiles;
            ct += (double)w.ctas;
            c1 += w.t_compute;
            m1 += w.t_memory;
            l += n > 0;
        }
        if (t > best) {
            best = t, flops = f, tiles = ti, ctas = ct, tc = c1, tm = m1, launches = l;
            busiest = r;
        }
    }
    double whole = 0;
    if (cp > 1) { /* the same documents unsharded, for the speedup */
        for (int d = 0; d < docs; d++)
            blk[d] = (zs_attn_block){d, 0, len, 0, len};
        whole = zs_cost_attn(c, blk, docs, heads, bwd);
    }
    free(blk);
    zs_table *t = kv_table("attention");
    text(t, "gpu", "%s", cl.gpu.name);
    note(t, "%d SMs, %.0f TFLOP/s bf16 peak", cl.gpu.sms, cl.gpu.peak_tflops);
    text(t, "model", "%s", m.name);
    note(t, "%d heads, %d KV heads, head dim %d", m.heads, m.kv_heads, m.head_dim);
    text(t, "direction", "%s", bwd ? "backward" : "forward");
    num(t, "len", "tokens", "%.0f", (double)a->len);
    num(t, "docs", "per launch", "%.0f", docs);
    num(t, "tp", NULL, "%.0f", tp);
    note(t, "%d heads on this GPU", heads);
    num(t, "cp", NULL, "%.0f", cp);
    if (cp > 1)
        note(t, "zigzag: 2 chunks per rank, one launch per ring step");
    if (cp > 1)
        num(t, "busiest_rank", NULL, "%.0f", busiest);
    num(t, "time", "ms", "%.4f", best * 1e3);
    if (docs > 1)
        num(t, "time_per_doc", "ms", "%.4f", best * 1e3 / docs);
    num(t, "rate", "TFLOP/s", "%.1f", best > 0 ? flops / best / 1e12 : 0);
    num(t, "rate_of_peak", "%", "%.1f",
        best > 0 ? 100 * flops / best / 1e12 / cl.gpu.peak_tflops : 0);
    num(t, "flops", "FLOP", "%.4g", flops);
    note(t, "exact causal pairs, FA convention%s", bwd ? ", x2.5 backward" : "");
    num(t, "tiles", NULL, "%.0f", tiles);
    num(t, "ctas", NULL, "%.0f", ctas);
    num(t, "launches", NULL, "%.0f", launches);
    add_times(t, c, tc, tm);
    if (cp > 1) {
        num(t, "speedup_vs_cp1", "x", "%.2f", best > 0 ? whole / best : 0);
        note(t, "ideal %d", cp);
    }
    add_kernel(t, c, bwd);
    text(t, "cost_model", "%s", c->desc);
    zs_cost_free(c);
    return zs_cli_print1("cost", a->fmt, "attention", t) ? ZS_EIO : ZS_OK;
}

static int cost_gemm(const cost_args *a, zs_err *e)
{
    int one = a->m > 0 || a->n > 0 || a->k > 0;
    if (one && !(a->m > 0 && a->n > 0 && a->k > 0))
        return zs_err_set(e, ZS_EUSAGE, "--m", "give all of --m, --n and --k",
                          "a GEMM needs --m, --n and --k");
    if (!one && a->len < 1)
        return zs_err_set(e, ZS_EUSAGE, "--len", "give --m --n --k, or --len tokens of a layer",
                          "gemm needs a shape");
    zs_model m;
    zs_cluster cl;
    zs_cost *c = NULL;
    int rc = setup(a, 0, &m, &cl, &c, e);
    if (rc)
        return rc;
    double T = (double)a->len, h = m.hidden, tp = (double)a->tp;
    typedef struct shape {
        const char *name;
        double m, n, k, count;
    } shape;
    shape g[4] = {{"gemm", a->m, a->n, a->k, 1}};
    int ng = 1;
    if (!one) {
        double qkv = (double)(m.heads + 2 * m.kv_heads) * m.head_dim / tp;
        double ad = (double)m.heads * m.head_dim / tp, f = m.ffn / tp;
        g[0] = (shape){"qkv", T, qkv, h, 1};
        g[1] = (shape){"out-proj", T, h, ad, 1};
        g[2] = (shape){"mlp-up+gate", T, f, h, 2};
        g[3] = (shape){"mlp-down", T, h, f, 1};
        ng = 4;
    }
    zs_table *t = zs_table_new("gemm (forward)");
    zs_table_col(t, "gemm", 0);
    zs_table_col(t, "m", 1);
    zs_table_col(t, "n", 1);
    zs_table_col(t, "k", 1);
    zs_table_col(t, "count", 1);
    zs_table_col(t, "time_ms", 1);
    zs_table_col(t, "tflops", 1);
    zs_table_col(t, "of_peak_pct", 1);
    for (int i = 0; i < ng; i++) {
        double s = g[i].count * zs_cost_gemm(c, g[i].m, g[i].n, g[i].k);
        double fl = 2.0 * g[i].m * g[i].n * g[i].k * g[i].count;
        zs_table_row(t);
        zs_table_set(t, 0, "%s", g[i].name);
        zs_table_num(t, 1, "%.0f", g[i].m);
        zs_table_num(t, 2, "%.0f", g[i].n);
        zs_table_num(t, 3, "%.0f", g[i].k);
        zs_table_num(t, 4, "%.0f", g[i].count);
        zs_table_num(t, 5, "%.4f", s * 1e3);
        zs_table_num(t, 6, "%.1f", s > 0 ? fl / s / 1e12 : NAN);
        zs_table_num(t, 7, "%.1f", s > 0 ? 100 * fl / s / 1e12 / cl.gpu.peak_tflops : NAN);
    }
    zs_output *d = zs_output_new("cost", a->fmt, stdout);
    if (d)
        zs_output_table(d, "gemm", t);
    else
        zs_table_free(t);
    zs_table *k = kv_table("priced by");
    text(k, "gpu", "%s", cl.gpu.name);
    text(k, "gemm_curve",
         "%.1f TFLOP/s x 1 / (1 + (%.1f / max(min(m,n,k), %.0f))^%.3f), %.2f us per GEMM (%s)",
         cl.gpu.gemm.tflops, cl.gpu.gemm.half_dim, cl.gpu.gemm.dim_floor, cl.gpu.gemm.p,
         cl.gpu.gemm.launch_us, a->calib ? "unless the calibration fits gemm" : "GPU preset");
    text(k, "gemm_hbm_bound",
         "never faster than the launch + (mk + kn + mn) x %d bytes at %.0f GB/s HBM x %.2f",
         (int)zs_cost_dtype_bytes(c), cl.gpu.hbm_gbs, ZS_HBM_EFF);
    text(k, "gemm_source", "%s", cl.gpu.gemm.source);
    text(k, "cost_model", "%s", c->desc);
    if (d)
        zs_output_table(d, "priced_by", k);
    else
        zs_table_free(k);
    zs_cost_free(c);
    return zs_cli_doc_end(d) ? ZS_EIO : ZS_OK;
}

static int cost_transfer(const cost_args *a, int coll, zs_err *e)
{
    if (a->bytes < 0)
        return zs_err_set(e, ZS_EUSAGE, "--bytes", "give the bytes, e.g. --bytes 64M",
                          "%s needs --bytes", coll ? "collective" : "p2p");
    zs_coll_kind kind = ZS_COLL_ALLREDUCE;
    if (coll) {
        int found = 0;
        for (int k = 0; a->op && k < ZS_COLL_NKINDS; k++)
            if (strcmp(a->op, zs_coll_kind_name(k)) == 0)
                kind = (zs_coll_kind)k, found = 1;
        if (!found)
            return zs_err_set(e, ZS_EUSAGE, "--op",
                              "use all-gather, reduce-scatter, all-reduce or all-to-all",
                              "unknown collective '%s'", a->op ? a->op : "(none)");
    }
    zs_model m;
    zs_cluster cl;
    zs_cost *c = NULL;
    int rc = setup(a, 1, &m, &cl, &c, e);
    if (rc)
        return rc;
    int gpus = zs_cluster_gpus(&cl);
    zs_table *t = kv_table(coll ? "collective" : "p2p");
    text(t, "cluster", "%s", cl.name);
    note(t, "%d nodes, %d GPUs, %d NICs per node, %.0f Gb/s each", cl.nodes, gpus, cl.nics_per_node,
         cl.nic_gbps);
    if (coll) {
        if (a->gpus < 2 || a->gpus > gpus) {
            zs_table_free(t);
            zs_cost_free(c);
            return zs_err_set(e, ZS_EUSAGE, "--gpus", "use 2 to the cluster's GPUs (--nodes)",
                              "--gpus %ld out of range for %d GPUs", a->gpus, gpus);
        }
        int *ranks = malloc(sizeof *ranks * (size_t)a->gpus);
        if (!ranks) {
            zs_table_free(t);
            zs_cost_free(c);
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        }
        for (int i = 0; i < a->gpus; i++)
            ranks[i] = i;
        char how[512];
        double s = zs_cost_collective_how(c, kind, ranks, (int)a->gpus, a->bytes, how, sizeof how);
        /* The pair NCCL runs: what both backends run too. */
        zs_nccl_choice nc;
        zs_nccl_topo nt;
        int prc = zs_nccl_group_plan(&cl, ranks, (int)a->gpus, kind, a->bytes, zs_cost_nccl(c), &nc,
                                     NULL, e);
        if (!prc)
            prc = zs_nccl_topo_group(&cl, ranks, (int)a->gpus, &nt, e);
        free(ranks);
        if (prc) {
            zs_table_free(t);
            zs_cost_free(c);
            return prc;
        }
        double bus, steps;
        zs_coll_bus(kind, (int)a->gpus, a->bytes, &bus, &steps);
        text(t, "op", "%s", zs_coll_kind_name(kind));
        note(t, "over ranks 0..%ld (%d node(s) x %d GPUs, %d NIC(s) each)", a->gpus - 1, nt.nnodes,
             nt.ppn, nt.nics);
        num(t, "bytes", "B per rank", "%.0f", a->bytes);
        text(t, "algorithm", "%s", zs_nccl_algo_name(nc.algo));
        text(t, "protocol", "%s", nc.algo == ZS_NCCL_P2P ? "-" : zs_nccl_proto_name(nc.proto));
        num(t, "time", "ms", "%.4f", s * 1e3);
        num(t, "bus_bandwidth", "GB/s", "%.2f", s > 0 ? bus / s / 1e9 : 0);
        note(t, "bus bytes per rank / time");
        text(t, "how", "%s", how);
    } else {
        if (a->src < 0 || a->dst < 0 || a->src >= gpus || a->dst >= gpus) {
            zs_table_free(t);
            zs_cost_free(c);
            return zs_err_set(e, ZS_EUSAGE, "--src", "give --src and --dst ranks of the cluster",
                              "p2p needs --src and --dst in 0..%d", gpus - 1);
        }
        double s = zs_cost_p2p(c, (int)a->src, (int)a->dst, a->bytes), lat, bw;
        zs_cluster_path(&cl, (int)a->src, (int)a->dst, &lat, &bw);
        int same = zs_cluster_node_of(&cl, (int)a->src) == zs_cluster_node_of(&cl, (int)a->dst);
        text(t, "path", "%ld -> %ld", a->src, a->dst);
        note(t, "%s", a->src == a->dst ? "same GPU" : same ? "NVLink" : "PCIe, NIC, fabric");
        num(t, "bytes", "B", "%.0f", a->bytes);
        num(t, "time", "ms", "%.4f", s * 1e3);
        num(t, "bandwidth", "GB/s", "%.2f", s > 0 ? a->bytes / s / 1e9 : 0);
        num(t, "latency", "us", "%.2f", lat * 1e6);
        num(t, "bottleneck", "GB/s", "%.1f", bw / 1e9);
        note(t, "time = latency + bytes over the bottleneck, uncontended");
    }
    text(t, "cost_model", "%s", c->desc);
    zs_cost_free(c);
    return zs_cli_print1("cost", a->fmt, coll ? "collective" : "p2p", t) ? ZS_EIO : ZS_OK;
}

/* The inventory's ops, one row each (a layer op's step_ms is x layers). */
static zs_table *step_ops_table(const zs_step *st)
{
    zs_table *t = zs_table_new("ops of one training step (per GPU)");
    static const char *const cols[] = {"phase",   "op",        "class",    "per",    "m",
                                       "n",       "k",         "gflop",    "mbytes", "time_ms",
                                       "step_ms", "share_pct", "hidden_ms"};
    for (int i = 0; i < 13; i++)
        zs_table_col(t, cols[i], i < 4 ? ZS_COL_TEXT : ZS_COL_NUM);
    for (int i = 0; i < st->nops; i++) {
        const zs_step_op *op = &st->ops[i];
        double tot = zs_step_op_total(st, op);
        zs_table_row(t);
        zs_table_set(t, 0, "%s", zs_step_phase_name(op->phase));
        zs_table_set(t, 1, "%s", op->name);
        zs_table_set(t, 2, "%s", zs_op_class_name(op->cls));
        zs_table_set(t, 3, "%s", op->per_layer ? "layer" : "step");
        for (int j = 0; j < 3; j++) {
            double v = j == 0 ? op->m : j == 1 ? op->n : op->k;
            if (v > 0) /* null (blank for people) for ops that are not GEMMs */
                zs_table_num(t, 4 + j, "%.0f", v);
        }
        zs_table_num(t, 7, "%.3f", op->flops / 1e9);
        zs_table_num(t, 8, "%.3f", op->bytes / 1e6);
        zs_table_num(t, 9, "%.4f", op->seconds * 1e3);
        zs_table_num(t, 10, "%.4f", tot * 1e3);
        zs_table_num(t, 11, "%.2f", st->total_s > 0 ? 100 * tot / st->total_s : 0);
        if (op->hidden > 0) /* blank: nothing of it is hidden */
            zs_table_num(t, 12, "%.4f", op->hidden * 1e3);
    }
    return t;
}

/* Step time per op class and phase. */
static zs_table *step_class_table(const zs_step *st)
{
    zs_table *t = zs_table_new("per op class (ms over the step)");
    zs_table_col(t, "class", ZS_COL_TEXT);
    for (int p = 0; p < ZS_PH_N; p++)
        zs_table_col(t, zs_step_phase_name((zs_step_phase)p), ZS_COL_NUM);
    zs_table_col(t, "step_ms", ZS_COL_NUM);
    zs_table_col(t, "share_pct", ZS_COL_NUM);
    for (int c = 0; c <= ZS_OC_N; c++) {
        double all = 0;
        zs_table_row(t);
        zs_table_set(t, 0, "%s", c < ZS_OC_N ? zs_op_class_name((zs_op_class)c) : "total");
        for (int p = 0; p < ZS_PH_N; p++) {
            double v = 0;
            for (int k = 0; k < ZS_OC_N; k++)
                if (c == ZS_OC_N || k == c)
                    v += zs_step_class_time(st, (zs_op_class)k, p);
            zs_table_num(t, 1 + p, "%.4f", v * 1e3);
            all += v;
        }
        zs_table_num(t, 1 + ZS_PH_N, "%.4f", all * 1e3);
        zs_table_num(t, 2 + ZS_PH_N, "%.2f", st->total_s > 0 ? 100 * all / st->total_s : 0);
    }
    return t;
}

static zs_table *step_info_table(const cost_args *a, const zs_step *st, const zs_cluster *cl,
                                 const zs_cost *c)
{
    const zs_model *m = &c->model;
    double model_flops = 0; /* GEMMs and attention of forward and backward, once */
    for (int i = 0; i < st->nops; i++) {
        const zs_step_op *op = &st->ops[i];
        if (op->phase != ZS_PH_RECOMPUTE &&
            (op->cls == ZS_OC_GEMM || op->cls == ZS_OC_HEAD || op->cls == ZS_OC_ATTN))
            model_flops += op->flops * (op->per_layer ? st->layers : 1);
    }
    zs_table *t = kv_table("step");
    text(t, "model", "%s", m->name);
    note(t, "%d layers, hidden %d, %d heads (%d KV) of %d, ffn %d (%s), vocab %d", m->layers,
         m->hidden, m->heads, m->kv_heads, m->head_dim, m->ffn, zs_mlp_kind_name(zs_model_mlp(m)),
         m->vocab);
    text(t, "gpu", "%s", cl->gpu.name);
    note(t, "%.0f TFLOP/s bf16, %.0f GB/s HBM", cl->gpu.peak_tflops, cl->gpu.hbm_gbs);
    num(t, "tokens", "tokens", "%.0f", (double)a->len);
    note(t, "per micro-batch: one causal sequence");
    num(t, "tp", NULL, "%.0f", (double)a->tp);
    note(t, "sequence parallelism %s", a->sp ? "on" : "off");
    text(t, "precision", "%s", zs_precision_name(a->prec));
    text(t, "recompute", "%s", zs_step_rc_name(a->rc));
    text(t, "kernels", "%s", zs_step_kernels_name(a->kern));
    text(t, "optimizer", "Adam, ZeRO-%ld over dp=%ld", a->zero, a->dp);
    if (a->zero >= 3)
        note(t, "ZeRO-3 as %s", zs_fsdp_name(a->fsdp));
    if (a->lora)
        note(t, "LoRA: rank-%ld adapters on QKV trained (%.0f parameters), base weights frozen",
             a->lora, zs_step_trained_params(m, (int)a->lora));
    num(t, "step_time", "ms", "%.4f", st->total_s * 1e3);
    num(t, "model_flops", "TFLOP", "%.4f", model_flops / 1e12);
    note(t, "GEMMs and attention, forward and backward, no recomputation");
    num(t, "model_tflops", "TFLOP/s", "%.1f",
        st->total_s > 0 ? model_flops / st->total_s / 1e12 : 0);
    text(t, "memory_bound", "bytes / (%.0f GB/s HBM x %.2f) + %.3f us per kernel", cl->gpu.hbm_gbs,
         ZS_HBM_EFF, cl->gpu.gemm.launch_us);
    note(t,
         "a GEMM: its curve (size term held below %.0f), never faster than its bytes at that "
         "rate plus its launch",
         cl->gpu.gemm.dim_floor);
    text(t, "gemm_source", "%s", cl->gpu.gemm.source);
    if (zs_precision_fp8(a->prec)) {
        num(t, "fp8_gemm", "TFLOP/s", "%.1f", cl->gpu.fp8_tflops);
        note(t,
             "FP8 GEMM curve: half_dim %g, p %g, launch %g us, size term held below %g; inputs "
             "1 byte a value (%s)",
             cl->gpu.fp8_half_dim, cl->gpu.fp8_p, cl->gpu.gemm.launch_us, cl->gpu.fp8_dim_floor,
             cl->gpu.fp8_source);
        text(t, "fp8_cast", "bytes / (%.0f GB/s HBM x %.4f) + %.3f us per cast-transpose",
             cl->gpu.hbm_gbs, ZS_FP8_CT_EFF, cl->gpu.gemm.launch_us);
        note(t, "TransformerEngine's cast-transpose: 51.53 us for 4096 x 4096 fp16 -> FP8 on "
                "an H100 SXM (NVIDIA/TransformerEngine PR 101); see docs/cost-model.md");
    }
    text(t, "cost_model", "%s", c->desc);
    return t;
}

static int cost_step(const cost_args *a, zs_err *e)
{
    if (a->len < 1)
        return zs_err_set(e, ZS_EUSAGE, "--len", "give the micro-batch's tokens, e.g. --len 4096",
                          "step needs --len");
    zs_model m;
    zs_cluster cl;
    zs_cost *c = NULL;
    int rc = setup(a, 0, &m, &cl, &c, e);
    if (rc)
        return rc;
    zs_step_cfg cfg = zs_step_cfg_default();
    cfg.tokens = a->len;
    cfg.tp = (int)a->tp;
    cfg.sp = a->sp;
    cfg.precision = a->prec;
    cfg.recompute = a->rc;
    cfg.kernels = a->kern;
    cfg.dp = (int)a->dp;
    cfg.zero_stage = (int)a->zero;
    cfg.fsdp = a->fsdp;
    cfg.lora = (int)a->lora;
    zs_step st;
    if ((rc = zs_step_build(c, &cfg, &st, e))) {
        zs_cost_free(c);
        return rc;
    }
    zs_output *d = zs_output_new("cost", a->fmt, stdout);
    zs_table *tabs[3] = {step_ops_table(&st), step_class_table(&st),
                         step_info_table(a, &st, &cl, c)};
    static const char *const names[3] = {"ops", "classes", "step"};
    for (int i = 0; i < 3; i++) {
        if (d)
            zs_output_table(d, names[i], tabs[i]);
        else
            zs_table_free(tabs[i]);
    }
    zs_step_free(&st);
    zs_cost_free(c);
    return zs_cli_doc_end(d) ? ZS_EIO : ZS_OK;
}

/* "4096,512,128": --lens (at most 64 documents); sets --len to the longest
 * and --docs to the count for the checks every attention price makes. */
static int parse_lens(const char *s, cost_args *a, zs_err *e)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    a->nlens = 0;
    a->len = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long v;
        if (a->nlens == 64)
            return zs_err_set(e, ZS_EUSAGE, "--lens", "give at most 64 lengths",
                              "too many documents in --lens");
        int rc = zs_cli_parse_int("--lens", t, 1, 1L << 30, &v, e);
        if (rc)
            return rc;
        a->lens[a->nlens++] = (int32_t)v;
        a->len = v > a->len ? v : a->len;
    }
    if (a->nlens == 0)
        return zs_err_set(e, ZS_EUSAGE, "--lens", "give lengths, e.g. --lens 4096,512",
                          "empty --lens");
    a->docs = a->nlens;
    return ZS_OK;
}

/* ---- the options: rows of the option engine (cli_flags.h) ---------------- */

/* Parsers of the rows whose values have a shape of their own (ZS_OPT_PARSE):
 * they keep the messages of the parsers they call. */
static int set_bytes(const char *s, void *base, zs_err *e)
{
    return parse_bytes(s, &((cost_args *)base)->bytes, e);
}

static int set_lens(const char *s, void *base, zs_err *e)
{
    return parse_lens(s, base, e);
}

static int set_prec(const char *s, void *base, zs_err *e)
{
    return zs_precision_parse(s, &((cost_args *)base)->prec, e);
}

static int set_rc(const char *s, void *base, zs_err *e)
{
    return zs_step_rc_parse(s, &((cost_args *)base)->rc, e);
}

static int set_kernels(const char *s, void *base, zs_err *e)
{
    return zs_step_kernels_parse(s, &((cost_args *)base)->kern, e);
}

static int set_layout(const char *s, void *base, zs_err *e)
{
    cost_args *a = base;
    zs_cp_layout l;
    if (strcmp(s, "all") == 0) {
        a->layout = ZS_CPL_N;
        return ZS_OK;
    }
    int rc = zs_cpl_parse(s, "--layout", &l, e);
    if (!rc)
        a->layout = (int)l;
    return rc;
}

static int set_impl(const char *s, void *base, zs_err *e)
{
    return zs_cpl_impl_parse(s, "--impl", &((cost_args *)base)->impl, e);
}

static int set_pass(const char *s, void *base, zs_err *e)
{
    cost_args *a = base;
    a->pass = !strcmp(s, "fwd") ? 1 : !strcmp(s, "bwd") ? 2 : !strcmp(s, "fwd+bwd") ? 3 : 0;
    return a->pass ? ZS_OK
                   : zs_err_set(e, ZS_EUSAGE, "--pass", "use fwd, bwd or fwd+bwd",
                                "bad --pass '%s'", s);
}

/* cost's own options, by their place in own[] (getopt value ZS_CLI_OWN +). */
enum {
    C_HEADS,
    C_KV_HEADS,
    C_HEAD_DIM,
    C_LEN,
    C_DOCS,
    C_CP,
    C_BWD,
    C_LAYOUT,
    C_PASS,
    C_LENS,
    C_IMPL,
    C_M,
    C_N,
    C_K,
    C_OP,
    C_BYTES,
    C_GPUS,
    C_SRC,
    C_DST,
    C_PRECISION,
    C_RECOMPUTE,
    C_KERNELS,
    C_SP,
    C_LORA
};

#define ROW(row, name, type, m, lo, hi, def, arg, help)                                            \
    [C_##row] = ZS_OPT_ROW(name, type, cost_args, m, lo, hi, def, arg, help)
#define SET(name, m, fn, arg_, help_) [C_##m] = ZS_OPT_SET(name, fn, NULL, arg_, help_)
static const zs_opt_spec own[] = {
    ROW(HEADS, "heads", ZS_OPT_INT, heads, 1, 1 << 16, "", "H",
        "override the model's attention heads"),
    ROW(KV_HEADS, "kv-heads", ZS_OPT_INT, kv_heads, 1, 1 << 16, "", "K", "override its KV heads"),
    ROW(HEAD_DIM, "head-dim", ZS_OPT_INT, head_dim, 1, 1 << 12, "", "D",
        "override its head dimension"),
    ROW(LEN, "len", ZS_OPT_INT, len, 1, 1L << 30, "", "L",
        "tokens of the document (attention), of the layer (gemm) or of the micro-batch (step)"),
    ROW(DOCS, "docs", ZS_OPT_INT, docs, 1, 1 << 20, "1", "N",
        "equal documents in one varlen launch"),
    ROW(CP, "cp", ZS_OPT_INT, cp, 1, 4096, "1", "N", "context-parallel ranks (zigzag shards)"),
    ROW(BWD, "bwd", ZS_OPT_FLAG, bwd, 0, 1, "0", NULL, "attention backward"),
    SET("layout", LAYOUT, set_layout, "L|all",
        "CP token layout (ring, zigzag, stripe, llama3, or all four): each priced step by step, "
        "see docs/cost-model.md"),
    SET("pass", PASS, set_pass, "fwd|bwd|fwd+bwd",
        "with --layout: the pass(es) priced (default fwd)"),
    SET("lens", LENS, set_lens, "A,B,...",
        "with --layout: documents of these lengths packed in each launch (instead of --len and "
        "--docs)"),
    SET("impl", IMPL, set_impl, ZS_CPL_IMPL_VALUES,
        "with --layout: what runs around the ring layouts' kernels: one fused accumulator pass "
        "per step (fused, the default), or ring-flash-attention's ops (its correction fused by "
        "TorchScript, or -eager: unfused), see docs/cost-model.md"),
    ROW(M, "m", ZS_OPT_F64, m, 1, 1000000000, "", "M",
        "one GEMM of M x K by K x N (with --n and --k)"),
    ROW(N, "n", ZS_OPT_F64, n, 1, 1000000000, "", "N", "the GEMM's N"),
    ROW(K, "k", ZS_OPT_F64, k, 1, 1000000000, "", "K", "the GEMM's K"),
    ROW(OP, "op", ZS_OPT_TEXT, op, 0, 0, NULL, "OP",
        "collective: all-gather, reduce-scatter, all-reduce or all-to-all"),
    SET("bytes", BYTES, set_bytes, "S[K|M|G]",
        "collective and p2p: bytes per rank (the whole buffer for all-reduce)"),
    ROW(GPUS, "gpus", ZS_OPT_INT, gpus, 1, 1 << 24, "", "n", "collective: over ranks 0..n-1"),
    ROW(SRC, "src", ZS_OPT_INT, src, 0, 1 << 24, "", "A", "p2p: the sending rank"),
    ROW(DST, "dst", ZS_OPT_INT, dst, 0, 1 << 24, "", "B", "p2p: the receiving rank"),
    SET("precision", PRECISION, set_prec, "bf16|fp8|fp8-cs",
        "step: GEMM precision (default bf16; fp8: TransformerEngine's delayed scaling, fp8-cs: "
        "its current scaling, an amax pass before each cast; FP8 on H100/H200/H800/B200 only)"),
    /* step's own: selective is the step inventory's alone, which the
     * simulated point (--recompute none|full of simulate) does not model */
    SET("recompute", RECOMPUTE, set_rc, "none|selective|full|selective-op|selective-layer",
        "step: activation recomputation (default none; selective: core attention recomputed in "
        "the backward; selective-op and selective-layer: torchtitan's, docs/cost-model.md)"),
    SET("kernels", KERNELS, set_kernels, "fused|eager|eager-fused-norm",
        "step: the memory-bound ops' kernels: fused (Megatron-Core with TransformerEngine, the "
        "default) or PyTorch eager as torchtitan's Llama runs them (its RMSNorm eager, or its "
        "fused Triton RMSNorm)"),
    /* an ENUM row: the index of "off|on" is the switch */
    [C_SP] = {.cli = "sp",
              .type = ZS_OPT_ENUM,
              ZS_OPT_FIELD(cost_args, sp),
              .values = "off|on",
              .deftext = "on",
              .arg = "on|off",
              .help = "step: sequence parallelism with --tp"},
    ROW(LORA, "lora", ZS_OPT_INT, lora, 0, 1 << 20, "0", "R",
        "step: LoRA fine-tuning with rank-R adapters on the QKV projection (NeMo's default "
        "target; 32 is its default rank): base weights frozen, no weight gradients for them "
        "(0: every weight trained)"),
};
#undef ROW
#undef SET

static const zs_cli_use uses[] = {
    {ZS_F_GPU, "default h100-sxm, or the cluster's"},
    {ZS_FP(CLUSTER), "collective, p2p; also gives the GPU"},
    {ZS_FP(NODES), NULL},
    {ZS_FP(MODEL), "model shape (default llama-7b)"},
    {ZS_FP(ATTN_KERNEL), NULL},
    {ZS_F_TP, "heads / N, GEMM columns / N (default 1)"},
    {ZS_F_DP, "step: the optimizer state is sharded over it (default 1)"},
    {ZS_FP(ZERO), "step: the stage of that sharding (default 1)"},
    {ZS_FP(FSDP), "step, with --zero 3: whose copies are priced (default fsdp2)"},
    {ZS_FP(CALIB), NULL},
    {ZS_F_FORMAT, NULL},
    {0, NULL}};

static const zs_cli_cmd cost_cmd = {
    .name = "cost", .head = cost_help, ZS_CLI_OWN_ROWS(own), .uses = uses};

/* -1: parsed into a; otherwise the exit status. */
static int parse_args(int argc, char **argv, cost_args *a)
{
    int st = zs_cli_parse(&cost_cmd, argc, argv, a, &a->fl);
    if (st >= 0)
        return st;
    const zs_cli_flags *f = &a->fl;
    a->gpu = f->gpu;
    a->cluster = zs_cli_given(f, ZS_P_CLUSTER);
    a->nodes = f->p.nodes;
    a->model = f->p.model;
    a->kernel = f->p.attn_kernel[0] ? f->p.attn_kernel : NULL;
    a->calib = f->p.calib[0] ? f->p.calib : NULL;
    a->tp = f->tp;
    a->dp = f->dp;
    a->zero = f->p.zero_stage;
    a->fsdp = f->p.fsdp;
    a->fmt = f->fmt;
    /* p2p checks that both ranks were given */
    if (!zs_cli_was_given(f, ZS_CLI_OWN + C_SRC))
        a->src = -1;
    if (!zs_cli_was_given(f, ZS_CLI_OWN + C_DST))
        a->dst = -1;
    if (optind >= argc)
        return zs_cli_usage_error("cost", "expected what to price: attention, gemm, collective, "
                                          "p2p or step");
    if (optind + 1 < argc)
        return zs_cli_usage_error("cost", "unexpected argument '%s'", argv[optind + 1]);
    return -1;
}

int zs_cmd_cost(int argc, char **argv)
{
    cost_args a;
    memset(&a, 0, sizeof a);
    a.layout = -1; /* the rows with a parser of their own and no default */
    a.bytes = -1;
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    const char *what = argv[optind];
    int rc;
    if (strcmp(what, "attention") == 0)
        rc = cost_attention(&a, &e);
    else if (strcmp(what, "gemm") == 0)
        rc = cost_gemm(&a, &e);
    else if (strcmp(what, "collective") == 0)
        rc = cost_transfer(&a, 1, &e);
    else if (strcmp(what, "p2p") == 0)
        rc = cost_transfer(&a, 0, &e);
    else if (strcmp(what, "step") == 0)
        rc = cost_step(&a, &e);
    else
        return zs_cli_usage_error(
            "cost", "unknown op '%s' (attention, gemm, collective, p2p or step)", what);
    if (rc == ZS_EIO && !e.what[0]) /* the output failed: already said */
        return 1;
    return rc ? zs_cli_fail(&e) : 0;
}

/* GPU descriptions: see zs_gpu.h. */
#include "zs_gpu.h"

#include <stddef.h>
#include <string.h>

#include "zs_presets.h"

#define F(key, type, member, min, max, req, def, unit, help)                                       \
    {                                                                                              \
        key, type, offsetof(zs_gpu, member), sizeof(((zs_gpu *)0)->member), min, max, req, def,    \
            unit, help                                                                             \
    }
const zs_field zs_gpu_fields[] = {
    F("name", ZS_F_STRING, name, 0, 0, 1, 0, "", "GPU name"),
    F("source", ZS_F_STRING, source, 0, 0, 0, 0, "", "where the numbers come from"),
    F("peak_tflops", ZS_F_DOUBLE, peak_tflops, 1, 100000, 1, 0, "TFLOP/s", "dense bf16 peak"),
    F("hbm_gbs", ZS_F_DOUBLE, hbm_gbs, 1, 1e6, 1, 0, "GB/s", "HBM bandwidth"),
    F("mem_gib", ZS_F_DOUBLE, mem_gib, 1, 1e5, 1, 0, "GiB", "device memory"),
    F("nvlink_gbs", ZS_F_DOUBLE, nvlink_gbs, 1, 1e5, 1, 0, "GB/s",
      "NVLink bandwidth per GPU per direction"),
    F("sms", ZS_F_INT, sms, 1, 100000, 0, 132, "", "streaming multiprocessors"),
    F("compute_capability", ZS_F_DOUBLE, cc, 6.0, 20.0, 0, 9.0, "",
      "CUDA compute capability (8.0 Ampere, 9.0 Hopper): NCCL's constants"),
    F("nvlinks", ZS_F_INT, nvlinks, 0, 64, 0, 0, "",
      "NVLink links per GPU (0: nvlink_gbs / 25, / 50 from compute capability 10)"),
    F("attn_kernel", ZS_F_STRING, attn_kernel, 0, 0, 0, 0, "",
      "attention kernel modelled (one of attn_kernels; default the first)"),
    F("fp8_tflops", ZS_F_DOUBLE, fp8_tflops, 0, 100000, 0, 0, "TFLOP/s",
      "asymptotic FP8 GEMM rate of the FP8 GEMM curve (0: none; launch as the GEMM curve's)"),
    F("fp8_half_dim", ZS_F_DOUBLE, fp8_half_dim, 0, 1e6, 0, -1, "",
      "FP8 GEMM curve: smallest dimension at half rate (absent: the GEMM curve's)"),
    F("fp8_p", ZS_F_DOUBLE, fp8_p, 0, 10, 0, -1, "",
      "FP8 GEMM curve: exponent of the size effect (absent: the GEMM curve's)"),
    F("fp8_dim_floor", ZS_F_DOUBLE, fp8_dim_floor, 0, 1e6, 0, -1, "",
      "FP8 GEMM curve: smallest dimension of its fit; thinner GEMMs keep the size effect there "
      "(absent: the GEMM curve's dim_floor)"),
    F("fp8_source", ZS_F_STRING, fp8_source, 0, 0, 0, 0, "",
      "where fp8_tflops, fp8_half_dim, fp8_p and fp8_dim_floor come from"),
    F("host_gbs", ZS_F_DOUBLE, host_gbs, 0, 1e5, 0, 0, "GB/s",
      "pinned host <-> device copy rate per direction over the host link (0: none)"),
    F("host_source", ZS_F_STRING, host_source, 0, 0, 0, 0, "", "where host_gbs comes from"),
};
#undef F
const size_t zs_gpu_nfields = sizeof zs_gpu_fields / sizeof zs_gpu_fields[0];

static void kernel_names(const zs_gpu *g, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->nkernels && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", g->kernels[i].name);
}

const zs_attn_kernel *zs_gpu_attn_kernel(const zs_gpu *g)
{
    for (int i = 0; i < g->nkernels; i++)
        if (strcmp(g->kernels[i].name, g->attn_kernel) == 0)
            return &g->kernels[i];
    return &g->kernels[0];
}

/* Megatron-LM's attention before FlashAttention, on any GPU: a kernel
 * entry that only names it (zs_attn_kernel.unfused); its tiles are the
 * default kernel's. */
static int add_unfused(zs_gpu *g, zs_err *e)
{
    if (g->nkernels >= ZS_KERNEL_MAX)
        return zs_err_set(e, ZS_EINPUT, "--attn-kernel", "give the GPU fewer attention kernels",
                          "GPU '%s' has no room for the unfused attention", g->name);
    zs_attn_kernel *k = &g->kernels[g->nkernels];
    *k = *zs_gpu_attn_kernel(g);
    snprintf(k->name, sizeof k->name, "unfused");
    snprintf(k->source, sizeof k->source,
             "Megatron-LM's CoreAttention before FlashAttention (megatron/model/transformer.py, "
             "00baee46: baddbmm QK^T, FusedScaleMaskSoftmax, dropout, bmm with V) [P]: its "
             "batched GEMMs on the GPU's GEMM curve, the score tensor's passes at the "
             "memory-bound rate (docs/cost-model.md, \"Unfused attention\")");
    k->unfused = 1;
    g->nkernels++;
    return ZS_OK;
}

int zs_gpu_select_kernel(zs_gpu *g, const char *name, zs_err *e)
{
    if (strcmp(name, "unfused") == 0) {
        int have = 0;
        for (int i = 0; i < g->nkernels; i++)
            have |= g->kernels[i].unfused;
        int rc = have ? ZS_OK : add_unfused(g, e);
        if (rc)
            return rc;
    }
    for (int i = 0; i < g->nkernels; i++)
        if (strcmp(g->kernels[i].name, name) == 0) {
            snprintf(g->attn_kernel, sizeof g->attn_kernel, "%s", name);
            return ZS_OK;
        }
    char names[256];
    kernel_names(g, names, sizeof names);
    return zs_err_set(e, ZS_EINPUT, "--attn-kernel", "choose one of the GPU's kernels, or unfused",
                      "GPU '%s' has no attention kernel '%s' (it has: %s; and unfused, "
                      "Megatron-LM's attention before FlashAttention, on every GPU)",
                      g->name, name, names);
}

/* A description without kernels gets the A800 preset's (FlashAttention-2
 * and cuBLAS on A100-class silicon) with every rate scaled by the ratio of
 * the peaks: an assumption, said in the sources. */
static int assume_kernels(zs_gpu *g, zs_err *e)
{
    zs_gpu ref;
    int rc = zs_gpu_load("a800-80g", &ref, e);
    if (rc)
        return rc;
    double s = g->peak_tflops / ref.peak_tflops;
    g->nkernels = 1;
    g->kernels[0] = *zs_gpu_attn_kernel(&ref);
    g->kernels[0].fwd.tflops *= s;
    g->kernels[0].bwd.tflops *= s;
    snprintf(g->kernels[0].source, sizeof g->kernels[0].source,
             "assumed: no attention kernel in the GPU description; the a800-80g preset's %s "
             "kernel with its rates scaled by the peaks (x%.3f)",
             ref.kernels[0].name, s);
    snprintf(g->attn_kernel, sizeof g->attn_kernel, "%s", g->kernels[0].name);
    g->gemm = ref.gemm;
    g->gemm.tflops *= s;
    snprintf(g->gemm.source, sizeof g->gemm.source,
             "assumed: no GEMM curve in the GPU description; the a800-80g preset's curve with "
             "its rate scaled by the peaks (x%.3f)",
             s);
    g->assumed_kernels = 1;
    return ZS_OK;
}

int zs_gpu_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent_key, zs_gpu *out,
                     zs_err *e)
{
    static const char *const own[] = {"attn_kernels", "gemm", NULL};
    zs_gpu g;
    memset(&g, 0, sizeof g);
    int rc = zs_config_parse(doc, obj, parent_key, zs_gpu_fields, zs_gpu_nfields, own, &g, e);
    if (rc)
        return rc;
    json_t *ks = json_object_get(obj, "attn_kernels"), *gm = json_object_get(obj, "gemm");
    char where[600];
    if (!ks != !gm) {
        zs_json_where(doc, parent_key, ks ? "attn_kernels" : "gemm", where, sizeof where);
        return zs_err_set(e, ZS_EINPUT, where,
                          "give both \"attn_kernels\" and \"gemm\", or neither (then both are "
                          "scaled from the a800-80g preset, an assumption)",
                          "GPU '%s' has %s but no %s", g.name, ks ? "attn_kernels" : "gemm",
                          ks ? "gemm" : "attn_kernels");
    }
    if (!ks)
        rc = assume_kernels(&g, e);
    else if (!json_is_array(ks) || json_array_size(ks) < 1 ||
             json_array_size(ks) > ZS_KERNEL_MAX - 1) {
        zs_json_where(doc, parent_key, "attn_kernels", where, sizeof where);
        return zs_err_set(e, ZS_EINPUT, where, "give a list of 1 to 4 kernel objects",
                          "bad attn_kernels list");
    } else {
        size_t i;
        json_t *k;
        json_array_foreach(ks, i, k)
        {
            if ((rc = zs_attn_kernel_from_json(doc, k, &g.kernels[g.nkernels], e)))
                return rc;
            for (int j = 0; j < g.nkernels; j++)
                if (strcmp(g.kernels[j].name, g.kernels[g.nkernels].name) == 0) {
                    zs_json_where(doc, parent_key, "attn_kernels", where, sizeof where);
                    return zs_err_set(e, ZS_EINPUT, where, "give each kernel its own name",
                                      "two attention kernels named '%s'", g.kernels[j].name);
                }
            g.nkernels++;
        }
        rc = zs_gemm_curve_from_json(doc, gm, &g.gemm, e);
        if (rc == ZS_OK && !g.attn_kernel[0])
            snprintf(g.attn_kernel, sizeof g.attn_kernel, "%s", g.kernels[0].name);
        if (rc == ZS_OK && strcmp(zs_gpu_attn_kernel(&g)->name, g.attn_kernel) != 0) {
            char names[256];
            kernel_names(&g, names, sizeof names);
            zs_json_where(doc, parent_key, "attn_kernel", where, sizeof where);
            return zs_err_set(e, ZS_EINPUT, where, "name one of the GPU's attn_kernels",
                              "attn_kernel '%s' is not among the kernels (%s)", g.attn_kernel,
                              names);
        }
    }
    if (rc == ZS_OK) {
        /* an FP8 curve without its own shape takes the GEMM curve's */
        g.fp8_half_dim = g.fp8_half_dim < 0 ? g.gemm.half_dim : g.fp8_half_dim;
        g.fp8_p = g.fp8_p < 0 ? g.gemm.p : g.fp8_p;
        g.fp8_dim_floor = g.fp8_dim_floor < 0 ? g.gemm.dim_floor : g.fp8_dim_floor;
        *out = g;
    }
    return rc;
}

zs_gemm_curve zs_gpu_fp8_curve(const zs_gpu *g)
{
    zs_gemm_curve c = g->gemm;
    c.tflops = g->fp8_tflops;
    c.half_dim = g->fp8_half_dim;
    c.p = g->fp8_p;
    c.dim_floor = g->fp8_dim_floor;
    snprintf(c.source, sizeof c.source, "%s", g->fp8_source);
    return c;
}

int zs_gpu_check_fp8(const zs_gpu *g, zs_err *e)
{
    if (g->cc < 8.9)
        return zs_err_set(e, ZS_EINPUT, "--precision",
                          "use --precision bf16, or a GPU with FP8 tensor cores (H100, H200, H800)",
                          "GPU '%s' (compute capability %.1f) has no FP8 tensor cores (FP8 "
                          "needs 8.9 or later)",
                          g->name, g->cc);
    if (g->fp8_tflops <= 0)
        return zs_err_set(e, ZS_EINPUT, "--precision",
                          "add \"fp8_tflops\" (and \"fp8_source\") to the GPU description",
                          "GPU '%s' has no FP8 GEMM rate", g->name);
    return ZS_OK;
}

int zs_gpu_check_host(const zs_gpu *g, const char *where, zs_err *e)
{
    if (g->host_gbs <= 0)
        return zs_err_set(e, ZS_EINPUT, where,
                          "add \"host_gbs\" (and \"host_source\") to the GPU description",
                          "GPU '%s' has no host copy rate (host_gbs)", g->name);
    return ZS_OK;
}

int zs_gpu_load(const char *name_or_file, zs_gpu *out, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_preset_open("gpu", name_or_file, &doc, e);
    if (rc == ZS_OK)
        rc = zs_gpu_from_json(doc, doc->root, NULL, out, e);
    zs_json_doc_free(doc);
    return rc;
}

void zs_gpu_print(FILE *f, const zs_gpu *g)
{
    zs_config_print(f, zs_gpu_fields, zs_gpu_nfields, g, 2);
    for (int i = 0; i < g->nkernels; i++)
        zs_attn_kernel_print(f, &g->kernels[i], 2);
    fprintf(f,
            "  gemm: %.1f TFLOP/s, half_dim %.0f, p %.2f, launch %.1f us, size term held below "
            "%.0f\n    source: %s\n",
            g->gemm.tflops, g->gemm.half_dim, g->gemm.p, g->gemm.launch_us, g->gemm.dim_floor,
            g->gemm.source);
    if (g->fp8_tflops > 0)
        fprintf(f,
                "  fp8 gemm: %.1f TFLOP/s, half_dim %.0f, p %.2f, launch %.1f us, size term held "
                "below %.0f\n",
                g->fp8_tflops, g->fp8_half_dim, g->fp8_p, g->gemm.launch_us, g->fp8_dim_floor);
}

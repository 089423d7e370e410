/* Pieces every cost model shares: zigzag context-parallel shards, collective
 * names and the common destructor. See zs_cost.h. */
#include "zs_cost.h"

#include <stdlib.h>

#include "zs_calib.h"

const char *zs_coll_kind_name(int k)
{
    static const char *names[] = {"all-gather", "reduce-scatter", "all-reduce", "all-to-all"};
    return k >= 0 && k < ZS_COLL_NKINDS ? names[k] : "?";
}

void zs_cost_free(zs_cost *c)
{
    if (!c)
        return;
    if (c->ops && c->ops->free)
        c->ops->free(c);
    free(c);
}

void zs_zigzag_chunk(int32_t len, int g, int c, int32_t *t0, int32_t *t1)
{
    int64_t n = 2 * (int64_t)g, base = len / n, rem = len % n;
    int64_t a = c * base + (c < rem ? c : rem);
    *t0 = (int32_t)a;
    *t1 = (int32_t)(a + base + (c < rem ? 1 : 0));
}

int zs_zigzag_step_blocks(int32_t doc, int32_t len, int g, int rank, int step, zs_attn_block out[4])
{
    int src = ((rank - step) % g + g) % g;
    int qc[2] = {rank, 2 * g - 1 - rank}, kc[2] = {src, 2 * g - 1 - src};
    int n = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            if (kc[b] > qc[a])
                continue; /* above the diagonal: nothing to compute */
            int32_t q0, q1, k0, k1;
            zs_zigzag_chunk(len, g, qc[a], &q0, &q1);
            zs_zigzag_chunk(len, g, kc[b], &k0, &k1);
            if (q1 > q0 && k1 > k0)
                out[n++] = (zs_attn_block){doc, q0, q1, k0, k1};
        }
    return n;
}

double zs_cost_attn_zigzag(const zs_cost *c, int32_t len, int g, int rank, int heads, int backward,
                           int one_launch)
{
    if (g <= 1) {
        zs_attn_block b = {0, 0, len, 0, len};
        return zs_cost_attn(c, &b, 1, heads, backward);
    }
    zs_attn_block step[4], *all = one_launch ? malloc(sizeof *all * 4 * (size_t)g) : NULL;
    int n = 0;
    double t = 0;
    for (int j = 0; j < g; j++) {
        int k = zs_zigzag_step_blocks(0, len, g, rank, j, step);
        if (!all) { /* per-step launches (also the fallback when out of memory) */
            t += zs_cost_attn(c, step, k, heads, backward);
            continue;
        }
        for (int i = 0; i < k; i++)
            all[n++] = step[i];
    }
    if (all)
        t = zs_cost_attn(c, all, n, heads, backward);
    free(all);
    return t;
}

int zs_cost_set_fp8(zs_cost *c, int on, zs_err *e)
{
    int rc = on ? zs_gpu_check_fp8(&c->cluster.gpu, e) : ZS_OK;
    if (!rc) {
        c->fp8 = on != 0;
        c->fp8_cs = on == 2;
    }
    return rc;
}

double zs_fp8_cast_bytes(double vals, double dtype_bytes)
{
    return vals * (dtype_bytes + 2);
}

double zs_fp8_cast_time(const zs_gpu *g, double bytes)
{
    if (bytes <= 0)
        return 0;
    return g->gemm.launch_us * 1e-6 + bytes / (ZS_FP8_CT_EFF * g->hbm_gbs * 1e9);
}

double zs_fp8_amax_bytes(void)
{
    return 4 * 3 * (ZS_FP8_AMAX_HIST + 1) * 4.0 * 2;
}

double zs_cost_gemm_hbm_Bps(const zs_cost *c)
{
    return ZS_HBM_EFF * c->cluster.gpu.hbm_gbs * 1e9;
}

double zs_cost_dtype_bytes(const zs_cost *c)
{
    return c->model.dtype_bytes > 0 ? c->model.dtype_bytes : 2;
}

double zs_cost_gemm_fp8(const zs_cost *c, double m, double n, double k, double bytes)
{
    zs_gemm_curve g8 = zs_gpu_fp8_curve(&c->cluster.gpu);
    if (bytes <= 0)
        bytes = zs_gemm_bytes(m, n, k, 1, zs_cost_dtype_bytes(c));
    return zs_gemm_time(&g8, m, n, k, bytes, zs_cost_gemm_hbm_Bps(c));
}

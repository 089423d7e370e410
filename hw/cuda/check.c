/* Kernel correctness on the GPU: every CUDA kernel against the CPU
 * reference (zs_hw_ref.c) on small random inputs rounded to bf16, so both
 * sides see the same values. Pass: max |gpu - ref| <= 1e-2 * max |ref| per
 * tensor and no NaN. Block lists cover what planners produce: a whole
 * causal document longer than one tile and not a multiple of it, zigzag
 * ring chunks, full blocks below the diagonal, a block with query rows that
 * see no key, several blocks in one launch, GQA, head dims 64 and 128. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_cuda_internal.h"
#include "zs_hw_prog.h"

#define TOL 1e-2

static uint64_t g_rng = 1;
static float rnd(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(g_rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

/* Host float tensor rounded to bf16, and its device copy. */
typedef struct tens {
    int64_t n;
    float *h;
    void *d;
} tens;

static int tens_new(tens *t, int64_t n, int random, zs_err *e)
{
    t->n = n;
    t->h = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    t->d = NULL;
    uint16_t *b = calloc((size_t)(n > 0 ? n : 1), sizeof(uint16_t));
    if (!t->h || !b) {
        free(b);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        t->h[i] = random ? rnd() : 0.f;
        b[i] = zs_bf16_from_float(t->h[i]);
        t->h[i] = zs_bf16_to_float(b[i]);
    }
    int rc =
        zs__cuda_ok(cudaMalloc(&t->d, sizeof(uint16_t) * (size_t)(n > 0 ? n : 1)), "malloc", e);
    if (!rc)
        rc = zs__cuda_ok(cudaMemcpy(t->d, b, sizeof(uint16_t) * (size_t)n, cudaMemcpyHostToDevice),
                         "copy", e);
    free(b);
    return rc;
}

static void tens_free(tens *t)
{
    free(t->h);
    cudaFree(t->d);
    memset(t, 0, sizeof *t);
}

/* Device bf16 tensor of n values to host floats. */
static int fetch(const void *d, int64_t n, float *out, zs_err *e)
{
    uint16_t *b = malloc(sizeof(uint16_t) * (size_t)(n > 0 ? n : 1));
    if (!b)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int rc = zs__cuda_ok(cudaMemcpy(b, d, sizeof(uint16_t) * (size_t)n, cudaMemcpyDeviceToHost),
                         "copy back", e);
    for (int64_t i = 0; !rc && i < n; i++)
        out[i] = zs_bf16_to_float(b[i]);
    free(b);
    return rc;
}

static int report(FILE *log, const char *name, const float *got, const float *want, int64_t n,
                  int *fails)
{
    double err = zs_rel_err(got, want, n, 1e-6);
    int ok = !isnan(err) && err <= TOL;
    if (log)
        fprintf(log, "%-4s %-44s rel_err %.2e (limit %.0e)\n", ok ? "ok" : "FAIL", name, err, TOL);
    *fails += !ok;
    return ok;
}

typedef struct attn_case {
    const char *name;
    zs_attn_dims d;
    int nb;
    zs_attn_block b[8];
} attn_case;

static int check_attn(const attn_case *c, FILE *log, int *fails, zs_err *e)
{
    zs_hw_block hb[8];
    int64_t qr, kr;
    zs_hw_blocks_pack(c->b, c->nb, hb, &qr, &kr);
    const zs_attn_dims *d = &c->d;
    int64_t nq = qr * d->heads * d->head_dim, nk = kr * d->kv_heads * d->head_dim;
    float scale = 1.0f / sqrtf((float)d->head_dim);
    tens q, k, v, dout;
    int rc = tens_new(&q, nq, 1, e);
    rc = rc ? rc : tens_new(&k, nk, 1, e);
    rc = rc ? rc : tens_new(&v, nk, 1, e);
    rc = rc ? rc : tens_new(&dout, nq, 1, e);
    float *o = calloc((size_t)nq, 4), *lse = calloc((size_t)(qr * d->heads), 4);
    float *go = calloc((size_t)nq, 4), *glse = calloc((size_t)(qr * d->heads), 4);
    float *dq = calloc((size_t)nq, 4), *dk = calloc((size_t)nk, 4), *dv = calloc((size_t)nk, 4);
    float *gdq = calloc((size_t)nq, 4), *gdk = calloc((size_t)nk, 4), *gdv = calloc((size_t)nk, 4);
    void *dblocks = NULL, *dtiles = NULL, *d_o = NULL, *d_dq = NULL, *d_dk = NULL, *d_dv = NULL;
    float *d_lse = NULL;
    zs__attn_bwd_bufs bb;
    memset(&bb, 0, sizeof bb);
    int32_t *tiles = NULL;
    if (!rc && (!o || !lse || !go || !glse || !dq || !dk || !dv || !gdq || !gdk || !gdv))
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (!rc)
        rc = zs_ref_attn_fwd(hb, c->nb, d, scale, q.h, k.h, v.h, o, lse, e);
    if (!rc)
        rc = zs_ref_attn_bwd(hb, c->nb, d, scale, q.h, k.h, v.h, o, lse, dout.h, dq, dk, dv, e);
    /* The GPU backward consumes the GPU forward's O and LSE (bf16 O), the
     * CPU one the reference's: both are compared to the reference. */
    int64_t nft = zs_hw_attn_tiles(hb, c->nb, ZS_ATTN_FWD_ROWS, 0, NULL, 0);
    int64_t nbt = zs_hw_attn_tiles(hb, c->nb, ZS_ATTN_BWD_ROWS, 1, NULL, 0);
    int64_t nt = nft > nbt ? nft : nbt;
    tiles = malloc(sizeof(int32_t) * 2 * (size_t)(nt > 0 ? nt : 1));
    if (!rc && !tiles)
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    size_t szq = sizeof(uint16_t) * (size_t)nq, szk = sizeof(uint16_t) * (size_t)nk;
    if (!rc)
        rc = zs__cuda_ok(cudaMalloc(&dblocks, sizeof hb), "malloc", e) ||
                     zs__cuda_ok(cudaMalloc(&dtiles, sizeof(int32_t) * 2 * (size_t)(nt + 1)),
                                 "malloc", e) ||
                     zs__cuda_ok(cudaMalloc(&d_o, szq), "malloc", e) ||
                     zs__cuda_ok(
                         cudaMalloc((void **)&d_lse, sizeof(float) * (size_t)(qr * d->heads)),
                         "malloc", e) ||
                     zs__cuda_ok(cudaMalloc(&d_dq, szq), "malloc", e) ||
                     zs__cuda_ok(cudaMalloc(&d_dk, szk), "malloc", e) ||
                     zs__cuda_ok(cudaMalloc(&d_dv, szk), "malloc", e) ||
                     zs__cuda_ok(
                         cudaMalloc((void **)&bb.dd, sizeof(float) * (size_t)(qr * d->heads)),
                         "malloc", e) ||
                     zs__cuda_ok(cudaMalloc((void **)&bb.dq32, sizeof(float) * (size_t)nq),
                                 "malloc", e) ||
                     zs__cuda_ok(cudaMalloc((void **)&bb.dk32, sizeof(float) * (size_t)nk),
                                 "malloc", e) ||
                     zs__cuda_ok(cudaMalloc((void **)&bb.dv32, sizeof(float) * (size_t)nk),
                                 "malloc", e)
                 ? ZS_ERUNTIME
                 : ZS_OK;
    if (!rc)
        rc = zs__cuda_ok(cudaMemcpy(dblocks, hb, sizeof hb, cudaMemcpyHostToDevice), "copy", e);
    if (!rc) {
        zs_hw_attn_tiles(hb, c->nb, ZS_ATTN_FWD_ROWS, 0, tiles, nft);
        rc = zs__cuda_ok(
            cudaMemcpy(dtiles, tiles, sizeof(int32_t) * 2 * (size_t)nft, cudaMemcpyHostToDevice),
            "copy", e);
    }
    if (!rc)
        rc = zs__cuda_ok(
            zs__attn_fwd(dblocks, dtiles, (int)nft, d, scale, q.d, k.d, v.d, d_o, d_lse, 0),
            "attention forward", e);
    if (!rc)
        rc = zs__cuda_ok(cudaDeviceSynchronize(), "attention forward", e);
    if (!rc)
        rc = fetch(d_o, nq, go, e);
    if (!rc)
        rc = zs__cuda_ok(cudaMemcpy(glse, d_lse, sizeof(float) * (size_t)(qr * d->heads),
                                    cudaMemcpyDeviceToHost),
                         "copy back", e);
    if (!rc) {
        zs_hw_attn_tiles(hb, c->nb, ZS_ATTN_BWD_ROWS, 1, tiles, nbt);
        rc = zs__cuda_ok(
            cudaMemcpy(dtiles, tiles, sizeof(int32_t) * 2 * (size_t)nbt, cudaMemcpyHostToDevice),
            "copy", e);
    }
    bb.dq = d_dq, bb.dk = d_dk, bb.dv = d_dv, bb.q_rows = qr, bb.k_rows = kr;
    if (!rc)
        rc = zs__cuda_ok(zs__attn_bwd(dblocks, dtiles, (int)nbt, d, scale, q.d, k.d, v.d, d_o,
                                      d_lse, dout.d, &bb, 0),
                         "attention backward", e);
    if (!rc)
        rc = zs__cuda_ok(cudaDeviceSynchronize(), "attention backward", e);
    if (!rc)
        rc = fetch(d_dq, nq, gdq, e);
    if (!rc)
        rc = fetch(d_dk, nk, gdk, e);
    if (!rc)
        rc = fetch(d_dv, nk, gdv, e);
    if (!rc) {
        char name[96];
        const char *what[5] = {"O", "LSE", "dQ", "dK", "dV"};
        const float *got[5] = {go, glse, gdq, gdk, gdv}, *want[5] = {o, lse, dq, dk, dv};
        int64_t cnt[5] = {nq, qr * d->heads, nq, nk, nk};
        for (int i = 0; i < 5; i++) {
            snprintf(name, sizeof name, "attn %s d=%d %s%s", c->name, d->head_dim, what[i],
                     i < 2 ? (zs__attn_pipelined() ? " (fwd cp.async)" : " (fwd plain)") : "");
            report(log, name, got[i], want[i], cnt[i], fails);
        }
    }
    tens_free(&q), tens_free(&k), tens_free(&v), tens_free(&dout);
    free(o), free(lse), free(go), free(glse), free(dq), free(dk), free(dv), free(gdq), free(gdk);
    free(gdv), free(tiles);
    cudaFree(dblocks), cudaFree(dtiles), cudaFree(d_o), cudaFree(d_lse), cudaFree(d_dq);
    cudaFree(d_dk), cudaFree(d_dv), cudaFree(bb.dd), cudaFree(bb.dq32), cudaFree(bb.dk32);
    cudaFree(bb.dv32);
    return rc;
}

static int check_gemm(FILE *log, int *fails, zs_err *e)
{
    int m = 200, n = 96, k = 160;
    tens x, w;
    int rc = tens_new(&x, (int64_t)m * k, 1, e);
    rc = rc ? rc : tens_new(&w, (int64_t)n * k, 1, e);
    float *wt = malloc(sizeof(float) * (size_t)(n * k)),
          *c = malloc(sizeof(float) * (size_t)(m * n));
    float *gc = malloc(sizeof(float) * (size_t)(m * n));
    void *dc = NULL;
    zs__gemm *g = NULL;
    if (!rc && (!wt || !c || !gc))
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (!rc) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < k; j++)
                wt[j * n + i] = w.h[i * k + j]; /* W^T as [k][n] for the reference */
        zs_ref_gemm(m, n, k, x.h, wt, c);
        rc = zs__cuda_ok(cudaMalloc(&dc, sizeof(uint16_t) * (size_t)(m * n)), "malloc", e);
    }
    if (!rc)
        rc = zs__gemm_new(&g, e);
    if (!rc)
        rc = zs__gemm_run(g, m, n, k, x.d, w.d, dc, 0, e);
    if (!rc)
        rc = zs__cuda_ok(cudaDeviceSynchronize(), "GEMM", e);
    if (!rc)
        rc = fetch(dc, (int64_t)m * n, gc, e);
    if (!rc)
        report(log, "gemm cuBLASLt m=200 n=96 k=160", gc, c, (int64_t)m * n, fails);
    zs__gemm_free(g);
    cudaFree(dc);
    tens_free(&x), tens_free(&w);
    free(wt), free(c), free(gc);
    return rc;
}

static int check_elementwise(FILE *log, int *fails, zs_err *e)
{
    int rows = 37, cols = 1000, heads = 3, hd = 64;
    int64_t n = (int64_t)rows * cols;
    tens x, r, w, y, oa, ob;
    int rc = tens_new(&x, n, 1, e);
    rc = rc ? rc : tens_new(&r, n, 1, e);
    rc = rc ? rc : tens_new(&w, cols, 1, e);
    rc = rc ? rc : tens_new(&y, n, 0, e);
    int64_t nm = (int64_t)rows * heads * hd;
    rc = rc ? rc : tens_new(&oa, nm, 1, e);
    rc = rc ? rc : tens_new(&ob, nm, 1, e);
    float *want = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
    float la[37 * 3], lb[37 * 3], ll[37 * 3], gl[37 * 3];
    float *dla = NULL, *dlb = NULL;
    if (!rc && (!want || !got))
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < rows * heads; i++) {
        la[i] = 3 * rnd();
        lb[i] = i % 7 == 0 ? -INFINITY : 3 * rnd(); /* some partials saw no key */
    }
    for (int step = 0; step < 4 && !rc; step++) {
        const char *name = "";
        cudaError_t st = cudaSuccess;
        int64_t cnt = n;
        if (step == 0) {
            name = "rmsnorm 37x1000";
            zs_ref_rmsnorm(rows, cols, x.h, w.h, 1e-5f, want);
            st = zs__rmsnorm(rows, cols, x.d, w.d, 1e-5f, y.d, 0);
        } else if (step == 1) {
            name = "swiglu 37000";
            zs_ref_swiglu(n, x.h, r.h, want);
            st = zs__swiglu(n, x.d, r.d, y.d, 0);
        } else if (step == 2) {
            name = "residual 37000";
            zs_ref_residual(n, x.h, r.h, want);
            st = zs__residual(n, x.d, r.d, y.d, 0);
        } else {
            name = "attn_merge 37x3x64 O";
            cnt = nm;
            zs_ref_attn_merge(rows, heads, hd, oa.h, la, ob.h, lb, want, ll);
            rc = zs__cuda_ok(cudaMalloc((void **)&dla, sizeof la), "malloc", e) ||
                         zs__cuda_ok(cudaMalloc((void **)&dlb, sizeof lb), "malloc", e) ||
                         zs__cuda_ok(cudaMemcpy(dla, la, sizeof la, cudaMemcpyHostToDevice), "copy",
                                     e) ||
                         zs__cuda_ok(cudaMemcpy(dlb, lb, sizeof lb, cudaMemcpyHostToDevice), "copy",
                                     e)
                     ? ZS_ERUNTIME
                     : ZS_OK;
            if (rc)
                break;
            st = zs__attn_merge(rows, heads, hd, oa.d, dla, ob.d, dlb, y.d, dla, 0);
        }
        rc = zs__cuda_ok(st, name, e);
        if (!rc)
            rc = zs__cuda_ok(cudaDeviceSynchronize(), name, e);
        if (!rc)
            rc = fetch(y.d, cnt, got, e);
        if (!rc)
            report(log, name, got, want, cnt, fails);
        if (!rc && step == 3) {
            rc = zs__cuda_ok(cudaMemcpy(gl, dla, sizeof gl, cudaMemcpyDeviceToHost), "copy", e);
            if (!rc)
                report(log, "attn_merge 37x3x64 LSE", gl, ll, rows * heads, fails);
        }
    }
    cudaFree(dla), cudaFree(dlb);
    tens_free(&x), tens_free(&r), tens_free(&w), tens_free(&y), tens_free(&oa), tens_free(&ob);
    free(want), free(got);
    return rc;
}

int zs__cuda_check(FILE *log, zs_err *e)
{
    /* Documents are in token positions; every block is (doc, q0, q1, k0, k1). */
    static const attn_case cases[] = {
        {"causal doc 300", {4, 4, 128}, 1, {{0, 0, 300, 0, 300}}},
        {"causal doc 300 gqa", {4, 2, 64}, 1, {{0, 0, 300, 0, 300}}},
        {"zigzag 4 chunks of 70 (rank 0)",
         {2, 1, 128},
         4,
         {{0, 0, 70, 0, 70},
          {0, 210, 280, 210, 280},
          {0, 210, 280, 0, 70},
          {0, 210, 280, 70, 140}}},
        {"full block below diagonal", {2, 2, 128}, 1, {{0, 500, 650, 0, 200}}},
        {"rows and a whole tile without keys", {2, 2, 64}, 1, {{0, 0, 300, 200, 330}}},
        {"mixed blocks, one launch",
         {3, 1, 128},
         3,
         {{0, 0, 17, 0, 17}, {1, 40, 200, 0, 129}, {2, 5, 133, 5, 133}}},
    };
    int fails = 0, rc = ZS_OK;
    g_rng = 12345;
    /* Both forward variants (the backward runs after each). */
    int keep = zs__attn_pipelined();
    for (int pipe = 1; pipe >= 0 && !rc; pipe--) {
        zs__attn_set_pipelined(pipe);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !rc; i++)
            rc = check_attn(&cases[i], log, &fails, e);
    }
    zs__attn_set_pipelined(keep);
    if (!rc)
        rc = check_gemm(log, &fails, e);
    if (!rc)
        rc = check_elementwise(log, &fails, e);
    if (rc)
        return rc;
    if (fails)
        return zs_err_set(e, ZS_ERUNTIME, "zepsim hw check",
                          "see the FAIL lines above: a kernel disagrees with the CPU reference",
                          "%d kernel check(s) failed", fails);
    return ZS_OK;
}

/* cuBLASLt GEMM wrapper: bf16 operands and output, fp32 accumulation
 * (CUBLAS_COMPUTE_32F), the heuristic's first algorithm for each shape,
 * cached so that repeated shapes (every layer) cost no host-side search.
 *
 * Row-major C[m][n] = X[m][k] W[n][k]^T is column-major C^T = W X^T, i.e.
 * cuBLASLt's "TN" case (A = W transposed, B = X), the layout its kernels
 * are tuned for. */
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "zs_cuda_internal.h"

#define ZS_GEMM_CACHE 64
#define ZS_GEMM_WS    (64u << 20)

typedef struct plan {
    int64_t m, n, k;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} plan;

struct zs__gemm {
    cublasLtHandle_t lt;
    void *ws;
    plan cache[ZS_GEMM_CACHE];
    int n, next; /* entries used, next slot to replace (round robin) */
};

static int lt_fail(cublasStatus_t st, const char *what, zs_err *e)
{
    return zs_err_set(e, ZS_ERUNTIME, what, "check the shape and the cuBLASLt installation",
                      "cuBLASLt failed: %s (%d)", cublasLtGetStatusString(st), (int)st);
}

int zs__gemm_new(zs__gemm **out, zs_err *e)
{
    zs__gemm *g = calloc(1, sizeof *g);
    if (!g)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    cublasStatus_t st = cublasLtCreate(&g->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
        free(g);
        return lt_fail(st, "cublasLtCreate", e);
    }
    if (zs__cuda_ok(cudaMalloc(&g->ws, ZS_GEMM_WS), "cuBLASLt workspace", e)) {
        cublasLtDestroy(g->lt);
        free(g);
        return ZS_ERUNTIME;
    }
    *out = g;
    return ZS_OK;
}

static void plan_free(plan *p)
{
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->c)
        cublasLtMatrixLayoutDestroy(p->c);
    memset(p, 0, sizeof *p);
}

void zs__gemm_free(zs__gemm *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n; i++)
        plan_free(&g->cache[i]);
    cudaFree(g->ws);
    cublasLtDestroy(g->lt);
    free(g);
}

static int plan_make(zs__gemm *g, plan *p, int64_t m, int64_t n, int64_t k, zs_err *e)
{
    memset(p, 0, sizeof *p);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    size_t ws = ZS_GEMM_WS;
    cublasStatus_t st = cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    /* A: W stored [n][k] row-major = k x n column-major, transposed. */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, k);
    /* B: X stored [m][k] row-major = k x m column-major. */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k);
    /* C: [m][n] row-major = n x m column-major. */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, n);
    cublasLtMatmulPreference_t pref = NULL;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(g->lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &res,
                                            &found);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (st == CUBLAS_STATUS_SUCCESS && found < 1)
        st = CUBLAS_STATUS_NOT_SUPPORTED;
    if (st != CUBLAS_STATUS_SUCCESS) {
        plan_free(p);
        char where[96];
        snprintf(where, sizeof where, "GEMM m=%lld n=%lld k=%lld", (long long)m, (long long)n,
                 (long long)k);
        return lt_fail(st, where, e);
    }
    p->algo = res.algo;
    p->m = m, p->n = n, p->k = k;
    return ZS_OK;
}

int zs__gemm_run(zs__gemm *g, int64_t m, int64_t n, int64_t k, const void *x, const void *w,
                 void *c, cudaStream_t st, zs_err *e)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return ZS_OK;
    plan *p = NULL;
    for (int i = 0; i < g->n && !p; i++)
        if (g->cache[i].m == m && g->cache[i].n == n && g->cache[i].k == k)
            p = &g->cache[i];
    if (!p) {
        int slot = g->n < ZS_GEMM_CACHE ? g->n++ : g->next;
        g->next = (slot + 1) % ZS_GEMM_CACHE;
        plan_free(&g->cache[slot]);
        int rc = plan_make(g, &g->cache[slot], m, n, k, e);
        if (rc) {
            g->cache[slot].m = -1;
            return rc;
        }
        p = &g->cache[slot];
    }
    float alpha = 1.f, beta = 0.f;
    cublasStatus_t s = cublasLtMatmul(g->lt, p->desc, &alpha, w, p->a, x, p->b, &beta, c, p->c, c,
                                      p->c, &p->algo, g->ws, ZS_GEMM_WS, st);
    return s == CUBLAS_STATUS_SUCCESS ? ZS_OK : lt_fail(s, "cublasLtMatmul", e);
}

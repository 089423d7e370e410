/* Calibration microbenchmarks on the GPU(s) of this machine: attention
 * forward and backward over a grid of query/key lengths (causal diagonal
 * blocks and full blocks), cuBLASLt GEMMs at each model's linear-layer
 * shapes over token counts, elementwise ops, and NCCL send/recv and
 * collectives over sizes when two or more GPUs are visible. Every point is
 * the median of `reps` CUDA-event timings after one warm-up run. The
 * measurement file's schema is described in docs/hw-backend.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "zs_cuda_internal.h"
#include "zs_hw_prog.h"
#include "zs_sort.h"

typedef enum { P_ATTN_FWD, P_ATTN_BWD, P_GEMM, P_RMSNORM, P_SWIGLU, P_RESIDUAL } pkind;

typedef struct bench {
    const zs_hw_bench_cfg *cfg;
    zs_err *e;
    cudaStream_t st;
    cudaEvent_t a, b;
    zs__gemm *gemm;
    FILE *pts;  /* measurement points, one JSON object per line */
    FILE *grid; /* full-block attention grid (not in the calibration schema) */
    /* buffers sized for the largest point of the current model */
    void *q, *k, *v, *o, *dout, *dq, *dk, *dv, *x, *w, *c, *y;
    float *lse, *dd, *dq32, *dk32, *dv32;
    zs_hw_block *dblk;
    int32_t *dtiles, *htiles;
    int64_t tcap; /* tiles the tile buffers hold */
} bench;

typedef struct point {
    pkind kind;
    zs_attn_dims d;
    int ntiles;
    int64_t q_rows, k_rows;
    int64_t m, n, k; /* GEMM; elementwise: m rows x n cols */
} point;

static cudaError_t launch(bench *B, const point *p)
{
    float scale = p->d.head_dim > 0 ? 1.0f / sqrtf((float)p->d.head_dim) : 1.f;
    switch (p->kind) {
    case P_ATTN_FWD:
        return zs__attn_fwd(B->dblk, B->dtiles, p->ntiles, &p->d, scale, B->q, B->k, B->v, B->o,
                            B->lse, B->st);
    case P_ATTN_BWD: {
        zs__attn_bwd_bufs bb = {B->dd, B->dq32, B->dk32,   B->dv32,  B->dq,
                                B->dk, B->dv,   p->q_rows, p->k_rows};
        return zs__attn_bwd(B->dblk, B->dtiles, p->ntiles, &p->d, scale, B->q, B->k, B->v, B->o,
                            B->lse, B->dout, &bb, B->st);
    }
    case P_GEMM:
        return zs__gemm_run(B->gemm, p->m, p->n, p->k, B->x, B->w, B->c, B->st, B->e)
                   ? cudaErrorUnknown
                   : cudaSuccess;
    case P_RMSNORM:
        return zs__rmsnorm(p->m, (int)p->n, B->x, B->w, 1e-5f, B->y, B->st);
    case P_SWIGLU:
        return zs__swiglu(p->m * p->n, B->x, B->c, B->y, B->st);
    default:
        return zs__residual(p->m * p->n, B->x, B->c, B->y, B->st);
    }
}

/* Median seconds of reps timed runs after one warm-up. */
static int time_point(bench *B, const point *p, double *sec)
{
    int reps = B->cfg->reps > 0 ? B->cfg->reps : 1;
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!t)
        return zs_err_set(B->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int rc = zs__cuda_ok(launch(B, p), "benchmark warm-up", B->e);
    for (int r = 0; r < reps && !rc; r++) {
        float ms = 0;
        rc = zs__cuda_ok(cudaEventRecord(B->a, B->st), "event", B->e) ||
                     zs__cuda_ok(launch(B, p), "benchmark", B->e) ||
                     zs__cuda_ok(cudaEventRecord(B->b, B->st), "event", B->e) ||
                     zs__cuda_ok(cudaEventSynchronize(B->b), "benchmark", B->e) ||
                     zs__cuda_ok(cudaEventElapsedTime(&ms, B->a, B->b), "event", B->e)
                 ? ZS_ERUNTIME
                 : ZS_OK;
        t[r] = ms * 1e-3;
    }
    if (!rc) {
        zs_sort_doubles(t, (size_t)reps);
        *sec = t[reps / 2];
    }
    free(t);
    return rc;
}

static void free_bufs(bench *B)
{
    void *all[] = {B->q, B->k, B->v,   B->o,  B->dout, B->dq,   B->dk,   B->dv,   B->x,     B->w,
                   B->c, B->y, B->lse, B->dd, B->dq32, B->dk32, B->dv32, B->dblk, B->dtiles};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        cudaFree(all[i]);
    B->q = B->k = B->v = B->o = B->dout = B->dq = B->dk = B->dv = NULL;
    B->x = B->w = B->c = B->y = NULL;
    B->lse = B->dd = B->dq32 = B->dk32 = B->dv32 = NULL;
    B->dblk = NULL;
    B->dtiles = NULL;
}

static int alloc(bench *B, void **p, double bytes)
{
    size_t n = (size_t)(bytes > 256 ? bytes : 256);
    return zs__cuda_ok(cudaMalloc(p, n), "benchmark buffer", B->e) ||
                   zs__cuda_ok(zs__fill(*p, (int64_t)(n / 2), (uint64_t)n, 0.5f, B->st), "fill",
                               B->e)
               ? ZS_ERUNTIME
               : ZS_OK;
}

/* Attention over one block; returns seconds of forward and backward. */
static int attn_point(bench *B, const zs_model *m, zs_attn_block blk, double *fwd, double *bwd)
{
    zs_hw_block hb;
    int64_t qr, kr;
    zs_hw_blocks_pack(&blk, 1, &hb, &qr, &kr);
    int32_t *tiles = B->htiles;
    point p;
    memset(&p, 0, sizeof p);
    p.d = (zs_attn_dims){m->heads, m->kv_heads, m->head_dim};
    p.q_rows = qr, p.k_rows = kr;
    int rc = ZS_OK;
    for (int dir = 0; dir < 2 && !rc; dir++) {
        int64_t n = zs_hw_attn_tiles(&hb, 1, dir ? ZS_ATTN_BWD_ROWS : ZS_ATTN_FWD_ROWS, dir, tiles,
                                     B->tcap);
        p.kind = dir ? P_ATTN_BWD : P_ATTN_FWD;
        p.ntiles = (int)n;
        rc = zs__cuda_ok(cudaMemcpy(B->dblk, &hb, sizeof hb, cudaMemcpyHostToDevice), "copy",
                         B->e) ||
                     zs__cuda_ok(cudaMemcpy(B->dtiles, tiles, sizeof(int32_t) * 2 * (size_t)n,
                                            cudaMemcpyHostToDevice),
                                 "copy", B->e)
                 ? ZS_ERUNTIME
                 : time_point(B, &p, dir ? bwd : fwd);
    }
    return rc;
}

static void log_line(bench *B, const char *fmt, double a, double b, double c)
{
    if (B->cfg->log) {
        fprintf(B->cfg->log, fmt, a, b, c);
        fflush(B->cfg->log);
    }
}

/* Attention buffers for `maxt` tokens of the model's heads, and the host
 * tile list. */
static int alloc_attn_bufs(bench *B, int maxt, int H, int KH, int D)
{
    int rc;
    double qn = (double)maxt * H * D, kn = (double)maxt * KH * D;
    B->tcap = maxt / ZS_ATTN_BWD_ROWS + 2;
    free(B->htiles);
    B->htiles = malloc(sizeof(int32_t) * 2 * (size_t)B->tcap);
    rc = !B->htiles ? zs_err_set(B->e, ZS_ENOMEM, NULL, NULL, "out of memory") : ZS_OK;
    rc = rc ? rc
         : alloc(B, &B->q, 2 * qn) || alloc(B, &B->k, 2 * kn) || alloc(B, &B->v, 2 * kn) ||
                 alloc(B, &B->o, 2 * qn) || alloc(B, &B->dout, 2 * qn) ||
                 alloc(B, &B->dq, 2 * qn) || alloc(B, &B->dk, 2 * kn) || alloc(B, &B->dv, 2 * kn) ||
                 alloc(B, (void **)&B->lse, 4.0 * maxt * H) ||
                 alloc(B, (void **)&B->dd, 4.0 * maxt * H) || alloc(B, (void **)&B->dq32, 4 * qn) ||
                 alloc(B, (void **)&B->dk32, 4 * kn) || alloc(B, (void **)&B->dv32, 4 * kn) ||
                 alloc(B, (void **)&B->dblk, sizeof(zs_hw_block)) ||
                 alloc(B, (void **)&B->dtiles, 8.0 * B->tcap)
             ? ZS_ERUNTIME
             : ZS_OK;
    return rc;
}

/* Causal attention over one document of 512, 1024, ... maxt tokens: the
 * calibration points, and the forward TFLOP/s at the longest length. */
static int bench_attn_causal(bench *B, const zs_model *m, int maxt, double *attn_at_max,
                             int *attn_len)
{
    int rc = ZS_OK;
    int H = m->heads, KH = m->kv_heads, D = m->head_dim;
    /* The forward fills LSE and O that the backward reads: run the
     * causal forward once first so no LSE is garbage. */
    for (int len = 512; !rc && len <= maxt; len *= 2) {
        double f = 0, b = 0;
        zs_attn_block blk = {0, 0, len, 0, len};
        rc = attn_point(B, m, blk, &f, &b);
        if (rc)
            break;
        double flops = 4.0 * H * D * ((double)len * (len + 1) / 2);
        fprintf(B->pts,
                "{\"op\": \"attn_fwd\", \"seq_len\": %d, \"heads\": %d, \"kv_heads\": %d, "
                "\"head_dim\": %d, \"seconds\": %.9g, \"source\": \"zepsim hw bench %s\"}\n"
                "{\"op\": \"attn_bwd\", \"seq_len\": %d, \"heads\": %d, \"kv_heads\": %d, "
                "\"head_dim\": %d, \"seconds\": %.9g, \"source\": \"zepsim hw bench %s\"}\n",
                len, H, KH, D, f, m->name, len, H, KH, D, b, m->name);
        log_line(B, "attn causal %6.0f: fwd %7.1f TFLOP/s, bwd %7.1f TFLOP/s\n", len,
                 flops / f / 1e12, 2.5 * flops / b / 1e12);
        *attn_at_max = flops / f / 1e12;
        *attn_len = len;
    }
    return rc;
}

/* Full blocks (every query sees every key) over a grid of query and key
 * lengths, to the grid file (the diagonal only with `quick`). */
static int bench_attn_grid(bench *B, const zs_model *m, int maxt)
{
    int rc = ZS_OK;
    int H = m->heads, KH = m->kv_heads, D = m->head_dim;
    static const int grid[] = {128, 512, 2048, 8192};
    for (int i = 0; i < 4 && !rc; i++)
        for (int j = 0; j < 4 && !rc; j++) {
            int q = grid[i], kv = grid[j];
            if (q > maxt || kv > maxt || (B->cfg->quick && i != j))
                continue;
            double f = 0, b = 0;
            zs_attn_block blk = {0, kv, kv + q, 0, kv}; /* every query sees every key */
            if ((rc = attn_point(B, m, blk, &f, &b)))
                break;
            double flops = 4.0 * H * D * (double)q * kv;
            fprintf(B->grid,
                    "{\"model\": \"%s\", \"q\": %d, \"kv\": %d, \"heads\": %d, "
                    "\"kv_heads\": %d, \"head_dim\": %d, \"fwd_seconds\": %.9g, "
                    "\"bwd_seconds\": %.9g, \"fwd_tflops\": %.2f, \"bwd_tflops\": %.2f}\n",
                    m->name, q, kv, H, KH, D, f, b, flops / f / 1e12, 2.5 * flops / b / 1e12);
        }
    return rc;
}

/* GEMMs at the linear layers' shapes and the elementwise ops, at 1024,
 * 2048, ... maxt tokens; *best_gemm is the best GEMM TFLOP/s. */
static int bench_linear(bench *B, const zs_model *m, int maxt, double *best_gemm)
{
    int H = m->heads, KH = m->kv_heads, D = m->head_dim;
    struct {
        const char *name;
        int64_t n, k;
    } sh[4] = {{"qkv", (int64_t)(H + 2 * KH) * D, m->hidden},
               {"o", m->hidden, (int64_t)H * D},
               {"mlp_up", 2 * (int64_t)m->ffn, m->hidden},
               {"mlp_down", m->hidden, m->ffn}};
    double maxnk = 0, maxn = 0, maxk = 0;
    for (int i = 0; i < 4; i++) {
        maxnk = fmax(maxnk, (double)sh[i].n * sh[i].k);
        maxn = fmax(maxn, (double)sh[i].n);
        maxk = fmax(maxk, (double)sh[i].k);
    }
    int rc = alloc(B, &B->x, 2.0 * maxt * fmax(maxk, maxn)) || alloc(B, &B->w, 2 * maxnk) ||
                     alloc(B, &B->c, 2.0 * maxt * fmax(maxk, maxn)) ||
                     alloc(B, &B->y, 2.0 * maxt * fmax(maxk, maxn))
                 ? ZS_ERUNTIME
                 : ZS_OK;
    for (int t = 1024; !rc && t <= maxt; t *= 2) {
        for (int i = 0; i < 4 && !rc && m->ffn > 0; i++) {
            point p = {P_GEMM, {0, 0, 0}, 0, 0, 0, t, sh[i].n, sh[i].k};
            double s = 0;
            if ((rc = time_point(B, &p, &s)))
                break;
            double tf = 2.0 * t * sh[i].n * sh[i].k / s / 1e12;
            *best_gemm = fmax(*best_gemm, tf);
            fprintf(B->pts,
                    "{\"op\": \"gemm\", \"m\": %d, \"n\": %lld, \"k\": %lld, \"seconds\": "
                    "%.9g, \"shape\": \"%s %s\", \"source\": \"zepsim hw bench\"}\n",
                    t, (long long)sh[i].n, (long long)sh[i].k, s, m->name, sh[i].name);
        }
        /* Elementwise at this token count: bytes moved through HBM. */
        struct {
            pkind k;
            const char *name;
            int64_t cols;
            double bytes_per;
        } el[3] = {{P_RMSNORM, "rmsnorm", m->hidden, 4},
                   {P_SWIGLU, "swiglu", m->ffn, 6},
                   {P_RESIDUAL, "residual", m->hidden, 6}};
        for (int i = 0; i < 3 && !rc; i++) {
            if (el[i].cols <= 0 || (el[i].k == P_RMSNORM && el[i].cols > maxnk))
                continue;
            point p = {el[i].k, {0, 0, 0}, 0, 0, 0, t, el[i].cols, 0};
            double s = 0;
            if ((rc = time_point(B, &p, &s)))
                break;
            double bytes = el[i].bytes_per * t * el[i].cols;
            fprintf(B->pts,
                    "{\"op\": \"elementwise\", \"bytes\": %.0f, \"seconds\": %.9g, \"shape\": "
                    "\"%s %s %dx%lld\", \"source\": \"zepsim hw bench\"}\n",
                    bytes, s, el[i].name, m->name, t, (long long)el[i].cols);
        }
    }
    return rc;
}

static int bench_model(bench *B, const char *name, FILE *summary)
{
    zs_model m;
    int rc = zs_model_load(name, &m, B->e);
    if (rc)
        return rc;
    int maxt = B->cfg->max_tokens > 0 ? B->cfg->max_tokens : 16384;
    int H = m.heads, KH = m.kv_heads, D = m.head_dim;
    double best_gemm = 0, attn_at_max = 0;
    int attn_len = 0;
    /* ---- attention ---- */
    if (zs__attn_supported(D) && KH > 0 && H % KH == 0) {
        rc = alloc_attn_bufs(B, maxt, H, KH, D);
        if (!rc)
            rc = bench_attn_causal(B, &m, maxt, &attn_at_max, &attn_len);
        if (!rc)
            rc = bench_attn_grid(B, &m, maxt);
        free_bufs(B);
    } else if (B->cfg->log) {
        fprintf(B->cfg->log, "%s: head_dim %d not supported by the attention kernel: skipped\n",
                m.name, D);
    }
    /* ---- GEMMs at the linear layers' shapes, elementwise ops ---- */
    if (!rc)
        rc = bench_linear(B, &m, maxt, &best_gemm);
    free_bufs(B);
    if (!rc && summary) {
        fprintf(summary,
                "%s: attention fwd causal %d tokens %.1f TFLOP/s; cuBLASLt best at model shapes "
                "%.1f TFLOP/s; ratio %.2f (target >= 0.50 on H200: %s)\n",
                m.name, attn_len, attn_at_max, best_gemm,
                best_gemm > 0 ? attn_at_max / best_gemm : 0.0,
                best_gemm > 0 && attn_at_max / best_gemm >= 0.5 ? "met" : "not met");
    }
    return rc;
}

/* NCCL over every visible GPU, driven from this thread in group calls:
 * send/recv between GPUs 0 and 1, and the collectives over all of them.
 * Time: per GPU from an event before to an event after the group, the
 * slowest GPU counted, median over reps. */
/* Names of the calibration schema (docs/validation.md); GPUs 0 and 1 of
 * one node are assumed to talk over NVLink. */
static const char *coll_names[] = {"p2p_nvlink", "all-reduce", "all-gather", "reduce-scatter",
                                   "all-to-all"};

static ncclResult_t nccl_issue(int kind, int ndev, ncclComm_t *comms, cudaStream_t *st, void **sb,
                               void **rb, size_t bytes)
{
    size_t cnt = bytes / 2; /* bf16 elements per rank buffer */
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; i < ndev && r == ncclSuccess; i++) {
        switch (kind) {
        case 0:
            if (i == 0)
                r = ncclSend(sb[0], bytes, ncclChar, 1, comms[0], st[0]);
            else if (i == 1)
                r = ncclRecv(rb[1], bytes, ncclChar, 0, comms[1], st[1]);
            break;
        case 1:
            r = ncclAllReduce(sb[i], rb[i], cnt, ncclBfloat16, ncclSum, comms[i], st[i]);
            break;
        case 2:
            r = ncclAllGather(sb[i], rb[i], cnt / (size_t)ndev, ncclBfloat16, comms[i], st[i]);
            break;
        case 3:
            r = ncclReduceScatter(sb[i], rb[i], cnt / (size_t)ndev, ncclBfloat16, ncclSum, comms[i],
                                  st[i]);
            break;
        default: {
            size_t part = cnt / (size_t)ndev;
            for (int j = 0; j < ndev && r == ncclSuccess; j++) {
                r = ncclSend((char *)sb[i] + 2 * part * (size_t)j, part, ncclBfloat16, j, comms[i],
                             st[i]);
                if (r == ncclSuccess)
                    r = ncclRecv((char *)rb[i] + 2 * part * (size_t)j, part, ncclBfloat16, j,
                                 comms[i], st[i]);
            }
        }
        }
    }
    ncclResult_t r2 = ncclGroupEnd();
    return r != ncclSuccess ? r : r2;
}

static int bench_nccl(bench *B, int ndev)
{
    enum { MAXD = 16 };
    ncclComm_t comms[MAXD];
    cudaStream_t st[MAXD];
    cudaEvent_t ea[MAXD], eb[MAXD];
    void *sb[MAXD], *rb[MAXD];
    ndev = ndev > MAXD ? MAXD : ndev;
    size_t maxb = B->cfg->quick ? ((size_t)64 << 20) : ((size_t)256 << 20);
    memset(sb, 0, sizeof sb);
    memset(rb, 0, sizeof rb);
    memset(st, 0, sizeof st);
    memset(ea, 0, sizeof ea);
    memset(eb, 0, sizeof eb);
    int devs[MAXD];
    for (int i = 0; i < ndev; i++)
        devs[i] = i;
    ncclResult_t nr = ncclCommInitAll(comms, ndev, devs);
    if (nr != ncclSuccess)
        return zs_err_set(B->e, ZS_ERUNTIME, "ncclCommInitAll", "set NCCL_DEBUG=WARN for details",
                          "NCCL error: %s", ncclGetErrorString(nr));
    int rc = ZS_OK;
    for (int i = 0; i < ndev && !rc; i++) {
        rc = zs__cuda_ok(cudaSetDevice(i), "cudaSetDevice", B->e) ||
                     zs__cuda_ok(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking), "stream",
                                 B->e) ||
                     zs__cuda_ok(cudaEventCreate(&ea[i]), "event", B->e) ||
                     zs__cuda_ok(cudaEventCreate(&eb[i]), "event", B->e) ||
                     zs__cuda_ok(cudaMalloc(&sb[i], maxb), "NCCL buffer", B->e) ||
                     zs__cuda_ok(cudaMalloc(&rb[i], maxb), "NCCL buffer", B->e)
                 ? ZS_ERUNTIME
                 : ZS_OK;
    }
    int reps = B->cfg->reps > 0 ? B->cfg->reps : 1;
    double *t = calloc((size_t)reps, sizeof(double));
    if (!rc && !t)
        rc = zs_err_set(B->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int kind = 0; kind < 5 && !rc; kind++) {
        for (size_t bytes = 4096; bytes <= maxb && !rc; bytes *= B->cfg->quick ? 16 : 4) {
            for (int r = -1; r < reps && !rc; r++) {
                for (int i = 0; i < ndev && !rc; i++)
                    rc = zs__cuda_ok(cudaSetDevice(i), "cudaSetDevice", B->e) ||
                                 zs__cuda_ok(cudaEventRecord(ea[i], st[i]), "event", B->e)
                             ? ZS_ERUNTIME
                             : ZS_OK;
                if (!rc && (nr = nccl_issue(kind, ndev, comms, st, sb, rb, bytes)) != ncclSuccess)
                    rc = zs_err_set(B->e, ZS_ERUNTIME, coll_names[kind], NULL, "NCCL error: %s",
                                    ncclGetErrorString(nr));
                double worst = 0;
                for (int i = 0; i < ndev && !rc; i++) {
                    float ms = 0;
                    rc = zs__cuda_ok(cudaSetDevice(i), "cudaSetDevice", B->e) ||
                                 zs__cuda_ok(cudaEventRecord(eb[i], st[i]), "event", B->e) ||
                                 zs__cuda_ok(cudaEventSynchronize(eb[i]), coll_names[kind], B->e) ||
                                 zs__cuda_ok(cudaEventElapsedTime(&ms, ea[i], eb[i]), "event", B->e)
                             ? ZS_ERUNTIME
                             : ZS_OK;
                    worst = fmax(worst, ms * 1e-3);
                }
                if (r >= 0)
                    t[r] = worst;
            }
            if (rc)
                break;
            zs_sort_doubles(t, (size_t)reps);
            double s = t[reps / 2];
            int ranks = kind == 0 ? 2 : ndev;
            fprintf(B->pts,
                    "{\"op\": \"%s\", \"gpus\": %d, \"bytes\": %zu, \"seconds\": %.9g, "
                    "\"source\": \"zepsim hw bench (NCCL)\"}\n",
                    coll_names[kind], ranks, bytes, s);
        }
    }
    free(t);
    for (int i = 0; i < ndev; i++) {
        cudaSetDevice(i);
        cudaFree(sb[i]);
        cudaFree(rb[i]);
        ncclCommDestroy(comms[i]);
        if (ea[i])
            cudaEventDestroy(ea[i]);
        if (eb[i])
            cudaEventDestroy(eb[i]);
        if (st[i])
            cudaStreamDestroy(st[i]);
    }
    cudaSetDevice(0);
    return rc;
}

int zs__cuda_bench(const zs_hw_bench_cfg *cfg, FILE *out, zs_err *e)
{
    int ndev = 0;
    char desc[2048];
    int rc = zs__cuda_devices(&ndev, desc, sizeof desc, e);
    if (rc)
        return rc;
    bench B;
    memset(&B, 0, sizeof B);
    B.cfg = cfg;
    B.e = e;
    char *pts = NULL, *sum = NULL, *grid = NULL;
    size_t npts = 0, nsum = 0, ngrid = 0;
    B.pts = open_memstream(&pts, &npts);
    B.grid = open_memstream(&grid, &ngrid);
    FILE *summary = open_memstream(&sum, &nsum);
    if (!B.pts || !summary || !B.grid) {
        if (B.pts)
            fclose(B.pts);
        if (B.grid)
            fclose(B.grid);
        if (summary)
            fclose(summary);
        free(pts), free(sum), free(grid);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    rc =
        zs__cuda_ok(cudaSetDevice(0), "cudaSetDevice", e) ||
                zs__cuda_ok(cudaStreamCreateWithFlags(&B.st, cudaStreamNonBlocking), "stream", e) ||
                zs__cuda_ok(cudaEventCreate(&B.a), "event", e) ||
                zs__cuda_ok(cudaEventCreate(&B.b), "event", e)
            ? ZS_ERUNTIME
            : zs__gemm_new(&B.gemm, e);
    for (int i = 0; i < 8 && cfg->models[i] && !rc; i++)
        rc = bench_model(&B, cfg->models[i], summary);
    if (!rc && ndev >= 2)
        rc = bench_nccl(&B, ndev);
    fclose(B.pts);
    fclose(B.grid);
    fclose(summary);
    if (!rc) {
        struct cudaDeviceProp p;
        cudaGetDeviceProperties(&p, 0);
        int drv = 0, rt = 0, nv = 0;
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
        ncclGetVersion(&nv);
        fprintf(out,
                "{\n  \"format\": \"zepsim-measurements\",\n  \"version\": 1,\n  \"device\": "
                "\"%s\",\n",
                p.name);
        fprintf(out,
                "  \"zepsim_hw\": {\"sm\": %d%d, \"gpus\": %d, \"driver_cuda\": \"%d.%d\", "
                "\"runtime_cuda\": \"%d.%d\", \"nccl\": %d, \"reps\": %d,\n",
                p.major, p.minor, ndev, drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10,
                nv, cfg->reps);
        fprintf(out, "    \"flops_convention\": \"attn fwd 4*heads*head_dim*pairs (causal pairs "
                     "s*(s+1)/2), bwd 2.5x fwd; gemm 2*m*n*k\",\n");
        fprintf(out,
                "    \"notes\": [\"medians of CUDA-event timings after one warm-up\", \"%s\", "
                "\"cuDNN fused attention not timed (follow-up, docs/hw-backend.md)\", "
                "\"attention forward variant: %s\"]},\n",
                ndev >= 2 ? "NCCL: all visible GPUs of this node, driven from one thread"
                          : "NCCL points need two or more GPUs: none measured",
                zs__attn_pipelined() ? "cp.async double-buffered" : "plain loads");
        fprintf(out, "  \"summary\": [");
        /* summary lines as JSON strings */
        int first = 1;
        for (char *line = sum, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            fprintf(out, "%s\n    \"%s\"", first ? "" : ",", line);
            first = 0;
            if (cfg->log)
                fprintf(cfg->log, "%s\n", line);
        }
        fprintf(out, "\n  ],\n  \"attn_grid\": [");
        first = 1;
        for (char *line = grid, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            fprintf(out, "%s\n    %s", first ? "" : ",", line);
            first = 0;
        }
        fprintf(out, "\n  ],\n  \"points\": [");
        first = 1;
        for (char *line = pts, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            fprintf(out, "%s\n    %s", first ? "" : ",", line);
            first = 0;
        }
        fprintf(out, "\n  ]\n}\n");
        if (ferror(out))
            rc = zs_err_set(e, ZS_EIO, "measurement file", "check the disk", "write failed");
    }
    free(pts), free(sum), free(grid);
    free(B.htiles);
    free_bufs(&B);
    zs__gemm_free(B.gemm);
    if (B.a)
        cudaEventDestroy(B.a);
    if (B.b)
        cudaEventDestroy(B.b);
    if (B.st)
        cudaStreamDestroy(B.st);
    return rc;
}

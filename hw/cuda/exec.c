/* The hardware executor: runs a schedule on GPUs with CUDA and NCCL.
 *
 * One thread per GPU in this process (single node), or one process per GPU
 * started by the user's launcher (several nodes) with the NCCL unique id
 * passed through a rendezvous file. Per rank:
 *   1. setup: one CUDA stream per schedule stream, synthetic bf16 tensors
 *      of the largest shapes the schedule needs (allocated once, reused by
 *      every op), every attention op's block and tile lists uploaded once,
 *      two CUDA events per unrolled op;
 *   2. communicators: a world communicator, one per p2p lane (sender
 *      stream, see zs_hw_prog.c) and one per collective group, split from
 *      the world in schedule order so every rank makes the same calls;
 *   3. iterations: an all-reduce barrier, then the rank's ops issued in
 *      unrolled program order, each on its stream after waiting on the end
 *      events of its dependencies, between a start and an end event;
 *      send/receive runs go out as one NCCL group;
 *   4. the median measured iteration is kept: per-op times, the per-rank
 *      compute/exposed/idle split (zs_hw_account_rank), shared with every
 *      rank by an all-reduce.
 * Waiting for the GPU polls the streams with a deadline, so a failed peer
 * or a deadlocking schedule ends in an error (communicators aborted), not
 * a hang. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nccl.h>

#include "zs_cuda_internal.h"
#include "zs_hw_prog.h"
#include "zs_timeline.h"

#define ZS_HW_WAIT_S 300.0 /* longest wait for one iteration before giving up */

typedef struct shared {
    const zs_schedule *s;
    const zs_hw_run_cfg *cfg;
    zs_hw_prog *progs;
    zs_hw_needs nd;
    zs_model model;
    ncclUniqueId id;
    int threads; /* ranks driven by this process */
    pthread_barrier_t bar;
    _Atomic int failed; /* a thread failed: the others abort instead of waiting */
    zs_hw_times *times; /* per rank: the kept iteration */
    double *iter_time;  /* per measured iteration (copied by rank 0) */
    zs_rank_result *rows;
} shared;

typedef struct rank_ctx {
    shared *sh;
    int rank, dev;
    int rc;
    zs_err err;
    cudaStream_t st[ZS_MAX_STREAMS];
    cudaEvent_t ev0, *evs, *eve;
    int64_t nev;
    ncclComm_t world, lane[ZS_MAX_STREAMS], *gcomm;
    zs__gemm *gemm;
    /* synthetic tensors */
    void *q, *k, *v, *o, *dout, *dq, *dk, *dv;
    float *lse, *dd, *dq32, *dk32, *dv32;
    void *gx, *gw, *gc, *ex, *er, *ey, *psend, *precv, *csend, *crecv;
    double *red; /* device scratch for barriers and result sharing */
    /* host copies (d2h/h2d): one device buffer and one pinned host buffer */
    void *dcopy, *hcopy;
    /* attention ops: per stored op, offsets into the device lists */
    zs_hw_block *dblocks;
    int32_t *dtiles;
    int64_t *blk_off, *tile_off, *ntiles, *qrows, *krows;
    double *ts, *te; /* host times of all measured iterations: [iter][item] */
    double *iter;    /* iteration times (max over ranks) */
} rank_ctx;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int nccl_ok(ncclResult_t r, const char *what, zs_err *e)
{
    if (r == ncclSuccess || r == ncclInProgress)
        return ZS_OK;
    return zs_err_set(e, ZS_ERUNTIME, what,
                      "set NCCL_DEBUG=WARN for details; check the GPUs see each other",
                      "NCCL error: %s", ncclGetErrorString(r));
}

#define CU(call, what)                                                                             \
    do {                                                                                           \
        if (zs__cuda_ok((call), (what), &c->err))                                                  \
            return c->rc = ZS_ERUNTIME;                                                            \
    } while (0)
#define NC(call, what)                                                                             \
    do {                                                                                           \
        if (nccl_ok((call), (what), &c->err))                                                      \
            return c->rc = ZS_ERUNTIME;                                                            \
    } while (0)

static void free_ctx(rank_ctx *c)
{
    const zs_schedule *s = c->sh->s;
    if (c->gcomm)
        for (int g = 0; g < s->ngroups; g++)
            if (c->gcomm[g])
                ncclCommDestroy(c->gcomm[g]);
    for (int i = 0; i < ZS_MAX_STREAMS; i++)
        if (c->lane[i])
            ncclCommDestroy(c->lane[i]);
    if (c->world)
        ncclCommDestroy(c->world);
    for (int64_t i = 0; i < c->nev; i++) {
        cudaEventDestroy(c->evs[i]);
        cudaEventDestroy(c->eve[i]);
    }
    if (c->ev0)
        cudaEventDestroy(c->ev0);
    void *bufs[] = {c->q,     c->k,     c->v,   c->o,       c->dout,   c->dq,    c->dk,
                    c->dv,    c->lse,   c->dd,  c->dq32,    c->dk32,   c->dv32,  c->gx,
                    c->gw,    c->gc,    c->ex,  c->er,      c->ey,     c->psend, c->precv,
                    c->csend, c->crecv, c->red, c->dblocks, c->dtiles, c->dcopy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    if (c->hcopy)
        cudaFreeHost(c->hcopy);
    for (int i = 0; i < ZS_MAX_STREAMS; i++)
        if (c->st[i])
            cudaStreamDestroy(c->st[i]);
    zs__gemm_free(c->gemm);
    free(c->iter);
    free(c->evs), free(c->eve), free(c->gcomm), free(c->blk_off), free(c->tile_off);
    free(c->ntiles), free(c->qrows), free(c->krows), free(c->ts), free(c->te);
}

/* KV heads of an op with `heads` query heads: the model's GQA ratio,
 * rounded to a divisor of heads. */
static int kv_heads_of(const zs_model *m, int heads)
{
    int kvh = m->heads > 0 ? heads * m->kv_heads / m->heads : heads;
    kvh = kvh < 1 ? 1 : kvh;
    while (heads % kvh)
        kvh--;
    return kvh;
}

static int dalloc(rank_ctx *c, void **p, double bytes, const char *what)
{
    size_t b = (size_t)ceil(bytes > 16 ? bytes : 16);
    b = (b + 255) & ~(size_t)255;
    cudaError_t st = cudaMalloc(p, b);
    if (st != cudaSuccess) {
        char w[128];
        snprintf(w, sizeof w, "rank %d, %s (%.2f GiB)", c->rank, what, (double)b / 1073741824.0);
        zs__cuda_ok(st, w, &c->err);
        return c->rc = ZS_ERUNTIME;
    }
    return ZS_OK;
}

/* Elements of the synthetic tensors: attention heads, Q-shaped and
 * K-shaped tensors, elementwise operands. */
typedef struct tensor_sizes {
    int H;
    double qn, kn, en;
} tensor_sizes;

/* The synthetic tensors at the largest shapes the schedule needs. */
static int alloc_tensors(rank_ctx *c, const tensor_sizes *z)
{
    const zs_hw_needs *nd = &c->sh->nd;
    int H = z->H;
    double qn = z->qn, kn = z->kn, en = z->en;
    if (dalloc(c, &c->q, 2 * qn, "Q") || dalloc(c, &c->k, 2 * kn, "K") ||
        dalloc(c, &c->v, 2 * kn, "V") || dalloc(c, &c->o, 2 * qn, "O") ||
        dalloc(c, &c->dout, 2 * qn, "dO") || dalloc(c, &c->dq, 2 * qn, "dQ") ||
        dalloc(c, &c->dk, 2 * kn, "dK") || dalloc(c, &c->dv, 2 * kn, "dV") ||
        dalloc(c, (void **)&c->lse, 4.0 * nd->attn_q_rows * H, "LSE") ||
        dalloc(c, (void **)&c->dd, 4.0 * nd->attn_q_rows * H, "D") ||
        dalloc(c, (void **)&c->dq32, 4 * qn, "dQ fp32") ||
        dalloc(c, (void **)&c->dk32, 4 * kn, "dK fp32") ||
        dalloc(c, (void **)&c->dv32, 4 * kn, "dV fp32") ||
        dalloc(c, &c->gx, 2 * nd->gemm_a, "GEMM X") ||
        dalloc(c, &c->gw, 2 * nd->gemm_b, "GEMM W") ||
        dalloc(c, &c->gc, 2 * nd->gemm_c, "GEMM C") || dalloc(c, &c->ex, 2 * en, "elementwise") ||
        dalloc(c, &c->er, 2 * en, "elementwise") || dalloc(c, &c->ey, 2 * en, "elementwise") ||
        dalloc(c, &c->psend, nd->p2p_bytes, "send buffer") ||
        dalloc(c, &c->precv, nd->p2p_bytes, "receive buffer") ||
        dalloc(c, &c->csend, nd->coll_bytes, "collective buffer") ||
        dalloc(c, &c->crecv, nd->coll_bytes, "collective buffer"))
        return c->rc;
    return ZS_OK;
}

/* The buffers of the host copies (activation offloading), when the
 * schedule has any: one device buffer and one pinned host buffer of the
 * largest copy, reused by every d2h (device -> host) and h2d (host ->
 * device) op, as the other ops reuse the synthetic tensors. The host side
 * must be pinned (page-locked): the CUDA Runtime API's "API
 * synchronization behavior" section says a cudaMemcpyAsync between device
 * memory and pageable host memory may be synchronous with respect to the
 * host (the driver stages it through pinned memory), while the other
 * transfers are fully asynchronous. Only from pinned memory does the copy
 * run as the schedule prices it: a copy engine's DMA beside the kernels
 * (bytes / host_gbs, taking no SMs), with the host free to issue the
 * rank's next ops. */
static int alloc_host_copy(rank_ctx *c)
{
    double bytes = c->sh->nd.host_copy_bytes;
    if (!(bytes > 0))
        return ZS_OK;
    if (dalloc(c, &c->dcopy, bytes, "host copy (d2h/h2d) device buffer"))
        return c->rc;
    size_t b = (size_t)ceil(bytes);
    cudaError_t st = cudaHostAlloc(&c->hcopy, b, cudaHostAllocDefault);
    if (st != cudaSuccess) {
        c->hcopy = NULL;
        (void)cudaGetLastError(); /* not a sticky error: clear it, the error below says it */
        char w[128];
        snprintf(w, sizeof w, "rank %d (GPU %d), pinned host buffer of the host copies", c->rank,
                 c->dev);
        return c->rc = zs_err_set(
                   &c->err, ZS_ERUNTIME, w,
                   "free host memory or raise the locked-memory limit (ulimit -l; a container's "
                   "memlock), run fewer ranks per node, or plan without offloading (bytescale "
                   "offload=off)",
                   "cannot pin %.0f bytes (%.2f GiB) of host memory for the d2h/h2d copies: %s",
                   (double)b, (double)b / 1073741824.0, cudaGetErrorString(st));
    }
    return ZS_OK;
}

/* Synthetic values in the tensors, and the GEMM handle. */
static int fill_tensors(rank_ctx *c, const tensor_sizes *z)
{
    const zs_hw_needs *nd = &c->sh->nd;
    int H = z->H;
    double qn = z->qn, kn = z->kn, en = z->en;
    /* Synthetic values: attention inputs in [-1, 1) (softmax stays
     * well-conditioned), weights small as in trained models. */
    CU(zs__fill(c->q, (int64_t)qn, 1 + c->rank, 1.f, c->st[0]), "fill");
    CU(zs__fill(c->k, (int64_t)kn, 2 + c->rank, 1.f, c->st[0]), "fill");
    CU(zs__fill(c->v, (int64_t)kn, 3 + c->rank, 1.f, c->st[0]), "fill");
    CU(zs__fill(c->dout, (int64_t)qn, 4 + c->rank, 1.f, c->st[0]), "fill");
    /* O and LSE are read by a backward that may run before any forward. */
    CU(zs__fill(c->o, (int64_t)qn, 9 + c->rank, 1.f, c->st[0]), "fill");
    CU(cudaMemsetAsync(c->lse, 0, 4 * (size_t)nd->attn_q_rows * (size_t)H, c->st[0]), "memset");
    CU(zs__fill(c->gx, (int64_t)nd->gemm_a, 5 + c->rank, 1.f, c->st[0]), "fill");
    CU(zs__fill(c->gw, (int64_t)nd->gemm_b, 6 + c->rank, 0.02f, c->st[0]), "fill");
    CU(zs__fill(c->ex, (int64_t)en, 7, 1.f, c->st[0]), "fill");
    CU(zs__fill(c->er, (int64_t)en, 8, 1.f, c->st[0]), "fill");
    if (zs__gemm_new(&c->gemm, &c->err))
        return c->rc = ZS_ERUNTIME;
    return ZS_OK;
}

/* Attention block and tile lists of every stored op of this rank, packed
 * on the host (two passes: count, then fill) and uploaded once. */
static int upload_attn_lists(rank_ctx *c)
{
    const zs_schedule *s = c->sh->s;
    const zs_hw_needs *nd = &c->sh->nd;
    const zs_rank_prog *rp = &s->ranks[c->rank];
    int64_t nops = rp->nops > 0 ? rp->nops : 1, nb = 0, nt = 0;
    c->blk_off = calloc((size_t)nops, sizeof(int64_t));
    c->tile_off = calloc((size_t)nops, sizeof(int64_t));
    c->ntiles = calloc((size_t)nops, sizeof(int64_t));
    c->qrows = calloc((size_t)nops, sizeof(int64_t));
    c->krows = calloc((size_t)nops, sizeof(int64_t));
    if (!c->blk_off || !c->tile_off || !c->ntiles || !c->qrows || !c->krows)
        return c->rc = zs_err_set(&c->err, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_hw_block *hb = malloc(sizeof *hb * (size_t)(nd->attn_blocks > 0 ? nd->attn_blocks : 1));
    for (int pass = 0; pass < 2 && hb; pass++) {
        zs_hw_block *allb = NULL;
        int32_t *allt = NULL;
        if (pass == 1) {
            allb = malloc(sizeof *allb * (size_t)(nb > 0 ? nb : 1));
            allt = malloc(sizeof *allt * 2 * (size_t)(nt > 0 ? nt : 1));
            if (!allb || !allt) {
                free(allb), free(allt);
                break;
            }
        }
        nb = nt = 0;
        for (int64_t i = 0; i < rp->nops; i++) {
            const zs_op *op = &rp->ops[i];
            if (op->kind != ZS_OP_COMPUTE || op->u.compute.ck > ZS_CK_ATTN_BWD)
                continue;
            int bwd = op->u.compute.ck == ZS_CK_ATTN_BWD;
            int n = op->u.compute.nblocks;
            zs_hw_blocks_pack(s->blocks + op->u.compute.block0, n, hb, &c->qrows[i], &c->krows[i]);
            int rows = bwd ? ZS_ATTN_BWD_ROWS : ZS_ATTN_FWD_ROWS;
            int64_t t = zs_hw_attn_tiles(hb, n, rows, bwd, pass ? allt + 2 * nt : NULL,
                                         pass ? c->ntiles[i] : 0);
            c->blk_off[i] = nb;
            c->tile_off[i] = nt;
            c->ntiles[i] = t;
            if (pass)
                memcpy(allb + nb, hb, sizeof *hb * (size_t)n);
            nb += n;
            nt += t;
        }
        if (pass == 1) {
            int bad =
                dalloc(c, (void **)&c->dblocks, sizeof(zs_hw_block) * (double)nb, "blocks") ||
                dalloc(c, (void **)&c->dtiles, 8.0 * nt, "tiles") ||
                zs__cuda_ok(
                    cudaMemcpy(c->dblocks, allb, sizeof *allb * (size_t)nb, cudaMemcpyHostToDevice),
                    "copy blocks", &c->err) ||
                zs__cuda_ok(cudaMemcpy(c->dtiles, allt, 8 * (size_t)nt, cudaMemcpyHostToDevice),
                            "copy tiles", &c->err);
            free(allb), free(allt);
            if (bad) {
                free(hb);
                return c->rc = ZS_ERUNTIME;
            }
        }
    }
    if (!hb || !c->dtiles) {
        free(hb);
        return c->rc = zs_err_set(&c->err, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    free(hb);
    return ZS_OK;
}

/* Two CUDA events per unrolled op and the host buffers of the measured
 * times; ends the setup with a device synchronisation. */
static int create_events(rank_ctx *c)
{
    shared *sh = c->sh;
    const zs_hw_prog *p = &sh->progs[c->rank];
    c->nev = p->n;
    c->evs = calloc((size_t)(p->n + 1), sizeof(cudaEvent_t));
    c->eve = calloc((size_t)(p->n + 1), sizeof(cudaEvent_t));
    int iters = sh->cfg->iters;
    c->ts = malloc(sizeof(double) * (size_t)(p->n + 1) * (size_t)iters);
    c->te = malloc(sizeof(double) * (size_t)(p->n + 1) * (size_t)iters);
    c->iter = calloc((size_t)iters, sizeof(double));
    if (!c->evs || !c->eve || !c->ts || !c->te || !c->iter) {
        c->nev = 0;
        return c->rc = zs_err_set(&c->err, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int64_t i = 0; i < p->n; i++) {
        if (cudaEventCreate(&c->evs[i]) != cudaSuccess ||
            cudaEventCreate(&c->eve[i]) != cudaSuccess) {
            c->nev = i;
            return c->rc = zs__cuda_ok(cudaGetLastError(), "cudaEventCreate", &c->err);
        }
    }
    CU(cudaEventCreate(&c->ev0), "cudaEventCreate");
    CU(cudaDeviceSynchronize(), "setup");
    return ZS_OK;
}

/* Buffers, block lists, streams and events: everything that can fail
 * without involving the other ranks. */
static int setup_local(rank_ctx *c)
{
    shared *sh = c->sh;
    const zs_schedule *s = sh->s;
    const zs_hw_needs *nd = &sh->nd;
    for (int i = 1; i < s->nstreams; i++)
        CU(cudaStreamCreateWithFlags(&c->st[i], cudaStreamNonBlocking), "stream");
    int D = sh->model.head_dim, H = nd->attn_heads > 0 ? nd->attn_heads : 1;
    double qn = (double)nd->attn_q_rows * H * D, kn = (double)nd->attn_k_rows * H * D;
    double en = floor(nd->elem_bytes / 6);
    tensor_sizes z = {H, qn, kn, en};
    /* Every failing phase has set c->rc and c->err. */
    if (alloc_tensors(c, &z) || alloc_host_copy(c) || fill_tensors(c, &z) || upload_attn_lists(c))
        return c->rc;
    return create_events(c);
}

/* What every rank needs before NCCL exists: its device, the first stream
 * and the scratch buffer of the status all-reduce. */
static int setup_pre(rank_ctx *c)
{
    CU(cudaSetDevice(c->dev), "cudaSetDevice");
    CU(cudaStreamCreateWithFlags(&c->st[0], cudaStreamNonBlocking), "stream");
    return dalloc(c, (void **)&c->red, 8.0 * (6 * c->sh->s->nranks + 8), "scratch");
}

static int setup_comms(rank_ctx *c)
{
    shared *sh = c->sh;
    const zs_schedule *s = sh->s;
    for (int l = 0; l < ZS_MAX_STREAMS; l++)
        if (sh->nd.p2p_lane_mask & (1u << l))
            NC(ncclCommSplit(c->world, 0, c->rank, &c->lane[l], NULL), "ncclCommSplit (p2p lane)");
    c->gcomm = calloc((size_t)(s->ngroups > 0 ? s->ngroups : 1), sizeof(ncclComm_t));
    if (!c->gcomm)
        return c->rc = zs_err_set(&c->err, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int g = 0; g < s->ngroups; g++) {
        if (s->groups[g].n < 2)
            continue; /* a collective over one rank moves nothing */
        int member = 0;
        for (int j = 0; j < s->groups[g].n; j++)
            member |= s->groups[g].ranks[j] == c->rank;
        NC(ncclCommSplit(c->world, member ? 0 : NCCL_SPLIT_NOCOLOR, c->rank, &c->gcomm[g], NULL),
           "ncclCommSplit (group)");
    }
    return ZS_OK;
}

/* Waits for every stream with a deadline, watching NCCL's asynchronous
 * errors and the other threads' failures. */
static int wait_streams(rank_ctx *c, const char *what)
{
    double t0 = now_s();
    for (;;) {
        int busy = 0;
        for (int i = 0; i < c->sh->s->nstreams; i++) {
            cudaError_t st = cudaStreamQuery(c->st[i]);
            if (st == cudaErrorNotReady)
                busy = 1;
            else if (st != cudaSuccess)
                return c->rc = zs__cuda_ok(st, what, &c->err);
        }
        if (!busy)
            return ZS_OK;
        ncclResult_t ar = ncclSuccess;
        if (c->world && ncclCommGetAsyncError(c->world, &ar) == ncclSuccess && ar != ncclSuccess &&
            ar != ncclInProgress)
            return c->rc = nccl_ok(ar, what, &c->err);
        if (c->sh->failed)
            return c->rc = zs_err_set(&c->err, ZS_ERUNTIME, what, NULL,
                                      "stopped because another rank failed");
        if (now_s() - t0 > ZS_HW_WAIT_S)
            return c->rc = zs_err_set(&c->err, ZS_ERUNTIME, what,
                                      "check that every send has its receive and no peer died",
                                      "rank %d waited %.0f s for the GPU: communication never "
                                      "completed",
                                      c->rank, ZS_HW_WAIT_S);
        usleep(100);
    }
}

static ncclResult_t issue_coll(rank_ctx *c, const zs_op *op, cudaStream_t st)
{
    const zs_group *g = &c->sh->s->groups[op->u.coll.group];
    ncclComm_t comm = c->gcomm[op->u.coll.group];
    if (!comm)
        return ncclSuccess;
    size_t cnt = (size_t)(op->u.coll.bytes / 2);
    switch (op->u.coll.ck) {
    case ZS_COLL_ALLGATHER:
        return ncclAllGather(c->csend, c->crecv, cnt, ncclBfloat16, comm, st);
    case ZS_COLL_REDUCESCATTER:
        return ncclReduceScatter(c->csend, c->crecv, cnt, ncclBfloat16, ncclSum, comm, st);
    case ZS_COLL_ALLREDUCE:
        return ncclAllReduce(c->csend, c->crecv, cnt, ncclBfloat16, ncclSum, comm, st);
    default: {
        /* all-to-all: an equal slice to and from every member */
        size_t part = cnt / (size_t)g->n;
        ncclResult_t r = ncclGroupStart();
        for (int j = 0; j < g->n && r == ncclSuccess; j++) {
            r = ncclSend((char *)c->csend + 2 * part * (size_t)j, part, ncclBfloat16, j, comm, st);
            if (r == ncclSuccess)
                r = ncclRecv((char *)c->crecv + 2 * part * (size_t)j, part, ncclBfloat16, j, comm,
                             st);
        }
        ncclResult_t r2 = ncclGroupEnd();
        return r != ncclSuccess ? r : r2;
    }
    }
}

static int issue_compute(rank_ctx *c, int64_t opi, const zs_op *op, cudaStream_t st)
{
    const zs_model *m = &c->sh->model;
    cudaError_t rc = cudaSuccess;
    switch (op->u.compute.ck) {
    case ZS_CK_ATTN_FWD:
    case ZS_CK_ATTN_BWD: {
        zs_attn_dims d = {op->u.compute.heads, kv_heads_of(m, op->u.compute.heads), m->head_dim};
        float scale = 1.0f / sqrtf((float)m->head_dim);
        const zs_hw_block *b = c->dblocks + c->blk_off[opi];
        const int32_t *t = c->dtiles + 2 * c->tile_off[opi];
        if (op->u.compute.ck == ZS_CK_ATTN_FWD) {
            rc = zs__attn_fwd(b, t, (int)c->ntiles[opi], &d, scale, c->q, c->k, c->v, c->o, c->lse,
                              st);
        } else {
            zs__attn_bwd_bufs bb = {c->dd, c->dq32, c->dk32,       c->dv32,      c->dq,
                                    c->dk, c->dv,   c->qrows[opi], c->krows[opi]};
            rc = zs__attn_bwd(b, t, (int)c->ntiles[opi], &d, scale, c->q, c->k, c->v, c->o, c->lse,
                              c->dout, &bb, st);
        }
        break;
    }
    case ZS_CK_D2H:
    case ZS_CK_H2D: {
        /* Host copies on the op's own stream ("offload"), timed by its
         * events like any op; pinned host memory makes them asynchronous,
         * on a copy engine (alloc_host_copy). A copy of under a byte moves
         * nothing, and no buffer exists when every copy is that small. */
        int d2h = op->u.compute.ck == ZS_CK_D2H;
        if (op->u.compute.bytes >= 1)
            rc = cudaMemcpyAsync(d2h ? c->hcopy : c->dcopy, d2h ? c->dcopy : c->hcopy,
                                 (size_t)op->u.compute.bytes,
                                 d2h ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, st);
        break;
    }
    case ZS_CK_GEMM:
        if (zs__gemm_run(c->gemm, llround(op->u.compute.m), llround(op->u.compute.n),
                         llround(op->u.compute.k), c->gx, c->gw, c->gc, st, &c->err))
            return c->rc = ZS_ERUNTIME;
        break;
    default:
        /* Memory-bound op of `bytes`: a residual add reads 2 and writes 1
         * bf16 per element, 6 bytes. */
        rc = zs__residual((int64_t)(op->u.compute.bytes / 6), c->ex, c->er, c->ey, st);
    }
    if (rc != cudaSuccess) {
        char w[96];
        snprintf(w, sizeof w, "rank %d op #%lld (%s)", c->rank, (long long)opi,
                 zs_compute_kind_name(op->u.compute.ck));
        return c->rc = zs__cuda_ok(rc, w, &c->err);
    }
    return ZS_OK;
}

static int wait_deps(rank_ctx *c, const zs_hw_item *x, cudaStream_t st)
{
    const zs_hw_prog *p = &c->sh->progs[c->rank];
    for (int32_t d = 0; d < x->ndeps; d++)
        CU(cudaStreamWaitEvent(st, c->eve[p->deps[x->dep0 + d]], 0), "cudaStreamWaitEvent");
    return ZS_OK;
}

/* One iteration of the rank's program. */
static int issue_all(rank_ctx *c)
{
    const zs_schedule *s = c->sh->s;
    const zs_hw_prog *p = &c->sh->progs[c->rank];
    for (int64_t k = 0; k < p->n; k++) {
        const zs_hw_item *x = &p->items[k];
        const zs_op *op = zs_schedule_op(s, c->rank, x->op);
        cudaStream_t st = c->st[op->stream];
        if (x->group >= 0 && x->group != k)
            continue; /* issued with its group's first op */
        if (x->group < 0) {
            if (wait_deps(c, x, st))
                return c->rc;
            CU(cudaEventRecord(c->evs[k], st), "cudaEventRecord");
            if (op->kind == ZS_OP_COMPUTE && issue_compute(c, x->op, op, st))
                return c->rc;
            if (op->kind == ZS_OP_COLL)
                NC(issue_coll(c, op, st), "collective");
            CU(cudaEventRecord(c->eve[k], st), "cudaEventRecord");
            continue;
        }
        /* A send/receive run: members are the later items of this stream
         * until the stream's next other op. */
        int64_t last = k;
        for (int64_t j = k; j < p->n; j++) {
            const zs_op *oj = zs_schedule_op(s, c->rank, p->items[j].op);
            if (oj->stream != op->stream || oj->kind == ZS_OP_MARKER)
                continue;
            if (p->items[j].group != k)
                break;
            if (wait_deps(c, &p->items[j], st))
                return c->rc;
            last = j;
        }
        for (int64_t j = k; j <= last; j++)
            if (p->items[j].group == k)
                CU(cudaEventRecord(c->evs[j], st), "cudaEventRecord");
        NC(ncclGroupStart(), "ncclGroupStart");
        for (int64_t j = k; j <= last; j++) {
            const zs_hw_item *y = &p->items[j];
            if (y->group != k)
                continue;
            const zs_op *oj = zs_schedule_op(s, c->rank, y->op);
            size_t n = (size_t)oj->u.p2p.bytes;
            ncclComm_t comm = c->lane[y->comm];
            ncclResult_t r = oj->kind == ZS_OP_SEND
                                 ? ncclSend(c->psend, n, ncclChar, oj->u.p2p.peer, comm, st)
                                 : ncclRecv(c->precv, n, ncclChar, oj->u.p2p.peer, comm, st);
            if (r != ncclSuccess) {
                ncclGroupEnd();
                NC(r, "ncclSend/ncclRecv");
            }
        }
        NC(ncclGroupEnd(), "ncclGroupEnd");
        for (int64_t j = k; j <= last; j++)
            if (p->items[j].group == k)
                CU(cudaEventRecord(c->eve[j], st), "cudaEventRecord");
    }
    return ZS_OK;
}

/* All-reduce of n doubles on the world communicator (max or sum). */
static int allreduce(rank_ctx *c, double *v, int n, ncclRedOp_t op)
{
    CU(cudaMemcpyAsync(c->red, v, sizeof(double) * (size_t)n, cudaMemcpyHostToDevice, c->st[0]),
       "copy");
    NC(ncclAllReduce(c->red, c->red, (size_t)n, ncclFloat64, op, c->world, c->st[0]), "allreduce");
    CU(cudaMemcpyAsync(v, c->red, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost, c->st[0]),
       "copy");
    return wait_streams(c, "all-reduce");
}

static int run_iterations(rank_ctx *c)
{
    shared *sh = c->sh;
    const zs_schedule *s = sh->s;
    const zs_hw_prog *p = &sh->progs[c->rank];
    int total = sh->cfg->warmup + sh->cfg->iters;
    for (int it = 0; it < total; it++) {
        /* Barrier: every GPU leaves the all-reduce at about the same time. */
        NC(ncclAllReduce(c->red, c->red, 1, ncclFloat64, ncclSum, c->world, c->st[0]), "barrier");
        CU(cudaEventRecord(c->ev0, c->st[0]), "cudaEventRecord");
        for (int i = 1; i < s->nstreams; i++)
            CU(cudaStreamWaitEvent(c->st[i], c->ev0, 0), "cudaStreamWaitEvent");
        if (issue_all(c) || wait_streams(c, "iteration"))
            return c->rc;
        int m = it - sh->cfg->warmup;
        if (m < 0)
            continue;
        double end = 0;
        for (int64_t i = 0; i < p->n; i++) {
            float a = 0, b = 0;
            CU(cudaEventElapsedTime(&a, c->ev0, c->evs[i]), "cudaEventElapsedTime");
            CU(cudaEventElapsedTime(&b, c->ev0, c->eve[i]), "cudaEventElapsedTime");
            c->ts[(size_t)m * p->n + i] = a * 1e-3;
            c->te[(size_t)m * p->n + i] = b * 1e-3;
            end = b * 1e-3 > end ? b * 1e-3 : end;
        }
        if (allreduce(c, &end, 1, ncclMax))
            return c->rc;
        c->iter[m] = end;
    }
    /* The median iteration (ties: the earlier one); identical on every rank
     * since the iteration times were all-reduced. */
    int n = sh->cfg->iters, kept = 0;
    for (int i = 0; i < n; i++) {
        int below = 0, equal_before = 0;
        for (int j = 0; j < n; j++) {
            below += c->iter[j] < c->iter[i];
            equal_before += j < i && c->iter[j] == c->iter[i];
        }
        if (below + equal_before == (n - 1) / 2)
            kept = i;
    }
    if (c->rank == 0 || sh->threads == 1)
        memcpy(sh->iter_time, c->iter, sizeof(double) * (size_t)n);
    zs_hw_times t = {c->ts + (size_t)kept * p->n, c->te + (size_t)kept * p->n};
    memcpy(sh->times[c->rank].start, t.start, sizeof(double) * (size_t)p->n);
    memcpy(sh->times[c->rank].end, t.end, sizeof(double) * (size_t)p->n);
    zs_rank_result row;
    if (zs_hw_account_rank(s, p, &t, c->iter[kept], &row))
        return c->rc = zs_err_set(&c->err, ZS_ENOMEM, NULL, NULL, "out of memory");
    /* Every rank's row to every rank: each fills its slot, then a sum. */
    double *v = calloc((size_t)s->nranks * 6, sizeof(double));
    if (!v)
        return c->rc = zs_err_set(&c->err, ZS_ENOMEM, NULL, NULL, "out of memory");
    double mine[6] = {row.compute, row.exposed_comm, row.idle, row.comm, row.end, (double)row.ops};
    memcpy(v + 6 * c->rank, mine, sizeof mine);
    int rc = allreduce(c, v, 6 * s->nranks, ncclSum);
    if (!rc && (c->rank == 0 || sh->threads == 1))
        for (int r = 0; r < s->nranks; r++) {
            zs_rank_result *o = &sh->rows[r];
            o->compute = v[6 * r], o->exposed_comm = v[6 * r + 1], o->idle = v[6 * r + 2];
            o->comm = v[6 * r + 3], o->end = v[6 * r + 4], o->ops = (int64_t)v[6 * r + 5];
        }
    free(v);
    return rc;
}

static void *rank_main(void *arg)
{
    rank_ctx *c = arg;
    shared *sh = c->sh;
    if (setup_pre(c))
        sh->failed = 1;
    /* Nobody enters NCCL initialisation unless every local rank can take
     * part, or the healthy ones would wait forever for the failed one. */
    if (sh->threads > 1)
        pthread_barrier_wait(&sh->bar);
    if (sh->failed) {
        if (!c->rc)
            c->rc = zs_err_set(&c->err, ZS_ERUNTIME, NULL, NULL, "another rank failed");
        return NULL;
    }
    if (nccl_ok(ncclCommInitRank(&c->world, sh->s->nranks, sh->id, c->rank), "ncclCommInitRank",
                &c->err)) {
        c->rc = ZS_ERUNTIME;
        sh->failed = 1;
        return NULL;
    }
    /* Local setup can fail on one rank (memory); every rank still joins
     * the status all-reduce so all of them stop together. */
    zs_err local;
    int lrc = setup_local(c);
    local = c->err;
    double ok = lrc ? 0 : 1;
    c->rc = 0;
    if (allreduce(c, &ok, 1, ncclMin) == ZS_OK) {
        if (lrc) {
            c->err = local;
            c->rc = lrc;
        } else if (ok < 1) {
            c->rc = zs_err_set(&c->err, ZS_ERUNTIME, NULL, NULL, "another rank failed");
        } else if (setup_comms(c) == ZS_OK) {
            run_iterations(c);
        }
    }
    if (c->rc) {
        /* Aborted communicators are freed by the abort; never destroy them. */
        sh->failed = 1;
        for (int g = 0; c->gcomm && g < sh->s->ngroups; g++)
            if (c->gcomm[g])
                ncclCommAbort(c->gcomm[g]), c->gcomm[g] = NULL;
        for (int l = 0; l < ZS_MAX_STREAMS; l++)
            if (c->lane[l])
                ncclCommAbort(c->lane[l]), c->lane[l] = NULL;
        if (c->world)
            ncclCommAbort(c->world);
        c->world = NULL;
    }
    return NULL;
}

static int rendezvous(const zs_hw_run_cfg *cfg, ncclUniqueId *id, zs_err *e)
{
    if (cfg->rank == 0) {
        if (nccl_ok(ncclGetUniqueId(id), "ncclGetUniqueId", e))
            return ZS_ERUNTIME;
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", cfg->rendezvous, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0)
            return zs_err_set(e, ZS_EIO, cfg->rendezvous,
                              "give a writable path on a file system every node shares",
                              "cannot write the NCCL rendezvous file");
        if (rename(tmp, cfg->rendezvous) != 0)
            return zs_err_set(e, ZS_EIO, cfg->rendezvous, "check the folder's permissions",
                              "cannot publish the NCCL rendezvous file");
        return ZS_OK;
    }
    double t0 = now_s();
    for (;;) {
        FILE *f = fopen(cfg->rendezvous, "rb");
        if (f) {
            size_t n = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (n == 1)
                return ZS_OK;
        }
        if (now_s() - t0 > ZS_HW_WAIT_S)
            return zs_err_set(e, ZS_ERUNTIME, cfg->rendezvous,
                              "start rank 0 too, with the same --rendezvous path on a shared "
                              "file system",
                              "rank %d waited %.0f s for rank 0's rendezvous file", cfg->rank,
                              ZS_HW_WAIT_S);
        usleep(100000);
    }
}

/* Loads the schedule's model, builds the rank programs and checks that
 * they can run here (attention head_dim, visible GPUs or process options);
 * on failure the programs are freed. Sets *ndev to the visible GPUs and
 * *procs when each rank is its own process. */
static int prepare_run(const zs_schedule *s, const zs_hw_run_cfg *cfg, shared *sh, int *ndev,
                       int *procs, zs_err *e)
{
    int rc = zs_model_load(s->model, &sh->model, e);
    if (rc) {
        zs_err_prefix_where(e, "the schedule's model");
        return rc;
    }
    if ((rc = zs_hw_progs_build(s, &sh->progs, &sh->nd, e)))
        return rc;
    if (sh->nd.attn_q_rows > 0 && !zs__attn_supported(sh->model.head_dim)) {
        zs_hw_progs_free(sh->progs, s->nranks);
        return zs_err_set(e, ZS_EUNSUPPORTED, sh->model.name,
                          "use a model with head_dim 64 or 128 (the attention kernels are "
                          "compiled for those)",
                          "head_dim %d is not supported by the attention kernel",
                          sh->model.head_dim);
    }
    *ndev = 0;
    cudaGetDeviceCount(ndev);
    *procs = cfg->rank >= 0 && cfg->nprocs > 1;
    if (*procs && (cfg->nprocs != s->nranks || !cfg->rendezvous || cfg->rank >= cfg->nprocs)) {
        zs_hw_progs_free(sh->progs, s->nranks);
        return zs_err_set(e, ZS_EUSAGE, "--rank/--nprocs/--rendezvous",
                          "start one process per rank with --nprocs equal to the schedule's ranks "
                          "and a shared --rendezvous file",
                          "the schedule has %d ranks; got rank %d of %d processes", s->nranks,
                          cfg->rank, cfg->nprocs);
    }
    if (!*procs && s->nranks > *ndev) {
        zs_hw_progs_free(sh->progs, s->nranks);
        return zs_err_set(e, ZS_EUNSUPPORTED, NULL,
                          "run one process per GPU with --rank, --nprocs and --rendezvous "
                          "(docs/hw-backend.md), or plan for fewer ranks",
                          "the schedule has %d ranks but only %d GPU(s) are visible", s->nranks,
                          *ndev);
    }
    return ZS_OK;
}

/* The NCCL unique id (from the rendezvous file in process mode) and the
 * shared result buffers. Everything is allocated even when the id failed;
 * the caller frees it all. */
static int alloc_shared(const zs_schedule *s, const zs_hw_run_cfg *cfg, shared *sh, int procs,
                        rank_ctx **ctx_out, zs_err *e)
{
    int rc;
    sh->threads = procs ? 1 : s->nranks;
    zs__attn_pipelined(); /* read the environment once, before any thread */
    if (procs)
        rc = rendezvous(cfg, &sh->id, e);
    else
        rc = nccl_ok(ncclGetUniqueId(&sh->id), "ncclGetUniqueId", e);
    sh->times = calloc((size_t)s->nranks, sizeof *sh->times);
    sh->iter_time = calloc((size_t)cfg->iters, sizeof(double));
    sh->rows = calloc((size_t)s->nranks, sizeof *sh->rows);
    rank_ctx *ctx = calloc((size_t)sh->threads, sizeof *ctx);
    *ctx_out = ctx;
    if (!rc && (!sh->times || !sh->iter_time || !sh->rows || !ctx))
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int r = 0; !rc && r < s->nranks; r++) {
        sh->times[r].start = calloc((size_t)(sh->progs[r].n + 1), sizeof(double));
        sh->times[r].end = calloc((size_t)(sh->progs[r].n + 1), sizeof(double));
        if (!sh->times[r].start || !sh->times[r].end)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    return rc;
}

/* Runs rank_main for every rank of this process (a thread per GPU, or in
 * this thread in process mode) and returns the first failing rank's own
 * error, not the echoes. */
static int run_ranks(const zs_hw_run_cfg *cfg, shared *sh, rank_ctx *ctx, int procs, int ndev,
                     zs_err *e)
{
    int rc = ZS_OK;
    if (sh->threads > 1)
        pthread_barrier_init(&sh->bar, NULL, (unsigned)sh->threads);
    pthread_t *th = calloc((size_t)sh->threads, sizeof *th);
    int started = 0;
    for (int i = 0; i < sh->threads && th; i++, started++) {
        ctx[i].sh = sh;
        ctx[i].rank = procs ? cfg->rank : i;
        ctx[i].dev = procs ? cfg->rank % (ndev > 0 ? ndev : 1) : i;
        if (sh->threads == 1) {
            rank_main(&ctx[i]);
        } else if (pthread_create(&th[i], NULL, rank_main, &ctx[i]) != 0) {
            rc = zs_err_set(e, ZS_ERUNTIME, NULL, NULL, "cannot start a thread per GPU");
            break;
        }
    }
    if (sh->threads > 1 && rc) {
        /* Threads already started wait at the barrier for the rest. */
        sh->failed = 1;
        for (int i = started; i < sh->threads; i++)
            pthread_barrier_wait(&sh->bar);
    }
    for (int i = 0; i < started && sh->threads > 1; i++)
        pthread_join(th[i], NULL);
    free(th);
    if (sh->threads > 1)
        pthread_barrier_destroy(&sh->bar);
    /* Report the first failing rank's own error, not the echoes. */
    for (int pass = 0; pass < 2 && !rc; pass++)
        for (int i = 0; i < sh->threads && !rc; i++)
            if (ctx[i].rc && (pass || !strstr(ctx[i].err.what, "another rank failed"))) {
                *e = ctx[i].err;
                rc = ctx[i].rc;
            }
    return rc;
}

/* The result's rows, wall time and the notes on how it was measured. */
static void fill_result(zs_result *res, const zs_schedule *s, const zs_hw_run_cfg *cfg,
                        const shared *sh, int procs, double wall0)
{
    snprintf(res->backend, sizeof res->backend, "hw");
    memcpy(res->ranks, sh->rows, sizeof *sh->rows * (size_t)s->nranks);
    zs_result_finish(res);
    res->wall_seconds = now_s() - wall0;
    char its[256];
    size_t o = 0;
    its[0] = '\0';
    for (int i = 0; i < cfg->iters && o < sizeof its; i++)
        o += (size_t)snprintf(its + o, sizeof its - o, "%s%.3f", i ? " " : "",
                              sh->iter_time[i] * 1e3);
    zs_result_note(res,
                   "measured with CUDA events on synthetic bf16 data after %d warm-up "
                   "iteration(s); median of %d: %s ms",
                   cfg->warmup, cfg->iters, its);
    zs_result_note(res, "GPUs aligned by an NCCL all-reduce before each iteration (timeline "
                        "offsets between GPUs are approximate)");
    zs_result_note(res, "send/receive and collective times include waiting for the peer");
    zs_result_note(res, "elementwise ops run as a residual add moving the op's bytes");
    if (sh->nd.host_copy_bytes > 0)
        zs_result_note(res,
                       "host copies (d2h/h2d) run as cudaMemcpyAsync between a device buffer and "
                       "a pinned host buffer of %.0f bytes per rank, on the op's stream",
                       sh->nd.host_copy_bytes);
    zs_result_note(res, "link and NIC bytes are not measured by the hw backend");
    if (procs)
        zs_result_note(res, "process mode: rank %d of %d", cfg->rank, cfg->nprocs);
}

/* The measured timeline; in process mode one file per rank, T.rank<R>.json
 * (T.rank<R>.json.gz when T ends in .gz). */
static int write_timeline(const zs_schedule *s, const zs_hw_run_cfg *cfg, const shared *sh,
                          int procs, zs_result *res, zs_err *e)
{
    char path[4096];
    size_t len = strlen(cfg->exec.timeline);
    int gz = len > 3 && !strcmp(cfg->exec.timeline + len - 3, ".gz");
    if (procs)
        snprintf(path, sizeof path, "%.*s.rank%d.json%s", (int)(gz ? len - 3 : len),
                 cfg->exec.timeline, cfg->rank, gz ? ".gz" : "");
    else
        snprintf(path, sizeof path, "%s", cfg->exec.timeline);
    double bytes = 0;
    int rc = zs_hw_timeline_write(s, sh->progs, sh->times, cfg->gpus_per_node,
                                  procs ? cfg->rank : -1, path, &bytes, e);
    if (!rc)
        zs_timeline_note(res, path, bytes, NULL);
    return rc;
}

int zs__cuda_run(const zs_schedule *s, const zs_hw_run_cfg *cfg_in, zs_result **out, zs_err *e)
{
    zs_hw_run_cfg cfg = cfg_in ? *cfg_in : zs_hw_run_cfg_default();
    cfg.warmup = cfg.warmup < 0 ? 0 : cfg.warmup;
    cfg.iters = cfg.iters < 1 ? 1 : cfg.iters;
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.s = s;
    sh.cfg = &cfg;
    int ndev = 0, procs = 0;
    int rc = prepare_run(s, &cfg, &sh, &ndev, &procs, e);
    if (rc)
        return rc;
    rank_ctx *ctx = NULL;
    rc = alloc_shared(s, &cfg, &sh, procs, &ctx, e);
    double wall0 = now_s();
    if (!rc)
        rc = run_ranks(&cfg, &sh, ctx, procs, ndev, e);
    zs_result *res = NULL;
    if (!rc && !(res = zs_result_new(s->nranks, 0)))
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (!rc)
        fill_result(res, s, &cfg, &sh, procs, wall0);
    for (int i = 0; i < sh.threads && ctx; i++)
        if (ctx[i].sh) {
            cudaSetDevice(ctx[i].dev);
            free_ctx(&ctx[i]);
        }
    if (!rc && cfg.exec.timeline)
        rc = write_timeline(s, &cfg, &sh, procs, res, e);
    for (int r = 0; sh.times && r < s->nranks; r++)
        free(sh.times[r].start), free(sh.times[r].end);
    free(sh.times), free(sh.iter_time), free(sh.rows), free(ctx);
    zs_hw_progs_free(sh.progs, s->nranks);
    if (rc) {
        zs_result_free(res);
        return rc;
    }
    *out = res;
    return ZS_OK;
}

/* Variable-length causal attention on tensor cores, forward and backward,
 * over a block list (see zs_hw_ref.h for the block geometry and the mask).
 *
 * FlashAttention-2 style: bf16 inputs, fp32 accumulation, online softmax,
 * log-sum-exp output. Matrix products use the warp-level
 * mma.sync.m16n8k16 bf16 instruction (Ampere and Hopper; no wgmma/TMA, see
 * docs/hw-backend.md for what that costs on Hopper). Fragments are loaded
 * from padded shared memory with 32-bit loads where the operand is
 * contiguous along k and with two 16-bit loads where it is not.
 *
 * Forward: one CTA of 8 warps per (128-query tile, head); each warp owns 16
 * query rows and walks 64-key tiles up to the causal limit. Backward: one
 * CTA of 4 warps per (64-key tile, head), walking 64-query tiles from the
 * causal limit; dK and dV accumulate in registers, dQ goes to an fp32
 * buffer with atomics (blocks and GQA heads may share rows), and dK/dV are
 * added to fp32 buffers the same way; a final pass converts to bf16. */
#include <cuda_bf16.h>
#include <math_constants.h>
#include <stdlib.h>
#include <string.h>

#include "zs_cuda_internal.h"

namespace
{

typedef __nv_bfloat16 bf16;
constexpr int PAD = 8; /* bf16 elements of row padding: conflict-free 32-bit fragment loads */
constexpr float LOG2E = 1.4426950408889634f;
constexpr float LN2 = 0.6931471805599453f;

__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t ld32(const bf16 *p)
{
    return *reinterpret_cast<const uint32_t *>(p);
}
__device__ __forceinline__ uint32_t pack2(bf16 lo, bf16 hi)
{
    return (uint32_t)__bfloat16_as_ushort(lo) | ((uint32_t)__bfloat16_as_ushort(hi) << 16);
}
__device__ __forceinline__ uint32_t packf(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* A operand (16 x 16): element (r, c) at p[r * ld + c]. */
__device__ __forceinline__ void lda_row(uint32_t a[4], const bf16 *p, int ld, int g, int t)
{
    a[0] = ld32(p + g * ld + 2 * t);
    a[1] = ld32(p + (g + 8) * ld + 2 * t);
    a[2] = ld32(p + g * ld + 2 * t + 8);
    a[3] = ld32(p + (g + 8) * ld + 2 * t + 8);
}
/* A operand: element (r, c) at p[c * ld + r]. */
__device__ __forceinline__ void lda_col(uint32_t a[4], const bf16 *p, int ld, int g, int t)
{
    a[0] = pack2(p[(2 * t) * ld + g], p[(2 * t + 1) * ld + g]);
    a[1] = pack2(p[(2 * t) * ld + g + 8], p[(2 * t + 1) * ld + g + 8]);
    a[2] = pack2(p[(2 * t + 8) * ld + g], p[(2 * t + 9) * ld + g]);
    a[3] = pack2(p[(2 * t + 8) * ld + g + 8], p[(2 * t + 9) * ld + g + 8]);
}
/* B operand (16 x 8, k x n): element (k, n) at p[n * ld + k]. */
__device__ __forceinline__ void ldb_n(uint32_t b[2], const bf16 *p, int ld, int g, int t)
{
    b[0] = ld32(p + g * ld + 2 * t);
    b[1] = ld32(p + g * ld + 2 * t + 8);
}
/* B operand: element (k, n) at p[k * ld + n]. */
__device__ __forceinline__ void ldb_k(uint32_t b[2], const bf16 *p, int ld, int g, int t)
{
    b[0] = pack2(p[(2 * t) * ld + g], p[(2 * t + 1) * ld + g]);
    b[1] = pack2(p[(2 * t + 8) * ld + g], p[(2 * t + 9) * ld + g]);
}

/* Copies `rows` rows of D bf16 (global row stride gstride elements) into
 * shared memory with row stride D + PAD, zero-filling rows >= valid. */
template <int D, int NT>
__device__ __forceinline__ void load_rows(bf16 *s, const bf16 *g, long long gstride, int rows,
                                          int valid)
{
    constexpr int C = D / 8;
    for (int i = threadIdx.x; i < rows * C; i += NT) {
        int r = i / C, c = (i % C) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < valid)
            v = *reinterpret_cast<const uint4 *>(g + r * gstride + c);
        *reinterpret_cast<uint4 *>(s + r * (D + PAD) + c) = v;
    }
}

/* Asynchronous 16-byte copy to shared memory (sm_80+), zero-filled when
 * !valid (source size 0: nothing is read). */
__device__ __forceinline__ void cp16(void *dst, const void *src, bool valid)
{
    unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    int n = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> __device__ __forceinline__ void cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* load_rows with cp.async; valid >= 1 (row 0 stands in as the source of
 * zero-filled rows). */
template <int D, int NT>
__device__ __forceinline__ void load_rows_async(bf16 *s, const bf16 *g, long long gstride, int rows,
                                                int valid)
{
    constexpr int C = D / 8;
    for (int i = threadIdx.x; i < rows * C; i += NT) {
        int r = i / C, c = (i % C) * 8;
        cp16(s + r * (D + PAD) + c, g + (r < valid ? r : 0) * gstride + c, r < valid);
    }
}

/* One 64-key tile of the forward for the warp's 16 query rows: scores,
 * mask, online softmax update of (m, l, o), then P V. */
template <int D>
__device__ __forceinline__ void
fwd_tile(const bf16 *Ks, const bf16 *Vs, const uint32_t (*qa)[4], int kt, int row0, int nk, int nq,
         long long dpos, float scale_log2, int g, int t, float m[2], float l[2], float (*o)[4])
{
    constexpr int BK = 64, LD = D + PAD;
    float s[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
        s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            uint32_t bb[2];
            ldb_n(bb, Ks + nt * 8 * LD + kk * 16, LD, g, t);
            mma16816(s[nt], qa[kk], bb);
        }
    float mx[2] = {-CUDART_INF_F, -CUDART_INF_F};
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int i = row0 + (e >> 1) * 8, j = kt + nt * 8 + 2 * t + (e & 1);
            bool ok = j < nk && i < nq && (long long)j <= dpos + i;
            s[nt][e] = ok ? s[nt][e] * scale_log2 : -CUDART_INF_F;
            mx[e >> 1] = fmaxf(mx[e >> 1], s[nt][e]);
        }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        float mn = fmaxf(m[r], mx[r]);
        float base = mn == -CUDART_INF_F ? 0.f : mn; /* all masked so far: exp2(-inf) = 0 */
        float alpha = exp2f(m[r] - base), sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            s[nt][2 * r] = exp2f(s[nt][2 * r] - base);
            s[nt][2 * r + 1] = exp2f(s[nt][2 * r + 1] - base);
            sum += s[nt][2 * r] + s[nt][2 * r + 1];
        }
        l[r] = l[r] * alpha + sum;
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            o[dn][2 * r] *= alpha;
            o[dn][2 * r + 1] *= alpha;
        }
        m[r] = mn;
    }
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
        uint32_t pa[4] = {packf(s[2 * kk][0], s[2 * kk][1]), packf(s[2 * kk][2], s[2 * kk][3]),
                          packf(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                          packf(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            uint32_t bb[2];
            ldb_k(bb, Vs + kk * 16 * LD + dn * 8, LD, g, t);
            mma16816(o[dn], pa, bb);
        }
    }
}

/* PIPE: K/V tiles double-buffered with cp.async, the next tile's copy
 * overlapping the current tile's math; otherwise plain loads between two
 * barriers (kept as the fallback, ZS_HW_ATTN_FWD=simple). */
template <int D, bool PIPE>
__global__ void __launch_bounds__(256)
    attn_fwd_kernel(const zs_hw_block *blocks, const int32_t *tiles, int heads, int kv_heads,
                    float scale_log2, const bf16 *Q, const bf16 *K, const bf16 *V, bf16 *O,
                    float *LSE)
{
    constexpr int BQ = ZS_ATTN_FWD_ROWS, BK = 64, LD = D + PAD, NT = 256;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *Qs = reinterpret_cast<bf16 *>(smem), *Kb = Qs + BQ * LD; /* then V, K', V' */
    const zs_hw_block b = blocks[tiles[2 * blockIdx.x]];
    const int qt = tiles[2 * blockIdx.x + 1], h = blockIdx.y, hk = h / (heads / kv_heads);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const long long qs = (long long)heads * D, ks = (long long)kv_heads * D;
    const int nqt = min(BQ, b.nq - qt);
    load_rows<D, NT>(Qs, Q + (b.q_off + qt) * qs + h * D, qs, BQ, nqt);
    /* Keys visible to the tile's last row: j < q_pos + qt + nqt - k_pos. */
    long long lim = (long long)b.q_pos + qt + nqt - b.k_pos;
    const int kend = (int)max(0LL, min((long long)b.nk, lim));
    const int row0 = qt + warp * 16 + g; /* block row of c0/c1; +8 for c2/c3 */
    const long long dpos = (long long)b.q_pos - b.k_pos;

    float m[2] = {-CUDART_INF_F, -CUDART_INF_F}, l[2] = {0.f, 0.f};
    float o[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    __syncthreads();
    uint32_t qa[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        lda_row(qa[kk], Qs + warp * 16 * LD + kk * 16, LD, g, t);

    const int ntile = (kend + BK - 1) / BK;
    const bf16 *Kg = K + b.k_off * ks + hk * D, *Vg = V + b.k_off * ks + hk * D;
    if (PIPE && ntile > 0) {
        load_rows_async<D, NT>(Kb, Kg, ks, BK, min(BK, b.nk));
        load_rows_async<D, NT>(Kb + BK * LD, Vg, ks, BK, min(BK, b.nk));
        cp_commit();
    }
    for (int it = 0; it < ntile; it++) {
        const int kt = it * BK;
        bf16 *Ks = Kb + (PIPE ? (it & 1) * 2 * BK * LD : 0), *Vs = Ks + BK * LD;
        if (PIPE) {
            if (it + 1 < ntile) {
                bf16 *Kn = Kb + ((it + 1) & 1) * 2 * BK * LD;
                int nv = min(BK, b.nk - kt - BK);
                load_rows_async<D, NT>(Kn, Kg + (kt + BK) * ks, ks, BK, nv);
                load_rows_async<D, NT>(Kn + BK * LD, Vg + (kt + BK) * ks, ks, BK, nv);
                cp_commit();
                cp_wait<1>();
            } else {
                cp_wait<0>();
            }
            __syncthreads();
        } else {
            __syncthreads();
            load_rows<D, NT>(Ks, Kg + kt * ks, ks, BK, min(BK, b.nk - kt));
            load_rows<D, NT>(Vs, Vg + kt * ks, ks, BK, min(BK, b.nk - kt));
            __syncthreads();
        }
        /* Skipped when the warp's last row sees no key of this tile. */
        if ((long long)kt <= dpos + qt + warp * 16 + 15)
            fwd_tile<D>(Ks, Vs, qa, kt, row0, b.nk, b.nq, dpos, scale_log2, g, t, m, l, o);
        if (PIPE)
            __syncthreads(); /* the buffer is refilled two tiles later */
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        int i = row0 + r * 8;
        if (i >= b.nq)
            continue;
        float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
        bf16 *orow = O + (b.q_off + i) * qs + h * D;
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++)
            *reinterpret_cast<uint32_t *>(orow + dn * 8 + 2 * t) =
                packf(o[dn][2 * r] * inv, o[dn][2 * r + 1] * inv);
        if (t == 0)
            LSE[(b.q_off + i) * heads + h] =
                l[r] > 0.f ? (m[r] + log2f(l[r])) * LN2 : -CUDART_INF_F;
    }
}

/* D_i = dO_i . O_i per (row, head), fp32. */
template <int D>
__global__ void attn_dd_kernel(int64_t rows, int heads, const bf16 *O, const bf16 *dO, float *dd)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * heads)
        return;
    const bf16 *o = O + i * D, *d = dO + i * D;
    float acc = 0.f;
    for (int c = 0; c < D; c++)
        acc += __bfloat162float(o[c]) * __bfloat162float(d[c]);
    dd[i] = acc;
}

/* The backward's phases for one 64-query tile against the CTA's 64-key
 * tile, in the order attn_bwd_kernel runs them. Warp w owns keys
 * w*16 .. w*16+15 of the tile, except in bwd_add_dq (queries). */

/* The tile's Q and dO rows to shared memory, with their LSE (in log2
 * units) and D; rows past the block read as masked. */
template <int D, int NT>
__device__ __forceinline__ void bwd_load_q_tile(bf16 *Qs, bf16 *dOs, float *lse_s, float *dd_s,
                                                const bf16 *Q, const bf16 *dO, const float *LSE,
                                                const float *DD, const zs_hw_block b, int qi,
                                                int nqt, long long qs, int h, int heads)
{
    constexpr int BQ = 64;
    load_rows<D, NT>(Qs, Q + (b.q_off + qi) * qs + h * D, qs, BQ, nqt);
    load_rows<D, NT>(dOs, dO + (b.q_off + qi) * qs + h * D, qs, BQ, nqt);
    for (int r = threadIdx.x; r < BQ; r += NT) {
        bool ok = r < nqt;
        float lv = ok ? LSE[(b.q_off + qi + r) * heads + h] : -CUDART_INF_F;
        lse_s[r] = lv * LOG2E;
        dd_s[r] = ok ? DD[(b.q_off + qi + r) * heads + h] : 0.f;
    }
}

/* S^T = K Q^T and dP^T = V dO^T for the warp's 16 keys x 64 queries. */
template <int D>
__device__ __forceinline__ void bwd_scores(float (*p)[4], float (*dp)[4], const bf16 *Ks,
                                           const bf16 *Vs, const bf16 *Qs, const bf16 *dOs,
                                           int warp, int g, int t)
{
    constexpr int LD = D + PAD;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
        for (int e = 0; e < 4; e++)
            p[nt][e] = dp[nt][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t a[4], av[4];
        lda_row(a, Ks + warp * 16 * LD + kk * 16, LD, g, t);
        lda_row(av, Vs + warp * 16 * LD + kk * 16, LD, g, t);
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            uint32_t bq[2], bo[2];
            ldb_n(bq, Qs + nt * 8 * LD + kk * 16, LD, g, t);
            mma16816(p[nt], a, bq);
            ldb_n(bo, dOs + nt * 8 * LD + kk * 16, LD, g, t);
            mma16816(dp[nt], av, bo); /* dP^T = V dO^T */
        }
    }
}

/* P^T and dS^T = P^T (dP^T - D), in place of S^T and dP^T. */
__device__ __forceinline__ void bwd_probs(float (*p)[4], float (*dp)[4], const float *lse_s,
                                          const float *dd_s, const zs_hw_block b, int jrow0, int qi,
                                          long long dpos, float scale_log2, int t)
{
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int j = jrow0 + (e >> 1) * 8, ir = nt * 8 + 2 * t + (e & 1), i = qi + ir;
            float lv = lse_s[ir];
            bool ok = j < b.nk && i < b.nq && (long long)j <= dpos + i && lv != -CUDART_INF_F;
            float pv = ok ? exp2f(p[nt][e] * scale_log2 - lv) : 0.f;
            p[nt][e] = pv;
            dp[nt][e] = pv * (dp[nt][e] - dd_s[ir]);
        }
}

/* dV += P^T dO and dK += dS^T Q (k = queries). */
template <int D>
__device__ __forceinline__ void bwd_accum_dkdv(float (*dk)[4], float (*dv)[4], const float (*p)[4],
                                               const float (*dp)[4], const bf16 *Qs,
                                               const bf16 *dOs, int g, int t)
{
    constexpr int BQ = 64, LD = D + PAD;
#pragma unroll
    for (int kk = 0; kk < BQ / 16; kk++) {
        uint32_t pa[4] = {packf(p[2 * kk][0], p[2 * kk][1]), packf(p[2 * kk][2], p[2 * kk][3]),
                          packf(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                          packf(p[2 * kk + 1][2], p[2 * kk + 1][3])};
        uint32_t sa[4] = {packf(dp[2 * kk][0], dp[2 * kk][1]), packf(dp[2 * kk][2], dp[2 * kk][3]),
                          packf(dp[2 * kk + 1][0], dp[2 * kk + 1][1]),
                          packf(dp[2 * kk + 1][2], dp[2 * kk + 1][3])};
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            uint32_t bo[2], bq[2];
            ldb_k(bo, dOs + kk * 16 * LD + dn * 8, LD, g, t);
            mma16816(dv[dn], pa, bo);
            ldb_k(bq, Qs + kk * 16 * LD + dn * 8, LD, g, t);
            mma16816(dk[dn], sa, bq);
        }
    }
}

/* dS^T to shared memory for dQ = dS K. */
__device__ __forceinline__ void bwd_store_ds(bf16 *dSs, const float (*dp)[4], int warp, int g,
                                             int t)
{
    constexpr int BQ = 64, LDS = BQ + PAD;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int r = 0; r < 2; r++)
            *reinterpret_cast<uint32_t *>(dSs + (warp * 16 + g + r * 8) * LDS + nt * 8 + 2 * t) =
                packf(dp[nt][2 * r], dp[nt][2 * r + 1]);
}

/* dQ += scale dS K, added to the fp32 buffer: warp w takes queries
 * w*16 .. w*16+15 of the tile, k = the 64 keys. */
template <int D>
__device__ __forceinline__ void bwd_add_dq(float *dQ, const bf16 *dSs, const bf16 *Ks,
                                           const zs_hw_block b, int qi, int nqt, long long qs,
                                           int h, float scale, int warp, int g, int t)
{
    constexpr int BK = ZS_ATTN_BWD_ROWS, BQ = 64, LD = D + PAD, LDS = BQ + PAD;
    uint32_t sa[BK / 16][4];
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
        lda_col(sa[kk], dSs + kk * 16 * LDS + warp * 16, LDS, g, t);
#pragma unroll 4
    for (int dn = 0; dn < D / 8; dn++) {
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t bk[2];
            ldb_k(bk, Ks + kk * 16 * LD + dn * 8, LD, g, t);
            mma16816(acc, sa[kk], bk);
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int ir = warp * 16 + g + r * 8;
            if (ir >= nqt)
                continue;
            float *dst = dQ + (b.q_off + qi + ir) * qs + h * D + dn * 8 + 2 * t;
            atomicAdd(dst, acc[2 * r] * scale);
            atomicAdd(dst + 1, acc[2 * r + 1] * scale);
        }
    }
}

/* The warp's accumulated dK (scaled) and dV rows added to the fp32
 * buffers. */
template <int D>
__device__ __forceinline__ void bwd_add_dkdv(float *dK, float *dV, const float (*dk)[4],
                                             const float (*dv)[4], const zs_hw_block b, int jrow0,
                                             long long ks, int hk, float scale, int t)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        int j = jrow0 + r * 8;
        if (j >= b.nk)
            continue;
        float *dkr = dK + (b.k_off + j) * ks + hk * D, *dvr = dV + (b.k_off + j) * ks + hk * D;
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            atomicAdd(dkr + dn * 8 + 2 * t, dk[dn][2 * r] * scale);
            atomicAdd(dkr + dn * 8 + 2 * t + 1, dk[dn][2 * r + 1] * scale);
            atomicAdd(dvr + dn * 8 + 2 * t, dv[dn][2 * r]);
            atomicAdd(dvr + dn * 8 + 2 * t + 1, dv[dn][2 * r + 1]);
        }
    }
}

template <int D>
__global__ void __launch_bounds__(128)
    attn_bwd_kernel(const zs_hw_block *blocks, const int32_t *tiles, int heads, int kv_heads,
                    float scale, const bf16 *Q, const bf16 *K, const bf16 *V, const float *LSE,
                    const float *DD, const bf16 *dO, float *dQ, float *dK, float *dV)
{
    constexpr int BK = ZS_ATTN_BWD_ROWS, BQ = 64, LD = D + PAD, LDS = BQ + PAD, NT = 128;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *Ks = reinterpret_cast<bf16 *>(smem), *Vs = Ks + BK * LD, *Qs = Vs + BK * LD;
    bf16 *dOs = Qs + BQ * LD, *dSs = dOs + BQ * LD;
    float *lse_s = reinterpret_cast<float *>(dSs + BK * LDS), *dd_s = lse_s + BQ;
    const zs_hw_block b = blocks[tiles[2 * blockIdx.x]];
    const int kt = tiles[2 * blockIdx.x + 1], h = blockIdx.y, hk = h / (heads / kv_heads);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const long long qs = (long long)heads * D, ks = (long long)kv_heads * D;
    const float scale_log2 = scale * LOG2E;
    const long long dpos = (long long)b.q_pos - b.k_pos;
    const int nkt = min(BK, b.nk - kt);
    load_rows<D, NT>(Ks, K + (b.k_off + kt) * ks + hk * D, ks, BK, nkt);
    load_rows<D, NT>(Vs, V + (b.k_off + kt) * ks + hk * D, ks, BK, nkt);
    const int jrow0 = kt + warp * 16 + g; /* block key row of c0/c1; +8 for c2/c3 */

    float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
        for (int e = 0; e < 4; e++)
            dk[i][e] = dv[i][e] = 0.f;
    /* First query that sees the tile's first key: i >= kt - dpos. */
    const int qstart = (int)max(0LL, (long long)kt - dpos);
    for (int qi = qstart; qi < b.nq; qi += BQ) {
        const int nqt = min(BQ, b.nq - qi);
        __syncthreads();
        bwd_load_q_tile<D, NT>(Qs, dOs, lse_s, dd_s, Q, dO, LSE, DD, b, qi, nqt, qs, h, heads);
        __syncthreads();
        float p[8][4], dp[8][4];
        bwd_scores<D>(p, dp, Ks, Vs, Qs, dOs, warp, g, t);
        bwd_probs(p, dp, lse_s, dd_s, b, jrow0, qi, dpos, scale_log2, t);
        bwd_accum_dkdv<D>(dk, dv, p, dp, Qs, dOs, g, t);
        bwd_store_ds(dSs, dp, warp, g, t);
        __syncthreads();
        bwd_add_dq<D>(dQ, dSs, Ks, b, qi, nqt, qs, h, scale, warp, g, t);
    }
    bwd_add_dkdv<D>(dK, dV, dk, dv, b, jrow0, ks, hk, scale, t);
}

__global__ void to_bf16_kernel(int64_t n, const float *x, bf16 *y)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2bfloat16(x[i]);
}

template <int D, bool PIPE> size_t fwd_smem()
{
    return sizeof(bf16) * (size_t)(ZS_ATTN_FWD_ROWS + (PIPE ? 256 : 128)) * (D + PAD);
}
template <int D> size_t bwd_smem()
{
    return sizeof(bf16) * ((size_t)(2 * ZS_ATTN_BWD_ROWS + 128) * (D + PAD) +
                           (size_t)ZS_ATTN_BWD_ROWS * (64 + PAD)) +
           sizeof(float) * 128;
}

template <int D, bool PIPE>
cudaError_t fwd_launch(const zs_hw_block *blocks, const int32_t *tiles, int ntiles,
                       const zs_attn_dims *d, float scale, const void *q, const void *k,
                       const void *v, void *o, float *lse, cudaStream_t st)
{
    size_t sm = fwd_smem<D, PIPE>();
    cudaError_t rc = cudaFuncSetAttribute(attn_fwd_kernel<D, PIPE>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
    if (rc != cudaSuccess || ntiles == 0)
        return rc;
    dim3 grid((unsigned)ntiles, (unsigned)d->heads);
    attn_fwd_kernel<D, PIPE><<<grid, 256, sm, st>>>(
        blocks, tiles, d->heads, d->kv_heads, scale * LOG2E, static_cast<const bf16 *>(q),
        static_cast<const bf16 *>(k), static_cast<const bf16 *>(v), static_cast<bf16 *>(o), lse);
    return cudaGetLastError();
}

cudaError_t convert(int64_t n, const float *x, void *y, cudaStream_t st)
{
    if (n <= 0)
        return cudaSuccess;
    to_bf16_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(n, x, static_cast<bf16 *>(y));
    return cudaGetLastError();
}

template <int D>
cudaError_t bwd_launch(const zs_hw_block *blocks, const int32_t *tiles, int ntiles,
                       const zs_attn_dims *d, float scale, const void *q, const void *k,
                       const void *v, const void *o, const float *lse, const void *dout,
                       const zs__attn_bwd_bufs *bb, cudaStream_t st)
{
    size_t sm = bwd_smem<D>();
    cudaError_t rc = cudaFuncSetAttribute(attn_bwd_kernel<D>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
    int64_t nq = bb->q_rows * d->heads, nk = bb->k_rows * d->kv_heads;
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(bb->dq32, 0, sizeof(float) * (size_t)(nq * D), st);
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(bb->dk32, 0, sizeof(float) * (size_t)(nk * D), st);
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(bb->dv32, 0, sizeof(float) * (size_t)(nk * D), st);
    if (rc != cudaSuccess)
        return rc;
    if (nq > 0) {
        attn_dd_kernel<D><<<(unsigned)((nq + 127) / 128), 128, 0, st>>>(
            bb->q_rows, d->heads, static_cast<const bf16 *>(o), static_cast<const bf16 *>(dout),
            bb->dd);
        if ((rc = cudaGetLastError()) != cudaSuccess)
            return rc;
    }
    if (ntiles > 0) {
        dim3 grid((unsigned)ntiles, (unsigned)d->heads);
        attn_bwd_kernel<D><<<grid, 128, sm, st>>>(
            blocks, tiles, d->heads, d->kv_heads, scale, static_cast<const bf16 *>(q),
            static_cast<const bf16 *>(k), static_cast<const bf16 *>(v), lse, bb->dd,
            static_cast<const bf16 *>(dout), bb->dq32, bb->dk32, bb->dv32);
        if ((rc = cudaGetLastError()) != cudaSuccess)
            return rc;
    }
    if ((rc = convert(nq * D, bb->dq32, bb->dq, st)) != cudaSuccess ||
        (rc = convert(nk * D, bb->dk32, bb->dk, st)) != cudaSuccess)
        return rc;
    return convert(nk * D, bb->dv32, bb->dv, st);
}

} // namespace

extern "C" int zs__attn_supported(int head_dim)
{
    return head_dim == 64 || head_dim == 128;
}

/* -1: not chosen yet (the environment decides on first use). */
static int g_pipelined = -1;

extern "C" void zs__attn_set_pipelined(int on)
{
    g_pipelined = on ? 1 : 0;
}

extern "C" int zs__attn_pipelined(void)
{
    if (g_pipelined < 0) {
        const char *v = getenv("ZS_HW_ATTN_FWD");
        g_pipelined = !(v && strcmp(v, "simple") == 0);
    }
    return g_pipelined;
}

extern "C" cudaError_t zs__attn_fwd(const zs_hw_block *blocks, const int32_t *tiles, int ntiles,
                                    const zs_attn_dims *d, float scale, const void *q,
                                    const void *k, const void *v, void *o, float *lse,
                                    cudaStream_t st)
{
    bool p = zs__attn_pipelined();
    if (d->head_dim == 64)
        return p ? fwd_launch<64, true>(blocks, tiles, ntiles, d, scale, q, k, v, o, lse, st)
                 : fwd_launch<64, false>(blocks, tiles, ntiles, d, scale, q, k, v, o, lse, st);
    if (d->head_dim == 128)
        return p ? fwd_launch<128, true>(blocks, tiles, ntiles, d, scale, q, k, v, o, lse, st)
                 : fwd_launch<128, false>(blocks, tiles, ntiles, d, scale, q, k, v, o, lse, st);
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t zs__attn_bwd(const zs_hw_block *blocks, const int32_t *tiles, int ntiles,
                                    const zs_attn_dims *d, float scale, const void *q,
                                    const void *k, const void *v, const void *o, const float *lse,
                                    const void *dout, const zs__attn_bwd_bufs *b, cudaStream_t st)
{
    if (d->head_dim == 64)
        return bwd_launch<64>(blocks, tiles, ntiles, d, scale, q, k, v, o, lse, dout, b, st);
    if (d->head_dim == 128)
        return bwd_launch<128>(blocks, tiles, ntiles, d, scale, q, k, v, o, lse, dout, b, st);
    return cudaErrorInvalidValue;
}

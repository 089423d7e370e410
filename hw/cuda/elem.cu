/* Elementwise kernels of the hardware backend: RMSNorm, SwiGLU, residual
 * add, the log-sum-exp merge of partial attention results, and a
 * deterministic fill for synthetic tensors. bf16 storage, fp32 math; all
 * memory-bound, written plainly (one element or one row per thread block
 * step) since their cost is HBM traffic, not instructions. */
#include <cuda_bf16.h>
#include <math_constants.h>

#include "zs_cuda_internal.h"

namespace
{

typedef __nv_bfloat16 bf16;

__global__ void rmsnorm_kernel(int cols, const bf16 *x, const bf16 *w, float eps, bf16 *y)
{
    __shared__ float part[32];
    const bf16 *xr = x + (int64_t)blockIdx.x * cols;
    bf16 *yr = y + (int64_t)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = __bfloat162float(xr[c]);
        ss += v * v;
    }
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        ss = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1)
            ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (threadIdx.x == 0)
            part[0] = rsqrtf(ss / cols + eps);
    }
    __syncthreads();
    float inv = part[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = __float2bfloat16(__bfloat162float(xr[c]) * inv * __bfloat162float(w[c]));
}

__global__ void swiglu_kernel(int64_t n, const bf16 *g, const bf16 *u, bf16 *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float a = __bfloat162float(g[i]);
        y[i] = __float2bfloat16(a / (1.f + __expf(-a)) * __bfloat162float(u[i]));
    }
}

__global__ void residual_kernel(int64_t n, const bf16 *x, const bf16 *r, bf16 *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(__bfloat162float(x[i]) + __bfloat162float(r[i]));
}

/* One thread block per (row, head): weights from the two LSEs. */
__global__ void merge_kernel(int head_dim, const bf16 *oa, const float *la, const bf16 *ob,
                             const float *lb, bf16 *o, float *lse)
{
    int64_t r = blockIdx.x;
    float a = la[r], b = lb[r], m = fmaxf(a, b);
    float l = m == -CUDART_INF_F ? -CUDART_INF_F : m + logf(__expf(a - m) + __expf(b - m));
    float wa = l == -CUDART_INF_F ? 0.f : __expf(a - l),
          wb = l == -CUDART_INF_F ? 0.f : __expf(b - l);
    for (int c = threadIdx.x; c < head_dim; c += blockDim.x) {
        int64_t x = r * head_dim + c;
        o[x] = __float2bfloat16(wa * __bfloat162float(oa[x]) + wb * __bfloat162float(ob[x]));
    }
    __syncthreads(); /* lse may alias la: every thread has read it */
    if (threadIdx.x == 0)
        lse[r] = l;
}

__global__ void fill_kernel(int64_t n, uint64_t seed, float amp, bf16 *x)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1); /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = __float2bfloat16(((float)(z >> 40) / 16777216.f * 2.f - 1.f) * amp);
    }
}

unsigned grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

} // namespace

extern "C" cudaError_t zs__rmsnorm(int64_t rows, int cols, const void *x, const void *w, float eps,
                                   void *y, cudaStream_t st)
{
    if (rows <= 0)
        return cudaSuccess;
    rmsnorm_kernel<<<(unsigned)rows, 256, 0, st>>>(cols, static_cast<const bf16 *>(x),
                                                   static_cast<const bf16 *>(w), eps,
                                                   static_cast<bf16 *>(y));
    return cudaGetLastError();
}

extern "C" cudaError_t zs__swiglu(int64_t n, const void *gate, const void *up, void *y,
                                  cudaStream_t st)
{
    swiglu_kernel<<<grid_for(n), 256, 0, st>>>(
        n, static_cast<const bf16 *>(gate), static_cast<const bf16 *>(up), static_cast<bf16 *>(y));
    return cudaGetLastError();
}

extern "C" cudaError_t zs__residual(int64_t n, const void *x, const void *r, void *y,
                                    cudaStream_t st)
{
    residual_kernel<<<grid_for(n), 256, 0, st>>>(
        n, static_cast<const bf16 *>(x), static_cast<const bf16 *>(r), static_cast<bf16 *>(y));
    return cudaGetLastError();
}

extern "C" cudaError_t zs__attn_merge(int64_t rows, int heads, int head_dim, const void *oa,
                                      const float *la, const void *ob, const float *lb, void *o,
                                      float *lse, cudaStream_t st)
{
    if (rows * heads <= 0)
        return cudaSuccess;
    merge_kernel<<<(unsigned)(rows * heads), 64, 0, st>>>(head_dim, static_cast<const bf16 *>(oa),
                                                          la, static_cast<const bf16 *>(ob), lb,
                                                          static_cast<bf16 *>(o), lse);
    return cudaGetLastError();
}

extern "C" cudaError_t zs__fill(void *x, int64_t n, uint64_t seed, float amp, cudaStream_t st)
{
    fill_kernel<<<grid_for(n), 256, 0, st>>>(n, seed, amp, static_cast<bf16 *>(x));
    return cudaGetLastError();
}

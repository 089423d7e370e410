/* GPU discovery and CUDA error reporting for the hardware backend. */
#include <string.h>

#include "zs_cuda_internal.h"

int zs__cuda_ok(cudaError_t st, const char *what, zs_err *e)
{
    if (st == cudaSuccess)
        return ZS_OK;
    return zs_err_set(e, ZS_ERUNTIME, what, "check the GPU, the driver and free device memory",
                      "CUDA error: %s (%s)", cudaGetErrorString(st), cudaGetErrorName(st));
}

int zs__cuda_devices(int *count, char *desc, size_t n, zs_err *e)
{
    int c = 0;
    cudaError_t st = cudaGetDeviceCount(&c);
    if (st != cudaSuccess || c < 1)
        return zs_err_set(e, ZS_EUNSUPPORTED, NULL,
                          "run on a machine with an NVIDIA GPU and its driver (nvidia-smi should "
                          "list it); CUDA_VISIBLE_DEVICES may hide them",
                          "no GPU is visible to the CUDA/NCCL backend (%s)",
                          st != cudaSuccess ? cudaGetErrorString(st) : "0 devices");
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    size_t o = 0;
    if (desc && n)
        desc[0] = '\0';
    for (int i = 0; i < c && desc && o < n; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
            continue;
        o += (size_t)snprintf(desc + o, n - o,
                              "%s%d: %s, sm_%d%d, %d SMs, %.1f GiB, driver CUDA %d.%d, runtime "
                              "%d.%d",
                              i ? "\n" : "", i, p.name, p.major, p.minor, p.multiProcessorCount,
                              (double)p.totalGlobalMem / 1073741824.0, drv / 1000,
                              (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10);
    }
    *count = c;
    return ZS_OK;
}

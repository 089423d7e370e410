/* Entry points of the hardware backend: see zs_hw.h. This file is compiled
 * in every build; with ZS_HAVE_CUDA it forwards to hw/cuda/, without it
 * every call says the backend was not built. */
#include "zs_hw.h"

#include <string.h>

#ifdef ZS_HAVE_CUDA
#include "cuda/zs_cuda_internal.h"
#endif

zs_hw_run_cfg zs_hw_run_cfg_default(void)
{
    zs_hw_run_cfg c;
    memset(&c, 0, sizeof c);
    zs_exec_opts_init(&c.exec);
    c.warmup = ZS_HW_WARMUP;
    c.iters = ZS_HW_ITERS;
    c.gpus_per_node = ZS_HW_GPN;
    c.rank = -1;
    c.nprocs = 1;
    return c;
}

zs_hw_bench_cfg zs_hw_bench_cfg_default(void)
{
    zs_hw_bench_cfg c;
    memset(&c, 0, sizeof c);
    c.models[0] = "llama-7b";
    c.max_tokens = ZS_HW_MAX_TOKENS;
    c.reps = ZS_HW_REPS;
    return c;
}

#ifndef ZS_HAVE_CUDA
static int not_built(zs_err *e)
{
    return zs_err_set(e, ZS_EUNSUPPORTED, NULL,
                      "install the CUDA toolkit with NCCL and cuBLAS (found in /usr/local/cuda) "
                      "and rebuild with -DZS_WITH_HW=ON",
                      "the CUDA/NCCL hardware backend was not built");
}
#endif

int zs_hw_available(zs_err *e)
{
#ifdef ZS_HAVE_CUDA
    (void)e;
    return ZS_OK;
#else
    return not_built(e);
#endif
}

int zs_hw_devices(int *count, char *desc, size_t n, zs_err *e)
{
#ifdef ZS_HAVE_CUDA
    return zs__cuda_devices(count, desc, n, e);
#else
    (void)count, (void)desc, (void)n;
    return not_built(e);
#endif
}

int zs_hw_check(FILE *log, zs_err *e)
{
#ifdef ZS_HAVE_CUDA
    int n;
    int rc = zs__cuda_devices(&n, NULL, 0, e);
    return rc ? rc : zs__cuda_check(log, e);
#else
    (void)log;
    return not_built(e);
#endif
}

int zs_hw_run(const zs_schedule *s, const zs_hw_run_cfg *cfg, zs_result **out, zs_err *e)
{
#ifdef ZS_HAVE_CUDA
    int n;
    int rc = zs__cuda_devices(&n, NULL, 0, e);
    return rc ? rc : zs__cuda_run(s, cfg, out, e);
#else
    (void)s, (void)cfg, (void)out;
    return not_built(e);
#endif
}

int zs_hw_bench(const zs_hw_bench_cfg *cfg, FILE *out, zs_err *e)
{
#ifdef ZS_HAVE_CUDA
    int n;
    int rc = zs__cuda_devices(&n, NULL, 0, e);
    return rc ? rc : zs__cuda_bench(cfg, out, e);
#else
    (void)cfg, (void)out;
    return not_built(e);
#endif
}

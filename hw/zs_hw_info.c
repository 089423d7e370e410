/* Whether this build has the CUDA/NCCL backend: see zs_hw_info.h. */
#include "zs_hw_info.h"

int zs_hw_built(void)
{
#ifdef ZS_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

const char *zs_hw_build_summary(void)
{
    return zs_hw_built() ? "CUDA/NCCL backend: built"
                         : "CUDA/NCCL backend: not built (CUDA toolkit, NCCL or cuBLAS not found)";
}

/* Whether this build has the CUDA/NCCL backend (for --version, `zepsim hw`
 * and result provenance). */
#ifndef ZS_HW_INFO_H
#define ZS_HW_INFO_H

/* 1 when the CUDA/NCCL backend was compiled in, 0 otherwise. */
int zs_hw_built(void);
/* "CUDA/NCCL backend: built" or "... not built (no CUDA toolkit/NCCL found)". */
const char *zs_hw_build_summary(void);

#endif

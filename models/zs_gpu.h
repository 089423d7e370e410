/* GPU descriptions: dense bf16 peak, HBM bandwidth and capacity, NVLink
 * bandwidth. Loaded from a built-in preset name or a JSON file. Depends on
 * zs_config. */
#ifndef ZS_GPU_H
#define ZS_GPU_H

#include <stdio.h>

#include "zs_config.h"
#include "zs_err.h"

typedef struct zs_gpu {
    char name[64];
    char source[256];   /* where the numbers come from (optional, free text) */
    double peak_tflops; /* dense bf16 tensor-core peak, TFLOP/s */
    double hbm_gbs;     /* HBM bandwidth, GB/s */
    double mem_gib;     /* device memory, GiB */
    double nvlink_gbs;  /* NVLink bandwidth per GPU per direction, GB/s
                         * (spec sheets quote both directions: 400 -> 200) */
} zs_gpu;

extern const zs_field zs_gpu_fields[];
extern const size_t zs_gpu_nfields;

int zs_gpu_load(const char *name_or_file, zs_gpu *out, zs_err *e);
int zs_gpu_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent_key, zs_gpu *out,
                     zs_err *e);
void zs_gpu_print(FILE *f, const zs_gpu *g);

#endif

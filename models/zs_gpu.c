/* GPU descriptions: see zs_gpu.h. */
#include "zs_gpu.h"

#include <stddef.h>
#include <string.h>

#include "zs_presets.h"

#define F(key, type, member, min, max, req, def, unit, help)                                       \
    {                                                                                              \
        key, type, offsetof(zs_gpu, member), sizeof(((zs_gpu *)0)->member), min, max, req, def,    \
            unit, help                                                                             \
    }
const zs_field zs_gpu_fields[] = {
    F("name", ZS_F_STRING, name, 0, 0, 1, 0, "", "GPU name"),
    F("source", ZS_F_STRING, source, 0, 0, 0, 0, "", "where the numbers come from"),
    F("peak_tflops", ZS_F_DOUBLE, peak_tflops, 1, 100000, 1, 0, "TFLOP/s", "dense bf16 peak"),
    F("hbm_gbs", ZS_F_DOUBLE, hbm_gbs, 1, 1e6, 1, 0, "GB/s", "HBM bandwidth"),
    F("mem_gib", ZS_F_DOUBLE, mem_gib, 1, 1e5, 1, 0, "GiB", "device memory"),
    F("nvlink_gbs", ZS_F_DOUBLE, nvlink_gbs, 1, 1e5, 1, 0, "GB/s",
      "NVLink bandwidth per GPU per direction"),
};
#undef F
const size_t zs_gpu_nfields = sizeof zs_gpu_fields / sizeof zs_gpu_fields[0];

int zs_gpu_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent_key, zs_gpu *out,
                     zs_err *e)
{
    zs_gpu g;
    int rc = zs_config_parse(doc, obj, parent_key, zs_gpu_fields, zs_gpu_nfields, NULL, &g, e);
    if (rc == ZS_OK)
        *out = g;
    return rc;
}

int zs_gpu_load(const char *name_or_file, zs_gpu *out, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_preset_open("gpu", name_or_file, &doc, e);
    if (rc == ZS_OK)
        rc = zs_gpu_from_json(doc, doc->root, NULL, out, e);
    zs_json_doc_free(doc);
    return rc;
}

void zs_gpu_print(FILE *f, const zs_gpu *g)
{
    zs_config_print(f, zs_gpu_fields, zs_gpu_nfields, g, 2);
}

/* Built-in presets: the JSON files in models/presets/, embedded at build
 * time (scripts/embed-presets.cmake) so the binary needs no data files and
 * the shipped JSON stays the one source of truth. A preset file is named
 * KIND-NAME.json (model-llama-7b.json, gpu-h100-sxm.json, cluster-cluster-a.json).
 * Depends on zs_config. */
#ifndef ZS_PRESETS_H
#define ZS_PRESETS_H

#include <stddef.h>

#include "zs_config.h"
#include "zs_err.h"

/* The JSON text of preset NAME of KIND ("model", "gpu", "cluster"), or NULL.
 * Names compare case-insensitively. */
const char *zs_preset_text(const char *kind, const char *name);

/* The i-th preset name of KIND (0-based) into buf, or 0 when i is past the end. */
int zs_preset_name(const char *kind, size_t i, char *buf, size_t n);

/* Writes "a, b, c" (the preset names of KIND) into buf, for error messages. */
void zs_preset_names(const char *kind, char *buf, size_t n);

/* Opens a description of KIND: a JSON file when name_or_file looks like a
 * path, else the built-in preset of that name (unknown names list the
 * presets in the error). The caller frees *out with zs_json_doc_free. */
int zs_preset_open(const char *kind, const char *name_or_file, zs_json_doc **out, zs_err *e);

/* True when s should be read as a file path rather than a preset name. */
int zs_looks_like_path(const char *s);

#endif

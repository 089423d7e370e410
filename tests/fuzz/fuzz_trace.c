/* Fuzz target: trace files (traces/zs_trace_read.c) in every format, the
 * first byte choosing it (auto, lines, CSV, JSON), then the statistics
 * `zepsim trace stats` prints. */
#include <stdlib.h>
#include <string.h>

#include "zs_fuzz.h"
#include "zs_trace_read.h"
#include "zs_trace_stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    if (size < 1)
        return 0;
    static const zs_trace_format fmts[] = {ZS_TRACE_FMT_AUTO, ZS_TRACE_FMT_LINES, ZS_TRACE_FMT_CSV,
                                           ZS_TRACE_FMT_JSON};
    zs_trace_read_cfg cfg = {fmts[data[0] % 4], NULL, 0};
    if (data[0] & 4)
        cfg.column = "2";
    /* the reader gets what a file would give it: the bytes and a NUL */
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    zs_trace *t = NULL;
    zs_err e;
    if (zs_trace_read_text("fuzz", text, size - 1, &cfg, &t, &e) == ZS_OK) {
        zs_trace_stats st;
        zs_trace_stats_compute(t->len, t->n, NULL, 0, &st, &e);
        zs_trace_free(t);
    }
    free(text);
    return 0;
}

/* Fuzz target: Chakra execution traces (`zepsim run --chakra`,
 * core/zs_chakra.h). One input is a trace set: up to four rank files
 * separated by "#ET#" (rank 0 first). They are loaded, validated (the
 * validator's deadlock dry run included) and run on the analytic backend,
 * whose figures must all be finite. */
#define _GNU_SOURCE /* memfd_create, memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zs_analytic.h"
#include "zs_chakra.h"
#include "zs_cluster.h"
#include "zs_fuzz.h"
#include "zs_model.h"
#include "zs_validate.h"

#define MAX_FILES 4

/* The i-th file's path holding data[0, n); NULL when it cannot be made. */
static const char *file(int i, const uint8_t *data, size_t n)
{
    static int fd[MAX_FILES] = {-1, -1, -1, -1};
    static char path[MAX_FILES][64];
    if (fd[i] < 0) {
        fd[i] = memfd_create("zs-fuzz-chakra", 0);
        if (fd[i] < 0)
            return NULL;
        snprintf(path[i], sizeof path[i], "/proc/self/fd/%d", fd[i]);
    }
    if (ftruncate(fd[i], 0) != 0 || (n && pwrite(fd[i], data, n, 0) != (ssize_t)n))
        return NULL;
    return path[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    static zs_cost *cost;
    zs_err e;
    if (!cost) {
        zs_model m;
        zs_cluster cl;
        /* 8 nodes of 8 GPUs: room for the 64 ranks zs_fuzz_limits allows */
        if (zs_model_load("llama-7b", &m, &e) || zs_cluster_load("cluster-a", 8, &cl, &e) ||
            !(cost = zs_cost_analytic_new(&m, &cl)))
            abort();
    }
    const char *paths[MAX_FILES];
    int n = 0;
    const uint8_t *p = data, *end = data + size;
    while (n < MAX_FILES) {
        const uint8_t *sep = n + 1 < MAX_FILES ? memmem(p, (size_t)(end - p), "#ET#", 4) : NULL;
        const uint8_t *stop = sep ? sep : end;
        if (!(paths[n] = file(n, p, (size_t)(stop - p))))
            return 0;
        n++;
        if (!sep)
            break;
        p = sep + 4;
    }
    zs_schedule *s = NULL;
    if (zs_chakra_load_files(paths, n, NULL, &s, &e) != ZS_OK)
        return 0;
    zs_validate_opts vo = {0, 0};
    zs_validate(s, &vo, &e);
    zs_result *r = NULL;
    if (zs_analytic_run(s, cost, NULL, &r, &e) == ZS_OK && zs_result_check(r, &e) != ZS_OK)
        abort(); /* zs_analytic_run returned a non-finite result as success */
    zs_result_free(r);
    zs_schedule_free(s);
    return 0;
}

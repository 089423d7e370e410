/* Shared pieces of the fuzz targets: see zs_fuzz.h. */
#define _GNU_SOURCE /* memfd_create */
#include "zs_fuzz.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zs_fdio.h"
#include "zs_schedule.h"

const char *zs_fuzz_path(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("zs-fuzz", 0);
        if (fd < 0)
            return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        return NULL;
    return path;
}

void zs_fuzz_limits(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    zs_input_limit_set((size_t)1 << 20);
    zs_plan_limits l = {64, 100000};
    zs_plan_limits_set(l);
}

/* `experiment run --shard`: which points of a spec this process runs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_num.h"

/* A non-negative integer from the environment variable name. */
static int env_int(const char *name, long max, long *out, zs_err *e)
{
    const char *v = getenv(name);
    int64_t x;
    if (!v || !*v)
        return zs_err_set(e, ZS_EUSAGE, "--shard slurm",
                          "run it inside a Slurm array job (sbatch --array=0-N), or give "
                          "--shard i/n",
                          "%s is not set", name);
    if (zs_num_i64(v, 0, max, ZS_EUSAGE, name, &x, e))
        return ZS_EUSAGE;
    *out = (long)x;
    return ZS_OK;
}

int zs_cli_parse_shard(const char *s, int *i, int *n, zs_err *e)
{
    if (strcmp(s, "slurm") == 0) {
        /* Slurm numbers array tasks from --array's first index (0 by
         * default): the shard is the task's place from there, 0-based */
        long id = 0, count = 0, min = 0; /* -O3 GCC cannot see env_int sets them */
        if (env_int("SLURM_ARRAY_TASK_ID", 1000000, &id, e) ||
            env_int("SLURM_ARRAY_TASK_COUNT", 1000000, &count, e))
            return ZS_EUSAGE;
        if (getenv("SLURM_ARRAY_TASK_MIN") && env_int("SLURM_ARRAY_TASK_MIN", 1000000, &min, e))
            return ZS_EUSAGE;
        if (count < 1 || id < min || id - min >= count)
            return zs_err_set(e, ZS_EUSAGE, "--shard slurm",
                              "use a contiguous array, --array=0-N (no step, no list)",
                              "array task %ld is not one of %ld tasks from %ld", id, count, min);
        *i = (int)(id - min) + 1;
        *n = (int)count;
        return ZS_OK;
    }
    char *end;
    long a = strtol(s, &end, 10), b = 0;
    int ok = end != s && *end == '/';
    if (ok) {
        const char *p = end + 1;
        b = strtol(p, &end, 10);
        ok = end != p && !*end && b >= 1 && b <= 1000000 && a >= 1 && a <= b;
    }
    if (!ok)
        return zs_err_set(e, ZS_EUSAGE, "--shard",
                          "give i/n with 1 <= i <= n (e.g. --shard 2/4), or slurm in an array job",
                          "bad shard '%s'", s);
    *i = (int)a;
    *n = (int)b;
    return ZS_OK;
}

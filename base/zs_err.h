/* Error reporting for every zepsim function that can fail.
 *
 * A function that can fail returns a zs_status (0 on success, negative on
 * failure) and fills a caller-owned zs_err with what went wrong, where (file,
 * line, column, key, rank, op: whatever is known) and how to fix it. Outputs
 * are left untouched on failure. Only main() prints and exits; it maps the
 * code to the exit status (2 for bad input or usage, 1 for runtime failures).
 * Depends on nothing but libc. */
#ifndef ZS_ERR_H
#define ZS_ERR_H

#include <stdio.h>

typedef enum zs_status {
    ZS_OK = 0,
    ZS_EINPUT = -1,      /* bad input: config, trace, plan file, option value (exit 2) */
    ZS_EUSAGE = -2,      /* bad command line (exit 2) */
    ZS_EIO = -3,         /* a file could not be read or written (exit 1) */
    ZS_ENOMEM = -4,      /* allocation failed (exit 1) */
    ZS_ERUNTIME = -5,    /* a run failed: simulator, device, database (exit 1) */
    ZS_EINVALID = -6,    /* a plan or schedule violates an invariant (exit 1) */
    ZS_EUNSUPPORTED = -7 /* not available in this build or on this machine (exit 1) */
} zs_status;

typedef struct zs_err {
    int code;        /* a zs_status */
    char what[512];  /* what went wrong */
    char where[512]; /* file:line:col, key, rank/op; "" when not applicable */
    char fix[512];   /* how to fix it; "" when there is nothing to suggest */
} zs_err;

/* Clears e (e may be NULL). */
void zs_err_clear(zs_err *e);

/* Fills e (when not NULL) and returns code, so callers can write
 * `return zs_err_set(e, ZS_EINPUT, where, fix, "fmt", ...)`. where and fix
 * may be NULL. */
int zs_err_set(zs_err *e, int code, const char *where, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Prefixes e->where with "prefix: " (e.g. the file name around a line). */
void zs_err_prefix_where(zs_err *e, const char *prefix);

/* "<what>: <where>: <how to fix>" (empty parts left out) into buf. */
void zs_err_format(const zs_err *e, char *buf, size_t n);
/* Prints "zepsim: <what>: <where>: <how to fix>" (empty parts left out). */
void zs_err_print(FILE *out, const zs_err *e);

/* The process exit status for an error code: 0, 1 or 2. */
int zs_err_exit_code(int code);

/* A short stable name of a status ("input", "usage", ...). */
const char *zs_status_name(int code);

#endif

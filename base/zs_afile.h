/* Atomic output files: every file zepsim writes (plans, calibrations,
 * timelines, reports, plots) is written under a temporary name in the same
 * folder and renamed over the target only when everything was written and
 * flushed, so a failure (full disk, a killed process, an error half-way)
 * never leaves a truncated or empty file under the target's name, and a
 * reader never sees a half-written one. POSIX rename(2) is atomic within a
 * file system. Depends on zs_err only.
 *
 *     zs_afile a;
 *     if ((rc = zs_afile_open(&a, path, e))) return rc;
 *     fprintf(a.f, ...);
 *     return zs_afile_commit(&a, e);   // or zs_afile_abort(&a) on an error
 */
#ifndef ZS_AFILE_H
#define ZS_AFILE_H

#include <stddef.h>
#include <stdio.h>

#include "zs_err.h"

typedef struct zs_afile {
    FILE *f;         /* write here; NULL once committed or aborted */
    char path[4096]; /* the target */
    char tmp[4112];  /* the temporary name, "<path>.tmp-XXXXXX" */
} zs_afile;

/* Creates the temporary file (mode 0666 & ~umask, like fopen). ZS_EIO with
 * the path and the system's reason when it cannot. */
int zs_afile_open(zs_afile *a, const char *path, zs_err *e);
/* Checks for write errors, flushes to disk and renames onto the target;
 * on any failure removes the temporary file and returns ZS_EIO (a full
 * disk says so). The target is untouched on failure. */
int zs_afile_commit(zs_afile *a, zs_err *e);
/* Discards the temporary file (no-op after commit or abort). */
void zs_afile_abort(zs_afile *a);

/* Writes n bytes to path atomically. */
int zs_afile_write(const char *path, const void *buf, size_t n, zs_err *e);

#endif

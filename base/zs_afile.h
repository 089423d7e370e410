/* Atomic output files: every file zepsim writes (plans, calibrations,
 * timelines, reports, plots) is written under a temporary name in the same
 * folder and renamed over the target only when everything was written and
 * flushed, so a failure (full disk, a killed process, an error half-way)
 * never leaves a truncated or empty file under the target's name, and a
 * reader never sees a half-written one. POSIX rename(2) is atomic within a
 * file system. The temporary name is registered with zs_intr, so an
 * interrupt (SIGINT, SIGTERM, SIGHUP) removes it too. Depends on zs_err
 * and zs_intr only.
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
    FILE *f;                /* write here; NULL once committed or aborted (or reserved) */
    char path[4096];        /* the target */
    char tmp[4112];         /* the temporary name, "<path>.tmp-XXXXXX"; "" once done */
    struct zs_afile_io *io; /* f's descriptor and first write error (internal) */
    int intr;               /* zs_intr slot: the temporary is removed on SIGINT/SIGTERM */
} zs_afile;

/* Creates the temporary file (mode 0666 & ~umask, like fopen). ZS_EIO with
 * the path and the system's reason when it cannot. */
int zs_afile_open(zs_afile *a, const char *path, zs_err *e);
/* For a file another program writes (gnuplot renders the plots): creates
 * the temporary file as zs_afile_open does and closes it (a->f is NULL);
 * the program writes a->tmp, then zs_afile_commit renames it onto the
 * target, or zs_afile_abort removes it. */
int zs_afile_reserve(zs_afile *a, const char *path, zs_err *e);
/* Flushes what was written to disk without closing: ZS_EIO with the first
 * write error's reason (a full disk says so). Several files that belong
 * together (a report) are all flushed before any is committed. */
int zs_afile_flush(zs_afile *a, zs_err *e);
/* Checks for write errors, flushes to disk and renames onto the target;
 * on any failure removes the temporary file and returns ZS_EIO (a full
 * disk says so). The target is untouched on failure. */
int zs_afile_commit(zs_afile *a, zs_err *e);
/* Discards the temporary file (no-op after commit or abort). */
void zs_afile_abort(zs_afile *a);
/* Ends a write that failed with rc: the temporary file is removed, and when
 * the stream had a write error, e says why in the system's words (a full
 * disk as such) instead of the writer's generic message. Returns the code
 * to return. */
int zs_afile_fail(zs_afile *a, int rc, zs_err *e);

/* Writes n bytes to path atomically. */
int zs_afile_write(const char *path, const void *buf, size_t n, zs_err *e);

#endif

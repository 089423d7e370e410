/* Atomic output files: see zs_afile.h.
 *
 * The stream is a glibc cookie stream over the temporary file's descriptor
 * so that the first failed write keeps its errno: a stdio stream forgets
 * it, and "Input/output error" is no help when the disk is full. */
#define _GNU_SOURCE /* fopencookie */
#include "zs_afile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zs_fdio.h"
#include "zs_intr.h"

struct zs_afile_io {
    int fd;
    int err; /* errno of the first failed write, 0 when none */
};

static ssize_t io_write(void *cookie, const char *buf, size_t n)
{
    struct zs_afile_io *io = cookie;
    if (io->err)
        return 0;
    if (zs_write_all(io->fd, buf, n) != 0) {
        io->err = errno ? errno : EIO;
        return 0; /* fopencookie: 0 is the error return */
    }
    return (ssize_t)n;
}

static int io_close(void *cookie)
{
    struct zs_afile_io *io = cookie;
    int rc = close(io->fd);
    free(io);
    return rc;
}

static int io_error(zs_err *e, const char *path, int err, const char *doing)
{
    const char *fix = err == ENOSPC   ? "free space on the disk or write elsewhere"
                      : err == EACCES ? "check the folder's permissions"
                      : err == ENOENT ? "create the folder first"
                                      : NULL;
    return zs_err_set(e, ZS_EIO, path, fix, "cannot %s: %s", doing, strerror(err));
}

int zs_afile_open(zs_afile *a, const char *path, zs_err *e)
{
    memset(a, 0, sizeof *a);
    a->intr = -1;
    if (!path || !*path || strlen(path) >= sizeof a->path)
        return zs_err_set(e, ZS_EUSAGE, path ? path : "", "give a shorter, non-empty file name",
                          "bad output file name");
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp-XXXXXX", path);
    /* Interrupts wait until the new name is registered: one arriving in
     * between would leave the file behind. */
    sigset_t old;
    zs_intr_hold(&old);
    int fd = mkstemp(a->tmp);
    int mkerr = errno;
    if (fd >= 0)
        a->intr = zs_intr_track_file(a->tmp);
    zs_intr_release(&old);
    if (fd < 0) {
        a->tmp[0] = '\0';
        return io_error(e, path, mkerr, "create file");
    }
    /* mkstemp makes 0600; outputs are ordinary files (0666 & ~umask). */
    mode_t um = umask(0);
    umask(um);
    static const cookie_io_functions_t fns = {NULL, io_write, NULL, io_close};
    int err = fchmod(fd, 0666 & ~um) != 0 ? errno : 0;
    if (!err && !(a->io = calloc(1, sizeof *a->io)))
        err = ENOMEM;
    if (!err) {
        a->io->fd = fd;
        if (!(a->f = fopencookie(a->io, "w", fns)))
            err = errno ? errno : ENOMEM;
    }
    if (err) {
        free(a->io);
        a->io = NULL;
        close(fd);
        unlink(a->tmp);
        zs_intr_untrack(a->intr);
        a->intr = -1;
        a->tmp[0] = '\0';
        return io_error(e, path, err, "create file");
    }
    return ZS_OK;
}

int zs_afile_reserve(zs_afile *a, const char *path, zs_err *e)
{
    int rc = zs_afile_open(a, path, e);
    if (rc)
        return rc;
    fclose(a->f); /* nothing written: nothing can fail */
    a->f = NULL;
    a->io = NULL;
    return ZS_OK;
}

int zs_afile_flush(zs_afile *a, zs_err *e)
{
    if (!a->f)
        return ZS_OK;
    int err = fflush(a->f) != 0 || ferror(a->f) ? (a->io->err ? a->io->err : EIO) : 0;
    if (!err && fsync(a->io->fd) != 0)
        err = errno;
    return err ? io_error(e, a->path, err, "write file") : ZS_OK;
}

int zs_afile_commit(zs_afile *a, zs_err *e)
{
    if (!a->tmp[0])
        return zs_err_set(e, ZS_EIO, a->path, NULL, "file already closed");
    int err = 0;
    if (a->f) {
        zs_err ignored;
        if (zs_afile_flush(a, &ignored))
            err = a->io->err ? a->io->err : EIO;
        if (fclose(a->f) != 0 && !err)
            err = errno;
        a->f = NULL;
        a->io = NULL; /* freed by fclose */
    } else {          /* written by another program: on disk before the rename too */
        int fd = open(a->tmp, O_RDONLY);
        if (fd < 0 || fsync(fd) != 0)
            err = errno;
        if (fd >= 0)
            close(fd);
    }
    if (!err && rename(a->tmp, a->path) != 0)
        err = errno;
    if (err)
        unlink(a->tmp);
    zs_intr_untrack(a->intr); /* after the rename: the name is never unguarded */
    a->intr = -1;
    a->tmp[0] = '\0';
    return err ? io_error(e, a->path, err, "write file") : ZS_OK;
}

int zs_afile_fail(zs_afile *a, int rc, zs_err *e)
{
    if (a->f && (ferror(a->f) || a->io->err || fflush(a->f) != 0))
        return zs_afile_commit(a, e); /* fails: the stream is in error */
    zs_afile_abort(a);
    return rc;
}

void zs_afile_abort(zs_afile *a)
{
    if (a->f)
        fclose(a->f);
    a->f = NULL;
    a->io = NULL;
    if (a->tmp[0]) {
        unlink(a->tmp);
        zs_intr_untrack(a->intr);
    }
    a->intr = -1;
    a->tmp[0] = '\0';
}

int zs_afile_write(const char *path, const void *buf, size_t n, zs_err *e)
{
    zs_afile a;
    int rc = zs_afile_open(&a, path, e);
    if (rc)
        return rc;
    if (n)
        fwrite(buf, 1, n, a.f);
    return zs_afile_commit(&a, e);
}

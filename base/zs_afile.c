/* Atomic output files: see zs_afile.h. */
#include "zs_afile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    if (!path || !*path || strlen(path) >= sizeof a->path)
        return zs_err_set(e, ZS_EUSAGE, path ? path : "", "give a shorter, non-empty file name",
                          "bad output file name");
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(a->tmp);
    if (fd < 0)
        return io_error(e, path, errno, "create the file");
    /* mkstemp makes 0600; outputs are ordinary files (0666 & ~umask). */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um) != 0 || !(a->f = fdopen(fd, "w"))) {
        int err = errno;
        close(fd);
        unlink(a->tmp);
        return io_error(e, path, err, "create the file");
    }
    return ZS_OK;
}

int zs_afile_commit(zs_afile *a, zs_err *e)
{
    if (!a->f)
        return zs_err_set(e, ZS_EIO, a->path, NULL, "file already closed");
    int err = 0;
    if (ferror(a->f) || fflush(a->f) != 0)
        err = errno ? errno : EIO;
    if (!err && fsync(fileno(a->f)) != 0)
        err = errno;
    if (fclose(a->f) != 0 && !err)
        err = errno;
    a->f = NULL;
    if (!err && rename(a->tmp, a->path) != 0)
        err = errno;
    if (err) {
        unlink(a->tmp);
        return io_error(e, a->path, err, "write the file");
    }
    return ZS_OK;
}

void zs_afile_abort(zs_afile *a)
{
    if (!a->f)
        return;
    fclose(a->f);
    a->f = NULL;
    unlink(a->tmp);
}

int zs_afile_write(const char *path, const void *buf, size_t n, zs_err *e)
{
    zs_afile a;
    int rc = zs_afile_open(&a, path, e);
    if (rc)
        return rc;
    if (n && fwrite(buf, 1, n, a.f) != n) {
        int err = errno ? errno : EIO;
        zs_afile_abort(&a);
        return io_error(e, path, err, "write the file");
    }
    return zs_afile_commit(&a, e);
}

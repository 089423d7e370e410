/* Whole-buffer I/O: reads and writes on file descriptors, retried on EINTR
 * and short transfers (how worker processes ship plain-data results through
 * pipes), and reading a whole stream into memory (how configs, traces and
 * calibration inputs are loaded). POSIX only. */
#ifndef ZS_FDIO_H
#define ZS_FDIO_H

#include <stddef.h>
#include <stdio.h>

/* 0 when all n bytes were written, -1 otherwise. */
int zs_write_all(int fd, const void *buf, size_t n);
/* 1 when n bytes were read, 0 at end of file before any byte, -1 on an
 * error or a short read. */
int zs_read_all(int fd, void *buf, size_t n);

/* Reads f to its end into a new NUL-terminated buffer (*out, the caller
 * frees it) of *len bytes. Returns ZS_OK, ZS_ENOMEM, or ZS_EIO on a read
 * error; outputs untouched on failure; f stays open. */
int zs_read_stream(FILE *f, char **out, size_t *len);

#endif

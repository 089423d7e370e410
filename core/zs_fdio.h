/* Whole-buffer reads and writes on file descriptors, retried on EINTR and
 * short transfers: how worker processes (simulations in a child, compare and
 * experiment workers) ship plain-data results through pipes. POSIX only. */
#ifndef ZS_FDIO_H
#define ZS_FDIO_H

#include <stddef.h>

/* 0 when all n bytes were written, -1 otherwise. */
int zs_write_all(int fd, const void *buf, size_t n);
/* 1 when n bytes were read, 0 at end of file before any byte, -1 on an
 * error or a short read. */
int zs_read_all(int fd, void *buf, size_t n);

#endif

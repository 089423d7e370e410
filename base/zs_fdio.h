/* Whole-buffer I/O: reads and writes on file descriptors, retried on EINTR
 * and short transfers (how worker processes ship plain-data results through
 * pipes), and reading a whole stream into memory (how configs, traces,
 * calibration inputs, plans, timelines and specs are loaded), bounded by
 * one process-wide input limit so that no file, /dev/zero or an endless
 * pipe included, makes zepsim grow without bound. POSIX only; depends on
 * zs_err. */
#ifndef ZS_FDIO_H
#define ZS_FDIO_H

#include <stddef.h>
#include <stdio.h>

#include "zs_err.h"

/* 0 when all n bytes were written, -1 otherwise. */
int zs_write_all(int fd, const void *buf, size_t n);
/* 1 when n bytes were read, 0 at end of file before any byte, -1 on an
 * error or a short read. */
int zs_read_all(int fd, void *buf, size_t n);

/* The largest input zepsim reads whole, in bytes: 512 MiB unless changed
 * (a 4096-GPU plan dump is about 180 MB). The CLI sets it from the
 * environment variable ZEPSIM_MAX_INPUT_MB (docs/reliability.md). */
#define ZS_INPUT_LIMIT_DEFAULT ((size_t)512 << 20)
size_t zs_input_limit(void);
void zs_input_limit_set(size_t bytes);

/* Reads f to its end into a new NUL-terminated buffer (*out, the caller
 * frees it) of *len bytes. A stream larger than zs_input_limit() is
 * refused: a regular file by its size before anything is read, anything
 * else (a pipe, a device) as soon as one byte more than the limit arrived.
 * Returns ZS_OK, ZS_EINPUT (too large), ZS_ENOMEM, or ZS_EIO on a read
 * error; outputs untouched on failure; f stays open. */
int zs_read_stream(FILE *f, char **out, size_t *len);

/* Reads the file at path whole as zs_read_stream does ("-" is standard
 * input) and fills e naming path: ZS_EINPUT when it cannot be opened
 * (`open_fix` says what to do, NULL for "check the path") or is larger
 * than the limit (naming the limit and how to raise it), ZS_ENOMEM, ZS_EIO
 * on a read error. */
int zs_read_file(const char *path, const char *open_fix, char **out, size_t *len, zs_err *e);

/* Splits a buffer read whole into lines, in place: returns the next line
 * of *cur with its '\n' (and a '\r' before it) replaced by NUL and moves
 * *cur past it, or NULL at the end. Every line reader of measurement logs
 * uses it, so CRLF files read the same everywhere. */
char *zs_next_line(char **cur);

#endif

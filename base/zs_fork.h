/* Fork and return: runs a function in a child process and hands its status,
 * its zs_err and a plain-data result (bytes, no pointers) back to the
 * parent through a pipe. Used where one process cannot do the work twice
 * (SimGrid allows one platform per process: every simulation runs in a
 * child) and where work runs in parallel (the experiment runner starts one
 * child per point).
 *
 * The parent gets exactly what the function returned, or, when the child
 * died before sending it (a crash, a kill, the out-of-memory killer), a
 * ZS_ERUNTIME error naming the signal or exit status. Children die with
 * their parent (PR_SET_PDEATHSIG), so a killed run leaves no orphans.
 * Linux and libc only; depends on zs_err.
 *
 *     static int work(void *arg, zs_fork_buf *out, zs_err *e)
 *     {   ...; return zs_fork_buf_add(out, &result, sizeof result, e); }
 *
 *     zs_fork_buf res = {0};
 *     int rc = zs_fork_call("simulation", work, &arg, &res, NULL, e);
 *     ... zs_fork_buf_get(&res, &pos, &result, sizeof result) ...
 *     zs_fork_buf_free(&res);
 */
#ifndef ZS_FORK_H
#define ZS_FORK_H

#include <stddef.h>
#include <sys/types.h>

#include "zs_err.h"

/* A growable byte buffer: the child appends its result, the parent reads it
 * back in the same order. Zero-initialise before use. */
typedef struct zs_fork_buf {
    unsigned char *data;
    size_t n, cap;
} zs_fork_buf;

/* Appends n bytes (ZS_ENOMEM with e filled when out of memory). */
int zs_fork_buf_add(zs_fork_buf *b, const void *p, size_t n, zs_err *e);
/* Copies the next n bytes at *pos into p and advances *pos; -1 (nothing
 * copied) when fewer than n bytes are left. */
int zs_fork_buf_get(const zs_fork_buf *b, size_t *pos, void *p, size_t n);
void zs_fork_buf_free(zs_fork_buf *b);

/* Runs in the child: fills out with the result and returns a status,
 * filling e on failure (both are sent to the parent; out is dropped when
 * the status is not ZS_OK). */
typedef int (*zs_fork_fn)(void *arg, zs_fork_buf *out, zs_err *e);

/* A running child: poll `fd` (readable when the result arrives or the child
 * died), then zs_child_finish. */
typedef struct zs_child {
    pid_t pid;
    int fd;
    char what[64]; /* names the child in errors ("simulation", "point 3") */
    int intr;      /* zs_intr slot: on SIGINT/SIGTERM the child is stopped first */
} zs_child;

/* Resources the child used (from wait4). */
typedef struct zs_child_usage {
    double max_rss; /* peak resident set size, bytes */
    double cpu_s;   /* user + system CPU seconds */
} zs_child_usage;

/* Forks a child that runs fn(arg) and exits. Buffered stdio is flushed
 * first, so the child cannot repeat the parent's pending output. ZS_ERUNTIME
 * when no pipe or process can be made (c untouched). */
int zs_child_start(zs_child *c, const char *what, zs_fork_fn fn, void *arg, zs_err *e);

/* Reads the child's answer (blocking until it arrives or the child dies) and
 * reaps the child. Returns fn's status with fn's error in e, the result in
 * out (a zs_fork_buf the caller frees; left empty on failure), and the
 * child's resource use in u (may be NULL). A child that died without
 * answering is ZS_ERUNTIME: "the <what> process crashed (signal 11,
 * Segmentation fault)", "... was killed (signal 9, Killed: out of memory?)",
 * "... exited with status 3 without a result". */
int zs_child_finish(zs_child *c, zs_fork_buf *out, zs_child_usage *u, zs_err *e);

/* Stops the child and reaps it: for a parent that gives up. SIGTERM first,
 * so a child running zs_intr's handler removes its temporary files, then
 * SIGKILL after ZS_INTR_WAIT_MS. */
void zs_child_kill(zs_child *c);

/* zs_child_start then zs_child_finish. */
int zs_fork_call(const char *what, zs_fork_fn fn, void *arg, zs_fork_buf *out, zs_child_usage *u,
                 zs_err *e);

#endif

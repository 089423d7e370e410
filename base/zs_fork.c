/* Fork and return: see zs_fork.h.
 *
 * The child sends one message and exits: a header (magic, status, zs_err,
 * result size) followed by the result bytes. The parent reads the header,
 * then the bytes, then reaps the child; a header that never arrives means
 * the child died first, and its wait status says how. */
#include "zs_fork.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zs_fdio.h"
#include "zs_intr.h"

#define MSG_MAGIC 0x7a73666bu /* "zsfk" */
/* Far above any result zepsim ships (a 16K-rank simulation's is ~10 MB);
 * only a corrupted header would ask for more. */
#define MAX_RESULT ((uint64_t)1 << 36)

typedef struct msg_head {
    uint32_t magic;
    int32_t rc;
    zs_err err;
    uint64_t n;
} msg_head;

int zs_fork_buf_add(zs_fork_buf *b, const void *p, size_t n, zs_err *e)
{
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 2)
                return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "result too large");
            cap *= 2;
        }
        unsigned char *d = realloc(b->data, cap);
        if (!d)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory building a result");
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->n, p, n);
    b->n += n;
    return ZS_OK;
}

int zs_fork_buf_get(const zs_fork_buf *b, size_t *pos, void *p, size_t n)
{
    if (*pos > b->n || n > b->n - *pos)
        return -1;
    if (n)
        memcpy(p, b->data + *pos, n);
    *pos += n;
    return 0;
}

void zs_fork_buf_free(zs_fork_buf *b)
{
    if (!b)
        return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

static void child_main(int fd, pid_t parent, const sigset_t *mask, zs_fork_fn fn, void *arg)
{
    /* Die with the parent; if it is already gone, stop now. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    sigprocmask(SIG_SETMASK, mask, NULL); /* blocked by the parent around fork */
    msg_head h;
    memset(&h, 0, sizeof h);
    h.magic = MSG_MAGIC;
    zs_err_clear(&h.err);
    zs_fork_buf out = {0};
    h.rc = fn(arg, &out, &h.err);
    if (h.rc != ZS_OK)
        out.n = 0;
    h.n = out.n;
    int bad = zs_write_all(fd, &h, sizeof h) || zs_write_all(fd, out.data, out.n);
    close(fd);
    /* The child holds copies of the parent's stdio buffers (already
     * flushed) and resources: leave without running exit handlers. */
    _exit(bad ? 3 : 0);
}

int zs_child_start(zs_child *c, const char *what, zs_fork_fn fn, void *arg, zs_err *e)
{
    const char *name = what && *what ? what : "child";
    int fds[2];
    if (pipe(fds) != 0)
        return zs_err_set(e, ZS_ERUNTIME, name, "free some file descriptors",
                          "cannot create a pipe: %s", strerror(errno));
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    pid_t parent = getpid();
    /* Interrupts wait until the child is registered with zs_intr: one
     * arriving in between would leave a child its parent does not stop. */
    sigset_t old;
    zs_intr_hold(&old);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        zs_intr_release(&old);
        close(fds[0]);
        close(fds[1]);
        return zs_err_set(e, ZS_ERUNTIME, name, "free some processes or memory",
                          "cannot start a process: %s", strerror(err));
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fds[1], parent, &old, fn, arg);
    }
    c->intr = zs_intr_track_child(pid);
    zs_intr_release(&old);
    close(fds[1]);
    c->pid = pid;
    c->fd = fds[0];
    snprintf(c->what, sizeof c->what, "%s", name);
    return ZS_OK;
}

static void reap(zs_child *c, int *status, zs_child_usage *u)
{
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    *status = 0;
    while (wait4(c->pid, status, 0, &ru) < 0 && errno == EINTR)
        ;
    zs_intr_untrack(c->intr);
    c->intr = -1;
    zs_intr_reaped(c->pid); /* what a child that crashed was writing */
    if (u) {
        u->max_rss = (double)ru.ru_maxrss * 1024.0;
        u->cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
                   ru.ru_stime.tv_usec * 1e-6;
    }
    c->pid = -1;
}

/* Why a child that sent nothing (complete) ended. */
static int died(const zs_child *c, int status, zs_err *e)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        int killed = sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP;
        return zs_err_set(e, ZS_ERUNTIME, c->what,
                          sig == SIGKILL ? "the kernel's out-of-memory killer sends SIGKILL: "
                                           "check memory, or run fewer jobs at once"
                                         : NULL,
                          "the %s process %s (signal %d, %s)", c->what,
                          killed ? "was killed" : "crashed", sig, strsignal(sig));
    }
    return zs_err_set(e, ZS_ERUNTIME, c->what, NULL,
                      "the %s process exited with status %d without a result", c->what,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int zs_child_finish(zs_child *c, zs_fork_buf *out, zs_child_usage *u, zs_err *e)
{
    msg_head h;
    zs_fork_buf b = {0};
    int ok = zs_read_all(c->fd, &h, sizeof h) == 1 && h.magic == MSG_MAGIC && h.n <= MAX_RESULT;
    int nomem = 0;
    if (ok && h.n > 0) {
        b.data = malloc((size_t)h.n);
        nomem = !b.data;
        ok = b.data && zs_read_all(c->fd, b.data, (size_t)h.n) == 1;
        b.n = b.cap = ok ? (size_t)h.n : 0;
    }
    close(c->fd);
    c->fd = -1;
    if (nomem)
        kill(c->pid, SIGKILL); /* it may be blocked writing the rest */
    int status;
    reap(c, &status, u);
    if (nomem) {
        free(b.data);
        return zs_err_set(e, ZS_ENOMEM, c->what, NULL, "out of memory reading a result");
    }
    if (!ok) {
        free(b.data);
        return died(c, status, e);
    }
    if (h.rc != ZS_OK) {
        free(b.data);
        if (e)
            *e = h.err;
        return h.rc;
    }
    if (out)
        *out = b;
    else
        free(b.data);
    return ZS_OK;
}

void zs_child_kill(zs_child *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    if (c->pid > 0) {
        kill(c->pid, SIGTERM);
        struct timespec tick = {0, 10 * 1000 * 1000};
        int status;
        for (int waited = 0; waitpid(c->pid, &status, WNOHANG) == 0; waited += 10) {
            if (waited >= ZS_INTR_WAIT_MS) {
                kill(c->pid, SIGKILL);
                break;
            }
            nanosleep(&tick, NULL);
        }
        reap(c, &status, NULL);
    }
}

int zs_fork_call(const char *what, zs_fork_fn fn, void *arg, zs_fork_buf *out, zs_child_usage *u,
                 zs_err *e)
{
    zs_child c;
    int rc = zs_child_start(&c, what, fn, arg, e);
    return rc ? rc : zs_child_finish(&c, out, u, e);
}

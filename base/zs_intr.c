/* Interrupts: see zs_intr.h.
 *
 * The table of files is shared by every process of a command (an
 * anonymous shared mapping made by zs_intr_install, inherited by each
 * fork): each process removes its own files when a signal ends it, and
 * the command's process removes all that are left, so a child that could
 * not clean up (one the out-of-memory killer or a SIGKILL ended, one too
 * slow to answer) leaves nothing either. zs_child_finish frees a dead
 * child's entries the same way (zs_intr_reaped).
 *
 * A slot is free (0), being filled or emptied (1), or live (2); only a
 * live slot whose owner is this process is acted on, and a slot is made
 * live only once its path or pid is complete, so the handler never reads
 * a half-written entry, whichever thread it interrupts. */
#include "zs_intr.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NFILES   256
#define NKIDS    256
#define PATH_CAP 4112 /* zs_afile's temporary names */

typedef struct {
    atomic_int state;
    pid_t owner;
    char path[PATH_CAP];
} file_slot;

typedef struct {
    atomic_int state;
    pid_t owner;
    pid_t pid;
} kid_slot;

static file_slot own_files[NFILES]; /* until zs_intr_install shares one */
static file_slot *files = own_files;
static kid_slot kids[NKIDS];
static pid_t main_pid;              /* the process that prints the line; 0: none installed */
static int to_tty;                  /* stderr is a terminal: clear the progress line first */
static atomic_long pts_stored = -1; /* -1: not a command that stores points */
static atomic_long pts_total;

static int claim(atomic_int *state)
{
    int want = 0;
    return atomic_compare_exchange_strong(state, &want, 1);
}

int zs_intr_track_file(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (!n || n >= PATH_CAP)
        return -1;
    for (int i = 0; i < NFILES; i++)
        if (claim(&files[i].state)) {
            memcpy(files[i].path, path, n + 1);
            files[i].owner = getpid();
            atomic_store(&files[i].state, 2);
            return i;
        }
    return -1;
}

int zs_intr_track_child(pid_t pid)
{
    for (int i = 0; i < NKIDS; i++)
        if (claim(&kids[i].state)) {
            kids[i].pid = pid;
            kids[i].owner = getpid();
            atomic_store(&kids[i].state, 2);
            return NFILES + i;
        }
    return -1;
}

void zs_intr_untrack(int slot)
{
    atomic_int *st = slot >= 0 && slot < NFILES                ? &files[slot].state
                     : slot >= NFILES && slot < NFILES + NKIDS ? &kids[slot - NFILES].state
                                                               : NULL;
    if (!st)
        return;
    atomic_store(st, 1);
    atomic_store(st, 0);
}

void zs_intr_points(long stored, long total)
{
    atomic_store(&pts_total, total);
    atomic_store(&pts_stored, stored);
}

void zs_intr_points_stored(long stored)
{
    atomic_store(&pts_stored, stored);
}

/* Async-signal-safe appends (no stdio in a handler). */
static size_t put(char *buf, size_t n, size_t at, const char *s)
{
    while (*s && at + 1 < n)
        buf[at++] = *s++;
    buf[at < n ? at : n - 1] = '\0';
    return at;
}

static size_t put_long(char *buf, size_t n, size_t at, long v)
{
    char d[24];
    int k = 0;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    do
        d[k++] = (char)('0' + u % 10);
    while ((u /= 10) && k < 23);
    if (v < 0)
        d[k++] = '-';
    char s[25];
    for (int i = 0; i < k; i++)
        s[i] = d[k - 1 - i];
    s[k] = '\0';
    return put(buf, n, at, s);
}

void zs_intr_hold(sigset_t *old)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, old);
}

void zs_intr_release(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

size_t zs_intr_message(int sig, char *buf, size_t n)
{
    if (!n)
        return 0;
    buf[0] = '\0';
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    size_t at = put(buf, n, 0, "zepsim: interrupted (");
    at = put(buf, n, at, name);
    long stored = atomic_load(&pts_stored);
    if (stored >= 0) {
        at = put(buf, n, at, "): ");
        at = put_long(buf, n, at, stored);
        at = put(buf, n, at, " of ");
        at = put_long(buf, n, at, atomic_load(&pts_total));
        at = put(buf, n, at, " points stored; rerun to resume\n");
    } else {
        at = put(buf, n, at, "): unfinished output files removed\n");
    }
    return at;
}

/* Asks this process's children to clean up and die, and waits for them
 * (they run this same handler), SIGKILL after ZS_INTR_WAIT_MS. */
static void stop_children(pid_t self)
{
    int any = 0;
    for (int i = 0; i < NKIDS; i++)
        if (atomic_load(&kids[i].state) == 2 && kids[i].owner == self) {
            kill(kids[i].pid, SIGTERM);
            any = 1;
        }
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int waited = 0; any && waited <= ZS_INTR_WAIT_MS; waited += 10) {
        any = 0;
        for (int i = 0; i < NKIDS; i++) {
            if (atomic_load(&kids[i].state) != 2 || kids[i].owner != self)
                continue;
            int status;
            pid_t got = waitpid(kids[i].pid, &status, WNOHANG);
            if (got == kids[i].pid || (got < 0 && errno == ECHILD))
                atomic_store(&kids[i].state, 0);
            else if (waited >= ZS_INTR_WAIT_MS)
                kill(kids[i].pid, SIGKILL);
            else
                any = 1;
        }
        if (any)
            nanosleep(&tick, NULL);
    }
}

static void on_signal(int sig)
{
    int saved = errno;
    pid_t self = getpid();
    stop_children(self);
    /* the command's process removes every file left, its children's too */
    for (int i = 0; i < NFILES; i++)
        if (atomic_load(&files[i].state) == 2 && (files[i].owner == self || self == main_pid))
            unlink(files[i].path);
    if (self == main_pid) {
        char line[160];
        size_t at = 0;
        if (to_tty)
            at = put(line, sizeof line, 0, "\r\033[K");
        at += zs_intr_message(sig, line + at, sizeof line - at);
        ssize_t w = write(STDERR_FILENO, line, at);
        (void)w;
    }
    /* Die of the same signal: the shell and a parent see 130 / 143. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    errno = saved;
}

void zs_intr_reaped(pid_t pid)
{
    for (int i = 0; i < NFILES; i++)
        if (atomic_load(&files[i].state) == 2 && files[i].owner == pid) {
            unlink(files[i].path);
            zs_intr_untrack(i);
        }
}

void zs_intr_install(void)
{
    main_pid = getpid();
    void *m = mmap(NULL, sizeof(file_slot) * NFILES, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) /* zero-filled: every slot free */
        files = m;
    to_tty = isatty(STDERR_FILENO);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGHUP);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        struct sigaction old;
        /* a signal the caller ignores (nohup, a background job) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

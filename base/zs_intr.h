/* Interrupts: what SIGINT, SIGTERM and SIGHUP do to a zepsim process.
 *
 * Without a handler a signal ends the process where it stands, leaving the
 * temporary files of zs_afile behind (a timeline's can be hundreds of MB)
 * and the user without a word. With zs_intr_install, every process (the
 * command's and every worker it forks, which inherit the handler) removes
 * what it was writing, asks its own live children to do the same and waits
 * for them briefly, and then dies of the same signal, so the shell still
 * sees 130 / 143. The process that installed the handler also prints one
 * line on stderr saying so ("zepsim: interrupted (SIGINT): unfinished
 * output files removed", or, with zs_intr_points, how many points are
 * stored and that a rerun resumes).
 *
 * The registries are fixed tables of lock-free slots, each tagged with the
 * process that filled it, so a forked child never removes its parent's
 * files or signals its parent's other children. The files' table is
 * shared by the command's processes, so the command's process removes
 * what a child could not (one killed by SIGKILL). The handler only makes
 * async-signal-safe calls (kill, waitpid, nanosleep, unlink, write).
 * Depends on libc only. */
#ifndef ZS_INTR_H
#define ZS_INTR_H

#include <signal.h>
#include <sys/types.h>

/* Installs the handlers in this process (the one that prints the line).
 * Called once by main; a process without it dies of signals as before. */
void zs_intr_install(void);

/* Registers a temporary file this process is writing: removed if a signal
 * ends the process. Returns a slot for zs_intr_untrack, or -1 when the
 * table is full (then the file is not removed on a signal). */
int zs_intr_track_file(const char *path);
/* Registers a child this process started: sent SIGTERM and waited for
 * (up to ZS_INTR_WAIT_MS, then SIGKILL) before this process dies of a
 * signal, so the child removes its own temporary files first. */
int zs_intr_track_child(pid_t pid);
/* Forgets a slot (a file committed or removed, a child reaped); -1 is
 * ignored. */
void zs_intr_untrack(int slot);
/* After a child was reaped: removes the files it registered and left
 * (it crashed or was killed before it could). */
void zs_intr_reaped(pid_t pid);

/* Holds SIGINT, SIGTERM and SIGHUP back (the mask before goes into *old)
 * while something is created and registered, so that no signal falls in
 * between; zs_intr_release(old) lets them through again. */
void zs_intr_hold(sigset_t *old);
void zs_intr_release(const sigset_t *old);

/* How long a process waits for its children to clean up after a signal. */
#define ZS_INTR_WAIT_MS 3000

/* For a command that stores points (experiment run): the line becomes
 * "interrupted (SIGINT): STORED of TOTAL points stored; rerun to resume".
 * Call zs_intr_points once with the totals, then zs_intr_points_stored
 * after every point stored. */
void zs_intr_points(long stored, long total);
void zs_intr_points_stored(long stored);

/* The line the handler prints, for sig: for tests (buf of n bytes, always
 * terminated; returns its length). */
size_t zs_intr_message(int sig, char *buf, size_t n);

#endif

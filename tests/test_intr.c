/* base/zs_intr (issue 35 item 1): a process ended by SIGINT / SIGTERM
 * removes the temporary files of its zs_afile writes and its children's,
 * says so in one line, and dies of the signal; a parent that gives up on
 * a child (zs_child_kill) lets it clean up first, and one that reaps a
 * child killed outright removes what it left. Before, every one of these
 * left a "<file>.tmp-XXXXXX" behind and printed nothing. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zs_afile.h"
#include "zs_fork.h"
#include "zs_intr.h"
#include "zs_test.h"

/* Files in dir whose name holds ".tmp-". */
static int temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += strstr(de->d_name, ".tmp-") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void wait_for(const char *dir, int n)
{
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 1000 && temporaries(dir) < n; i++)
        nanosleep(&tick, NULL);
}

static void fresh_dir(char *dir, size_t n, const char *name)
{
    snprintf(dir, n, "%s/%s", zs_test_tmpdir(), name);
    mkdir(dir, 0777);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*", dir);
    CU_ASSERT(system(cmd) == 0);
}

/* A child's work: writes a file it never finishes. */
static int writer(void *p, zs_fork_buf *out, zs_err *e)
{
    (void)out;
    char path[4200];
    snprintf(path, sizeof path, "%s/child.json", (const char *)p);
    zs_afile a;
    if (zs_afile_open(&a, path, e))
        return e->code;
    fputs("{\"partial\":", a.f);
    fflush(a.f);
    for (;;)
        pause();
}

static void test_message(void)
{
    char line[200];
    zs_intr_message(SIGINT, line, sizeof line);
    ZS_ASSERT_STR_EQ(line, "zepsim: interrupted (SIGINT): unfinished output files removed\n");
    zs_intr_points(3, 8);
    zs_intr_points_stored(4);
    zs_intr_message(SIGTERM, line, sizeof line);
    ZS_ASSERT_STR_EQ(line,
                     "zepsim: interrupted (SIGTERM): 4 of 8 points stored; rerun to resume\n");
    zs_intr_points(-1, 0);
    /* a short buffer is cut, still terminated */
    ZS_ASSERT_INT_EQ(zs_intr_message(SIGINT, line, 8), 7);
    ZS_ASSERT_STR_EQ(line, "zepsim:");
}

/* The command's process writes a file and runs a child that writes
 * another; SIGTERM to the command's process alone removes both. */
static void run_and_signal(int sig)
{
    char dir[4200], err[4300];
    fresh_dir(dir, sizeof dir, sig == SIGINT ? "intr-int" : "intr-term");
    snprintf(err, sizeof err, "%s.err", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        dup2(fd, 2);
        zs_intr_install();
        zs_err e;
        char path[4300];
        snprintf(path, sizeof path, "%s/own.json", dir);
        zs_afile a;
        zs_child c;
        if (zs_afile_open(&a, path, &e) || zs_child_start(&c, "writer", writer, dir, &e))
            _exit(9);
        fputs("[1,2", a.f);
        for (;;)
            pause();
    }
    wait_for(dir, 2);
    ZS_ASSERT_INT_EQ(temporaries(dir), 2);
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == sig);
    ZS_ASSERT_INT_EQ(temporaries(dir), 0);
    char buf[300] = "";
    FILE *f = fopen(err, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    ZS_ASSERT_STR_CONTAINS(buf, sig == SIGINT ? "zepsim: interrupted (SIGINT)"
                                              : "zepsim: interrupted (SIGTERM)");
}

static void test_sigterm(void)
{
    run_and_signal(SIGTERM);
}

static void test_sigint(void)
{
    run_and_signal(SIGINT);
}

/* zs_child_kill: a child with the handler (inherited) removes its file. */
static void test_child_kill(void)
{
    char dir[4200];
    fresh_dir(dir, sizeof dir, "intr-kill");
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        zs_intr_install();
        zs_err e;
        zs_child c;
        if (zs_child_start(&c, "writer", writer, dir, &e))
            _exit(9);
        wait_for(dir, 1);
        zs_child_kill(&c);
        _exit(temporaries(dir) == 0 && c.pid == -1 ? 0 : 8);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ZS_ASSERT_INT_EQ(temporaries(dir), 0);
}

/* A child that cannot clean up (SIGKILL, as the out-of-memory killer
 * sends): its parent removes what it was writing when it reaps it. */
static void test_killed_child(void)
{
    char dir[4200];
    fresh_dir(dir, sizeof dir, "intr-killed");
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        zs_intr_install();
        zs_err e;
        zs_child c;
        if (zs_child_start(&c, "writer", writer, dir, &e))
            _exit(9);
        wait_for(dir, 1);
        int had = temporaries(dir);
        kill(c.pid, SIGKILL);
        int rc = zs_child_finish(&c, NULL, NULL, &e);
        _exit(had == 1 && rc == ZS_ERUNTIME && temporaries(dir) == 0 ? 0 : 8);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ZS_ASSERT_INT_EQ(temporaries(dir), 0);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"message", test_message},
                                         {"sigterm", test_sigterm},
                                         {"sigint", test_sigint},
                                         {"child_kill", test_child_kill},
                                         {"killed_child", test_killed_child},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"intr", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

/* base/zs_fork: a child's result, its error, and every way a child can end
 * without answering (crash, kill, plain exit), each with its message; and
 * several children in flight at once, finished out of order. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "zs_fork.h"
#include "zs_test.h"

typedef struct arg {
    int how; /* what the child does */
    int value;
} arg;

enum { OK_ANSWER, FAIL, ABORT, KILL_SELF, EXIT_5, BIG };

static int child(void *p, zs_fork_buf *out, zs_err *e)
{
    const arg *a = p;
    switch (a->how) {
    case OK_ANSWER: {
        int v[3] = {a->value, a->value * 2, (int)getpid()};
        return zs_fork_buf_add(out, v, sizeof v, e);
    }
    case FAIL:
        zs_fork_buf_add(out, "dropped", 7, e);
        return zs_err_set(e, ZS_EINPUT, "here", "do that", "bad thing %d", a->value);
    case ABORT:
        abort();
    case KILL_SELF:
        kill(getpid(), SIGKILL);
        pause();
        return 0;
    case EXIT_5:
        _exit(5);
    default: { /* BIG: more than a pipe holds, so the parent must read while it writes */
        for (int i = 0; i < 1 << 18; i++)
            if (zs_fork_buf_add(out, &i, sizeof i, e))
                return e->code;
        return ZS_OK;
    }
    }
}

static void test_result_and_error(void)
{
    zs_err e;
    zs_fork_buf b = {0};
    arg a = {OK_ANSWER, 21};
    zs_child_usage u = {-1, -1};
    ZS_ASSERT_OK(zs_fork_call("test", child, &a, &b, &u, &e), &e);
    int v[3];
    size_t pos = 0;
    ZS_ASSERT_INT_EQ(b.n, sizeof v);
    ZS_ASSERT_INT_EQ(zs_fork_buf_get(&b, &pos, v, sizeof v), 0);
    ZS_ASSERT_INT_EQ(v[0], 21);
    ZS_ASSERT_INT_EQ(v[1], 42);
    CU_ASSERT(v[2] != getpid());                           /* it really ran elsewhere */
    ZS_ASSERT_INT_EQ(zs_fork_buf_get(&b, &pos, v, 1), -1); /* nothing left */
    CU_ASSERT(u.max_rss > 0);
    CU_ASSERT(u.cpu_s >= 0);
    zs_fork_buf_free(&b);
    zs_fork_buf_free(&b); /* a freed buffer frees again as a no-op */

    /* The function's own error comes back as it was, and no result. */
    a = (arg){FAIL, 7};
    b = (zs_fork_buf){0};
    ZS_ASSERT_INT_EQ(zs_fork_call("test", child, &a, &b, NULL, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "bad thing 7");
    ZS_ASSERT_STR_CONTAINS(e.where, "here");
    ZS_ASSERT_STR_CONTAINS(e.fix, "do that");
    CU_ASSERT(b.data == NULL && b.n == 0);

    /* A result larger than a pipe's buffer. */
    a = (arg){BIG, 0};
    ZS_ASSERT_OK(zs_fork_call("test", child, &a, &b, NULL, &e), &e);
    ZS_ASSERT_INT_EQ(b.n, (1 << 18) * sizeof(int));
    int last;
    pos = b.n - sizeof last;
    zs_fork_buf_get(&b, &pos, &last, sizeof last);
    ZS_ASSERT_INT_EQ(last, (1 << 18) - 1);
    zs_fork_buf_free(&b);
}

static void test_child_deaths(void)
{
    zs_err e;
    zs_fork_buf b = {0};
    arg a = {ABORT, 0};
    ZS_ASSERT_INT_EQ(zs_fork_call("simulation", child, &a, &b, NULL, &e), ZS_ERUNTIME);
    ZS_ASSERT_STR_CONTAINS(e.what, "the simulation process crashed (signal 6");
    a.how = KILL_SELF;
    ZS_ASSERT_INT_EQ(zs_fork_call("simulation", child, &a, &b, NULL, &e), ZS_ERUNTIME);
    ZS_ASSERT_STR_CONTAINS(e.what, "was killed (signal 9");
    ZS_ASSERT_STR_CONTAINS(e.fix, "out-of-memory");
    a.how = EXIT_5;
    ZS_ASSERT_INT_EQ(zs_fork_call("point 3", child, &a, &b, NULL, &e), ZS_ERUNTIME);
    ZS_ASSERT_STR_CONTAINS(e.what, "the point 3 process exited with status 5 without a result");
    CU_ASSERT(b.data == NULL);
}

/* Several children at once, finished in another order than started (as
 * the runner does), and one given up on. */
static void test_several(void)
{
    zs_err e;
    zs_child c[4];
    arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (arg){OK_ANSWER, i + 1};
        ZS_ASSERT_OK(zs_child_start(&c[i], "w", child, &a[i], &e), &e);
    }
    for (int i = 2; i >= 0; i--) {
        zs_fork_buf b = {0};
        ZS_ASSERT_OK(zs_child_finish(&c[i], &b, NULL, &e), &e);
        int v[3];
        size_t pos = 0;
        zs_fork_buf_get(&b, &pos, v, sizeof v);
        ZS_ASSERT_INT_EQ(v[0], i + 1);
        zs_fork_buf_free(&b);
    }
    zs_child_kill(&c[3]);
    ZS_ASSERT_INT_EQ(c[3].pid, -1);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"result_and_error", test_result_and_error},
                                         {"child_deaths", test_child_deaths},
                                         {"several", test_several},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"fork", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

/* `zepsim hw` end to end without a GPU: usage errors exit 2, every
 * subcommand that needs a GPU says why and exits 1 (no GPU, or a build
 * without CUDA), and `hw run --check-only` prepares a dumped plan on the
 * CPU. On a machine with a GPU the "no GPU" cases are skipped (the GPU
 * tests cover them). */
#include <stdlib.h>

#include "zs_hw.h"
#include "zs_hw_info.h"
#include "zs_test.h"

static char out[65536];

static int zepsim(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s", zs_test_zepsim(), args);
    return zs_test_run(cmd, out, sizeof out);
}

static int have_gpu(void)
{
    int n = 0;
    zs_err e;
    return zs_hw_devices(&n, NULL, 0, &e) == ZS_OK;
}

/* A two-rank plan: attention, a ring exchange, a GEMM, an all-reduce, and
 * an activation offload (a d2h copy and its h2d back, on their own
 * stream), which the hw backend runs as copies to pinned host memory. */
static const char *write_plan(void)
{
    zs_schedule *s = zs_schedule_new(2);
    snprintf(s->model, sizeof s->model, "llama-7b");
    const int32_t len[] = {256};
    zs_schedule_set_docs(s, len, 1);
    int both[] = {0, 1};
    int g = zs_schedule_group(s, both, 2);
    int off = zs_schedule_add_stream(s, "offload");
    for (int r = 0; r < 2; r++) {
        zs_attn_block b = {0, 0, 256, 0, 256};
        int64_t a = zs_sched_attn(s, r, 0, "attn", 0, &b, 1, 32, 1e-4, NULL, 0);
        zs_sched_send(s, r, 1, "ring-kv", 1 - r, 0, 1 << 20, &a, 1);
        zs_sched_recv(s, r, 1, "ring-kv", 1 - r, 0, 1 << 20, NULL, 0);
        zs_sched_gemm(s, r, 0, "qkv", 256, 12288, 4096, 1e-4, NULL, 0);
        zs_sched_coll(s, r, 1, "grad", g, ZS_COLL_ALLREDUCE, 1 << 22, NULL, 0);
        int64_t d = zs_sched_host_copy(s, r, off, "offload-d2h", 1, 1 << 24, 1e-3, &a, 1);
        zs_sched_host_copy(s, r, off, "offload-h2d", 0, 1 << 24, 1e-3, &d, 1);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/plan2.json", zs_test_tmpdir());
    zs_err e;
    int rc = zs_schedule_dump_file(s, path, &e);
    zs_schedule_free(s);
    if (rc)
        zs_err_print(stderr, &e);
    static char keep[512];
    snprintf(keep, sizeof keep, "%s", path);
    return rc ? NULL : keep;
}

static void test_usage_errors(void)
{
    ZS_ASSERT_INT_EQ(zepsim("hw"), 2);
    ZS_ASSERT_INT_EQ(zepsim("hw frobnicate"), 2);
    ZS_ASSERT_STR_CONTAINS(out, "unknown subcommand 'frobnicate'");
    ZS_ASSERT_INT_EQ(zepsim("hw run"), 2);
    ZS_ASSERT_INT_EQ(zepsim("hw run --iters 0 x.json"), 2);
    ZS_ASSERT_INT_EQ(zepsim("hw run --rank 1 x.json"), 2);
    ZS_ASSERT_INT_EQ(zepsim("hw run /nonexistent/plan.json"), 2);
    ZS_ASSERT_STR_CONTAINS(out, "/nonexistent/plan.json");
    ZS_ASSERT_INT_EQ(zepsim("hw bench --model no-such-model"), 2);
    ZS_ASSERT_STR_CONTAINS(out, "llama-7b");
    ZS_ASSERT_INT_EQ(zepsim("hw --help"), 0);
    ZS_ASSERT_STR_CONTAINS(out, "hw run PLAN.json");
}

static void test_no_gpu_fails_cleanly(void)
{
    if (have_gpu()) {
        printf("skipping: a GPU is visible (the GPU tests cover this machine)\n");
        return;
    }
    const char *plan = write_plan();
    CU_ASSERT_FATAL(plan != NULL);
    const char *why = zs_hw_built() ? "no GPU is visible" : "backend was not built";
    char args[1024];
    const char *cmds[] = {"hw devices", "hw check", "hw bench --quick", NULL};
    for (int i = 0; cmds[i]; i++) {
        ZS_ASSERT_INT_EQ(zepsim(cmds[i]), 1);
        ZS_ASSERT_STR_CONTAINS(out, why);
        ZS_ASSERT_STR_CONTAINS(out, "zepsim: ");
    }
    snprintf(args, sizeof args, "hw run %s", plan);
    ZS_ASSERT_INT_EQ(zepsim(args), 1);
    ZS_ASSERT_STR_CONTAINS(out, why);
}

static void test_check_only(void)
{
    const char *plan = write_plan();
    CU_ASSERT_FATAL(plan != NULL);
    char args[1024];
    snprintf(args, sizeof args, "hw run --check-only --format csv %s", plan);
    ZS_ASSERT_INT_EQ(zepsim(args), 0);
    ZS_ASSERT_STR_CONTAINS(out, "unrolled_ops,14,ops");
    ZS_ASSERT_STR_CONTAINS(out, "streams,3,");
    ZS_ASSERT_STR_CONTAINS(out, "p2p_lanes,1,");
    ZS_ASSERT_STR_CONTAINS(out, "attn_rows_max,256,");
    ZS_ASSERT_STR_CONTAINS(out, "coll_max,4194304,");
    /* the offloaded activations: one device and one pinned host buffer */
    ZS_ASSERT_STR_CONTAINS(out, "host_copy_max,16777216,");
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"usage_errors", test_usage_errors},
                                         {"no_gpu_fails_cleanly", test_no_gpu_fails_cleanly},
                                         {"check_only", test_check_only},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"hw_cli", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

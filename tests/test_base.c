/* base/: the strict number parsers, atomic output files and bounded input. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zs_afile.h"
#include "zs_fdio.h"
#include "zs_num.h"
#include "zs_test.h"

static void test_num_int(void)
{
    zs_err e;
    int64_t v = 7;
    ZS_ASSERT_OK(zs_num_i64("-12", -100, 100, ZS_EUSAGE, "--x", &v, &e), &e);
    ZS_ASSERT_INT_EQ(v, -12);
    static const char *bad[] = {
        "", " 1", "1 ", "1x", "0x10", "101", "-101", "9223372036854775808", "1e3", "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 7;
        ZS_ASSERT_INT_EQ(zs_num_i64(bad[i], -100, 100, ZS_EUSAGE, "--x", &v, &e), ZS_EUSAGE);
        ZS_ASSERT_INT_EQ(v, 7); /* untouched */
        ZS_ASSERT_STR_CONTAINS(e.where, "--x");
        ZS_ASSERT_STR_CONTAINS(e.fix, "[-100, 100]");
    }
    ZS_ASSERT_INT_EQ(zs_num_i64(NULL, 0, 1, ZS_EINPUT, "f", &v, &e), ZS_EINPUT);
}

/* The seed bug: strtoull accepts "-1" and saturates 2^64. */
static void test_num_unsigned(void)
{
    zs_err e;
    uint64_t v = 3;
    ZS_ASSERT_OK(zs_num_u64("18446744073709551615", 0, UINT64_MAX, ZS_EUSAGE, "--seed", &v, &e),
                 &e);
    CU_ASSERT(v == UINT64_MAX);
    static const char *bad[] = {"-1", "+1", "18446744073709551616", "-0", " 5", "5 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 3;
        ZS_ASSERT_INT_EQ(zs_num_u64(bad[i], 0, UINT64_MAX, ZS_EUSAGE, "--seed", &v, &e), ZS_EUSAGE);
        ZS_ASSERT_INT_EQ(v, 3);
    }
}

static void test_num_real(void)
{
    zs_err e;
    double v = 0;
    ZS_ASSERT_OK(zs_num_f64("2.5e-3", 0, 1, ZS_EINPUT, "x", &v, &e), &e);
    ZS_ASSERT_NEAR(v, 2.5e-3, 0);
    static const char *bad[] = {"nan", "inf", "-inf", "1e400", "2", "", "0.5x", " 0.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ZS_ASSERT_INT_EQ(zs_num_f64(bad[i], 0, 1, ZS_EINPUT, "x", &v, &e), ZS_EINPUT);
    ZS_ASSERT_OK(zs_num_check_f64(1.0, 0, 1, ZS_EINVALID, "t", &e), &e);
    ZS_ASSERT_INT_EQ(zs_num_check_f64(NAN, 0, 1e300, ZS_EINVALID, "t", &e), ZS_EINVALID);
    ZS_ASSERT_INT_EQ(zs_num_check_f64(INFINITY, 0, INFINITY, ZS_EINVALID, "t", &e), ZS_EINVALID);
}

static int count_files(const char *dir)
{
    char cmd[600], out[64];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    zs_test_run(cmd, out, sizeof out);
    return atoi(out);
}

static void test_afile(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/afile", zs_test_tmpdir());
    mkdir(dir, 0777);
    char path[600];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    unlink(path);
    zs_err e;
    /* An aborted write leaves nothing, not even an empty target. */
    zs_afile a;
    ZS_ASSERT_OK(zs_afile_open(&a, path, &e), &e);
    fputs("half", a.f);
    zs_afile_abort(&a);
    CU_ASSERT(access(path, F_OK) != 0);
    ZS_ASSERT_INT_EQ(count_files(dir), 0);
    /* A committed one replaces the old content whole. */
    ZS_ASSERT_OK(zs_afile_write(path, "one\n", 4, &e), &e);
    ZS_ASSERT_OK(zs_afile_open(&a, path, &e), &e);
    fputs("two\n", a.f);
    char *mid = zs_test_slurp(path);
    ZS_ASSERT_STR_CONTAINS(mid, "one"); /* readers see the old file until the rename */
    free(mid);
    ZS_ASSERT_OK(zs_afile_commit(&a, &e), &e);
    char *txt = zs_test_slurp(path);
    ZS_ASSERT_STR_CONTAINS(txt, "two");
    free(txt);
    ZS_ASSERT_INT_EQ(count_files(dir), 1);
    /* Reserved for another program (gnuplot): it writes the temporary name,
     * the target appears only on commit; an abort leaves nothing. */
    ZS_ASSERT_OK(zs_afile_reserve(&a, path, &e), &e);
    CU_ASSERT_PTR_NULL(a.f);
    FILE *other = fopen(a.tmp, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    fputs("three\n", other);
    fclose(other);
    txt = zs_test_slurp(path);
    ZS_ASSERT_STR_CONTAINS(txt, "two");
    free(txt);
    ZS_ASSERT_OK(zs_afile_commit(&a, &e), &e);
    zs_afile_abort(&a); /* no-op after a commit */
    txt = zs_test_slurp(path);
    ZS_ASSERT_STR_CONTAINS(txt, "three");
    free(txt);
    ZS_ASSERT_OK(zs_afile_reserve(&a, path, &e), &e);
    zs_afile_abort(&a);
    ZS_ASSERT_INT_EQ(count_files(dir), 1);
    /* A folder that does not exist: an I/O error naming the path. */
    ZS_ASSERT_INT_EQ(zs_afile_write("/nonexistent-dir/x.json", "x", 1, &e), ZS_EIO);
    ZS_ASSERT_STR_CONTAINS(e.where, "/nonexistent-dir/x.json");
}

/* Inputs are bounded: a regular file over the limit is refused by its
 * size, a device or pipe once it delivered more than the limit (before,
 * /dev/zero grew the buffer until memory ran out). */
static void test_read_limit(void)
{
    zs_err e;
    char *buf = NULL;
    size_t n = 0;
    char big[2001];
    memset(big, 'x', 2000);
    big[2000] = '\0';
    const char *path = zs_test_write("big.txt", big);
    ZS_ASSERT_INT_EQ(zs_input_limit(), ZS_INPUT_LIMIT_DEFAULT);
    ZS_ASSERT_OK(zs_read_file(path, NULL, &buf, &n, &e), &e);
    ZS_ASSERT_INT_EQ(n, 2000);
    free(buf);
    buf = NULL;
    zs_input_limit_set(2000); /* exactly the size: still read */
    ZS_ASSERT_OK(zs_read_file(path, NULL, &buf, &n, &e), &e);
    free(buf);
    buf = NULL;
    zs_input_limit_set(1999);
    ZS_ASSERT_INT_EQ(zs_read_file(path, NULL, &buf, &n, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "larger than the 1999 byte limit");
    ZS_ASSERT_STR_CONTAINS(e.fix, "ZEPSIM_MAX_INPUT_MB");
    ZS_ASSERT_STR_CONTAINS(e.where, "big.txt");
    zs_input_limit_set((size_t)1 << 20);
    ZS_ASSERT_INT_EQ(zs_read_file("/dev/zero", NULL, &buf, &n, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "larger than the 1 MiB limit");
    CU_ASSERT_PTR_NULL(buf);
    FILE *f = fopen("/dev/zero", "rb");
    ZS_ASSERT_INT_EQ(zs_read_stream(f, &buf, &n), ZS_EINPUT);
    fclose(f);
    ZS_ASSERT_INT_EQ(zs_read_file("/nonexistent/x", "use a preset", &buf, &n, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "use a preset");
    zs_input_limit_set(ZS_INPUT_LIMIT_DEFAULT);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"num_int", test_num_int}, {"num_unsigned", test_num_unsigned}, {"num_real", test_num_real},
        {"afile", test_afile},     {"read_limit", test_read_limit},     {NULL, NULL}};
    static const zs_test_suite suites[] = {{"base", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

/* Test harness: see zs_test.h. */
#include "zs_test.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "zs_fdio.h"

static const char *g_filter;
static const char *g_prog = "test";

int zs_test_main(int argc, char **argv, const zs_test_suite *suites)
{
    const char *slash = strrchr(argv[0], '/');
    g_prog = slash ? slash + 1 : argv[0];
    g_filter = argc > 1 ? argv[1] : NULL;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    for (const zs_test_suite *s = suites; s->name; s++) {
        CU_pSuite cs = CU_add_suite(s->name, NULL, NULL);
        for (const zs_test_case *c = s->cases; c->name; c++)
            if (!g_filter || strstr(c->name, g_filter))
                CU_add_test(cs, c->name, c->fn);
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    if (ran == 0) {
        fprintf(stderr, "%s: no test ran\n", g_prog);
        return 1;
    }
    return failed ? 1 : 0;
}

const char *zs_test_shared(const char *rel)
{
    static char buf[8][1024];
    static int slot;
    char *p = buf[slot++ % 8];
    const char *dir = getenv("ZS_SHARED_DIR");
    snprintf(p, 1024, "%s/%s", dir ? dir : ZS_SHARED_DIR, rel);
    if (access(p, R_OK) != 0) {
        printf("skipping the part that needs %s: not present\n", p);
        return NULL;
    }
    return p;
}

const char *zs_test_tmpdir(void)
{
    static char dir[1024];
    if (!dir[0]) {
        mkdir(ZS_TEST_TMP, 0755);
        snprintf(dir, sizeof dir, "%s/%s", ZS_TEST_TMP, g_prog);
        mkdir(dir, 0755);
    }
    return dir;
}

const char *zs_test_write(const char *name, const char *text)
{
    static char buf[8][1024];
    static int slot;
    char *p = buf[slot++ % 8];
    snprintf(p, 1024, "%s/%s", zs_test_tmpdir(), name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", p);
        return p;
    }
    fputs(text, f);
    fclose(f);
    return p;
}

int zs_test_run(const char *cmd, char *out, size_t n)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t len = 0;
    char tmp[4096];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out && len + 1 < n) {
            size_t c = got < n - 1 - len ? got : n - 1 - len;
            memcpy(out + len, tmp, c);
            len += c;
        }
    }
    if (out && n)
        out[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

uint64_t zs_test_rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

char *zs_test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t n;
    if (f && zs_read_stream(f, &text, &n) != ZS_OK)
        text = NULL;
    if (f)
        fclose(f);
    return text;
}

int64_t zs_test_piece_tokens(const zs_schedule *s, int rank, int layout)
{
    int64_t t = 0;
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].rank == rank && s->pieces[i].layout == layout)
            t += s->pieces[i].t1 - s->pieces[i].t0;
    return t;
}

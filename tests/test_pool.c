/* Large tables on huge pages and the pool of small buffers on them: zeroed
 * tables, buffers that keep their contents as they grow and shrink, freed
 * blocks reused, sizes beyond the pool's classes from malloc, and a NULL
 * pool that is plain realloc / free. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_bigmem.h"
#include "zs_pool.h"
#include "zs_test.h"

static void test_bigmem_zeroed(void)
{
    size_t sizes[] = {0, 100, (size_t)16 << 20};
    for (int i = 0; i < 3; i++) {
        unsigned char *p = zs_bigmem_alloc(sizes[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        size_t bad = 0;
        for (size_t k = 0; k < sizes[i]; k += 4093)
            bad += p[k] != 0;
        ZS_ASSERT_INT_EQ((int)bad, 0);
        if (sizes[i])
            p[sizes[i] - 1] = 7; /* the whole size is writable */
        zs_bigmem_free(p, sizes[i]);
    }
    zs_bigmem_free(NULL, 123); /* a no-op */
}

/* Grows a buffer through every class and beyond, then back, checking that
 * its contents follow. */
static void grow_shrink(zs_pool *p)
{
    size_t cap = 0;
    uint32_t *b = NULL;
    for (size_t n = 4; n <= 65536; n *= 2) { /* up to 256 KiB: past the largest class */
        uint32_t *nb = zs_pool_realloc(p, b, cap * sizeof *b, n * sizeof *b);
        CU_ASSERT_PTR_NOT_NULL_FATAL(nb);
        for (size_t k = cap; k < n; k++)
            nb[k] = (uint32_t)(k * 2654435761u);
        b = nb;
        cap = n;
    }
    size_t bad = 0;
    for (size_t k = 0; k < cap; k++)
        bad += b[k] != (uint32_t)(k * 2654435761u);
    ZS_ASSERT_INT_EQ((int)bad, 0);
    uint32_t *nb = zs_pool_realloc(p, b, cap * sizeof *b, 16 * sizeof *b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(nb);
    bad = 0;
    for (size_t k = 0; k < 16; k++)
        bad += nb[k] != (uint32_t)(k * 2654435761u);
    ZS_ASSERT_INT_EQ((int)bad, 0);
    zs_pool_release(p, nb, 16 * sizeof *nb);
}

static void test_pool_contents(void)
{
    zs_pool *p = zs_pool_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    grow_shrink(p);
    grow_shrink(NULL); /* no pool: realloc and free */
    zs_pool_free(p);
    zs_pool_free(NULL);
}

static void test_pool_reuse(void)
{
    zs_pool *p = zs_pool_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    /* Many blocks at once (more than one chunk), all distinct and
     * writable; a released block serves the next request of its size. */
    enum { N = 3000 };
    char **v = calloc(N, sizeof *v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    for (int i = 0; i < N; i++) {
        v[i] = zs_pool_realloc(p, NULL, 0, 4096);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v[i]);
        memset(v[i], i & 0xff, 4096);
    }
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += v[i][0] != (char)(i & 0xff) || v[i][4095] != (char)(i & 0xff);
    ZS_ASSERT_INT_EQ(bad, 0);
    zs_pool_release(p, v[17], 4096);
    char *again = zs_pool_realloc(p, NULL, 0, 3000); /* the same class */
    if (!ZS_BIGMEM_PLAIN)
        CU_ASSERT_PTR_EQUAL(again, v[17]);
    v[17] = again;
    for (int i = 0; i < N; i++)
        zs_pool_release(p, v[i], i == 17 ? 3000 : 4096);
    free(v);
    zs_pool_free(p);
}

static const zs_test_case cases[] = {{"bigmem_zeroed", test_bigmem_zeroed},
                                     {"pool_contents", test_pool_contents},
                                     {"pool_reuse", test_pool_reuse},
                                     {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"pool", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

/* Large zeroed tables on huge pages: see zs_bigmem.h. */
#include "zs_bigmem.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Below this a table fits the TLB's reach anyway: plain calloc. */
#define BIG_MIN ((size_t)4 << 20)
#define HUGE    ((size_t)2 << 20) /* x86-64 and arm64 (4 KiB base pages) huge page */

#if defined(__linux__) && defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE) && !ZS_BIGMEM_PLAIN
static size_t mapped_size(size_t n)
{
    return (n + HUGE - 1) / HUGE * HUGE;
}

void *zs_bigmem_alloc(size_t n)
{
    if (n < BIG_MIN)
        return calloc(n ? n : 1, 1);
    size_t m = mapped_size(n);
    if (m < n || m + HUGE < m)
        return NULL;
    /* Over-map by one huge page and trim, so the table starts on a huge
     * page boundary (the kernel backs only aligned 2 MiB ranges). */
    char *p = mmap(NULL, m + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)p + HUGE - 1) / HUGE * HUGE;
    size_t head = (size_t)(a - (uintptr_t)p), tail = HUGE - head;
    if (head)
        munmap(p, head);
    if (tail)
        munmap((char *)a + m, tail);
    (void)madvise((void *)a, m, MADV_HUGEPAGE); /* advice only: without it, small pages */
    return (void *)a;
}

void zs_bigmem_free(void *p, size_t n)
{
    if (!p)
        return;
    if (n < BIG_MIN)
        free(p);
    else
        munmap(p, mapped_size(n));
}
#else
void *zs_bigmem_alloc(size_t n)
{
    return calloc(n ? n : 1, 1);
}

void zs_bigmem_free(void *p, size_t n)
{
    (void)n;
    free(p);
}
#endif

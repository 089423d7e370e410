/* Large zeroed tables that are read in no particular order (the analytic
 * backend's per-rank state at thousands of GPUs): mapped on their own and
 * marked for transparent huge pages where the kernel offers them, so that
 * a random access costs a cache miss, not also a page walk (with 4 KiB
 * pages a few hundred MB of state overflow the TLB many times). Without
 * mmap (or huge pages) it is plain zeroed memory; results never depend on
 * it. Depends on libc (and <sys/mman.h> where present) only. */
#ifndef ZS_BIGMEM_H
#define ZS_BIGMEM_H

#include <stddef.h>

/* Under AddressSanitizer the tables (and zs_pool's blocks) are plain heap
 * blocks, so that its redzones still catch an overrun. */
#if defined(__SANITIZE_ADDRESS__)
#define ZS_BIGMEM_PLAIN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZS_BIGMEM_PLAIN 1
#endif
#endif
#ifndef ZS_BIGMEM_PLAIN
#define ZS_BIGMEM_PLAIN 0
#endif

/* n zeroed bytes (n may be 0); NULL when out of memory. */
void *zs_bigmem_alloc(size_t n);
/* Frees what zs_bigmem_alloc(n) returned (the same n); NULL is a no-op. */
void zs_bigmem_free(void *p, size_t n);

#endif

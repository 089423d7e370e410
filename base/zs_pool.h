/* Many small growing buffers (the analytic backend's per-stream activity
 * logs, thousands of ranks x streams) carved from large zs_bigmem chunks,
 * so that they sit on huge pages beside each other instead of spread over
 * the malloc heap's small pages. Blocks are powers of two from 64 bytes to
 * 64 KiB (larger ones come from malloc); a freed block goes on its size's
 * free list; everything is returned when the pool is freed. The caller
 * passes each block's size back (it knows its buffers' capacities). Not
 * thread-safe. Depends on zs_bigmem only. */
#ifndef ZS_POOL_H
#define ZS_POOL_H

#include <stddef.h>

typedef struct zs_pool zs_pool;

zs_pool *zs_pool_new(void); /* NULL when out of memory */
void zs_pool_free(zs_pool *p);

/* Like realloc for a block of `old` bytes (0 with b NULL: a new block),
 * now n > 0 bytes; NULL when out of memory (b is then untouched). With p
 * NULL it is realloc. */
void *zs_pool_realloc(zs_pool *p, void *b, size_t old, size_t n);
/* Gives back block b of `n` bytes (NULL: a no-op). With p NULL it is free. */
void zs_pool_release(zs_pool *p, void *b, size_t n);

#endif

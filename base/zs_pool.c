/* Small buffers on huge-page chunks: see zs_pool.h. */
#include "zs_pool.h"

#include <stdlib.h>
#include <string.h>

#include "zs_bigmem.h"

#define MIN_SHIFT 6  /* 64 B */
#define MAX_SHIFT 16 /* 64 KiB */
#define NCLASS    (MAX_SHIFT - MIN_SHIFT + 1)
#define CHUNK     ((size_t)8 << 20)

typedef struct chunk {
    struct chunk *next;
} chunk;

struct zs_pool {
    void *freel[NCLASS]; /* freed blocks, linked through their first word */
    char *cur;           /* the chunk being carved: [cur, end) is free */
    char *end;
    chunk *chunks;
};

zs_pool *zs_pool_new(void)
{
    return calloc(1, sizeof(zs_pool));
}

void zs_pool_free(zs_pool *p)
{
    if (!p)
        return;
    for (chunk *c = p->chunks; c;) {
        chunk *n = c->next;
        zs_bigmem_free(c, CHUNK);
        c = n;
    }
    free(p);
}

/* The class of an n-byte block (NCLASS: too big for the pool). */
static int class_of(size_t n)
{
    int k = 0;
    while (k < NCLASS && ((size_t)1 << (k + MIN_SHIFT)) < n)
        k++;
    return k;
}

static void *take(zs_pool *p, int k)
{
    if (p->freel[k]) {
        void *b = p->freel[k];
        memcpy(&p->freel[k], b, sizeof(void *));
        return b;
    }
    size_t sz = (size_t)1 << (k + MIN_SHIFT);
    if ((size_t)(p->end - p->cur) < sz) {
        chunk *c = zs_bigmem_alloc(CHUNK);
        if (!c)
            return NULL;
        c->next = p->chunks;
        p->chunks = c;
        p->cur = (char *)c + (1 << MIN_SHIFT); /* blocks stay 64-byte aligned */
        p->end = (char *)c + CHUNK;
    }
    void *b = p->cur;
    p->cur += sz;
    return b;
}

void zs_pool_release(zs_pool *p, void *b, size_t n)
{
    if (!b)
        return;
    int k = p && !ZS_BIGMEM_PLAIN ? class_of(n) : NCLASS;
    if (k == NCLASS) {
        free(b);
        return;
    }
    memcpy(b, &p->freel[k], sizeof(void *));
    p->freel[k] = b;
}

void *zs_pool_realloc(zs_pool *p, void *b, size_t old, size_t n)
{
    if (!p || ZS_BIGMEM_PLAIN)
        return realloc(b, n);
    int ko = b ? class_of(old) : NCLASS, kn = class_of(n);
    if (ko == NCLASS && kn == NCLASS)
        return realloc(b, n);
    if (b && ko == kn)
        return b;
    void *nb = kn == NCLASS ? malloc(n) : take(p, kn);
    if (!nb)
        return NULL;
    if (b) {
        memcpy(nb, b, old < n ? old : n);
        zs_pool_release(p, b, old);
    }
    return nb;
}

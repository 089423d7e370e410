/* Global batches: see zs_batch.h. */
#include "zs_batch.h"

#include <stdlib.h>

#include "zs_err.h"

/* Capacity lives beside the struct so the public fields stay minimal. */
typedef struct {
    zs_batch b;
    int32_t cap;
} batch_impl;

zs_batch *zs_batch_new(int32_t cap)
{
    batch_impl *bi = calloc(1, sizeof *bi);
    if (!bi)
        return NULL;
    bi->cap = cap > 0 ? cap : 16;
    bi->b.len = malloc(sizeof(int32_t) * (size_t)bi->cap);
    bi->b.source = malloc(sizeof(int64_t) * (size_t)bi->cap);
    if (!bi->b.len || !bi->b.source) {
        zs_batch_free(&bi->b);
        return NULL;
    }
    return &bi->b;
}

void zs_batch_free(zs_batch *b)
{
    if (!b)
        return;
    free(b->len);
    free(b->source);
    free(b->micro_of);
    free((batch_impl *)b);
}

int zs_batch_push(zs_batch *b, int32_t len, int64_t source)
{
    batch_impl *bi = (batch_impl *)b;
    if (b->ndocs == bi->cap) {
        int32_t nc = bi->cap * 2;
        int32_t *l = realloc(b->len, sizeof(int32_t) * (size_t)nc);
        if (!l)
            return ZS_ENOMEM;
        b->len = l;
        int64_t *s = realloc(b->source, sizeof(int64_t) * (size_t)nc);
        if (!s)
            return ZS_ENOMEM;
        b->source = s;
        bi->cap = nc;
    }
    b->len[b->ndocs] = len;
    b->source[b->ndocs] = source;
    b->ndocs++;
    b->tokens += len;
    return ZS_OK;
}

zs_batch *zs_batch_from_lengths(const int32_t *len, int32_t n)
{
    zs_batch *b = zs_batch_new(n);
    for (int32_t i = 0; b && i < n; i++)
        if (zs_batch_push(b, len[i], -1)) {
            zs_batch_free(b);
            return NULL;
        }
    return b;
}

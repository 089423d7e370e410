/* A global batch: the documents one training iteration sees, in the order
 * the batcher produced them. Planners take a batch and place its tokens;
 * the batcher (zs_batcher.h) cuts batches out of a length stream. Depends
 * on nothing but libc. */
#ifndef ZS_BATCH_H
#define ZS_BATCH_H

#include <stdint.h>

typedef struct zs_batch {
    int32_t ndocs;
    int32_t *len;    /* tokens per document (each >= 1) */
    int64_t *source; /* index of each document in its trace (-1 when synthetic) */
    int64_t tokens;  /* sum of len */
    int32_t index;   /* which batch of the run (0-based) */
    /* Optional micro-batch assignment set by a packer (WLB-LLM's, or a
     * fixed-length repacking): document d belongs to micro-batch
     * micro_of[d] in [0, nmicro); documents are ordered by micro-batch.
     * NULL (nmicro 0) when the batch is not packed. Freed with the batch. */
    int32_t *micro_of;
    int32_t nmicro;
    /* Iterations the batch's tokens waited on average since the batch they
     * were drawn for (packers that delay documents, WLB-LLM's queues); 0
     * when nothing waits. */
    double wait_iters;
} zs_batch;

/* An empty batch with room for cap documents; NULL when out of memory. */
zs_batch *zs_batch_new(int32_t cap);
void zs_batch_free(zs_batch *b);
/* Appends a document; returns 0 or ZS_ENOMEM. */
int zs_batch_push(zs_batch *b, int32_t len, int64_t source);
/* A batch of the given lengths (sources -1). */
zs_batch *zs_batch_from_lengths(const int32_t *len, int32_t n);

#endif

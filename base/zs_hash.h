/* A 64-bit FNV-1a hash of three 32-bit ids, for the open-addressing tables
 * that match a message or a channel by (source, destination, tag): the
 * analytic backend's p2p matching and the fold's channel table share it so
 * both spread keys alike. Header only; depends on nothing. */
#ifndef ZS_HASH_H
#define ZS_HASH_H

#include <stdint.h>

static inline uint64_t zs_hash3(int32_t a, int32_t b, int32_t c)
{
    uint64_t h = 1469598103934665603ULL;
    h = (h ^ (uint32_t)a) * 1099511628211ULL;
    h = (h ^ (uint32_t)b) * 1099511628211ULL;
    h = (h ^ (uint32_t)c) * 1099511628211ULL;
    return h ^ (h >> 29);
}

#endif

/* Pieces every cost model shares: causal pair counts, the tile-padded work
 * of attention blocks, collective names and the common destructor. See
 * zs_cost.h. */
#include "zs_cost.h"

#include <stdlib.h>

#include "zs_calib.h"

/* sum_{x=1}^{X} clamp(x, 0, K): the pairs of the first X query rows of a
 * block whose first row sees one key and whose key range holds K keys. */
static int64_t clamped_prefix(int64_t X, int64_t K)
{
    if (X <= 0)
        return 0;
    if (X <= K)
        return X * (X + 1) / 2;
    return K * (K + 1) / 2 + (X - K) * K;
}

int64_t zs_attn_block_pairs(const zs_attn_block *b)
{
    int64_t K = (int64_t)b->k1 - b->k0;
    if (b->q1 <= b->q0 || K <= 0)
        return 0;
    /* Query q sees clamp(q + 1 - k0, 0, K) keys. */
    int64_t a = (int64_t)b->q0 + 1 - b->k0, z = (int64_t)b->q1 - b->k0;
    return clamped_prefix(z, K) - clamped_prefix(a - 1, K);
}

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* The kernel walks the block in query tiles of ZS_ATTN_TILE rows (the last
 * one padded) and, per tile, key tiles of ZS_ATTN_TILE columns up to the
 * last key any of its rows may see: a tile that the diagonal crosses is
 * computed whole and masked afterwards. */
int64_t zs__attn_tile_pairs(const zs_attn_block *b, int n)
{
    const int64_t T = ZS_ATTN_TILE;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const zs_attn_block *x = &b[i];
        if (x->q1 <= x->q0 || x->k1 <= x->k0)
            continue;
        for (int64_t t = x->q0; t < x->q1; t += T) {
            int64_t last_q = t + T < x->q1 ? t + T : x->q1; /* one past the tile's last real row */
            int64_t kmax = last_q < x->k1 ? last_q : x->k1;
            int64_t keys = kmax - x->k0;
            if (keys > 0)
                total += T * round_up(keys, T);
        }
    }
    return total;
}

int64_t zs__attn_pairs(const zs_attn_block *b, int n)
{
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += zs_attn_block_pairs(&b[i]);
    return total;
}

const char *zs_coll_kind_name(int k)
{
    static const char *names[] = {"all-gather", "reduce-scatter", "all-reduce", "all-to-all"};
    return k >= 0 && k < ZS_COLL_NKINDS ? names[k] : "?";
}

void zs_cost_free(zs_cost *c)
{
    if (!c)
        return;
    if (c->ops && c->ops->free)
        c->ops->free(c);
    free(c);
}

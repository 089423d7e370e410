/* Context-parallel token layouts: see zs_cplayout.h. */
#include "zs_cplayout.h"

#include <string.h>

static const char *const names[ZS_CPL_N] = {"zigzag", "ring", "stripe", "llama3"};

const char *zs_cpl_name(zs_cp_layout l)
{
    return l >= 0 && l < ZS_CPL_N ? names[l] : "?";
}

int zs_cpl_parse(const char *s, const char *what, zs_cp_layout *out, zs_err *e)
{
    for (int i = 0; i < ZS_CPL_N; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (zs_cp_layout)i;
            return ZS_OK;
        }
    return zs_err_set(e, ZS_EUSAGE, what, "use ring, zigzag, stripe or llama3",
                      "unknown CP layout '%s'", s);
}

int zs_cpl_is_ring(zs_cp_layout l)
{
    return l != ZS_CPL_LLAMA3;
}

int zs_cpl_nchunks(zs_cp_layout l, int g)
{
    return l == ZS_CPL_RING ? g : l == ZS_CPL_STRIPE ? ZS_CPL_STRIPES * g : 2 * g;
}

int zs_cpl_nowned(zs_cp_layout l)
{
    return l == ZS_CPL_RING ? 1 : l == ZS_CPL_STRIPE ? ZS_CPL_STRIPES : 2;
}

int zs_cpl_owned(zs_cp_layout l, int g, int k, int i)
{
    if (l == ZS_CPL_RING)
        return k;
    if (l == ZS_CPL_STRIPE)
        return k + i * g;
    return i == 0 ? k : 2 * g - 1 - k;
}

void zs_cpl_chunk(int32_t len, int n, int pad, int c, int32_t *t0, int32_t *t1)
{
    if (pad) {
        int64_t cs = (len + (int64_t)n - 1) / n;
        int64_t a = c * cs, b = (c + 1) * cs;
        *t0 = (int32_t)(a < len ? a : len);
        *t1 = (int32_t)(b < len ? b : len);
        return;
    }
    int64_t base = len / n, rem = len % n;
    int64_t a = c * base + (c < rem ? c : rem);
    *t0 = (int32_t)a;
    *t1 = (int32_t)(a + base + (c < rem ? 1 : 0));
}

/* Priced chunk: padded chunks are whole (TE computes and moves the
 * padding), exact ones are the real range. */
static void chunk_cost(int32_t len, int n, int pad, int c, int32_t *t0, int32_t *t1)
{
    if (!pad) {
        zs_cpl_chunk(len, n, 0, c, t0, t1);
        return;
    }
    int64_t cs = (len + (int64_t)n - 1) / n;
    *t0 = (int32_t)(c * cs);
    *t1 = (int32_t)((c + 1) * cs);
}

/* Token-level stripes: tokens of member m when a document of len tokens
 * (padded to a multiple of g with pad) is dealt round robin. */
static int64_t stripe_tokens(int32_t len, int g, int pad, int m)
{
    int64_t n = pad ? (len + (int64_t)g - 1) / g * g : len;
    return m < n ? (n - m + g - 1) / g : 0;
}

int64_t zs_cpl_member_tokens(zs_cp_layout l, int32_t len, int g, int pad, int k)
{
    if (l == ZS_CPL_STRIPE)
        return stripe_tokens(len, g, pad, k);
    int64_t t = 0;
    int n = zs_cpl_nchunks(l, g);
    for (int i = 0; i < zs_cpl_nowned(l); i++) {
        int32_t t0, t1;
        chunk_cost(len, n, pad, zs_cpl_owned(l, g, k, i), &t0, &t1);
        t += t1 - t0;
    }
    return t;
}

void zs_cpl_step_blocks(zs_cp_layout l, int32_t doc, int32_t len, int g, int pad, int k, int j,
                        zs_attn_block *real, int *nreal, zs_attn_block *cost, int *ncost)
{
    int src = ((k - j) % g + g) % g, n = zs_cpl_nchunks(l, g), no = zs_cpl_nowned(l);
    *nreal = *ncost = 0;
    for (int a = 0; a < no; a++)
        for (int b = 0; b < no; b++) {
            int qc = zs_cpl_owned(l, g, k, a), kc = zs_cpl_owned(l, g, src, b);
            if (kc > qc)
                continue; /* above the diagonal */
            int32_t q0, q1, k0, k1;
            if (l != ZS_CPL_STRIPE) {
                chunk_cost(len, n, pad, qc, &q0, &q1);
                chunk_cost(len, n, pad, kc, &k0, &k1);
                if (q1 > q0 && k1 > k0)
                    cost[(*ncost)++] = (zs_attn_block){doc, q0, q1, k0, k1};
            }
            zs_cpl_chunk(len, n, pad, qc, &q0, &q1);
            zs_cpl_chunk(len, n, pad, kc, &k0, &k1);
            if (q1 > q0 && k1 > k0)
                real[(*nreal)++] = (zs_attn_block){doc, q0, q1, k0, k1};
        }
    if (l != ZS_CPL_STRIPE)
        return;
    /* Member k's strided queries against member src's strided keys, both
     * packed: key b precedes query a when b <= a (src <= k) or b < a
     * (src > k, the block shifted by one token, as Striped Attention runs
     * it). */
    int64_t nq = stripe_tokens(len, g, pad, k), nk = stripe_tokens(len, g, pad, src);
    if (src > k)
        nq--;
    if (nq > 0 && nk > 0)
        cost[(*ncost)++] = (zs_attn_block){doc, 0, (int32_t)nq, 0, (int32_t)nk};
}

void zs_cpl_gather_blocks(int32_t doc, int32_t len, int g, int pad, int k, zs_attn_block *real,
                          int *nreal, zs_attn_block *cost, int *ncost)
{
    int n = 2 * g;
    *nreal = *ncost = 0;
    for (int i = 0; i < 2; i++) {
        int c = zs_cpl_owned(ZS_CPL_LLAMA3, g, k, i);
        int32_t t0, t1;
        zs_cpl_chunk(len, n, pad, c, &t0, &t1);
        if (t1 > t0)
            real[(*nreal)++] = (zs_attn_block){doc, t0, t1, 0, t1};
        chunk_cost(len, n, pad, c, &t0, &t1);
        if (t1 > t0)
            cost[(*ncost)++] = (zs_attn_block){doc, t0, t1, 0, t1};
    }
}

int zs_cpl_pack_blocks(const int32_t *lens, int docs, int g, int k, zs_attn_block *out)
{
    int64_t L = 0;
    for (int d = 0; d < docs; d++)
        L += lens[d];
    int64_t a = L * k / g, b = L * (k + 1) / g, s = 0;
    int n = 0;
    for (int d = 0; d < docs; s += lens[d], d++) {
        int64_t q0 = a > s ? a : s, q1 = b < s + lens[d] ? b : s + lens[d];
        if (q1 > q0)
            out[n++] =
                (zs_attn_block){d, (int32_t)(q0 - s), (int32_t)(q1 - s), 0, (int32_t)(q1 - s)};
    }
    return n;
}

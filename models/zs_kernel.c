/* Attention and GEMM kernel costs: see zs_kernel.h. */
#include "zs_kernel.h"
#include "zs_kernel_internal.h"

#include <math.h>
#include <string.h>

/* ---- causal pair counts ---------------------------------------------------------- */

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

/* ---- tile walk ------------------------------------------------------------------- */

/* What one block costs per head, in tiles. */
typedef struct blk_tiles {
    int64_t tiles;   /* key tiles computed over all query tiles */
    int64_t qtiles;  /* query tiles (forward CTAs) */
    int64_t ktiles;  /* key tiles any row sees (backward CTAs) */
    int64_t longest; /* most tiles one CTA computes (forward: a query tile's key tiles;
                        backward: the query tiles that see the first key tile) */
} blk_tiles;

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int64_t ceil_div_any(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

/* The kernel walks the block in query tiles of tile_q rows (the last one
 * padded) and, per tile, key tiles of tile_k columns from the block's first
 * key up to the last key any of its rows may see: a tile that the diagonal
 * crosses is computed whole and masked afterwards. This is the walk, one
 * query tile at a time: the reference for the closed form below. */
static blk_tiles walk_loop(const zs_attn_kernel *k, const zs_attn_block *x, int backward)
{
    blk_tiles r = {0, 0, 0, 0};
    if (x->q1 <= x->q0 || x->k1 <= x->k0)
        return r;
    const int64_t bq = k->tile_q, bk = k->tile_k;
    int64_t maxkeys = 0, seen = 0;
    for (int64_t t = x->q0; t < x->q1; t += bq) {
        int64_t last = t + bq < x->q1 ? t + bq : x->q1; /* one past the tile's last real row */
        int64_t keys = (last < x->k1 ? last : x->k1) - x->k0;
        r.qtiles++;
        if (keys <= 0)
            continue;
        int64_t nk = ceil_div(keys, bk);
        r.tiles += nk;
        seen++;
        if (nk > r.longest)
            r.longest = nk;
        if (keys > maxkeys)
            maxkeys = keys;
    }
    r.ktiles = ceil_div(maxkeys, bk);
    if (backward)
        r.longest = seen;
    return r;
}

/* The same walk in closed form when a query tile spans whole key tiles
 * (tile_q a multiple of tile_k, as in every kernel we model): full query
 * tile t sees min(a + t tile_q, K) keys (a: what the first one sees, K the
 * block's keys), so its key tiles grow by tile_q / tile_k per tile until
 * they reach ceil(K / tile_k); the padded last tile is counted apart. One
 * block costs O(1) however long it is. */
static blk_tiles walk(const zs_attn_kernel *k, const zs_attn_block *x, int backward)
{
    const int64_t bq = k->tile_q, bk = k->tile_k;
    if (bq % bk != 0)
        return walk_loop(k, x, backward);
    blk_tiles r = {0, 0, 0, 0};
    if (x->q1 <= x->q0 || x->k1 <= x->k0)
        return r;
    const int64_t Q = (int64_t)x->q1 - x->q0, K = (int64_t)x->k1 - x->k0, m = bq / bk;
    const int64_t nfull = Q / bq, a = (int64_t)x->q0 + bq - x->k0;
    r.qtiles = ceil_div(Q, bq);
    /* Full tiles: those with keys (t >= t0), and those still below K (t < t1). */
    int64_t t0 = a > 0 ? 0 : floor_div(-a, bq) + 1, t1 = K - a <= 0 ? 0 : ceil_div(K - a, bq);
    t0 = t0 < nfull ? t0 : nfull;
    t1 = t1 < nfull ? t1 : nfull;
    int64_t seen = 0, lastkeys = 0;
    if (t1 > t0) { /* growing: ceil((a + t bq) / bk) = ceil(a / bk) + t m */
        int64_t c = t1 - t0;
        r.tiles += c * ceil_div_any(a, bk) + m * (t0 + t1 - 1) * c / 2;
        seen += c;
        lastkeys = a + (t1 - 1) * bq;
    }
    int64_t s0 = t0 > t1 ? t0 : t1;
    if (nfull > s0) { /* saturated: every key */
        r.tiles += (nfull - s0) * ceil_div(K, bk);
        seen += nfull - s0;
        lastkeys = K;
    }
    if (Q % bq) { /* the padded last tile: rows up to q1 */
        int64_t keys = ((int64_t)x->q1 < x->k1 ? x->q1 : x->k1) - x->k0;
        if (keys > 0) {
            r.tiles += ceil_div(keys, bk);
            seen++;
            lastkeys = keys;
        }
    }
    /* Keys seen never shrink from one query tile to the next. */
    r.ktiles = ceil_div(lastkeys, bk);
    r.longest = backward ? seen : r.ktiles;
    return r;
}

int zs__attn_walk_agrees(const zs_attn_kernel *k, const zs_attn_block *b)
{
    for (int bwd = 0; bwd < 2; bwd++) {
        blk_tiles x = walk(k, b, bwd), y = walk_loop(k, b, bwd);
        if (x.tiles != y.tiles || x.qtiles != y.qtiles || x.ktiles != y.ktiles ||
            x.longest != y.longest)
            return 0;
    }
    return 1;
}

int64_t zs_attn_kernel_tile_pairs(const zs_attn_kernel *k, const zs_attn_block *b, int n)
{
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += walk(k, &b[i], 0).tiles;
    return total * k->tile_q * k->tile_k;
}

double zs_attn_kernel_time(const zs_attn_kernel *k, int backward, const zs_attn_block *b, int n,
                           const zs_attn_shape *sh, zs_attn_work *w)
{
    zs_attn_work z;
    memset(&z, 0, sizeof z);
    const zs_attn_dir *d = backward ? &k->bwd : &k->fwd;
    if (n <= 0 || sh->heads <= 0 || d->tflops <= 0 || k->tile_q < 1 || k->tile_k < 1) {
        if (w)
            *w = z;
        return 0;
    }
    int64_t tiles = 0, ctas = 0, seqs = 0, longest = 0;
    double qtok = 0, ktok = 0;
    int64_t pairs = 0;
    blk_tiles t = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        /* Equal documents packed in one launch walk the same tiles. */
        if (i == 0 || b[i].q0 != b[i - 1].q0 || b[i].q1 != b[i - 1].q1 || b[i].k0 != b[i - 1].k0 ||
            b[i].k1 != b[i - 1].k1)
            t = walk(k, &b[i], backward);
        if (t.tiles == 0)
            continue;
        seqs++;
        tiles += t.tiles;
        ctas += backward ? t.ktiles : t.qtiles;
        longest = t.longest > longest ? t.longest : longest;
        qtok += b[i].q1 - b[i].q0;
        ktok += b[i].k1 - b[i].k0;
        pairs += zs_attn_block_pairs(&b[i]);
    }
    if (tiles == 0) {
        if (w)
            *w = z;
        return 0;
    }
    const double H = sh->heads, dim = sh->head_dim > 0 ? sh->head_dim : 128;
    const double mul = backward ? 2.5 : 1.0; /* backward: 5 matmuls to forward's 2 */
    const double d_eff = 128.0 * (k->dfix + (1.0 - k->dfix) * dim / 128.0);
    const double tile_flops = 4.0 * k->tile_q * k->tile_k * dim * mul;
    const double slots =
        (double)(sh->sms > 0 ? sh->sms : 1) * (k->ctas_per_sm > 0 ? k->ctas_per_sm : 1);
    /* Aggregate seconds per tile with every slot busy. */
    const double tile_s = 4.0 * k->tile_q * k->tile_k * d_eff * mul / (d->tflops * 1e12);
    z.seqs = seqs;
    z.ctas = (int64_t)H * ctas;
    z.tiles = (int64_t)H * tiles;
    z.flops_tiles = (double)z.tiles * tile_flops;
    z.flops_exact = 4.0 * H * dim * mul * (double)pairs;
    double slow = 1.0;
    if (d->half > 0 && z.flops_tiles > 0)
        slow +=
            pow(d->half / (z.flops_tiles > d->half_floor ? z.flops_tiles : d->half_floor), d->p);
    double t_tiles = (double)z.tiles * tile_s * slow;
    /* A CTA's own work (loading its Q tile, writing O, the softmax epilogue)
     * scales with the head dimension as a tile's does. */
    const double cta_s = d->cta_us * 1e-6 * d_eff / 128.0;
    double t_fixed = H * ((double)ctas * cta_s + (double)seqs * d->seq_us * 1e-6) / slots;
    z.t_longest_cta = cta_s + d->seq_us * 1e-6 + (double)longest * tile_s * slots * slow;
    z.t_compute = t_tiles + t_fixed > z.t_longest_cta ? t_tiles + t_fixed : z.t_longest_cta;
    /* HBM traffic: each query head reads Q and writes O (backward also dO,
     * dQ and its expanded dK, dV); each KV head's K and V are read once. */
    double kvh = sh->kv_heads > 0 ? sh->kv_heads : H,
           db = sh->dtype_bytes > 0 ? sh->dtype_bytes : 2;
    z.bytes = db * dim *
              (backward ? 4.0 * H * qtok + 2.0 * kvh * ktok + 2.0 * H * ktok
                        : 2.0 * H * qtok + 2.0 * kvh * ktok);
    z.t_memory = sh->hbm_Bps > 0 ? z.bytes / sh->hbm_Bps : 0;
    z.t_launch = d->launch_us * 1e-6;
    z.seconds = z.t_launch + (z.t_compute > z.t_memory ? z.t_compute : z.t_memory);
    if (w)
        *w = z;
    return z.seconds;
}

double zs_gemm_bytes(double m, double n, double k, double in_b, double out_b)
{
    return (m * k + k * n) * in_b + m * n * out_b;
}

double zs_gemm_time(const zs_gemm_curve *g, double m, double n, double k, double bytes,
                    double hbm_Bps)
{
    if (m <= 0 || n <= 0 || k <= 0 || g->tflops <= 0)
        return 0;
    double x = m < n ? m : n;
    x = x < k ? x : k;
    /* The curve's data ends at dim_floor: a thinner GEMM keeps the size
     * effect measured there instead of a power law extrapolated past it. */
    x = x > g->dim_floor ? x : g->dim_floor;
    double slow = 1.0;
    if (g->half_dim > 0)
        slow += pow(g->half_dim / x, g->p);
    double launch = g->launch_us * 1e-6;
    double t = launch + 2.0 * m * n * k / (g->tflops * 1e12) * slow;
    /* However thin, a GEMM reads its inputs and writes its output: cuBLAS
     * runs skinny shapes near memory speed, not faster [assumed]. */
    double tmem = bytes > 0 && hbm_Bps > 0 ? launch + bytes / hbm_Bps : 0;
    return t > tmem ? t : tmem;
}

/* ---- JSON ------------------------------------------------------------------------- */

#define DIR_F(key, member, min, max, req, def, unit, help)                                         \
    {                                                                                              \
        key, ZS_F_DOUBLE, offsetof(zs_attn_dir, member), 0, min, max, req, def, unit, help         \
    }
static const zs_field dir_fields[] = {
    DIR_F("tflops", tflops, 0.001, 1e5, 1, 0, "TFLOP/s", "rate on whole tiles at head dim 128"),
    DIR_F("cta_us", cta_us, 0, 1e4, 0, 0, "us", "fixed cost per CTA (query tile x head), one slot"),
    DIR_F("seq_us", seq_us, 0, 1e4, 0, 0, "us", "fixed cost per sequence and head, one slot"),
    DIR_F("launch_us", launch_us, 0, 1e5, 0, 0, "us", "fixed cost per launch"),
    DIR_F("half", half, 0, 1e20, 0, 0, "FLOP", "launch work at half the tile rate (0: none)"),
    DIR_F("p", p, 0, 10, 0, 1, "", "exponent of the size effect"),
    DIR_F("half_floor", half_floor, 0, 1e20, 0, 0, "FLOP",
          "smallest launch work the size effect was fitted on (0: none)"),
};
#undef DIR_F
static const size_t ndir_fields = sizeof dir_fields / sizeof dir_fields[0];

#define K_F(key, type, member, min, max, req, def, unit, help)                                     \
    {                                                                                              \
        key, type, offsetof(zs_attn_kernel, member), sizeof(((zs_attn_kernel *)0)->member), min,   \
            max, req, def, unit, help                                                              \
    }
static const zs_field kernel_fields[] = {
    K_F("name", ZS_F_STRING, name, 0, 0, 1, 0, "", "kernel name (fa2, fa3, te...)"),
    K_F("source", ZS_F_STRING, source, 0, 0, 1, 0, "", "where the figures come from"),
    K_F("tile_q", ZS_F_INT, tile_q, 16, 1024, 0, 128, "tokens", "query tile"),
    K_F("tile_k", ZS_F_INT, tile_k, 16, 1024, 0, 128, "tokens", "key tile"),
    K_F("ctas_per_sm", ZS_F_INT, ctas_per_sm, 1, 64, 0, 1, "", "concurrent CTAs per SM"),
    K_F("dfix", ZS_F_DOUBLE, dfix, 0, 1, 0, 0, "", "share of a d=128 tile's time independent of d"),
};
#undef K_F
static const size_t nkernel_fields = sizeof kernel_fields / sizeof kernel_fields[0];

#define G_F(key, type, member, min, max, req, def, unit, help)                                     \
    {                                                                                              \
        key, type, offsetof(zs_gemm_curve, member), sizeof(((zs_gemm_curve *)0)->member), min,     \
            max, req, def, unit, help                                                              \
    }
static const zs_field gemm_fields[] = {
    G_F("tflops", ZS_F_DOUBLE, tflops, 0.001, 1e5, 1, 0, "TFLOP/s", "asymptotic GEMM rate"),
    G_F("half_dim", ZS_F_DOUBLE, half_dim, 0, 1e6, 0, 0, "", "smallest dimension at half rate"),
    G_F("p", ZS_F_DOUBLE, p, 0, 10, 0, 1, "", "exponent of the size effect"),
    G_F("launch_us", ZS_F_DOUBLE, launch_us, 0, 1e5, 0, 0, "us", "fixed cost per GEMM"),
    G_F("dim_floor", ZS_F_DOUBLE, dim_floor, 0, 1e6, 0, ZS_GEMM_DIM_FLOOR, "",
        "smallest dimension the size effect was fitted on; thinner GEMMs keep its value there "
        "(0: extrapolate)"),
    G_F("source", ZS_F_STRING, source, 0, 0, 1, 0, "", "where the figures come from"),
};
#undef G_F
static const size_t ngemm_fields = sizeof gemm_fields / sizeof gemm_fields[0];

int zs_attn_dir_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent,
                          zs_attn_dir *d, zs_err *e)
{
    char where[600];
    if (!json_is_object(obj)) {
        zs_json_where(doc, NULL, parent, where, sizeof where);
        return zs_err_set(e, ZS_EINPUT, where,
                          "give {\"tflops\": R, \"cta_us\": C, \"seq_us\": S, \"launch_us\": L}",
                          "'%s' must be an object", parent);
    }
    zs_attn_dir x;
    int rc = zs_config_parse(doc, obj, parent, dir_fields, ndir_fields, NULL, &x, e);
    if (rc == ZS_OK)
        *d = x;
    return rc;
}

json_t *zs_attn_dir_to_json(const zs_attn_dir *d)
{
    return zs_config_to_json(dir_fields, ndir_fields, d);
}

int zs_attn_kernel_from_json(const zs_json_doc *doc, const json_t *obj, zs_attn_kernel *out,
                             zs_err *e)
{
    static const char *const own[] = {"fwd", "bwd", NULL};
    char where[600];
    if (!json_is_object(obj)) {
        zs_json_where(doc, NULL, "attn_kernels", where, sizeof where);
        return zs_err_set(e, ZS_EINPUT, where, "each entry of attn_kernels is an object",
                          "bad attention kernel");
    }
    zs_attn_kernel k;
    memset(&k, 0, sizeof k);
    int rc = zs_config_parse(doc, obj, "attn_kernels", kernel_fields, nkernel_fields, own, &k, e);
    if (rc)
        return rc;
    json_t *f = json_object_get(obj, "fwd"), *b = json_object_get(obj, "bwd");
    if (!f || !b) {
        zs_json_where(doc, NULL, "attn_kernels", where, sizeof where);
        return zs_err_set(e, ZS_EINPUT, where,
                          "every attention kernel has a \"fwd\" and a \"bwd\" curve "
                          "(docs/cost-model.md)",
                          "attention kernel '%s' lacks its %s curve", k.name, f ? "bwd" : "fwd");
    }
    if ((rc = zs_attn_dir_from_json(doc, f, "fwd", &k.fwd, e)) ||
        (rc = zs_attn_dir_from_json(doc, b, "bwd", &k.bwd, e)))
        return rc;
    *out = k;
    return ZS_OK;
}

int zs_gemm_curve_from_json(const zs_json_doc *doc, const json_t *obj, zs_gemm_curve *out,
                            zs_err *e)
{
    char where[600];
    if (!json_is_object(obj)) {
        zs_json_where(doc, NULL, "gemm", where, sizeof where);
        return zs_err_set(e, ZS_EINPUT, where,
                          "give {\"tflops\": R, \"half_dim\": H, \"p\": P, \"launch_us\": L, "
                          "\"source\": \"...\"}",
                          "'gemm' must be an object");
    }
    zs_gemm_curve g;
    int rc = zs_config_parse(doc, obj, "gemm", gemm_fields, ngemm_fields, NULL, &g, e);
    if (rc == ZS_OK)
        *out = g;
    return rc;
}

void zs_attn_kernel_print(FILE *f, const zs_attn_kernel *k, int indent)
{
    fprintf(f, "%*skernel %s: tiles %dx%d, %d CTA/SM, dfix %.2f\n", indent, "", k->name, k->tile_q,
            k->tile_k, k->ctas_per_sm, k->dfix);
    const zs_attn_dir *d[2] = {&k->fwd, &k->bwd};
    for (int i = 0; i < 2; i++)
        fprintf(f,
                "%*s  %s: %.1f TFLOP/s, cta %.3f us, seq %.3f us, launch %.1f us, half %.3g, "
                "p %.3g\n",
                indent, "", i ? "bwd" : "fwd", d[i]->tflops, d[i]->cta_us, d[i]->seq_us,
                d[i]->launch_us, d[i]->half, d[i]->p);
    fprintf(f, "%*s  source: %s\n", indent, "", k->source);
}

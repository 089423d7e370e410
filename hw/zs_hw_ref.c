/* CPU reference kernels: see zs_hw_ref.h. Accumulation is in double so the
 * reference is far more accurate than the bf16 kernels it checks. */
#include "zs_hw_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int zs_hw_blocks_check(const zs_hw_block *b, int nb, const zs_attn_dims *d, int64_t q_rows,
                       int64_t k_rows, zs_err *e)
{
    if (!d || d->heads < 1 || d->kv_heads < 1 || d->head_dim < 1 || d->heads % d->kv_heads)
        return zs_err_set(e, ZS_EINPUT, "attention dims",
                          "use heads >= 1, kv_heads >= 1 dividing heads, head_dim >= 1",
                          "bad attention shape");
    for (int i = 0; i < nb; i++) {
        char where[64];
        snprintf(where, sizeof where, "block %d", i);
        if (b[i].nq < 0 || b[i].nk < 0 || b[i].q_off < 0 || b[i].k_off < 0 ||
            b[i].q_off + b[i].nq > q_rows || b[i].k_off + b[i].nk > k_rows)
            return zs_err_set(e, ZS_EINPUT, where, "keep every block inside the Q and K buffers",
                              "block rows out of range (q %lld+%d of %lld, k %lld+%d of %lld)",
                              (long long)b[i].q_off, b[i].nq, (long long)q_rows,
                              (long long)b[i].k_off, b[i].nk, (long long)k_rows);
    }
    return ZS_OK;
}

/* Scores of one query row against the block's keys; masked keys get -inf.
 * Returns the row maximum (-inf when no key is visible). */
static double row_scores(const zs_hw_block *b, const zs_attn_dims *d, float scale, const float *q,
                         const float *k, int i, int h, double *s)
{
    int hk = h / (d->heads / d->kv_heads), hd = d->head_dim;
    const float *qi = q + ((b->q_off + i) * d->heads + h) * hd;
    double mx = -INFINITY;
    for (int j = 0; j < b->nk; j++) {
        if ((int64_t)b->k_pos + j > (int64_t)b->q_pos + i) {
            s[j] = -INFINITY;
            continue;
        }
        const float *kj = k + ((b->k_off + j) * d->kv_heads + hk) * hd;
        double acc = 0;
        for (int c = 0; c < hd; c++)
            acc += (double)qi[c] * kj[c];
        s[j] = acc * scale;
        if (s[j] > mx)
            mx = s[j];
    }
    return mx;
}

int zs_ref_attn_fwd(const zs_hw_block *b, int nb, const zs_attn_dims *d, float scale,
                    const float *q, const float *k, const float *v, float *o, float *lse, zs_err *e)
{
    int maxk = 1, hd = d->head_dim;
    for (int i = 0; i < nb; i++)
        maxk = b[i].nk > maxk ? b[i].nk : maxk;
    double *s = malloc(sizeof(double) * (size_t)maxk);
    double *acc = malloc(sizeof(double) * (size_t)hd);
    if (!s || !acc) {
        free(s);
        free(acc);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory in the attention reference");
    }
    for (int bi = 0; bi < nb; bi++) {
        const zs_hw_block *blk = &b[bi];
        int hk_div = d->heads / d->kv_heads;
        for (int i = 0; i < blk->nq; i++) {
            for (int h = 0; h < d->heads; h++) {
                double mx = row_scores(blk, d, scale, q, k, i, h, s);
                float *oi = o + ((blk->q_off + i) * d->heads + h) * hd;
                float *li = lse + (blk->q_off + i) * d->heads + h;
                if (mx == -INFINITY) {
                    memset(oi, 0, sizeof(float) * (size_t)hd);
                    *li = -INFINITY;
                    continue;
                }
                double sum = 0;
                memset(acc, 0, sizeof(double) * (size_t)hd);
                for (int j = 0; j < blk->nk; j++) {
                    if (s[j] == -INFINITY)
                        continue;
                    double p = exp(s[j] - mx);
                    sum += p;
                    const float *vj = v + ((blk->k_off + j) * d->kv_heads + h / hk_div) * hd;
                    for (int c = 0; c < hd; c++)
                        acc[c] += p * vj[c];
                }
                for (int c = 0; c < hd; c++)
                    oi[c] = (float)(acc[c] / sum);
                *li = (float)(mx + log(sum));
            }
        }
    }
    free(s);
    free(acc);
    return ZS_OK;
}

int zs_ref_attn_bwd(const zs_hw_block *b, int nb, const zs_attn_dims *d, float scale,
                    const float *q, const float *k, const float *v, const float *o,
                    const float *lse, const float *dout, float *dq, float *dk, float *dv, zs_err *e)
{
    int maxk = 1, hd = d->head_dim, hk_div = d->heads / d->kv_heads;
    for (int i = 0; i < nb; i++)
        maxk = b[i].nk > maxk ? b[i].nk : maxk;
    double *s = malloc(sizeof(double) * (size_t)maxk);
    if (!s)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory in the attention reference");
    for (int bi = 0; bi < nb; bi++) {
        const zs_hw_block *blk = &b[bi];
        for (int i = 0; i < blk->nq; i++) {
            for (int h = 0; h < d->heads; h++) {
                int64_t qrow = (blk->q_off + i) * d->heads + h;
                double l = lse[qrow];
                if (l == -INFINITY)
                    continue; /* no visible key anywhere: no gradient */
                row_scores(blk, d, scale, q, k, i, h, s);
                const float *oi = o + qrow * hd, *doi = dout + qrow * hd, *qi = q + qrow * hd;
                /* D_i = dO_i . O_i, the softmax backward's row term. */
                double di = 0;
                for (int c = 0; c < hd; c++)
                    di += (double)doi[c] * oi[c];
                for (int j = 0; j < blk->nk; j++) {
                    if (s[j] == -INFINITY)
                        continue;
                    int64_t krow = ((blk->k_off + j) * d->kv_heads + h / hk_div) * hd;
                    double p = exp(s[j] - l), dp = 0;
                    for (int c = 0; c < hd; c++)
                        dp += (double)doi[c] * v[krow + c];
                    double ds = p * (dp - di) * scale;
                    for (int c = 0; c < hd; c++) {
                        dv[krow + c] += (float)(p * doi[c]);
                        dq[qrow * hd + c] += (float)(ds * k[krow + c]);
                        dk[krow + c] += (float)(ds * qi[c]);
                    }
                }
            }
        }
    }
    free(s);
    return ZS_OK;
}

void zs_ref_attn_merge(int64_t rows, int heads, int head_dim, const float *oa, const float *la,
                       const float *ob, const float *lb, float *o, float *lse)
{
    for (int64_t r = 0; r < rows * heads; r++) {
        double a = la[r], bb = lb[r], m = a > bb ? a : bb;
        double l = m == -INFINITY ? -INFINITY : m + log(exp(a - m) + exp(bb - m));
        double wa = l == -INFINITY ? 0 : exp(a - l), wb = l == -INFINITY ? 0 : exp(bb - l);
        for (int c = 0; c < head_dim; c++) {
            int64_t x = r * head_dim + c;
            o[x] = (float)(wa * oa[x] + wb * ob[x]);
        }
        lse[r] = (float)l;
    }
}

void zs_ref_gemm(int m, int n, int k, const float *a, const float *b, float *c)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int p = 0; p < k; p++)
                acc += (double)a[(int64_t)i * k + p] * b[(int64_t)p * n + j];
            c[(int64_t)i * n + j] = (float)acc;
        }
}

void zs_ref_rmsnorm(int64_t rows, int cols, const float *x, const float *w, float eps, float *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0;
        for (int c = 0; c < cols; c++)
            ss += (double)xr[c] * xr[c];
        double inv = 1.0 / sqrt(ss / cols + eps);
        for (int c = 0; c < cols; c++)
            y[r * cols + c] = (float)(xr[c] * inv * w[c]);
    }
}

void zs_ref_swiglu(int64_t n, const float *gate, const float *up, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)((double)gate[i] / (1.0 + exp(-(double)gate[i])) * up[i]);
}

void zs_ref_residual(int64_t n, const float *x, const float *r, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] + r[i];
}

uint16_t zs_bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);         /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float zs_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void zs_bf16_round(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = zs_bf16_to_float(zs_bf16_from_float(x[i]));
}

double zs_rel_err(const float *a, const float *b, int64_t n, double floor)
{
    double num = 0, den = floor;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]))
            return NAN;
        if (a[i] == b[i])
            continue; /* also equal infinities (LSE of fully masked rows) */
        double dd = fabs((double)a[i] - b[i]);
        num = dd > num ? dd : num;
        den = fabs(b[i]) > den ? fabs(b[i]) : den;
    }
    return num / den;
}

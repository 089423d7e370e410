/* Accounting calls queued and applied rank by rank: see zs_acctq.h. */
#include "zs_acctq.h"

#include <string.h>

#include "zs_bigmem.h"
#include "zs_prefetch.h"

/* Ranks ahead whose accounting is fetched: the header and the streams'
 * records AHEAD ranks ahead, the ends of the logs they point to (which
 * need the records) half-way. */
#define AHEAD 8

int zs_acctq_init(zs_acctq *q, int nranks, int per_rank, zs_foldacct *acct0, zs_rank_result *res0,
                  size_t stride)
{
    memset(q, 0, sizeof *q);
    q->nranks = nranks > 0 ? nranks : 1;
    q->cap = (int64_t)q->nranks * (per_rank > 0 ? per_rank : 1);
    q->cap = q->cap < 4096 ? 4096 : q->cap;
    q->bytes = sizeof(zs_acctq_rec) * (size_t)q->cap;
    q->v = zs_bigmem_alloc(q->bytes);
    q->tmp = zs_bigmem_alloc(q->bytes);
    q->cnt = zs_bigmem_alloc(sizeof(int32_t) * ((size_t)q->nranks + 1));
    q->acct0 = (char *)acct0;
    q->res0 = (char *)res0;
    q->stride = stride;
    if (!q->v || !q->tmp || !q->cnt) {
        zs_acctq_free(q);
        return ZS_ENOMEM;
    }
    return ZS_OK;
}

void zs_acctq_free(zs_acctq *q)
{
    zs_bigmem_free(q->v, q->bytes);
    zs_bigmem_free(q->tmp, q->bytes);
    zs_bigmem_free(q->cnt, sizeof(int32_t) * ((size_t)q->nranks + 1));
    memset(q, 0, sizeof *q);
}

void zs_acctq_sleep(zs_acctq *q, int rank, int stream, double now, double period, int back)
{
    if (q->n + 2 > q->cap) /* the two records stay together */
        zs_acctq_flush(q);
    zs_acctq_put(q, rank, stream, now, ZS_ACCTQ_SLEEP, back, 0);
    zs_acctq_put(q, rank, stream, period, ZS_ACCTQ_SLEEP, 0, 0);
}

static zs_foldacct *acct_of(const zs_acctq *q, int rank)
{
    return (zs_foldacct *)(void *)(q->acct0 + q->stride * (size_t)rank);
}

/* What applying a rank's calls reads first: its header, its figures and
 * the streams' records; then (stage 2, which reads those records) the
 * ends of the streams' logs. */
static void fetch(const zs_acctq *q, int rank, int stage)
{
    const zs_foldacct *a = acct_of(q, rank);
    int nst = a->nst > 0 && a->nst < ZS_MAX_STREAMS ? a->nst : ZS_MAX_STREAMS;
    if (stage == 1) {
        ZS_PF(a);
        ZS_PF(q->res0 + q->stride * (size_t)rank);
        for (int s = 0; s < nst; s++)
            ZS_PF(&a->st[s]);
        return;
    }
    for (int s = 0; s < nst; s++) {
        const zs_foldacct_stream *st = &a->st[s];
        int k;
        if (st->log && st->nlog > 0)
            ZS_PF(zs_foldacct_log_at(st, st->nlog - 1, &k));
    }
}

/* Applies v[0 .. n), the calls of one rank in their order. */
static void apply(const zs_acctq *q, const zs_acctq_rec *v, int64_t n)
{
    zs_foldacct *a = acct_of(q, v[0].rank);
    zs_rank_result *r = (zs_rank_result *)(void *)(q->res0 + q->stride * (size_t)v[0].rank);
    for (int64_t i = 0; i < n; i++) {
        const zs_acctq_rec *e = &v[i];
        switch (e->kind) {
        case ZS_ACCTQ_CHANGE:
            zs_foldacct_change(a, r, e->stream, e->t, e->da, e->db);
            break;
        case ZS_ACCTQ_BOUNDARY:
            zs_foldacct_boundary(a, r, e->stream, e->t);
            break;
        case ZS_ACCTQ_SLEEP:
            zs_foldacct_sleep(a, r, e->stream, e->t, v[i + 1].t, e->da);
            i++;
            break;
        default:
            zs_foldacct_wake(a, r, e->stream, e->t);
            break;
        }
    }
}

void zs_acctq_flush(zs_acctq *q)
{
    int32_t *cnt = q->cnt;
    int nr = q->nranks;
    memset(cnt, 0, sizeof(int32_t) * ((size_t)nr + 1));
    for (int64_t i = 0; i < q->n; i++)
        cnt[q->v[i].rank + 1]++;
    for (int k = 0; k < nr; k++)
        cnt[k + 1] += cnt[k];
    for (int64_t i = 0; i < q->n; i++) /* stable: a rank's calls keep their order */
        q->tmp[cnt[q->v[i].rank]++] = q->v[i];
    /* cnt[k] is now where rank k + 1's calls start. */
    for (int k = 0; k < nr; k++) {
        if (k + AHEAD < nr)
            fetch(q, k + AHEAD, 1);
        if (k + AHEAD / 2 < nr)
            fetch(q, k + AHEAD / 2, 2);
        int32_t b = k > 0 ? cnt[k - 1] : 0;
        if (cnt[k] > b)
            apply(q, q->tmp + b, cnt[k] - b);
    }
    q->n = 0;
}

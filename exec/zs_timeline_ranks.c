/* Which ranks a timeline writes (zs_timeline.h: zs_tl_select): a list the
 * user gave, every rank, or the automatic choice that keeps a timeline
 * readable. The automatic choice estimates each rank's JSON from its ops
 * (an event's fixed part, its label, and a flow end per message) without
 * running anything, so it is known before the first event is written. */
#include "zs_timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_num.h"

/* Bytes of one event as zs_timeline writes it, beside its label: the
 * keys, times and args of a complete event (about 150), and for a send or
 * a receive its end of the message's flow (about 90). Measured on the
 * 518 MB timeline of 16 nodes: within 2%. */
#define EV_BYTES   150.0
#define FLOW_BYTES 90.0

static double g_limit = ZS_TL_LIMIT_DEFAULT;

double zs_timeline_limit(void)
{
    return g_limit;
}

void zs_timeline_limit_set(double bytes)
{
    g_limit = bytes > 0 ? bytes : ZS_TL_LIMIT_DEFAULT;
}

static int automatic(const char *spec)
{
    return !spec || !*spec;
}

/* Parses the list into on[0..n) (on may be NULL: a check only). */
static int parse_list(const char *spec, uint8_t *on, int n, int code, const char *where, zs_err *e)
{
    const char *fix = "give all, or ranks and ranges A-B separated by commas, e.g. 0,5,17-20";
    if (strlen(spec) >= ZS_TL_RANKS_LEN)
        return zs_err_set(e, code, where, "give a shorter list, or ranges A-B",
                          "rank list longer than %d characters", ZS_TL_RANKS_LEN - 1);
    if (!strcmp(spec, "all")) {
        if (on)
            memset(on, 1, (size_t)(n > 0 ? n : 0));
        return ZS_OK;
    }
    if (on)
        memset(on, 0, (size_t)(n > 0 ? n : 0));
    for (const char *p = spec;; p++) {
        size_t w = strcspn(p, ","); /* the item p[0, w): A or A-B */
        char a[32];
        int64_t x = 0, y = -1;
        if (w > 0 && w < sizeof a) {
            snprintf(a, sizeof a, "%.*s", (int)w, p);
            char *dash = strchr(a, '-');
            if (dash)
                *dash = '\0';
            if (zs_num_i64(a, 0, ZS_TL_MAX_RANK, code, where, &x, NULL) ||
                zs_num_i64(dash ? dash + 1 : a, 0, ZS_TL_MAX_RANK, code, where, &y, NULL))
                y = -1;
        }
        if (x > y)
            return zs_err_set(e, code, where, fix, "bad rank list '%s' (at '%.*s')", spec, (int)w,
                              p);
        for (int64_t r = x; on && r <= y && r < n; r++)
            on[r] = 1;
        p += w;
        if (!*p)
            return ZS_OK;
    }
}

int zs_tl_ranks_check(const char *spec, int code, const char *where, zs_err *e)
{
    return automatic(spec) ? ZS_OK : parse_list(spec, NULL, 0, code, where, e);
}

void zs_tl_ranks_format(const uint8_t *on, int n, char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = '\0';
    for (int r = 0; r < n && o < len; r++) {
        if (!on[r])
            continue;
        int q = r;
        while (q + 1 < n && on[q + 1])
            q++;
        o += (size_t)(q == r ? snprintf(buf + o, len - o, "%s%d", o ? "," : "", r)
                             : snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", r, q));
        r = q;
    }
}

/* Iterations it in [0, R) with l0 <= v + dir * it <= l1. */
static int32_t iters_in(int32_t v, int dir, int32_t R, int l0, int l1)
{
    int64_t a = dir > 0 ? (int64_t)l0 - v : (int64_t)v - l1;
    int64_t b = dir > 0 ? (int64_t)l1 - v : (int64_t)v - l0;
    a = a < 0 ? 0 : a;
    b = b > R - 1 ? R - 1 : b;
    return a <= b ? (int32_t)(b - a + 1) : 0;
}

/* A rank's estimated JSON bytes (at the layer limit) and compute seconds.
 * Layers follow the markers as zs_timeline counts them: the last marker
 * before an op, plus the iteration when it is in the op's own segment. */
static void estimate(const zs_schedule *s, const zs_tl_cfg *c, int r, double *bytes, double *busy)
{
    const zs_rank_prog *p = &s->ranks[r];
    int32_t lv = -1, ls = -1, ld = 1;
    *bytes = *busy = 0;
    for (int32_t sg = 0; sg < p->nsegs; sg++) {
        int32_t R = p->segs[sg].repeat;
        for (int64_t i = p->segs[sg].op0; i < p->segs[sg].op0 + p->segs[sg].nops; i++) {
            const zs_op *op = &p->ops[i];
            if (op->kind == ZS_OP_MARKER) {
                if (op->u.marker.mk == ZS_MARK_LAYER || op->u.marker.mk == ZS_MARK_LAYER_DOWN) {
                    lv = op->u.marker.value;
                    ls = sg;
                    ld = op->u.marker.mk == ZS_MARK_LAYER ? 1 : -1;
                }
                continue;
            }
            if (op->kind == ZS_OP_COMPUTE)
                *busy += op->duration * R;
            double b = EV_BYTES + (op->label < s->nlabels ? strlen(s->labels[op->label]) : 0);
            b += op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV ? FLOW_BYTES : 0;
            int32_t n = R;
            if (c->layer0 >= 0 && lv < 0) {
                n = 0;
            } else if (c->layer0 >= 0 && ls == sg) {
                n = iters_in(lv, ld, R, c->layer0, c->layer1);
            } else if (c->layer0 >= 0) {
                int64_t l = lv + (int64_t)ld * (p->segs[ls].repeat - 1);
                n = l >= c->layer0 && l <= c->layer1 ? R : 0;
            }
            *bytes += b * n;
        }
    }
}

/* Adds rank k to the automatic choice when it is new and fits. */
static void offer(uint8_t *on, int k, const double *bytes, double limit, double *sum, int *kept)
{
    if (on[k] || *kept >= ZS_TL_AUTO_RANKS || (*kept > 0 && *sum + bytes[k] > limit))
        return;
    on[k] = 1;
    *sum += bytes[k];
    (*kept)++;
}

/* The automatic choice over n ranks whose every rank takes `total`. */
static void choose(const zs_schedule *s, const double *bytes, const double *busy, double total,
                   uint8_t *on, char *note, size_t len)
{
    int n = s->nranks, most = 0, least = 0, kept = 0;
    for (int r = 1; r < n; r++) {
        most = busy[r] > busy[most] ? r : most;
        least = busy[r] < busy[least] ? r : least;
    }
    double limit = zs_timeline_limit(), sum = 0;
    memset(on, 0, (size_t)n);
    offer(on, most, bytes, limit, &sum, &kept);
    offer(on, least, bytes, limit, &sum, &kept);
    offer(on, 0, bytes, limit, &sum, &kept);
    offer(on, n - 1, bytes, limit, &sum, &kept);
    /* evenly spaced: n/8 apart, then halfway between those, ... */
    for (int step = ZS_TL_AUTO_RANKS; step <= 8 * ZS_TL_AUTO_RANKS && kept < ZS_TL_AUTO_RANKS;
         step *= 2)
        for (int j = 1; j < step; j++)
            offer(on, (int)((int64_t)j * n / step), bytes, limit, &sum, &kept);
    char list[ZS_TL_RANKS_LEN];
    zs_tl_ranks_format(on, n, list, sizeof list);
    snprintf(note, len,
             "%d of %d ranks: %s (kept in this order while they fit: the most compute in the "
             "plan, %d; the least, %d; rank 0; the last; evenly spaced ones); every rank would "
             "be about %.0f MB of JSON, over the "
             "%.0f MB limit (ZEPSIM_TIMELINE_MAX_MB): --timeline-ranks all writes every rank, "
             "--timeline-ranks 0,5,17-20 the ranks listed",
             kept, n, list, most, least, total / 1e6, limit / 1e6);
}

int zs_tl_select(const zs_schedule *s, const zs_tl_cfg *c, uint8_t *on, char *note, size_t len,
                 zs_err *e)
{
    int n = s->nranks;
    if (len)
        note[0] = '\0';
    if (!automatic(c->ranks))
        return parse_list(c->ranks, on, n, ZS_EUSAGE, "--timeline-ranks", e);
    memset(on, 1, (size_t)(n > 0 ? n : 0));
    double *bytes = malloc(sizeof(double) * (size_t)(n > 0 ? 2 * n : 1)), total = 0;
    if (!bytes)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory choosing timeline ranks");
    double *busy = bytes + n;
    for (int r = 0; r < n; r++) {
        estimate(s, c, r, &bytes[r], &busy[r]);
        total += bytes[r];
    }
    if (total > zs_timeline_limit() && n > 1)
        choose(s, bytes, busy, total, on, note, len);
    free(bytes);
    return ZS_OK;
}

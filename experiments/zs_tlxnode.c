/* Cross-node transfer times from a timeline: see zs_tlxnode_internal.h. */
#include "zs_tlxnode_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zs_fdio.h"
#include "zs_tlread_internal.h"

/* Bounds of a sane event, as zepsim writes them (microseconds). */
#define XN_MAX_TS  1e18
#define XN_MAX_DUR 1e15

/* One routed chunk's end: a send's start or a receive's end. */
typedef struct piece {
    int64_t iter, layer, tag;
    int64_t rank, peer;
    double t;
    int send;  /* 1: t is a send's start; 0: a receive's end */
    int cross; /* its rank and peer sit on different nodes */
} piece;

/* One end of a direct transfer: a send or a receive, posted at t0, done
 * at t1. */
typedef struct end {
    int64_t src, dst, tag;
    double t0, t1;
} end;

typedef struct scan {
    int gpn;
    double *dur; /* transfers' durations */
    size_t ndur, capdur;
    end *xf; /* transfers: src, dst, channel tag, start (t0) and arrival (t1) */
    size_t nxf, capxf;
    piece *pc; /* routed chunks */
    size_t npc, cappc;
    end *ends[2]; /* direct transfers' receives [0] and sends [1] */
    size_t nend[2], capend[2];
} scan;

static int grow(void **p, size_t *cap, size_t n, size_t size, const char *path, zs_err *e)
{
    if (n < *cap)
        return ZS_OK;
    if ((n + 1) * size > zs_input_limit())
        return zs_err_set(e, ZS_EINPUT, path,
                          "write the timeline of fewer ranks (--timeline-ranks) or raise the "
                          "limit with the environment variable ZEPSIM_MAX_INPUT_MB",
                          "more transfer events than the %zu MiB input limit holds",
                          zs_input_limit() >> 20);
    size_t c = *cap ? 2 * *cap : 1024;
    void *q = realloc(*p, c * size);
    if (!q)
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the timeline");
    *p = q;
    *cap = c;
    return ZS_OK;
}

static int bad(zs_err *e, const char *path, size_t i, const char *what)
{
    char where[512];
    snprintf(where, sizeof where, "%s: event %zu", path, i);
    return zs_err_set(e, ZS_EINPUT, where,
                      "measure timelines written by zepsim (`--timeline FILE`)",
                      "a send or receive event %s", what);
}

/* args' integer member key in [-1, 2^40], or def when absent; -2 when
 * present but not such an integer. */
static int64_t arg_int(json_t *args, const char *key, int64_t def)
{
    json_t *v = json_object_get(args, key);
    if (!v)
        return def;
    if (!json_is_integer(v) || json_integer_value(v) < -1 ||
        json_integer_value(v) > ((json_int_t)1 << 40))
        return -2;
    return (int64_t)json_integer_value(v);
}

static int on_event(void *arg, const char *path, size_t i, json_t *o, zs_err *e)
{
    scan *s = arg;
    json_t *ph = json_object_get(o, "ph"), *cat = json_object_get(o, "cat");
    if (!json_is_string(ph) || strcmp(json_string_value(ph), "X") != 0 || !json_is_string(cat))
        return ZS_OK;
    int send = !strcmp(json_string_value(cat), "send");
    if (!send && strcmp(json_string_value(cat), "recv") != 0)
        return ZS_OK;
    json_t *name = json_object_get(o, "name"), *args = json_object_get(o, "args");
    json_t *ts = json_object_get(o, "ts"), *dur = json_object_get(o, "dur");
    if (!json_is_string(name) || !json_is_object(args))
        return bad(e, path, i, "without a string \"name\" and an object \"args\"");
    if (!json_is_number(ts) || !json_is_number(dur) || !(json_number_value(dur) >= 0) ||
        !(fabs(json_number_value(ts)) <= XN_MAX_TS) || !(json_number_value(dur) <= XN_MAX_DUR))
        return bad(e, path, i, "without numbers \"ts\" and \"dur\" >= 0 (microseconds)");
    int64_t rank = arg_int(args, "rank", -2), peer = arg_int(args, "peer", -2);
    int64_t tag = arg_int(args, "tag", 0), layer = arg_int(args, "layer", -1);
    int64_t iter = arg_int(args, "iter", 0);
    if (rank < 0 || peer < 0 || tag < -1 || layer < -1 || iter < -1)
        return bad(e, path, i,
                   "without integer \"args\" rank and peer (>= 0), and tag, layer, iter (if "
                   "given)");
    json_t *phase = json_object_get(args, "phase");
    if (json_is_string(phase) && strcmp(json_string_value(phase), "forward") != 0)
        return ZS_OK; /* the forward pass's transfers only: see zs_tlxnode_internal.h */
    int cross = rank / s->gpn != peer / s->gpn;
    double t0 = json_number_value(ts), t1 = t0 + json_number_value(dur);
    if (strncmp(json_string_value(name), "route-", 6) != 0) {
        if (!cross)
            return ZS_OK;
        if (grow((void **)&s->ends[send], &s->capend[send], s->nend[send], sizeof(end), path, e))
            return e->code;
        s->ends[send][s->nend[send]++] = (end){
            .src = send ? rank : peer, .dst = send ? peer : rank, .tag = tag, .t0 = t0, .t1 = t1};
        return ZS_OK;
    }
    if (grow((void **)&s->pc, &s->cappc, s->npc, sizeof *s->pc, path, e))
        return e->code;
    s->pc[s->npc++] = (piece){.iter = iter,
                              .layer = layer,
                              .tag = tag,
                              .rank = rank,
                              .peer = peer,
                              .t = send ? t0 : t1,
                              .send = send,
                              .cross = cross};
    return ZS_OK;
}

static int cmp_piece(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    if (x->iter != y->iter)
        return x->iter < y->iter ? -1 : 1;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int add_xfer(scan *s, const char *path, end x, zs_err *e)
{
    if (grow((void **)&s->xf, &s->capxf, s->nxf, sizeof *s->xf, path, e))
        return e->code;
    s->xf[s->nxf++] = x;
    return ZS_OK;
}

/* Whether rank r receives (dir 0) or sends (dir 1) a chunk in pc[a, b). */
static int in_group(const piece *pc, size_t a, size_t b, int64_t r, int dir)
{
    for (size_t k = a; k < b; k++)
        if (pc[k].send == dir && pc[k].rank == r)
            return 1;
    return 0;
}

/* Folds the routed chunks into one transfer each (a run of equal
 * iteration, layer and tag): from its origin (the rank that sends chunks
 * and receives none) to its destination (the rank that receives and sends
 * none), from its first chunk sent to its last received. Its channel is
 * the path (tag -1): the transfers of successive ring steps. */
static int fold_routed(scan *s, const char *path, size_t *nrouted, zs_err *e)
{
    if (s->npc > 1) /* qsort takes no NULL, even for no elements */
        qsort(s->pc, s->npc, sizeof *s->pc, cmp_piece);
    *nrouted = 0;
    for (size_t a = 0, b; a < s->npc; a = b) {
        double first = INFINITY, last = -INFINITY;
        int cross = 0;
        int64_t from = -1, to = -1;
        for (b = a; b < s->npc && !cmp_piece(&s->pc[a], &s->pc[b]); b++)
            cross |= s->pc[b].cross;
        for (size_t k = a; k < b; k++) {
            const piece *q = &s->pc[k];
            if (q->send && q->t < first)
                first = q->t;
            if (!q->send && q->t > last)
                last = q->t;
            if (q->send && from < 0 && !in_group(s->pc, a, b, q->rank, 0))
                from = q->rank;
            if (!q->send && to < 0 && !in_group(s->pc, a, b, q->rank, 1))
                to = q->rank;
        }
        /* a rank subset may hold only one end of a transfer */
        if (!cross || from < 0 || to < 0 || !isfinite(first) || !isfinite(last) || last < first)
            continue;
        if (add_xfer(s, path, (end){.src = from, .dst = to, .tag = -1, .t0 = first, .t1 = last}, e))
            return e->code;
        (*nrouted)++;
    }
    return ZS_OK;
}

static int cmp_end(const void *a, const void *b)
{
    const end *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Pairs the direct transfers' sends with their receives (a channel, its
 * source, destination and tag, delivers in posting order): a transfer
 * starts when both ends are posted and arrives when its receive ends. A
 * send without its receive in the timeline (a rank subset) is not
 * counted. */
static int pair_direct(scan *s, const char *path, zs_err *e)
{
    end *r = s->ends[0], *t = s->ends[1];
    size_t nr = s->nend[0], nt = s->nend[1];
    if (nr > 1)
        qsort(r, nr, sizeof *r, cmp_end);
    if (nt > 1)
        qsort(t, nt, sizeof *t, cmp_end);
    for (size_t i = 0, j = 0; i < nr && j < nt;) {
        if (r[i].src != t[j].src || r[i].dst != t[j].dst || r[i].tag != t[j].tag) {
            if (cmp_end(&r[i], &t[j]) < 0)
                i++;
            else
                j++;
            continue;
        }
        end x = r[i];
        x.t0 = fmax(r[i].t0, t[j].t0);
        if (add_xfer(s, path, x, e))
            return e->code;
        i++;
        j++;
    }
    return ZS_OK;
}

/* Each transfer's time on its channel: from its start, or the arrival of
 * the channel's previous transfer if later (it queued behind it: a ring's
 * steps follow one another), to its arrival. Appended to s->dur. */
static int channel_times(scan *s, const char *path, zs_err *e)
{
    if (s->nxf > 1)
        qsort(s->xf, s->nxf, sizeof *s->xf, cmp_end);
    double prev = -INFINITY;
    for (size_t k = 0; k < s->nxf; k++) {
        const end *x = &s->xf[k];
        if (k == 0 || x->src != x[-1].src || x->dst != x[-1].dst || x->tag != x[-1].tag)
            prev = -INFINITY;
        double start = fmax(x->t0, prev);
        if (grow((void **)&s->dur, &s->capdur, s->ndur, sizeof *s->dur, path, e))
            return e->code;
        s->dur[s->ndur++] = x->t1 > start ? x->t1 - start : 0;
        prev = fmax(prev, x->t1);
    }
    return ZS_OK;
}

int zs_tlxnode_file(const char *path, int gpus_per_node, zs_tlxnode *out, zs_err *e)
{
    memset(out, 0, sizeof *out);
    if (gpus_per_node < 1)
        return zs_err_set(e, ZS_EUSAGE, path, NULL, "%d GPUs per node", gpus_per_node);
    scan s = {.gpn = gpus_per_node};
    int rc = zs_tlread_file(path, on_event, &s, e);
    size_t nrouted = 0;
    if (!rc)
        rc = pair_direct(&s, path, e);
    if (!rc)
        rc = fold_routed(&s, path, &nrouted, e);
    if (!rc)
        rc = channel_times(&s, path, e);
    if (!rc && s.ndur) {
        qsort(s.dur, s.ndur, sizeof *s.dur, cmp_double);
        double sum = 0;
        for (size_t k = 0; k < s.ndur; k++)
            sum += s.dur[k];
        out->n = s.ndur;
        out->n_routed = nrouted;
        out->median_us =
            s.ndur % 2 ? s.dur[s.ndur / 2] : 0.5 * (s.dur[s.ndur / 2 - 1] + s.dur[s.ndur / 2]);
        out->mean_us = sum / (double)s.ndur;
        out->max_us = s.dur[s.ndur - 1];
    }
    free(s.dur);
    free(s.pc);
    free(s.ends[0]);
    free(s.ends[1]);
    free(s.xf);
    return rc;
}

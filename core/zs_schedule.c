/* The schedule IR: building and reading. See zs_schedule.h; the dump and
 * reload live in zs_schedule_io.c. */
#include "zs_schedule.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"
#include "zs_schedule_internal.h"

/* ---- the first failure ---------------------------------------------------- */

static int64_t next_op(const zs_schedule *s, int rank)
{
    return rank >= 0 && rank < s->nranks ? s->ranks[rank].nops : -1;
}

/* Records a failure unless one is recorded already; returns the recorded
 * code (the first failure's). */
static int fail(zs_schedule *s, int code, int rank, int64_t op, const char *label, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));

static int fail(zs_schedule *s, int code, int rank, int64_t op, const char *label, const char *fmt,
                ...)
{
    zs_sched_error *f = &s->error;
    if (f->code != ZS_OK)
        return f->code;
    f->code = code;
    f->rank = rank;
    f->op = op;
    snprintf(f->label, sizeof f->label, "%s", label ? label : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    return code;
}

int zs_schedule_check(const zs_schedule *s, zs_err *e)
{
    const zs_sched_error *f = &s->error;
    if (f->code == ZS_OK)
        return ZS_OK;
    char where[160], op[32] = "", label[80] = "";
    if (f->op >= 0)
        snprintf(op, sizeof op, ", op %lld", (long long)f->op);
    if (f->label[0])
        snprintf(label, sizeof label, " \"%s\"", f->label);
    if (f->rank >= 0)
        snprintf(where, sizeof where, "schedule builder: rank %d%s%s", f->rank, op, label);
    else
        snprintf(where, sizeof where, "schedule builder%s", label);
    const char *fix = f->code == ZS_ENOMEM
                          ? "use fewer GPUs or a smaller batch, or free memory"
                          : "the planner broke a schedule invariant: this is a planner bug, "
                            "report it with the command line";
    return zs_err_set(e, f->code, where, fix, "%s", f->msg);
}

/* A number the builder stores must be finite and not negative. */
static int bad_amount(double x)
{
    return !(x >= 0) || isinf(x);
}

/* ---- storage ------------------------------------------------------------------ */

/* Grows *arr (element size sz) to hold at least need elements. */
static int grow32(void **arr, int32_t *cap, int64_t need, size_t sz)
{
    int64_t c = *cap;
    int rc = zs_grow(arr, &c, need, sz);
    *cap = (int32_t)c;
    return rc;
}

/* Grows *arr to exactly need elements when it holds fewer (a copy whose
 * size is known). */
static int reserve(void **arr, int64_t *cap, int64_t need, size_t sz)
{
    if (need <= *cap)
        return ZS_OK;
    void *p = realloc(*arr, (size_t)need * sz);
    if (!p)
        return ZS_ENOMEM;
    *arr = p;
    *cap = need;
    return ZS_OK;
}

static int reserve32(void **arr, int32_t *cap, int64_t need, size_t sz)
{
    int64_t c = *cap;
    int rc = reserve(arr, &c, need, sz);
    *cap = (int32_t)c;
    return rc;
}

zs_schedule *zs_schedule_new(int nranks)
{
    if (nranks < 1)
        return NULL;
    zs_schedule *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nranks = nranks;
    s->ranks = calloc((size_t)nranks, sizeof *s->ranks);
    s->dims = (zs_layout_dims){1, 1, 1, nranks};
    s->micro_batches = 1;
    s->layers = 1;
    s->heads = 1;
    s->error.rank = -1;
    s->error.op = -1;
    if (!s->ranks || zs_schedule_add_stream(s, "compute") < 0 ||
        zs_schedule_add_stream(s, "comm") < 0) {
        zs_schedule_free(s);
        return NULL;
    }
    return s;
}

void zs_schedule_free(zs_schedule *s)
{
    if (!s)
        return;
    for (int r = 0; s->ranks && r < s->nranks; r++) {
        free(s->ranks[r].ops);
        free(s->ranks[r].deps);
        free(s->ranks[r].segs);
    }
    free(s->ranks);
    free(s->blocks);
    free(s->carry);
    for (int32_t g = 0; g < s->ngroups; g++)
        free(s->groups[g].ranks);
    free(s->groups);
    for (int32_t i = 0; i < s->nlabels; i++)
        free(s->labels[i]);
    free(s->labels);
    free(s->doc_len);
    free(s->pieces);
    free(s);
}

/* ---- streams, labels, groups, the plan -------------------------------------- */

int zs_schedule_add_stream(zs_schedule *s, const char *name)
{
    if (s->error.code)
        return s->error.code;
    if (s->nstreams >= ZS_MAX_STREAMS)
        return fail(s, ZS_EINVALID, -1, -1, NULL,
                    "no room for stream \"%s\": a schedule has at most %d streams", name,
                    ZS_MAX_STREAMS);
    if (strlen(name) >= sizeof s->stream_names[0])
        return fail(s, ZS_EINVALID, -1, -1, NULL, "stream name \"%s\" longer than %d characters",
                    name, (int)sizeof s->stream_names[0] - 1);
    snprintf(s->stream_names[s->nstreams], sizeof s->stream_names[0], "%s", name);
    return s->nstreams++;
}

/* Interns a label for an op of a rank (rank -1: for no op). */
static int intern(zs_schedule *s, const char *name, int rank)
{
    if (s->error.code)
        return s->error.code;
    /* Planners append ops of the same label in runs: check the last hit first. */
    int32_t h = s->label_hint;
    if (h >= 0 && h < s->nlabels && strcmp(s->labels[h], name) == 0)
        return h;
    for (int32_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i], name) == 0) {
            s->label_hint = i;
            return i;
        }
    if (s->nlabels >= 65535)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), name,
                    "more than 65535 distinct labels");
    char *d = NULL;
    size_t n = strlen(name) + 1;
    if (grow32((void **)&s->labels, &s->labels_cap, s->nlabels + 1, sizeof(char *)) ||
        !(d = malloc(n)))
        return fail(s, ZS_ENOMEM, rank, next_op(s, rank), name, "out of memory adding a label");
    memcpy(d, name, n);
    s->labels[s->nlabels] = d;
    s->label_hint = s->nlabels;
    return s->nlabels++;
}

int zs_schedule_label(zs_schedule *s, const char *name)
{
    return intern(s, name, -1);
}

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int zs_schedule_group(zs_schedule *s, const int *ranks, int n)
{
    return zs_schedule_group_tagged(s, ranks, n, 0);
}

int zs_group_index(const zs_group *g, int rank)
{
    int32_t lo = 0, hi = g->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (g->ranks[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n && g->ranks[lo] == rank ? lo : -1;
}

int zs_schedule_group_tagged(zs_schedule *s, const int *ranks, int n, int tag)
{
    if (s->error.code)
        return s->error.code;
    if (n < 1)
        return fail(s, ZS_EINVALID, -1, -1, NULL, "a group of %d ranks (needs at least one)", n);
    for (int i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= s->nranks)
            return fail(s, ZS_EINVALID, -1, -1, NULL,
                        "group member %d is not a rank of this %d-rank schedule", ranks[i],
                        s->nranks);
    int32_t *sorted = malloc(sizeof(int32_t) * (size_t)n);
    if (!sorted)
        return fail(s, ZS_ENOMEM, -1, -1, NULL, "out of memory adding a group of %d ranks", n);
    for (int i = 0; i < n; i++)
        sorted[i] = ranks[i];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_int32);
    for (int i = 1; i < n; i++)
        if (sorted[i] == sorted[i - 1]) {
            int r = sorted[i];
            free(sorted);
            return fail(s, ZS_EINVALID, -1, -1, NULL, "rank %d twice in a group", r);
        }
    for (int32_t g = s->ngroups - 1; g >= 0; g--)
        if (s->groups[g].n == n && s->groups[g].tag == tag &&
            memcmp(s->groups[g].ranks, sorted, sizeof(int32_t) * n) == 0) {
            free(sorted);
            return g;
        }
    if (grow32((void **)&s->groups, &s->groups_cap, s->ngroups + 1, sizeof(zs_group))) {
        free(sorted);
        return fail(s, ZS_ENOMEM, -1, -1, NULL, "out of memory adding a group of %d ranks", n);
    }
    s->groups[s->ngroups].n = n;
    s->groups[s->ngroups].ranks = sorted;
    s->groups[s->ngroups].tag = tag;
    return s->ngroups++;
}

int zs_schedule_set_docs(zs_schedule *s, const int32_t *len, int32_t ndocs)
{
    if (s->error.code)
        return s->error.code;
    if (ndocs < 0)
        return fail(s, ZS_EINVALID, -1, -1, NULL, "%d documents", ndocs);
    int32_t *d = malloc(sizeof(int32_t) * (size_t)(ndocs > 0 ? ndocs : 1));
    if (!d)
        return fail(s, ZS_ENOMEM, -1, -1, NULL, "out of memory storing %d documents", ndocs);
    if (ndocs > 0)
        memcpy(d, len, sizeof(int32_t) * (size_t)ndocs);
    free(s->doc_len);
    s->doc_len = d;
    s->ndocs = ndocs;
    return ZS_OK;
}

int zs_schedule_add_piece(zs_schedule *s, int32_t doc, int32_t t0, int32_t t1, int32_t rank,
                          zs_layout layout, int micro)
{
    if (s->error.code)
        return s->error.code;
    if (doc < 0 || doc >= s->ndocs)
        return fail(s, ZS_EINVALID, -1, -1, NULL, "piece of document %d: the plan has %d documents",
                    doc, s->ndocs);
    if (rank < 0 || rank >= s->nranks)
        return fail(s, ZS_EINVALID, -1, -1, NULL,
                    "piece of document %d on rank %d: not a rank of this %d-rank schedule", doc,
                    rank, s->nranks);
    if ((layout != ZS_LAYOUT_ATTN && layout != ZS_LAYOUT_LINEAR) || micro < 0 || micro > 32767)
        return fail(s, ZS_EINVALID, rank, -1, NULL,
                    "piece of document %d: layout %d or micro-batch %d out of range", doc,
                    (int)layout, micro);
    if (zs_grow((void **)&s->pieces, &s->pieces_cap, s->npieces + 1, sizeof(zs_piece)))
        return fail(s, ZS_ENOMEM, rank, -1, NULL, "out of memory adding a piece of document %d",
                    doc);
    zs_piece *p = &s->pieces[s->npieces++];
    p->doc = doc;
    p->t0 = t0;
    p->t1 = t1;
    p->rank = rank;
    p->layout = (uint8_t)layout;
    p->micro = (int16_t)micro;
    return ZS_OK;
}

/* ---- programs ----------------------------------------------------------------- */

int zs_schedule_begin_segment(zs_schedule *s, int rank, int repeat)
{
    if (s->error.code)
        return s->error.code;
    if (rank < 0 || rank >= s->nranks)
        return fail(s, ZS_EINVALID, rank, -1, NULL,
                    "segment on rank %d: not a rank of this %d-rank schedule", rank, s->nranks);
    if (repeat < 1)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), NULL,
                    "segment repeated %d times (at least once)", repeat);
    zs_rank_prog *p = &s->ranks[rank];
    /* An empty last segment is reused rather than left behind. */
    if (p->nsegs > 0 && p->segs[p->nsegs - 1].nops == 0) {
        p->segs[p->nsegs - 1].repeat = repeat;
        return ZS_OK;
    }
    if (grow32((void **)&p->segs, &p->segs_cap, p->nsegs + 1, sizeof(zs_segment)))
        return fail(s, ZS_ENOMEM, rank, p->nops, NULL, "out of memory adding a segment");
    p->segs[p->nsegs].op0 = p->nops;
    p->segs[p->nsegs].nops = 0;
    p->segs[p->nsegs].repeat = repeat;
    p->nsegs++;
    return ZS_OK;
}

/* Appends a zeroed op with its common fields; returns its index or the
 * recorded failure. what: the op for messages ("gemm", "send", ...). */
static int64_t append(zs_schedule *s, int rank, int stream, const char *label, zs_op_kind kind,
                      const char *what, const int64_t *deps, int ndeps)
{
    if (s->error.code)
        return s->error.code;
    label = label ? label : "";
    if (rank < 0 || rank >= s->nranks)
        return fail(s, ZS_EINVALID, rank, -1, label,
                    "%s on rank %d: not a rank of this %d-rank "
                    "schedule",
                    what, rank, s->nranks);
    zs_rank_prog *p = &s->ranks[rank];
    if (stream < 0 || stream >= s->nstreams)
        return fail(s, ZS_EINVALID, rank, p->nops, label,
                    "%s on stream %d: the schedule has %d streams", what, stream, s->nstreams);
    if (ndeps < 0 || ndeps > 32767)
        return fail(s, ZS_EINVALID, rank, p->nops, label, "%s with %d dependencies (0 to 32767)",
                    what, ndeps);
    for (int i = 0; i < ndeps; i++)
        if (deps[i] < 0 || deps[i] >= p->nops) /* only earlier ops: keeps programs acyclic */
            return fail(s, ZS_EINVALID, rank, p->nops, label,
                        "%s depends on op %lld, not an earlier op of rank %d (%lld ops so far)",
                        what, (long long)deps[i], rank, (long long)p->nops);
    int lab = intern(s, label, rank);
    if (lab < 0)
        return lab;
    if (p->nsegs == 0 && zs_schedule_begin_segment(s, rank, 1))
        return s->error.code;
    if (zs_grow((void **)&p->ops, &p->ops_cap, p->nops + 1, sizeof(zs_op)) ||
        zs_grow((void **)&p->deps, &p->deps_cap, p->ndeps + ndeps, sizeof(int32_t)))
        return fail(s, ZS_ENOMEM, rank, p->nops, label, "out of memory appending a %s", what);
    zs_op *op = &p->ops[p->nops];
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    op->stream = (uint8_t)stream;
    op->label = (uint16_t)lab;
    op->ndeps = ndeps;
    op->dep0 = p->ndeps;
    for (int i = 0; i < ndeps; i++)
        p->deps[p->ndeps++] = (int32_t)deps[i];
    p->segs[p->nsegs - 1].nops++;
    return p->nops++;
}

int64_t zs__sched_attn_ref(zs_schedule *s, int rank, int stream, const char *label, int backward,
                           int64_t block0, int nblocks, int heads, double duration,
                           const int64_t *deps, int ndeps)
{
    if (s->error.code)
        return s->error.code;
    if (nblocks < 1 || block0 < 0 || block0 + nblocks > s->nblocks)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "attention over blocks [%lld, %lld) of a pool of %lld", (long long)block0,
                    (long long)block0 + nblocks, (long long)s->nblocks);
    if (heads < 1 || heads > 32767)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "attention with %d heads (1 to 32767)", heads);
    if (bad_amount(duration))
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "attention with duration %g s (finite, >= 0)", duration);
    zs_compute_kind ck = backward ? ZS_CK_ATTN_BWD : ZS_CK_ATTN_FWD;
    int64_t i =
        append(s, rank, stream, label, ZS_OP_COMPUTE, zs_compute_kind_name(ck), deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->duration = duration;
    op->u.compute.ck = (uint8_t)ck;
    op->u.compute.heads = (int16_t)heads;
    op->u.compute.nblocks = nblocks;
    op->u.compute.block0 = block0;
    return i;
}

int64_t zs_sched_attn(zs_schedule *s, int rank, int stream, const char *label, int backward,
                      const zs_attn_block *b, int nblocks, int heads, double duration,
                      const int64_t *deps, int ndeps)
{
    if (s->error.code)
        return s->error.code;
    if (nblocks < 1)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "attention over %d blocks (at least one)", nblocks);
    if (zs_grow((void **)&s->blocks, &s->blocks_cap, s->nblocks + nblocks, sizeof(zs_attn_block)))
        return fail(s, ZS_ENOMEM, rank, next_op(s, rank), label,
                    "out of memory adding %d attention blocks", nblocks);
    int64_t block0 = s->nblocks;
    memcpy(s->blocks + block0, b, sizeof(zs_attn_block) * (size_t)nblocks);
    s->nblocks += nblocks;
    int64_t i = zs__sched_attn_ref(s, rank, stream, label, backward, block0, nblocks, heads,
                                   duration, deps, ndeps);
    if (i < 0)
        s->nblocks = block0; /* a failed append leaves the pool as it was */
    return i;
}

/* A compute op of kind ck (GEMM or elementwise). */
static int64_t compute(zs_schedule *s, int rank, int stream, const char *label, zs_compute_kind ck,
                       double duration, const int64_t *deps, int ndeps)
{
    if (s->error.code)
        return s->error.code;
    if (bad_amount(duration))
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "%s with duration %g s (finite, >= 0)", zs_compute_kind_name(ck), duration);
    int64_t i =
        append(s, rank, stream, label, ZS_OP_COMPUTE, zs_compute_kind_name(ck), deps, ndeps);
    if (i >= 0) {
        s->ranks[rank].ops[i].duration = duration;
        s->ranks[rank].ops[i].u.compute.ck = (uint8_t)ck;
    }
    return i;
}

int64_t zs_sched_gemm(zs_schedule *s, int rank, int stream, const char *label, double m, double n,
                      double k, double duration, const int64_t *deps, int ndeps)
{
    if (!s->error.code && (bad_amount(m) || bad_amount(n) || bad_amount(k)))
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "gemm of shape %g x %g x %g (finite, >= 0)", m, n, k);
    int64_t i = compute(s, rank, stream, label, ZS_CK_GEMM, duration, deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->u.compute.m = m;
    op->u.compute.n = n;
    op->u.compute.k = k;
    return i;
}

int64_t zs_sched_elementwise(zs_schedule *s, int rank, int stream, const char *label, double bytes,
                             double duration, const int64_t *deps, int ndeps)
{
    if (!s->error.code && bad_amount(bytes))
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "elementwise op over %g bytes (finite, >= 0)", bytes);
    int64_t i = compute(s, rank, stream, label, ZS_CK_ELEMWISE, duration, deps, ndeps);
    if (i >= 0)
        s->ranks[rank].ops[i].u.compute.bytes = bytes;
    return i;
}

int64_t zs_sched_host_copy(zs_schedule *s, int rank, int stream, const char *label, int to_host,
                           double bytes, double duration, const int64_t *deps, int ndeps)
{
    if (!s->error.code && bad_amount(bytes))
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "host copy of %g bytes (finite, >= 0)", bytes);
    int64_t i =
        compute(s, rank, stream, label, to_host ? ZS_CK_D2H : ZS_CK_H2D, duration, deps, ndeps);
    if (i >= 0)
        s->ranks[rank].ops[i].u.compute.bytes = bytes;
    return i;
}

int zs_schedule_has_host_copies(const zs_schedule *s)
{
    for (int r = 0; r < s->nranks; r++)
        for (int64_t i = 0; i < s->ranks[r].nops; i++)
            if (s->ranks[r].ops[i].kind == ZS_OP_COMPUTE &&
                zs_ck_is_host_copy(s->ranks[r].ops[i].u.compute.ck))
                return 1;
    return 0;
}

static int64_t p2p(zs_schedule *s, zs_op_kind kind, int rank, int stream, const char *label,
                   int peer, int tag, double bytes, const int64_t *deps, int ndeps)
{
    if (s->error.code)
        return s->error.code;
    const char *what = kind == ZS_OP_SEND ? "send to" : "receive from";
    if (peer < 0 || peer >= s->nranks)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "%s peer %d: not a rank of this %d-rank schedule", what, peer, s->nranks);
    if (peer == rank)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "%s peer %d: a rank cannot message itself", what, peer);
    if (bad_amount(bytes))
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "%s peer %d: %g bytes (finite, >= 0)", what, peer, bytes);
    int64_t i = append(s, rank, stream, label, kind, zs_op_kind_name(kind), deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->u.p2p.peer = peer;
    op->u.p2p.tag = tag;
    op->u.p2p.bytes = bytes;
    return i;
}

int64_t zs_sched_send(zs_schedule *s, int rank, int stream, const char *label, int peer, int tag,
                      double bytes, const int64_t *deps, int ndeps)
{
    return p2p(s, ZS_OP_SEND, rank, stream, label, peer, tag, bytes, deps, ndeps);
}

int64_t zs_sched_recv(zs_schedule *s, int rank, int stream, const char *label, int peer, int tag,
                      double bytes, const int64_t *deps, int ndeps)
{
    return p2p(s, ZS_OP_RECV, rank, stream, label, peer, tag, bytes, deps, ndeps);
}

void zs_sched_xfer(zs_schedule *s, const zs_xfer *x, const char *label, int64_t *src_op,
                   int64_t *dst_op)
{
    int64_t d[1] = {x->dst_dep};
    *src_op = zs_sched_send(s, x->src, x->stream, label, x->dst, x->tag, x->bytes, x->src_deps,
                            x->nsrc_deps);
    zs_sched_set_carry(s, x->src, *src_op, x->carry0, x->ncarry);
    *dst_op =
        zs_sched_recv(s, x->dst, x->stream, label, x->src, x->tag, x->bytes, d, x->dst_dep >= 0);
    zs_sched_set_carry(s, x->dst, *dst_op, x->carry0, x->ncarry);
}

int64_t zs_schedule_carry(zs_schedule *s, const zs_carry *c, int n)
{
    if (s->error.code)
        return s->error.code;
    if (n < 1)
        return fail(s, ZS_EINVALID, -1, -1, NULL, "a carry list of %d entries (at least one)", n);
    for (int i = 0; i < n; i++)
        if (c[i].doc < 0 || c[i].doc >= s->ndocs || bad_amount(c[i].bytes))
            return fail(s, ZS_EINVALID, -1, -1, NULL,
                        "carry entry %d: document %d of %d, %g bytes (finite, >= 0)", i, c[i].doc,
                        s->ndocs, c[i].bytes);
    if (zs_grow((void **)&s->carry, &s->carry_cap, s->ncarry + n, sizeof(zs_carry)))
        return fail(s, ZS_ENOMEM, -1, -1, NULL, "out of memory adding a carry list");
    int64_t c0 = s->ncarry;
    memcpy(s->carry + c0, c, sizeof(zs_carry) * (size_t)n);
    s->ncarry += n;
    return c0;
}

int64_t zs_schedule_carry_scaled(zs_schedule *s, int64_t c0, int n, double bytes)
{
    if (s->error.code)
        return s->error.code;
    if (n < 1 || c0 < 0 || c0 + n > s->ncarry || bad_amount(bytes))
        return fail(s, ZS_EINVALID, -1, -1, NULL,
                    "scaled copy of carry entries [%lld, %lld) of %lld to %g bytes", (long long)c0,
                    (long long)c0 + n, (long long)s->ncarry, bytes);
    if (zs_grow((void **)&s->carry, &s->carry_cap, s->ncarry + n, sizeof(zs_carry)))
        return fail(s, ZS_ENOMEM, -1, -1, NULL, "out of memory adding a carry list");
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += s->carry[c0 + i].bytes;
    double f = sum > 0 ? bytes / sum : 0;
    int64_t out = s->ncarry;
    for (int i = 0; i < n; i++) {
        s->carry[out + i].doc = s->carry[c0 + i].doc;
        /* Equal parts when the list carries nothing (all zero). */
        s->carry[out + i].bytes = sum > 0 ? s->carry[c0 + i].bytes * f : bytes / n;
    }
    s->ncarry += n;
    return out;
}

int zs_sched_set_carry(zs_schedule *s, int rank, int64_t op, int64_t c0, int n)
{
    if (s->error.code || op < 0)
        return s->error.code;
    if (rank < 0 || rank >= s->nranks || op >= s->ranks[rank].nops)
        return fail(s, ZS_EINVALID, rank, op, NULL, "carry list on op %lld of rank %d: no such op",
                    (long long)op, rank);
    zs_op *o = &s->ranks[rank].ops[op];
    if (o->kind != ZS_OP_SEND && o->kind != ZS_OP_RECV)
        return fail(s, ZS_EINVALID, rank, op, s->labels[o->label],
                    "carry list on a %s op (sends and receives only)", zs_op_kind_name(o->kind));
    if (n < 0 || (n > 0 && (c0 < 0 || c0 + n > s->ncarry)))
        return fail(s, ZS_EINVALID, rank, op, s->labels[o->label],
                    "carry entries [%lld, %lld) of a pool of %lld", (long long)c0,
                    (long long)c0 + n, (long long)s->ncarry);
    o->u.p2p.carry0 = n > 0 ? c0 : 0;
    o->u.p2p.ncarry = n;
    return ZS_OK;
}

int64_t zs_sched_coll(zs_schedule *s, int rank, int stream, const char *label, int group,
                      zs_coll_kind kind, double bytes, const int64_t *deps, int ndeps)
{
    if (s->error.code)
        return s->error.code;
    if (group < 0 || group >= s->ngroups)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "collective on group %d: the schedule has %d groups", group, s->ngroups);
    if ((int)kind < 0 || kind >= ZS_COLL_NKINDS)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label, "collective of unknown kind %d",
                    (int)kind);
    if (bad_amount(bytes))
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), label,
                    "%s over %g bytes (finite, >= 0)", zs_coll_kind_name(kind), bytes);
    int64_t i = append(s, rank, stream, label, ZS_OP_COLL, zs_coll_kind_name(kind), deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->u.coll.group = group;
    op->u.coll.ck = (uint8_t)kind;
    op->u.coll.bytes = bytes;
    return i;
}

int64_t zs_sched_marker(zs_schedule *s, int rank, zs_marker_kind mk, int value)
{
    static const char *names[] = {"layer", "phase", "micro-batch", "layer"};
    if (s->error.code)
        return s->error.code;
    if ((int)mk < 0 || mk >= ZS_MARK_NKINDS)
        return fail(s, ZS_EINVALID, rank, next_op(s, rank), NULL, "marker of unknown kind %d",
                    (int)mk);
    int64_t i = append(s, rank, ZS_STREAM_COMPUTE, names[mk], ZS_OP_MARKER, "marker", NULL, 0);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->u.marker.mk = (uint8_t)mk;
    op->u.marker.value = value;
    return i;
}

void zs_schedule_flag_ops(zs_schedule *s, int rank, int64_t from, unsigned flags)
{
    if (s->error.code)
        return;
    if (rank < 0 || rank >= s->nranks) {
        fail(s, ZS_EINVALID, rank, -1, NULL,
             "flags on rank %d: not a rank of this %d-rank schedule", rank, s->nranks);
        return;
    }
    zs_rank_prog *p = &s->ranks[rank];
    for (int64_t i = from < 0 ? 0 : from; i < p->nops; i++)
        p->ops[i].flags |= (uint16_t)flags;
}

/* ---- copies of a program ------------------------------------------------------ */

/* Appends a copy of op of another rank to rank dst. */
static int64_t copy_op(zs_schedule *s, int dst, const zs_op *op, const int64_t *deps,
                       int peer_shift, const int *group_map, int nmap)
{
    const char *label = s->labels[op->label];
    s->label_hint = op->label;
    int st = op->stream, nd = op->ndeps;
    switch (op->kind) {
    case ZS_OP_COMPUTE:
        if (op->u.compute.ck <= ZS_CK_ATTN_BWD)
            return zs__sched_attn_ref(s, dst, st, label, op->u.compute.ck == ZS_CK_ATTN_BWD,
                                      op->u.compute.block0, op->u.compute.nblocks,
                                      op->u.compute.heads, op->duration, deps, nd);
        if (op->u.compute.ck == ZS_CK_GEMM)
            return zs_sched_gemm(s, dst, st, label, op->u.compute.m, op->u.compute.n,
                                 op->u.compute.k, op->duration, deps, nd);
        if (zs_ck_is_host_copy(op->u.compute.ck))
            return zs_sched_host_copy(s, dst, st, label, op->u.compute.ck == ZS_CK_D2H,
                                      op->u.compute.bytes, op->duration, deps, nd);
        return zs_sched_elementwise(s, dst, st, label, op->u.compute.bytes, op->duration, deps, nd);
    case ZS_OP_SEND:
    case ZS_OP_RECV: {
        int64_t i = p2p(s, (zs_op_kind)op->kind, dst, st, label, op->u.p2p.peer + peer_shift,
                        op->u.p2p.tag, op->u.p2p.bytes, deps, nd);
        zs_sched_set_carry(s, dst, i, op->u.p2p.carry0, op->u.p2p.ncarry);
        return i;
    }
    case ZS_OP_COLL: {
        int g = op->u.coll.group;
        if (group_map && (g < 0 || g >= nmap))
            return fail(s, ZS_EINVALID, dst, next_op(s, dst), label,
                        "copied collective on group %d: the group map covers %d groups", g, nmap);
        return zs_sched_coll(s, dst, st, label, group_map ? group_map[g] : g,
                             (zs_coll_kind)op->u.coll.ck, op->u.coll.bytes, deps, nd);
    }
    default:
        return zs_sched_marker(s, dst, (zs_marker_kind)op->u.marker.mk, op->u.marker.value);
    }
}

int zs_schedule_copy_rank(zs_schedule *s, int src, int dst, int peer_shift, const int *group_map,
                          int ngroup_map)
{
    if (s->error.code)
        return s->error.code;
    if (src < 0 || src >= s->nranks || dst < 0 || dst >= s->nranks || src == dst)
        return fail(s, ZS_EINVALID, dst, -1, NULL,
                    "copy of rank %d to rank %d: two different ranks of this %d-rank schedule", src,
                    dst, s->nranks);
    const zs_rank_prog *p = &s->ranks[src];
    zs_rank_prog *q = &s->ranks[dst];
    if (q->nops > 0 || q->nsegs > 0)
        return fail(s, ZS_EINVALID, dst, q->nops, NULL,
                    "copy of rank %d to rank %d, which already has a program", src, dst);
    int maxd = 1;
    for (int64_t i = 0; i < p->nops; i++)
        maxd = p->ops[i].ndeps > maxd ? p->ops[i].ndeps : maxd;
    int64_t *deps = malloc(sizeof(int64_t) * (size_t)maxd);
    /* The copy is as large as the original: allocate it once. */
    if (!deps || reserve((void **)&q->ops, &q->ops_cap, p->nops, sizeof(zs_op)) ||
        reserve((void **)&q->deps, &q->deps_cap, p->ndeps, sizeof(int32_t)) ||
        reserve32((void **)&q->segs, &q->segs_cap, p->nsegs, sizeof(zs_segment))) {
        free(deps);
        return fail(s, ZS_ENOMEM, dst, 0, NULL, "out of memory copying rank %d", src);
    }
    for (int32_t g = 0; g < p->nsegs && !s->error.code; g++) {
        const zs_segment *sg = &p->segs[g];
        zs_schedule_begin_segment(s, dst, sg->repeat);
        for (int64_t i = sg->op0; i < sg->op0 + sg->nops && !s->error.code; i++) {
            const zs_op *op = &p->ops[i];
            const int32_t *d = p->deps + op->dep0;
            for (int j = 0; j < op->ndeps; j++)
                deps[j] = d[j];
            int64_t k = copy_op(s, dst, op, deps, peer_shift, group_map, ngroup_map);
            if (k >= 0)
                q->ops[k].flags = op->flags;
        }
    }
    free(deps);
    return s->error.code;
}

double zs_schedule_attn_work(const zs_schedule *s, int rank)
{
    const zs_rank_prog *p = &s->ranks[rank];
    double w = 0;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
            const zs_op *op = &p->ops[i];
            if (op->kind != ZS_OP_COMPUTE || op->u.compute.ck != ZS_CK_ATTN_FWD ||
                (op->flags & ZS_OPF_RECOMPUTE))
                continue;
            for (int j = 0; j < op->u.compute.nblocks; j++)
                w += (double)zs_attn_block_pairs(&s->blocks[op->u.compute.block0 + j]) *
                     op->u.compute.heads * p->segs[g].repeat;
        }
    return w;
}

int64_t zs_schedule_unrolled_ops(const zs_schedule *s, int rank)
{
    const zs_rank_prog *p = &s->ranks[rank];
    int64_t n = 0;
    for (int32_t i = 0; i < p->nsegs; i++)
        n += (int64_t)p->segs[i].nops * p->segs[i].repeat;
    return n;
}

int64_t zs_schedule_total_ops(const zs_schedule *s)
{
    int64_t n = 0;
    for (int r = 0; r < s->nranks; r++)
        n += s->ranks[r].nops;
    return n;
}

int64_t zs_schedule_total_unrolled(const zs_schedule *s)
{
    int64_t n = 0;
    for (int r = 0; r < s->nranks; r++)
        n += zs_schedule_unrolled_ops(s, r);
    return n;
}

size_t zs_schedule_memory(const zs_schedule *s)
{
    size_t m = sizeof *s + sizeof(zs_rank_prog) * (size_t)s->nranks;
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        m += (size_t)p->ops_cap * sizeof(zs_op) + (size_t)p->deps_cap * sizeof(int32_t) +
             (size_t)p->segs_cap * sizeof(zs_segment);
    }
    m += (size_t)s->blocks_cap * sizeof(zs_attn_block) + (size_t)s->pieces_cap * sizeof(zs_piece) +
         (size_t)s->carry_cap * sizeof(zs_carry);
    for (int32_t g = 0; g < s->ngroups; g++)
        m += sizeof(zs_group) + sizeof(int32_t) * (size_t)s->groups[g].n;
    return m;
}

const char *zs_op_kind_name(int k)
{
    static const char *n[] = {"compute", "send", "recv", "coll", "marker"};
    return k >= 0 && k < ZS_OP_NKINDS ? n[k] : "?";
}

const char *zs_compute_kind_name(int k)
{
    static const char *n[] = {"attn_fwd", "attn_bwd", "gemm", "elementwise", "d2h", "h2d"};
    return k >= 0 && k < ZS_CK_NKINDS ? n[k] : "?";
}

const char *zs_phase_name(int p)
{
    static const char *n[] = {"forward", "backward", "grad-sync", "optimizer"};
    return p >= 0 && p < ZS_PHASE_NPHASES ? n[p] : "?";
}

void zs_op_print(FILE *f, const zs_schedule *s, int rank, int64_t i)
{
    const zs_op *op = zs_schedule_op(s, rank, i);
    fprintf(f, "r%d #%lld %s %s %s", rank, (long long)i, s->stream_names[op->stream],
            op->kind == ZS_OP_COMPUTE ? zs_compute_kind_name(op->u.compute.ck)
                                      : zs_op_kind_name(op->kind),
            s->labels[op->label]);
    switch (op->kind) {
    case ZS_OP_COMPUTE:
        if (op->u.compute.ck <= ZS_CK_ATTN_BWD)
            fprintf(f, " blocks=%d heads=%d", op->u.compute.nblocks, op->u.compute.heads);
        else if (op->u.compute.ck == ZS_CK_GEMM)
            fprintf(f, " m=%.0f n=%.0f k=%.0f", op->u.compute.m, op->u.compute.n, op->u.compute.k);
        else
            fprintf(f, " bytes=%.0f", op->u.compute.bytes);
        fprintf(f, " t=%.3gus", op->duration * 1e6);
        break;
    case ZS_OP_SEND:
    case ZS_OP_RECV:
        fprintf(f, " peer=%d tag=%d bytes=%.0f", op->u.p2p.peer, op->u.p2p.tag, op->u.p2p.bytes);
        for (int32_t j = 0; j < op->u.p2p.ncarry; j++) {
            const zs_carry *c = &s->carry[op->u.p2p.carry0 + j];
            fprintf(f, "%sd%d:%.0f", j ? "," : " carries=", c->doc, c->bytes);
        }
        break;
    case ZS_OP_COLL:
        fprintf(f, " %s group=%d (n=%d) bytes=%.0f", zs_coll_kind_name(op->u.coll.ck),
                op->u.coll.group, s->groups[op->u.coll.group].n, op->u.coll.bytes);
        break;
    case ZS_OP_MARKER:
        fprintf(f, " value=%d", op->u.marker.value);
        break;
    }
    fputc('\n', f);
}

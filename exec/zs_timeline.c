/* The timeline writer: see zs_timeline.h.
 *
 * Text is formatted into a buffer that goes to the file (plain) or through
 * deflate (".gz") when it fills. A flow needs both ends of a message, which
 * backends report in any order: the first end waits in a small table keyed
 * by (sender, receiver, tag, message number) until its partner arrives,
 * and the pair is then written with a fresh id. */
#include "zs_timeline.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "zs_afile.h"
#include "zs_json_esc.h"

_Static_assert(sizeof(((zs_result *)0)->timeline_subset) == ZS_TL_NOTE_LEN,
               "a result holds a timeline's subset note");

#define BUF_CAP  (1u << 20)
#define ZBUF_CAP (1u << 18)

/* Per written rank: the layer of each op, as the last layer marker before
 * it in program order says (value, its segment, counting up or down), and
 * its phase, as the last phase marker says (-1: none yet). */
typedef struct lmap {
    int32_t *val, *seg;
    int8_t *dir, *phase;
} lmap;

enum { F_PENDING, F_SEND_COUNT, F_RECV_COUNT };

typedef struct fent {
    int32_t src, dst, tag;
    int8_t kind, used, is_send; /* F_*; for F_PENDING: which end waits */
    int64_t seq;                /* F_PENDING: message number; counters: -1 */
    int64_t count;              /* counters: messages seen */
    int32_t pid, tid;           /* F_PENDING: the waiting end's slice */
    double t0, t1;
} fent;

struct zs_timeline {
    zs_afile af;
    int gz;
    z_stream z;
    unsigned char *zbuf;
    char *buf;
    size_t n, cap;
    double bytes; /* JSON text written, before compression */
    const zs_schedule *s;
    zs_tl_cfg cfg;
    uint8_t *on; /* per rank: written (zs_tl_select) */
    char note[ZS_TL_NOTE_LEN];
    lmap *lm; /* per rank; NULL entries for ranks not written */
    int first;
    fent *fm; /* open addressing, linear probing */
    size_t fcap, fn;
    int64_t next_id;
    int failed;
    zs_err err;
};

void zs_tl_cfg_init(zs_tl_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->ranks = NULL;
    c->layer0 = c->layer1 = -1;
    c->gpus_per_node = 8;
}

/* ---- output ---------------------------------------------------------------- */

static void fail(zs_timeline *t, int code, const char *what)
{
    if (t->failed)
        return;
    t->failed = 1;
    zs_err_set(&t->err, code, t->af.path,
               code == ZS_EIO ? "check free disk space and that the folder is writable" : NULL,
               "cannot write the timeline: %s", what);
}

static void flush_out(zs_timeline *t, int finish)
{
    if (t->failed)
        return;
    if (!t->gz) {
        if (t->n && fwrite(t->buf, 1, t->n, t->af.f) != t->n)
            fail(t, ZS_EIO, "write error");
        t->n = 0;
        return;
    }
    t->z.next_in = (unsigned char *)t->buf;
    t->z.avail_in = (uInt)t->n;
    int zr;
    do {
        t->z.next_out = t->zbuf;
        t->z.avail_out = ZBUF_CAP;
        zr = deflate(&t->z, finish ? Z_FINISH : Z_NO_FLUSH);
        if (zr == Z_STREAM_ERROR) {
            fail(t, ZS_ERUNTIME, "compression failed");
            return;
        }
        size_t have = ZBUF_CAP - t->z.avail_out;
        if (have && fwrite(t->zbuf, 1, have, t->af.f) != have) {
            fail(t, ZS_EIO, "write error");
            return;
        }
    } while (t->z.avail_out == 0 || (finish && zr != Z_STREAM_END));
    t->n = 0;
}

/* Room for need more bytes in the buffer (flushing or growing it). */
static int reserve(zs_timeline *t, size_t need)
{
    if (t->n + need < t->cap)
        return 0;
    flush_out(t, 0);
    if (need < t->cap)
        return t->failed ? -1 : 0;
    char *b = realloc(t->buf, need + 1);
    if (!b) {
        fail(t, ZS_ENOMEM, "out of memory");
        return -1;
    }
    t->buf = b;
    t->cap = need + 1;
    return t->failed ? -1 : 0;
}

__attribute__((format(printf, 2, 3))) static void out(zs_timeline *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (int tries = 0; tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->buf + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if (k < 0) {
            fail(t, ZS_ERUNTIME, "formatting failed");
            return;
        }
        if ((size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            t->bytes += k;
            return;
        }
        if (reserve(t, (size_t)k + 1))
            return;
    }
}

static void out_str(zs_timeline *t, const char *s)
{
    if (t->failed)
        return;
    size_t k = zs_json_escape(t->buf + t->n, t->cap - t->n, s);
    if (k >= t->cap - t->n) {
        if (reserve(t, k + 1))
            return;
        zs_json_escape(t->buf + t->n, t->cap - t->n, s);
    }
    t->n += k;
    t->bytes += (double)k;
}

/* ---- layers ------------------------------------------------------------------ */

static int rank_on(const zs_timeline *t, int rank)
{
    return rank >= 0 && rank < t->s->nranks && t->on[rank];
}

static int lmap_build(const zs_rank_prog *p, lmap *m)
{
    size_t n = (size_t)(p->nops > 0 ? p->nops : 1);
    m->val = malloc(sizeof(int32_t) * n);
    m->seg = malloc(sizeof(int32_t) * n);
    m->dir = malloc(n);
    m->phase = malloc(n);
    if (!m->val || !m->seg || !m->dir || !m->phase)
        return ZS_ENOMEM;
    int32_t lv = -1, ls = -1, ld = 1, ph = -1;
    for (int32_t sg = 0; sg < p->nsegs; sg++)
        for (int64_t i = p->segs[sg].op0; i < p->segs[sg].op0 + p->segs[sg].nops; i++) {
            const zs_op *op = &p->ops[i];
            if (op->kind == ZS_OP_MARKER &&
                (op->u.marker.mk == ZS_MARK_LAYER || op->u.marker.mk == ZS_MARK_LAYER_DOWN)) {
                lv = op->u.marker.value;
                ls = sg;
                ld = op->u.marker.mk == ZS_MARK_LAYER ? 1 : -1;
            }
            if (op->kind == ZS_OP_MARKER && op->u.marker.mk == ZS_MARK_PHASE)
                ph = op->u.marker.value;
            m->val[i] = lv;
            m->seg[i] = ls;
            m->dir[i] = (int8_t)ld;
            m->phase[i] = (int8_t)ph;
        }
    return ZS_OK;
}

/* The segment holding op i (segments are stored in op order). */
static int32_t seg_of(const zs_rank_prog *p, int64_t i)
{
    int32_t lo = 0, hi = p->nsegs - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (p->segs[mid].op0 <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Layers count up over a segment's iterations (forward) or down
 * (backward); a marker in an earlier segment was last set in that
 * segment's final iteration. */
static int op_layer(const zs_timeline *t, int rank, int64_t i, int32_t iter)
{
    const lmap *m = &t->lm[rank];
    const zs_rank_prog *p = &t->s->ranks[rank];
    int32_t v = m->val[i];
    if (v < 0)
        return -1;
    int32_t ls = m->seg[i];
    return v + m->dir[i] * (ls == seg_of(p, i) ? iter : p->segs[ls].repeat - 1);
}

/* ---- flows --------------------------------------------------------------------- */

static uint64_t fhash(int32_t a, int32_t b, int32_t c, int64_t seq, int kind)
{
    uint64_t h = 1469598103934665603ULL;
    uint64_t v[5] = {(uint32_t)a, (uint32_t)b, (uint32_t)c, (uint64_t)seq, (uint64_t)kind};
    for (int i = 0; i < 5; i++)
        h = (h ^ v[i]) * 1099511628211ULL;
    return h ^ (h >> 31);
}

static int fm_grow(zs_timeline *t)
{
    size_t cap = t->fcap ? t->fcap * 2 : 1024;
    fent *v = calloc(cap, sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < t->fcap; i++) {
        const fent *x = &t->fm[i];
        if (!x->used)
            continue;
        size_t j = fhash(x->src, x->dst, x->tag, x->seq, x->kind) & (cap - 1);
        while (v[j].used)
            j = (j + 1) & (cap - 1);
        v[j] = *x;
    }
    free(t->fm);
    t->fm = v;
    t->fcap = cap;
    return 0;
}

/* The entry for the key, created (zeroed, *created = 1) when absent. */
static fent *fm_get(zs_timeline *t, int32_t src, int32_t dst, int32_t tag, int64_t seq, int kind,
                    int *created)
{
    if ((t->fn + 1) * 2 > t->fcap && fm_grow(t)) {
        fail(t, ZS_ENOMEM, "out of memory");
        return NULL;
    }
    size_t mask = t->fcap - 1;
    for (size_t i = fhash(src, dst, tag, seq, kind) & mask;; i = (i + 1) & mask) {
        fent *x = &t->fm[i];
        if (!x->used) {
            memset(x, 0, sizeof *x);
            x->used = 1;
            x->src = src;
            x->dst = dst;
            x->tag = tag;
            x->seq = seq;
            x->kind = (int8_t)kind;
            t->fn++;
            *created = 1;
            return x;
        }
        if (x->src == src && x->dst == dst && x->tag == tag && x->seq == seq && x->kind == kind) {
            *created = 0;
            return x;
        }
    }
}

/* Removes an entry, shifting later ones of its probe run back. */
static void fm_del(zs_timeline *t, fent *x)
{
    size_t mask = t->fcap - 1, i = (size_t)(x - t->fm), j = i;
    for (;;) {
        j = (j + 1) & mask;
        fent *y = &t->fm[j];
        if (!y->used)
            break;
        size_t k = fhash(y->src, y->dst, y->tag, y->seq, y->kind) & mask;
        /* y may move to i when its home k is not in (i, j] (cyclically). */
        if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
            t->fm[i] = *y;
            i = j;
        }
    }
    t->fm[i].used = 0;
    t->fn--;
}

/* One end of message seq on (src, dst, tag) was written as a slice on
 * (pid, tid) from t0 to t1: wait for the other end, or write the flow. */
static void flow_end(zs_timeline *t, int send, int32_t src, int32_t dst, int32_t tag, int64_t seq,
                     int pid, int tid, double t0, double t1)
{
    int created;
    fent *x = fm_get(t, src, dst, tag, seq, F_PENDING, &created);
    if (!x)
        return;
    if (created || x->is_send == send) {
        x->is_send = (int8_t)send;
        x->pid = pid;
        x->tid = tid;
        x->t0 = t0;
        x->t1 = t1;
        return;
    }
    double a0 = send ? t0 : x->t0, a1 = send ? t1 : x->t1; /* the send */
    double b0 = send ? x->t0 : t0, b1 = send ? x->t1 : t1; /* the receive */
    int spid = send ? pid : x->pid, stid = send ? tid : x->tid;
    int rpid = send ? x->pid : pid, rtid = send ? x->tid : tid;
    fm_del(t, x);
    /* The arrow leaves the send when the transfer starts (both ends
     * posted) and lands inside the receive after that; viewers bind each
     * end to the slice enclosing its time. Times that cannot be ordered
     * (a receive that ended before the send began) get no arrow. */
    double s_ts = a0 > b0 ? a0 : b0;
    if (s_ts > a1)
        s_ts = a1;
    double f0 = s_ts > b0 ? s_ts : b0;
    if (f0 > b1)
        return;
    double f_ts = (f0 + b1) / 2;
    int64_t id = t->next_id++;
    out(t,
        ",\n{\"name\":\"p2p\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%lld,\"pid\":%d,\"tid\":%d,"
        "\"ts\":%.3f}",
        (long long)id, spid, stid, s_ts * 1e6);
    out(t,
        ",\n{\"name\":\"p2p\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%lld,\"pid\":%d,"
        "\"tid\":%d,\"ts\":%.3f}",
        (long long)id, rpid, rtid, f_ts * 1e6);
}

/* Message number of the next message on a channel end, in call order. */
static int64_t next_seq(zs_timeline *t, int send, int32_t src, int32_t dst, int32_t tag)
{
    int created;
    fent *x = fm_get(t, src, dst, tag, -1, send ? F_SEND_COUNT : F_RECV_COUNT, &created);
    return x ? x->count++ : ZS_TL_SEQ_NONE;
}

/* ---- events --------------------------------------------------------------------- */

/* What the file holds, in the format's metadata ("otherData"): a reader
 * (or a person) sees a subset as such. */
static void write_header(zs_timeline *t)
{
    const zs_schedule *s = t->s;
    int all = 1;
    for (int r = 0; r < s->nranks; r++)
        all &= t->on[r];
    char ranks[ZS_TL_RANKS_LEN + 16];
    if (all)
        snprintf(ranks, sizeof ranks, "all");
    else
        zs_tl_ranks_format(t->on, s->nranks, ranks, sizeof ranks);
    out(t, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"ranks\":");
    out_str(t, ranks);
    out(t, ",\"nranks\":%d,\"rank_choice\":\"%s\",\"layers\":", s->nranks,
        t->note[0] ? "automatic"
        : all      ? "all"
                   : "given");
    if (t->cfg.layer0 < 0)
        out(t, "\"all\"");
    else
        out(t, "\"%d-%d\"", t->cfg.layer0, t->cfg.layer1);
    if (t->note[0]) {
        out(t, ",\"note\":");
        out_str(t, t->note);
    }
    out(t, "},\"traceEvents\":[");
}

static void write_meta(zs_timeline *t)
{
    const zs_schedule *s = t->s;
    int gpn = t->cfg.gpus_per_node;
    write_header(t);
    t->first = 1;
    int last_node = -1;
    for (int r = 0; r < s->nranks; r++) {
        if (!rank_on(t, r))
            continue;
        int node = r / gpn;
        if (node != last_node) {
            out(t,
                "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":"
                "\"node %d\"}}",
                t->first ? "" : ",", node, node);
            t->first = 0;
            last_node = node;
        }
        for (int st = 0; st < s->nstreams; st++) {
            out(t,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{"
                "\"name\":",
                node, (r % gpn) * s->nstreams + st);
            char name[160];
            snprintf(name, sizeof name, "gpu %d (rank %d) %s", r % gpn, r, s->stream_names[st]);
            out_str(t, name);
            out(t, "}}");
        }
    }
}

int zs_timeline_open(const char *path, const zs_schedule *s, const zs_tl_cfg *cfg,
                     zs_timeline **out_t, zs_err *e)
{
    zs_timeline *t = calloc(1, sizeof *t);
    if (!t)
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory opening the timeline");
    t->s = s;
    if (cfg)
        t->cfg = *cfg;
    else
        zs_tl_cfg_init(&t->cfg);
    if (t->cfg.gpus_per_node < 1)
        t->cfg.gpus_per_node = 1;
    t->cap = BUF_CAP;
    t->buf = malloc(t->cap);
    t->lm = calloc((size_t)(s->nranks > 0 ? s->nranks : 1), sizeof *t->lm);
    t->on = calloc((size_t)(s->nranks > 0 ? s->nranks : 1), 1);
    int rc = t->buf && t->lm && t->on ? ZS_OK : ZS_ENOMEM;
    if (rc == ZS_OK && (rc = zs_tl_select(s, &t->cfg, t->on, t->note, sizeof t->note, e))) {
        zs_timeline_free(t);
        return rc;
    }
    for (int r = 0; r < s->nranks && rc == ZS_OK; r++)
        if (rank_on(t, r))
            rc = lmap_build(&s->ranks[r], &t->lm[r]);
    if (rc) {
        zs_timeline_free(t);
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory opening the timeline");
    }
    size_t len = strlen(path);
    t->gz = len > 3 && !strcmp(path + len - 3, ".gz");
    if (t->gz) {
        /* windowBits 15 + 16: a gzip wrapper; level 1: JSON still shrinks
         * about tenfold, at a fraction of the default level's time. */
        if (!(t->zbuf = malloc(ZBUF_CAP)) ||
            deflateInit2(&t->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            t->gz = 0;
            zs_timeline_free(t);
            return zs_err_set(e, ZS_ENOMEM, path, NULL, "cannot start gzip compression");
        }
    }
    if ((rc = zs_afile_open(&t->af, path, e))) {
        zs_timeline_free(t);
        return rc;
    }
    write_meta(t);
    *out_t = t;
    return ZS_OK;
}

int zs_timeline_rank_on(const zs_timeline *t, int rank)
{
    return t && rank_on(t, rank);
}

const uint8_t *zs_timeline_ranks(const zs_timeline *t)
{
    return t->on;
}

const char *zs_timeline_subset(const zs_timeline *t)
{
    return t->note;
}

/* The documents a transfer carries and each one's bytes (merged ring steps). */
static void write_carry(zs_timeline *t, const zs_op *op)
{
    const zs_carry *c = t->s->carry + op->u.p2p.carry0;
    int32_t n = op->u.p2p.ncarry;
    if (n < 1)
        return;
    for (int32_t j = 0; j < n; j++)
        out(t, "%s%d", j ? "," : ",\"docs\":[", c[j].doc);
    for (int32_t j = 0; j < n; j++)
        out(t, "%s%.0f", j ? "," : "],\"doc_bytes\":[", c[j].bytes);
    out(t, "]");
}

static void write_args(zs_timeline *t, int rank, const zs_op *op, int64_t i, int layer,
                       int32_t iter)
{
    out(t, "\"args\":{\"rank\":%d,\"layer\":%d,\"iter\":%d", rank, layer, iter);
    switch (op->kind) {
    case ZS_OP_SEND:
    case ZS_OP_RECV:
        out(t, ",\"peer\":%d,\"tag\":%d,\"bytes\":%.0f", op->u.p2p.peer, op->u.p2p.tag,
            op->u.p2p.bytes);
        /* which pass moves it: a forward ring and a backward one differ
         * (K/V against K/V with dK/dV), and both use one label */
        if (t->lm[rank].phase[i] >= 0)
            out(t, ",\"phase\":\"%s\"", zs_phase_name(t->lm[rank].phase[i]));
        write_carry(t, op);
        break;
    case ZS_OP_COLL:
        out(t, ",\"group\":%d,\"kind\":\"%s\",\"bytes\":%.0f", op->u.coll.group,
            zs_coll_kind_name(op->u.coll.ck), op->u.coll.bytes);
        break;
    case ZS_OP_COMPUTE:
        out(t, ",\"compute\":\"%s\"", zs_compute_kind_name(op->u.compute.ck));
        break;
    default:
        break;
    }
    if (t->cfg.measured) {
        out(t, ",\"op\":%lld", (long long)i);
        if (op->kind == ZS_OP_COMPUTE)
            out(t, ",\"predicted_us\":%.3f", op->duration * 1e6);
    }
    out(t, "}}");
}

void zs_timeline_op(zs_timeline *t, int rank, int64_t i, int32_t iter, double t0, double t1,
                    int64_t seq)
{
    if (!t || t->failed || !rank_on(t, rank))
        return;
    const zs_schedule *s = t->s;
    const zs_op *op = &s->ranks[rank].ops[i];
    int p2p = op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV;
    int send = op->kind == ZS_OP_SEND;
    int32_t peer = p2p ? op->u.p2p.peer : -1;
    int32_t src = send ? rank : peer, dst = send ? peer : rank;
    if (p2p && seq == ZS_TL_SEQ_ORDER)
        seq = next_seq(t, send, src, dst, op->u.p2p.tag); /* counted even when filtered */
    int layer = op_layer(t, rank, i, iter);
    if (t->cfg.layer0 >= 0 && (layer < t->cfg.layer0 || layer > t->cfg.layer1))
        return;
    int gpn = t->cfg.gpus_per_node;
    int pid = rank / gpn, tid = (rank % gpn) * s->nstreams + op->stream;
    out(t, "%s{\"name\":", t->first ? "\n" : ",\n");
    t->first = 0;
    out_str(t, op->label < s->nlabels ? s->labels[op->label] : "");
    out(t, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,",
        zs_op_kind_name(op->kind), pid, tid, t0 * 1e6, (t1 - t0) * 1e6);
    write_args(t, rank, op, i, layer, iter);
    if (p2p && seq >= 0 && rank_on(t, peer))
        flow_end(t, send, src, dst, op->u.p2p.tag, seq, pid, tid, t0, t1);
    if (t->n > t->cap / 2)
        flush_out(t, 0);
}

static void release(zs_timeline *t)
{
    if (t->lm)
        for (int r = 0; r < t->s->nranks; r++) {
            free(t->lm[r].val);
            free(t->lm[r].seg);
            free(t->lm[r].dir);
            free(t->lm[r].phase);
        }
    free(t->lm);
    free(t->on);
    free(t->fm);
    free(t->buf);
    if (t->gz)
        deflateEnd(&t->z);
    free(t->zbuf);
    free(t);
}

int zs_timeline_close(zs_timeline *t, double *bytes, zs_err *e)
{
    out(t, "\n]}\n");
    flush_out(t, 1);
    int rc;
    if (t->failed) {
        /* a write error names the system's reason (a full disk as such) */
        zs_err se = t->err;
        rc = zs_afile_fail(&t->af, t->err.code, &se);
        if (e)
            *e = se;
    } else {
        rc = zs_afile_commit(&t->af, e);
    }
    if (rc == ZS_OK && bytes)
        *bytes = t->bytes;
    release(t);
    return rc;
}

void zs_timeline_free(zs_timeline *t)
{
    if (!t)
        return;
    zs_afile_abort(&t->af);
    release(t);
}

void zs_timeline_note(zs_result *r, const char *path, double bytes, const char *subset)
{
    r->timeline_bytes = bytes;
    snprintf(r->timeline_subset, sizeof r->timeline_subset, "%s", subset ? subset : "");
    if (bytes > ZS_TL_WARN_BYTES)
        zs_result_note(r,
                       "timeline %s is %.0f MB of JSON (chrome://tracing stops at 256 MB): "
                       "write fewer ranks or layers with --timeline-ranks 0,5,17-20 / "
                       "--timeline-layers A-B",
                       path, bytes / 1e6);
}

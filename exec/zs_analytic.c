/* The analytic backend: see zs_analytic.h.
 *
 * The loop, in phases:
 *   1. every rank tries to start the next op of each of its streams;
 *   2. the earliest pending completion is popped (ties broken by insertion
 *      order, so runs are deterministic);
 *   3. the completed op is retired (a compute op or collective frees its
 *      stream; a send or receive only lowers the stream's count of
 *      transfers in flight) and the rank's streams try to issue again,
 *      which may post sends and receives matching ones on other ranks.
 * A run ends when no completion is pending; a rank with work left then is
 * stuck, which is how deadlocks are found.
 *
 * Folding (zs_fold.h): when a stream enters the next iteration of a
 * repeated segment, zs_fold_cross may tell it to skip iterations; the
 * stream then sleeps (a wake event in the heap), its skipped ops' bytes
 * and counts are added, and at the wake every op of the stream in the
 * segment counts the skipped completions.
 *
 * Interference (exec.interference, off by default): while a rank's
 * collectives and transfers run, their NCCL kernels hold ctas of its SMs,
 * and each of its compute ops progresses at (SMs - ctas) / SMs of its
 * predicted rate. A compute op keeps the work it has left: when a
 * communication op of its rank starts or ends, its end is re-timed (a new
 * event; the old one, no longer the stream's, is dropped), as zs_linkshare
 * re-times transfers sharing a NIC. Folding is off then (a replayed
 * iteration would not see what overlaps it). */
#include "zs_analytic.h"
#include "zs_acctq.h"
#include "zs_bigmem.h"
#include "zs_evq_internal.h"
#include "zs_grow.h"
#include "zs_hash.h"

#include "zs_foldacct.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zs_calib.h"
#include "zs_linkshare_internal.h"
#include "zs_nccl.h"
#include "zs_prefetch.h"

/* An event (zs_evq_internal.h): the op that completes at t; rank < 0: a transfer
 * sharing NICs (item id in the low 32 bits of op, its generation when this
 * completion was computed in the high ones; its ops in ex.imem). comm: 1 a
 * transfer or collective, 0 compute, EV_WAKE a folded stream wakes, EV_PAIR
 * both ends of a transfer inside a node (below). */
typedef zs_ev ev;

#define EV_WAKE 2
/* The send and the receive of a transfer that shares no NIC end at the
 * same time and take consecutive sequence numbers, so no other event can
 * come between them: one event stands for both (a quarter fewer events
 * through the queue in te-cp). Its op: the first's op in the low 32 bits,
 * in the high ones the slot (ex.pairs) that holds the second, which
 * takes the next sequence number. */
#define EV_PAIR 3

/* The second op of an EV_PAIR event. */
typedef struct pair_slot {
    int32_t rank, op;
    int8_t stream;
} pair_slot;

/* What the timeline needs of an event, kept beside the heap (indexed by
 * the event's seq) only when a timeline is written, so the heap's events
 * stay small for sweeps. */
typedef struct tl_aux {
    double t0;    /* when the op started */
    int32_t iter; /* iteration of its segment */
    int32_t msg;  /* p2p: message number on its channel (the flow) */
} tl_aux;

typedef struct stream_st {
    int32_t seg, iter;
    int32_t pos;         /* the next op to issue: an op of this stream, or the end of
                          * its segment (see seek) */
    int32_t end, repeat; /* its segment's end and repeat count (seek reads no table) */
    int32_t cur;         /* the blocking op running (compute or collective) */
    int32_t p2p_pending; /* issued sends/receives not yet complete */
    uint8_t busy;        /* a blocking op is running */
    uint8_t finished;    /* every op has been issued */
    uint8_t asleep;      /* folded: skipping iterations until its wake event */
    uint8_t pad;
} stream_st;

/* The skip a folded stream sleeps through: segment, first iteration, count. */
typedef struct stream_wake {
    int32_t seg, iter, skip;
} stream_wake;

/* What the loop needs of an op, beside its run state, in one record: the
 * schedule's zs_op (72 bytes, with its dependencies, segment and state in
 * other arrays) cost a cache miss each, and with thousands of ranks every
 * event lands on a cold rank (docs/simulator.md, "Where the time goes"). */
/* A dependency with what it waits for: `need` completions of op `op`, or
 * (need < 0, same segment) as many as the waiting op's iteration + 1. */
typedef struct xdep {
    int32_t op, need;
} xdep;

#define XOP_DEPS 2 /* dependencies kept in the record (most ops have one or two) */

/* xop.bits: how many dependencies d[] holds, or XOP_MORE: more than
 * XOP_DEPS or one in another segment, xd[d[0] .. d[0] + d[1]) of its rank
 * (with what each needs); XOP_LAST: its stream's last op in its segment
 * (the next is the segment's end, else the next record: ops are numbered
 * in stream order); XOP_SKIP: a skip waits in the rank's skip table. */
#define XOP_ND   0x3u
#define XOP_MORE 0x3u
#define XOP_LAST 0x4u
#define XOP_SKIP 0x8u

/* Half a cache line: a stream walks its ops two to a line, and the records
 * of 32K ranks take half the memory (each page of it cleared by the
 * kernel when first touched). */
typedef struct xop {
    uint8_t kind, stream;
    uint8_t waiters;     /* bit s: an op of stream s depends on this one */
    uint8_t bits;        /* XOP_* */
    int32_t done;        /* completed iterations */
    int32_t a, b;        /* p2p: peer, channel (x->ch); collective: group, kind;
                          * compute: a = 1 for a host copy (zs_ck_is_host_copy) */
    double v;            /* p2p, collective: bytes; compute: duration */
    int32_t d[XOP_DEPS]; /* dependencies in its segment (each needs the waiting op's
                          * iteration + 1 completions); XOP_MORE: see above */
} xop;

_Static_assert(sizeof(xop) == 32, "an op record on half a cache line");

/* The op after op j of a stream in a segment that ends at `end`. */
static int32_t xop_next(const xop *o, int32_t j, int32_t end)
{
    return o->bits & XOP_LAST ? end : j + 1;
}

/* What seek needs of a segment. */
typedef struct xseg {
    int32_t end, repeat;
} xseg;

/* A rank's state, what an event reads and writes first and together (at
 * thousands of ranks every event lands on a rank none of whose state is
 * cached, and what it costs is the cache lines and pages it touches): the
 * figures the loop keeps (end, ops), its op records' address and the
 * streams' cursors, the first stream's in the first line (so a rank of up
 * to three streams, as te-cp's, is two lines, not three), then the
 * accounting (whose header and each stream's part start cache lines,
 * zs_foldacct.h), then what only segment changes and folding read, and the
 * accounting's figures (written only by zs_foldacct, through zs_acctq). */
typedef struct rank_st {
    double end;  /* zs_rank_result.end during the run */
    int64_t ops; /* zs_rank_result.ops */
    xop *xo;     /* per op (in the run's arena) */
    int32_t nsegs;
    int32_t pad;
    stream_st st[ZS_MAX_STREAMS];
    char pad0_[32];   /* the accounting starts a cache line */
    zs_foldacct acct; /* zs_rank_acct that knows sleeping (folded) streams */
    xdep *xd;         /* the dependencies of ops with more than XOP_DEPS */
    int32_t *first;   /* per segment and stream: its first op there (the segment's end: none) */
    xseg *sg;         /* per segment */
    int32_t *perm;    /* per op (numbered in stream order): its number in the schedule */
    double *cmax;     /* folding, the group's first member: per collective op, the largest
                       * buffer of its last instance (all-to-all(v) replays), lazily */
    int32_t *skip;    /* folding, per op with XOP_SKIP: skip[2i + 1] more completions
                       * when done reaches skip[2i] (its last simulated iteration
                       * was in flight at the skip), lazily */
    stream_wake wk[ZS_MAX_STREAMS];
    zs_rank_result res; /* the accounting's figures (its end and ops: those above) */
} rank_st;

_Static_assert(sizeof(stream_st) == 32 && sizeof(rank_st) % 64 == 0 &&
                   offsetof(rank_st, st[1]) == 64 && offsetof(rank_st, acct) % 64 == 0 &&
                   offsetof(rank_st, res) / 64 ==
                       (offsetof(rank_st, res) + sizeof(zs_rank_result) - 1) / 64,
               "a rank's state on whole cache lines, the first stream's cursor in the first, "
               "the accounting's on its own, its figures in one");

typedef struct post {
    int32_t rank;
    int8_t stream;
    int64_t op;
    double bytes;
    double t0;    /* when it was posted */
    int32_t iter; /* iteration of the op's segment */
    int32_t msg;  /* p2p: message number on its channel */
} post;

/* A message channel (src, dst, tag). Its pending posts are all sends or
 * all receives (a post meets the other side's first pending one, or
 * waits), so one queue holds them, the first two in place: in a ring of
 * transfers a sender is often one message ahead (te-cp at 4096 GPUs: most
 * posts find one pending), and then matching reads no memory beyond the
 * channel's two cache lines. */
typedef struct chan {
    int32_t nsend, nrecv;    /* posted so far: the k-th send meets the k-th receive */
    int32_t np;              /* pending posts */
    int32_t side;            /* what they are: ZS_OP_SEND or ZS_OP_RECV */
    int32_t qh;              /* the first pending is in[qh], the second in[qh ^ 1] */
    int32_t vhead, vn, vcap; /* the others: v[vhead .. vn) */
    post *v;
    post in[2];
    char pad_[8];
} chan;

_Static_assert(sizeof(chan) == 128, "a channel on two cache lines");

/* The setup's map from (src, dst, tag) to a channel number. */
typedef struct pkey {
    int32_t src, dst, tag, used, id;
} pkey;

typedef struct coll_st {
    int32_t arrived;
    double bytes;
    int kind;
    post *who; /* n slots */
} coll_st;

/* Interference: a stream's running compute op. */
typedef struct intf_op {
    post p;       /* its start (p.op < 0: none running) */
    double left;  /* seconds of work left at full rate, at `since` */
    double since; /* when left was last brought up to date */
    double end;   /* its completion event's time */
    int64_t seq;  /* its completion event (older ones for it are stale) */
} intf_op;

/* Interference: a rank's communication in flight and its compute. */
typedef struct intf_st {
    int ctas;                      /* CTAs of its collectives and transfers in flight */
    int coll_ctas[ZS_MAX_STREAMS]; /* of the collective each stream runs */
    double rate;                   /* compute progress per second (1: full) */
    double stretched;              /* seconds compute took beyond its durations */
    intf_op c[ZS_MAX_STREAMS];
} intf_st;

typedef struct ex {
    const zs_schedule *s;
    const zs_cost *cost;
    int dry;
    rank_st *r;
    zs_evq q;    /* pending events */
    int64_t seq; /* events numbered so far */
    pkey *keys;  /* during the setup */
    int64_t nkeys_cap, nkeys;
    chan *ch; /* per channel (zs_bigmem), numbered in the order ranks first use them */
    size_t nch;
    coll_st *colls;
    double now;
    double *nic_tx, *nic_rx; /* seconds at line rate each way (NICs are full duplex) */
    /* NIC directions shared by transfers in flight across nodes (resource
     * 2k: NIC k sending, 2k + 1: receiving); imem[id] the ops an item
     * completes. */
    zs_linkshare *sh;
    post **imem;
    int32_t *inmem, capimem;
    double *acc; /* scratch: load per resource */
    int *touched;
    zs_result *res;
    zs_timeline *tl; /* NULL: no timeline */
    zs_fold *fold;   /* NULL: unrolled */
    tl_aux *aux;     /* per event seq, with a timeline */
    int64_t capaux;
    zs_err *e;
    int failed;
    intf_st *intf;      /* per rank, with interference (NULL: off) */
    int sms, cta_cap;   /* the GPU's SMs; the most CTAs NCCL's kernels hold */
    int p2p_per[2];     /* NCCL's p2p channels per peer: inside a node, across */
    double p2p_part[2]; /* and the largest part of a channel */
    void *arena;        /* every rank's xo, xd and first (zs_bigmem) */
    xop **xos;          /* per rank: its xo, beside the ranks' state (for pf_op) */
    int pf;             /* the state outgrows the caches: fetch ahead (pf_*) and queue the
                           accounting (acct*); else neither */
    zs_pool *pool;      /* the ranks' accounting logs */
    zs_acctq aq;        /* the accounting calls, applied in batches (not in a dry run) */
    size_t narena, nr;
    pair_slot *pairs; /* EV_PAIR events' second ops; free slots chained by op */
    int32_t npairs, pfree;
    int64_t cappairs;
} ex;

/* ---- events ---------------------------------------------------------------- */

/* A new event number for op p, with what the timeline needs of it. */
static int next_seq(ex *x, const post *p, int64_t *seq)
{
    /* Every event takes a number, so aux grows with seq even for events
     * without an op (rescheduled flows): aux is indexed by seq. */
    if (x->tl) {
        if (x->seq == x->capaux) {
            int64_t nc = x->capaux ? x->capaux * 2 : 1024;
            tl_aux *a = realloc(x->aux, sizeof *a * (size_t)nc);
            if (!a)
                return ZS_ENOMEM;
            x->aux = a;
            x->capaux = nc;
        }
        if (p)
            x->aux[x->seq] = (tl_aux){p->t0, p->iter, p->msg};
    }
    *seq = x->seq++;
    return ZS_OK;
}

static int push_ev(ex *x, const ev *v)
{
    return zs_evq_push(&x->q, v);
}

/* Schedules the completion at t of an op p that started at p->t0. */
static int push(ex *x, double t, const post *p, int comm)
{
    ev v = {t, 0, p->op, p->rank, p->stream, (int8_t)comm};
    return next_seq(x, p, &v.seq) ? ZS_ENOMEM : push_ev(x, &v);
}

/* Schedules the completion at t of a transfer's two ops a and b (EV_PAIR). */
static int push_pair(ex *x, double t, const post *a, const post *b)
{
    int32_t id = x->pfree;
    if (id >= 0) {
        x->pfree = x->pairs[id].op;
    } else {
        if (zs_grow((void **)&x->pairs, &x->cappairs, (int64_t)x->npairs + 1, sizeof *x->pairs))
            return ZS_ENOMEM;
        id = x->npairs++;
    }
    x->pairs[id] = (pair_slot){b->rank, (int32_t)b->op, b->stream};
    int64_t code = (int64_t)((uint64_t)(uint32_t)id << 32 | (uint32_t)a->op);
    ev v = {t, 0, code, a->rank, a->stream, EV_PAIR};
    int64_t sb;
    if (next_seq(x, a, &v.seq) || next_seq(x, b, &sb))
        return ZS_ENOMEM;
    return push_ev(x, &v);
}

/* The slot of an EV_PAIR event. */
static int32_t pair_id(const ev *v)
{
    return (int32_t)((uint64_t)v->op >> 32);
}

/* The op an event names (its first, for EV_PAIR; -1 for a wake). */
static int64_t ev_op(const ev *v)
{
    return v->comm == EV_WAKE ? -1 : v->comm == EV_PAIR ? (int64_t)(uint32_t)v->op : v->op;
}

/* ---- looking ahead ---------------------------------------------------------- */

/* With thousands of ranks every event lands on a rank none of whose state
 * is cached, and the state it reads is a chain (the rank's stream, the op
 * that completed, the ops it lets start, their dependencies, channels and
 * peers): fetched one after the other, a chain of cache misses per event.
 * The queue's window (zs_evq_internal.h) shows the next events in order, so each
 * link is fetched a few events before it is needed: an event's rank and
 * stream ZS_EVQ_AHEAD - 1 events ahead, the ops it names half-way, what
 * those ops name a quarter of the way, and the peers of a match two events
 * ahead. Hints only: nothing is decided on what is fetched, and the state
 * may change before the event is handled (a stale hint costs a wasted
 * fetch, never a different result). */

/* Sends and receives (of a zs_op or an xop). */
static int p2p_kind(int kind)
{
    return kind == ZS_OP_SEND || kind == ZS_OP_RECV;
}

/* The op stream c would issue next, or NULL (finished, or at the end of
 * its segment). */
static const xop *head_of(const rank_st *r, const stream_st *c)
{
    if (c->finished || c->seg >= r->nsegs || c->pos >= c->end)
        return NULL;
    return &r->xo[c->pos];
}

/* Stage 1: the rank's and its streams' state, in place in the rank's
 * record (its accounting is queued, zs_acctq, and not touched here).
 * Every stream's cursor, not only the event's: a completion may let the
 * other streams issue (its op's waiters), and what they read next hangs
 * on their cursors (the first in the rank's first line, then two to a
 * line). */
static void pf_rank(const ex *x, int32_t rank)
{
    const rank_st *r = &x->r[rank];
    ZS_PF(r);
    for (int s = 1; s < x->s->nstreams; s += 2)
        ZS_PF(&r->st[s]);
}

/* Stage 1 for an event that names op `op` (>= 0): its record, found
 * without the rank's state (x->xos), so that stage 2 can read whose
 * streams it wakes. */
static void pf_op(const ex *x, int32_t rank, int64_t op)
{
    ZS_PF(&x->xos[rank][op]);
}

/* The records of op h's dependencies kept in it. */
static void pf_deps(const rank_st *r, const xop *h)
{
    unsigned nd = h->bits & XOP_ND;
    for (unsigned k = 0; nd != XOP_MORE && k < nd; k++)
        ZS_PF(&r->xo[h->d[k]]);
}

/* Where `stream`'s first op in segment g of rank r is kept (r->first). */
static const int32_t *first_at(const ex *x, const rank_st *r, int32_t g, int stream)
{
    return &r->first[(int64_t)g * x->s->nstreams + stream];
}

/* The first op of `stream` in segment g of rank r, or the segment's end. */
static int32_t first_of(const ex *x, const rank_st *r, int32_t g, int stream)
{
    return *first_at(x, r, g, stream);
}

/* The segment seek moves stream c into at the end of its segment's
 * iteration (the same one again, or the next); -1 when c is not at such an
 * end or the program ends there. */
static int32_t next_seg(const rank_st *r, const stream_st *c)
{
    if (c->finished || c->seg >= r->nsegs || c->pos < c->end)
        return -1;
    int32_t g = c->iter + 1 < c->repeat ? c->seg : c->seg + 1;
    return g < r->nsegs ? g : -1;
}

/* Stage 2: the op that completes and the next op of each stream it may
 * let issue: its own and, when the op's record was fetched in stage 1
 * (`known`), only those of its waiters (te-cp at 4096 GPUs: 0.4 of the 2
 * other streams per completion; each other head a cache line fetched for
 * nothing, where the loop waits on its misses), else every stream's. */
static void pf_ops(const ex *x, int32_t rank, int stream, int64_t op, int known)
{
    const rank_st *r = &x->r[rank];
    unsigned m = ~0u;
    if (op >= 0) {
        ZS_PF(&r->xo[op]);
        if (known)
            m = r->xo[op].waiters;
    }
    ZS_PF(&r->xo[r->st[stream].pos]);
    for (int s = 0; s < x->s->nstreams; s++)
        if (s != stream && (m >> s & 1u) && !r->st[s].finished)
            ZS_PF(&r->xo[r->st[s].pos]);
    ZS_PF(&r->xo[r->st[stream].pos + 1]); /* a transfer's: the op issued with it */
    int32_t g = next_seg(r, &r->st[stream]);
    if (g >= 0) { /* at an iteration's end: where the next starts (pf_woken) */
        ZS_PF(first_at(x, r, g, stream));
        ZS_PF(&r->sg[g]);
    }
}

/* The two cache lines of the channel of transfer h. */
static void pf_chan(const ex *x, const xop *h)
{
    ZS_PF(&x->ch[h->b]);
    ZS_PF(&x->ch[h->b].in[1]);
}

/* Stage 3 for a stream's next op h: its dependencies and, for a
 * transfer, its channel, and the same for the op after it when that is a
 * transfer too (issued at once with it). */
static void pf_head(const ex *x, const rank_st *r, const xop *h)
{
    pf_deps(r, h);
    if (!p2p_kind(h->kind))
        return;
    pf_chan(x, h);
    ZS_PF(h + 1);
    if (!(h->bits & XOP_LAST) && p2p_kind(h[1].kind)) {
        pf_deps(r, h + 1);
        pf_chan(x, h + 1);
    }
}

/* Where the post transfer h would meet refills from, or where h would
 * wait. Not the peer's rank: a match reads only the channel (the peer's
 * accounting is queued, zs_acctq), and each of the peer's lines fetched
 * for nothing took a miss slot the loop waits for. */
static void pf_match(const ex *x, const xop *h)
{
    const chan *k = &x->ch[h->b];
    if (k->np > 0 && k->side != h->kind) {
        if (k->np > 2)
            ZS_PF(&k->v[k->vhead]);
    } else if (k->np > 1 && k->v) {
        ZS_PF(&k->v[k->vn < k->vcap ? k->vn : 0]);
    }
}

/* Stage 4 for a stream's next op h: the ranks it and the transfer issued
 * with it would match. */
static void pf_peer(const ex *x, const xop *h)
{
    if (!p2p_kind(h->kind))
        return;
    pf_match(x, h);
    if (!(h->bits & XOP_LAST) && p2p_kind(h[1].kind))
        pf_match(x, h + 1);
}

/* Stages 3 and 4, for the next op of each stream the completion may let
 * issue; where the event's stream is at the end of an iteration, the op
 * the next starts with (stage 3) and its dependencies and channels (stage
 * 4), the table entry that names it fetched in stage 2. */
static void pf_woken(const ex *x, int32_t rank, int stream, int64_t op, int stage)
{
    const rank_st *r = &x->r[rank];
    unsigned m = 1u << stream | (op >= 0 ? r->xo[op].waiters : 0u);
    for (int s = 0; m >> s; s++) {
        if (!(m >> s & 1u))
            continue;
        const xop *h = head_of(r, &r->st[s]);
        if (h) {
            if (stage == 3)
                pf_head(x, r, h);
            else
                pf_peer(x, h);
            continue;
        }
        int32_t g = s == stream ? next_seg(r, &r->st[s]) : -1;
        if (g < 0)
            continue;
        int32_t f = first_of(x, r, g, s); /* fetched in stage 2 (pf_ops) */
        if (f >= r->sg[g].end)
            continue;
        if (stage == 3)
            ZS_PF(&r->xo[f]);
        else
            pf_head(x, r, &r->xo[f]); /* its dependencies: try_start reads them */
    }
}

/* Stages 2-4 for an op that an event completes but does not name in its
 * rank and op fields (the second of an EV_PAIR, an item's members): its
 * rank and record, then its stream's and waiters' next ops, then what
 * those read, a stage behind an event's own op. */
static void pf_member(const ex *x, int32_t rank, int stream, int64_t op, int stage)
{
    if (stage == 2) {
        pf_rank(x, rank);
        pf_op(x, rank, op);
    } else if (stage == 3) {
        pf_ops(x, rank, stream, op, 1);
    } else if (stage == 4) {
        pf_woken(x, rank, stream, op, 3);
    }
}

/* The ops a NIC-sharing item completes (rank < 0): stage 1 its posts
 * (imem, a small table), then each op as pf_member; nothing for a stale
 * completion (its speed changed since: finish_item drops it), whose
 * generation stage 1 fetched. */
static void pf_item(const ex *x, const ev *n, int stage)
{
    int32_t id = (int32_t)(uint32_t)((uint64_t)n->op & 0xffffffffu);
    if (id >= x->capimem)
        return;
    zs_linkshare_prefetch(x->sh, id, stage); /* what its removal reads */
    if (stage == 1) {
        if (x->imem[id])
            ZS_PF(x->imem[id]);
        return;
    }
    if (zs_linkshare_gen(x->sh, id) != (uint32_t)((uint64_t)n->op >> 32))
        return;
    const post *w = x->imem[id];
    int nw = x->inmem[id] < 4 ? x->inmem[id] : 4;
    for (int i = 0; w && i < nw; i++)
        pf_member(x, w[i].rank, w[i].stream, w[i].op, stage);
}

/* The second op of an EV_PAIR event: its slot, then as pf_member. */
static void pf_pair(const ex *x, const pair_slot *b, int stage)
{
    if (stage == 1)
        ZS_PF(b);
    else
        pf_member(x, b->rank, b->stream, b->op, stage);
}

static void prefetch_ahead(const ex *x)
{
    static const int at[4] = {ZS_EVQ_AHEAD - 1, ZS_EVQ_AHEAD / 2, ZS_EVQ_AHEAD / 4, 2};
    for (int stage = 1; stage <= 4; stage++) {
        const ev *n = zs_evq_peek(&x->q, at[stage - 1]);
        if (!n)
            continue;
        if (n->rank < 0) {
            pf_item(x, n, stage);
            continue;
        }
        int64_t op = ev_op(n);
        if (stage == 1) {
            pf_rank(x, n->rank);
            if (op >= 0)
                pf_op(x, n->rank, op);
        } else if (stage == 2) {
            pf_ops(x, n->rank, n->stream, op, 1);
        } else {
            pf_woken(x, n->rank, n->stream, op, stage);
        }
        if (n->comm == EV_PAIR) /* the second op, a stage behind */
            pf_pair(x, &x->pairs[pair_id(n)], stage);
    }
}

/* ---- p2p matching table (open addressing on (src, dst, tag)) ------------ */

static int keys_grow(ex *x);

static pkey *key_get(ex *x, int32_t src, int32_t dst, int32_t tag)
{
    if (x->nkeys * 2 >= x->nkeys_cap && keys_grow(x))
        return NULL;
    uint64_t m = (uint64_t)x->nkeys_cap - 1;
    for (uint64_t i = zs_hash3(src, dst, tag) & m;; i = (i + 1) & m) {
        pkey *k = &x->keys[i];
        if (!k->used) {
            *k = (pkey){src, dst, tag, 1, (int32_t)x->nkeys};
            x->nkeys++;
            return k;
        }
        if (k->src == src && k->dst == dst && k->tag == tag)
            return k;
    }
}

static int keys_grow(ex *x)
{
    int64_t nc = x->nkeys_cap ? x->nkeys_cap * 2 : 1024;
    pkey *old = x->keys;
    int64_t oc = x->nkeys_cap;
    x->keys = calloc((size_t)nc, sizeof(pkey));
    if (!x->keys) {
        x->keys = old;
        return ZS_ENOMEM;
    }
    x->nkeys_cap = nc;
    x->nkeys = 0;
    for (int64_t i = 0; i < oc; i++) {
        if (!old[i].used)
            continue;
        uint64_t m = (uint64_t)nc - 1;
        for (uint64_t j = zs_hash3(old[i].src, old[i].dst, old[i].tag) & m;; j = (j + 1) & m)
            if (!x->keys[j].used) {
                x->keys[j] = old[i];
                x->nkeys++;
                break;
            }
    }
    free(old);
    return ZS_OK;
}

static int chan_push(chan *k, post p)
{
    if (k->np < 2) {
        k->in[(k->qh + k->np) & 1] = p;
        k->np++;
        return ZS_OK;
    }
    if (k->vhead > 0 && k->vhead == k->vn)
        k->vhead = k->vn = 0; /* drained: reuse from the start */
    if (k->vn == k->vcap) {
        int32_t nc = k->vcap ? k->vcap * 2 : 4;
        post *v = nc > k->vcap ? realloc(k->v, sizeof(post) * (size_t)nc) : NULL;
        if (!v)
            return ZS_ENOMEM;
        k->v = v;
        k->vcap = nc;
    }
    k->v[k->vn++] = p;
    k->np++;
    return ZS_OK;
}

/* The first pending post; the third (if any) takes its place, behind the
 * second. */
static post chan_pop(chan *k)
{
    post p = k->in[k->qh];
    if (--k->np >= 2)
        k->in[k->qh] = k->v[k->vhead++];
    k->qh ^= 1;
    return p;
}

/* ---- accounting ---------------------------------------------------------- */

/* The accounting's calls (none in a dry run): queued (zs_acctq) when the
 * run's state outgrows the cache (x->pf), so that each rank's accounting
 * is fetched once per batch; else applied at once, in the same order for
 * each rank (what the queue keeps), so with the same results: its records,
 * sort and second pass cost and save no miss when the accounting is in
 * the cache (zs_acctq_flush was 4% of the WLB point's samples). */
static void acct(ex *x, int rank, int stream, int dcompute, int dcomm)
{
    rank_st *r = &x->r[rank];
    if (x->dry)
        return;
    if (x->pf)
        zs_acctq_change(&x->aq, rank, stream, x->now, dcompute, dcomm);
    else
        zs_foldacct_change(&r->acct, &r->res, stream, x->now, dcompute, dcomm);
}

static void acct_boundary(ex *x, int rank, int stream)
{
    rank_st *r = &x->r[rank];
    if (x->dry)
        return;
    if (x->pf)
        zs_acctq_boundary(&x->aq, rank, stream, x->now);
    else
        zs_foldacct_boundary(&r->acct, &r->res, stream, x->now);
}

static void acct_sleep(ex *x, int rank, int stream, double period, int back)
{
    rank_st *r = &x->r[rank];
    if (x->dry)
        return;
    if (x->pf)
        zs_acctq_sleep(&x->aq, rank, stream, x->now, period, back);
    else
        zs_foldacct_sleep(&r->acct, &r->res, stream, x->now, period, back);
}

static void acct_wake(ex *x, int rank, int stream)
{
    rank_st *r = &x->r[rank];
    if (x->dry)
        return;
    if (x->pf)
        zs_acctq_wake(&x->aq, rank, stream, x->now);
    else
        zs_foldacct_wake(&r->acct, &r->res, stream, x->now);
}

static void count_p2p_bytes(ex *x, int src, int dst, double bytes)
{
    const zs_cluster *c = &x->cost->cluster;
    zs_result *res = x->res;
    if (zs_cluster_node_of(c, src) == zs_cluster_node_of(c, dst)) {
        res->link_bytes[ZS_LINK_NVLINK] += 2 * bytes; /* up-link and down-link */
        return;
    }
    res->link_bytes[ZS_LINK_PCIE] += 4 * bytes; /* GPU->switch->NIC on both ends */
    res->link_bytes[ZS_LINK_NIC] += 2 * bytes;
    res->link_bytes[ZS_LINK_FABRIC] += 2 * bytes;
    double bw = zs_cluster_link_bw(c, ZS_LINK_NIC);
    int ns = zs_cluster_node_of(c, src) * c->nics_per_node + zs_cluster_nic_of(c, src);
    int nd = zs_cluster_node_of(c, dst) * c->nics_per_node + zs_cluster_nic_of(c, dst);
    res->nic_bytes[ns] += bytes;
    res->nic_bytes[nd] += bytes;
    x->nic_tx[ns] += bytes / bw;
    x->nic_rx[nd] += bytes / bw;
}

/* ---- interference ------------------------------------------------------------ */

/* The share of its rate a rank's compute keeps under `ctas` CTAs. */
static double intf_rate(const ex *x, int ctas)
{
    int c = ctas < x->cta_cap ? ctas : x->cta_cap;
    return c > 0 ? (double)(x->sms - c) / x->sms : 1.0;
}

/* The CTAs of a send or receive of `bytes` between ranks a and b. */
static int intf_p2p_ctas(const ex *x, int a, int b, double bytes)
{
    const zs_cluster *c = &x->cost->cluster;
    int k = zs_cluster_node_of(c, a) != zs_cluster_node_of(c, b);
    return zs_nccl_p2p_split(x->p2p_per[k], x->p2p_part[k], bytes);
}

/* Schedules the completion of the compute op of stream s of `rank` at its
 * end; the event pushed before for it, if any, is stale from now on. */
static int intf_push(ex *x, int rank, int s)
{
    intf_op *c = &x->intf[rank].c[s];
    ev v = {c->end, 0, c->p.op, rank, (int8_t)s, 0};
    if (next_seq(x, &c->p, &v.seq) || push_ev(x, &v))
        return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    c->seq = v.seq;
    return ZS_OK;
}

/* Starts compute op `me` of `dur` seconds at the rank's present rate. */
static int intf_start(ex *x, const post *me, double dur)
{
    intf_st *f = &x->intf[me->rank];
    intf_op *c = &f->c[me->stream];
    c->p = *me;
    c->left = dur;
    c->since = x->now;
    c->end = x->now + dur / f->rate;
    return intf_push(x, me->rank, me->stream);
}

/* The rank's communication in flight changes by d CTAs: its running
 * compute ops keep the work they have left and finish at the new rate. */
static int intf_change(ex *x, int rank, int d)
{
    intf_st *f = &x->intf[rank];
    f->ctas += d;
    double rate = intf_rate(x, f->ctas);
    if (rate == f->rate)
        return ZS_OK;
    for (int s = 0; s < x->s->nstreams; s++) {
        intf_op *c = &f->c[s];
        if (c->p.op < 0)
            continue;
        c->left -= (x->now - c->since) * f->rate;
        c->left = c->left > 0 ? c->left : 0;
        c->since = x->now;
        double end = x->now + c->left / rate;
        if (end == c->end)
            continue;
        c->end = end;
        if (intf_push(x, rank, s))
            return ZS_ENOMEM;
    }
    f->rate = rate;
    return ZS_OK;
}

/* A compute completion: 0 when stale (its op was re-timed since), else 1
 * with the stretch of the op counted. */
static int intf_done(ex *x, const ev *v, double dur)
{
    intf_st *f = &x->intf[v->rank];
    intf_op *c = &f->c[v->stream];
    if (c->seq != v->seq)
        return 0;
    double over = (x->now - c->p.t0) - dur;
    f->stretched += over > 0 ? over : 0;
    c->p.op = -1;
    c->seq = -1;
    return 1;
}

/* The state of every rank, with interference; nothing without. */
static int intf_open(ex *x, const zs_analytic_opts *o)
{
    if (!o || !o->exec.interference || x->dry)
        return ZS_OK;
    const zs_cluster *cl = &x->cost->cluster;
    x->intf = calloc((size_t)(x->s->nranks > 0 ? x->s->nranks : 1), sizeof *x->intf);
    if (!x->intf)
        return ZS_ENOMEM;
    for (int rk = 0; rk < x->s->nranks; rk++) {
        x->intf[rk].rate = 1;
        for (int st = 0; st < ZS_MAX_STREAMS; st++)
            x->intf[rk].c[st] = (intf_op){.p = {.op = -1}, .seq = -1};
    }
    x->sms = cl->gpu.sms > 0 ? cl->gpu.sms : 1;
    /* Several kernels' CTAs add up to NCCL's most channels, and leave the
     * compute an SM at least. */
    x->cta_cap = x->sms - 1 < ZS_NCCL_MAXCHANNELS ? x->sms - 1 : ZS_NCCL_MAXCHANNELS;
    /* Pairs alike on a cluster of identical nodes: GPUs 0 and 1 of a node,
     * GPU 0 of two nodes. The communicator is taken to be the schedule's
     * ranks (it names none): one that spans nodes gives every peer, those
     * of its own node too, the network's channels per peer (NCCL takes the
     * fewest over the peers) and the network's part size (the p2p chunk of
     * a communicator across nodes). */
    zs_nccl_p2p_chans(cl, 0, cl->gpus_per_node > 1 ? 1 : 0, &x->p2p_per[0], &x->p2p_part[0]);
    zs_nccl_p2p_chans(cl, 0, cl->nodes > 1 ? cl->gpus_per_node : 0, &x->p2p_per[1],
                      &x->p2p_part[1]);
    if (x->s->nranks > cl->gpus_per_node && x->p2p_per[1] > 0) {
        x->p2p_per[0] = x->p2p_per[1];
        x->p2p_part[0] = x->p2p_part[1];
    }
    return ZS_OK;
}

/* The result's per-rank interference and a note on it. */
static int intf_close(ex *x)
{
    zs_result *res = x->res;
    int n = x->s->nranks;
    if (!(res->interference = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1))))
        return ZS_ENOMEM;
    double sum = 0, max = 0;
    int at = 0;
    for (int rk = 0; rk < n; rk++) {
        res->interference[rk] = x->intf[rk].stretched;
        sum += x->intf[rk].stretched;
        if (x->intf[rk].stretched > max) {
            max = x->intf[rk].stretched;
            at = rk;
        }
    }
    double mean = n > 0 ? sum / n : 0;
    zs_result_note(res,
                   "interference on: NCCL kernels hold SMs under compute (one CTA per channel: "
                   "a collective's algorithm's channels, a transfer's p2p channels; %d SMs, at "
                   "most %d held), compute stretched %.3f ms per rank on average (%.2f%% of the "
                   "iteration), at most %.3f ms (rank %d); folding off",
                   x->sms, x->cta_cap, mean * 1e3,
                   res->iter_time > 0 ? 100 * mean / res->iter_time : 0.0, max * 1e3, at);
    return ZS_OK;
}

/* ---- transfers that share NICs ---------------------------------------------- */

static int nic_index(const zs_cluster *c, int rank)
{
    return zs_cluster_node_of(c, rank) * c->nics_per_node + zs_cluster_nic_of(c, rank);
}

/* Pushes the completions of the items whose speed changed. */
static int reschedule(ex *x)
{
    const int32_t *ch;
    int n = zs_linkshare_changed(x->sh, &ch);
    for (int i = 0; i < n; i++) {
        int64_t code = (int64_t)((uint64_t)zs_linkshare_gen(x->sh, ch[i]) << 32 | (uint32_t)ch[i]);
        ev v = {zs_linkshare_finish(x->sh, ch[i]), 0, code, -1, 0, 1};
        if (next_seq(x, NULL, &v.seq) || push_ev(x, &v))
            return ZS_ENOMEM;
    }
    return ZS_OK;
}

/* Starts a transfer (or collective) of uncontended time T that puts the
 * loads accumulated in x->acc (the touched resources) on the NICs, and
 * completes the ops in who[] when it ends. */
static int start_item(ex *x, double T, int ntouched, const post *who, int nwho)
{
    int *res = x->touched;
    double ld[256];
    int32_t id;
    int rc = ZS_OK;
    if (ntouched > (int)(sizeof ld / sizeof ld[0])) {
        /* A collective over very many NICs: the loads in place. */
        double *big = malloc(sizeof(double) * (size_t)ntouched);
        if (!big)
            return ZS_ENOMEM;
        for (int i = 0; i < ntouched; i++)
            big[i] = x->acc[res[i]];
        rc = zs_linkshare_add(x->sh, x->now, T, res, big, ntouched, &id);
        free(big);
    } else {
        for (int i = 0; i < ntouched; i++)
            ld[i] = x->acc[res[i]];
        rc = zs_linkshare_add(x->sh, x->now, T, res, ld, ntouched, &id);
    }
    for (int i = 0; i < ntouched; i++)
        x->acc[res[i]] = 0;
    if (rc)
        return rc;
    if (id >= x->capimem) {
        int32_t nc = x->capimem ? x->capimem * 2 : 64;
        while (nc <= id)
            nc *= 2;
        post **m = realloc(x->imem, sizeof(post *) * (size_t)nc);
        int32_t *n = m ? realloc(x->inmem, sizeof(int32_t) * (size_t)nc) : NULL;
        if (m)
            x->imem = m;
        if (!n)
            return ZS_ENOMEM;
        x->inmem = n;
        for (int32_t i = x->capimem; i < nc; i++) {
            x->imem[i] = NULL;
            x->inmem[i] = 0;
        }
        x->capimem = nc;
    }
    post *w = realloc(x->imem[id], sizeof(post) * (size_t)nwho);
    if (!w)
        return ZS_ENOMEM;
    memcpy(w, who, sizeof(post) * (size_t)nwho);
    x->imem[id] = w;
    x->inmem[id] = nwho;
    return reschedule(x);
}

static void load_add(ex *x, int res, double bytes, int *ntouched)
{
    if (x->acc[res] == 0 && bytes > 0)
        x->touched[(*ntouched)++] = res;
    x->acc[res] += bytes;
}

/* The NIC loads of a collective whose members span nodes, as the SimGrid
 * backend moves it: an all-to-all sends bytes/n from every member to every
 * other; any other collective runs `channels` rings (the fewest distinct
 * NICs any node's members reach) that enter each node through its NICs in
 * turn (channel ch through the node's ch-th NIC, leaving through the one
 * before it), each carrying 1/channels of what the algorithm NCCL runs
 * sends from a node into the network (tr->node_net: a ring's bus bytes, a
 * tree's buffer up and down, ...). */
static int coll_loads(ex *x, const zs_group *g, int kind, double bytes, const zs_nccl_traffic *tr)
{
    const zs_cluster *c = &x->cost->cluster;
    int n = g->n, nt = 0;
    if (kind == ZS_COLL_ALLTOALL) {
        for (int i = 0; i < n; i++) {
            int others = 0, node = zs_cluster_node_of(c, g->ranks[i]);
            for (int j = 0; j < n; j++)
                others += zs_cluster_node_of(c, g->ranks[j]) != node;
            int k = nic_index(c, g->ranks[i]);
            load_add(x, 2 * k, others * bytes / n, &nt);
            load_add(x, 2 * k + 1, others * bytes / n, &nt);
        }
        return nt;
    }
    double net = tr->node_net;
    int multi = 0;
    for (int i = 1; i < n; i++)
        multi |= zs_cluster_node_of(c, g->ranks[i]) != zs_cluster_node_of(c, g->ranks[0]);
    if (!multi)
        return 0; /* inside one node: NVLink only */
    /* Per node (members sorted by rank, nodes in rank order): its distinct
     * NICs in order. */
    int ch = c->nics_per_node;
    for (int i = 0; i < n;) {
        int node = zs_cluster_node_of(c, g->ranks[i]), nn = 0, last = -1;
        for (; i < n && zs_cluster_node_of(c, g->ranks[i]) == node; i++) {
            int k = zs_cluster_nic_of(c, g->ranks[i]);
            nn += k != last;
            last = k;
        }
        ch = nn < ch ? nn : ch;
    }
    ch = ch < 1 ? 1 : ch;
    for (int i = 0; i < n;) {
        int node = zs_cluster_node_of(c, g->ranks[i]), nics[64] = {0}, nn = 0;
        for (; i < n && zs_cluster_node_of(c, g->ranks[i]) == node; i++) {
            int k = zs_cluster_nic_of(c, g->ranks[i]);
            if ((nn == 0 || nics[nn - 1] != k) && nn < 64)
                nics[nn++] = k;
        }
        for (int h = 0; h < ch; h++) {
            int base = node * c->nics_per_node;
            load_add(x, 2 * (base + nics[(h + nn - 1) % nn]), net / ch, &nt); /* leaves */
            load_add(x, 2 * (base + nics[h % nn]) + 1, net / ch, &nt);        /* enters */
        }
    }
    return nt;
}

/* Bytes and NIC busy time of a collective: across nodes what coll_loads
 * put in x->acc (left there), inside nodes what each member of the
 * algorithm NCCL runs sends over NVLink (tr->gpu_intra), or the
 * all-to-all pairs that stay on NVLink. */
static void count_coll_bytes(ex *x, const zs_group *g, int kind, double bytes, int nt,
                             const zs_nccl_traffic *tr)
{
    const zs_cluster *c = &x->cost->cluster;
    zs_result *res = x->res;
    double bw = zs_cluster_link_bw(c, ZS_LINK_NIC);
    for (int i = 0; i < nt; i++) {
        int r = x->touched[i], k = r / 2;
        double b = x->acc[r];
        res->nic_bytes[k] += b;
        if (r % 2)
            x->nic_rx[k] += b / bw;
        else
            x->nic_tx[k] += b / bw;
        res->link_bytes[ZS_LINK_PCIE] += 2 * b; /* GPU -> switch -> NIC at this end */
        res->link_bytes[ZS_LINK_NIC] += b;
        res->link_bytes[ZS_LINK_FABRIC] += b;
    }
    int n = g->n;
    double intra = 0;
    if (kind == ZS_COLL_ALLTOALL) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                intra += i != j &&
                         zs_cluster_node_of(c, g->ranks[i]) == zs_cluster_node_of(c, g->ranks[j]);
        intra *= bytes / n;
    } else {
        intra = n * tr->gpu_intra;
    }
    res->link_bytes[ZS_LINK_NVLINK] += 2 * intra; /* up-link and down-link */
}

/* ---- streams -------------------------------------------------------------- */

static int deps_ok(const rank_st *r, const xop *o, int32_t iter)
{
    unsigned nd = o->bits & XOP_ND;
    if (nd != XOP_MORE) {
        for (unsigned k = 0; k < nd; k++)
            if (r->xo[o->d[k]].done < iter + 1)
                return 0;
        return 1;
    }
    const xdep *d = r->xd + o->d[0];
    for (int32_t k = 0; k < o->d[1]; k++) {
        int32_t need = d[k].need < 0 ? iter + 1 : d[k].need;
        if (r->xo[d[k].op].done < need)
            return 0;
    }
    return 1;
}

/* One more completion of op i (and the skipped ones waiting for it). */
static void done_inc(rank_st *r, int64_t i)
{
    xop *o = &r->xo[i];
    o->done++;
    if (o->bits & XOP_SKIP && o->done == r->skip[2 * i]) {
        o->done += r->skip[2 * i + 1];
        o->bits &= (uint8_t)~XOP_SKIP;
    }
}

static int fold_cross(ex *x, int rank, int stream, stream_st *c);

/* Moves cursor c of `stream` to the start of segment g (iteration 0; past
 * the last segment: nothing left). */
static void enter_seg(const ex *x, const rank_st *r, stream_st *c, int stream, int32_t g)
{
    c->seg = g;
    c->iter = 0;
    c->pos = g < r->nsegs ? first_of(x, r, g, stream) : 0;
    c->end = g < r->nsegs ? r->sg[g].end : 0;
    c->repeat = g < r->nsegs ? r->sg[g].repeat : 0;
}

/* Moves the cursor of stream `st` to its next op at or after pos; marks the
 * stream finished at the end of the program. Entering the next iteration
 * of a repeated segment may fold (the stream then sleeps). */
static int seek(ex *x, int rank, int stream, stream_st *c)
{
    const rank_st *r = &x->r[rank];
    /* c->pos is an op of this stream or its segment's end: every move goes
     * to a segment's first op of the stream or along xop.nxt. */
    while (c->seg < r->nsegs) {
        if (c->pos < c->end)
            return ZS_OK;
        if (++c->iter < c->repeat) {
            c->pos = first_of(x, r, c->seg, stream);
            if (x->fold && zs_fold_candidate(x->fold, rank, c->seg)) {
                int rc = fold_cross(x, rank, stream, c);
                if (rc || c->asleep)
                    return rc;
            }
        } else {
            enter_seg(x, r, c, stream, c->seg + 1);
        }
    }
    c->finished = 1;
    return ZS_OK;
}

/* An error naming op i of `rank` (its number in the schedule). */
static int fail_at_sched(ex *x, int code, int rank, int64_t i, const char *what)
{
    char buf[512] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    if (f) {
        zs_op_print(f, x->s, rank, i);
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    x->failed = 1;
    return zs_err_set(x->e, code, buf, "check the planner that produced this schedule", "%s", what);
}

/* The same for op i as the run numbers it (stream order). */
static int fail_at(ex *x, int code, int rank, int64_t i, const char *what)
{
    int64_t n = x->s->ranks[rank].nops;
    return fail_at_sched(x, code, rank, i >= 0 && i < n ? x->r[rank].perm[i] : i, what);
}

static int post_p2p(ex *x, int rank, int stream, const xop *op, int64_t i)
{
    int send = op->kind == ZS_OP_SEND;
    int src = send ? rank : op->a, dst = send ? op->a : rank;
    chan *k = &x->ch[op->b];
    const stream_st *c = &x->r[rank].st[stream];
    post me = {rank, (int8_t)stream, i, op->v, x->now, c->iter, send ? k->nsend++ : k->nrecv++};
    if (k->np == 0 || k->side == op->kind) {
        k->side = op->kind;
        return chan_push(k, me) ? zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory") : ZS_OK;
    }
    post peer = chan_pop(k);
    if (peer.bytes != me.bytes)
        return fail_at(x, ZS_EINVALID, rank, i, "send and receive sizes differ");
    double t = x->dry ? 0 : zs_cost_p2p(x->cost, src, dst, me.bytes);
    if (!x->dry)
        count_p2p_bytes(x, src, dst, me.bytes);
    acct(x, rank, stream, 0, 1);
    acct(x, peer.rank, peer.stream, 0, 1);
    if (x->intf) {
        int k = intf_p2p_ctas(x, src, dst, me.bytes);
        if (intf_change(x, rank, k) || intf_change(x, peer.rank, k))
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    const zs_cluster *cl = x->dry ? NULL : &x->cost->cluster;
    if (cl && zs_cluster_node_of(cl, src) != zs_cluster_node_of(cl, dst) && me.bytes > 0) {
        /* Across nodes: shares the NICs with the other transfers in flight. */
        int nt = 0;
        load_add(x, 2 * nic_index(cl, src), me.bytes, &nt);
        load_add(x, 2 * nic_index(cl, dst) + 1, me.bytes, &nt);
        post who[2] = {me, peer};
        if (start_item(x, t, nt, who, 2))
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
        return ZS_OK;
    }
    if (push_pair(x, x->now + t, &me, &peer))
        return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    return ZS_OK;
}

static int post_coll(ex *x, int rank, int stream, const xop *op, int64_t i, int32_t iter)
{
    const zs_group *g = &x->s->groups[op->a];
    coll_st *c = &x->colls[op->a];
    if (zs_group_index(g, rank) < 0)
        return fail_at(x, ZS_EINVALID, rank, i, "rank is not a member of the collective's group");
    if (c->arrived == 0) {
        c->bytes = op->v;
        c->kind = op->b;
    } else if (c->kind != op->b || (c->kind != ZS_COLL_ALLTOALL && c->bytes != op->v)) {
        return fail_at(x, ZS_EINVALID, rank, i,
                       "members of a collective disagree on its kind or size");
    } else if (op->v > c->bytes) {
        c->bytes = op->v; /* all-to-all(v): the largest buffer sets the pace */
    }
    c->who[c->arrived++] = (post){rank, (int8_t)stream, i, op->v, x->now, iter, -1};
    if (c->arrived < g->n)
        return ZS_OK;
    double t = 0;
    int ctas = 0;
    zs_nccl_traffic tr = {0, 0};
    if (!x->dry) {
        int *ranks = malloc(sizeof(int) * (size_t)g->n);
        if (!ranks)
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
        for (int k = 0; k < g->n; k++)
            ranks[k] = g->ranks[k];
        t = zs_cost_collective(x->cost, (zs_coll_kind)c->kind, ranks, g->n, c->bytes);
        /* The algorithm the cost model priced, and what it moves where (the
         * SimGrid backend asks the same question, zs_sim_coll.c). */
        zs_nccl_choice ch;
        zs_err pe;
        int prc = zs_nccl_group_plan(&x->cost->cluster, ranks, g->n, (zs_coll_kind)c->kind,
                                     c->bytes, zs_cost_nccl(x->cost), &ch, &tr, &pe);
        if (x->intf && prc == ZS_OK)
            ctas = zs_nccl_group_ctas(&x->cost->cluster, ranks, g->n, (zs_coll_kind)c->kind,
                                      c->bytes, zs_cost_nccl(x->cost));
        free(ranks);
        if (prc)
            return fail_at(x, prc, c->who[0].rank, c->who[0].op, pe.what);
        for (int k = 0; x->fold && k < g->n; k++)
            if (c->who[k].rank == g->ranks[0]) { /* for folding's replays */
                rank_st *r0 = &x->r[g->ranks[0]];
                size_t n0 = (size_t)(x->s->ranks[g->ranks[0]].nops);
                if (!r0->cmax && !(r0->cmax = calloc(n0 ? n0 : 1, sizeof(double))))
                    return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
                r0->cmax[c->who[k].op] = c->bytes;
            }
    }
    for (int k = 0; k < g->n; k++) { /* every member's rank: fetched 8 ahead */
        if (x->pf && k + 8 < g->n)
            pf_rank(x, c->who[k + 8].rank);
        acct(x, c->who[k].rank, c->who[k].stream, 0, 1);
        if (x->intf) {
            x->intf[c->who[k].rank].coll_ctas[c->who[k].stream] = ctas;
            if (intf_change(x, c->who[k].rank, ctas))
                return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
        }
    }
    c->arrived = 0;
    int nt = x->dry ? 0 : coll_loads(x, g, c->kind, c->bytes, &tr);
    if (!x->dry)
        count_coll_bytes(x, g, c->kind, c->bytes, nt, &tr);
    if (nt > 0) { /* spans nodes: shares the NICs with the other transfers */
        if (start_item(x, t, nt, c->who, g->n))
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
        return ZS_OK;
    }
    for (int k = 0; k < g->n; k++)
        if (push(x, x->now + t, &c->who[k], 1))
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    return ZS_OK;
}

/* Issues what the stream can issue now; returns an error status only. A
 * marker it completes adds the streams waiting on it to *retry. */
static int try_start(ex *x, int rank, int stream, unsigned *retry)
{
    rank_st *r = &x->r[rank];
    stream_st *c = &r->st[stream];
    while (!c->busy && !c->finished && !c->asleep) {
        int rc = seek(x, rank, stream, c);
        if (rc || c->finished || c->asleep)
            return rc;
        const xop *op = &r->xo[c->pos];
        /* Anything but a transfer waits for the stream's transfers: asked
         * first, so its dependencies are not read for nothing (a cache
         * miss each at thousands of ranks; either way it waits). */
        if (!p2p_kind(op->kind) && c->p2p_pending > 0)
            return ZS_OK;
        if (!deps_ok(r, op, c->iter))
            return ZS_OK;
        if (p2p_kind(op->kind)) {
            /* Sends and receives are issued without holding the stream. */
            c->p2p_pending++;
            int64_t i = c->pos;
            c->pos = xop_next(op, c->pos, c->end);
            int rc = post_p2p(x, rank, stream, op, i);
            if (rc)
                return rc;
            continue;
        }
        if (op->kind == ZS_OP_MARKER) {
            done_inc(r, c->pos);
            *retry |= op->waiters;
            r->ops++;
            c->pos = xop_next(op, c->pos, c->end);
            continue;
        }
        c->busy = 1;
        c->cur = c->pos;
        c->pos = xop_next(op, c->pos, c->end);
        if (op->kind == ZS_OP_COLL)
            return post_coll(x, rank, stream, op, c->cur, c->iter);
        /* A host copy runs on a copy engine: communication, not compute,
         * and NCCL's SMs do not slow it. */
        int copy = op->kind == ZS_OP_COMPUTE && op->a;
        acct(x, rank, stream, !copy, copy);
        post me = {rank, (int8_t)stream, c->cur, 0, x->now, c->iter, -1};
        if (x->intf && !copy)
            return intf_start(x, &me, op->v);
        if (push(x, x->now + (x->dry ? 0 : op->v), &me, 0))
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
        return ZS_OK;
    }
    return ZS_OK;
}

/* Tries the streams of `rank` in `retry`, in stream order, once each (a
 * marker completed on the way adds its waiters). Any other stream would
 * issue nothing: it is busy, asleep or finished, or its head op waits for a
 * transfer of its own or for an op that has not completed since it last
 * tried (its cursor is always past a seek; the one seek owed after a
 * stream's last op comes with that op's completion, on its own stream).
 * Skipping them saves a cold op record per stream and event. */
static int try_streams(ex *x, int rank, unsigned retry)
{
    for (int st = 0; st < x->s->nstreams; st++) {
        if (!(retry >> st & 1u))
            continue;
        int rc = try_start(x, rank, st, &retry);
        if (rc)
            return rc;
    }
    return ZS_OK;
}

static int try_rank(ex *x, int rank)
{
    return try_streams(x, rank, ~0u);
}

/* ---- folding ------------------------------------------------------------ */

/* The bytes of n instances of a collective (kind, bytes per member) on
 * group g, as post_coll counts one. */
static int replay_coll_bytes(ex *x, const zs_group *g, int kind, double bytes, int32_t n)
{
    int *ranks = malloc(sizeof(int) * (size_t)g->n);
    if (!ranks)
        return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int k = 0; k < g->n; k++)
        ranks[k] = g->ranks[k];
    zs_nccl_choice ch;
    zs_nccl_traffic tr = {0, 0};
    zs_err pe;
    int rc = zs_nccl_group_plan(&x->cost->cluster, ranks, g->n, (zs_coll_kind)kind, bytes,
                                zs_cost_nccl(x->cost), &ch, &tr, &pe);
    free(ranks);
    if (rc)
        return zs_err_set(x->e, rc, NULL, NULL, "%s", pe.what);
    int nt = coll_loads(x, g, kind, bytes, &tr);
    for (int i = 0; i < nt; i++) /* n instances: n times the loads */
        x->acc[x->touched[i]] *= n;
    tr.gpu_intra *= n;
    tr.node_net *= n;
    count_coll_bytes(x, g, kind, bytes * n, nt, &tr);
    for (int i = 0; i < nt; i++)
        x->acc[x->touched[i]] = 0;
    return ZS_OK;
}

/* The work of `n` skipped iterations of stream `stream` in segment g:
 * bytes (each transfer once, at its receiver; each collective once, at its
 * first member) and the channels' message numbers (timeline flows). */
static int fold_account(ex *x, int rank, int stream, int32_t g, int32_t n)
{
    const zs_rank_prog *p = &x->s->ranks[rank];
    const rank_st *r = &x->r[rank];
    /* The stream's ops in the segment, in their schedule order. */
    int32_t end = r->sg[g].end;
    for (int32_t j = first_of(x, r, g, stream); j < end; j = xop_next(&r->xo[j], j, end)) {
        const zs_op *op = &p->ops[r->perm[j]];
        if (p2p_kind(op->kind) && x->tl) {
            chan *k = &x->ch[r->xo[j].b];
            *(op->kind == ZS_OP_SEND ? &k->nsend : &k->nrecv) += n;
        }
        if (x->dry)
            continue;
        if (op->kind == ZS_OP_RECV) {
            count_p2p_bytes(x, op->u.p2p.peer, rank, op->u.p2p.bytes * n);
        } else if (op->kind == ZS_OP_COLL) {
            const zs_group *gr = &x->s->groups[op->u.coll.group];
            double b = op->u.coll.bytes;
            if (r->cmax && r->cmax[j] > b)
                b = r->cmax[j]; /* all-to-all(v): the largest buffer, as last time */
            if (gr->ranks[0] == rank && gr->n > 1) {
                int rc = replay_coll_bytes(x, gr, op->u.coll.ck, b, n);
                if (rc)
                    return rc;
            }
        }
    }
    return ZS_OK;
}

/* Stream c entered iteration c->iter of a candidate segment: fold or not. */
static int fold_cross(ex *x, int rank, int stream, stream_st *c)
{
    rank_st *r = &x->r[rank];
    acct_boundary(x, rank, stream); /* the split up to now, and the stream's period */
    zs_fold_step st;
    zs_fold_cross(x->fold, rank, c->seg, stream, c->iter, x->now, &st);
    if (st.skip <= 0)
        return ZS_OK;
    c->asleep = 1;
    r->wk[stream] = (stream_wake){c->seg, c->iter, st.skip};
    r->ops += st.skip * zs_fold_ops_per_iter(x->fold, rank, c->seg, stream);
    acct_sleep(x, rank, stream, st.period, st.back);
    int rc = fold_account(x, rank, stream, c->seg, st.skip);
    if (rc)
        return rc;
    c->iter += st.skip;
    if (c->iter >= c->repeat)
        enter_seg(x, r, c, stream, c->seg + 1);
    post wake = {rank, (int8_t)stream, -1, 0, x->now, 0, -1};
    if (push(x, x->now + st.sleep, &wake, EV_WAKE))
        return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    return ZS_OK;
}

/* A folded stream wakes: its ops in the segment count the skipped
 * iterations (later, for one whose last simulated iteration is in flight). */
static int wake(ex *x, const ev *v)
{
    rank_st *r = &x->r[v->rank];
    stream_st *c = &r->st[v->stream];
    const stream_wake *w = &r->wk[v->stream];
    int32_t end = r->sg[w->seg].end;
    if (!r->skip) {
        size_t n = (size_t)x->s->ranks[v->rank].nops;
        if (!(r->skip = malloc(sizeof(int32_t) * 2 * (n ? n : 1))))
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int32_t i = first_of(x, r, w->seg, v->stream); i < end; i = xop_next(&r->xo[i], i, end)) {
        xop *o = &r->xo[i];
        if (o->done >= w->iter) {
            o->done += w->skip;
        } else if (o->bits & XOP_SKIP) {
            r->skip[2 * i + 1] += w->skip;
        } else {
            r->skip[2 * i] = w->iter;
            r->skip[2 * i + 1] = w->skip;
            o->bits |= XOP_SKIP;
        }
    }
    c->asleep = 0;
    acct_wake(x, v->rank, v->stream);
    if (x->now > r->end)
        r->end = x->now;         /* the skipped iterations end here */
    return try_rank(x, v->rank); /* the skip changed ops of the stream: every stream */
}

static int retire(ex *x, const ev *v)
{
    if (v->comm == EV_WAKE)
        return wake(x, v);
    rank_st *r = &x->r[v->rank];
    stream_st *c = &r->st[v->stream];
    const xop *o = &r->xo[v->op];
    int copy = o->kind == ZS_OP_COMPUTE && o->a;
    if (x->intf && !copy) {
        if (!v->comm && !intf_done(x, v, o->v))
            return ZS_OK; /* re-timed since: a later event completes it */
        if (v->comm && intf_change(x, v->rank,
                                   -(p2p_kind(o->kind) ? intf_p2p_ctas(x, v->rank, o->a, o->v)
                                                       : x->intf[v->rank].coll_ctas[v->stream])))
            return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    acct(x, v->rank, v->stream, v->comm || copy ? 0 : -1, v->comm || copy ? -1 : 0);
    done_inc(r, v->op);
    r->ops++;
    r->end = x->now;
    if (p2p_kind(r->xo[v->op].kind))
        c->p2p_pending--;
    else
        c->busy = 0;
    if (x->tl) {
        const tl_aux *a = &x->aux[v->seq];
        zs_timeline_op(x->tl, v->rank, r->perm[v->op], a->iter, a->t0, x->now,
                       p2p_kind(r->xo[v->op].kind) ? a->msg : ZS_TL_SEQ_NONE);
    }
    return try_streams(x, v->rank, 1u << v->stream | r->xo[v->op].waiters);
}

static void ex_free(ex *x)
{
    for (int i = 0; x->r && i < x->s->nranks; i++) {
        free(x->r[i].cmax);
        free(x->r[i].skip);
        zs_foldacct_free(&x->r[i].acct);
    }
    zs_fold_free(x->fold);
    x->fold = NULL;
    zs_bigmem_free(x->r, x->nr);
    zs_pool_free(x->pool); /* after the ranks' accounting gave its buffers back */
    zs_acctq_free(&x->aq);
    zs_bigmem_free(x->arena, x->narena);
    free(x->xos);
    zs_evq_free(&x->q);
    free(x->keys);
    for (int64_t i = 0; x->ch && i < x->nkeys; i++)
        free(x->ch[i].v);
    zs_bigmem_free(x->ch, x->nch);
    for (int32_t g = 0; x->colls && g < x->s->ngroups; g++)
        free(x->colls[g].who);
    free(x->colls);
    free(x->nic_tx);
    free(x->nic_rx);
    zs_timeline_free(x->tl); /* an unfinished timeline leaves no file */
    x->tl = NULL;
    free(x->aux);
    for (int32_t i = 0; i < x->capimem; i++)
        free(x->imem[i]);
    free(x->imem);
    free(x->inmem);
    free(x->pairs);
    free(x->acc);
    free(x->touched);
    free(x->intf);
    zs_linkshare_free(x->sh);
}

/* Both ops of an EV_PAIR event complete, in their sequence numbers' order:
 * the second right after the first, unless the first's retirement pushed
 * an event that comes before it (it cannot, with no negative durations),
 * which the queue then orders. */
static int finish_pair(ex *x, const ev *v)
{
    int32_t id = pair_id(v);
    pair_slot b = x->pairs[id];
    x->pairs[id].op = x->pfree;
    x->pfree = id;
    ev a = {v->t, v->seq, (int64_t)(uint32_t)v->op, v->rank, v->stream, 1};
    ev w = {v->t, v->seq + 1, b.op, b.rank, b.stream, 1};
    int rc = retire(x, &a);
    if (rc)
        return rc;
    const ev *n = zs_evq_peek(&x->q, 0);
    if (n && (n->t < w.t || (n->t == w.t && n->seq < w.seq)))
        return push_ev(x, &w) ? zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory") : ZS_OK;
    return retire(x, &w);
}

/* An item's completion: its ops complete together. */
static int finish_item(ex *x, const ev *v)
{
    int32_t id = (int32_t)(uint32_t)((uint64_t)v->op & 0xffffffffu);
    uint32_t gen = (uint32_t)((uint64_t)v->op >> 32);
    if (zs_linkshare_gen(x->sh, id) != gen)
        return ZS_OK; /* stale: its speed changed since */
    int n = x->inmem[id];
    post who[64], *w = n <= 64 ? who : malloc(sizeof(post) * (size_t)n);
    if (!w)
        return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    memcpy(w, x->imem[id], sizeof(post) * (size_t)n); /* the id may be reused below */
    zs_linkshare_remove(x->sh, x->now, id);
    int rc = reschedule(x) ? zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory") : ZS_OK;
    for (int i = 0; i < n && rc == ZS_OK; i++) {
        if (x->pf && i + 8 < n) /* a collective's members, as the window does for events */
            pf_rank(x, w[i + 8].rank);
        if (x->pf && i + 4 < n)
            pf_ops(x, w[i + 4].rank, w[i + 4].stream, w[i + 4].op, 0);
        ev m = {x->now, 0, w[i].op, w[i].rank, w[i].stream, 1};
        rc = next_seq(x, &w[i], &m.seq) ? zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory")
                                        : retire(x, &m);
    }
    if (w != who)
        free(w);
    return rc;
}

static size_t up8(size_t n)
{
    return (n + 7) / 8 * 8;
}

/* Which segment each op of p is in (-1: none). */
static void fill_seg_of(const zs_rank_prog *p, int32_t *seg_of)
{
    for (int64_t i = 0; i < p->nops; i++)
        seg_of[i] = -1;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++)
            seg_of[i] = g;
}

/* Whether op i of rank rk keeps its dependencies in its record: at most
 * XOP_DEPS, every one an op of its segment. */
static int deps_inline(const zs_schedule *s, int rk, int64_t i, const int32_t *seg_of)
{
    const zs_rank_prog *p = &s->ranks[rk];
    const zs_op *op = &p->ops[i];
    if (op->ndeps > XOP_DEPS || seg_of[i] < 0)
        return 0;
    const int32_t *d = zs_schedule_deps(s, rk, op);
    for (int k = 0; k < op->ndeps; k++)
        if (d[k] < 0 || d[k] >= p->nops || seg_of[d[k]] != seg_of[i])
            return 0;
    return 1;
}

/* The dependencies of rank rk's ops that go to its xd table (seg_of:
 * fill_seg_of's). */
static size_t xd_count(const zs_schedule *s, int rk, const int32_t *seg_of)
{
    const zs_rank_prog *p = &s->ranks[rk];
    size_t nd = 0;
    for (int64_t i = 0; i < p->nops; i++)
        if (p->ops[i].ndeps > 0 && !deps_inline(s, rk, i, seg_of))
            nd += (size_t)p->ops[i].ndeps;
    return nd;
}

/* Rank rk's part of the arena: its xo, first, sg, perm and xd tables, in
 * that order; seg_of is scratch for its ops. */
static size_t rank_bytes(const zs_schedule *s, int rk, int32_t *seg_of)
{
    const zs_rank_prog *p = &s->ranks[rk];
    fill_seg_of(p, seg_of);
    size_t nd = xd_count(s, rk, seg_of);
    size_t n = sizeof(xop) * (size_t)p->nops + up8(sizeof(xdep) * nd) +
               up8(sizeof(int32_t) * (size_t)p->nsegs * (size_t)s->nstreams) +
               sizeof(xseg) * (size_t)p->nsegs + up8(sizeof(int32_t) * (size_t)p->nops);
    return (n + 63) / 64 * 64; /* the next rank's records start on a cache line */
}

/* Numbers rank r's ops in stream order: each segment keeps its range, and
 * in it each stream's ops follow one another in their schedule order, so
 * that the op a stream issues next sits beside the one it issued last
 * (the same or the next cache line, the same page) instead of after the
 * other streams' ops. inv[i]: the new number of schedule op i; r->perm the
 * other way. Also each segment's first op per stream and the chains. */
static void stream_order(const ex *x, rank_st *r, const zs_rank_prog *p, int32_t *inv)
{
    int ns = x->s->nstreams;
    for (int64_t i = 0; i < p->nops; i++) /* ops in no segment keep their number */
        inv[i] = r->perm[i] = (int32_t)i;
    for (int32_t g = 0; g < p->nsegs; g++) {
        int64_t op0 = p->segs[g].op0, end = op0 + p->segs[g].nops;
        int32_t at[ZS_MAX_STREAMS] = {0};
        for (int64_t i = op0; i < end; i++)
            at[p->ops[i].stream]++;
        int32_t next = (int32_t)op0;
        for (int st = 0; st < ns; st++) {
            int32_t n = at[st];
            r->first[(int64_t)g * ns + st] = n ? next : (int32_t)end;
            at[st] = next;
            next += n;
        }
        for (int64_t i = op0; i < end; i++) {
            int32_t j = at[p->ops[i].stream]++;
            inv[i] = j;
            r->perm[j] = (int32_t)i;
        }
    }
}

/* Fills rank rk's tables at `mem` (zeroed); seg_of and inv are scratch for
 * nops. */
static int rank_tables(ex *x, int rk, char *mem, int32_t *seg_of, int32_t *inv)
{
    const zs_schedule *s = x->s;
    const zs_rank_prog *p = &s->ranks[rk];
    rank_st *r = &x->r[rk];
    int ns = s->nstreams;
    r->xo = (xop *)(void *)mem;
    mem += sizeof(xop) * (size_t)p->nops;
    r->first = (int32_t *)(void *)mem;
    mem += up8(sizeof(int32_t) * (size_t)p->nsegs * (size_t)ns);
    r->sg = (xseg *)(void *)mem;
    mem += sizeof(xseg) * (size_t)p->nsegs;
    r->perm = (int32_t *)(void *)mem;
    mem += up8(sizeof(int32_t) * (size_t)p->nops);
    r->xd = (xdep *)(void *)mem; /* last: its size (rank_bytes's xd_count) is not needed here */
    fill_seg_of(p, seg_of);
    r->nsegs = p->nsegs;
    for (int32_t g = 0; g < p->nsegs; g++)
        r->sg[g] = (xseg){(int32_t)(p->segs[g].op0 + p->segs[g].nops), p->segs[g].repeat};
    stream_order(x, r, p, inv);
    int32_t nd = 0;
    for (int64_t i = 0; i < p->nops; i++) { /* schedule order: channels numbered as met */
        const zs_op *op = &p->ops[i];
        xop *o = &r->xo[inv[i]];
        o->kind = op->kind;
        o->stream = op->stream;
        if (op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV) {
            int send = op->kind == ZS_OP_SEND;
            pkey *k =
                key_get(x, send ? rk : op->u.p2p.peer, send ? op->u.p2p.peer : rk, op->u.p2p.tag);
            if (!k)
                return ZS_ENOMEM;
            o->a = op->u.p2p.peer;
            o->b = k->id;
            o->v = op->u.p2p.bytes;
        } else if (op->kind == ZS_OP_COLL) {
            o->a = op->u.coll.group;
            o->b = op->u.coll.ck;
            o->v = op->u.coll.bytes;
        } else {
            o->a = op->kind == ZS_OP_COMPUTE && zs_ck_is_host_copy(op->u.compute.ck);
            o->v = op->duration;
        }
        const int32_t *d = zs_schedule_deps(s, rk, op);
        int n = op->ndeps > 0 ? op->ndeps : 0;
        for (int k = 0; k < n; k++)
            if (d[k] < 0 || d[k] >= p->nops || seg_of[d[k]] < 0)
                return fail_at_sched(x, ZS_EINVALID, rk, i, "a dependency names no op of its rank");
        int in = deps_inline(s, rk, i, seg_of);
        o->bits = (uint8_t)(in ? (unsigned)n : XOP_MORE);
        if (!in) {
            o->d[0] = nd;
            o->d[1] = n;
        }
        for (int k = 0; k < n; k++) {
            int32_t ds = seg_of[d[k]];
            if (in)
                o->d[k] = inv[d[k]];
            else
                r->xd[nd + k] = (xdep){inv[d[k]], ds == seg_of[i] ? -1 : p->segs[ds].repeat};
            r->xo[inv[d[k]]].waiters |= (uint8_t)(1u << op->stream);
        }
        nd += in ? 0 : n;
    }
    for (int32_t g = 0; g < p->nsegs; g++) /* a stream's last op in a segment */
        for (int32_t j = (int32_t)p->segs[g].op0; j < r->sg[g].end; j++)
            if (j + 1 == r->sg[g].end || r->xo[j + 1].stream != r->xo[j].stream)
                r->xo[j].bits |= XOP_LAST;
    for (int st = 0; st < ns; st++)
        enter_seg(x, r, &r->st[st], st, 0);
    return ZS_OK;
}

/* Accounting calls queued per rank before they are applied (zs_acctq):
 * the more, the more calls share each fetch of a rank's accounting. */
#define ACCTQ_PER_RANK 32

/* The run's state; ZS_ENOMEM without setting x->e, any other failure with. */
static int setup(ex *x)
{
    const zs_schedule *s = x->s;
    x->nr = sizeof(rank_st) * (size_t)(s->nranks > 0 ? s->nranks : 1);
    x->r = zs_bigmem_alloc(x->nr);
    x->pool = zs_pool_new();
    x->colls = calloc((size_t)(s->ngroups > 0 ? s->ngroups : 1), sizeof(coll_st));
    if (!x->r || !x->colls || !x->pool)
        return ZS_ENOMEM;
    if (!x->dry && zs_acctq_init(&x->aq, s->nranks, ACCTQ_PER_RANK, &x->r[0].acct, &x->r[0].res,
                                 sizeof(rank_st)))
        return ZS_ENOMEM;
    for (int32_t g = 0; g < s->ngroups; g++)
        if (!(x->colls[g].who = malloc(sizeof(post) * (size_t)s->groups[g].n)))
            return ZS_ENOMEM;
    int64_t maxops = 1;
    size_t total = 0;
    for (int rk = 0; rk < s->nranks; rk++) {
        const zs_rank_prog *p = &s->ranks[rk];
        if (p->nops >= INT32_MAX || p->ndeps >= INT32_MAX)
            return zs_err_set(x->e, ZS_EINVALID, "analytic backend",
                              "split the work over more ranks",
                              "rank %d has %lld ops; the analytic backend takes at most %d", rk,
                              (long long)p->nops, INT32_MAX - 1);
        maxops = p->nops > maxops ? p->nops : maxops;
    }
    int32_t *seg_of = malloc(sizeof(int32_t) * (size_t)maxops);
    int32_t *inv = malloc(sizeof(int32_t) * (size_t)maxops);
    size_t *at = malloc(sizeof(size_t) * (size_t)(s->nranks > 0 ? s->nranks : 1));
    for (int rk = 0; seg_of && at && rk < s->nranks; rk++) {
        at[rk] = total;
        total += rank_bytes(s, rk, seg_of);
    }
    x->narena = total;
    x->arena = seg_of && at ? zs_bigmem_alloc(total) : NULL;
    if (!x->arena || !seg_of || !inv || !at) {
        free(at);
        free(seg_of);
        free(inv);
        return ZS_ENOMEM;
    }
    int rc = ZS_OK;
    for (int rk = 0; rk < s->nranks && rc == ZS_OK; rk++) {
        zs_foldacct_init(&x->r[rk].acct);
        x->r[rk].acct.nst = s->nstreams;
        x->r[rk].acct.pool = x->pool;
        rc = rank_tables(x, rk, (char *)x->arena + at[rk], seg_of, inv);
    }
    free(at);
    free(seg_of);
    free(inv);
    if (rc)
        return rc;
    if (!(x->xos = malloc(sizeof(xop *) * (size_t)(s->nranks > 0 ? s->nranks : 1))))
        return ZS_ENOMEM;
    for (int rk = 0; rk < s->nranks; rk++)
        x->xos[rk] = x->r[rk].xo;
    x->nch = sizeof(chan) * (size_t)(x->nkeys > 0 ? x->nkeys : 1);
    if (!(x->ch = zs_bigmem_alloc(x->nch)))
        return ZS_ENOMEM;
    free(x->keys);
    x->keys = NULL;
    x->nkeys_cap = 0;
    return ZS_OK;
}

/* Below this much state the loop does not fetch ahead (x->pf): a fixed
 * size, not the cache's as the system reports it (glibc's sysconf gives a
 * whole socket's L3, 256 MiB on this machine's EPYC, where one core sees
 * 32 MiB). */
#define PF_MIN_BYTES ((size_t)8 << 20)

/* Whether the loop fetches ahead (pf_*): when the state an event may
 * touch (the ranks', their op tables and the channels) is more than
 * PF_MIN_BYTES, so that events miss the caches. Below that the fetches
 * are only instructions: with the window's fetches off, the WLB figure
 * point at 64 GPUs (1 MB) took 0.77x the CPU time, te-cp at 1024 GPUs (12
 * MB) 0.95x, but at 2048 GPUs (24 MB) 1.17x and at 4096 (49 MB) 1.58x on a
 * 32 MiB L3; 8 MiB leaves 1024 GPUs fetching, as before, on smaller
 * caches too. Hints only: the results are the same either way. */
static int fetch_ahead(const ex *x)
{
    return x->nr + x->narena + x->nch > PF_MIN_BYTES;
}

/* The segment of op i of p (-1: none). */
static int32_t seg_index(const zs_rank_prog *p, int64_t i)
{
    for (int32_t g = 0; g < p->nsegs; g++)
        if (i >= p->segs[g].op0 && i < p->segs[g].op0 + p->segs[g].nops)
            return g;
    return -1;
}

/* Nothing is pending: a rank with work left is stuck (a deadlock). */
static int check_finished(ex *x)
{
    const zs_schedule *s = x->s;
    for (int rk = 0; rk < s->nranks; rk++)
        for (int st = 0; st < s->nstreams; st++) {
            stream_st *c = &x->r[rk].st[st];
            if (c->busy || (!c->finished && c->p2p_pending == 0))
                return fail_at(x, ZS_EINVALID, rk, c->busy ? c->cur : c->pos,
                               "the schedule cannot finish: this op waits forever (a message "
                               "or collective peer that never comes, or a cycle)");
            if (c->p2p_pending > 0 || !c->finished) {
                /* Find an issued transfer that never completed. */
                const zs_rank_prog *p = &s->ranks[rk];
                int64_t stuck = -1; /* the first in schedule order */
                for (int64_t j = 0; j < p->nops; j++) {
                    int64_t i = x->r[rk].perm[j];
                    int32_t g = seg_index(p, i);
                    if (p->ops[i].stream == st && p2p_kind(p->ops[i].kind) && g >= 0 &&
                        x->r[rk].xo[j].done < p->segs[g].repeat && (stuck < 0 || i < stuck))
                        stuck = i;
                }
                return fail_at_sched(x, ZS_EINVALID, rk, stuck < 0 ? 0 : stuck,
                                     "the schedule cannot finish: this transfer never completes (a "
                                     "message peer that never comes, or a cycle)");
            }
        }
    return ZS_OK;
}

/* The timeline, when one is asked for (opened before the folds: they
 * keep the iterations of the ranks it writes). */
static int tl_open(ex *x, const zs_analytic_opts *o, const zs_cluster *cl, zs_err *e)
{
    if (!o || !o->exec.timeline || x->dry)
        return ZS_OK;
    zs_tl_cfg tc;
    zs_exec_tl_cfg(&o->exec, cl->gpus_per_node, &tc);
    return zs_timeline_open(o->exec.timeline, x->s, &tc, &x->tl, e);
}

/* Folding unless off; a timeline keeps the iterations it shows. */
static int fold_open(ex *x, const zs_analytic_opts *o, zs_err *e)
{
    if (x->intf)
        return ZS_OK; /* interference: every iteration (see the top) */
    zs_fold_cfg fc;
    zs_exec_fold_cfg(o ? &o->exec : NULL, x->tl, &fc);
    return fc.on ? zs_fold_new(x->s, &fc, &x->fold, e) : ZS_OK;
}

void zs_analytic_opts_init(zs_analytic_opts *o)
{
    memset(o, 0, sizeof *o);
    zs_exec_opts_init(&o->exec);
}

int zs_analytic_run(const zs_schedule *s, const zs_cost *cost, const zs_analytic_opts *o,
                    zs_result **out, zs_err *e)
{
    clock_t t0 = clock();
    const zs_cluster *cl = cost ? &cost->cluster : NULL;
    int dry = o && o->dry;
    if (!dry && !cost)
        return zs_err_set(e, ZS_EINVALID, "analytic backend", NULL, "a cost model is required");
    if (cl && zs_cluster_gpus(cl) < s->nranks)
        return zs_err_set(e, ZS_EINPUT, s->cluster,
                          "use a cluster with at least as many GPUs as the schedule has ranks",
                          "the schedule has %d ranks but the cluster has %d GPUs", s->nranks,
                          zs_cluster_gpus(cl));
    ex x;
    memset(&x, 0, sizeof x);
    zs_evq_init(&x.q);
    x.pfree = -1;
    x.s = s;
    x.cost = cost;
    x.dry = dry;
    x.e = e;
    int nnics = cl ? cl->nodes * cl->nics_per_node : 0;
    x.res = zs_result_new(s->nranks, nnics);
    x.nic_tx = calloc((size_t)(nnics > 0 ? nnics : 1), sizeof(double));
    x.nic_rx = calloc((size_t)(nnics > 0 ? nnics : 1), sizeof(double));
    x.acc = calloc((size_t)(2 * nnics + 1), sizeof(double));
    x.touched = calloc((size_t)(2 * nnics + 1), sizeof(int));
    double *cap = calloc((size_t)(2 * nnics + 1), sizeof(double));
    if (cap)
        for (int k = 0; k < 2 * nnics; k++)
            cap[k] = zs_cluster_link_bw(cl, ZS_LINK_NIC);
    x.sh = cap ? zs_linkshare_new(2 * nnics, cap) : NULL;
    free(cap);
    int rc = x.res && x.nic_tx && x.nic_rx && x.acc && x.touched && x.sh ? tl_open(&x, o, cl, e)
                                                                         : ZS_ENOMEM;
    if (rc == ZS_OK)
        rc = intf_open(&x, o);
    if (rc == ZS_OK)
        rc = fold_open(&x, o, e);
    if (rc == ZS_OK)
        rc = setup(&x);
    if (rc) {
        ex_free(&x);
        zs_result_free(x.res);
        return rc == ZS_ENOMEM ? zs_err_set(e, ZS_ENOMEM, NULL, NULL,
                                            "out of memory setting up the analytic run")
                               : rc;
    }
    snprintf(x.res->backend, sizeof x.res->backend, "analytic");
    x.pf = fetch_ahead(&x);
    for (int rk = 0; rk < s->nranks && rc == ZS_OK; rk++)
        rc = try_rank(&x, rk);
    while (rc == ZS_OK && zs_evq_size(&x.q) > 0) {
        ev v = zs_evq_pop(&x.q);
        x.now = v.t;
        if (x.pf)
            prefetch_ahead(&x);
        rc = v.rank < 0          ? finish_item(&x, &v)
             : v.comm == EV_PAIR ? finish_pair(&x, &v)
                                 : retire(&x, &v);
    }
    if (rc == ZS_OK && !dry)
        zs_acctq_flush(&x.aq);
    if (rc == ZS_OK)
        rc = check_finished(&x);
    for (int rk = 0; rc == ZS_OK && rk < s->nranks; rk++)
        if (x.r[rk].acct.failed)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory accounting rank %d", rk);
    double tl_bytes = 0;
    char tl_subset[ZS_TL_NOTE_LEN] = "";
    if (rc == ZS_OK && x.tl) {
        snprintf(tl_subset, sizeof tl_subset, "%s", zs_timeline_subset(x.tl));
        rc = zs_timeline_close(x.tl, &tl_bytes, e);
        x.tl = NULL;
    }
    if (rc) {
        ex_free(&x);
        zs_result_free(x.res);
        return rc;
    }
    for (int rk = 0; rk < s->nranks; rk++) {
        if (!dry)
            zs_foldacct_close(&x.r[rk].acct, &x.r[rk].res, x.now);
        x.res->ranks[rk] = x.r[rk].res;
        x.res->ranks[rk].end = x.r[rk].end;
        x.res->ranks[rk].ops = x.r[rk].ops;
    }
    for (int k = 0; k < nnics; k++) /* busy: the busier direction */
        x.res->nic_busy[k] = x.nic_tx[k] > x.nic_rx[k] ? x.nic_tx[k] : x.nic_rx[k];
    zs_result_finish(x.res);
    if ((rc = zs_result_check(x.res, e))) {
        ex_free(&x);
        zs_result_free(x.res);
        return rc;
    }
    zs_result_note(x.res, "transfers across nodes share NIC directions in proportion to their "
                          "demand; no other contention (NVLink, PCIe, fabric); NIC busy = the "
                          "busier direction's bytes / line rate; collectives: the algorithm "
                          "NCCL 2.29.2's model runs, its bytes on the links it uses");
    if (x.intf && intf_close(&x)) {
        ex_free(&x);
        zs_result_free(x.res);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    if (x.fold && !dry) {
        zs_fold_stats fst;
        zs_fold_get_stats(x.fold, &fst);
        x.res->ops_replayed = fst.ops_replayed;
        zs_fold_note(x.fold, x.res);
    }
    if (o && o->exec.timeline && !dry)
        zs_timeline_note(x.res, o->exec.timeline, tl_bytes, tl_subset);
    x.res->wall_seconds = (double)(clock() - t0) / CLOCKS_PER_SEC;
    ex_free(&x);
    *out = x.res;
    return ZS_OK;
}

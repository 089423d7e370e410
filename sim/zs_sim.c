/* The SimGrid executor: see zs_sim.h for what is modelled and how.
 *
 * One actor per rank runs a small event loop:
 *   1. start every op that can start: for each stream, the op at its head
 *      if its dependencies are done (markers and zero-time ops complete on
 *      the spot, so this repeats until nothing changes);
 *   2. wait for any of the rank's outstanding communications (compute ops
 *      are communications on the GPU's private link, so one wait-any covers
 *      both: SimGrid 3.32 has no wait-any mixing execs and comms, and its
 *      sg_comm_wait_any_for drops the references of every comm on timeout);
 *   3. retire what completed: accounting, timeline, advance the stream.
 * Link accounting follows each flow's route from the link table of
 * zs_platform.h: a p2p flow starts when its second side is posted (the
 * mailbox match) and ends when the receive completes; collective flows
 * start when the last member arrives. */
#define _GNU_SOURCE /* memfd_create */
#include "zs_fdio.h"
#include "zs_sim.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "zs_analytic.h"
#include "zs_calib.h"
#include "zs_platform.h"

/* ---- state ----------------------------------------------------------------- */

/* W_SINK: the sending half of a compute op's self-transfer, waited for
 * and dropped (a detached comm would cost O(all detached comms) at its end:
 * SimGrid 3.32 keeps them in one list). */
enum { W_COMPUTE, W_P2P, W_COLL, W_WAKE, W_SINK };

typedef struct chan { /* the p2p channel (src, dst, tag) */
    int32_t src, dst, tag;
    int32_t pend_send, pend_recv; /* posted, not yet matched */
    sg_mailbox_t mb;
    struct chan *next;
} chan;

/* One running collective: its members are done when all its flows are, as
 * in a real ring where every step waits for the previous one everywhere. */
typedef struct coll_inst {
    int flows_left;
    int nwait;
    int32_t *wait_rank; /* members whose own flows are in, waiting for the rest */
    uint8_t *wait_stream;
} coll_inst;

typedef struct flow { /* payload of a collective flow */
    int32_t src, dst;
    double bytes;
    coll_inst *inst;
} flow;

typedef struct went { /* one outstanding communication of a rank */
    sg_comm_t comm;
    void *data;
    chan *ch; /* receives: the channel, for accounting */
    double bytes;
    int64_t op; /* p2p: the op, its segment iteration and issue date */
    int32_t seg, iter;
    double t0;
    uint8_t kind, stream, is_recv;
    struct went *next_free;
} went;

typedef struct stream_st {
    int32_t seg, iter;
    int64_t cur;     /* stored index of the head op; -1 when the stream is done */
    int npend;       /* outstanding communications of the running op */
    int p2p_pending; /* sends and receives issued and not complete */
    int running;     /* a compute op or collective holds the stream */
    double t_start;
} stream_st;

typedef struct rank_st {
    int rank;
    const zs_rank_prog *p;
    int32_t *seg_of, *done, *next_same, *first; /* first[seg * ZS_MAX_STREAMS + s] */
    int32_t *layer_val, *layer_seg;
    int8_t *layer_dir; /* +1 layers count up over a segment's iterations, -1 down */
    chan **chan_of;
    stream_st st[ZS_MAX_STREAMS];
    went **w;
    sg_comm_t *comms;
    int nw, capw;
    went *free_w;
    zs_rank_acct acct;
    double end;
    int finished;
    sg_host_t host;
    sg_mailbox_t self_mb[ZS_MAX_STREAMS];
    sg_mailbox_t wake_mb[ZS_MAX_STREAMS];
} rank_st;

typedef struct group_st {
    int arrived;
    double max_bytes;    /* largest buffer among the members arrived so far */
    sg_mailbox_t *mb_in; /* per member index */
} group_st;

typedef struct sim {
    const zs_schedule *s;
    const zs_cluster *c;
    zs_sim_opts o;
    zs_result *r;
    rank_st *ranks;
    sg_host_t *hosts;
    group_st *groups;
    /* links */
    int nlinks;
    int32_t *l_act;
    double *l_last;
    int32_t *nic_act;
    double *nic_last;
    /* p2p channels */
    chan **chash;
    size_t nchash;
    /* timeline */
    FILE *tl;
    int tl_first;
    /* failure reported by an actor */
    int failed;
    zs_err err;
} sim;

static sim *G; /* the one simulation of this process */
static int g_ran;
static char g_dummy; /* SimGrid refuses NULL payloads */

/* ---- link accounting --------------------------------------------------------- */

static void flow_start(int src, int dst, double now)
{
    int l[ZS_ROUTE_MAX];
    int n = zs__plat_route(G->c, src, dst, l);
    for (int i = 0; i < n; i++) {
        if (G->l_act[l[i]]++ == 0)
            G->l_last[l[i]] = now;
        int x = zs__plat_link_nic(G->c, l[i]);
        if (x >= 0 && G->nic_act[x]++ == 0)
            G->nic_last[x] = now;
    }
}

static void flow_end(int src, int dst, double bytes, double now)
{
    int l[ZS_ROUTE_MAX];
    int n = zs__plat_route(G->c, src, dst, l);
    int seen[ZS_LINK_NCLASSES] = {0};
    for (int i = 0; i < n; i++) {
        zs_link_class lc = zs__plat_link_class(G->c, l[i]);
        if (--G->l_act[l[i]] == 0)
            G->r->link_busy[lc] += now - G->l_last[l[i]];
        if (!seen[lc]) { /* a flow's payload counts once per class it crosses */
            seen[lc] = 1;
            G->r->link_bytes[lc] += bytes;
        }
        int x = zs__plat_link_nic(G->c, l[i]);
        if (x >= 0) {
            G->r->nic_bytes[x] += bytes; /* once on the way out, once on the way in */
            if (--G->nic_act[x] == 0)
                G->r->nic_busy[x] += now - G->nic_last[x];
        }
    }
}

/* ---- p2p channels ------------------------------------------------------------ */

static chan *chan_get(int src, int dst, int tag)
{
    uint64_t h = ((uint64_t)(uint32_t)src * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(uint32_t)dst * 0xC2B2AE3D27D4EB4Full) ^
                 ((uint64_t)(uint32_t)tag * 0x165667B19E3779F9ull);
    size_t b = (size_t)(h % G->nchash);
    for (chan *c = G->chash[b]; c; c = c->next)
        if (c->src == src && c->dst == dst && c->tag == tag)
            return c;
    char name[64];
    snprintf(name, sizeof name, "p%d.%d.%d", src, dst, tag);
    /* Looking a mailbox up is a simcall: another actor may run meanwhile and
     * create this very channel, so look again before inserting (two
     * channel records for one mailbox would split its match counters). */
    sg_mailbox_t mb = sg_mailbox_by_name(name);
    for (chan *c = G->chash[b]; c; c = c->next)
        if (c->src == src && c->dst == dst && c->tag == tag)
            return c;
    chan *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->src = src;
    c->dst = dst;
    c->tag = tag;
    c->mb = mb;
    c->next = G->chash[b];
    G->chash[b] = c;
    return c;
}

/* ---- timeline ------------------------------------------------------------------- */

static int tl_rank_on(int rank)
{
    return G->tl && (G->o.tl_rank0 < 0 || (rank >= G->o.tl_rank0 && rank <= G->o.tl_rank1));
}

static int op_layer(const rank_st *R, int64_t i, int32_t seg, int32_t iter)
{
    int32_t v = R->layer_val[i];
    if (v < 0)
        return -1;
    int32_t ls = R->layer_seg[i];
    return v + R->layer_dir[i] * (ls == seg ? iter : R->p->segs[ls].repeat - 1);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

static void tl_event(const rank_st *R, int64_t i, int32_t seg, int32_t iter, double t0, double t1)
{
    if (!tl_rank_on(R->rank))
        return;
    int layer = op_layer(R, i, seg, iter);
    if (G->o.tl_layer0 >= 0 && (layer < G->o.tl_layer0 || layer > G->o.tl_layer1))
        return;
    const zs_op *op = &R->p->ops[i];
    const zs_cluster *c = G->c;
    FILE *f = G->tl;
    fputs(G->tl_first ? "\n" : ",\n", f);
    G->tl_first = 0;
    fputs("{\"name\":", f);
    json_str(f, G->s->labels[op->label]);
    fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,",
            zs_op_kind_name(op->kind), zs_cluster_node_of(c, R->rank),
            (R->rank % c->gpus_per_node) * G->s->nstreams + op->stream, t0 * 1e6, (t1 - t0) * 1e6);
    fprintf(f, "\"args\":{\"rank\":%d,\"layer\":%d,\"iter\":%d", R->rank, layer, iter);
    switch (op->kind) {
    case ZS_OP_SEND:
    case ZS_OP_RECV:
        fprintf(f, ",\"peer\":%d,\"tag\":%d,\"bytes\":%.0f", op->u.p2p.peer, op->u.p2p.tag,
                op->u.p2p.bytes);
        break;
    case ZS_OP_COLL:
        fprintf(f, ",\"group\":%d,\"kind\":\"%s\",\"bytes\":%.0f", op->u.coll.group,
                zs_coll_kind_name(op->u.coll.ck), op->u.coll.bytes);
        break;
    case ZS_OP_COMPUTE:
        fprintf(f, ",\"compute\":\"%s\"", zs_compute_kind_name(op->u.compute.ck));
        break;
    default:
        break;
    }
    fputs("}}", f);
}

static void tl_open_meta(void)
{
    const zs_cluster *c = G->c;
    FILE *f = G->tl;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
    G->tl_first = 1;
    int last_node = -1;
    for (int r = 0; r < G->s->nranks; r++) {
        if (!tl_rank_on(r))
            continue;
        int node = zs_cluster_node_of(c, r);
        if (node != last_node) {
            fprintf(f,
                    "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":"
                    "\"node %d\"}}",
                    G->tl_first ? "" : ",", node, node);
            G->tl_first = 0;
            last_node = node;
        }
        for (int st = 0; st < G->s->nstreams; st++)
            fprintf(f,
                    ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{"
                    "\"name\":\"gpu %d (rank %d) %s\"}}",
                    node, (r % c->gpus_per_node) * G->s->nstreams + st, r % c->gpus_per_node, r,
                    G->s->stream_names[st]);
    }
}

/* ---- per-rank program walking ------------------------------------------------------ */

static void fail(const rank_st *R, int code, const char *fix, const char *fmt, int64_t op,
                 const char *what)
{
    if (G->failed)
        return;
    G->failed = 1;
    char where[128];
    snprintf(where, sizeof where, "rank %d op #%lld", R->rank, (long long)op);
    zs_err_set(&G->err, code, where, fix, fmt, what);
}

/* Moves stream s to its first op at or after segment `seg` (iteration 0). */
static void stream_seek(rank_st *R, int s, int32_t seg)
{
    stream_st *t = &R->st[s];
    for (; seg < R->p->nsegs; seg++) {
        if (R->first[(int64_t)seg * ZS_MAX_STREAMS + s] >= 0) {
            t->seg = seg;
            t->iter = 0;
            t->cur = R->first[(int64_t)seg * ZS_MAX_STREAMS + s];
            return;
        }
    }
    t->cur = -1;
}

/* Moves the head of stream s past op i. */
static void stream_next(rank_st *R, int s, int64_t i)
{
    stream_st *t = &R->st[s];
    if (R->next_same[i] >= 0) {
        t->cur = R->next_same[i];
        return;
    }
    if (++t->iter < R->p->segs[t->seg].repeat) {
        t->cur = R->first[(int64_t)t->seg * ZS_MAX_STREAMS + s];
        return;
    }
    stream_seek(R, s, t->seg + 1);
}

static void op_done(rank_st *R, int64_t i, double now)
{
    R->done[i]++;
    G->r->ranks[R->rank].ops++;
    R->end = now;
}

/* Same rule as the analytic backend: a dependency inside the op's segment
 * means the same iteration, one in an earlier segment its last iteration;
 * completions are counted per stored op. */
static int deps_done(const rank_st *R, int s, int64_t i)
{
    const stream_st *t = &R->st[s];
    const zs_op *op = &R->p->ops[i];
    const int32_t *d = R->p->deps + op->dep0;
    for (int k = 0; k < op->ndeps; k++) {
        int32_t j = d[k];
        int32_t sj = R->seg_of[j];
        int32_t need = sj == t->seg ? t->iter + 1 : R->p->segs[sj].repeat;
        if (R->done[j] < need)
            return 0;
    }
    return 1;
}

static went *went_new(rank_st *R, int kind, int s)
{
    went *w = R->free_w;
    if (w)
        R->free_w = w->next_free;
    else if (!(w = malloc(sizeof *w)))
        return NULL;
    memset(w, 0, sizeof *w);
    w->kind = (uint8_t)kind;
    w->stream = (uint8_t)s;
    if (R->nw == R->capw) {
        int cap = R->capw ? R->capw * 2 : 8;
        went **nw = realloc(R->w, sizeof *nw * (size_t)cap);
        sg_comm_t *nc = nw ? realloc(R->comms, sizeof *nc * (size_t)cap) : NULL;
        if (nw)
            R->w = nw;
        if (!nc) {
            free(w);
            return NULL;
        }
        R->comms = nc;
        R->capw = cap;
    }
    R->w[R->nw++] = w;
    if (kind != W_P2P && kind != W_SINK)
        R->st[s].npend++;
    return w;
}

static long sim_bytes(double b)
{
    return b <= 0 ? 0 : (long)llround(b);
}

static int member_index(const zs_group *g, int rank)
{
    int lo = 0, hi = g->n - 1;
    while (lo <= hi) {
        int m = (lo + hi) / 2;
        if (g->ranks[m] == rank)
            return m;
        if (g->ranks[m] < rank)
            lo = m + 1;
        else
            hi = m - 1;
    }
    return -1;
}

static sg_mailbox_t coll_mailbox(int gi, int idx)
{
    group_st *gs = &G->groups[gi];
    if (!gs->mb_in[idx]) {
        char name[64];
        snprintf(name, sizeof name, "c%d.%d", gi, idx);
        gs->mb_in[idx] = sg_mailbox_by_name(name);
    }
    return gs->mb_in[idx];
}

static void put_detached(int src, sg_mailbox_t mb, flow *f, long size)
{
    flow_start(f->src, f->dst, simgrid_get_clock());
    sg_actor_set_host(sg_actor_self(), G->hosts[src]);
    sg_comm_t c = sg_mailbox_put_init(mb, f, size);
    sg_comm_detach(c, NULL);
}

/* The last member to arrive starts every flow of the collective. A flow
 * leaves from its source GPU's host (the actor migrates there to post it:
 * SimGrid routes a transfer between the hosts of its two actors), and every
 * member has already posted its receives, so each flow starts right away. */
/* NCCL runs a ring collective as several channels whose rings leave each
 * node through different GPUs, so across nodes they use different NICs:
 * as many channels as the fewest distinct NICs the members of one node
 * reach (1 inside a node). The same figure the analytic cost model uses. */
static int coll_channels(const zs_group *g)
{
    const zs_cluster *c = G->c;
    int k = c->nics_per_node, nodes = 0;
    for (int i = 0; i < g->n;) {
        int node = zs_cluster_node_of(c, g->ranks[i]);
        unsigned long long seen = 0;
        int nics = 0;
        for (; i < g->n && zs_cluster_node_of(c, g->ranks[i]) == node; i++) {
            int nic = zs_cluster_nic_of(c, g->ranks[i]) % 64;
            if (!(seen & (1ULL << nic))) {
                seen |= 1ULL << nic;
                nics++;
            }
        }
        k = nics < k ? nics : k;
        nodes++;
    }
    return nodes > 1 && k > 1 ? k : 1;
}

/* Member index (in g->ranks) at position pos of channel ch's ring. Nodes
 * come in rank order; inside a node channel ch enters through a member on
 * the node's ch-th NIC and leaves through one on the NIC before it, so
 * every channel's network edges use different NICs at both ends. */
static int channel_member(const zs_group *g, int ch, int pos)
{
    const zs_cluster *c = G->c;
    int start = 0;
    for (;;) {
        int node = zs_cluster_node_of(c, g->ranks[start]), end = start;
        while (end < g->n && zs_cluster_node_of(c, g->ranks[end]) == node)
            end++;
        int len = end - start;
        if (pos >= len) {
            pos -= len;
            start = end;
            continue;
        }
        /* The node's distinct NICs, in order (members are sorted by rank,
         * and NICs grow with the rank inside a node). */
        int nics[64], nn = 0;
        for (int i = start; i < end; i++) {
            int nic = zs_cluster_nic_of(c, g->ranks[i]);
            if (nn == 0 || nics[nn - 1] != nic)
                nics[nn < 63 ? nn++ : nn] = nic;
        }
        int first = ch % nn;
        /* pos-th member in the order: NICs first, first+1, ..., wrapping. */
        for (int k = 0; k < nn; k++) {
            int nic = nics[(first + k) % nn];
            for (int i = start; i < end; i++)
                if (zs_cluster_nic_of(c, g->ranks[i]) == nic && pos-- == 0)
                    return i;
        }
        return start; /* not reached */
    }
}

static int coll_trigger(rank_st *R, const zs_op *op)
{
    const zs_group *g = &G->s->groups[op->u.coll.group];
    int n = g->n;
    double bus, steps;
    zs__coll_bus((zs_coll_kind)op->u.coll.ck, n, op->u.coll.bytes, &bus, &steps);
    coll_inst *inst = calloc(1, sizeof *inst);
    if (!inst || !(inst->wait_rank = malloc(sizeof(int32_t) * (size_t)n)) ||
        !(inst->wait_stream = malloc((size_t)n))) {
        if (inst)
            free(inst->wait_rank);
        free(inst);
        return ZS_ENOMEM;
    }
    int nch = op->u.coll.ck == ZS_COLL_ALLTOALL ? 1 : coll_channels(g);
    inst->flows_left = op->u.coll.ck == ZS_COLL_ALLTOALL ? n * (n - 1) : n * nch;
    if (op->u.coll.ck == ZS_COLL_ALLTOALL) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                if (i == j)
                    continue;
                flow *f = malloc(sizeof *f);
                if (!f)
                    return ZS_ENOMEM;
                f->src = g->ranks[i];
                f->dst = g->ranks[j];
                f->bytes = op->u.coll.bytes / n;
                f->inst = inst;
                put_detached(f->src, coll_mailbox(op->u.coll.group, j), f, sim_bytes(f->bytes));
            }
    } else {
        for (int ch = 0; ch < nch; ch++)
            for (int pos = 0; pos < n; pos++) {
                int i = channel_member(g, ch, pos), j = channel_member(g, ch, (pos + 1) % n);
                flow *f = malloc(sizeof *f);
                if (!f)
                    return ZS_ENOMEM;
                f->src = g->ranks[i];
                f->dst = g->ranks[j];
                f->bytes = bus / nch;
                f->inst = inst;
                double lat, bw;
                zs_cluster_path(G->c, f->src, f->dst, &lat, &bw);
                double extra = steps > 1 ? (steps - 1) * lat * bw : 0;
                put_detached(f->src, coll_mailbox(op->u.coll.group, j), f,
                             sim_bytes(f->bytes + extra));
            }
    }
    sg_actor_set_host(sg_actor_self(), R->host);
    return ZS_OK;
}

/* Tries to start the head op of stream s; returns 1 if the stream changed.
 * As in the analytic backend, sends and receives are issued in program
 * order without holding the stream (consecutive ones run together, as an
 * NCCL group), and any other op waits until they have all completed. */
static int try_start(rank_st *R, int s)
{
    stream_st *t = &R->st[s];
    if (t->running || t->cur < 0)
        return 0;
    int64_t i = t->cur;
    const zs_op *op = &R->p->ops[i];
    if (!deps_done(R, s, i))
        return 0;
    double now = simgrid_get_clock();
    zs_rank_result *rr = &G->r->ranks[R->rank];
    if (op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV) {
        int recv = op->kind == ZS_OP_RECV;
        if (op->u.p2p.peer == R->rank || op->u.p2p.peer < 0 || op->u.p2p.peer >= G->s->nranks) {
            fail(R, ZS_EINVALID, "a transfer needs a peer that is another rank of the schedule",
                 "%s has an invalid peer", i, zs_op_kind_name(op->kind));
            return 0;
        }
        chan *ch = R->chan_of[i];
        if (!ch) {
            ch = recv ? chan_get(op->u.p2p.peer, R->rank, op->u.p2p.tag)
                      : chan_get(R->rank, op->u.p2p.peer, op->u.p2p.tag);
            R->chan_of[i] = ch;
        }
        went *w = ch ? went_new(R, W_P2P, s) : NULL;
        if (!w) {
            fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
            return 0;
        }
        w->ch = ch;
        w->is_recv = (uint8_t)recv;
        w->bytes = op->u.p2p.bytes;
        w->op = i;
        w->seg = t->seg;
        w->iter = t->iter;
        w->t0 = now;
        int32_t *mine = recv ? &ch->pend_recv : &ch->pend_send;
        int32_t *other = recv ? &ch->pend_send : &ch->pend_recv;
        if (*other > 0) { /* this post matches: the transfer starts now */
            (*other)--;
            flow_start(ch->src, ch->dst, now);
            /* Communication runs from here on both sides; the side that
             * posted first was waiting on its peer (idle), as in the
             * analytic backend. */
            rank_st *P = &G->ranks[recv ? ch->src : ch->dst];
            zs_rank_acct_change(&R->acct, rr, now, 0, 1);
            zs_rank_acct_change(&P->acct, &G->r->ranks[P->rank], now, 0, 1);
        } else {
            (*mine)++;
        }
        w->comm = recv ? sg_mailbox_get_async(ch->mb, &w->data)
                       : sg_mailbox_put_async(ch->mb, &g_dummy, sim_bytes(op->u.p2p.bytes));
        t->p2p_pending++;
        stream_next(R, s, i);
        return 1;
    }
    if (t->p2p_pending > 0)
        return 0;
    switch (op->kind) {
    case ZS_OP_MARKER:
        op_done(R, i, now);
        stream_next(R, s, i);
        return 1;
    case ZS_OP_COMPUTE: {
        if (op->duration <= 0) {
            tl_event(R, i, t->seg, t->iter, now, now);
            op_done(R, i, now);
            stream_next(R, s, i);
            return 1;
        }
        went *w = went_new(R, W_COMPUTE, s);
        went *sink = w ? went_new(R, W_SINK, s) : NULL;
        if (!sink) {
            fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
            return 0;
        }
        sink->comm =
            sg_mailbox_put_async(R->self_mb[s], &g_dummy, sim_bytes(op->duration * ZS_COMPUTE_BPS));
        w->comm = sg_mailbox_get_async(R->self_mb[s], &w->data);
        zs_rank_acct_change(&R->acct, rr, now, 1, 0);
        t->running = 1;
        t->t_start = now;
        return 1;
    }
    case ZS_OP_COLL: {
        int gi = op->u.coll.group;
        const zs_group *g = gi >= 0 && gi < G->s->ngroups ? &G->s->groups[gi] : NULL;
        int idx = g ? member_index(g, R->rank) : -1;
        if (idx < 0) {
            fail(R, ZS_EINVALID, "a rank may only join collectives of groups it belongs to",
                 "%s on a group that does not hold this rank", i, "collective");
            return 0;
        }
        if (g->n == 1) {
            tl_event(R, i, t->seg, t->iter, now, now);
            op_done(R, i, now);
            stream_next(R, s, i);
            return 1;
        }
        int nin = op->u.coll.ck == ZS_COLL_ALLTOALL ? g->n - 1 : coll_channels(g);
        for (int k = 0; k < nin; k++) {
            went *w = went_new(R, W_COLL, s);
            if (!w) {
                fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
                return 0;
            }
            w->is_recv = 1;
            w->comm = sg_mailbox_get_async(coll_mailbox(gi, idx), &w->data);
        }
        t->running = 1;
        t->t_start = now;
        /* All-to-all(v): members' buffers differ; the largest sets the pace. */
        if (G->groups[gi].arrived == 0 || op->u.coll.bytes > G->groups[gi].max_bytes)
            G->groups[gi].max_bytes = op->u.coll.bytes;
        if (++G->groups[gi].arrived == g->n) {
            /* Everyone is here: the collective's communication starts for
             * all members now (until then they waited on peers: idle). */
            for (int k = 0; k < g->n; k++) {
                rank_st *M = &G->ranks[g->ranks[k]];
                zs_rank_acct_change(&M->acct, &G->r->ranks[M->rank], now, 0, 1);
            }
            G->groups[gi].arrived = 0;
            zs_op big = *op;
            big.u.coll.bytes = G->groups[gi].max_bytes;
            if (coll_trigger(R, &big)) {
                fail(R, ZS_ENOMEM, NULL, "%s", i, "out of memory");
                return 0;
            }
        }
        return 1;
    }
    default:
        fail(R, ZS_EINVALID, "rebuild the schedule", "%s", i, "unknown op kind");
        return 0;
    }
}

/* All flows into this member of a collective are in. If others are still
 * moving, wait for a wake-up (returns 1); otherwise the collective is over:
 * wake the waiting members and return 0. A wake-up is a zero-byte message
 * over the member's own zero-latency compute link (sent from its host), so
 * it arrives at the same date. */
static int coll_flows_in(rank_st *R, int s, coll_inst *inst)
{
    if (inst->flows_left > 0) {
        went *w = went_new(R, W_WAKE, s);
        if (!w) {
            fail(R, ZS_ENOMEM, NULL, "%s", R->st[s].cur, "out of memory");
            return 1;
        }
        w->comm = sg_mailbox_get_async(R->wake_mb[s], &w->data);
        inst->wait_rank[inst->nwait] = R->rank;
        inst->wait_stream[inst->nwait++] = (uint8_t)s;
        return 1;
    }
    for (int k = 0; k < inst->nwait; k++) {
        int r = inst->wait_rank[k];
        sg_actor_set_host(sg_actor_self(), G->hosts[r]);
        sg_comm_t c = sg_mailbox_put_init(G->ranks[r].wake_mb[inst->wait_stream[k]], &g_dummy, 0);
        sg_comm_detach(c, NULL);
    }
    if (inst->nwait)
        sg_actor_set_host(sg_actor_self(), R->host);
    free(inst->wait_rank);
    free(inst->wait_stream);
    free(inst);
    return 0;
}

/* A communication of stream s completed. */
static void retire(rank_st *R, went *w)
{
    int s = w->stream;
    stream_st *t = &R->st[s];
    double now = simgrid_get_clock();
    zs_rank_result *rr = &G->r->ranks[R->rank];
    w->next_free = R->free_w;
    R->free_w = w;
    if (w->kind == W_SINK)
        return;
    if (w->kind == W_P2P) {
        if (w->is_recv)
            flow_end(w->ch->src, w->ch->dst, w->bytes, now);
        t->p2p_pending--;
        zs_rank_acct_change(&R->acct, rr, now, 0, -1);
        tl_event(R, w->op, w->seg, w->iter, w->t0, now);
        op_done(R, w->op, now);
        return;
    }
    coll_inst *inst = NULL;
    if (w->kind == W_COLL) {
        flow *f = w->data;
        flow_end(f->src, f->dst, f->bytes, now);
        inst = f->inst;
        inst->flows_left--;
        free(f);
    }
    if (--t->npend > 0)
        return;
    if (inst && coll_flows_in(R, s, inst))
        return; /* the rest of the collective is still moving */
    t->running = 0;
    zs_rank_acct_change(&R->acct, rr, now, w->kind == W_COMPUTE ? -1 : 0,
                        w->kind == W_COMPUTE ? 0 : -1);
    tl_event(R, t->cur, t->seg, t->iter, t->t_start, now);
    op_done(R, t->cur, now);
    stream_next(R, s, t->cur);
}

static void actor_main(int argc, char **argv)
{
    rank_st *R = sg_actor_self_get_data();
    for (;;) {
        int changed = 1;
        while (changed && !G->failed) {
            changed = 0;
            for (int s = 0; s < G->s->nstreams; s++)
                while (try_start(R, s))
                    changed = 1;
        }
        if (G->failed)
            break;
        int done = R->nw == 0;
        for (int s = 0; s < G->s->nstreams; s++)
            if (R->st[s].cur >= 0 || R->st[s].p2p_pending > 0)
                done = 0;
        if (done) {
            R->finished = 1;
            break;
        }
        if (R->nw == 0)
            break; /* stuck on a dependency that can never complete: reported after the run */
        for (int k = 0; k < R->nw; k++)
            R->comms[k] = R->w[k]->comm;
        ssize_t k = sg_comm_wait_any(R->comms, (size_t)R->nw);
        if (k < 0 || k >= R->nw)
            break;
        went *w = R->w[k];
        /* Keep the order of the others: completions at the same date are
         * then retired in the same order on every run. */
        memmove(R->w + k, R->w + k + 1, sizeof *R->w * (size_t)(R->nw - k - 1));
        R->nw--;
        retire(R, w);
    }
}

/* ---- setup ---------------------------------------------------------------- */

static int rank_prepare(rank_st *R, int rank)
{
    const zs_rank_prog *p = &G->s->ranks[rank];
    R->rank = rank;
    R->p = p;
    int64_t n = p->nops > 0 ? p->nops : 1;
    R->seg_of = malloc(sizeof(int32_t) * (size_t)n);
    R->done = calloc((size_t)n, sizeof(int32_t));
    R->next_same = malloc(sizeof(int32_t) * (size_t)n);
    R->layer_val = malloc(sizeof(int32_t) * (size_t)n);
    R->layer_seg = malloc(sizeof(int32_t) * (size_t)n);
    R->layer_dir = malloc((size_t)n);
    R->chan_of = calloc((size_t)n, sizeof(chan *));
    R->first = malloc(sizeof(int32_t) * (size_t)(p->nsegs > 0 ? p->nsegs : 1) * ZS_MAX_STREAMS);
    if (!R->seg_of || !R->done || !R->next_same || !R->layer_val || !R->layer_seg ||
        !R->layer_dir || !R->chan_of || !R->first)
        return ZS_ENOMEM;
    int32_t lv = -1, ls = -1, ld = 1;
    for (int32_t sg = 0; sg < p->nsegs; sg++) {
        const zs_segment *seg = &p->segs[sg];
        int64_t last[ZS_MAX_STREAMS];
        for (int s = 0; s < ZS_MAX_STREAMS; s++) {
            R->first[(int64_t)sg * ZS_MAX_STREAMS + s] = -1;
            last[s] = -1;
        }
        if (seg->repeat < 1)
            return zs_err_set(&G->err, ZS_EINVALID, NULL, "rebuild the schedule",
                              "rank %d segment %d repeats %d times", rank, sg, seg->repeat);
        for (int64_t i = seg->op0; i < seg->op0 + seg->nops; i++) {
            const zs_op *op = &p->ops[i];
            if (op->stream >= G->s->nstreams)
                return zs_err_set(&G->err, ZS_EINVALID, NULL, "rebuild the schedule",
                                  "rank %d op #%lld is on stream %d of %d", rank, (long long)i,
                                  op->stream, G->s->nstreams);
            const int32_t *d = p->deps + op->dep0;
            for (int k = 0; k < op->ndeps; k++)
                if (d[k] < 0 || d[k] >= i)
                    return zs_err_set(&G->err, ZS_EINVALID, NULL,
                                      "a dependency must name an earlier op of the same rank",
                                      "rank %d op #%lld depends on op #%d", rank, (long long)i,
                                      d[k]);
            R->seg_of[i] = sg;
            R->next_same[i] = -1;
            if (last[op->stream] >= 0)
                R->next_same[last[op->stream]] = (int32_t)i;
            else
                R->first[(int64_t)sg * ZS_MAX_STREAMS + op->stream] = (int32_t)i;
            last[op->stream] = i;
            if (op->kind == ZS_OP_MARKER &&
                (op->u.marker.mk == ZS_MARK_LAYER || op->u.marker.mk == ZS_MARK_LAYER_DOWN)) {
                lv = op->u.marker.value;
                ls = sg;
                ld = op->u.marker.mk == ZS_MARK_LAYER ? 1 : -1;
            }
            R->layer_val[i] = lv;
            R->layer_seg[i] = ls;
            R->layer_dir[i] = (int8_t)ld;
        }
    }
    R->host = G->hosts[rank];
    for (int s = 0; s < G->s->nstreams; s++) {
        char name[48];
        snprintf(name, sizeof name, "x%d.%d", rank, s);
        R->self_mb[s] = sg_mailbox_by_name(name);
        snprintf(name, sizeof name, "w%d.%d", rank, s);
        R->wake_mb[s] = sg_mailbox_by_name(name);
        stream_seek(R, s, 0);
    }
    return ZS_OK;
}

static void rank_release(rank_st *R)
{
    free(R->seg_of);
    free(R->done);
    free(R->next_same);
    free(R->layer_val);
    free(R->layer_seg);
    free(R->layer_dir);
    free(R->chan_of);
    free(R->first);
    for (int k = 0; k < R->nw; k++)
        free(R->w[k]);
    while (R->free_w) {
        went *w = R->free_w;
        R->free_w = w->next_free;
        free(w);
    }
    free(R->w);
    free(R->comms);
}

static void sim_release(sim *x)
{
    if (!x)
        return;
    if (x->ranks)
        for (int r = 0; r < x->s->nranks; r++)
            rank_release(&x->ranks[r]);
    free(x->ranks);
    free(x->hosts);
    if (x->groups)
        for (int g = 0; g < x->s->ngroups; g++)
            free(x->groups[g].mb_in);
    free(x->groups);
    free(x->l_act);
    free(x->l_last);
    free(x->nic_act);
    free(x->nic_last);
    if (x->chash)
        for (size_t b = 0; b < x->nchash; b++)
            while (x->chash[b]) {
                chan *c = x->chash[b];
                x->chash[b] = c->next;
                free(c);
            }
    free(x->chash);
    if (x->tl)
        fclose(x->tl);
    zs_result_free(x->r);
}

void zs_sim_opts_init(zs_sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tl_rank0 = o->tl_rank1 = -1;
    o->tl_layer0 = o->tl_layer1 = -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int load_platform(const zs_cluster *c, zs_err *e)
{
    int fd = memfd_create("zepsim-platform", 0);
    if (fd < 0)
        return zs_err_set(e, ZS_ERUNTIME, "memfd_create", NULL,
                          "cannot create the in-memory platform file: %s", strerror(errno));
    FILE *f = fdopen(dup(fd), "w");
    if (!f) {
        close(fd);
        return zs_err_set(e, ZS_ERUNTIME, "fdopen", NULL, "cannot write the platform: %s",
                          strerror(errno));
    }
    int rc = zs_platform_write(c, f, e);
    if (fclose(f) != 0 && rc == ZS_OK)
        rc = zs_err_set(e, ZS_ERUNTIME, NULL, NULL, "cannot write the in-memory platform");
    if (rc == ZS_OK) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        simgrid_load_platform(path);
    }
    close(fd);
    return rc;
}

static void engine_init(void)
{
    /* Log threshold first so the configuration changes print nothing. */
    static char a0[] = "zepsim", a1[] = "--log=root.thresh:critical",
                a2[] = "--cfg=network/model:CM02", a3[] = "--cfg=network/crosstraffic:0",
                a4[] = "--cfg=network/TCP-gamma:0", a5[] = "--cfg=network/optim:Lazy",
#if defined(__SANITIZE_ADDRESS__)
                /* ASan cannot follow SimGrid's raw stack switches. */
        a6[] = "--cfg=contexts/factory:thread";
#else
                a6[] = "--cfg=contexts/stack-size:128";
#endif
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, NULL};
    int argc = 7;
    simgrid_init(&argc, argv);
}

static int sim_setup(sim *x, zs_err *e)
{
    const zs_schedule *s = x->s;
    const zs_cluster *c = x->c;
    x->r = zs_result_new(s->nranks, c->nodes * c->nics_per_node);
    x->ranks = calloc((size_t)s->nranks, sizeof *x->ranks);
    x->hosts = calloc((size_t)s->nranks, sizeof *x->hosts);
    x->groups = calloc((size_t)(s->ngroups > 0 ? s->ngroups : 1), sizeof *x->groups);
    x->nlinks = zs__plat_nlinks(c);
    x->l_act = calloc((size_t)x->nlinks, sizeof *x->l_act);
    x->l_last = calloc((size_t)x->nlinks, sizeof *x->l_last);
    x->nic_act = calloc((size_t)(c->nodes * c->nics_per_node), sizeof *x->nic_act);
    x->nic_last = calloc((size_t)(c->nodes * c->nics_per_node), sizeof *x->nic_last);
    x->nchash = (size_t)s->nranks * 8 + 64;
    x->chash = calloc(x->nchash, sizeof *x->chash);
    if (!x->r || !x->ranks || !x->hosts || !x->groups || !x->l_act || !x->l_last || !x->nic_act ||
        !x->nic_last || !x->chash)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory setting up the simulation");
    for (int g = 0; g < s->ngroups; g++) {
        x->groups[g].mb_in =
            calloc((size_t)(s->groups[g].n > 0 ? s->groups[g].n : 1), sizeof(sg_mailbox_t));
        if (!x->groups[g].mb_in)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory setting up the simulation");
    }
    snprintf(x->r->backend, sizeof x->r->backend, "simgrid");
    for (int r = 0; r < s->nranks; r++) {
        char name[32];
        snprintf(name, sizeof name, "g%d", r);
        x->hosts[r] = sg_host_by_name(name);
        if (!x->hosts[r])
            return zs_err_set(e, ZS_ERUNTIME, name, NULL, "host missing from the platform");
    }
    for (int r = 0; r < s->nranks; r++) {
        int rc = rank_prepare(&x->ranks[r], r);
        if (rc) {
            if (x->err.code) {
                *e = x->err;
                return rc;
            }
            return zs_err_set(e, rc, NULL, NULL, "out of memory setting up rank %d", r);
        }
    }
    if (x->o.timeline) {
        x->tl = fopen(x->o.timeline, "w");
        if (!x->tl)
            return zs_err_set(e, ZS_EIO, x->o.timeline, "check that the folder is writable",
                              "cannot create the timeline file: %s", strerror(errno));
        tl_open_meta();
    }
    return ZS_OK;
}

static void describe_stuck(sim *x, zs_err *e)
{
    for (int r = 0; r < x->s->nranks; r++) {
        rank_st *R = &x->ranks[r];
        if (R->finished)
            continue;
        for (int s = 0; s < x->s->nstreams; s++) {
            if (R->st[s].cur < 0)
                continue;
            char where[128];
            snprintf(where, sizeof where, "rank %d op #%lld (stream %s, iteration %d)", r,
                     (long long)R->st[s].cur, x->s->stream_names[s], R->st[s].iter);
            zs_err_set(e, ZS_EINVALID, where,
                       "check that every send has its receive and every member joins each "
                       "collective (zepsim validate)",
                       "the schedule cannot finish: %s '%s' never completes",
                       zs_op_kind_name(R->p->ops[R->st[s].cur].kind),
                       x->s->labels[R->p->ops[R->st[s].cur].label]);
            return;
        }
    }
}

int zs_sim_run(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o, zs_result **out,
               zs_err *e)
{
    double t0 = now_s();
    if (g_ran)
        return zs_err_set(e, ZS_EUNSUPPORTED, "zs_sim_run",
                          "use zs_sim_run_forked to simulate several schedules in one process",
                          "SimGrid allows one platform per process and this process already "
                          "ran a simulation");
    if (s->nranks > zs_cluster_gpus(c))
        return zs_err_set(e, ZS_EINPUT, c->name, "raise --nodes or plan for fewer GPUs",
                          "the schedule has %d ranks but cluster '%s' has %d GPUs", s->nranks,
                          c->name, zs_cluster_gpus(c));
    if (s->nstreams < 1 || s->nstreams > ZS_MAX_STREAMS)
        return zs_err_set(e, ZS_EINVALID, NULL, "rebuild the schedule",
                          "the schedule has %d streams", s->nstreams);
    int rc = zs_platform_check(c, e);
    if (rc)
        return rc;
    /* Prove it can finish first: a deadlocked schedule gets a clear error
     * instead of SimGrid's deadlock report. */
    zs_analytic_opts dry = {1};
    zs_result *tmp = NULL;
    if ((rc = zs_analytic_run(s, NULL, &dry, &tmp, e)))
        return rc;
    zs_result_free(tmp);
    if (o && o->platform_out && (rc = zs_platform_write_file(c, o->platform_out, e)))
        return rc;

    g_ran = 1;
    sim x;
    memset(&x, 0, sizeof x);
    x.s = s;
    x.c = c;
    if (o)
        x.o = *o;
    else
        zs_sim_opts_init(&x.o);
    G = &x;
    engine_init();
    if ((rc = load_platform(c, e)) || (rc = sim_setup(&x, e))) {
        sim_release(&x);
        G = NULL;
        return rc;
    }
    for (int r = 0; r < s->nranks; r++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", r);
        sg_actor_t a = sg_actor_init(name, x.hosts[r]);
        sg_actor_set_data(a, &x.ranks[r]);
        sg_actor_start(a, actor_main, 0, NULL);
    }
    simgrid_run();

    double end = simgrid_get_clock();
    int all = 1;
    for (int r = 0; r < s->nranks; r++)
        all &= x.ranks[r].finished;
    if (x.failed || !all) {
        if (x.failed)
            *e = x.err;
        else
            describe_stuck(&x, e);
        rc = e->code;
        sim_release(&x);
        G = NULL;
        return rc;
    }
    zs_result *res = x.r;
    for (int r = 0; r < s->nranks; r++) {
        zs_rank_acct_close(&x.ranks[r].acct, &res->ranks[r], end);
        res->ranks[r].end = x.ranks[r].end;
    }
    zs_result_finish(res);
    if (x.tl) {
        fputs("\n]}\n", x.tl);
        int bad = ferror(x.tl);
        bad |= fclose(x.tl) != 0;
        x.tl = NULL;
        if (bad) {
            rc = zs_err_set(e, ZS_EIO, o->timeline, "check free disk space",
                            "cannot write the timeline");
            sim_release(&x);
            G = NULL;
            return rc;
        }
    }
    zs_result_note(res,
                   "simgrid %s: CM02 max-min flows on a generated platform (NVLink, PCIe, NIC "
                   "affinity, rail leaves%s); compute ops take their predicted duration",
                   "3.32", c->nodes > c->nodes_per_leaf ? ", spine" : "");
    zs_result_note(res, "collectives: aggregated flows once all members arrive (ring kinds in "
                        "NCCL-like channels over the members' NICs, one flow per channel edge "
                        "with all steps' bytes; all-to-all one per pair), not per message");
    zs_result_note(res, "link bytes count each flow once per class it crosses; NIC bytes count "
                        "in + out");
    x.r = NULL;
    sim_release(&x);
    G = NULL;
    res->wall_seconds = now_s() - t0;
    *out = res;
    return ZS_OK;
}

/* ---- running in a child process ------------------------------------------------ */

int zs_sim_run_forked(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o,
                      zs_result **out, zs_err *e)
{
    return zs__sim_run_forked_rss(s, c, o, out, NULL, NULL, e);
}

int zs__sim_run_forked_rss(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o,
                           zs_result **out, double *child_rss, double *child_cpu, zs_err *e)
{
    int fds[2];
    if (pipe(fds) != 0)
        return zs_err_set(e, ZS_ERUNTIME, "pipe", NULL, "cannot create a pipe: %s",
                          strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return zs_err_set(e, ZS_ERUNTIME, "fork", NULL, "cannot start the simulation process: %s",
                          strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        zs_err ce;
        zs_err_clear(&ce);
        zs_result *r = NULL;
        int rc = zs_sim_run(s, c, o, &r, &ce);
        int bad = zs_write_all(fds[1], &rc, sizeof rc) || zs_write_all(fds[1], &ce, sizeof ce);
        if (rc == ZS_OK)
            bad = bad || zs_write_all(fds[1], r, sizeof *r) ||
                  zs_write_all(fds[1], r->ranks, sizeof *r->ranks * (size_t)r->nranks) ||
                  zs_write_all(fds[1], r->nic_bytes, sizeof(double) * (size_t)r->nnics) ||
                  zs_write_all(fds[1], r->nic_busy, sizeof(double) * (size_t)r->nnics);
        close(fds[1]);
        /* The child holds the parent's stdio buffers: leave without flushing them. */
        _exit(bad ? 3 : 0);
    }
    close(fds[1]);
    int rc;
    zs_err ce;
    zs_result hdr;
    zs_result *r = NULL;
    int bad = zs_read_all(fds[0], &rc, sizeof rc) != 1 || zs_read_all(fds[0], &ce, sizeof ce) != 1;
    if (!bad && rc == ZS_OK) {
        bad = zs_read_all(fds[0], &hdr, sizeof hdr) != 1;
        if (!bad && !(r = zs_result_new(hdr.nranks, hdr.nnics)))
            bad = 1;
        if (!bad) {
            zs_rank_result *ranks = r->ranks;
            double *nb = r->nic_bytes, *nu = r->nic_busy;
            *r = hdr;
            r->ranks = ranks;
            r->nic_bytes = nb;
            r->nic_busy = nu;
            bad = zs_read_all(fds[0], r->ranks, sizeof *r->ranks * (size_t)r->nranks) != 1 ||
                  zs_read_all(fds[0], r->nic_bytes, sizeof(double) * (size_t)r->nnics) != 1 ||
                  zs_read_all(fds[0], r->nic_busy, sizeof(double) * (size_t)r->nnics) != 1;
        }
    }
    close(fds[0]);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    if (child_rss)
        *child_rss = (double)ru.ru_maxrss * 1024.0;
    if (child_cpu)
        *child_cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
                     ru.ru_stime.tv_usec * 1e-6;
    if (bad) {
        zs_result_free(r);
        if (WIFSIGNALED(status))
            return zs_err_set(e, ZS_ERUNTIME, "simulation process", NULL,
                              "the simulation crashed (signal %d)", WTERMSIG(status));
        return zs_err_set(e, ZS_ERUNTIME, "simulation process", NULL,
                          "the simulation process ended without a result (status %d)",
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    if (rc != ZS_OK) {
        if (e)
            *e = ce;
        return rc;
    }
    *out = r;
    return ZS_OK;
}

double zs_sim_peak_rss(int children)
{
    struct rusage ru;
    if (getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_maxrss * 1024.0;
}

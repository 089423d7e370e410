/* Folding repeated segments: see zs_fold.h.
 *
 * Before the run, in zs_fold_new:
 *   1. every (rank, segment) is an instance; a repeated one (repeat >= 6)
 *      is a candidate;
 *   2. per message channel (src, dst, tag), the sender's and receiver's
 *      messages are cut into runs, one per instance (repeat x messages per
 *      iteration); runs that cover the same message numbers with the same
 *      shape join one component (union-find), any other overlap marks both
 *      instances as misshapen;
 *   3. the same per collective group, member by member against its first
 *      member;
 *   4. a component folds only if none of its instances is misshapen; the
 *      iterations a timeline must show are kept per component.
 * During the run, zs_fold_cross keeps each stream's last HIST iteration
 * boundaries and decides, per component, where to fold. */
#include "zs_fold.h"
#include "zs_hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_REPEAT_FLOOR 3 /* iterations a fold needs to see: two periods */
#define HIST             8 /* boundaries kept per stream: up to HIST - 1 periods compared */

typedef struct fstream {
    double c[HIST]; /* last boundary times, c[HIST - 1] the latest */
    int32_t ncross; /* boundaries seen */
    int8_t ready;   /* it repeats (steady_period) */
    double period;  /* the period it would replay now */
    double delta;   /* the period replayed (set when the component decides), < 0: none */
    int32_t dec;    /* the iteration it had entered when the component decided ... */
    double bdec;    /* ... and when it entered it */
} fstream;

#define NCNT 16 /* iterations a component's streams may be apart and still fold */

typedef struct fcomp {
    int32_t repeat;
    int32_t fold_at;  /* iteration the component folds at, -1: not yet */
    int32_t maxb;     /* largest boundary any of its streams has reached */
    int32_t mr0, mr1; /* iterations a timeline shows (mr0 > mr1: none) */
    int64_t nstreams, nready, ninst;
    /* How many of its streams entered each iteration after minb, the last
     * one all of them entered (slot i % NCNT); wide: some stream got NCNT
     * iterations ahead of the last, and the component does not fold. */
    int32_t minb, wide;
    int64_t cnt[NCNT];
} fcomp;

struct zs_fold {
    const zs_schedule *s;
    zs_fold_cfg cfg;
    int64_t *inst0; /* per rank: its first instance */
    int64_t ninst;
    int32_t *comp;  /* per instance: component, -1: does not fold */
    int64_t *sbase; /* per instance: its first stream state, -1: none */
    int8_t *smap;   /* per instance x stream: slot among its streams, -1: no ops */
    int8_t *ref;    /* per instance: its reference stream (the first with ops) */
    int32_t *nops;  /* per stream state: ops per iteration */
    fstream *fs;
    int64_t nfs;
    fcomp *comps;
    int32_t ncomps;
    int64_t *cstart; /* per component: its streams are cstream[cstart[c] .. cstart[c + 1]) */
    int64_t *cstream;
    zs_fold_stats st;
};

void zs_fold_cfg_init(zs_fold_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->on = 1;
    c->tol = 1e-4;
    c->min_iters = MIN_REPEAT_FLOOR + 2;
    c->tol_mean = 0; /* steady repeats: zs_fold_cfg_steady */
    c->spread = 0.1;
    c->rank_on = NULL;
    c->layer0 = c->layer1 = -1;
    /* The last iteration runs again: a stream gated by others (a collective
     * whose slowest member changes) then ends on real arrivals. */
    c->tail_iters = 1;
}

void zs_fold_cfg_steady(zs_fold_cfg *c)
{
    c->tol_mean = 5e-2;
    c->spread = 0.15;
}

/* ---- union-find over instances --------------------------------------------- */

static int64_t uf_find(int64_t *p, int64_t x)
{
    while (p[x] != x) {
        p[x] = p[p[x]];
        x = p[x];
    }
    return x;
}

static void uf_union(int64_t *p, int64_t a, int64_t b)
{
    a = uf_find(p, a);
    b = uf_find(p, b);
    if (a != b) /* the smaller index is the root: deterministic */
        p[a > b ? a : b] = a < b ? a : b;
}

/* ---- the analysis's scratch state -------------------------------------------- */

typedef struct run { /* messages (or collectives) of one instance on one channel (group) */
    int64_t inst;
    int32_t m;    /* per iteration */
    int32_t next; /* next run of the same list, -1: last */
} run;

typedef struct chan {
    int32_t src, dst, tag, used;
    int32_t head[2], tail[2]; /* [0] sends, [1] receives */
} chan;

typedef struct scratch {
    const zs_schedule *s;
    const int64_t *inst0;
    int64_t *parent;
    uint8_t *bad;
    run *runs;
    int64_t nruns, caprun;
    chan *ch;
    int64_t nch, capch;
    /* collectives, per group */
    int32_t *ghead, *gtail; /* the reference (first member's) list */
    int32_t *gcur;          /* the member being read: its position in the reference list */
    int64_t *gmine;         /* its current run: instance (-1 none) */
    int32_t *gm;            /* and count */
    int32_t *gstamp;        /* rank that last touched the group */
} scratch;

static int32_t repeat_of(const scratch *x, int64_t inst, int rank)
{
    return x->s->ranks[rank].segs[inst - x->inst0[rank]].repeat;
}

static int run_add(scratch *x, int64_t inst, int32_t *head, int32_t *tail)
{
    if (*tail >= 0 && x->runs[*tail].inst == inst) {
        x->runs[*tail].m++;
        return ZS_OK;
    }
    if (x->nruns == x->caprun) {
        int64_t nc = x->caprun ? x->caprun * 2 : 4096;
        run *r = realloc(x->runs, sizeof *r * (size_t)nc);
        if (!r)
            return ZS_ENOMEM;
        x->runs = r;
        x->caprun = nc;
    }
    if (x->nruns >= INT32_MAX)
        return ZS_ENOMEM;
    int32_t k = (int32_t)x->nruns++;
    x->runs[k] = (run){inst, 1, -1};
    if (*tail >= 0)
        x->runs[*tail].next = k;
    else
        *head = k;
    *tail = k;
    return ZS_OK;
}

static int ch_grow(scratch *x)
{
    int64_t nc = x->capch ? x->capch * 2 : 4096;
    chan *n = calloc((size_t)nc, sizeof *n);
    if (!n)
        return ZS_ENOMEM;
    for (int64_t i = 0; i < x->capch; i++) {
        if (!x->ch[i].used)
            continue;
        uint64_t m = (uint64_t)nc - 1;
        for (uint64_t j = zs_hash3(x->ch[i].src, x->ch[i].dst, x->ch[i].tag) & m;; j = (j + 1) & m)
            if (!n[j].used) {
                n[j] = x->ch[i];
                break;
            }
    }
    free(x->ch);
    x->ch = n;
    x->capch = nc;
    return ZS_OK;
}

static chan *ch_get(scratch *x, int32_t src, int32_t dst, int32_t tag)
{
    if (x->nch * 2 >= x->capch && ch_grow(x))
        return NULL;
    uint64_t m = (uint64_t)x->capch - 1;
    for (uint64_t i = zs_hash3(src, dst, tag) & m;; i = (i + 1) & m) {
        chan *c = &x->ch[i];
        if (!c->used) {
            *c = (chan){src, dst, tag, 1, {-1, -1}, {-1, -1}};
            x->nch++;
            return c;
        }
        if (c->src == src && c->dst == dst && c->tag == tag)
            return c;
    }
}

/* Steps 2: the runs of every channel. */
static int collect_p2p(scratch *x)
{
    const zs_schedule *s = x->s;
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        for (int32_t g = 0; g < p->nsegs; g++)
            for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
                const zs_op *op = &p->ops[i];
                if (op->kind != ZS_OP_SEND && op->kind != ZS_OP_RECV)
                    continue;
                int recv = op->kind == ZS_OP_RECV;
                chan *c = recv ? ch_get(x, op->u.p2p.peer, r, op->u.p2p.tag)
                               : ch_get(x, r, op->u.p2p.peer, op->u.p2p.tag);
                if (!c || run_add(x, x->inst0[r] + g, &c->head[recv], &c->tail[recv]))
                    return ZS_ENOMEM;
            }
    }
    return ZS_OK;
}

/* Pairs the sender's runs of a channel with the receiver's: equal message
 * ranges of equal shape join; anything else is misshapen. */
static void pair_channel(scratch *x, const chan *c)
{
    int32_t a = c->head[0], b = c->head[1];
    int64_t oa = 0, ob = 0; /* message numbers where runs a and b start */
    while (a >= 0 && b >= 0) {
        const run *ra = &x->runs[a], *rb = &x->runs[b];
        int32_t Ra = repeat_of(x, ra->inst, c->src), Rb = repeat_of(x, rb->inst, c->dst);
        int64_t la = (int64_t)Ra * ra->m, lb = (int64_t)Rb * rb->m;
        if (oa == ob && la == lb && Ra == Rb && ra->m == rb->m) {
            uf_union(x->parent, ra->inst, rb->inst);
        } else {
            x->bad[ra->inst] = x->bad[rb->inst] = 1;
        }
        int64_t ea = oa + la, eb = ob + lb; /* the run that ends first moves on */
        if (ea <= eb) {
            oa = ea;
            a = ra->next;
        }
        if (eb <= ea) {
            ob = eb;
            b = rb->next;
        }
    }
    for (; a >= 0; a = x->runs[a].next) /* messages nobody receives: not ours to judge */
        x->bad[x->runs[a].inst] = 1;
    for (; b >= 0; b = x->runs[b].next)
        x->bad[x->runs[b].inst] = 1;
}

/* A member's run of collectives on group gi ended: compare it with the
 * first member's run at the same position. */
static void coll_close(scratch *x, int32_t gi, int rank)
{
    int64_t inst = x->gmine[gi];
    if (inst < 0)
        return;
    int32_t k = x->gcur[gi];
    if (k < 0) {
        x->bad[inst] = 1;
    } else {
        const run *rr = &x->runs[k];
        int owner = x->s->groups[gi].ranks[0];
        if (rr->m == x->gm[gi] && repeat_of(x, rr->inst, owner) == repeat_of(x, inst, rank))
            uf_union(x->parent, rr->inst, inst);
        else
            x->bad[inst] = x->bad[rr->inst] = 1;
        x->gcur[gi] = rr->next;
    }
    x->gmine[gi] = -1;
}

/* Step 3: collectives, member by member against the group's first member
 * (the smallest rank: groups are sorted and ranks are read in order). */
static int collect_coll(scratch *x)
{
    const zs_schedule *s = x->s;
    int32_t *touched = malloc(sizeof(int32_t) * (size_t)(s->ngroups > 0 ? s->ngroups : 1));
    if (!touched)
        return ZS_ENOMEM;
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        int32_t nt = 0;
        for (int32_t g = 0; g < p->nsegs; g++)
            for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
                const zs_op *op = &p->ops[i];
                if (op->kind != ZS_OP_COLL)
                    continue;
                int32_t gi = op->u.coll.group;
                int64_t inst = x->inst0[r] + g;
                if (gi < 0 || gi >= s->ngroups)
                    continue; /* the validator's to report */
                if (x->gstamp[gi] != r) {
                    x->gstamp[gi] = r;
                    x->gcur[gi] = x->ghead[gi];
                    x->gmine[gi] = -1;
                    touched[nt++] = gi;
                }
                if (s->groups[gi].ranks[0] == r) {
                    if (run_add(x, inst, &x->ghead[gi], &x->gtail[gi])) {
                        free(touched);
                        return ZS_ENOMEM;
                    }
                    continue;
                }
                if (x->gmine[gi] != inst) {
                    coll_close(x, gi, r);
                    x->gmine[gi] = inst;
                    x->gm[gi] = 0;
                }
                x->gm[gi]++;
            }
        for (int32_t t = 0; t < nt; t++) {
            int32_t gi = touched[t];
            if (s->groups[gi].ranks[0] == r)
                continue;
            coll_close(x, gi, r);
            for (int32_t k = x->gcur[gi]; k >= 0; k = x->runs[k].next)
                x->bad[x->runs[k].inst] = 1; /* this member has fewer */
        }
    }
    free(touched);
    return ZS_OK;
}

/* ---- building the fold ------------------------------------------------------------ */

/* Iterations of instance (rank, g) whose layers a timeline shows: [*a, *b]
 * (empty: *a > *b). The layer of an iteration follows the last layer
 * marker at or before the segment's end (as zs_timeline counts it). */
static void shown_iters(const zs_fold *f, int rank, int32_t g, int32_t mv, int32_t mseg,
                        int8_t mdir, int32_t *a, int32_t *b)
{
    const zs_fold_cfg *c = &f->cfg;
    const zs_rank_prog *p = &f->s->ranks[rank];
    int32_t R = p->segs[g].repeat;
    *a = 1;
    *b = 0;
    if (c->layer0 < 0 || (c->rank_on && !c->rank_on[rank]) || mv < 0)
        return;
    if (mseg != g) { /* one layer for every iteration */
        int32_t l = mv + mdir * (p->segs[mseg].repeat - 1);
        if (l >= c->layer0 && l <= c->layer1) {
            *a = 0;
            *b = R - 1;
        }
        return;
    }
    int32_t lo = mdir > 0 ? c->layer0 - mv : mv - c->layer1;
    int32_t hi = mdir > 0 ? c->layer1 - mv : mv - c->layer0;
    *a = lo < 0 ? 0 : lo;
    *b = hi > R - 1 ? R - 1 : hi;
}

static int alloc_main(zs_fold *f)
{
    const zs_schedule *s = f->s;
    f->inst0 = malloc(sizeof(int64_t) * (size_t)(s->nranks + 1));
    if (!f->inst0)
        return ZS_ENOMEM;
    int64_t n = 0;
    for (int r = 0; r < s->nranks; r++) {
        f->inst0[r] = n;
        n += s->ranks[r].nsegs;
    }
    f->inst0[s->nranks] = n;
    f->ninst = n;
    size_t m = (size_t)(n > 0 ? n : 1);
    f->comp = malloc(sizeof(int32_t) * m);
    f->sbase = malloc(sizeof(int64_t) * m);
    f->smap = malloc(m * ZS_MAX_STREAMS);
    f->ref = calloc(m, 1);
    if (!f->comp || !f->sbase || !f->smap || !f->ref)
        return ZS_ENOMEM;
    for (int64_t i = 0; i < n; i++) {
        f->comp[i] = -1;
        f->sbase[i] = -1;
    }
    memset(f->smap, -1, m * ZS_MAX_STREAMS);
    return ZS_OK;
}

/* Steps 1-3 into parent[] and bad[]. */
static int analyse(zs_fold *f, scratch *x)
{
    const zs_schedule *s = f->s;
    size_t m = (size_t)(f->ninst > 0 ? f->ninst : 1),
           ng = (size_t)(s->ngroups > 0 ? s->ngroups : 1);
    x->s = s;
    x->inst0 = f->inst0;
    x->parent = malloc(sizeof(int64_t) * m);
    x->bad = calloc(m, 1);
    x->ghead = malloc(sizeof(int32_t) * ng);
    x->gtail = malloc(sizeof(int32_t) * ng);
    x->gcur = malloc(sizeof(int32_t) * ng);
    x->gmine = malloc(sizeof(int64_t) * ng);
    x->gm = calloc(ng, sizeof(int32_t));
    x->gstamp = malloc(sizeof(int32_t) * ng);
    if (!x->parent || !x->bad || !x->ghead || !x->gtail || !x->gcur || !x->gmine || !x->gm ||
        !x->gstamp)
        return ZS_ENOMEM;
    for (int64_t i = 0; i < f->ninst; i++)
        x->parent[i] = i;
    for (size_t g = 0; g < ng; g++) {
        x->ghead[g] = x->gtail[g] = x->gcur[g] = -1;
        x->gmine[g] = -1;
        x->gstamp[g] = -1;
    }
    if (collect_p2p(x) || collect_coll(x))
        return ZS_ENOMEM;
    for (int64_t i = 0; i < x->capch; i++)
        if (x->ch[i].used)
            pair_channel(x, &x->ch[i]);
    for (int64_t i = 0; i < f->ninst; i++) /* a misshapen instance spoils its component */
        if (x->bad[i])
            x->bad[uf_find(x->parent, i)] = 1;
    return ZS_OK;
}

/* Streams of instance i that fold (its slots sbase[i] .. + this), 0 if none. */
static int inst_slots(const zs_fold *f, int64_t i)
{
    int n = 0;
    if (f->comp[i] >= 0 && f->sbase[i] >= 0)
        for (int st = 0; st < ZS_MAX_STREAMS; st++)
            n += f->smap[i * ZS_MAX_STREAMS + st] >= 0;
    return n;
}

/* Each component's streams (for one_period), once build_comps has them:
 * cstream[cstart[c] .. cstart[c + 1]) (a counting sort by component). */
static int comp_streams(zs_fold *f, size_t n)
{
    f->cstart = calloc((size_t)f->ncomps + 1, sizeof *f->cstart);
    f->cstream = malloc(sizeof *f->cstream * n);
    if (!f->cstart || !f->cstream)
        return ZS_ENOMEM;
    /* cstart[c]: first the end of component c's streams, then, filled
     * backwards from there, their start. */
    for (int64_t i = 0; i < f->ninst; i++)
        if (inst_slots(f, i) > 0)
            f->cstart[f->comp[i]] += inst_slots(f, i);
    for (int32_t c = 1; c < f->ncomps; c++)
        f->cstart[c] += f->cstart[c - 1];
    f->cstart[f->ncomps] = f->ncomps > 0 ? f->cstart[f->ncomps - 1] : 0;
    for (int64_t i = f->ninst - 1; i >= 0; i--)
        for (int k = inst_slots(f, i) - 1; k >= 0; k--)
            f->cstream[--f->cstart[f->comp[i]]] = f->sbase[i] + k;
    return ZS_OK;
}

/* Step 4: components, their streams and the iterations timelines keep. */
static int build_comps(zs_fold *f, scratch *x)
{
    const zs_schedule *s = f->s;
    int32_t minr = f->cfg.min_iters + 1 + f->cfg.tail_iters;
    int64_t *root_comp = malloc(sizeof(int64_t) * (size_t)(f->ninst > 0 ? f->ninst : 1));
    if (!root_comp)
        return ZS_ENOMEM;
    for (int64_t i = 0; i < f->ninst; i++)
        root_comp[i] = -1;
    int64_t nfs = 0;
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        int32_t mv = -1, mseg = -1;
        int8_t mdir = 1;
        for (int32_t g = 0; g < p->nsegs; g++) {
            const zs_segment *sg = &p->segs[g];
            int64_t inst = f->inst0[r] + g;
            int32_t cnt[ZS_MAX_STREAMS] = {0};
            for (int64_t i = sg->op0; i < sg->op0 + sg->nops; i++) {
                const zs_op *op = &p->ops[i];
                cnt[op->stream < ZS_MAX_STREAMS ? op->stream : 0]++;
                if (op->kind == ZS_OP_MARKER &&
                    (op->u.marker.mk == ZS_MARK_LAYER || op->u.marker.mk == ZS_MARK_LAYER_DOWN)) {
                    mv = op->u.marker.value;
                    mseg = g;
                    mdir = op->u.marker.mk == ZS_MARK_LAYER ? 1 : -1;
                }
            }
            if (sg->repeat < 2)
                continue;
            f->st.segments++;
            if (sg->repeat < minr || !f->cfg.on)
                continue;
            if (f->cfg.keep_all) {
                f->st.timeline++;
                continue;
            }
            int64_t root = uf_find(x->parent, inst);
            if (x->bad[root]) {
                f->st.shape++;
                continue;
            }
            if (root_comp[root] < 0) {
                fcomp *nc = realloc(f->comps, sizeof *nc * (size_t)(f->ncomps + 1));
                if (!nc) {
                    free(root_comp);
                    return ZS_ENOMEM;
                }
                f->comps = nc;
                f->comps[f->ncomps] = (fcomp){.repeat = sg->repeat, .fold_at = -1, .mr0 = 1};
                root_comp[root] = f->ncomps++;
            }
            fcomp *c = &f->comps[root_comp[root]];
            f->comp[inst] = (int32_t)root_comp[root];
            c->ninst++;
            f->st.candidates++;
            int32_t a, b;
            shown_iters(f, r, g, mv, mseg, mdir, &a, &b);
            if (a <= b) {
                if (c->mr0 > c->mr1) {
                    c->mr0 = a;
                    c->mr1 = b;
                } else {
                    c->mr0 = a < c->mr0 ? a : c->mr0;
                    c->mr1 = b > c->mr1 ? b : c->mr1;
                }
            }
            f->sbase[inst] = nfs;
            int8_t slot = 0;
            f->ref[inst] = -1;
            for (int st = 0; st < ZS_MAX_STREAMS; st++)
                if (cnt[st] > 0) {
                    if (f->ref[inst] < 0)
                        f->ref[inst] = (int8_t)st;
                    f->smap[inst * ZS_MAX_STREAMS + st] = slot++;
                }
            c->nstreams += slot;
            nfs += slot;
        }
    }
    free(root_comp);
    f->nfs = nfs;
    size_t n = (size_t)(nfs > 0 ? nfs : 1);
    f->fs = calloc(n, sizeof *f->fs);
    f->nops = calloc(n, sizeof *f->nops);
    if (!f->fs || !f->nops)
        return ZS_ENOMEM;
    for (int64_t i = 0; i < nfs; i++)
        f->fs[i].delta = -1;
    for (int r = 0; r < s->nranks; r++)
        for (int32_t g = 0; g < s->ranks[r].nsegs; g++) {
            int64_t inst = f->inst0[r] + g;
            if (f->sbase[inst] < 0)
                continue;
            const zs_segment *sg = &s->ranks[r].segs[g];
            for (int64_t i = sg->op0; i < sg->op0 + sg->nops; i++) {
                int st = s->ranks[r].ops[i].stream;
                int8_t sl = st < ZS_MAX_STREAMS ? f->smap[inst * ZS_MAX_STREAMS + st] : -1;
                if (sl >= 0)
                    f->nops[f->sbase[inst] + sl]++;
            }
        }
    return comp_streams(f, n);
}

static void scratch_free(scratch *x)
{
    free(x->parent);
    free(x->bad);
    free(x->runs);
    free(x->ch);
    free(x->ghead);
    free(x->gtail);
    free(x->gcur);
    free(x->gmine);
    free(x->gm);
    free(x->gstamp);
}

int zs_fold_new(const zs_schedule *s, const zs_fold_cfg *cfg, zs_fold **out, zs_err *e)
{
    zs_fold *f = calloc(1, sizeof *f);
    if (!f)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory analysing the schedule's folds");
    f->s = s;
    if (cfg)
        f->cfg = *cfg;
    else
        zs_fold_cfg_init(&f->cfg);
    if (f->cfg.min_iters < MIN_REPEAT_FLOOR)
        f->cfg.min_iters = MIN_REPEAT_FLOOR;
    if (f->cfg.min_iters > HIST)
        f->cfg.min_iters = HIST;
    if (!(f->cfg.tol >= 0) || isinf(f->cfg.tol))
        f->cfg.tol = 1e-4;
    f->st.first_fold = f->st.last_fold = -1;
    scratch x;
    memset(&x, 0, sizeof x);
    int rc = alloc_main(f);
    if (!rc && f->cfg.on && !f->cfg.keep_all)
        rc = analyse(f, &x);
    if (!rc) {
        if (!x.parent) { /* nothing folds: every instance its own, clean component */
            x.parent = malloc(sizeof(int64_t) * (size_t)(f->ninst > 0 ? f->ninst : 1));
            x.bad = calloc((size_t)(f->ninst > 0 ? f->ninst : 1), 1);
            rc = x.parent && x.bad ? ZS_OK : ZS_ENOMEM;
            for (int64_t i = 0; !rc && i < f->ninst; i++)
                x.parent[i] = i;
        }
        if (!rc)
            rc = build_comps(f, &x);
    }
    scratch_free(&x);
    f->cfg.rank_on = NULL; /* the caller's: read only above */
    if (rc) {
        zs_fold_free(f);
        return zs_err_set(e, ZS_ENOMEM, NULL, "use fewer GPUs or free memory",
                          "out of memory analysing the schedule's folds");
    }
    *out = f;
    return ZS_OK;
}

void zs_fold_free(zs_fold *f)
{
    if (!f)
        return;
    free(f->inst0);
    free(f->comp);
    free(f->sbase);
    free(f->smap);
    free(f->ref);
    free(f->nops);
    free(f->fs);
    free(f->comps);
    free(f->cstart);
    free(f->cstream);
    free(f);
}

int zs_fold_candidate(const zs_fold *f, int rank, int32_t seg)
{
    return f && f->comp[f->inst0[rank] + seg] >= 0;
}

int64_t zs_fold_ops_per_iter(const zs_fold *f, int rank, int32_t seg, int stream)
{
    int64_t inst = f->inst0[rank] + seg;
    if (f->sbase[inst] < 0 || stream < 0 || stream >= ZS_MAX_STREAMS)
        return 0;
    int8_t sl = f->smap[inst * ZS_MAX_STREAMS + stream];
    return sl < 0 ? 0 : f->nops[f->sbase[inst] + sl];
}

/* ---- during the run ------------------------------------------------------------- */

/* Whether a stream repeats, and the period to replay (*period):
 *   exact:  its last min_iters - 1 periods are equal to `tol` (the last one);
 *   steady: over its last four periods, the mean of the last two is within
 *           tol_mean of the mean of the two before and none is more than
 *           `spread` off their mean (the mean of the four): a stream whose
 *           period swings (another stream's traffic shares its links in a
 *           different phase each iteration) but does not drift. */
static int steady_period(const fstream *q, const zs_fold_cfg *c, double *period)
{
    int np = c->min_iters - 1; /* periods compared in an exact repeat */
    if (q->ncross < np + 1)
        return 0;
    const double *t = q->c + HIST - 5; /* the last five boundaries */
    double d4 = t[4] - t[3], d3 = t[3] - t[2];
    int exact = 1;
    for (int k = 1; k < np && exact; k++) {
        double d = q->c[HIST - 1 - k] - q->c[HIST - 2 - k];
        double scale = fabs(d4) > fabs(d) ? fabs(d4) : fabs(d);
        exact = fabs(d4 - d) <= c->tol * scale + 1e-15;
    }
    if (exact) {
        *period = d4;
        return 1;
    }
    if (q->ncross < 5 || c->tol_mean <= 0)
        return 0;
    double d2 = t[2] - t[1], d1 = t[1] - t[0], mean = (t[4] - t[0]) / 4;
    if (fabs((d4 + d3) - (d2 + d1)) / 2 > c->tol_mean * fabs(mean) + 1e-15)
        return 0;
    double d[4] = {d1, d2, d3, d4};
    for (int k = 0; k < 4; k++)
        if (fabs(d[k] - mean) > c->spread * fabs(mean) + 1e-15)
            return 0;
    *period = mean;
    return 1;
}

/* Every stream of a component repeats with one period. Streams that pass
 * messages or collectives every iteration cannot keep different periods
 * in a periodic steady state: the faster one's lead over the slower grows
 * each iteration until what it overlaps changes. On Fig. 9's 32-GPU USP
 * point the backward passes of ranks 0 and 31 repeated six times with
 * periods 141.38 and 135.69 ms (the gradient all-reduce between them
 * falling further behind rank 31's compute), then both moved to ~145 ms;
 * replaying each stream's own period there made the iteration 0.86% short. */
static int one_period(const zs_fold *f, int32_t ci)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = f->cstart[ci]; i < f->cstart[ci + 1]; i++) {
        double p = f->fs[f->cstream[i]].period;
        lo = p < lo ? p : lo;
        hi = p > hi ? p : hi;
    }
    double tol = f->cfg.tol_mean > 0 ? f->cfg.spread : f->cfg.tol;
    return hi - lo <= tol * fabs(hi) + 1e-15;
}

void zs_fold_cross(zs_fold *f, int rank, int32_t seg, int stream, int32_t iter, double now,
                   zs_fold_step *st)
{
    st->ref = 0;
    st->skip = 0;
    st->sleep = 0;
    st->period = 0;
    st->back = 0;
    if (!f)
        return;
    int64_t inst = f->inst0[rank] + seg;
    int32_t ci = f->comp[inst];
    if (ci < 0 || stream < 0 || stream >= ZS_MAX_STREAMS)
        return;
    int8_t sl = f->smap[inst * ZS_MAX_STREAMS + stream];
    if (sl < 0)
        return;
    int64_t k = f->sbase[inst] + sl;
    fstream *q = &f->fs[k];
    fcomp *c = &f->comps[ci];
    /* The boundary's time, and whether the stream now repeats. */
    memmove(q->c, q->c + 1, sizeof q->c[0] * (HIST - 1));
    q->c[HIST - 1] = now;
    q->ncross++;
    int ready = steady_period(q, &f->cfg, &q->period);
    c->nready += ready - q->ready;
    q->ready = (int8_t)ready;
    int is_ref = stream == f->ref[inst];
    st->ref = is_ref;
    int shown = iter >= c->mr0 && iter <= c->mr1;
    if (iter > c->maxb)
        c->maxb = iter;
    /* The component decides when the last of its streams enters an
     * iteration, each with its latest periods: deciding when the first one
     * did let a laggard change after the decision (a gradient all-reduce's
     * stream, pinned to the compute's period but not to its pattern, had
     * caught up and replayed an uncontended all-reduce: docs/simulator.md,
     * Folding). It folds at the next iteration none has entered, so every
     * stream falls asleep at its own entry into it. */
    int all_in = 0;
    if (c->fold_at < 0 && !c->wide) {
        if (iter - c->minb >= NCNT) {
            c->wide = 1;
        } else {
            c->cnt[iter % NCNT]++;
            while (c->cnt[(c->minb + 1) % NCNT] == c->nstreams) {
                c->cnt[(c->minb + 1) % NCNT] = 0;
                c->minb++;
                all_in = 1;
            }
        }
    }
    int32_t at = c->maxb + 1;
    if (all_in && c->minb >= f->cfg.min_iters && at < c->repeat - f->cfg.tail_iters &&
        !(at >= c->mr0 && at <= c->mr1) && c->nready == c->nstreams && one_period(f, ci) &&
        at - c->minb <= ZS_FOLD_BACK_MAX) {
        c->fold_at = at;
        /* Each stream replays the period it has completed now, at that
         * period's length: what it does after this may meet streams that
         * already sleep. */
        for (int64_t i = f->cstart[ci]; i < f->cstart[ci + 1]; i++) {
            fstream *w = &f->fs[f->cstream[i]];
            w->dec = w->ncross;
            w->bdec = w->c[HIST - 1];
            w->delta = w->period;
        }
        f->st.folded += c->ninst;
        if (f->st.first_fold < 0 || at < f->st.first_fold)
            f->st.first_fold = at;
        if (at > f->st.last_fold)
            f->st.last_fold = at;
    }
    if (c->fold_at < 0 || iter < c->fold_at || shown)
        return;
    int32_t end = c->repeat - f->cfg.tail_iters; /* the last iterations run again */
    int32_t target = iter < c->mr0 && c->mr0 <= c->mr1 ? c->mr0 : end;
    if (target <= iter)
        return;
    st->back = iter - q->dec; /* its periods completed since the decision */
    st->skip = target - iter;
    st->period = q->delta;
    /* Until its steady boundary into `target`: a stream whose last periods
     * met streams already asleep (a laggard's transfers then meet less
     * traffic) entered `iter` off its steady phase. */
    st->sleep = q->bdec + (st->back + st->skip) * q->delta - now;
    if (!(st->sleep > 0))
        st->sleep = 0;
    f->st.iters_replayed += st->skip;
    f->st.ops_replayed += (int64_t)st->skip * f->nops[k];
}

void zs_fold_get_stats(const zs_fold *f, zs_fold_stats *st)
{
    *st = f->st;
    st->unsteady = 0;
    for (int32_t c = 0; c < f->ncomps; c++)
        if (f->comps[c].fold_at < 0)
            st->unsteady += f->comps[c].ninst;
}

void zs_fold_note(const zs_fold *f, zs_result *r)
{
    zs_fold_stats st;
    zs_fold_get_stats(f, &st);
    if (!f->cfg.on) {
        if (st.segments > 0)
            zs_result_note(r, "folding off: every iteration of every repeated segment simulated");
        return;
    }
    if (st.segments == 0)
        return;
    if (st.folded > 0)
        zs_result_note(r,
                       "folded: %lld of %lld repeated segments (rank x segment) simulated until "
                       "their last %d periods took the same time to %.0e (after %d to %d "
                       "iterations), the rest replayed: %lld ops not simulated; each stream "
                       "computes and communicates in them as in its last simulated one",
                       (long long)st.folded, (long long)st.segments, f->cfg.min_iters - 1,
                       f->cfg.tol, st.first_fold, st.last_fold, (long long)st.ops_replayed);
    if (st.unsteady > 0)
        zs_result_note(r,
                       "%lld repeated segments ran unrolled: their iterations never took the "
                       "same time to %.0e",
                       (long long)st.unsteady, f->cfg.tol);
    if (st.shape > 0)
        zs_result_note(r,
                       "%lld repeated segments ran unrolled: they share messages or "
                       "collectives with segments of another shape",
                       (long long)st.shape);
    if (st.timeline > 0)
        zs_result_note(r,
                       "%lld repeated segments ran unrolled for the timeline (--timeline-layers "
                       "lets the others fold)",
                       (long long)st.timeline);
}

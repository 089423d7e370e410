/* The program walker of the SimGrid executor (see zs_sim_internal.h): one actor
 * per rank runs a small event loop over the rank's streams.
 *
 *   1. handle what is due: compute ops that end now, folded streams whose
 *      sleep ends now;
 *   2. start every op that can start: for each stream, the op at its head
 *      if its dependencies are done (markers and zero-time ops complete on
 *      the spot, so this repeats until nothing changes);
 *   3. wait for any of the rank's outstanding communications, at most until
 *      the next due date that may start something SimGrid must see
 *      (local_horizon: compute ends that only let more compute start are
 *      handled in step 1 of the next wake, at their own dates; zs_sg_wait_internal.h:
 *      SimGrid 3.32's C API has no wait-any with a timeout that keeps the
 *      comms);
 *   4. retire what completed: accounting, timeline, advance the stream.
 *
 * Compute ops are not SimGrid activities: a compute op of d seconds ends d
 * seconds after it starts, and compute ops running at once on one GPU (on
 * different streams) share it equally (processor sharing), which is what
 * a private compute link did at the price of two comms per op. A host copy
 * (zs_ck_is_host_copy) is timed the same way but runs on a copy engine: it
 * takes no share of the SMs and counts as communication. Its PCIe link is
 * not a SimGrid link: contention with the NIC's traffic through the same
 * PCIe switch is not modelled.
 *
 * Segments repeat: a stream's cursor is (segment, iteration, op), and a
 * dependency inside the op's segment means the same iteration, one in an
 * earlier segment its last iteration, as in the analytic backend. */
#include "zs_sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zs__sim_fail(const rank_st *R, int code, const char *fix, const char *fmt, int64_t op,
                  const char *what)
{
    sim *x = R->x;
    if (x->failed)
        return;
    x->failed = 1;
    char where[128];
    snprintf(where, sizeof where, "rank %d op #%lld", R->rank, (long long)op);
    zs_err_set(&x->err, code, where, fix, fmt, what);
}

/* Stream s's head is now op i: a transfer or collective reads its zs_op
 * and channel when it starts, each a cache miss (every rank's schedule is
 * far larger than the caches), so they are fetched now, while the stream's
 * previous op is handed to SimGrid. */
static void head_fetch(const rank_st *R, int64_t i)
{
    int k = R->wo[i].kind;
    if (k == ZS_OP_SEND || k == ZS_OP_RECV || k == ZS_OP_COLL) {
        const char *o = (const char *)&R->p->ops[i];
        ZS_SIM_PF(o);
        ZS_SIM_PF(o + sizeof(zs_op) - 1);
        ZS_SIM_PF(&R->chan_of[i]);
    }
}

/* Moves stream s to its first op at or after segment `seg` (iteration 0). */
void zs__sim_stream_seek(rank_st *R, int s, int32_t seg)
{
    stream_st *t = &R->st[s];
    for (; seg < R->p->nsegs; seg++) {
        if (R->first[(int64_t)seg * ZS_MAX_STREAMS + s] >= 0) {
            t->seg = seg;
            t->iter = 0;
            t->cur = R->first[(int64_t)seg * ZS_MAX_STREAMS + s];
            head_fetch(R, t->cur);
            return;
        }
    }
    t->cur = -1;
}

/* Moves the head of stream s past op i. Entering the next iteration of a
 * repeated segment may fold it (the stream then sleeps). */
void zs__sim_stream_next(rank_st *R, int s, int64_t i)
{
    stream_st *t = &R->st[s];
    if (R->next_same[i] >= 0) {
        t->cur = R->next_same[i];
        head_fetch(R, t->cur);
        return;
    }
    if (++t->iter < R->p->segs[t->seg].repeat) {
        t->cur = R->first[(int64_t)t->seg * ZS_MAX_STREAMS + s];
        head_fetch(R, t->cur);
        if (R->x->fold && zs_fold_candidate(R->x->fold, R->rank, t->seg))
            zs__sim_fold_cross(R, s);
        return;
    }
    zs__sim_stream_seek(R, s, t->seg + 1);
}

void zs__sim_done_inc(rank_st *R, int64_t i)
{
    R->done[i]++;
    if (R->skip_add && R->skip_add[i] && R->done[i] == R->skip_at[i]) {
        R->done[i] += R->skip_add[i];
        R->skip_add[i] = 0;
    }
}

void zs__sim_op_done(rank_st *R, int64_t i, double now)
{
    zs__sim_done_inc(R, i);
    R->x->r->ranks[R->rank].ops++;
    R->end = now;
}

/* What stream s can do with op i at its head, held when `busy`:
 * wait; or start a transfer, a compute op that takes time (only this GPU
 * sees it), or anything else (a marker, a zero-time op, a collective).
 * Transfers never hold the stream; any other op waits until the stream's
 * transfers have all completed. Completions are counted per stored op. */
enum { HEAD_WAIT, HEAD_P2P, HEAD_COMPUTE, HEAD_OTHER };
static int head_action(const rank_st *R, int s, int64_t i, int busy)
{
    const stream_st *t = &R->st[s];
    if (busy || i < 0 || t->asleep)
        return HEAD_WAIT;
    const wop *o = &R->wo[i];
    const wdep *d = R->wd + o->d0;
    for (int k = 0; k < o->ndeps; k++)
        if (R->done[d[k].op] < (d[k].need < 0 ? t->iter + 1 : d[k].need))
            return HEAD_WAIT;
    if (o->flags & WOP_P2P)
        return HEAD_P2P;
    if (t->p2p_pending > 0)
        return HEAD_WAIT;
    return o->flags & WOP_TIMED ? HEAD_COMPUTE : HEAD_OTHER;
}

went *zs__sim_went_new(rank_st *R, int kind, int s)
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
        if (!nw) {
            free(w);
            return NULL;
        }
        R->w = nw;
        R->capw = cap;
    }
    R->w[R->nw++] = w;
    if (kind != W_P2P)
        R->st[s].npend++;
    return w;
}

/* ---- compute: processor sharing on the GPU ------------------------------------ */

/* Brings the running compute ops' work left up to date: with k running,
 * each does 1/k second of work per second. */
static void ps_advance(rank_st *R, double now)
{
    if (now <= R->ps_last)
        return;
    if (R->ncomp > 0 || R->ncopy > 0) {
        double dt = now - R->ps_last, w = R->ncomp > 0 ? dt / R->ncomp : 0;
        for (unsigned m = R->comp; m; m &= m - 1) {
            int s = zs__sim_low(m);
            R->st[s].rem -= R->st[s].copying ? dt : w;
        }
    }
    R->ps_last = now;
}

/* When the next compute op ends (INFINITY: none runs); *which: its stream. */
static double ps_next(const rank_st *R, int *which)
{
    double best = INFINITY;
    *which = -1;
    for (unsigned m = R->comp; m; m &= m - 1) { /* in stream order, as a loop over all */
        int s = zs__sim_low(m);
        double rem = R->st[s].rem > 0 ? R->st[s].rem : 0;
        double t = R->ps_last + (R->st[s].copying ? rem : rem * R->ncomp);
        if (t < best) {
            best = t;
            *which = s;
        }
    }
    return best;
}

/* When the next folded stream wakes (INFINITY: none sleeps). */
static double wake_next(const rank_st *R, int *which)
{
    double best = INFINITY;
    *which = -1;
    for (int s = 0; R->nasleep > 0 && s < R->x->s->nstreams; s++)
        if (R->st[s].asleep && R->st[s].wake_at < best) {
            best = R->st[s].wake_at;
            *which = s;
        }
    return best;
}

/* An op that takes no time completes on the spot. */
static int finish_now(rank_st *R, int s, int64_t i, double now)
{
    zs_timeline_op(R->x->tl, R->rank, i, R->st[s].iter, now, now, ZS_TL_SEQ_NONE);
    zs__sim_op_done(R, i, now);
    zs__sim_stream_next(R, s, i);
    return 1;
}

static int start_compute(rank_st *R, int s, int64_t i, double now)
{
    const wop *op = &R->wo[i];
    stream_st *t = &R->st[s];
    if (op->duration <= 0)
        return finish_now(R, s, i, now);
    ps_advance(R, now);
    int copy = !!(op->flags & WOP_COPY);
    if (copy)
        R->ncopy++;
    else
        R->ncomp++;
    t->computing = 1;
    R->comp |= 1u << s;
    t->copying = copy;
    t->rem = op->duration;
    zs_foldacct_change(&R->acct, &R->x->r->ranks[R->rank], s, now, !copy, copy);
    t->running = 1;
    t->t_start = now;
    return 1;
}

/* The compute op of stream s ended at `now`. */
static void end_compute(rank_st *R, int s, double now)
{
    stream_st *t = &R->st[s];
    ps_advance(R, now);
    int copy = t->copying;
    t->computing = t->copying = 0;
    R->comp &= ~(1u << s);
    if (copy)
        R->ncopy--;
    else
        R->ncomp--;
    t->running = 0;
    zs_foldacct_change(&R->acct, &R->x->r->ranks[R->rank], s, now, -!copy, -copy);
    zs_timeline_op(R->x->tl, R->rank, t->cur, t->iter, t->t_start, now, ZS_TL_SEQ_NONE);
    zs__sim_op_done(R, t->cur, now);
    zs__sim_stream_next(R, s, t->cur);
}

static void start_ready(rank_st *R);

/* Phase 1: compute ends and wakes due at `now` (before `now` when
 * `before`), earliest first. Ends before the horizon came without waking
 * the actor (local_horizon): what they let start, a compute op on the
 * same stream, starts at its date. */
static void handle_due(rank_st *R, double now, int before)
{
    for (;;) {
        int cs, ws;
        double tc = ps_next(R, &cs), tw = wake_next(R, &ws), t0 = tc < tw ? tc : tw;
        if (t0 > now || (before && t0 == now))
            break;
        R->now = tc <= tw ? tc : tw;
        if (tc <= tw)
            end_compute(R, cs, tc);
        else
            zs__sim_fold_wake(R, ws);
        double t = R->now;
        if (t < R->horizon && t < now && ps_next(R, &cs) > t && wake_next(R, &ws) > t) {
            R->past = 1;
            start_ready(R);
            R->past = 0;
        }
    }
    R->now = now;
}

void zs__sim_catch_up(rank_st *P, double now)
{
    double keep = P->now;
    handle_due(P, now, 1);
    P->now = keep;
}

/* What local_horizon knows of a stream (head_action's busy and cur). */
typedef struct hstream {
    int busy, computing; /* a compute op or collective holds it; a compute op */
    int copying;         /* the compute op is a host copy (not shared) */
    double rem;
    int64_t cur;
} hstream;

/* Copies stream s's state into h[s]; returns its bit. */
static unsigned hstream_load(const rank_st *R, hstream *h, int s)
{
    const stream_st *t = &R->st[s];
    h[s] = (hstream){t->running, t->computing, t->copying, t->rem, t->cur};
    return 1u << s;
}

#define HORIZON_STEPS 64

/* When the actor must next wake if no communication completes before: the
 * first compute end (or folded stream's wake) that may start something
 * SimGrid must see. Until then the rank's GPU evolves on its own: compute
 * ends that start nothing or only more compute (same iteration of their
 * segment) need no wake-up; handle_due replays them at their dates when
 * the actor next wakes. A wake-up costs a simcall and two context
 * switches, as much as a transfer's completion. Computed with handle_due's
 * and start_ready's own rules and arithmetic (ps_advance, ps_next,
 * try_start), so the dates are the ones it will find. The compute ends it
 * looks past are counted in R->done as they happen (done_inc's
 * arithmetic), so head_action reads them where it reads every completion,
 * and are taken back before it returns: tent[k] was at was[k]. */
static double horizon_walk(rank_st *R, int64_t *tent, int32_t *was, int *nt)
{
    int ws, ncomp = R->ncomp;
    double tw = wake_next(R, &ws), last = R->ps_last;
    hstream h[ZS_MAX_STREAMS];
    unsigned touched = 0; /* streams to try once the ends at `last` are in */
    /* The computing streams as a mask, visited in stream order as the
     * loops over all streams did: a schedule has up to eight streams, one
     * or two of which compute at a time. */
    unsigned comp = R->comp, have = 0; /* have: the streams copied into h */
    for (unsigned m = comp; m; m &= m - 1)
        have |= hstream_load(R, h, zs__sim_low(m));
    for (;;) {
        double tc = INFINITY;
        int cs = -1;
        for (unsigned m = comp; m; m &= m - 1) {
            int s = zs__sim_low(m);
            double rem = h[s].rem > 0 ? h[s].rem : 0;
            double t = last + (h[s].copying ? rem : rem * ncomp);
            if (t < tc) {
                tc = t;
                cs = s;
            }
        }
        if (touched && tc > last) { /* start_ready at `last` */
            for (unsigned m = touched; m; m &= m - 1) {
                int u = zs__sim_low(m);
                if (!(have >> u & 1u))
                    have |= hstream_load(R, h, u);
                int k = head_action(R, u, h[u].cur, h[u].busy);
                if (k == HEAD_P2P || k == HEAD_OTHER)
                    return last;
                if (k == HEAD_COMPUTE) {
                    h[u].busy = h[u].computing = 1;
                    h[u].copying = !!(R->wo[h[u].cur].flags & WOP_COPY);
                    h[u].rem = R->wo[h[u].cur].duration;
                    ncomp += !h[u].copying;
                    comp |= 1u << u;
                }
            }
            touched = 0;
            continue;
        }
        if (tc > tw || isinf(tc))
            return tc < tw ? tc : tw;
        if (*nt == HORIZON_STEPS || tc >= tw)
            return tc;
        if (tc > last) { /* ps_advance */
            double dt = tc - last, w = ncomp > 0 ? dt / ncomp : 0;
            for (unsigned m = comp; m; m &= m - 1) {
                int s = zs__sim_low(m);
                h[s].rem -= h[s].copying ? dt : w;
            }
            last = tc;
        }
        int64_t a = h[cs].cur, b = R->next_same[a];
        if (b < 0) /* the stream's next iteration: folding may decide */
            return tc;
        ncomp -= !h[cs].copying;
        h[cs].busy = h[cs].computing = h[cs].copying = 0;
        comp &= ~(1u << cs);
        h[cs].cur = b;
        /* done_inc, but skip_add stays for the real completion: once done
         * passed skip_at, a second tentative one cannot meet it again */
        was[*nt] = R->done[a];
        tent[(*nt)++] = a;
        R->done[a]++;
        if (R->skip_add && R->skip_add[a] && R->done[a] == R->skip_at[a])
            R->done[a] += R->skip_add[a];
        touched |= 1u << cs | R->waiters[a];
    }
}

static double local_horizon(rank_st *R)
{
    int64_t tent[HORIZON_STEPS];
    int32_t was[HORIZON_STEPS];
    int nt = 0;
    double due = horizon_walk(R, tent, was, &nt);
    while (nt > 0) { /* latest first: an op ended twice gets its first value back */
        nt--;
        R->done[tent[nt]] = was[nt];
    }
    return due;
}

/* ---- starting and retiring ------------------------------------------------------ */

/* Tries to start the head op of stream s; returns 1 if the stream changed. */
static int try_start(rank_st *R, int s)
{
    stream_st *t = &R->st[s];
    int64_t i = t->cur;
    int a = head_action(R, s, i, t->running);
    if (a == HEAD_WAIT)
        return 0;
    if (R->past && a != HEAD_COMPUTE) { /* local_horizon promised a compute op */
        zs__sim_fail(R, ZS_ERUNTIME, "report this as a bug", "%s", i,
                     "internal error: an op other than compute would start before SimGrid's clock");
        return 0;
    }
    double now = R->now;
    if (a == HEAD_P2P)
        return zs__sim_start_p2p(R, s, i, now);
    switch (R->wo[i].kind) {
    case ZS_OP_MARKER:
        zs__sim_op_done(R, i, now);
        zs__sim_stream_next(R, s, i);
        return 1;
    case ZS_OP_COMPUTE:
        return start_compute(R, s, i, now);
    case ZS_OP_COLL:
        return zs__sim_start_coll(R, s, i, now);
    default:
        zs__sim_fail(R, ZS_EINVALID, "rebuild the schedule", "%s", i, "unknown op kind");
        return 0;
    }
}

/* A communication of stream s completed. */
static void retire(rank_st *R, went *w)
{
    int s = w->stream;
    stream_st *t = &R->st[s];
    double now = R->now;
    w->next_free = R->free_w;
    R->free_w = w;
    if (w->kind == W_P2P) {
        zs__sim_p2p_done(R, w, now);
        return;
    }
    if (!zs__sim_coll_retire(R, w))
        return;
    t->running = 0;
    zs_foldacct_change(&R->acct, &R->x->r->ranks[R->rank], s, now, 0, -1);
    zs_timeline_op(R->x->tl, R->rank, t->cur, t->iter, t->t_start, now, ZS_TL_SEQ_NONE);
    zs__sim_op_done(R, t->cur, now);
    zs__sim_stream_next(R, s, t->cur);
}

/* Phase 2: starts what can start, until nothing changes. */
static void start_ready(rank_st *R)
{
    sim *x = R->x;
    int changed = 1;
    while (changed && !x->failed) {
        changed = 0;
        for (int s = 0; s < x->s->nstreams; s++)
            while (try_start(R, s))
                changed = 1;
    }
}

static int all_done(const rank_st *R)
{
    if (R->nw != 0 || R->ncomp != 0 || R->ncopy != 0 || R->nasleep != 0)
        return 0;
    for (int s = 0; s < R->x->s->nstreams; s++)
        if (R->st[s].cur >= 0 || R->st[s].p2p_pending > 0)
            return 0;
    return 1;
}

/* The index of w in R->w, or -1 (not expected: a notice wakes the actor
 * only for its own outstanding comms). */
static ssize_t went_index(const rank_st *R, const went *w)
{
    for (int j = 0; j < R->nw; j++)
        if (R->w[j] == w)
            return j;
    return -1;
}

/* Collects R->w[k]'s completed comm: a wait on it alone (SimGrid drops a
 * comm from its actor's activities only when the actor waits on it),
 * with `timeout` as the wait over all would have had. k, or -2 when
 * SimGrid reports a failure. */
static ssize_t take_comm(rank_st *R, ssize_t k, double timeout)
{
    if (k < 0)
        return -2;
    sg_comm_t c = R->w[k]->comm;
    return zs__sgw_wait_any_for(R->sgw, &c, 1, timeout) == 0 ? k : -2;
}

void zs__sim_actor_main(int argc, char **argv)
{
    rank_st *R = sg_actor_self_get_data();
    R->now = R->ps_last = simgrid_get_clock();
    for (;;) {
        handle_due(R, R->now, 0);
        start_ready(R);
        if (R->x->failed)
            break;
        if (all_done(R)) {
            R->finished = 1;
            break;
        }
        double due;
        if (R->x->o.wake_every_end) {
            int cs, ws;
            double tc = ps_next(R, &cs), tw = wake_next(R, &ws);
            due = tc < tw ? tc : tw;
        } else {
            due = local_horizon(R);
        }
        R->horizon = due;
        if (R->nw == 0 && isinf(due))
            break; /* stuck on a dependency that can never complete: reported after the run */
        /* Phase 3: wait for any outstanding communication, or the next due date. */
        ssize_t k = -1, fin = R->nfin > 0 ? zs__sim_fin_first(R) : -1;
        double to = isinf(due) ? -1 : due - simgrid_get_clock();
        if (to < 0 && !isinf(due))
            to = 0;
        if (R->nw == 0) {
            sg_actor_sleep_until(due);
        } else if (fin >= 0) {
            /* What the wait over all would return at once, without its O(nw)
             * (zs_sim_fin.c): the first completed comm, waited on alone. With
             * the same timeout: SimGrid sets and removes its timer as it did,
             * which keeps the order of timers at equal dates. */
            k = take_comm(R, fin, to);
        } else {
            /* Nothing completed yet: parked until a notice wakes the actor
             * with the comm that completed, or until the due date (the
             * timer the wait over all set). The comm is then waited on
             * alone, without a timer: SimGrid answers at once. */
            int r = zs__sgp_park(&R->park, to);
            k = r == 1 ? take_comm(R, went_index(R, R->park.woke), -1) : r == 0 ? -1 : -2;
        }
        double clock = simgrid_get_clock();
        if (k == -1) { /* the due date: handled at its own time, not the rounded clock */
            R->now = clock > due ? clock : due;
            continue;
        }
        if (k < 0 || k >= R->nw) {
            zs__sim_fail(R, ZS_ERUNTIME, NULL, "%s", -1, "SimGrid reported a failed communication");
            break;
        }
        /* Compute ends the actor did not wake for come first (those at this
         * very date after the completion, as they always did). */
        handle_due(R, clock, 1);
        R->now = clock;
        went *w = R->w[k];
        zs__sim_fin_retire(R, w);
        /* Keep the order of the others: completions at the same date are
         * then retired in the same order on every run. */
        memmove(R->w + k, R->w + k + 1, sizeof *R->w * (size_t)(R->nw - k - 1));
        R->nw--;
        /* Phase 4. */
        retire(R, w);
    }
}

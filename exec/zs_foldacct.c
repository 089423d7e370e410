/* A rank's accounting when streams sleep: see zs_foldacct.h. */
#include "zs_foldacct.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "zs_fold.h"

_Static_assert(sizeof(zs_foldacct_line) == 64, "the log's entries on whole cache lines");
_Static_assert(ZS_FACCT_NB == ZS_FOLD_BACK_MAX + 2,
               "a replay may go back ZS_FOLD_BACK_MAX periods");
_Static_assert(sizeof(zs_foldacct_stream) % 64 == 0 && offsetof(zs_foldacct, st) == 64 &&
                   offsetof(zs_foldacct_stream, lh) + sizeof(int) <= 64,
               "each stream on whole cache lines, what a change touches in its first");

/* A log that grows past this many changes without a boundary is dropped:
 * the stream left the segments that fold. */
#define LOG_CAP (1 << 15)
/* A replayed period shorter than this is held constant (never stepped). */
#define MIN_PERIOD 1e-9

void zs_foldacct_init(zs_foldacct *a)
{
    memset(a, 0, sizeof *a);
}

void zs_foldacct_free(zs_foldacct *a)
{
    for (int s = 0; s < ZS_MAX_STREAMS; s++) {
        zs_foldacct_stream *q = &a->st[s];
        zs_pool_release(a->pool, q->log, sizeof *q->log * (size_t)(q->caplog / ZS_FACCT_PER_LINE));
        zs_pool_release(a->pool, q->pat, sizeof *q->pat * (size_t)q->cappat);
        zs_pool_release(a->pool, q->tl, sizeof *q->tl * (size_t)q->captl);
        q->caplog = q->cappat = q->captl = 0;
        q->log = NULL;
        q->pat = q->tl = NULL;
    }
}

static uint8_t state_of(const zs_foldacct_stream *q)
{
    return (uint8_t)((q->comp > 0) | (q->comm > 0) << 1);
}

static void integrate(zs_foldacct *a, zs_rank_result *r, double t)
{
    double dt = t - a->last;
    if (!(dt > 0))
        return;
    if (a->ncomp > 0)
        r->compute += dt;
    else if (a->ncomm > 0)
        r->exposed_comm += dt;
    else
        r->idle += dt;
    if (a->ncomm > 0)
        r->comm += dt;
    a->last = t;
}

static void set_eff(zs_foldacct *a, zs_foldacct_stream *q, uint8_t eff)
{
    a->ncomp += (eff & 1) - (q->eff & 1);
    a->ncomm += (eff >> 1 & 1) - (q->eff >> 1 & 1);
    q->eff = eff;
}

static int stepping(const zs_foldacct_stream *q)
{
    return (q->asleep && q->plen * q->scale >= MIN_PERIOD) || q->tail;
}

/* When the replay of q changes next (the period wraps after its last change). */
static double next_change(const zs_foldacct_stream *q)
{
    if (q->tail)
        return q->tail0 + q->tl[q->tidx].t;
    if (q->pidx < q->npat)
        return q->cyc + q->pat[q->pidx].t * q->scale;
    return q->cyc + q->plen * q->scale;
}

static uint8_t counted(const zs_foldacct_stream *q)
{
    return (uint8_t)(q->state | (q->asleep ? q->vstate : q->tail ? q->tstate : 0));
}

/* Integrates up to now through the replayed changes, earliest first. */
static void bring_to(zs_foldacct *a, zs_rank_result *r, double now)
{
    /* tnext > now: every replayed change comes after now (no replay moved
     * since the scan that found tnext), so the scan would find none. */
    while ((a->nasleep > 0 || a->ntail > 0) && !(a->tnext > now)) {
        zs_foldacct_stream *best = NULL;
        double tb = now, tmin = INFINITY;
        int nst = a->nst > 0 && a->nst < ZS_MAX_STREAMS ? a->nst : ZS_MAX_STREAMS;
        for (int s = 0; s < nst; s++) {
            zs_foldacct_stream *q = &a->st[s];
            if (!stepping(q))
                continue;
            double t = next_change(q);
            tmin = t < tmin ? t : tmin;
            if (t <= tb && (!best || t < tb)) {
                best = q;
                tb = t;
            }
        }
        if (!best) {
            a->tnext = tmin; /* all after now */
            break;
        }
        integrate(a, r, tb);
        if (best->tail) {
            best->tstate = best->tl[best->tidx++].state;
            if (best->tidx == best->ntl) {
                best->tail = 0;
                a->ntail--;
            }
        } else if (best->pidx < best->npat) {
            best->vstate = best->pat[best->pidx++].state;
        } else { /* the next repetition */
            best->cyc = tb;
            best->pidx = 0;
            best->vstate = best->pstate0;
        }
        set_eff(a, best, counted(best));
    }
    integrate(a, r, now);
}

/* Doubles q's full log ring (or makes one of 16 lines), its changes in
 * order from lh on; ZS_ENOMEM (and a->failed) when it cannot. */
static int log_grow(zs_foldacct *a, zs_foldacct_stream *q)
{
    int ol = q->caplog / ZS_FACCT_PER_LINE, nl = ol ? ol * 2 : 16;
    zs_foldacct_line *v =
        zs_pool_realloc(a->pool, q->log, sizeof *v * (size_t)ol, sizeof *v * (size_t)nl);
    if (!v) {
        a->failed = 1;
        return ZS_ENOMEM;
    }
    /* Full: the changes run from lh to the end, then from 0 to lh; the
     * part from 0 goes after the end, where the doubled ring has it. */
    int oc = q->caplog;
    for (int j = 0; j < q->lh; j++) {
        int d = j + oc;
        v[d / ZS_FACCT_PER_LINE].t[d % ZS_FACCT_PER_LINE] =
            v[j / ZS_FACCT_PER_LINE].t[j % ZS_FACCT_PER_LINE];
        v[d / ZS_FACCT_PER_LINE].state[d % ZS_FACCT_PER_LINE] =
            v[j / ZS_FACCT_PER_LINE].state[j % ZS_FACCT_PER_LINE];
    }
    q->log = v;
    q->caplog = nl * ZS_FACCT_PER_LINE;
    return ZS_OK;
}

/* Writes the last change to the log, where it is kept from now on too
 * (lpend stays: later changes at its time still merge into it here). */
static void log_flush(zs_foldacct_stream *q)
{
    if (!q->lpend)
        return;
    int k;
    zs_foldacct_line *l = zs_foldacct_log_at(q, q->nlog - 1, &k);
    l->t[k] = q->lt;
    l->state[k] = q->lst;
}

/* Logs q's change to q->state at now (from `prev`). A state that lasted no
 * time changes nothing that is integrated (the split only counts what
 * holds over an interval), so a change at the time of the last one
 * replaces it, or cancels it when it returns to the state before: a
 * stream whose ops run back to back logs nothing, and the replay is the
 * same. */
static void log_state(zs_foldacct *a, zs_foldacct_stream *q, double now, uint8_t prev)
{
    if (!q->nb)
        return; /* no boundary seen: nothing to replay from yet */
    /* lok: the last change, at lt, is still here (lpend) */
    if (q->lok && q->lt == now) {
        if (q->state == q->lprev) {
            q->nlog--;
            q->lok = 0; /* the one before is not known here: no merging into it */
            q->lpend = 0;
        } else {
            q->lst = q->state;
        }
        return;
    }
    if (q->nlog >= LOG_CAP) { /* it left the folding segments: forget */
        q->nlog = q->bi[0] = q->bi[1] = q->nb = 0;
        q->lok = q->lpend = 0;
        return;
    }
    log_flush(q);
    if (q->nlog == q->caplog && log_grow(a, q))
        return;
    q->nlog++;
    q->lpend = 1;
    q->lst = q->state;
    q->lok = 1;
    q->lt = now;
    q->lprev = prev;
}

void zs_foldacct_change(zs_foldacct *a, zs_rank_result *r, int stream, double now, int dcompute,
                        int dcomm)
{
    if (stream < 0 || stream >= ZS_MAX_STREAMS)
        stream = 0;
    bring_to(a, r, now);
    zs_foldacct_stream *q = &a->st[stream];
    if (q->asleep) { /* a sleeping stream starts nothing: only ops it had in flight
                      * change, and the replay stands for them */
        uint8_t g0 = (uint8_t)((q->gcomp > 0) | (q->gcomm > 0) << 1);
        q->gcomp += dcompute;
        q->gcomm += dcomm;
        uint8_t g1 = (uint8_t)((q->gcomp > 0) | (q->gcomm > 0) << 1);
        if (g1 != g0) { /* the tail to replay after the wake */
            if (q->ntl == q->captl) {
                int nc = q->captl ? q->captl * 2 : 8;
                zs_foldacct_ev *v = zs_pool_realloc(a->pool, q->tl, sizeof *v * (size_t)q->captl,
                                                    sizeof *v * (size_t)nc);
                if (!v) {
                    a->failed = 1;
                    return;
                }
                q->tl = v;
                q->captl = nc;
            }
            q->tl[q->ntl++] = (zs_foldacct_ev){now - q->fell, g1};
        }
        return;
    }
    if (dcompute < 0 && q->gcomp > 0) { /* ends of ops the replay stood for */
        q->gcomp += dcompute;
        dcompute = 0;
    }
    if (dcomm < 0 && q->gcomm > 0) {
        q->gcomm += dcomm;
        dcomm = 0;
    }
    q->comp += dcompute;
    q->comm += dcomm;
    uint8_t st = state_of(q);
    if (st == q->state)
        return;
    uint8_t prev = q->state;
    q->state = st;
    log_state(a, q, now, prev);
    set_eff(a, q, counted(q));
}

void zs_foldacct_boundary(zs_foldacct *a, zs_rank_result *r, int stream, double now)
{
    bring_to(a, r, now);
    zs_foldacct_stream *q = &a->st[stream];
    if (!q->caplog && log_grow(a, q)) /* logging starts at the first boundary */
        return;
    log_flush(q);
    q->lpend = 0; /* no merging across the boundary (lok below) */
    /* Keep the changes since the oldest boundary kept after this one. */
    int drop = q->bi[1];
    q->lh += drop;
    q->lh -= q->lh >= q->caplog ? q->caplog : 0;
    q->nlog -= drop;
    for (int k = 0; k + 1 < ZS_FACCT_NB; k++) {
        q->b[k] = q->b[k + 1];
        q->bstate[k] = q->bstate[k + 1];
        q->bi[k] = q->bi[k + 1] - drop;
    }
    q->b[ZS_FACCT_NB - 1] = now;
    q->bi[ZS_FACCT_NB - 1] = q->nlog;
    q->lok = 0; /* what came before the boundary is not merged into */
    q->bstate[ZS_FACCT_NB - 1] = q->state;
    q->nb++;
}

void zs_foldacct_sleep(zs_foldacct *a, zs_rank_result *r, int stream, double now, double period,
                       int back)
{
    bring_to(a, r, now);
    zs_foldacct_stream *q = &a->st[stream];
    /* The pattern: its changes over the period `back` periods before its
     * last one (boundaries i0 to i1). */
    back = back < 0 ? 0 : back > ZS_FACCT_NB - 2 ? ZS_FACCT_NB - 2 : back;
    int i1 = ZS_FACCT_NB - 1 - back, i0 = i1 - 1, have = q->nb >= back + 2;
    double plen = have ? q->b[i1] - q->b[i0] : 0; /* 0: hold its state */
    int n = have ? q->bi[i1] - q->bi[i0] : 0;
    log_flush(q);
    if (n > q->cappat) {
        zs_foldacct_ev *v =
            zs_pool_realloc(a->pool, q->pat, sizeof *v * (size_t)q->cappat, sizeof *v * (size_t)n);
        if (!v) {
            a->failed = 1;
            n = 0;
        } else {
            q->pat = v;
            q->cappat = n;
        }
    }
    for (int i = 0; i < n; i++) {
        int k;
        const zs_foldacct_line *l = zs_foldacct_log_at(q, q->bi[i0] + i, &k);
        q->pat[i] = (zs_foldacct_ev){l->t[k] - q->b[i0], l->state[k]};
    }
    q->npat = n;
    q->pstate0 = have ? q->bstate[i0] : q->state;
    q->plen = plen > 0 ? plen : 0;
    q->scale = plen > 0 && period > 0 ? period / plen : 0;
    /* Where in the period `now` is, counted from the period's end boundary
     * (the repetition that boundary starts; back 0: now itself). */
    double len = q->plen * q->scale;
    q->cyc = have ? q->b[i1] : now;
    if (len >= MIN_PERIOD)
        while (q->cyc + len <= now)
            q->cyc += len;
    q->pidx = 0;
    /* What it has in flight is part of the period replayed. */
    q->gcomp += q->comp;
    q->gcomm += q->comm;
    q->comp = q->comm = 0;
    q->state = 0;
    q->gstate0 = (uint8_t)((q->gcomp > 0) | (q->gcomm > 0) << 1);
    q->ntl = 0;
    a->ntail -= q->tail;
    q->tail = 0;
    q->fell = now;
    if (!q->asleep) {
        q->asleep = 1;
        a->nasleep++;
    }
    q->vstate = q->pstate0;
    while (len >= MIN_PERIOD && q->pidx < q->npat && q->cyc + q->pat[q->pidx].t * q->scale <= now)
        q->vstate = q->pat[q->pidx++].state;
    set_eff(a, q, q->vstate);
    a->tnext = -INFINITY; /* a new replay: scan again */
}

void zs_foldacct_wake(zs_foldacct *a, zs_rank_result *r, int stream, double now)
{
    bring_to(a, r, now);
    zs_foldacct_stream *q = &a->st[stream];
    if (q->asleep) {
        q->asleep = 0;
        a->nasleep--;
        /* The last skipped iteration's ops in flight, as the ghosts went. */
        q->tail = q->ntl > 0; /* the ghosts' ends seen during the sleep */
        q->tstate = q->tail ? q->gstate0 : 0;
        q->tail0 = now;
        q->tidx = 0;
        a->ntail += q->tail;
        a->tnext = -INFINITY; /* a new tail: scan again */
    }
    set_eff(a, q, counted(q));
}

void zs_foldacct_close(zs_foldacct *a, zs_rank_result *r, double end)
{
    bring_to(a, r, end);
}

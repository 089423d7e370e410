/* The experiment runner: see zs_runner.h.
 *
 * The loop, in phases (one function each):
 *   1. select_points: the points of this shard whose key the database
 *      lacks (each configuration once, even when two points share it);
 *   2. start_points: keep up to `jobs` points running, each claimed in the
 *      database first (claim_next: a point another runner stored or holds
 *      is passed over, so two runners on one spec share the work) and run
 *      in its own child process (zs_fork.h: the child runs the point and
 *      sends back a plain-data message; children die with the parent, so a
 *      killed run leaves no orphans behind);
 *   3. store_answer: store each result as it arrives (the parent is the
 *      only writer of its results; storing drops the claim) while serve
 *      starts the next point;
 *   4. on an error, kill the children still running; release the claims. */
#include "zs_fork.h"
#include "zs_intr.h"
#include "zs_progress.h"
#include "zs_runner.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void zs_runner_opts_init(zs_runner_opts *o)
{
    memset(o, 0, sizeof *o);
    o->jobs = 1;
    o->shard_i = 1;
    o->shard_n = 1;
    o->timeline_dir = "";
}

/* What a worker sends back for one point. */
typedef struct msg {
    int idx;
    int rc;
    zs_err err;
    zs_point_result r; /* r.last is NULL */
    char backend_notes[1024];
    char slowest_why[256];
} msg;

typedef struct task {
    const zs_spec *s;
    const zs_runner_opts *o;
    int idx;
} task;

/* Runs in the child: one point; its failure is part of the message. */
static int worker(void *arg, zs_fork_buf *out, zs_err *e)
{
    const task *t = arg;
    const zs_spec *s = t->s;
    int idx = t->idx;
    zs_point_cfg cfg = s->points[idx].cfg;
    if (cfg.timeline[0] && cfg.timeline[0] != '/' && t->o->timeline_dir[0])
        snprintf(cfg.timeline, sizeof cfg.timeline, "%s/%s", t->o->timeline_dir,
                 s->points[idx].cfg.timeline);
    msg *m = calloc(1, sizeof *m);
    if (!m)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    m->idx = idx;
    zs_err_clear(&m->err);
    m->rc = zs_point_run(&cfg, NULL, NULL, &m->r, &m->err);
    if (m->r.last) {
        snprintf(m->backend_notes, sizeof m->backend_notes, "%s", m->r.last->notes);
        snprintf(m->slowest_why, sizeof m->slowest_why, "%s", m->r.last->slowest_why);
        zs_result_free(m->r.last);
        m->r.last = NULL;
    }
    int rc = zs_fork_buf_add(out, m, sizeof *m, e);
    free(m);
    return rc;
}

typedef struct slot {
    zs_child ch;
    int busy; /* point index or -1 */
    int item; /* its place in the run's todo list (and items) */
} slot;

/* Starts point idx in slot sl. */
static int start_point(const zs_spec *s, const zs_runner_opts *o, slot *sl, int idx, zs_err *e)
{
    task t = {s, o, idx};
    char what[64];
    snprintf(what, sizeof what, "point %d", idx);
    int rc = zs_child_start(&sl->ch, what, worker, &t, e);
    sl->busy = rc ? -1 : idx;
    return rc;
}

/* The answer of the child in sl: 1 with *m filled, 0 when the child died
 * (its error in ce). */
static int collect(slot *sl, msg *m, zs_err *ce)
{
    zs_fork_buf b = {0};
    size_t pos = 0;
    int rc = zs_child_finish(&sl->ch, &b, NULL, ce);
    int ok = rc == ZS_OK && b.n == sizeof *m && !zs_fork_buf_get(&b, &pos, m, sizeof *m) &&
             m->idx == sl->busy;
    if (rc == ZS_OK && !ok)
        zs_err_set(ce, ZS_ERUNTIME, sl->ch.what, NULL, "the worker process sent a bad message");
    zs_fork_buf_free(&b);
    return ok;
}

/* Errors that the same configuration would give again: stored, so a
 * resumed run does not retry them (--retry-failed does). */
static int deterministic(int rc)
{
    return rc == ZS_EINPUT || rc == ZS_EUSAGE || rc == ZS_EINVALID || rc == ZS_EUNSUPPORTED;
}

typedef struct keyed {
    char *key;
    int idx;
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* One run of a spec: what the phases share. */
typedef struct run {
    const zs_spec *s;
    zs_db *db;
    const zs_runner_opts *o;
    zs_runner_stats *st;
    zs_err *e;
    double t0;
    int *todo; /* point indices to run, in spec order */
    /* todo's a-priori costs and start / end times, for the time left
     * (zs_progress_eta; cost 0: run by another runner) */
    zs_eta_item *items;
    zs_progress pg;
    int ntodo, next, done, running;
    slot *slots;
    int nslots;
    msg *m;
    zs_db_row *row;
    long stored; /* of this shard's points, in the database: for an interrupt's line */
} run;

/* Progress on stderr (zs_progress.h): on a terminal one line in place
 * with a bar; off it (a Slurm or CI log) a line after the first and the
 * last point and at most one every 10 s between; the time left weighs
 * each point by its a-priori cost (zs_point_cost_hint), so a spec whose
 * cheap points come first is not promised a quick end. */
static void progress(run *r)
{
    zs_progress *pg = &r->pg;
    if (!pg->f)
        return;
    double now = zs_progress_now();
    int done = r->done, total = r->ntodo - r->st->elsewhere;
    char st[160], bar[31];
    int w = total ? done * 30 / total : 30;
    for (int i = 0; i < 30; i++)
        bar[i] = i < w ? '#' : '.';
    bar[30] = '\0';
    snprintf(st, sizeof st, "%s%s%s%d/%d points, %d failed", pg->tty ? "[" : "", pg->tty ? bar : "",
             pg->tty ? "] " : "", done, total, r->st->failed);
    double left = done < total ? zs_progress_eta(r->items, r->ntodo, r->nslots, now) : -1;
    zs_progress_report_left(pg, now, left, done <= 1 || done >= total, st);
}

static void note_failure(run *r, int idx, const char *why)
{
    const zs_spec_point *p = &r->s->points[idx];
    if (!r->st->first_error[0])
        snprintf(r->st->first_error, sizeof r->st->first_error, "point %d (%s, %s): %s", idx,
                 r->s->cases[p->case_idx].label, r->s->series[p->series_idx].label, why);
}

/* 1. select: the points of this shard whose key the database lacks, each
 * configuration once even when two points share it. */
static int select_points(run *r)
{
    const zs_spec *s = r->s;
    keyed *keys = calloc((size_t)s->npoints + 1, sizeof *keys);
    r->todo = calloc((size_t)s->npoints + 1, sizeof *r->todo);
    int nkeys = 0, rc = ZS_OK;
    if (!keys || !r->todo)
        rc = zs_err_set(r->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < s->npoints && !rc; i++) {
        if (i % r->o->shard_n != r->o->shard_i - 1)
            continue;
        r->st->in_shard++;
        char k[4096];
        if ((rc = zs_db_key(&s->points[i].cfg, k, sizeof k, r->e)))
            break;
        keys[nkeys].idx = i;
        if (!(keys[nkeys++].key = strdup(k)))
            rc = zs_err_set(r->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    if (!rc)
        qsort(keys, (size_t)nkeys, sizeof *keys, keyed_cmp);
    for (int j = 0; j < nkeys && !rc; j++) {
        if (j > 0 && !strcmp(keys[j].key, keys[j - 1].key)) {
            r->st->duplicates++;
            continue;
        }
        int found = 0, ok = 0;
        if ((rc = zs_db_has(r->db, keys[j].key, &found, &ok, r->e)))
            break;
        if (found && (ok || !r->o->retry_failed))
            r->st->stored_before++;
        else
            r->todo[r->ntodo++] = keys[j].idx;
    }
    /* run in spec order (the sort above was by key) */
    if (!rc)
        qsort(r->todo, (size_t)r->ntodo, sizeof *r->todo, int_cmp);
    if (!rc && !(r->items = calloc((size_t)r->ntodo + 1, sizeof *r->items)))
        rc = zs_err_set(r->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int j = 0; j < r->ntodo && !rc; j++)
        r->items[j] = (zs_eta_item){zs_point_cost_hint(&s->points[r->todo[j]].cfg), -1, -1};
    for (int j = 0; j < nkeys; j++)
        free(keys[j].key);
    free(keys);
    return rc;
}

/* The next point this process claims in the database (*idx, -1 when none
 * is left): a point another runner stored or holds is passed over, so two
 * runners on one spec share the work. */
static int claim_next(run *r, int *idx)
{
    *idx = -1;
    while (r->next < r->ntodo) {
        int cand = r->todo[r->next++];
        char key[4096];
        zs_db_claim_result got;
        int rc;
        if ((rc = zs_db_key(&r->s->points[cand].cfg, key, sizeof key, r->e)) ||
            (rc = zs_db_claim(r->db, key, r->o->retry_failed, &got, r->e)))
            return rc;
        if (got == ZS_DB_CLAIMED) {
            *idx = cand;
            return ZS_OK;
        }
        r->st->elsewhere++;
        r->items[r->next - 1].cost = 0; /* not this runner's to wait for */
    }
    return ZS_OK;
}

static int unclaim(run *r, int idx)
{
    char key[4096];
    int rc = zs_db_key(&r->s->points[idx].cfg, key, sizeof key, r->e);
    return rc ? rc : zs_db_unclaim(r->db, key, r->e);
}

/* 2. start: a claimed point in every free slot, at most `jobs` running. */
static int start_points(run *r)
{
    for (int w = 0; w < r->nslots && r->next < r->ntodo; w++) {
        if (r->slots[w].busy >= 0)
            continue;
        int idx, rc;
        if ((rc = claim_next(r, &idx)) || idx < 0)
            return rc;
        zs_err fe;
        if (start_point(r->s, r->o, &r->slots[w], idx, &fe)) {
            r->next--; /* tried again on the next round */
            if ((rc = unclaim(r, idx)))
                return rc;
            if (r->running == 0) /* nothing runs that could free resources */
                return zs_err_set(r->e, ZS_ERUNTIME, "fork", "free some processes or memory",
                                  "cannot start worker processes: %s", fe.what);
            return ZS_OK;
        }
        r->slots[w].item = r->next - 1;
        r->items[r->next - 1].start = zs_progress_now();
        r->running++;
    }
    return ZS_OK;
}

/* 3. store: the answer of the child in sl is stored (a failure only when
 * the same configuration would fail again), which drops the point's claim;
 * a point not stored is released for a later run. */
static int store_answer(run *r, slot *sl)
{
    zs_err ce;
    int got = collect(sl, r->m, &ce), idx = sl->busy, rc;
    sl->busy = -1;
    r->running--;
    r->done++;
    r->items[sl->item].end = zs_progress_now();
    char key[4096];
    if ((rc = zs_db_key(&r->s->points[idx].cfg, key, sizeof key, r->e)))
        return rc;
    if (!got) {
        /* the worker died mid-point: a crash, not a property of the
         * configuration, so nothing is stored */
        char why[700];
        snprintf(why, sizeof why, "the worker process died: %s", ce.what);
        r->st->failed++;
        note_failure(r, idx, why);
        progress(r);
        return zs_db_unclaim(r->db, key, r->e);
    }
    const msg *m = r->m;
    zs_db_row *row = r->row;
    memset(row, 0, sizeof *row);
    row->ok = m->rc == ZS_OK;
    row->r = m->r;
    snprintf(row->backend_notes, sizeof row->backend_notes, "%s", m->backend_notes);
    snprintf(row->slowest_why, sizeof row->slowest_why, "%s", m->slowest_why);
    if (r->s->baseline >= 0) { /* the points view's speedup is over it */
        int b = r->s->points[idx].case_idx * r->s->nseries + r->s->baseline;
        if ((rc = zs_db_key(&r->s->points[b].cfg, row->baseline_key, sizeof row->baseline_key,
                            r->e)))
            return rc;
    }
    if (!row->ok) {
        r->st->failed++;
        snprintf(row->error, sizeof row->error, "%s%s%s%s%s", m->err.what,
                 m->err.where[0] ? ": " : "", m->err.where, m->err.fix[0] ? ": " : "", m->err.fix);
        note_failure(r, idx, row->error);
    } else {
        r->st->ran++;
    }
    if (row->ok || deterministic(m->rc)) {
        rc = zs_db_put(r->db, key, r->s->name, &r->s->points[idx].cfg, row, r->o->retry_failed,
                       r->e);
        if (!rc)
            zs_intr_points_stored(++r->stored);
    } else
        rc = zs_db_unclaim(r->db, key, r->e);
    progress(r);
    return rc;
}

/* 2. - 3. keep up to `jobs` points running and store each answer as it
 * arrives (this process is the only writer of its results). */
static int serve(run *r)
{
    int rc = ZS_OK;
    FILE *f = r->o->progress;
    zs_progress_init(&r->pg, f, f && isatty(fileno(f)), "experiment", r->t0);
    progress(r);
    while (rc == ZS_OK && ((rc = start_points(r)) == ZS_OK) && r->running > 0) {
        struct pollfd pf[256];
        int map[256], np = 0;
        for (int w = 0; w < r->nslots && np < 256; w++)
            if (r->slots[w].busy >= 0) {
                pf[np] = (struct pollfd){r->slots[w].ch.fd, POLLIN, 0};
                map[np++] = w;
            }
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = zs_err_set(r->e, ZS_ERUNTIME, "poll", NULL, "waiting for workers: %s",
                            strerror(errno));
            break;
        }
        for (int k = 0; k < np && rc == ZS_OK; k++)
            if (pf[k].revents)
                rc = store_answer(r, &r->slots[map[k]]);
    }
    zs_progress_end(&r->pg);
    return rc;
}

int zs_runner_run(const zs_spec *s, zs_db *db, const zs_runner_opts *o, zs_runner_stats *st,
                  zs_err *e)
{
    memset(st, 0, sizeof *st);
    run r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.db = db;
    r.o = o;
    r.st = st;
    r.e = e;
    r.t0 = zs_progress_now();
    st->points = s->npoints;
    int rc = select_points(&r);
    /* an interrupt from here on says how much is stored (the rest resumes) */
    r.stored = st->stored_before;
    if (!rc)
        zs_intr_points(r.stored, (long)st->in_shard - st->duplicates);
    if (!rc && r.ntodo > 0) {
        if (o->timeline_dir[0])
            mkdir(o->timeline_dir, 0777);
        r.nslots = o->jobs < r.ntodo ? o->jobs : r.ntodo;
        r.slots = calloc((size_t)r.nslots, sizeof *r.slots);
        r.m = calloc(1, sizeof *r.m);
        r.row = calloc(1, sizeof *r.row);
        if (!r.slots || !r.m || !r.row)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        for (int w = 0; r.slots && w < r.nslots; w++)
            r.slots[w].busy = -1;
        if (!rc)
            rc = serve(&r);
        /* 4. on an error, stop what still runs; no claim is left behind */
        for (int w = 0; r.slots && w < r.nslots; w++)
            if (r.slots[w].busy >= 0)
                zs_child_kill(&r.slots[w].ch);
        zs_err ignored;
        int rel = zs_db_release_claims(db, rc ? &ignored : e);
        if (!rc)
            rc = rel;
    }
    free(r.m);
    free(r.row);
    free(r.todo);
    free(r.items);
    free(r.slots);
    st->wall_s = zs_progress_now() - r.t0;
    return rc;
}

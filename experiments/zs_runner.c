/* The experiment runner: see zs_runner.h.
 *
 * The loop, in phases:
 *   1. select: the points of this shard whose key the database lacks
 *      (each configuration once, even when two points share it);
 *   2. keep up to `jobs` points running, each in its own child process
 *      (zs_fork.h: the child runs the point and sends back a plain-data
 *      message; children die with the parent, so a killed run leaves no
 *      orphans behind);
 *   3. wait for any child's answer; store each result as it arrives (the
 *      parent is the only database writer) and start the next point;
 *   4. on an error, kill the children still running. */
#include "zs_fork.h"
#include "zs_runner.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void zs_runner_opts_init(zs_runner_opts *o)
{
    memset(o, 0, sizeof *o);
    o->jobs = 1;
    o->shard_i = 1;
    o->shard_n = 1;
    o->timeline_dir = "";
}

int zs_runner_parse_shard(const char *s, int *i, int *n, zs_err *e)
{
    char *end;
    long a = strtol(s, &end, 10), b = 0;
    int ok = end != s && *end == '/';
    if (ok) {
        const char *p = end + 1;
        b = strtol(p, &end, 10);
        ok = end != p && !*end && b >= 1 && b <= 1000000 && a >= 1 && a <= b;
    }
    if (!ok)
        return zs_err_set(e, ZS_EUSAGE, "--shard", "give i/n with 1 <= i <= n, e.g. --shard 2/4",
                          "bad shard '%s'", s);
    *i = (int)a;
    *n = (int)b;
    return ZS_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
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

static void fmt_dur(double s, char *buf, size_t n)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

/* Off a terminal (a Slurm or CI log) whole lines: after the first and
 * the last point, and at most one every 10 s between. One run per
 * process, so the time of the last line can be a static. */
static void progress_line(FILE *f, int done, int total, int failed, double t0)
{
    static double last = -1e9;
    double now = now_s(), dt = now - t0;
    if (!(done <= 1 || done == total || now - last >= 10))
        return;
    last = now;
    char el[32], eta[48] = "";
    fmt_dur(dt, el, sizeof el);
    if (done > 0 && done < total && dt >= 2) {
        char left[32];
        fmt_dur(dt / done * (total - done), left, sizeof left);
        snprintf(eta, sizeof eta, ", about %s left", left);
    }
    fprintf(f, "experiment: %d/%d points, %d failed; %s elapsed%s\n", done, total, failed, el, eta);
    fflush(f);
}

static void progress(FILE *f, int done, int total, int failed, double t0)
{
    if (!f)
        return;
    if (!isatty(fileno(f))) {
        progress_line(f, done, total, failed, t0);
        return;
    }
    char bar[31], el[32], eta[32] = "?";
    int w = total ? done * 30 / total : 30;
    for (int i = 0; i < 30; i++)
        bar[i] = i < w ? '#' : '.';
    bar[30] = '\0';
    double dt = now_s() - t0;
    fmt_dur(dt, el, sizeof el);
    if (done > 0)
        fmt_dur(dt / done * (total - done), eta, sizeof eta);
    fprintf(f, "\r[%s] %d/%d points, %d failed, %s elapsed, ETA %s   ", bar, done, total, failed,
            el, eta);
    if (done == total)
        fputc('\n', f);
    fflush(f);
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

int zs_runner_run(const zs_spec *s, zs_db *db, const zs_runner_opts *o, zs_runner_stats *st,
                  zs_err *e)
{
    memset(st, 0, sizeof *st);
    double t0 = now_s();
    st->points = s->npoints;
    int rc = ZS_OK;
    keyed *keys = calloc((size_t)s->npoints + 1, sizeof *keys);
    int *todo = calloc((size_t)s->npoints + 1, sizeof *todo);
    slot *slots = NULL;
    int nkeys = 0, ntodo = 0, nslots = 0;
    if (!keys || !todo) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }

    /* 1. select */
    for (int i = 0; i < s->npoints; i++) {
        if (i % o->shard_n != o->shard_i - 1)
            continue;
        st->in_shard++;
        char k[4096];
        if ((rc = zs_db_key(&s->points[i].cfg, k, sizeof k, e)))
            goto out;
        keys[nkeys].key = strdup(k);
        keys[nkeys].idx = i;
        if (!keys[nkeys++].key) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
            goto out;
        }
    }
    qsort(keys, (size_t)nkeys, sizeof *keys, keyed_cmp);
    for (int j = 0; j < nkeys; j++) {
        if (j > 0 && !strcmp(keys[j].key, keys[j - 1].key)) {
            st->duplicates++;
            continue;
        }
        int found = 0, ok = 0;
        if ((rc = zs_db_has(db, keys[j].key, &found, &ok, e)))
            goto out;
        if (found && (ok || !o->retry_failed))
            st->stored_before++;
        else
            todo[ntodo++] = keys[j].idx;
    }
    /* run in spec order (the sort above was by key) */
    qsort(todo, (size_t)ntodo, sizeof *todo, int_cmp);
    if (ntodo == 0)
        goto out;
    if (o->timeline_dir[0])
        mkdir(o->timeline_dir, 0777);

    /* 2. - 3. run the points, at most `jobs` at a time; store results */
    nslots = o->jobs < ntodo ? o->jobs : ntodo;
    slots = calloc((size_t)nslots, sizeof *slots);
    msg *m = calloc(1, sizeof *m);
    zs_db_row *row = calloc(1, sizeof *row);
    if (!slots || !m || !row) {
        free(m);
        free(row);
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int w = 0; w < nslots; w++)
        slots[w].busy = -1;
    int next = 0, done = 0, running = 0;
    progress(o->progress, 0, ntodo, 0, t0);
    while (rc == ZS_OK && (next < ntodo || running > 0)) {
        for (int w = 0; w < nslots && next < ntodo; w++) {
            if (slots[w].busy >= 0)
                continue;
            zs_err fe;
            if (start_point(s, o, &slots[w], todo[next], &fe)) {
                if (running == 0) /* nothing runs that could free resources */
                    rc = zs_err_set(e, ZS_ERUNTIME, "fork", "free some processes or memory",
                                    "cannot start worker processes: %s", fe.what);
                break;
            }
            next++;
            running++;
        }
        if (rc)
            break;
        struct pollfd pf[256];
        int map[256], np = 0;
        for (int w = 0; w < nslots && np < 256; w++)
            if (slots[w].busy >= 0) {
                pf[np] = (struct pollfd){slots[w].ch.fd, POLLIN, 0};
                map[np++] = w;
            }
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = zs_err_set(e, ZS_ERUNTIME, "poll", NULL, "waiting for workers: %s",
                            strerror(errno));
            break;
        }
        for (int k = 0; k < np && rc == ZS_OK; k++) {
            if (!pf[k].revents)
                continue;
            slot *sl = &slots[map[k]];
            const zs_spec_point *p = &s->points[sl->busy];
            zs_err ce;
            int got = collect(sl, m, &ce);
            int idx = sl->busy;
            sl->busy = -1;
            running--;
            done++;
            char key[4096];
            if ((rc = zs_db_key(&p->cfg, key, sizeof key, e)))
                break;
            if (!got) {
                /* the worker died mid-point: a crash, not a property of the
                 * configuration, so nothing is stored */
                st->failed++;
                if (!st->first_error[0])
                    snprintf(st->first_error, sizeof st->first_error,
                             "point %d (%s, %s): the worker process died: %s", idx,
                             s->cases[p->case_idx].label, s->series[p->series_idx].label, ce.what);
                progress(o->progress, done, ntodo, st->failed, t0);
                continue;
            }
            memset(row, 0, sizeof *row);
            row->ok = m->rc == ZS_OK;
            row->r = m->r;
            snprintf(row->backend_notes, sizeof row->backend_notes, "%s", m->backend_notes);
            snprintf(row->slowest_why, sizeof row->slowest_why, "%s", m->slowest_why);
            if (!row->ok) {
                st->failed++;
                snprintf(row->error, sizeof row->error, "%s%s%s%s%s", m->err.what,
                         m->err.where[0] ? ": " : "", m->err.where, m->err.fix[0] ? ": " : "",
                         m->err.fix);
                if (!st->first_error[0])
                    snprintf(st->first_error, sizeof st->first_error, "point %d (%s, %s): %s", idx,
                             s->cases[p->case_idx].label, s->series[p->series_idx].label,
                             row->error);
            } else {
                st->ran++;
            }
            if (row->ok || deterministic(m->rc))
                rc = zs_db_put(db, key, s->name, &p->cfg, row, o->retry_failed, e);
            progress(o->progress, done, ntodo, st->failed, t0);
        }
    }
    free(m);
    free(row);

    /* 4. on an error, stop what still runs */
    for (int w = 0; w < nslots; w++)
        if (slots[w].busy >= 0)
            zs_child_kill(&slots[w].ch);
out:
    for (int j = 0; j < nkeys; j++)
        free(keys[j].key);
    free(keys);
    free(todo);
    free(slots);
    st->wall_s = now_s() - t0;
    return rc;
}

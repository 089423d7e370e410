/* The iteration workers: see zs_workers.h. */
#include "zs_workers.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_fork.h"
#include "zs_point_advice.h"

enum { MAX_JOBS = 64 };

/* What the parent keeps per point besides its zs_work_point. */
typedef struct held {
    int added;     /* iterations added to the sums, in order */
    int failed_at; /* the earliest failed iteration (-1: none) */
    zs_point_acc acc;
    zs_point_iter *q; /* ZS_WORKERS_WINDOW records, slot k % ZS_WORKERS_WINDOW */
    char have[ZS_WORKERS_WINDOW];
    zs_result *last; /* the last iteration's result (want_last) */
} held;

typedef struct task {
    const zs_point_cfg *cfg;
    int it, want;
} task;

/* In the worker: one iteration, its record, and its result when wanted. */
static int worker(void *arg, zs_fork_buf *out, zs_err *e)
{
    const task *t = arg;
    zs_point_iter q;
    zs_result *r = NULL;
    int rc = zs_point_run_iter(t->cfg, t->it, &q, t->want ? &r : NULL, e);
    char advice[512];
    if (rc != ZS_OK && zs_point_advice(t->cfg, advice, sizeof advice))
        snprintf(e->fix, sizeof e->fix, "%s", advice);
    if (rc == ZS_OK)
        rc = zs_fork_buf_add(out, &q, sizeof q, e);
    if (rc == ZS_OK && r)
        rc = zs_result_pack(r, out, e);
    zs_result_free(r);
    return rc;
}

typedef struct slot {
    zs_child ch;
    int point, it, want;
} slot;

/* The worker's answer: its status, with the record in *q and the result
 * in *r when it sent one. */
static int collect(slot *sl, zs_point_iter *q, zs_result **r, zs_err *e)
{
    zs_fork_buf b = {0};
    size_t pos = 0;
    *r = NULL;
    int rc = zs_child_finish(&sl->ch, &b, NULL, e);
    if (rc == ZS_OK) {
        int ok = !zs_fork_buf_get(&b, &pos, q, sizeof *q);
        if (ok && sl->want)
            ok = (*r = zs_result_unpack(&b, &pos)) != NULL;
        if (!ok || pos != b.n) {
            zs_result_free(*r);
            *r = NULL;
            rc = zs_err_set(e, ZS_ERUNTIME, sl->ch.what, NULL,
                            "the worker process sent a bad message (or out of memory)");
        }
    }
    zs_fork_buf_free(&b);
    return rc;
}

/* Adds the records that are next in order. */
static void drain(zs_work_point *p, held *h)
{
    while (h->have[h->added % ZS_WORKERS_WINDOW]) {
        const zs_point_iter *q = &h->q[h->added % ZS_WORKERS_WINDOW];
        zs_point_add(&h->acc, q, &p->r);
        if (h->added == p->cfg.iterations - 1) {
            p->tl_bytes = q->tl_bytes;
            snprintf(p->tl_subset, sizeof p->tl_subset, "%s", q->tl_subset);
        }
        h->have[h->added % ZS_WORKERS_WINDOW] = 0;
        h->added++;
    }
}

/* Iteration `it` of point p came back (rc, with *e on failure); 1 when
 * the point is finished. Takes r. */
static int take(zs_work_point *p, held *h, int it, int rc, const zs_err *e, const zs_point_iter *q,
                zs_result *r)
{
    p->running--;
    p->done++;
    if (rc != ZS_OK) {
        if (h->failed_at < 0 || it < h->failed_at) {
            h->failed_at = it;
            p->rc = rc;
            p->err = *e;
        }
    } else if (h->failed_at < 0) {
        h->q[it % ZS_WORKERS_WINDOW] = *q;
        h->have[it % ZS_WORKERS_WINDOW] = 1;
        if (r) {
            zs_result_free(h->last);
            h->last = r;
            r = NULL;
        }
        drain(p, h);
    }
    zs_result_free(r);
    if (p->running > 0 || (h->failed_at < 0 && h->added < p->cfg.iterations))
        return 0;
    p->finished = 1;
    if (h->failed_at < 0) {
        zs_point_finish(&h->acc, &p->r);
        p->r.last = h->last;
    } else {
        memset(&p->r, 0, sizeof p->r);
        zs_result_free(h->last);
    }
    h->last = NULL;
    return 1;
}

/* The next (point, iteration) to start (-1: none may start now). */
static int next_task(const zs_work_point *pts, const held *hs, int n, int *it)
{
    for (int i = 0; i < n; i++) {
        const zs_work_point *p = &pts[i];
        const held *h = &hs[i];
        if (h->failed_at < 0 && p->started < p->cfg.iterations &&
            p->started < h->added + ZS_WORKERS_WINDOW) {
            *it = p->started;
            return i;
        }
    }
    return -1;
}

static int start(zs_work_point *pts, int i, int it, slot *sl, zs_err *e)
{
    zs_work_point *p = &pts[i];
    task t = {&p->cfg, it, p->want_last && it == p->cfg.iterations - 1};
    char what[64];
    snprintf(what, sizeof what, "%.40s iteration %d", p->cfg.method, it + 1);
    int rc = zs_child_start(&sl->ch, what, worker, &t, e);
    if (rc)
        return rc;
    sl->point = i;
    sl->it = it;
    sl->want = t.want;
    p->started++;
    p->running++;
    return ZS_OK;
}

/* Waits for any worker; the finished ones are taken and their slots freed
 * (the last slot moves into each). */
static int wait_some(zs_work_point *pts, held *hs, int n, slot *sl, int *running,
                     zs_workers_progress cb, void *arg, zs_err *e)
{
    struct pollfd pf[MAX_JOBS];
    for (int k = 0; k < *running; k++) {
        pf[k].fd = sl[k].ch.fd;
        pf[k].events = POLLIN;
    }
    int pr = poll(pf, (nfds_t)*running, 10000);
    if (pr < 0 && errno != EINTR)
        return zs_err_set(e, ZS_ERUNTIME, "poll", NULL, "cannot wait for the workers: %s",
                          strerror(errno));
    if (pr == 0 && cb)
        cb(arg, pts, n, 0, -1);
    for (int k = *running - 1; pr > 0 && k >= 0; k--) { /* higher slots first: see below */
        if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        zs_point_iter q;
        zs_result *r = NULL;
        zs_err ce;
        zs_err_clear(&ce);
        int i = sl[k].point;
        int rc = collect(&sl[k], &q, &r, &ce);
        int fin = take(&pts[i], &hs[i], sl[k].it, rc, &ce, &q, r);
        sl[k] = sl[--*running]; /* a slot already looked at, or this one */
        if (cb)
            cb(arg, pts, n, 1, fin ? i : -1);
    }
    return ZS_OK;
}

int zs_workers_run(zs_work_point *pts, int n, int jobs, zs_workers_progress cb, void *arg,
                   zs_err *e)
{
    if (n <= 0)
        return ZS_OK;
    held *hs = calloc((size_t)n, sizeof *hs);
    int rc = hs ? ZS_OK : ZS_ENOMEM;
    for (int i = 0; i < n && !rc; i++) {
        hs[i].failed_at = -1;
        if (!(hs[i].q = calloc(ZS_WORKERS_WINDOW, sizeof *hs[i].q)))
            rc = ZS_ENOMEM;
        pts[i].rc = ZS_OK;
        zs_err_clear(&pts[i].err);
        memset(&pts[i].r, 0, sizeof pts[i].r);
        pts[i].tl_bytes = 0;
        pts[i].tl_subset[0] = '\0';
        pts[i].started = pts[i].running = pts[i].done = pts[i].finished = 0;
    }
    if (rc)
        zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    jobs = jobs < 1 ? 1 : jobs > MAX_JOBS ? MAX_JOBS : jobs;
    slot sl[MAX_JOBS];
    int running = 0, finished = 0;
    while (!rc && finished < n) {
        int it, i;
        while (!rc && running < jobs && (i = next_task(pts, hs, n, &it)) >= 0)
            if (!(rc = start(pts, i, it, &sl[running], e)))
                running++;
        if (!rc && running > 0)
            rc = wait_some(pts, hs, n, sl, &running, cb, arg, e);
        else if (!rc) /* cannot happen: every point left has an iteration to start */
            rc = zs_err_set(e, ZS_ERUNTIME, "zs_workers_run", NULL, "no iteration can start");
        finished = 0;
        for (int k = 0; k < n; k++)
            finished += pts[k].finished;
    }
    for (int k = 0; k < running; k++) /* only after a failure to start or wait */
        zs_child_kill(&sl[k].ch);
    for (int i = 0; hs && i < n; i++) {
        free(hs[i].q);
        zs_result_free(hs[i].last);
    }
    free(hs);
    return rc;
}

/* Progress of a long run: see zs_progress.h. */
#include "zs_progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double zs_progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void zs_progress_init(zs_progress *p, FILE *f, int tty, const char *what, double now)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->tty = tty;
    snprintf(p->what, sizeof p->what, "%s", what);
    p->t0 = p->last = now;
    p->interval = 10;
}

/* "1 h 02 min", "3 min 05 s", "42 s" */
static void dur(double s, char *buf, size_t n)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ld h %02ld min", t / 3600, t % 3600 / 60);
    else if (t >= 60)
        snprintf(buf, n, "%ld min %02ld s", t / 60, t % 60);
    else
        snprintf(buf, n, "%ld s", t);
}

void zs_progress_report(zs_progress *p, double now, double frac, int step, const char *status)
{
    double left = -1;
    if (frac >= ZS_PROGRESS_MIN_SHARE && frac < 1)
        left = (now - p->t0) * (1 - frac) / frac;
    zs_progress_report_left(p, now, left, step, status);
}

void zs_progress_report_left(zs_progress *p, double now, double left, int step, const char *status)
{
    if (!p->f)
        return;
    if (!p->tty && !step && now - p->last < p->interval)
        return;
    char el[32], eta[48] = "";
    double elapsed = now - p->t0;
    dur(elapsed, el, sizeof el);
    if (left >= 0 && elapsed >= 2) { /* earlier, an estimate is noise */
        char l[32];
        dur(left, l, sizeof l);
        snprintf(eta, sizeof eta, ", about %s left", l);
    }
    if (p->tty) {
        fprintf(p->f, "\r%s: %s; %s%s\033[K", p->what, status, el, eta);
        p->open = 1;
    } else {
        fprintf(p->f, "%s: %s; %s%s\n", p->what, status, el, eta);
        p->lines++;
    }
    fflush(p->f);
    p->last = now;
}

/* Restores the min-heap h[0..n) after h[0] grew. */
static void sift_down(double *h, int n)
{
    for (int i = 0;;) {
        int c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && h[c + 1] < h[c])
            c++;
        if (h[i] <= h[c])
            return;
        double t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double zs_progress_eta(const zs_eta_item *items, int n, int jobs, double now)
{
    double cost = 0, fin_cost = 0, fin_time = 0;
    for (int i = 0; i < n; i++) {
        cost += items[i].cost;
        if (items[i].end >= 0) {
            fin_cost += items[i].cost;
            fin_time += items[i].end - items[i].start;
        }
    }
    if (fin_cost <= 0 || fin_cost < ZS_PROGRESS_MIN_SHARE * cost)
        return -1;
    double unit = fin_time / fin_cost; /* seconds per unit of cost, one worker */
    /* each worker's time until it is free: first the items running (what
     * their cost leaves), then the others in order on the first one free */
    double free[ZS_PROGRESS_MAX_JOBS] = {0};
    int w = jobs < 1 ? 1 : jobs > ZS_PROGRESS_MAX_JOBS ? ZS_PROGRESS_MAX_JOBS : jobs, busy = 0;
    for (int i = 0; i < n; i++)
        if (items[i].start >= 0 && items[i].end < 0 && items[i].cost > 0) {
            double ran = now - items[i].start, need = unit * items[i].cost - ran;
            double t = need > ran / 4 ? need : ran / 4; /* over its cost: a quarter more */
            int k = busy < w ? busy++ : 0;
            for (int m = 1; k == 0 && busy == w && m < w; m++) /* more running than */
                k = free[m] < free[k] ? m : k; /* workers: the least loaded takes it */
            free[k] += t;
        }
    qsort(free, (size_t)w, sizeof *free, dbl_cmp); /* sorted: a min-heap */
    for (int i = 0; i < n; i++)
        if (items[i].start < 0 && items[i].end < 0 && items[i].cost > 0) {
            free[0] += unit * items[i].cost;
            sift_down(free, w);
        }
    double left = 0;
    for (int k = 0; k < w; k++)
        left = free[k] > left ? free[k] : left;
    return left;
}

void zs_progress_end(zs_progress *p)
{
    if (p->f && p->open) {
        fputc('\n', p->f);
        fflush(p->f);
    }
    p->open = 0;
}

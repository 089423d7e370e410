/* Progress of a long run: see zs_progress.h. */
#include "zs_progress.h"

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
    if (!p->f)
        return;
    if (!p->tty && !step && now - p->last < p->interval)
        return;
    char el[32], eta[48] = "";
    double elapsed = now - p->t0;
    dur(elapsed, el, sizeof el);
    if (frac > 0 && frac < 1 && elapsed >= 2) { /* earlier, an estimate is noise */
        char left[32];
        dur(elapsed * (1 - frac) / frac, left, sizeof left);
        snprintf(eta, sizeof eta, ", about %s left", left);
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

void zs_progress_end(zs_progress *p)
{
    if (p->f && p->open) {
        fputc('\n', p->f);
        fflush(p->f);
    }
    p->open = 0;
}

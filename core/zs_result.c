/* Backend results: see zs_result.h. */
#include "zs_result.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

zs_result *zs_result_new(int nranks, int nnics)
{
    zs_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->nranks = nranks;
    r->nnics = nnics;
    r->ranks = calloc((size_t)(nranks > 0 ? nranks : 1), sizeof *r->ranks);
    r->nic_bytes = calloc((size_t)(nnics > 0 ? nnics : 1), sizeof(double));
    r->nic_busy = calloc((size_t)(nnics > 0 ? nnics : 1), sizeof(double));
    r->slowest_rank = -1;
    if (!r->ranks || !r->nic_bytes || !r->nic_busy) {
        zs_result_free(r);
        return NULL;
    }
    return r;
}

void zs_result_free(zs_result *r)
{
    if (!r)
        return;
    free(r->ranks);
    free(r->nic_bytes);
    free(r->nic_busy);
    free(r->interference);
    free(r);
}

void zs_notes_vappend(char *notes, size_t n, const char *fmt, va_list ap)
{
    size_t len = strlen(notes);
    if (len && len + 2 < n) {
        memcpy(notes + len, "; ", 3);
        len += 2;
    }
    int w = vsnprintf(notes + len, n - len, fmt, ap);
    /* A note that does not fit is cut where the buffer ends; the cut is
     * marked so that nobody reads half a decision as the whole of it. */
    static const char cut[] = " [notes cut]";
    if (w >= 0 && (size_t)w >= n - len && n > sizeof cut)
        memcpy(notes + n - sizeof cut, cut, sizeof cut);
}

void zs_result_note(zs_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zs_notes_vappend(r->notes, sizeof r->notes, fmt, ap);
    va_end(ap);
}

void zs_result_finish(zs_result *r)
{
    r->iter_time = 0;
    r->slowest_rank = -1;
    r->ops_executed = 0;
    for (int i = 0; i < r->nranks; i++) {
        r->ops_executed += r->ranks[i].ops;
        if (r->ranks[i].end > r->iter_time) {
            r->iter_time = r->ranks[i].end;
            r->slowest_rank = i;
        }
    }
    if (r->slowest_rank < 0)
        return;
    /* "Slowest" is the rank that finishes last; say what dominated its time. */
    const zs_rank_result *s = &r->ranks[r->slowest_rank];
    double mean_c = 0;
    for (int i = 0; i < r->nranks; i++)
        mean_c += r->ranks[i].compute;
    mean_c /= r->nranks;
    /* Compute-bound only when what is not compute (exposed communication
     * and waiting) is under a quarter of the rank's time; otherwise the
     * larger of those two names it. The largest of the three terms alone
     * called a rank compute-bound that computed 62% of its time, less than
     * the mean rank, and idled 34% (issue 35). */
    double t = s->compute + s->exposed_comm + s->idle;
    double fc = t > 0 ? s->compute / t : 1, fx = t > 0 ? s->exposed_comm / t : 0,
           fi = t > 0 ? s->idle / t : 0;
    char why[128];
    if (fc >= ZS_RESULT_COMPUTE_BOUND)
        snprintf(why, sizeof why, "compute-bound (compute %.0f%% of its time)", 100 * fc);
    else if (fx >= fi)
        snprintf(why, sizeof why, "communication-bound (exposed communication %.0f%% of its time)",
                 100 * fx);
    else
        snprintf(why, sizeof why, "waiting on other ranks (idle %.0f%% of its time%s)", 100 * fi,
                 s->compute < mean_c ? "; it computes less than the mean rank: imbalance" : "");
    snprintf(r->slowest_why, sizeof r->slowest_why,
             "%s: compute %.3f ms (mean over ranks %.3f ms), exposed comm %.3f ms, idle %.3f ms",
             why, s->compute * 1e3, mean_c * 1e3, s->exposed_comm * 1e3, s->idle * 1e3);
}

static int not_finite(zs_err *e, const char *what, int idx, double v)
{
    char where[64];
    if (idx >= 0)
        snprintf(where, sizeof where, "%s[%d]", what, idx);
    else
        snprintf(where, sizeof where, "%s", what);
    return zs_err_set(e, ZS_EINVALID, where,
                      "check the plan's op times and sizes and the calibration for values "
                      "that overflow",
                      "result not finite: %g", v);
}

int zs_result_check(const zs_result *r, zs_err *e)
{
    const struct {
        const char *name;
        double v;
    } top[] = {{"iteration time", r->iter_time},
               {"tokens", r->tokens},
               {"model flops", r->model_flops},
               {"peak flops", r->peak_flops},
               {"wall seconds", r->wall_seconds}};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!isfinite(top[i].v))
            return not_finite(e, top[i].name, -1, top[i].v);
    for (int i = 0; i < r->nranks; i++) {
        const zs_rank_result *x = &r->ranks[i];
        double v[] = {x->compute, x->exposed_comm, x->idle, x->comm, x->end};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            if (!isfinite(v[k]))
                return not_finite(e, "rank", i, v[k]);
        if (r->interference && !isfinite(r->interference[i]))
            return not_finite(e, "rank", i, r->interference[i]);
    }
    for (int c = 0; c < ZS_LINK_NCLASSES; c++)
        if (!isfinite(r->link_bytes[c]) || !isfinite(r->link_busy[c]))
            return not_finite(e, "link class", c,
                              isfinite(r->link_bytes[c]) ? r->link_busy[c] : r->link_bytes[c]);
    for (int k = 0; k < r->nnics; k++)
        if (!isfinite(r->nic_bytes[k]) || !isfinite(r->nic_busy[k]))
            return not_finite(e, "NIC", k,
                              isfinite(r->nic_bytes[k]) ? r->nic_busy[k] : r->nic_bytes[k]);
    return ZS_OK;
}

void zs_rank_acct_change(zs_rank_acct *a, zs_rank_result *r, double now, int dcompute, int dcomm)
{
    double dt = now - a->last;
    if (dt > 0) {
        if (a->computing > 0)
            r->compute += dt;
        else if (a->comm > 0)
            r->exposed_comm += dt;
        else
            r->idle += dt;
        if (a->comm > 0)
            r->comm += dt;
        a->last = now;
    }
    a->computing += dcompute;
    a->comm += dcomm;
}

void zs_rank_acct_close(zs_rank_acct *a, zs_rank_result *r, double end)
{
    zs_rank_acct_change(a, r, end, 0, 0);
}

static void kv(zs_table *t, const char *key, const char *fmt, double v, const char *unit)
{
    zs_table_kv_num(t, key, unit, fmt, v);
}

void zs_result_summary(const zs_result *r, zs_table *t)
{
    double sc = 0, se = 0, si = 0, mc = 0, me = 0, mi = 0;
    for (int i = 0; i < r->nranks; i++) {
        const zs_rank_result *x = &r->ranks[i];
        sc += x->compute;
        se += x->exposed_comm;
        si += x->idle;
        if (x->compute > mc)
            mc = x->compute;
        if (x->exposed_comm > me)
            me = x->exposed_comm;
        if (x->idle > mi)
            mi = x->idle;
    }
    int n = r->nranks > 0 ? r->nranks : 1;
    kv(t, "iter_ms", "%.3f", r->iter_time * 1e3, "ms");
    if (r->tokens > 0 && r->iter_time > 0)
        kv(t, "tokens_per_s", "%.0f", r->tokens / r->iter_time, "tokens/s");
    if (r->model_flops > 0 && r->peak_flops > 0 && r->iter_time > 0)
        kv(t, "mfu_pct", "%.1f", 100.0 * r->model_flops / (r->iter_time * r->peak_flops), "%");
    kv(t, "compute_mean_ms", "%.3f", sc / n * 1e3, "ms");
    kv(t, "compute_max_ms", "%.3f", mc * 1e3, "ms");
    kv(t, "exposed_mean_ms", "%.3f", se / n * 1e3, "ms");
    kv(t, "exposed_max_ms", "%.3f", me * 1e3, "ms");
    kv(t, "idle_mean_ms", "%.3f", si / n * 1e3, "ms");
    kv(t, "idle_max_ms", "%.3f", mi * 1e3, "ms");
    if (r->iter_time > 0)
        kv(t, "exposed_pct", "%.1f", 100.0 * se / n / r->iter_time, "% of iteration");
    for (int c = 0; c < ZS_LINK_NCLASSES; c++) {
        char key[64];
        snprintf(key, sizeof key, "%s_gb", zs_link_class_name(c));
        kv(t, key, "%.3f", r->link_bytes[c] / 1e9, "GB moved");
    }
    double maxu = 0;
    for (int i = 0; i < r->nnics; i++)
        if (r->iter_time > 0 && r->nic_busy[i] / r->iter_time > maxu)
            maxu = r->nic_busy[i] / r->iter_time;
    if (r->nnics > 0)
        kv(t, "max_nic_pct", "%.1f", 100.0 * maxu, "% busy");
    kv(t, "ops", "%.0f", (double)r->ops_executed, "ops executed");
    kv(t, "ops_simulated", "%.0f", (double)(r->ops_executed - r->ops_replayed),
       "ops simulated (the rest replayed by folding)");
    if (r->slowest_rank >= 0)
        kv(t, "slowest_rank", "%.0f", (double)r->slowest_rank, "");
}

void zs_result_print_text(const zs_result *r, FILE *f)
{
    if (r->slowest_rank >= 0)
        fprintf(f, "slowest rank %d: %s\n", r->slowest_rank, r->slowest_why);
    if (r->notes[0])
        fprintf(f, "%s backend: %s\n", r->backend, r->notes);
}

void zs_result_ranks(const zs_result *r, zs_table *t)
{
    for (int i = 0; i < r->nranks; i++) {
        const zs_rank_result *x = &r->ranks[i];
        zs_table_row(t);
        zs_table_set(t, 0, "%d", i);
        zs_table_num(t, 1, "%.3f", x->compute * 1e3);
        zs_table_num(t, 2, "%.3f", x->exposed_comm * 1e3);
        zs_table_num(t, 3, "%.3f", x->idle * 1e3);
        zs_table_num(t, 4, "%.3f", x->comm * 1e3);
        zs_table_num(t, 5, "%.3f", x->end * 1e3);
        if (r->interference)
            zs_table_num(t, 6, "%.3f", r->interference[i] * 1e3);
    }
}

int zs_result_pack(const zs_result *r, zs_fork_buf *out, zs_err *e)
{
    int rc = zs_fork_buf_add(out, r, sizeof *r, e);
    if (rc == ZS_OK)
        rc = zs_fork_buf_add(out, r->ranks, sizeof *r->ranks * (size_t)r->nranks, e);
    if (rc == ZS_OK)
        rc = zs_fork_buf_add(out, r->nic_bytes, sizeof(double) * (size_t)r->nnics, e);
    if (rc == ZS_OK)
        rc = zs_fork_buf_add(out, r->nic_busy, sizeof(double) * (size_t)r->nnics, e);
    if (rc == ZS_OK && r->interference)
        rc = zs_fork_buf_add(out, r->interference, sizeof(double) * (size_t)r->nranks, e);
    return rc;
}

zs_result *zs_result_unpack(const zs_fork_buf *b, size_t *pos)
{
    zs_result hdr;
    if (zs_fork_buf_get(b, pos, &hdr, sizeof hdr) || hdr.nranks < 0 || hdr.nnics < 0)
        return NULL;
    zs_result *r = zs_result_new(hdr.nranks, hdr.nnics);
    if (!r)
        return NULL;
    zs_rank_result *ranks = r->ranks;
    double *nb = r->nic_bytes, *nu = r->nic_busy;
    *r = hdr;
    r->ranks = ranks;
    r->nic_bytes = nb;
    r->nic_busy = nu;
    r->interference = NULL;
    if (hdr.interference && !(r->interference = malloc(sizeof(double) * (size_t)(r->nranks + 1)))) {
        zs_result_free(r);
        return NULL;
    }
    if (zs_fork_buf_get(b, pos, r->ranks, sizeof *r->ranks * (size_t)r->nranks) ||
        zs_fork_buf_get(b, pos, r->nic_bytes, sizeof(double) * (size_t)r->nnics) ||
        zs_fork_buf_get(b, pos, r->nic_busy, sizeof(double) * (size_t)r->nnics) ||
        (r->interference &&
         zs_fork_buf_get(b, pos, r->interference, sizeof(double) * (size_t)r->nranks))) {
        zs_result_free(r);
        return NULL;
    }
    return r;
}

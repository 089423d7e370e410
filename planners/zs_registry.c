/* The planner registry and the planning driver: see zs_planner.h. */
#include "zs_planner.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "zs_result.h"
#include "zs_suggest.h"
#include "zs_validate.h"

#define ZS_PLANNER(sym) extern const zs_planner_ops sym;
#include "zs_planners.def"
#undef ZS_PLANNER

static const zs_planner_ops *const registry[] = {
#define ZS_PLANNER(sym) &sym,
#include "zs_planners.def"
#undef ZS_PLANNER
};

/* Rows added at run time (zs_planner_register), after the built-in ones. */
static const zs_planner_ops *added[ZS_PLANNER_ADDED_MAX];
static int nadded;

#define NBUILTIN ((int)(sizeof registry / sizeof registry[0]))

int zs_planner_count(void)
{
    return NBUILTIN + nadded;
}

const zs_planner_ops *zs_planner_at(int i)
{
    if (i < 0 || i >= zs_planner_count())
        return NULL;
    return i < NBUILTIN ? registry[i] : added[i - NBUILTIN];
}

int zs_planner_register(const zs_planner_ops *p, zs_err *e)
{
    if (!p || !p->name || !p->name[0] || !p->plan)
        return zs_err_set(e, ZS_EUSAGE, "planner registry",
                          "give the row a name and a plan function",
                          "a planner row needs a name and a plan function");
    if (zs_planner_find(p->name))
        return zs_err_set(e, ZS_EUSAGE, "planner registry", "give the new method another name",
                          "method '%s' is already registered", p->name);
    if (nadded == ZS_PLANNER_ADDED_MAX)
        return zs_err_set(e, ZS_EUSAGE, "planner registry",
                          "add built-in planners to planners/zs_planners.def instead",
                          "at most %d planners can be added at run time", ZS_PLANNER_ADDED_MAX);
    added[nadded++] = p;
    return ZS_OK;
}

void zs_planner_names(char *buf, size_t n)
{
    size_t o = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < zs_planner_count() && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", zs_planner_at(i)->name);
}

const zs_opt_spec zs_opt_tp = {.key = "tp",
                               .type = ZS_OPT_INT,
                               .min = 1,
                               .max = ZS_TP_MAX,
                               .def = 1,
                               .help = "tensor-parallel degree (divides the GPUs of a node)"};

int zs_plan_opt_tp(const zs_plan_ctx *ctx, const zs_opt_spec *row, long def, long *tp, zs_err *e)
{
    int rc = row->computed ? zs_opt_int_def(ctx->opts, row, def, tp, e)
                           : zs_opt_int(ctx->opts, row, tp, e);
    if (!rc && ctx->cluster->gpus_per_node % *tp != 0)
        rc =
            zs_err_set(e, ZS_EINPUT, "tp", "use a TP degree that divides the GPUs of a node",
                       "tp=%ld does not divide %d GPUs per node", *tp, ctx->cluster->gpus_per_node);
    return rc;
}

const zs_planner_ops *zs_planner_find(const char *name)
{
    for (int i = 0; i < zs_planner_count(); i++)
        if (strcasecmp(zs_planner_at(i)->name, name) == 0)
            return zs_planner_at(i);
    return NULL;
}

int zs_planner_lookup(const char *name, const char *where, const zs_planner_ops **out, zs_err *e)
{
    const zs_planner_ops *p = zs_planner_find(name);
    if (p) {
        *out = p;
        return ZS_OK;
    }
    zs_suggest sg;
    zs_suggest_init(&sg, name);
    for (int i = 0; i < zs_planner_count(); i++)
        zs_suggest_add(&sg, zs_planner_at(i)->name);
    char fix[700], names[512];
    zs_suggest_phrase(&sg, fix, sizeof fix);
    zs_planner_names(names, sizeof names);
    snprintf(fix + strlen(fix), sizeof fix - strlen(fix), "use one of: %s", names);
    return zs_err_set(e, ZS_EUSAGE, where, fix, "unknown method '%s'", name);
}

void zs_plan_report_note(zs_plan_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zs_notes_vappend(r->notes, sizeof r->notes, fmt, ap);
    va_end(ap);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Imbalance figures every method reports, from the plan's pieces and the
 * attention ops' blocks. */
static void imbalance(const zs_schedule *s, zs_plan_report *rep)
{
    double maxw = 0, sumw = 0, maxt = 0, sumt = 0;
    int n = 0;
    for (int r = 0; r < s->nranks; r++) {
        double w = zs_schedule_attn_work(s, r);
        if (w > maxw)
            maxw = w;
        sumw += w;
        n++;
    }
    rep->attn_imbalance = sumw > 0 ? maxw / (sumw / n) : 1.0;
    int64_t *tok = calloc((size_t)s->nranks * 2, sizeof(int64_t));
    if (tok) {
        for (int64_t i = 0; i < s->npieces; i++)
            tok[(size_t)s->pieces[i].rank * 2 + s->pieces[i].layout] +=
                s->pieces[i].t1 - s->pieces[i].t0;
        int holders = 0;
        for (int r = 0; r < s->nranks; r++) {
            if (tok[2 * r] > rep->max_attn_tokens)
                rep->max_attn_tokens = tok[2 * r];
            if (tok[2 * r + 1] > rep->max_linear_tokens)
                rep->max_linear_tokens = tok[2 * r + 1];
            if (r % (s->dims.tp) == 0 && zs_rank_stage(s, r) == 0) {
                holders++;
                sumt += (double)tok[2 * r + 1];
                if (tok[2 * r + 1] > maxt)
                    maxt = (double)tok[2 * r + 1];
            }
        }
        rep->linear_imbalance = sumt > 0 ? maxt / (sumt / holders) : 1.0;
        free(tok);
    }
}

/* The most tokens per layout alive at once over every window of w
 * consecutive micro-batches lo..hi of one rank (per: [2 * micro + layout]). */
static void window_max(const int64_t *per, int lo, int hi, int w, int64_t most[2])
{
    for (int l = 0; l < 2; l++) {
        int64_t sum = 0;
        for (int m = lo; m <= hi; m++) {
            sum += per[2 * m + l];
            if (m - w >= lo)
                sum -= per[2 * (m - w) + l];
            if (sum > most[l])
                most[l] = sum;
        }
    }
}

/* zs_plan_report.max_live_attn_tokens and max_live_linear_tokens from the
 * plan's pieces, grouped by rank (a counting sort), each rank's tokens
 * summed per micro-batch. The iteration builder runs a stage's micro-batches
 * in index order with 1F1B (zs_iteration.c): the first stage, where the
 * pieces are, holds at most w = min(pp, micro-batches) consecutive ones
 * (forward done, backward not yet), one at a time with pp = 1. When its
 * scratch cannot be allocated it keeps the whole-iteration sums (an
 * overstatement, never an understatement). */
static void live_tokens(const zs_schedule *s, zs_plan_report *rep)
{
    int M = s->micro_batches > 1 ? s->micro_batches : 1;
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].micro >= M)
            M = s->pieces[i].micro + 1;
    int w = s->dims.pp > 1 ? s->dims.pp : 1;
    if (w > M)
        w = M;
    int64_t *end = calloc((size_t)s->nranks + 1, sizeof(int64_t));
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(s->npieces > 0 ? s->npieces : 1));
    int64_t *per = calloc((size_t)M * 2, sizeof(int64_t));
    int64_t most[2] = {rep->max_attn_tokens, rep->max_linear_tokens};
    if (end && order && per) {
        most[0] = most[1] = 0;
        for (int64_t i = 0; i < s->npieces; i++)
            end[s->pieces[i].rank + 1]++;
        for (int r = 0; r < s->nranks; r++)
            end[r + 1] += end[r];
        for (int64_t i = 0; i < s->npieces; i++) /* end[r]: rank r's start, then its end */
            order[end[s->pieces[i].rank]++] = i;
        for (int r = 0; r < s->nranks; r++) {
            int lo = M, hi = -1;
            for (int64_t k = r > 0 ? end[r - 1] : 0; k < end[r]; k++) {
                const zs_piece *pc = &s->pieces[order[k]];
                int m = pc->micro > 0 ? pc->micro : 0;
                per[2 * m + pc->layout] += pc->t1 - pc->t0;
                lo = m < lo ? m : lo;
                hi = m > hi ? m : hi;
            }
            if (hi < lo)
                continue;
            window_max(per, lo, hi, w, most);
            memset(per + 2 * lo, 0, sizeof(int64_t) * 2 * (size_t)(hi - lo + 1));
        }
    }
    free(end);
    free(order);
    free(per);
    if (most[0] > rep->max_live_attn_tokens)
        rep->max_live_attn_tokens = most[0];
    if (most[1] > rep->max_live_linear_tokens)
        rep->max_live_linear_tokens = most[1];
}

int zs_plan_batch(const zs_planner_ops *p, const zs_plan_ctx *ctx, const zs_batch *batch,
                  int validate, zs_schedule **out, zs_plan_report *rep, zs_err *e)
{
    memset(rep, 0, sizeof *rep);
    if (batch->ndocs < 1)
        return zs_err_set(e, ZS_EINPUT, "batch", "use a longer trace or a larger budget",
                          "the global batch holds no document");
    zs_schedule *s = NULL;
    double t0 = now_s();
    int rc = p->plan(ctx, batch, &s, rep, e);
    rep->plan_seconds = now_s() - t0;
    if (rc == ZS_OK)
        rc = zs_opts_check_used(ctx->opts, p->name, p->options, e);
    if (rc == ZS_OK)
        rc = zs_opts_check_declared(ctx->opts, p->name, p->options, e);
    if (rc == ZS_OK) {
        snprintf(s->method, sizeof s->method, "%s", p->name);
        rep->dims = s->dims;
        imbalance(s, rep);
        live_tokens(s, rep);
    }
#ifndef NDEBUG
    validate = 1; /* debug builds check every plan (SYSTEM.md: validator always on) */
#endif
    if (rc == ZS_OK && validate) {
        zs_validate_opts vo = {0, 0};
        rc = zs_validate(s, &vo, e);
    }
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

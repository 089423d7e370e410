/* The study-point option table: see zs_point_opts.h. */
#include "zs_point_opts.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_backend.h"
#include "zs_cluster.h"
#include "zs_model.h"
#include "zs_num.h"
#include "zs_planner.h"
#include "zs_timeline.h"
#include "zs_trace_src.h"

/* ---- checks: names that must resolve ------------------------------------ */

static int check_model(char *val, size_t n, int code, zs_err *e)
{
    (void)n;
    (void)code;
    zs_model m;
    return zs_model_load(val, &m, e);
}

static int check_cluster(char *val, size_t n, int code, zs_err *e)
{
    (void)n;
    (void)code;
    zs_cluster cl;
    return zs_cluster_load(val, 0, &cl, e);
}

static int check_trace(char *val, size_t n, int code, zs_err *e)
{
    (void)n;
    (void)code;
    zs_trace_src_cfg scfg;
    memset(&scfg, 0, sizeof scfg);
    scfg.seed = 1;
    zs_trace_src *src = NULL;
    int rc = zs_trace_src_open(val, &scfg, &src, e);
    zs_trace_src_free(src);
    return rc;
}

static int check_method(char *val, size_t n, int code, zs_err *e)
{
    const zs_planner_ops *p;
    if (zs_planner_lookup(val, NULL, &p, e)) {
        e->code = code;
        return code;
    }
    snprintf(val, n, "%s", p->name);
    return ZS_OK;
}

static int check_backend(char *val, size_t n, int code, zs_err *e)
{
    const zs_backend *b;
    int rc = zs_backend_lookup(val, NULL, code, &b, e);
    if (!rc)
        snprintf(val, n, "%s", b->name);
    return rc;
}

/* ---- the table ------------------------------------------------------------- */

_Static_assert(sizeof(((zs_point_cfg *)0)->tl_ranks) == ZS_TL_RANKS_LEN,
               "a configuration holds the longest rank list");

#define F(m) offsetof(zs_point_cfg, m), sizeof(((zs_point_cfg *)0)->m)
#define ROW(cli, key, type, field, min, max, def, arg, values, check, help)                        \
    {                                                                                              \
        cli, key, type, F(field), 0, min, max, def, arg, values, check, help                       \
    }
#define RANGE(cli, lo, hi, max, help)                                                              \
    {                                                                                              \
        cli, NULL, ZS_POPT_RANGE, F(lo), offsetof(zs_point_cfg, hi), 0, max, "", "A-B", NULL,      \
            NULL, help                                                                             \
    }

/* Order: the order of --help and of the spec keys in messages. The
 * recompute values are in zs_recompute order (none = 0, full = 1). */
static const zs_popt table[] = {
    ROW("model", "model", ZS_POPT_STR, model, 0, 0, "llama-7b", "NAME|FILE", NULL, check_model,
        "model: a preset (`zepsim list models`) or a JSON file"),
    ROW("cluster", "cluster", ZS_POPT_STR, cluster, 0, 0, "cluster-a", "NAME|FILE", NULL,
        check_cluster, "cluster: a preset (`zepsim list clusters`) or a JSON file"),
    ROW("nodes", "nodes", ZS_POPT_INT, nodes, 1, 65536, "", "N", NULL, NULL,
        "nodes (default: the cluster's own count, 16 for cluster-a; given, it overrides a "
        "cluster file's)"),
    ROW("trace", "trace", ZS_POPT_STR, trace, 0, 0, "arxiv", "SPEC|FILE", NULL, check_trace,
        "document lengths: a preset (arxiv, github, prolong64k, ...), uniform:A-B, fixed:N, "
        "lognormal:MU,SIGMA, mix:..., or a file (`zepsim trace presets`)"),
    ROW("method", "method", ZS_POPT_STR, method, 0, 0, "zeppelin", "NAME", NULL, check_method,
        "method (`zepsim plan --help` lists them; any case)"),
    ROW("opt", "opts", ZS_POPT_OPTS, opts, 0, 0, "", "K=V[,K=V]", NULL, NULL,
        "method options, appended (`zepsim plan --help` lists each method's)"),
    ROW("no-routing", NULL, ZS_POPT_OPTSET, opts, 0, 0, "", NULL, "routing=0", NULL,
        "Zeppelin ablation: --opt routing=0"),
    ROW("no-remap", NULL, ZS_POPT_OPTSET, opts, 0, 0, "", NULL, "remap=0", NULL,
        "Zeppelin ablation: --opt remap=0"),
    ROW("no-hier", NULL, ZS_POPT_OPTSET, opts, 0, 0, "", NULL, "hier=0", NULL,
        "Zeppelin ablation: --opt hier=0"),
    ROW("context", "context", ZS_POPT_I64, context, 1, 1ULL << 34, "262144", "TOKENS", NULL, NULL,
        "tokens per context group"),
    ROW("group", "group", ZS_POPT_INT, group, 1, 1 << 20, "16", "GPUS", NULL, NULL,
        "GPUs per context group; global batch = GPUs / group x context (16: the Zeppelin "
        "paper's CP groups of 2 nodes)"),
    ROW("iterations", "iterations", ZS_POPT_INT, iterations, 1, 100000, "3", "N", NULL, NULL,
        "training iterations simulated"),
    /* at most 2^63 - 1: JSON (output documents, specs) and the results
     * database hold integers as int64; a larger seed printed as a rounded
     * double and could not be given in a spec */
    ROW("seed", "seed", ZS_POPT_U64, seed, 0, INT64_MAX, "1", "S", NULL, NULL,
        "seed of the trace generator and planners"),
    ROW("backend", "backend", ZS_POPT_STR, backend, 0, 0, "sim", "sim|analytic", NULL,
        check_backend, "SimGrid (contention) or the analytic evaluator"),
    ROW("calib", "calib", ZS_POPT_STR, calib, 0, 0, "", "FILE", NULL, NULL,
        "calibration from `zepsim calib fit` (default: analytic costs)"),
    ROW("attn-kernel", "attn_kernel", ZS_POPT_STR, attn_kernel, 0, 0, "", "NAME", NULL, NULL,
        "attention kernel of the cluster's GPU (`zepsim show gpu G` lists them; default the "
        "GPU's own)"),
    ROW("zero", "zero_stage", ZS_POPT_INT, zero_stage, 0, 3, "1", "S", NULL, NULL, "ZeRO stage"),
    ROW("recompute", "recompute", ZS_POPT_ENUM, recompute, 0, 0, "full", "none|full", "none|full",
        NULL, "activation recomputation"),
    ROW("validate", "validate", ZS_POPT_FLAG, validate, 0, 1, "0", NULL, NULL, NULL,
        "check every plan with the plan validator"),
    ROW("fold", "fold", ZS_POPT_ENUM, fold, 0, 0, "on", "off|on|steady", "off|on|steady", NULL,
        "layer folding: simulate a repeated layer pass until its iterations take the same time "
        "(to 1e-4), replay the rest; steady: also when they only swing around a steady mean "
        "(faster at scale, approximate); off: simulate every layer"),
    ROW("timeline", "timeline", ZS_POPT_STR, timeline, 0, 0, "", "FILE", NULL, NULL,
        "Chrome trace of the last iteration (FILE.json.gz: gzip; compare: FILE.METHOD.json; "
        "in a spec, {case} and {series} become the labels)"),
    ROW("timeline-ranks", NULL, ZS_POPT_RANKS, tl_ranks, 0, ZS_TL_MAX_RANK, "", "LIST", NULL, NULL,
        "ranks in the timeline: all, or a list such as 0,5,17-20 (default: every rank while the "
        "timeline stays under 64 MB, ZEPSIM_TIMELINE_MAX_MB, else 8 chosen ones: the most and "
        "the least compute, rank 0, the last, evenly spaced; a note says which)"),
    RANGE("timeline-layers", tl_layer0, tl_layer1, 1 << 20,
          "only layers A..B (from 0) in the timeline (default all)"),
};
#undef ROW
#undef RANGE
#undef F

int zs_popt_count(void)
{
    return (int)(sizeof table / sizeof table[0]);
}

const zs_popt *zs_popt_at(int i)
{
    return i >= 0 && i < zs_popt_count() ? &table[i] : NULL;
}

const zs_popt *zs_popt_find_cli(const char *name)
{
    for (int i = 0; i < zs_popt_count(); i++)
        if (table[i].cli && !strcmp(table[i].cli, name))
            return &table[i];
    return NULL;
}

const zs_popt *zs_popt_find_key(const char *key)
{
    for (int i = 0; i < zs_popt_count(); i++)
        if (table[i].key && !strcmp(table[i].key, key))
            return &table[i];
    return NULL;
}

const char *zs_popt_keys(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t o = 0;
        for (int i = 0; i < zs_popt_count() && o < sizeof buf; i++)
            if (table[i].key)
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", o ? ", " : "", table[i].key);
    }
    return buf;
}

const char *zs_popt_default(const zs_popt *o)
{
    return o->type == ZS_POPT_RANGE ? "all" : o->def;
}

/* ---- parsing ---------------------------------------------------------------- */

/* "256K", "2M": a token count with a binary suffix (K = 1024, M = 2^20,
 * G = 2^30), as `cost --bytes` takes sizes and as the papers write
 * contexts (issue 35 item 7). -1 when text has no suffix. */
static int with_suffix(const zs_popt *o, const char *text, int code, const char *where,
                       int64_t *out, zs_err *e)
{
    size_t n = strlen(text);
    int sh = n > 1 ? (text[n - 1] == 'K' || text[n - 1] == 'k'   ? 10
                      : text[n - 1] == 'M' || text[n - 1] == 'm' ? 20
                      : text[n - 1] == 'G' || text[n - 1] == 'g' ? 30
                                                                 : 0)
                   : 0;
    if (!sh)
        return -1;
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(n - 1), text);
    int64_t v;
    char fix[160];
    snprintf(fix, sizeof fix,
             "give a whole number with an optional K, M or G (x1024) in [%lld, %llu]",
             (long long)o->min, (unsigned long long)o->max);
    if (zs_num_i64(num, 0, INT64_MAX >> sh, code, where, &v, e) || (v << sh) < (int64_t)o->min ||
        (uint64_t)(v << sh) > o->max)
        return zs_err_set(e, code, where, fix, "bad value '%s'", text);
    *out = v << sh;
    return ZS_OK;
}

static int parse_str(const zs_popt *o, const char *s, int code, const char *where, char *dst,
                     zs_err *e)
{
    if (!*s && o->def[0])
        return zs_err_set(e, code, where, "give a value", "'%s' must not be empty",
                          o->key ? o->key : o->cli);
    if (strlen(s) >= o->size)
        return zs_err_set(e, code, where, "shorten the value",
                          "'%s' is too long (at most %zu characters)", o->key ? o->key : o->cli,
                          o->size - 1);
    memcpy(dst, s, strlen(s) + 1);
    return ZS_OK;
}

/* Appends "k=v[,k=v]" to the options in dst. */
static int append_opts(const zs_popt *o, const char *s, int code, const char *where, char *dst,
                       zs_err *e)
{
    for (const char *p = s; *p; p++)
        if (isspace((unsigned char)*p))
            return zs_err_set(e, code, where, "write them as k=v,k=v without spaces",
                              "method options '%s' contain a space", s);
    size_t cur = strlen(dst), len = strlen(s);
    if (!len)
        return ZS_OK;
    if (cur + len + 2 > o->size)
        return zs_err_set(e, code, where, "give fewer or shorter options",
                          "method options too long (at most %zu characters)", o->size - 1);
    snprintf(dst + cur, o->size - cur, "%s%s", cur ? "," : "", s);
    return ZS_OK;
}

static int parse_enum(const zs_popt *o, const char *s, int code, const char *where, int *dst,
                      zs_err *e)
{
    size_t len = strlen(s);
    int i = 0;
    for (const char *p = o->values; *p; i++) {
        size_t w = strcspn(p, "|");
        if (w == len && !strncmp(p, s, len)) {
            *dst = i;
            return ZS_OK;
        }
        p += w + (p[w] == '|');
    }
    char fix[128];
    snprintf(fix, sizeof fix, "use %s", o->values);
    return zs_err_set(e, code, where, fix, "bad %s '%s'", o->key ? o->key : o->cli, s);
}

static int parse_range(const zs_popt *o, const char *s, int code, const char *where, int *lo,
                       int *hi, zs_err *e)
{
    char a[32], b[32];
    const char *dash = strchr(s, '-');
    size_t la = dash ? (size_t)(dash - s) : strlen(s);
    int64_t x, y;
    int ok = la < sizeof a && (!dash || strlen(dash + 1) < sizeof b);
    if (ok) {
        snprintf(a, sizeof a, "%.*s", (int)la, s);
        snprintf(b, sizeof b, "%s", dash ? dash + 1 : a);
        ok = !zs_num_i64(a, o->min, (int64_t)o->max, code, where, &x, NULL) &&
             !zs_num_i64(b, o->min, (int64_t)o->max, code, where, &y, NULL) && x <= y;
    }
    if (!ok) {
        char fix[160];
        snprintf(fix, sizeof fix, "give A or A-B with %lld <= A <= B <= %llu", (long long)o->min,
                 (unsigned long long)o->max);
        return zs_err_set(e, code, where, fix, "bad range '%s'", s);
    }
    *lo = (int)x;
    *hi = (int)y;
    return ZS_OK;
}

int zs_popt_parse(const zs_popt *o, const char *text, int code, const char *where, zs_point_cfg *c,
                  zs_err *e)
{
    char *dst = (char *)c + o->off;
    int64_t i;
    uint64_t u;
    int rc = ZS_OK;
    switch (o->type) {
    case ZS_POPT_STR:
        return parse_str(o, text, code, where, dst, e);
    case ZS_POPT_OPTS:
        return append_opts(o, text, code, where, dst, e);
    case ZS_POPT_OPTSET:
        return append_opts(o, o->values, code, where, dst, e);
    case ZS_POPT_ENUM:
        return parse_enum(o, text, code, where, (int *)(void *)dst, e);
    case ZS_POPT_RANKS:
        if ((rc = zs_tl_ranks_check(text, code, where, e)))
            return rc;
        return parse_str(o, text, code, where, dst, e);
    case ZS_POPT_RANGE:
        if (!*text) { /* the default: all */
            *(int *)(void *)dst = *(int *)(void *)((char *)c + o->off2) = -1;
            return ZS_OK;
        }
        return parse_range(o, text, code, where, (int *)(void *)dst,
                           (int *)(void *)((char *)c + o->off2), e);
    case ZS_POPT_FLAG:
    case ZS_POPT_INT:
    case ZS_POPT_I64:
        if (!*text && !o->def[0]) { /* no default: 0, "not given" (nodes: the cluster's) */
            if (o->type == ZS_POPT_I64)
                *(int64_t *)(void *)dst = 0;
            else
                *(int *)(void *)dst = 0;
            return ZS_OK;
        }
        if (o->type == ZS_POPT_I64 && (rc = with_suffix(o, text, code, where, &i, e)) != -1) {
            if (rc)
                return rc;
        } else if ((rc = zs_num_i64(text, o->min, (int64_t)o->max, code, where, &i, e))) {
            return rc;
        }
        if (o->type == ZS_POPT_I64)
            *(int64_t *)(void *)dst = i;
        else
            *(int *)(void *)dst = (int)i;
        return ZS_OK;
    case ZS_POPT_U64:
        if ((rc = zs_num_u64(text, (uint64_t)o->min, o->max, code, where, &u, e)))
            return rc;
        *(uint64_t *)(void *)dst = u;
        return ZS_OK;
    }
    return zs_err_set(e, ZS_EINVALID, where, NULL, "option of unknown type");
}

int zs_popt_check(const zs_popt *o, zs_point_cfg *c, int code, const char *where, zs_err *e)
{
    char *val = (char *)c + o->off;
    if (!o->check || !*val)
        return ZS_OK;
    int rc = o->check(val, o->size, code, e);
    if (rc && !e->where[0] && where)
        snprintf(e->where, sizeof e->where, "%s", where);
    return rc;
}

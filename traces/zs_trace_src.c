/* Length sources: see zs_trace_src.h. */
#include "zs_trace_src.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct zs_trace_src {
    zs_trace *trace; /* file source (owned), or NULL */
    zs_lengen *gen;  /* generator source (owned), or NULL */
    int64_t pos;     /* documents drawn */
    int32_t window;
    zs_long_policy policy;
    int32_t rest; /* split: tokens of the current document still to hand out */
    int64_t rest_id;
    zs_trace_src_counts c;
    char desc[700];
};

static const char *const policy_names[] = {"keep", "truncate", "split"};

int zs_long_policy_parse(const char *s, zs_long_policy *out, zs_err *e)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, policy_names[i]) == 0) {
            *out = (zs_long_policy)i;
            return ZS_OK;
        }
    return zs_err_set(e, ZS_EUSAGE, "--long", "use truncate or split (or keep, without --window)",
                      "unknown policy for long documents '%s'", s);
}

const char *zs_long_policy_name(zs_long_policy p)
{
    return (unsigned)p < 3 ? policy_names[p] : "?";
}

zs_trace_src *zs_trace_src_from_trace(zs_trace *t)
{
    zs_trace_src *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->trace = t;
    snprintf(s->desc, sizeof s->desc, "%s", t->source);
    return s;
}

int zs_trace_src_open(const char *spec, const zs_trace_src_cfg *cfg, zs_trace_src **out, zs_err *e)
{
    static const zs_trace_src_cfg defaults;
    if (!cfg)
        cfg = &defaults;
    zs_trace_src *s = NULL;
    if (zs_lengen_is_spec(spec)) {
        zs_lengen *g;
        int rc = zs_lengen_new(spec, cfg->seed, &g, e);
        if (rc)
            return rc;
        if (!(s = calloc(1, sizeof *s))) {
            zs_lengen_free(g);
            return zs_err_set(e, ZS_ENOMEM, spec, NULL, "out of memory");
        }
        s->gen = g;
        snprintf(s->desc, sizeof s->desc, "%s (generator, seed %llu)", zs_lengen_describe(g),
                 (unsigned long long)cfg->seed);
    } else {
        /* A bare word that is no file is most likely a misspelt preset. */
        if (!strchr(spec, '/') && !strchr(spec, '.') && strcmp(spec, "-") != 0 &&
            access(spec, F_OK) != 0) {
            char fix[600];
            size_t o = (size_t)snprintf(fix, sizeof fix, "give a trace file or a preset (");
            for (int i = 0; zs_lengen_preset_at(i) && o < sizeof fix; i++)
                o += (size_t)snprintf(fix + o, sizeof fix - o, "%s%s", i ? ", " : "",
                                      zs_lengen_preset_at(i)->name);
            if (o < sizeof fix)
                snprintf(fix + o, sizeof fix - o,
                         ") or fixed:N, uniform:A-B, lognormal:MU,SIGMA, mix:...");
            return zs_err_set(e, ZS_EINPUT, spec, fix, "no such trace file or generator preset");
        }
        zs_trace *t;
        int rc = zs_trace_read_file(spec, &cfg->read, &t, e);
        if (rc)
            return rc;
        if (!(s = zs_trace_src_from_trace(t))) {
            zs_trace_free(t);
            return zs_err_set(e, ZS_ENOMEM, spec, NULL, "out of memory");
        }
        zs_trace_format f = cfg->read.format;
        if (f == ZS_TRACE_FMT_AUTO)
            f = zs_trace_format_from_path(spec);
        snprintf(s->desc, sizeof s->desc, "%s (%s file)", t->source,
                 f == ZS_TRACE_FMT_AUTO ? "detected" : zs_trace_format_name(f));
    }
    zs_trace_src_set_window(s, cfg->window, cfg->policy);
    *out = s;
    return ZS_OK;
}

void zs_trace_src_free(zs_trace_src *s)
{
    if (!s)
        return;
    zs_trace_free(s->trace);
    zs_lengen_free(s->gen);
    free(s);
}

void zs_trace_src_set_window(zs_trace_src *s, int32_t window, zs_long_policy policy)
{
    s->window = window > 0 ? window : 0;
    s->policy = s->window && policy == ZS_LONG_KEEP ? ZS_LONG_TRUNCATE : policy;
}

int32_t zs_trace_src_window(const zs_trace_src *s)
{
    return s->window;
}

int zs_trace_src_next(zs_trace_src *s, int32_t *len, int64_t *id)
{
    int32_t v;
    int64_t i;
    if (s->rest > 0) {
        v = s->rest < s->window ? s->rest : s->window;
        s->rest -= v;
        i = s->rest_id;
        s->c.pieces++;
    } else {
        if (s->trace) {
            if (s->pos >= s->trace->n)
                return 0;
            v = s->trace->len[s->pos];
        } else {
            v = zs_lengen_next(s->gen);
        }
        i = s->pos++;
        s->c.docs_in++;
        s->c.tokens_in += v;
        if (s->window && v > s->window) {
            if (s->policy == ZS_LONG_SPLIT) {
                s->c.docs_split++;
                s->c.pieces++;
                s->rest = v - s->window;
                s->rest_id = i;
            } else {
                s->c.docs_truncated++;
                s->c.tokens_dropped += v - s->window;
            }
            v = s->window;
        }
    }
    s->c.docs_out++;
    s->c.tokens_out += v;
    *len = v;
    if (id)
        *id = i;
    return 1;
}

static int stream_next(void *arg, int32_t *len, int64_t *id)
{
    return zs_trace_src_next(arg, len, id);
}

zs_doc_stream zs_trace_src_stream(zs_trace_src *s)
{
    return (zs_doc_stream){stream_next, s};
}

void zs_trace_src_reset(zs_trace_src *s)
{
    s->pos = 0;
    s->rest = 0;
    memset(&s->c, 0, sizeof s->c);
    if (s->gen)
        zs_lengen_reset(s->gen);
}

int64_t zs_trace_src_size(const zs_trace_src *s)
{
    return s->trace ? s->trace->n : -1;
}

const zs_trace_src_counts *zs_trace_src_counts_get(const zs_trace_src *s)
{
    return &s->c;
}

const char *zs_trace_src_describe(const zs_trace_src *s)
{
    return s->desc;
}

void zs_trace_src_window_note(const zs_trace_src *s, char *buf, size_t n)
{
    const zs_trace_src_counts *c = &s->c;
    if (!s->window)
        snprintf(buf, n, "none (documents kept whole)");
    else if (s->policy == ZS_LONG_SPLIT)
        snprintf(buf, n, "%d tokens, split: %lld documents split into %lld pieces", s->window,
                 (long long)c->docs_split, (long long)c->pieces);
    else
        snprintf(buf, n, "%d tokens, truncate: %lld documents cut, %lld tokens dropped", s->window,
                 (long long)c->docs_truncated, (long long)c->tokens_dropped);
}

int zs_trace_src_collect(zs_trace_src *s, int64_t n, zs_trace **out, zs_err *e)
{
    if (n <= 0 && !s->trace)
        return zs_err_set(e, ZS_EUSAGE, "--n", "give the number of documents to draw with --n N",
                          "a generator never runs dry: how many documents?");
    zs_trace *t = zs_trace_new(s->trace ? s->trace->source : zs_lengen_describe(s->gen));
    if (!t)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int64_t want = n > 0 ? n : s->trace->n;
    int rc = zs_trace_reserve(t, s->trace && s->trace->n < want ? s->trace->n : want, e);
    int32_t v;
    while (rc == ZS_OK && (s->c.docs_in < want || s->rest > 0) && zs_trace_src_next(s, &v, NULL))
        rc = zs_trace_push(t, v, e);
    if (rc) {
        zs_trace_free(t);
        return rc;
    }
    *out = t;
    return ZS_OK;
}

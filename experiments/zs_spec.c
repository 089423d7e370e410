/* Figure specs: see zs_spec.h; the format is in experiments/README.md.
 *
 * Expansion order (later wins, except "opts" which accumulates "k=v"
 * lists): zs_point_cfg_default, then "base", then the case (the values of
 * every sweep axis in axis order, or one explicit case), then the series.
 * Names of models, clusters, traces and methods are checked where they are
 * written, so a typo is reported at its own line and column. */
#include "zs_spec.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_config.h"
#include "zs_planner.h"
#include "zs_point_opts.h"

/* ---- locating a key path in the JSON text -------------------------------
 * jansson keeps no positions, so errors about a value re-scan the text
 * along the path ("series[2].method") to find the line and column. */

static size_t skip_ws(const char *s, size_t i)
{
    while (s[i] && isspace((unsigned char)s[i]))
        i++;
    return i;
}

static size_t skip_str(const char *s, size_t i)
{
    i++;
    while (s[i] && s[i] != '"') {
        if (s[i] == '\\' && s[i + 1])
            i++;
        i++;
    }
    return s[i] ? i + 1 : i;
}

static size_t skip_val(const char *s, size_t i)
{
    i = skip_ws(s, i);
    if (s[i] == '"')
        return skip_str(s, i);
    if (s[i] == '{' || s[i] == '[') {
        int depth = 0;
        while (s[i]) {
            if (s[i] == '"') {
                i = skip_str(s, i);
                continue;
            }
            if (s[i] == '{' || s[i] == '[')
                depth++;
            else if (s[i] == '}' || s[i] == ']') {
                if (--depth == 0)
                    return i + 1;
            }
            i++;
        }
        return i;
    }
    while (s[i] && !strchr(",}] \t\r\n", s[i]))
        i++;
    return i;
}

/* Offset of the member's key or the array element the path names, or -1. */
static long locate(const char *s, const char *path)
{
    size_t i = skip_ws(s, 0);
    long hit = (long)i;
    const char *p = path;
    while (*p) {
        i = skip_ws(s, i);
        if (*p == '[') {
            char *end;
            long idx = strtol(p + 1, &end, 10);
            p = *end == ']' ? end + 1 : end;
            if (*p == '.')
                p++;
            if (s[i] != '[')
                return -1;
            i++;
            for (long k = 0; k < idx; k++) {
                i = skip_ws(s, skip_val(s, i));
                if (s[i] != ',')
                    return -1;
                i++;
            }
            i = skip_ws(s, i);
            hit = (long)i;
        } else {
            size_t kl = strcspn(p, ".[");
            if (s[i] != '{')
                return -1;
            i++;
            for (;;) {
                i = skip_ws(s, i);
                if (s[i] != '"')
                    return -1;
                size_t ks = i, ke = skip_str(s, i);
                int match = ke - ks >= 2 && ke - ks - 2 == kl && !strncmp(s + ks + 1, p, kl);
                i = skip_ws(s, ke);
                if (s[i] != ':')
                    return -1;
                i++;
                if (match) {
                    hit = (long)ks;
                    break;
                }
                i = skip_ws(s, skip_val(s, i));
                if (s[i] != ',')
                    return -1;
                i++;
            }
            p += kl;
            if (*p == '.')
                p++;
        }
    }
    return hit;
}

typedef struct ctx {
    const zs_json_doc *doc;
    zs_spec *spec;
    zs_err *e;
} ctx;

static void where(const ctx *c, const char *path, char *buf, size_t n)
{
    long off = locate(c->doc->text, path);
    if (off < 0) {
        snprintf(buf, n, "%s: %s", c->doc->source, path);
        return;
    }
    int line = 1, col = 1;
    for (long i = 0; i < off; i++) {
        if (c->doc->text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(buf, n, "%s:%d:%d: %s", c->doc->source, line, col, path);
}

static int fail(const ctx *c, const char *path, const char *fix, const char *what)
{
    char w[600];
    where(c, path, w, sizeof w);
    return zs_err_set(c->e, ZS_EINPUT, w, fix, "%s", what);
}

/* ---- point fields ----------------------------------------------------
 * The keys, types, ranges and checks are the study-point option table's
 * (zs_point_opts.h); this reader only turns JSON values into its text. */

/* The JSON value as the text the table parses, or NULL with *want naming
 * the JSON type the option needs. */
static const char *field_text(const zs_opt_spec *f, const json_t *v, char *buf, size_t n,
                              const char **want)
{
    switch (f->type) {
    case ZS_OPT_INT:
    case ZS_OPT_I64:
    case ZS_OPT_U64:
        *want = "an integer";
        if (!json_is_integer(v))
            return NULL;
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
        return buf;
    case ZS_OPT_FLAG:
        *want = "true or false";
        return json_is_boolean(v) ? (json_is_true(v) ? "1" : "0") : NULL;
    default:
        *want = "a string";
        return json_is_string(v) ? json_string_value(v) : NULL;
    }
}

/* Applies one configuration value to cfg; path locates it for errors. A
 * name check that named the value in `where` (a loader's message) is
 * reworded around the value, since the location replaces it. */
static int apply_field(const ctx *c, const zs_opt_spec *f, const json_t *v, const char *path,
                       zs_point_cfg *cfg)
{
    char buf[32], what[800];
    const char *want;
    const char *text = field_text(f, v, buf, sizeof buf, &want);
    if (!text) {
        char fix[64];
        snprintf(fix, sizeof fix, "give %s", want);
        snprintf(what, sizeof what, "'%s' must be %s", f->key, want);
        return fail(c, path, fix, what);
    }
    zs_err sub;
    zs_err_clear(&sub);
    zs_point_cfg next = *cfg;
    int rc = zs_opt_parse(f, text, ZS_EINPUT, NULL, &next, &sub);
    if (!rc && (rc = zs_opt_check(f, &next, ZS_EINPUT, NULL, &sub)) && sub.where[0]) {
        snprintf(what, sizeof what, "bad %s '%.200s' (%s)", f->key, text, sub.what);
        return fail(c, path, sub.fix[0] ? sub.fix : NULL, what);
    }
    if (rc)
        return fail(c, path, sub.fix[0] ? sub.fix : NULL, sub.what);
    *cfg = next;
    return ZS_OK;
}

static int check_object(const ctx *c, const json_t *v, const char *path, const char *what_is)
{
    if (json_is_object(v))
        return ZS_OK;
    char what[300];
    snprintf(what, sizeof what, "%s must be a JSON object", what_is);
    return fail(c, path, "write it as {\"key\": value, ...}", what);
}

/* Applies every member of obj that is a point field; `extra` lists the
 * other keys allowed here (NULL-terminated). */
static int apply_object(const ctx *c, const json_t *obj, const char *path, const char *const *extra,
                        zs_point_cfg *cfg)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        char sub[300];
        snprintf(sub, sizeof sub, "%s.%s", path, key);
        const zs_opt_spec *f = zs_popt_find_key(key);
        if (f) {
            if (apply_field(c, f, v, sub, cfg))
                return c->e->code;
            continue;
        }
        int ok = 0;
        for (int i = 0; extra && extra[i]; i++)
            ok |= !strcmp(extra[i], key);
        if (!ok) {
            char what[300], fix[900];
            snprintf(what, sizeof what, "unknown key '%s'", key);
            snprintf(fix, sizeof fix, "use one of: %s", zs_popt_keys());
            for (int i = 0; extra && extra[i]; i++)
                snprintf(fix + strlen(fix), sizeof fix - strlen(fix), ", %s", extra[i]);
            return fail(c, sub, fix, what);
        }
    }
    return ZS_OK;
}

static int get_string(const ctx *c, const json_t *obj, const char *key, const char *path,
                      int required, char *dst, size_t n)
{
    json_t *v = json_object_get(obj, key);
    char sub[300], what[300];
    snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
    if (!v) {
        if (!required)
            return ZS_OK;
        snprintf(what, sizeof what, "missing key '%s'", key);
        return fail(c, path, "add it", what);
    }
    if (!json_is_string(v) || (required && !json_string_length(v))) {
        snprintf(what, sizeof what, "'%s' must be a non-empty string", key);
        return fail(c, sub, "give a string in double quotes", what);
    }
    if (json_string_length(v) >= n) {
        snprintf(what, sizeof what, "'%s' is too long (at most %zu characters)", key, n - 1);
        return fail(c, sub, "shorten it", what);
    }
    snprintf(dst, n, "%s", json_string_value(v));
    return ZS_OK;
}

static int get_bool(const ctx *c, const json_t *obj, const char *key, const char *path, int *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return ZS_OK;
    if (!json_is_boolean(v)) {
        char sub[300], what[300];
        snprintf(sub, sizeof sub, "%s.%s", path, key);
        snprintf(what, sizeof what, "'%s' must be true or false", key);
        return fail(c, sub, "write true or false", what);
    }
    *out = json_is_true(v);
    return ZS_OK;
}

static int check_keys(const ctx *c, const json_t *obj, const char *path, const char *const *keys)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        int ok = 0;
        for (int i = 0; keys[i]; i++)
            ok |= !strcmp(keys[i], key);
        if (!ok) {
            char sub[300], what[300], fix[600] = "use one of: ";
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
            snprintf(what, sizeof what, "unknown key '%s'", key);
            for (int i = 0; keys[i]; i++)
                snprintf(fix + strlen(fix), sizeof fix - strlen(fix), "%s%s", i ? ", " : "",
                         keys[i]);
            return fail(c, sub, fix, what);
        }
    }
    return ZS_OK;
}

/* ---- metrics ------------------------------------------------------------- */

static const char *const metrics[] = {
    "tokens_per_s",     "iter_time_ms",   "speedup",          "mfu",     "exposed_share",
    "max_nic_util",     "attn_imbalance", "linear_imbalance", "plan_ms", "tokens_per_iter",
    "imbalance_degree", "delay_iters",    "xnode_p2p_us",     NULL};

int zs_spec_metric_valid(const char *name)
{
    for (int i = 0; metrics[i]; i++)
        if (!strcmp(metrics[i], name))
            return 1;
    return 0;
}

const char *zs_spec_metric_list(void)
{
    static char buf[256];
    if (!buf[0]) {
        size_t o = 0;
        for (int i = 0; metrics[i]; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", metrics[i]);
    }
    return buf;
}

/* ---- the parts of a spec -------------------------------------------------- */

static void scalar_label(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else
        buf[0] = '\0';
}

static int parse_plot(const ctx *c, const json_t *root)
{
    zs_spec_plot *p = &c->spec->plot;
    snprintf(p->kind, sizeof p->kind, "bars");
    snprintf(p->metric, sizeof p->metric, "tokens_per_s");
    json_t *o = json_object_get(root, "plot");
    if (!o)
        return ZS_OK;
    static const char *const keys[] = {"kind",   "metric", "x",    "xlabel",
                                       "ylabel", "logx",   "logy", NULL};
    if (check_object(c, o, "plot", "'plot'") || check_keys(c, o, "plot", keys) ||
        get_string(c, o, "kind", "plot", 0, p->kind, sizeof p->kind) ||
        get_string(c, o, "metric", "plot", 0, p->metric, sizeof p->metric) ||
        get_string(c, o, "x", "plot", 0, p->x, sizeof p->x) ||
        get_string(c, o, "xlabel", "plot", 0, p->xlabel, sizeof p->xlabel) ||
        get_string(c, o, "ylabel", "plot", 0, p->ylabel, sizeof p->ylabel) ||
        get_bool(c, o, "logx", "plot", &p->logx) || get_bool(c, o, "logy", "plot", &p->logy))
        return c->e->code;
    if (strcmp(p->kind, "bars") && strcmp(p->kind, "lines"))
        return fail(c, "plot.kind", "use bars or lines", "unknown plot kind");
    if (!zs_spec_metric_valid(p->metric)) {
        char fix[400];
        snprintf(fix, sizeof fix, "use one of: %s", zs_spec_metric_list());
        return fail(c, "plot.metric", fix, "unknown metric");
    }
    if (!strcmp(p->kind, "lines") && !p->x[0])
        return fail(c, "plot", "name the sweep axis that gives x (\"x\": \"nodes\")",
                    "a line plot needs \"x\"");
    return ZS_OK;
}

/* A sweep axis value: a scalar sets the field named like the axis; an
 * object sets its fields and may carry "label" and "x". */
static const char *const value_extra[] = {"label", "x", NULL};

static int value_apply(const ctx *c, const char *axis, const json_t *v, const char *path,
                       zs_point_cfg *cfg, char *label, size_t ln, double *x)
{
    if (json_is_object(v)) {
        if (apply_object(c, v, path, value_extra, cfg))
            return c->e->code;
        char sub[300];
        snprintf(sub, sizeof sub, "%s.label", path);
        json_t *l = json_object_get(v, "label");
        if (l && (!json_is_string(l) || !json_string_length(l)))
            return fail(c, sub, "give a short string", "'label' must be a non-empty string");
        if (l)
            snprintf(label, ln, "%s", json_string_value(l));
        else
            snprintf(label, ln, "%s", path);
        json_t *xv = json_object_get(v, "x");
        if (xv && !json_is_number(xv)) {
            snprintf(sub, sizeof sub, "%s.x", path);
            return fail(c, sub, "give a number", "'x' must be a number");
        }
        if (xv)
            *x = json_number_value(xv);
        return ZS_OK;
    }
    const zs_opt_spec *f = zs_popt_find_key(axis);
    if (!f) {
        char what[300];
        snprintf(what, sizeof what, "axis '%s' is not a configuration field", axis);
        return fail(c, path, "give its values as objects ({\"label\": ..., \"model\": ...})", what);
    }
    if (apply_field(c, f, v, path, cfg))
        return c->e->code;
    scalar_label(v, label, ln);
    if (json_is_number(v))
        *x = json_number_value(v);
    return ZS_OK;
}

static int parse_axes(const ctx *c, const json_t *root, const json_t **axes)
{
    zs_spec *s = c->spec;
    json_t *sw = json_object_get(root, "sweep");
    if (!sw)
        return ZS_OK;
    if (check_object(c, sw, "sweep", "'sweep'"))
        return c->e->code;
    const char *key;
    json_t *v;
    json_object_foreach(sw, key, v)
    {
        char path[300];
        snprintf(path, sizeof path, "sweep.%s", key);
        if (s->naxes == ZS_SPEC_MAX_AXES)
            return fail(c, path, "merge axes into object values", "too many sweep axes (max 8)");
        if (strlen(key) >= sizeof s->axis_name[0] || !*key || !strcmp(key, "case"))
            return fail(c, path, "use a short name other than 'case'", "bad axis name");
        if (!json_is_array(v) || !json_array_size(v))
            return fail(c, path, "give a non-empty array of values", "an axis must be a list");
        snprintf(s->axis_name[s->naxes], sizeof s->axis_name[0], "%s", key);
        axes[s->naxes++] = v;
    }
    return ZS_OK;
}

/* "{case}" and "{series}" in a timeline name become the labels (letters,
 * digits and '-' only), so every point of a spec writes its own file. */
static void timeline_name(char *t, size_t n, const char *case_label, const char *series_label)
{
    char out[512];
    size_t o = 0;
    for (const char *p = t; *p && o + 1 < sizeof out;) {
        const char *lab = NULL;
        if (!strncmp(p, "{case}", 6)) {
            lab = case_label;
            p += 6;
        } else if (!strncmp(p, "{series}", 8)) {
            lab = series_label;
            p += 8;
        }
        if (!lab) {
            out[o++] = *p++;
            continue;
        }
        for (; *lab && o + 1 < sizeof out; lab++)
            out[o++] = isalnum((unsigned char)*lab) ? (char)tolower((unsigned char)*lab) : '-';
    }
    out[o] = '\0';
    snprintf(t, n, "%s", out);
}

static int push_case(const ctx *c, zs_spec_case *cs, const zs_point_cfg *cfg, const json_t *series,
                     const char *where_)
{
    zs_spec *s = c->spec;
    if ((long)s->npoints + s->nseries > ZS_SPEC_MAX_POINTS)
        return fail(c, where_, "split the figure into several specs",
                    "the spec expands to more than 20000 points");
    zs_spec_case *nc = realloc(s->cases, (size_t)(s->ncases + 1) * sizeof *nc);
    if (!nc)
        return zs_err_set(c->e, ZS_ENOMEM, NULL, NULL, "out of memory expanding the spec");
    s->cases = nc;
    zs_spec_point *np = realloc(s->points, (size_t)(s->npoints + s->nseries) * sizeof *np);
    if (!np)
        return zs_err_set(c->e, ZS_ENOMEM, NULL, NULL, "out of memory expanding the spec");
    s->points = np;
    s->cases[s->ncases] = *cs;
    for (int k = 0; k < s->nseries; k++) {
        zs_spec_point *p = &s->points[s->npoints + k];
        p->cfg = *cfg;
        p->case_idx = s->ncases;
        p->series_idx = k;
        char path[64];
        snprintf(path, sizeof path, "series[%d]", k);
        if (apply_object(c, json_array_get(series, (size_t)k), path, value_extra, &p->cfg))
            return c->e->code;
        if (p->cfg.timeline[0])
            timeline_name(p->cfg.timeline, sizeof p->cfg.timeline, cs->label, s->series[k].label);
    }
    s->ncases++;
    s->npoints += s->nseries;
    return ZS_OK;
}

static int parse_series(const ctx *c, const json_t *root)
{
    zs_spec *s = c->spec;
    json_t *a = json_object_get(root, "series");
    if (!a)
        return fail(c, "", "add \"series\": [{\"label\": \"TE CP\", \"method\": \"te-cp\"}, ...]",
                    "missing key 'series'");
    if (!json_is_array(a) || !json_array_size(a))
        return fail(c, "series", "give a non-empty array of objects",
                    "'series' must be a non-empty list");
    s->nseries = (int)json_array_size(a);
    s->series = calloc((size_t)s->nseries, sizeof *s->series);
    if (!s->series)
        return zs_err_set(c->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_point_cfg scratch;
    zs_point_cfg_default(&scratch);
    for (int k = 0; k < s->nseries; k++) {
        char path[64];
        snprintf(path, sizeof path, "series[%d]", k);
        json_t *o = json_array_get(a, (size_t)k);
        if (check_object(c, o, path, "a series") ||
            get_string(c, o, "label", path, 1, s->series[k].label, sizeof s->series[k].label))
            return c->e->code;
        for (int j = 0; j < k; j++)
            if (!strcmp(s->series[j].label, s->series[k].label))
                return fail(c, path, "give every series its own label", "duplicate series label");
        /* errors in the fields are reported once here, not once per case */
        if (apply_object(c, o, path, value_extra, &scratch))
            return c->e->code;
    }
    s->baseline = -1;
    json_t *b = json_object_get(root, "baseline");
    if (b) {
        if (!json_is_string(b))
            return fail(c, "baseline", "give a series label", "'baseline' must be a string");
        for (int k = 0; k < s->nseries; k++)
            if (!strcmp(s->series[k].label, json_string_value(b)))
                s->baseline = k;
        if (s->baseline < 0)
            return fail(c, "baseline", "name one of the series labels",
                        "'baseline' is not a series label");
    }
    return ZS_OK;
}

static int expand(const ctx *c, const json_t *root, const zs_point_cfg *base)
{
    zs_spec *s = c->spec;
    const json_t *axes[ZS_SPEC_MAX_AXES];
    if (parse_axes(c, root, axes))
        return c->e->code;
    json_t *series = json_object_get(root, "series");
    int xaxis = -1;
    for (int a = 0; a < s->naxes; a++)
        if (!strcmp(s->axis_name[a], s->plot.x))
            xaxis = a;
    json_t *cases = json_object_get(root, "cases");
    if (s->plot.x[0] && xaxis < 0 && !cases)
        return fail(c, "plot.x", "name one of the sweep axes", "'x' is not a sweep axis");
    if (s->naxes > 0) {
        size_t idx[ZS_SPEC_MAX_AXES] = {0};
        for (;;) {
            zs_point_cfg cfg = *base;
            zs_spec_case cs;
            memset(&cs, 0, sizeof cs);
            cs.x = NAN;
            for (int a = 0; a < s->naxes; a++) {
                char path[300];
                double x = NAN;
                snprintf(path, sizeof path, "sweep.%s[%zu]", s->axis_name[a], idx[a]);
                if (value_apply(c, s->axis_name[a], json_array_get(axes[a], idx[a]), path, &cfg,
                                cs.axis[a], sizeof cs.axis[a], &x))
                    return c->e->code;
                if (a == xaxis)
                    cs.x = x;
                size_t o = strlen(cs.label);
                snprintf(cs.label + o, sizeof cs.label - o, "%s%s", a ? " / " : "", cs.axis[a]);
            }
            if (push_case(c, &cs, &cfg, series, "sweep"))
                return c->e->code;
            int a = s->naxes - 1;
            while (a >= 0 && ++idx[a] == json_array_size(axes[a]))
                idx[a--] = 0;
            if (a < 0)
                break;
        }
    }
    if (cases) {
        if (!json_is_array(cases) || !json_array_size(cases))
            return fail(c, "cases", "give a non-empty array of objects",
                        "'cases' must be a non-empty list");
        for (size_t i = 0; i < json_array_size(cases); i++) {
            char path[64];
            snprintf(path, sizeof path, "cases[%zu]", i);
            json_t *o = json_array_get(cases, i);
            zs_point_cfg cfg = *base;
            zs_spec_case cs;
            memset(&cs, 0, sizeof cs);
            cs.x = NAN;
            if (check_object(c, o, path, "a case") ||
                get_string(c, o, "label", path, 1, cs.label, sizeof cs.label) ||
                apply_object(c, o, path, value_extra, &cfg))
                return c->e->code;
            json_t *xv = json_object_get(o, "x");
            if (xv && !json_is_number(xv)) {
                char sub[80];
                snprintf(sub, sizeof sub, "%s.x", path);
                return fail(c, sub, "give a number", "'x' must be a number");
            }
            if (xv)
                cs.x = json_number_value(xv);
            for (int a = 0; a < s->naxes; a++) {
                json_t *v = json_object_get(o, s->axis_name[a]);
                if (v)
                    scalar_label(v, cs.axis[a], sizeof cs.axis[a]);
            }
            if (push_case(c, &cs, &cfg, series, path))
                return c->e->code;
        }
    }
    if (s->ncases == 0) { /* neither sweep nor cases: one case, the base */
        zs_spec_case cs;
        memset(&cs, 0, sizeof cs);
        cs.x = NAN;
        snprintf(cs.label, sizeof cs.label, "%s", s->name);
        if (push_case(c, &cs, base, series, "base"))
            return c->e->code;
    }
    for (int i = 0; i < s->npoints; i++) {
        const zs_point_cfg *p = &s->points[i].cfg;
        if (!strcmp(p->method, "") || !zs_planner_find(p->method)) {
            char path[64];
            snprintf(path, sizeof path, "series[%d]", s->points[i].series_idx);
            return fail(c, path, "set \"method\" in the series or the base", "no method set");
        }
    }
    return ZS_OK;
}

static int parse_paper(const ctx *c, const json_t *root)
{
    zs_spec *s = c->spec;
    json_t *a = json_object_get(root, "paper");
    if (!a)
        return ZS_OK;
    if (!json_is_array(a))
        return fail(c, "paper", "give an array of objects", "'paper' must be a list");
    s->npaper = (int)json_array_size(a);
    s->paper = calloc((size_t)s->npaper + 1, sizeof *s->paper);
    if (!s->paper)
        return zs_err_set(c->e, ZS_ENOMEM, NULL, NULL, "out of memory");
    static const char *const keys[] = {"what",  "series", "metric", "agg", "match",
                                       "value", "note",   "source", NULL};
    for (int i = 0; i < s->npaper; i++) {
        zs_spec_paper *p = &s->paper[i];
        char path[64], sub[96];
        snprintf(path, sizeof path, "paper[%d]", i);
        json_t *o = json_array_get(a, (size_t)i);
        snprintf(p->agg, sizeof p->agg, "mean");
        if (check_object(c, o, path, "a paper entry") || check_keys(c, o, path, keys) ||
            get_string(c, o, "what", path, 1, p->what, sizeof p->what) ||
            get_string(c, o, "series", path, 1, p->series, sizeof p->series) ||
            get_string(c, o, "metric", path, 1, p->metric, sizeof p->metric) ||
            get_string(c, o, "agg", path, 0, p->agg, sizeof p->agg) ||
            get_string(c, o, "note", path, 0, p->note, sizeof p->note) ||
            get_string(c, o, "source", path, 0, p->source, sizeof p->source))
            return c->e->code;
        int found = 0;
        for (int k = 0; k < s->nseries; k++)
            found |= !strcmp(s->series[k].label, p->series);
        snprintf(sub, sizeof sub, "%s.series", path);
        if (!found)
            return fail(c, sub, "name one of the series labels", "unknown series");
        snprintf(sub, sizeof sub, "%s.metric", path);
        if (!zs_spec_metric_valid(p->metric)) {
            char fix[400];
            snprintf(fix, sizeof fix, "use one of: %s", zs_spec_metric_list());
            return fail(c, sub, fix, "unknown metric");
        }
        if (!strcmp(p->metric, "speedup") && s->baseline < 0)
            return fail(c, sub, "add \"baseline\": \"<series label>\" at the top level",
                        "a speedup needs a baseline series");
        snprintf(sub, sizeof sub, "%s.agg", path);
        if (strcmp(p->agg, "value") && strcmp(p->agg, "mean") && strcmp(p->agg, "geomean") &&
            strcmp(p->agg, "min") && strcmp(p->agg, "max"))
            return fail(c, sub, "use value, mean, geomean, min or max", "unknown aggregate");
        json_t *v = json_object_get(o, "value");
        snprintf(sub, sizeof sub, "%s.value", path);
        if (v && !json_is_number(v) && !json_is_null(v))
            return fail(c, sub, "give a number or null (not published)",
                        "'value' must be a number");
        if (v && json_is_number(v)) {
            p->has_value = 1;
            p->value = json_number_value(v);
        }
        json_t *m = json_object_get(o, "match");
        if (!m)
            continue;
        snprintf(sub, sizeof sub, "%s.match", path);
        if (check_object(c, m, sub, "'match'"))
            return c->e->code;
        const char *key;
        json_t *mv;
        json_object_foreach(m, key, mv)
        {
            char msub[160];
            snprintf(msub, sizeof msub, "%s.%s", sub, key);
            int ok = !strcmp(key, "case");
            for (int ax = 0; ax < s->naxes; ax++)
                ok |= !strcmp(s->axis_name[ax], key);
            if (!ok)
                return fail(c, msub, "name a sweep axis or \"case\"", "unknown axis in 'match'");
            if (p->nmatch == ZS_SPEC_MAX_MATCH)
                return fail(c, msub, "match on fewer axes", "too many match keys");
            if (!json_is_string(mv) && !json_is_number(mv))
                return fail(c, msub, "give the axis label as a string or number",
                            "bad match value");
            snprintf(p->match_axis[p->nmatch], sizeof p->match_axis[0], "%s", key);
            scalar_label(mv, p->match_val[p->nmatch], sizeof p->match_val[0]);
            p->nmatch++;
        }
    }
    return ZS_OK;
}

static int parse_root(const ctx *c, const json_t *root)
{
    zs_spec *s = c->spec;
    static const char *const keys[] = {"name",     "title", "description", "assumptions",
                                       "base",     "sweep", "cases",       "series",
                                       "baseline", "plot",  "paper",       NULL};
    if (!json_is_object(root))
        return fail(c, "", "write the spec as one JSON object", "a spec must be a JSON object");
    if (check_keys(c, root, "", keys) ||
        get_string(c, root, "name", "", 1, s->name, sizeof s->name) ||
        get_string(c, root, "title", "", 0, s->title, sizeof s->title) ||
        get_string(c, root, "description", "", 0, s->description, sizeof s->description))
        return c->e->code;
    for (const char *p = s->name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
            return fail(c, "name", "use letters, digits, '-', '_' and '.' (it names files)",
                        "bad spec name");
    if (!s->title[0])
        snprintf(s->title, sizeof s->title, "%s", s->name);
    json_t *as = json_object_get(root, "assumptions");
    if (as) {
        if (!json_is_array(as))
            return fail(c, "assumptions", "give an array of strings",
                        "'assumptions' must be a list");
        s->nassumptions = (int)json_array_size(as);
        s->assumptions = calloc((size_t)s->nassumptions + 1, sizeof *s->assumptions);
        if (!s->assumptions)
            return zs_err_set(c->e, ZS_ENOMEM, NULL, NULL, "out of memory");
        for (int i = 0; i < s->nassumptions; i++) {
            json_t *v = json_array_get(as, (size_t)i);
            char path[64];
            snprintf(path, sizeof path, "assumptions[%d]", i);
            if (!json_is_string(v))
                return fail(c, path, "give a sentence in double quotes",
                            "an assumption must be a string");
            snprintf(s->assumptions[i], sizeof s->assumptions[0], "%s", json_string_value(v));
        }
    }
    zs_point_cfg base;
    zs_point_cfg_default(&base);
    json_t *b = json_object_get(root, "base");
    if (b && (check_object(c, b, "base", "'base'") || apply_object(c, b, "base", NULL, &base)))
        return c->e->code;
    if (parse_plot(c, root) || parse_series(c, root) || expand(c, root, &base) ||
        parse_paper(c, root))
        return c->e->code;
    return ZS_OK;
}

static int load_doc(zs_json_doc *doc, const char *path, zs_spec **out, zs_err *e)
{
    zs_spec *s = calloc(1, sizeof *s);
    if (!s) {
        zs_json_doc_free(doc);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory loading a spec");
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    ctx c = {doc, s, e};
    int rc = parse_root(&c, doc->root);
    zs_json_doc_free(doc);
    if (rc) {
        zs_spec_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

int zs_spec_load(const char *path, zs_spec **out, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_json_doc_load_file(path, &doc, e);
    if (rc)
        return rc;
    return load_doc(doc, path, out, e);
}

int zs_spec_load_text(const char *source, const char *text, zs_spec **out, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_json_doc_load_text(source, text, &doc, e);
    if (rc)
        return rc;
    return load_doc(doc, source, out, e);
}

void zs_spec_free(zs_spec *s)
{
    if (!s)
        return;
    free(s->assumptions);
    free(s->cases);
    free(s->series);
    free(s->points);
    free(s->paper);
    free(s);
}

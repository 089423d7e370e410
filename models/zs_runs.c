/* The published-runs reader: see zs_runs.h. */
#include "zs_runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zs_fdio.h"
#include "zs_model.h"
#include "zs_num.h"

enum {
    C_MODEL,
    C_TASK,
    C_GPUS,
    C_GBS,
    C_MBS,
    C_SEQ,
    C_TP,
    C_PP,
    C_CP,
    C_VP,
    C_PREC,
    C_RC,
    C_ZERO,
    C_TOK,
    C_TFL,
    C_KERN, /* optional columns after the schema's 15, in the header's order */
    C_SP,
    C_N
};
static const char *const cols[C_N] = {
    "model",     "task",      "gpus", "gbs",          "mbs",
    "seq",       "tp",        "pp",   "cp",           "vp",
    "precision", "recompute", "zero", "tokens_s_gpu", "model_tflops_gpu",
    "kernels",   "sp"};
static const char header_text[] = "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,"
                                  "zero,tokens_s_gpu,model_tflops_gpu";
static const char *const task_names[] = {"pretrain", "sft", "lora"};

const char *zs_run_task_name(zs_run_task t)
{
    return t >= ZS_TASK_PRETRAIN && t <= ZS_TASK_LORA ? task_names[t] : "?";
}

int zs_run_dp(const zs_run *r)
{
    return r->gpus / (r->tp * r->pp * r->cp);
}

int zs_run_microbatches(const zs_run *r)
{
    return r->gbs / (r->mbs * zs_run_dp(r));
}

void zs_runs_free(zs_runs *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n = 0;
}

/* One row's reading state: where errors point. */
typedef struct rd {
    char where[600];
    const char *path;
    int line;
    zs_err *e;
    int ncols;      /* the header's cells: C_KERN (the schema) plus the optional ones */
    int at[C_N];    /* the cell each column is in (-1: an optional column not given) */
    char *tok[C_N]; /* a row's cells, by column (the optional ones absent: "") */
} rd;

static int cell_err(rd *x, int col, const char *fix, const char *what, const char *val)
{
    snprintf(x->where, sizeof x->where, "%s:%d", x->path, x->line);
    return zs_err_set(x->e, ZS_EINPUT, x->where, fix, "column %d (%s): %s ('%.40s')",
                      x->at[col] + 1, cols[col], what, val);
}

static int int_cell(rd *x, char **tok, int col, int64_t max, int *out)
{
    int64_t v;
    zs_err tmp;
    if (!*tok[col])
        return cell_err(x, col, "every row needs this figure", "empty", "");
    if (zs_num_i64(tok[col], 1, max, ZS_EINPUT, cols[col], &v, &tmp) != ZS_OK) {
        char fix[64];
        snprintf(fix, sizeof fix, "give a whole number from 1 to %lld", (long long)max);
        return cell_err(x, col, fix, "not a whole number in range", tok[col]);
    }
    *out = (int)v;
    return ZS_OK;
}

/* A measurement: empty (0, not published) or a positive finite number. */
static int meas_cell(rd *x, char **tok, int col, double *out)
{
    zs_err tmp;
    *out = 0;
    if (!*tok[col])
        return ZS_OK;
    if (zs_num_f64(tok[col], 1e-9, 1e12, ZS_EINPUT, cols[col], out, &tmp) != ZS_OK)
        return cell_err(x, col, "give a positive number, or leave the cell empty (not published)",
                        "not a positive number", tok[col]);
    return ZS_OK;
}

static int name_cell(rd *x, char **tok, int col, const char *const *names, int n, int empty_ok,
                     int *out)
{
    if (empty_ok && !*tok[col]) {
        *out = -1;
        return ZS_OK;
    }
    for (int i = 0; i < n; i++)
        if (strcasecmp(tok[col], names[i]) == 0) {
            *out = i;
            return ZS_OK;
        }
    char fix[160];
    int k = snprintf(fix, sizeof fix, "use one of");
    for (int i = 0; i < n && k > 0 && (size_t)k < sizeof fix; i++)
        k += snprintf(fix + k, sizeof fix - (size_t)k, "%s %s", i ? "," : "", names[i]);
    if (empty_ok && k > 0 && (size_t)k < sizeof fix)
        snprintf(fix + k, sizeof fix - (size_t)k, ", or leave it empty (not published)");
    return cell_err(x, col, fix, "unknown value", tok[col]);
}

/* The model: a preset name (a path would let a data file open other files). */
static int model_cell(rd *x, char **tok, zs_run *r)
{
    const char *s = tok[C_MODEL];
    size_t n = strlen(s);
    if (!n || n >= sizeof r->model || strchr(s, '/') || strstr(s, ".json"))
        return cell_err(x, C_MODEL, "name a model preset (`zepsim list models`)",
                        "not a model preset name", s);
    zs_model m;
    zs_err tmp;
    memcpy(r->model, s, n + 1);
    /* a well-formed name without a preset is a row the predictor cannot
     * express (its reason), not a broken file */
    if (zs_model_load(s, &m, &tmp) != ZS_OK) {
        r->no_model = 1;
        return ZS_OK;
    }
    /* an uneven split (126 layers over pp 8) is a run as published: the
     * predictor prices its slowest stage; fewer layers than chunks is not */
    if (m.layers < r->pp * r->vp) {
        char what[160];
        snprintf(what, sizeof what, "%s's %d layers are fewer than pp %d x vp %d chunks", r->model,
                 m.layers, r->pp, r->vp);
        return cell_err(x, C_VP, "give pp x vp of at most the layers", what, tok[C_VP]);
    }
    return ZS_OK;
}

static int parse_row(rd *x, char **tok, zs_run *r)
{
    static const char *const zeros[] = {"0", "1", "2", "3"};
    /* the cells' names are zs_step's own, so a new mode is read as it is
     * printed */
    const char *prec[ZS_PREC_FP8_CS + 1], *rcn[ZS_STEP_RC_N], *kern[ZS_KERN_N];
    for (int i = 0; i <= ZS_PREC_FP8_CS; i++)
        prec[i] = zs_precision_name((zs_precision)i);
    for (int i = 0; i < ZS_STEP_RC_N; i++)
        rcn[i] = zs_step_rc_name((zs_step_rc)i);
    for (int i = 0; i < ZS_KERN_N; i++)
        kern[i] = zs_step_kernels_name((zs_step_kernels)i);
    int rc, v = 0;
    memset(r, 0, sizeof *r);
    r->line = x->line;
    if ((rc = name_cell(x, tok, C_TASK, task_names, 3, 0, &v)))
        return rc;
    r->task = (zs_run_task)v;
    if ((rc = int_cell(x, tok, C_GPUS, ZS_RUNS_MAX_GPUS, &r->gpus)) ||
        (rc = int_cell(x, tok, C_GBS, 1 << 30, &r->gbs)) ||
        (rc = int_cell(x, tok, C_MBS, 1 << 20, &r->mbs)) ||
        (rc = int_cell(x, tok, C_SEQ, ZS_RUNS_MAX_SEQ, &r->seq)) ||
        (rc = int_cell(x, tok, C_TP, 1024, &r->tp)) ||
        (rc = int_cell(x, tok, C_PP, 1024, &r->pp)) ||
        (rc = int_cell(x, tok, C_CP, 1024, &r->cp)) || (rc = int_cell(x, tok, C_VP, 1024, &r->vp)))
        return rc;
    if ((rc = name_cell(x, tok, C_PREC, prec, ZS_PREC_FP8_CS + 1, 0, &v)))
        return rc;
    r->precision = (zs_precision)v;
    r->kernels = ZS_KERN_FUSED;
    if ((rc = name_cell(x, tok, C_KERN, kern, ZS_KERN_N, 1, &v)))
        return rc;
    if (v >= 0)
        r->kernels = (zs_step_kernels)v;
    static const char *const onoff[] = {"off", "on"};
    if ((rc = name_cell(x, tok, C_SP, onoff, 2, 1, &v)))
        return rc;
    r->sp = v != 0; /* empty: on, Megatron's default with TP */
    if ((rc = name_cell(x, tok, C_RC, rcn, ZS_STEP_RC_N, 1, &r->recompute)) ||
        (rc = name_cell(x, tok, C_ZERO, zeros, 4, 1, &r->zero)) ||
        (rc = meas_cell(x, tok, C_TOK, &r->tokens_s_gpu)) ||
        (rc = meas_cell(x, tok, C_TFL, &r->model_tflops_gpu)))
        return rc;
    char what[200];
    long long mp = (long long)r->tp * r->pp * r->cp;
    if (r->gpus % mp) {
        snprintf(what, sizeof what, "%d GPUs do not divide into tp %d x pp %d x cp %d = %lld",
                 r->gpus, r->tp, r->pp, r->cp, mp);
        return cell_err(x, C_GPUS, "give a GPU count that tp x pp x cp divides", what, tok[C_GPUS]);
    }
    long long dp = r->gpus / mp;
    if (r->gbs % (r->mbs * dp)) {
        snprintf(what, sizeof what, "global batch %d does not divide into mbs %d x dp %lld", r->gbs,
                 r->mbs, dp);
        return cell_err(x, C_GBS, "give a global batch that mbs x dp (gpus / (tp pp cp)) divides",
                        what, tok[C_GBS]);
    }
    if (r->seq % (2 * r->cp) || (r->seq / r->cp) % r->tp) {
        snprintf(what, sizeof what,
                 "%d tokens do not split into 2 x cp %d chunks of a multiple of tp %d", r->seq,
                 r->cp, r->tp);
        return cell_err(x, C_SEQ, "give a sequence length divisible by 2 cp tp", what, tok[C_SEQ]);
    }
    if (r->tokens_s_gpu <= 0 && r->model_tflops_gpu <= 0)
        return cell_err(x, C_TOK, "give tokens_s_gpu or model_tflops_gpu (or both)",
                        "neither measurement is published", tok[C_TOK]);
    return model_cell(x, tok, r);
}

/* Splits line at ',' into tok: the number of fields (at most max; -1 when more). */
static int split(char *line, char **tok, int max)
{
    int n = 0;
    for (char *p = line;;) {
        if (n == max)
            return -1;
        tok[n++] = p;
        char *q = strchr(p, ',');
        if (!q)
            return n;
        *q = '\0';
        p = q + 1;
    }
}

/* Strips blanks around a cell in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* The header: the schema's 15 columns, then any of the optional ones
 * (kernels, sp), each at most once, in any order; fills x->at. */
static int read_header(rd *x, char *t)
{
    static const char fix[] = "the first line that is not a comment must be the header "
                              "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,"
                              "zero,tokens_s_gpu,model_tflops_gpu (optionally ,kernels and ,sp)";
    size_t hn = sizeof header_text - 1;
    if (strncmp(t, header_text, hn) != 0 || (t[hn] && t[hn] != ','))
        return zs_err_set(x->e, ZS_EINPUT, x->where, fix, "not the runs header ('%.60s')", t);
    for (int c = 0; c < C_N; c++)
        x->at[c] = c < C_KERN ? c : -1;
    x->ncols = C_KERN;
    char *tok[C_N];
    int n = t[hn] ? split(t + hn + 1, tok, C_N - C_KERN) : 0;
    if (n < 0)
        return zs_err_set(x->e, ZS_EINPUT, x->where, fix, "too many columns");
    for (int i = 0; i < n; i++) {
        char *name = trim(tok[i]);
        int c = C_KERN;
        while (c < C_N && strcasecmp(name, cols[c]) != 0)
            c++;
        if (c == C_N || x->at[c] >= 0)
            return zs_err_set(x->e, ZS_EINPUT, x->where, fix, "%s column '%.30s'",
                              c == C_N ? "unknown" : "repeated", name);
        x->at[c] = x->ncols++;
    }
    return ZS_OK;
}

static int read_rows(rd *x, char *text, zs_runs *out)
{
    char *cur = text, *line, *tok[C_N];
    int have_header = 0, cap = 0;
    while ((line = zs_next_line(&cur))) {
        x->line++;
        snprintf(x->where, sizeof x->where, "%s:%d", x->path, x->line);
        char *t = trim(line);
        if (!*t || *t == '#')
            continue;
        if (!have_header) {
            int rc = read_header(x, t);
            if (rc)
                return rc;
            have_header = 1;
            continue;
        }
        int n = split(t, tok, x->ncols);
        if (n != x->ncols)
            return zs_err_set(x->e, ZS_EINPUT, x->where,
                              "every row needs the header's cells (empty where not published)",
                              n < 0 ? "more than %d cells" : "%d cells, the header has %d",
                              n < 0 ? x->ncols : n, x->ncols);
        static char none[] = "";
        for (int c = 0; c < C_N; c++) /* by column, absent optional ones empty */
            x->tok[c] = x->at[c] >= 0 ? trim(tok[x->at[c]]) : none;
        if (out->n == ZS_RUNS_MAX_ROWS)
            return zs_err_set(x->e, ZS_EINPUT, x->where, "split the file", "more than %d runs",
                              ZS_RUNS_MAX_ROWS);
        if (out->n == cap) {
            cap = cap ? 2 * cap : 32;
            zs_run *p = realloc(out->rows, sizeof *p * (size_t)cap);
            if (!p)
                return zs_err_set(x->e, ZS_ENOMEM, NULL, NULL, "out of memory");
            out->rows = p;
        }
        int rc = parse_row(x, x->tok, &out->rows[out->n]);
        if (rc)
            return rc;
        out->n++;
    }
    if (!have_header)
        return zs_err_set(x->e, ZS_EINPUT, x->path, "start the file with the runs header",
                          "no header line (empty file?)");
    if (!out->n)
        return zs_err_set(x->e, ZS_EINPUT, x->path, "add at least one run below the header",
                          "no runs");
    return ZS_OK;
}

int zs_runs_read(const char *path, zs_runs *out, zs_err *e)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    char *text;
    size_t len;
    int rc = zs_read_file(path, NULL, &text, &len, e);
    if (rc)
        return rc;
    if (memchr(text, '\0', len)) {
        free(text);
        return zs_err_set(e, ZS_EINPUT, path, "give a text CSV file", "binary data (a NUL byte)");
    }
    rd x = {{0}, path, 0, e, C_KERN, {0}, {0}};
    rc = read_rows(&x, text, out);
    free(text);
    if (rc)
        zs_runs_free(out);
    return rc;
}

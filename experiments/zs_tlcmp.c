/* Timeline comparison: see zs_tlcmp.h. */
#include "zs_tlcmp.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "zs_config.h"
#include "zs_fdio.h"
#include "zs_sort.h"

/* Bounds on an event (microseconds): far past any run (1e15 us is 31
 * years), and small enough that spans and sums stay finite. */
#define TL_MAX_TS  1e18
#define TL_MAX_DUR 1e15
/* Below this measured duration (1 ns) no relative error is taken. */
#define TL_MIN_ERR_DUR 1e-3

typedef struct ev {
    int rank;
    const char *name, *cat; /* owned by the file's JSON document */
    double ts, dur;
    size_t idx; /* position in the file: a stable tie-break */
} ev;

typedef struct tl_file {
    zs_json_doc **doc; /* one per file read */
    int ndoc;
    ev *v;
    size_t n, cap;
    double t0, t1;
} tl_file;

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

static int dvec_push(dvec *d, double x)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        double *v = realloc(d->v, cap * sizeof *v);
        if (!v)
            return ZS_ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = x;
    return ZS_OK;
}

static int cmp_key(const ev *a, const ev *b)
{
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->cat, b->cat);
}

static int cmp_ev(const void *pa, const void *pb)
{
    const ev *a = pa, *b = pb;
    int c = cmp_key(a, b);
    if (c)
        return c;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static void file_free(tl_file *f)
{
    free(f->v);
    for (int i = 0; i < f->ndoc; i++)
        zs_json_doc_free(f->doc[i]);
    free(f->doc);
    memset(f, 0, sizeof *f);
}

static int bad_event(zs_err *e, const char *path, size_t i, const char *what)
{
    char where[1200];
    snprintf(where, sizeof where, "%s: traceEvents[%zu]", path, i);
    return zs_err_set(e, ZS_EINPUT, where,
                      "compare timelines written by `zepsim hw run --timeline` or `zepsim run "
                      "--backend sim --timeline`",
                      "complete event (\"ph\": \"X\") %s", what);
}

/* A gzip-compressed timeline (".gz", as zepsim writes when asked): read
 * through zlib, up to the input limit of JSON once decompressed (a small
 * file can inflate to any size). */
static int load_gz(const char *path, zs_json_doc **out, zs_err *e)
{
    const size_t max = zs_input_limit();
    gzFile g = gzopen(path, "rb");
    if (!g)
        return zs_err_set(e, ZS_EINPUT, path, "check the path", "cannot open file");
    size_t n = 0, cap = max < (1 << 20) ? max : 1 << 20;
    char *buf = malloc(cap + 1);
    int rc = buf ? ZS_OK : zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading file");
    while (rc == ZS_OK) {
        if (n == cap && cap < max) {
            size_t ncap = cap < max / 2 ? 2 * cap : max;
            char *b = realloc(buf, ncap + 1);
            if (!b) {
                rc = zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading file");
                break;
            }
            buf = b;
            cap = ncap;
        }
        char more;
        unsigned want = cap - n > (1u << 30) ? 1u << 30 : (unsigned)(cap - n);
        /* at the limit, one byte more says the file is too large */
        int k = n == cap ? gzread(g, &more, 1) : gzread(g, buf + n, want);
        if (k < 0) {
            int zerr;
            rc = zs_err_set(e, ZS_EINPUT, path, "check that the file is a whole gzip file",
                            "cannot decompress: %s", gzerror(g, &zerr));
        } else if (k == 0) {
            break;
        } else if (n == cap) {
            rc = zs_err_set(e, ZS_EINPUT, path,
                            "write a smaller timeline (--timeline-ranks, --timeline-layers), or "
                            "raise the limit with the environment variable ZEPSIM_MAX_INPUT_MB",
                            "more than the %zu MiB input limit of JSON", max >> 20);
        }
        n += k > 0 && n < cap ? (size_t)k : 0;
    }
    gzclose(g);
    if (rc == ZS_OK) {
        buf[n] = '\0';
        if (strlen(buf) != n)
            rc = zs_err_set(e, ZS_EINPUT, path, "give a timeline written by zepsim",
                            "file contains a NUL byte (binary file?)");
        else
            rc = zs_json_doc_load_text(path, buf, out, e);
    }
    free(buf);
    return rc;
}

/* Appends one file's complete events to f. */
static int file_add(const char *path, tl_file *f, zs_err *e)
{
    zs_json_doc **d = realloc(f->doc, sizeof *d * (size_t)(f->ndoc + 1));
    if (!d)
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the timeline");
    f->doc = d;
    size_t plen = strlen(path);
    int rc = plen > 3 && !strcmp(path + plen - 3, ".gz")
                 ? load_gz(path, &f->doc[f->ndoc], e)
                 : zs_json_doc_load_file(path, &f->doc[f->ndoc], e);
    if (rc)
        return rc;
    json_t *root = f->doc[f->ndoc++]->root;
    json_t *evs = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(evs))
        return zs_err_set(e, ZS_EINPUT, path, "give a Chrome trace (Perfetto / chrome://tracing)",
                          "not a timeline: no \"traceEvents\" array");
    size_t n = json_array_size(evs);
    if (f->n + n > f->cap) {
        size_t cap = f->n + n + 1;
        ev *v = realloc(f->v, cap * sizeof *v);
        if (!v)
            return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the timeline");
        f->v = v;
        f->cap = cap;
    }
    size_t n0 = f->n;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(evs, i);
        json_t *ph = json_object_get(o, "ph");
        if (!json_is_object(o))
            return bad_event(e, path, i, "expected: the entry is not an object");
        if (!json_is_string(ph) || strcmp(json_string_value(ph), "X") != 0)
            continue; /* metadata and instant events carry no op */
        json_t *name = json_object_get(o, "name"), *cat = json_object_get(o, "cat");
        json_t *ts = json_object_get(o, "ts"), *dur = json_object_get(o, "dur");
        json_t *rank = json_object_get(json_object_get(o, "args"), "rank");
        if (!json_is_string(name))
            return bad_event(e, path, i, "without a string \"name\"");
        if (!json_is_number(ts) || !json_is_number(dur) || !(json_number_value(dur) >= 0) ||
            !(fabs(json_number_value(ts)) <= TL_MAX_TS) || !(json_number_value(dur) <= TL_MAX_DUR))
            return bad_event(e, path, i,
                             "without numbers \"ts\" in [-1e18, 1e18] and \"dur\" in [0, 1e15] "
                             "(microseconds)");
        if (!json_is_integer(rank) || json_integer_value(rank) < 0 ||
            json_integer_value(rank) > 1 << 24)
            return bad_event(e, path, i, "without an integer \"args\": {\"rank\": R >= 0}");
        ev *x = &f->v[f->n++];
        x->rank = (int)json_integer_value(rank);
        x->name = json_string_value(name);
        x->cat = json_is_string(cat) ? json_string_value(cat) : "";
        x->ts = json_number_value(ts);
        x->dur = json_number_value(dur);
        x->idx = f->n; /* file order across files: a stable tie-break */
        if (x->ts < f->t0)
            f->t0 = x->ts;
        if (x->ts + x->dur > f->t1)
            f->t1 = x->ts + x->dur;
    }
    if (f->n == n0)
        return zs_err_set(e, ZS_EINPUT, path, "write the timeline with --timeline on a run",
                          "the timeline has no complete (\"ph\": \"X\") events");
    return ZS_OK;
}

static int file_load(const char *const *paths, int np, tl_file *f, zs_err *e)
{
    memset(f, 0, sizeof *f);
    f->t0 = INFINITY;
    f->t1 = -INFINITY;
    for (int i = 0; i < np; i++) {
        int rc = file_add(paths[i], f, e);
        if (rc)
            return rc;
    }
    if (np < 1)
        return zs_err_set(e, ZS_EUSAGE, "timeline compare", "give at least one file per side",
                          "no timeline file");
    qsort(f->v, f->n, sizeof *f->v, cmp_ev);
    return ZS_OK;
}

typedef struct acc {
    zs_tlcmp_row row;
    dvec a, b, abs_err, err;
} acc;

static acc *acc_find(acc **v, size_t *n, size_t *cap, const ev *x)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i].row.name, x->name) && !strcmp((*v)[i].row.cat, x->cat))
            return &(*v)[i];
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        acc *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return NULL;
        *v = nv;
        *cap = c;
    }
    acc *a = &(*v)[(*n)++];
    memset(a, 0, sizeof *a);
    snprintf(a->row.name, sizeof a->row.name, "%s", x->name);
    snprintf(a->row.cat, sizeof a->row.cat, "%s", x->cat);
    return a;
}

static int cmp_row(const void *pa, const void *pb)
{
    const zs_tlcmp_row *a = pa, *b = pb;
    if (a->a_total_us != b->a_total_us)
        return a->a_total_us > b->a_total_us ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->cat, b->cat);
}

/* Pairs the two sorted event lists key by key and fills c. */
static int pair_up(const tl_file *A, const tl_file *B, zs_tlcmp *c)
{
    acc *v = NULL;
    size_t n = 0, cap = 0, i = 0, j = 0;
    dvec comp = {0}, comm = {0};
    int rc = ZS_OK;
    while (rc == ZS_OK && (i < A->n || j < B->n)) {
        int k = i >= A->n ? 1 : j >= B->n ? -1 : cmp_key(&A->v[i], &B->v[j]);
        if (k < 0) {
            c->only_a++;
            i++;
            continue;
        }
        if (k > 0) {
            c->only_b++;
            j++;
            continue;
        }
        acc *a = acc_find(&v, &n, &cap, &A->v[i]);
        if (!a) {
            rc = ZS_ENOMEM;
            break;
        }
        const ev *key = &A->v[i];
        while (rc == ZS_OK && i < A->n && j < B->n && !cmp_key(&A->v[i], key) &&
               !cmp_key(&B->v[j], key)) {
            double x = A->v[i].dur, y = B->v[j].dur;
            a->row.pairs++;
            a->row.a_total_us += x;
            if (dvec_push(&a->a, x) || dvec_push(&a->b, y))
                rc = ZS_ENOMEM;
            if (rc == ZS_OK && x >= TL_MIN_ERR_DUR) {
                double r = (y - x) / x * 100;
                a->row.err_pairs++;
                if (dvec_push(&a->err, r) || dvec_push(&a->abs_err, fabs(r)) ||
                    dvec_push(!strcmp(key->cat, "compute") ? &comp : &comm, fabs(r)))
                    rc = ZS_ENOMEM;
            }
            i++;
            j++;
        }
        for (; i < A->n && !cmp_key(&A->v[i], key); i++)
            c->only_a++;
        for (; j < B->n && !cmp_key(&B->v[j], key); j++)
            c->only_b++;
    }
    if (rc == ZS_OK && n && !(c->rows = calloc(n, sizeof *c->rows)))
        rc = ZS_ENOMEM;
    for (size_t k = 0; k < n; k++) {
        if (rc == ZS_OK) {
            zs_tlcmp_row *r = &c->rows[c->nrows++];
            *r = v[k].row;
            r->a_med_us = zs_median(v[k].a.v, v[k].a.n);
            r->b_med_us = zs_median(v[k].b.v, v[k].b.n);
            r->abs_err_med_pct = zs_median(v[k].abs_err.v, v[k].abs_err.n);
            r->err_med_pct = zs_median(v[k].err.v, v[k].err.n);
        }
        free(v[k].a.v);
        free(v[k].b.v);
        free(v[k].abs_err.v);
        free(v[k].err.v);
    }
    free(v);
    if (rc == ZS_OK) {
        qsort(c->rows, c->nrows, sizeof *c->rows, cmp_row);
        c->compute_pairs = (int)comp.n;
        c->comm_pairs = (int)comm.n;
        c->compute_abs_err_med_pct = zs_median(comp.v, comp.n);
        c->comm_abs_err_med_pct = zs_median(comm.v, comm.n);
    }
    free(comp.v);
    free(comm.v);
    return rc;
}

/* Every figure is finite except where NAN marks "no value"; the input
 * bounds make this hold, and this check keeps it an error if it ever does
 * not. */
static int check_finite(const zs_tlcmp *c, zs_err *e)
{
    int ok = isfinite(c->a_span_us) && isfinite(c->b_span_us) &&
             (isfinite(c->span_err_pct) || c->a_span_us <= 0) &&
             (isfinite(c->compute_abs_err_med_pct) || c->compute_pairs == 0) &&
             (isfinite(c->comm_abs_err_med_pct) || c->comm_pairs == 0);
    for (size_t i = 0; ok && i < c->nrows; i++) {
        const zs_tlcmp_row *r = &c->rows[i];
        ok = isfinite(r->a_med_us) && isfinite(r->b_med_us) && isfinite(r->a_total_us) &&
             ((isfinite(r->err_med_pct) && isfinite(r->abs_err_med_pct)) || r->err_pairs == 0);
    }
    return ok ? ZS_OK
              : zs_err_set(e, ZS_EINVALID, "timeline compare", NULL,
                           "a figure of the comparison is not finite");
}

int zs_tlcmp_files(const char *a_path, const char *b_path, zs_tlcmp **out, zs_err *e)
{
    return zs_tlcmp_files_n(&a_path, 1, &b_path, 1, out, e);
}

int zs_tlcmp_files_n(const char *const *a, int na, const char *const *b, int nb, zs_tlcmp **out,
                     zs_err *e)
{
    *out = NULL;
    tl_file A, B;
    int rc = file_load(a, na, &A, e);
    if (rc == ZS_OK)
        rc = file_load(b, nb, &B, e);
    else
        memset(&B, 0, sizeof B);
    zs_tlcmp *c = NULL;
    if (rc == ZS_OK && !(c = calloc(1, sizeof *c)))
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory comparing timelines");
    if (rc == ZS_OK) {
        c->a_events = A.n;
        c->b_events = B.n;
        c->a_span_us = A.t1 - A.t0;
        c->b_span_us = B.t1 - B.t0;
        c->span_err_pct =
            c->a_span_us > 0 ? (c->b_span_us - c->a_span_us) / c->a_span_us * 100 : NAN;
        if (pair_up(&A, &B, c) != ZS_OK)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory comparing timelines");
        else
            rc = check_finite(c, e);
    }
    file_free(&A);
    file_free(&B);
    if (rc) {
        zs_tlcmp_free(c);
        return rc;
    }
    *out = c;
    return ZS_OK;
}

void zs_tlcmp_free(zs_tlcmp *c)
{
    if (!c)
        return;
    free(c->rows);
    free(c);
}

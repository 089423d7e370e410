/* Timeline comparison: see zs_tlcmp.h.
 *
 * Each side's files are read as a stream (zs_tlread_internal.h) and every complete
 * event is kept as a 32-byte record (label, rank, start, duration,
 * position), its label an index into one table of (name, kind) pairs that
 * both sides share: memory grows with the number of ops, about a seventh
 * of the text they take, and never holds a document. Records fill blocks
 * that are sorted as they fill, by label, rank, start and position; the
 * blocks merged give each label as one run of records on each side, so
 * pairing goes label by label with one label's durations at a time. Each
 * label's pairs are visited rank by rank in start order, as when the
 * whole files were matched key by key, so every sum and median is the
 * same as then. */
#include "zs_tlcmp.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_fdio.h"
#include "zs_sort.h"
#include "zs_tlread_internal.h"

/* Bounds on an event (microseconds): far past any run (1e15 us is 31
 * years), and small enough that spans and sums stay finite. */
#define TL_MAX_TS  1e18
#define TL_MAX_DUR 1e15
/* Below this measured duration (1 ns) no relative error is taken. */
#define TL_MIN_ERR_DUR 1e-3

/* A complete event as kept: 32 bytes, whatever its text held. */
typedef struct ev {
    uint32_t label; /* index into the shared label table */
    int32_t rank;
    double ts, dur;
    uint64_t idx; /* position on its side: a stable tie-break */
} ev;

/* The (name, kind) pairs of both sides, each once: open addressing over
 * their indices (+ 1; 0 is an empty slot). */
typedef struct labels {
    char **name, **cat;
    uint32_t n, cap;
    uint32_t *slot;
    size_t nslot;
} labels;

/* Records per block: 2 MiB. A side grows a block at a time (no record is
 * ever copied to grow it) and each full block is sorted on its own; the
 * side is then read in order by merging its blocks (cursor). */
#define BLOCK_EVS 65536

typedef struct side {
    ev **blk;
    size_t nblk, capblk;
    size_t n; /* records */
    double t0, t1;
    labels *lab;
} side;

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

static uint64_t lab_hash(const char *name, const char *cat)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL; /* the separator */
    for (const char *p = cat; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h ^ (h >> 29);
}

static int lab_rehash(labels *L)
{
    size_t n = L->nslot ? 2 * L->nslot : 256;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return ZS_ENOMEM;
    for (uint32_t k = 0; k < L->n; k++) {
        size_t i = lab_hash(L->name[k], L->cat[k]) & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = k + 1;
    }
    free(L->slot);
    L->slot = s;
    L->nslot = n;
    return ZS_OK;
}

/* The index of (name, cat), added when new; -1 when out of memory. */
static int64_t lab_get(labels *L, const char *name, const char *cat)
{
    if (2 * ((size_t)L->n + 1) > L->nslot && lab_rehash(L))
        return -1;
    size_t i = lab_hash(name, cat) & (L->nslot - 1);
    for (; L->slot[i]; i = (i + 1) & (L->nslot - 1)) {
        uint32_t k = L->slot[i] - 1;
        if (!strcmp(L->name[k], name) && !strcmp(L->cat[k], cat))
            return k;
    }
    if (L->n == L->cap) {
        uint32_t cap = L->cap ? 2 * L->cap : 64;
        char **a = realloc(L->name, cap * sizeof *a);
        if (a)
            L->name = a;
        char **b = a ? realloc(L->cat, cap * sizeof *b) : NULL;
        if (!b)
            return -1;
        L->cat = b;
        L->cap = cap;
    }
    if (!(L->name[L->n] = strdup(name)))
        return -1;
    if (!(L->cat[L->n] = strdup(cat))) {
        free(L->name[L->n]);
        return -1;
    }
    L->slot[i] = L->n + 1;
    return L->n++;
}

static void lab_free(labels *L)
{
    for (uint32_t k = 0; k < L->n; k++) {
        free(L->name[k]);
        free(L->cat[k]);
    }
    free(L->name);
    free(L->cat);
    free(L->slot);
}

static int cmp_ev(const void *pa, const void *pb)
{
    const ev *a = pa, *b = pb;
    if (a->label != b->label)
        return a->label < b->label ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
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

/* Room for one more record on a side: within the input limit, and a new
 * block when the last is full. */
static int side_grow(side *f, const char *path, zs_err *e)
{
    size_t max = zs_input_limit() / sizeof(ev);
    if (f->n >= max)
        return zs_err_set(e, ZS_EINPUT, path,
                          "compare timelines of fewer ranks or layers (--timeline-ranks, "
                          "--timeline-layers), or raise the limit with the environment variable "
                          "ZEPSIM_MAX_INPUT_MB",
                          "more than the %zu MiB input limit of events held (%zu complete "
                          "events of %zu bytes)",
                          zs_input_limit() >> 20, max, sizeof(ev));
    if (f->n % BLOCK_EVS)
        return ZS_OK;
    if (f->nblk == f->capblk) {
        size_t cap = f->capblk ? 2 * f->capblk : 16;
        ev **b = realloc(f->blk, cap * sizeof *b);
        if (!b)
            return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the timeline");
        f->blk = b;
        f->capblk = cap;
    }
    if (!(f->blk[f->nblk] = malloc(BLOCK_EVS * sizeof(ev))))
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the timeline");
    f->nblk++;
    return ZS_OK;
}

static size_t blk_len(const side *f, size_t b)
{
    return b + 1 < f->nblk ? BLOCK_EVS : f->n - b * BLOCK_EVS;
}

static void side_free(side *f)
{
    for (size_t b = 0; b < f->nblk; b++)
        free(f->blk[b]);
    free(f->blk);
}

/* One element of a file's event array (zs_tlread_fn): a complete event is
 * checked and kept, anything else skipped. */
static int on_event(void *arg, const char *path, size_t i, json_t *o, zs_err *e)
{
    side *f = arg;
    json_t *ph = json_object_get(o, "ph");
    if (!json_is_object(o))
        return bad_event(e, path, i, "expected: the entry is not an object");
    if (!json_is_string(ph) || strcmp(json_string_value(ph), "X") != 0)
        return ZS_OK; /* metadata, flows and instant events carry no op */
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
    int64_t lab =
        lab_get(f->lab, json_string_value(name), json_is_string(cat) ? json_string_value(cat) : "");
    if (lab < 0)
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the timeline");
    if (side_grow(f, path, e))
        return e->code;
    ev *x = &f->blk[f->nblk - 1][f->n % BLOCK_EVS];
    x->label = (uint32_t)lab;
    x->rank = (int32_t)json_integer_value(rank);
    x->ts = json_number_value(ts);
    x->dur = json_number_value(dur);
    x->idx = f->n++; /* order across the side's files: a stable tie-break */
    if (f->n % BLOCK_EVS == 0)
        qsort(f->blk[f->nblk - 1], BLOCK_EVS, sizeof *x, cmp_ev);
    if (x->ts < f->t0)
        f->t0 = x->ts;
    if (x->ts + x->dur > f->t1)
        f->t1 = x->ts + x->dur;
    return ZS_OK;
}

/* Reads one side's files as a stream into compact events, each block
 * sorted. */
static int side_load(const char *const *paths, int np, labels *lab, side *f, zs_err *e)
{
    memset(f, 0, sizeof *f);
    f->lab = lab;
    f->t0 = INFINITY;
    f->t1 = -INFINITY;
    for (int i = 0; i < np; i++) {
        size_t n0 = f->n;
        int rc = zs_tlread_file(paths[i], on_event, f, e);
        if (rc)
            return rc;
        if (f->n == n0)
            return zs_err_set(e, ZS_EINPUT, paths[i], "write the timeline with --timeline on a run",
                              "the timeline has no complete (\"ph\": \"X\") events");
    }
    if (np < 1)
        return zs_err_set(e, ZS_EUSAGE, "timeline compare", "give at least one file per side",
                          "no timeline file");
    if (f->n % BLOCK_EVS)
        qsort(f->blk[f->nblk - 1], f->n % BLOCK_EVS, sizeof(ev), cmp_ev);
    return ZS_OK;
}

/* A side's records in sorted order: its sorted blocks merged through a
 * heap of block numbers ordered by each block's next record (records
 * never compare equal: their positions differ). */
typedef struct cursor {
    const side *f;
    size_t *pos; /* per block: its next record */
    size_t *heap;
    size_t nheap;
} cursor;

static const ev *cur_top(const cursor *c)
{
    return c->nheap ? &c->f->blk[c->heap[0]][c->pos[c->heap[0]]] : NULL;
}

static int heap_less(const cursor *c, size_t i, size_t j)
{
    size_t a = c->heap[i], b = c->heap[j];
    return cmp_ev(&c->f->blk[a][c->pos[a]], &c->f->blk[b][c->pos[b]]) < 0;
}

static void sift_down(cursor *c, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < c->nheap && heap_less(c, l, m))
            m = l;
        if (l + 1 < c->nheap && heap_less(c, l + 1, m))
            m = l + 1;
        if (m == i)
            return;
        size_t t = c->heap[i];
        c->heap[i] = c->heap[m];
        c->heap[m] = t;
        i = m;
    }
}

static void cur_next(cursor *c)
{
    size_t b = c->heap[0];
    if (++c->pos[b] == blk_len(c->f, b))
        c->heap[0] = c->heap[--c->nheap];
    sift_down(c, 0);
}

static int cur_open(cursor *c, const side *f)
{
    c->f = f;
    c->nheap = f->nblk;
    c->pos = calloc(f->nblk + 1, sizeof *c->pos);
    c->heap = malloc((f->nblk + 1) * sizeof *c->heap);
    if (!c->pos || !c->heap)
        return ZS_ENOMEM;
    for (size_t b = 0; b < f->nblk; b++)
        c->heap[b] = b;
    for (size_t i = c->nheap / 2; i-- > 0;)
        sift_down(c, i);
    return ZS_OK;
}

static void cur_close(cursor *c)
{
    free(c->pos);
    free(c->heap);
}

static int cmp_row(const void *pa, const void *pb)
{
    const zs_tlcmp_row *a = pa, *b = pb;
    if (a->a_total_us != b->a_total_us)
        return a->a_total_us > b->a_total_us ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->cat, b->cat);
}

/* Durations of one label's pairs (reused label to label) and the
 * errors of all pairs by class. */
typedef struct pairs {
    dvec a, b, abs_err, err;
    dvec comp, comm;
} pairs;

/* One pair of a label: measured x, predicted y. */
static int pair_add(pairs *P, zs_tlcmp_row *row, int compute, double x, double y)
{
    row->pairs++;
    row->a_total_us += x;
    if (dvec_push(&P->a, x) || dvec_push(&P->b, y))
        return ZS_ENOMEM;
    if (!(x >= TL_MIN_ERR_DUR))
        return ZS_OK;
    double r = (y - x) / x * 100;
    row->err_pairs++;
    if (dvec_push(&P->err, r) || dvec_push(&P->abs_err, fabs(r)) ||
        dvec_push(compute ? &P->comp : &P->comm, fabs(r)))
        return ZS_ENOMEM;
    return ZS_OK;
}

/* The top record of a cursor when it has label l, else NULL. */
static const ev *top_of(const cursor *c, uint32_t l)
{
    const ev *x = cur_top(c);
    return x && x->label == l ? x : NULL;
}

/* The records of label l on both sides (each in rank, start order): the
 * k-th of a rank on one side meets the k-th of that rank on the other;
 * fills row (pairs == 0: none met). */
static int pair_label(cursor *A, cursor *B, uint32_t l, int compute, pairs *P, zs_tlcmp_row *row,
                      zs_tlcmp *c)
{
    P->a.n = P->b.n = P->abs_err.n = P->err.n = 0;
    for (;;) {
        const ev *x = top_of(A, l), *y = top_of(B, l);
        if (!x && !y)
            break;
        int k = !x ? 1 : !y ? -1 : (x->rank > y->rank) - (x->rank < y->rank);
        if (k == 0 && pair_add(P, row, compute, x->dur, y->dur))
            return ZS_ENOMEM;
        c->only_a += k < 0;
        c->only_b += k > 0;
        if (k <= 0)
            cur_next(A);
        if (k >= 0)
            cur_next(B);
    }
    row->a_med_us = zs_median(P->a.v, P->a.n);
    row->b_med_us = zs_median(P->b.v, P->b.n);
    row->abs_err_med_pct = zs_median(P->abs_err.v, P->abs_err.n);
    row->err_med_pct = zs_median(P->err.v, P->err.n);
    return ZS_OK;
}

/* Pairs the two sides label by label and fills c. */
static int pair_up(const side *SA, const side *SB, const labels *L, zs_tlcmp *c)
{
    pairs P;
    memset(&P, 0, sizeof P);
    cursor A, B;
    int rc = cur_open(&A, SA);
    if (rc == ZS_OK)
        rc = cur_open(&B, SB);
    else
        memset(&B, 0, sizeof B);
    if (rc == ZS_OK && L->n && !(c->rows = calloc(L->n, sizeof *c->rows)))
        rc = ZS_ENOMEM;
    while (rc == ZS_OK && (cur_top(&A) || cur_top(&B))) {
        const ev *x = cur_top(&A), *y = cur_top(&B);
        uint32_t l = !x ? y->label : !y || x->label < y->label ? x->label : y->label;
        zs_tlcmp_row *row = &c->rows[c->nrows];
        memset(row, 0, sizeof *row);
        snprintf(row->name, sizeof row->name, "%s", L->name[l]);
        snprintf(row->cat, sizeof row->cat, "%s", L->cat[l]);
        rc = pair_label(&A, &B, l, !strcmp(L->cat[l], "compute"), &P, row, c);
        c->nrows += row->pairs > 0;
    }
    if (rc == ZS_OK) {
        qsort(c->rows, c->nrows, sizeof *c->rows, cmp_row);
        c->compute_pairs = (int)P.comp.n;
        c->comm_pairs = (int)P.comm.n;
        c->compute_abs_err_med_pct = zs_median(P.comp.v, P.comp.n);
        c->comm_abs_err_med_pct = zs_median(P.comm.v, P.comm.n);
    }
    cur_close(&A);
    cur_close(&B);
    free(P.a.v);
    free(P.b.v);
    free(P.abs_err.v);
    free(P.err.v);
    free(P.comp.v);
    free(P.comm.v);
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
    labels lab;
    memset(&lab, 0, sizeof lab);
    side A, B;
    memset(&B, 0, sizeof B);
    int rc = side_load(a, na, &lab, &A, e);
    if (rc == ZS_OK)
        rc = side_load(b, nb, &lab, &B, e);
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
        if (pair_up(&A, &B, &lab, c) != ZS_OK)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory comparing timelines");
        else
            rc = check_finite(c, e);
    }
    side_free(&A);
    side_free(&B);
    lab_free(&lab);
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

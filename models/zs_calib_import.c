/* Measurement importers: nccl-tests logs as NCCL prints them
 * (zs_nccl_log.c), kernel latency CSVs, Megatron layer-op TSVs and the JSON measurement files the
 * hardware backend writes (schema in docs/validation.md). Each file is read
 * whole into a scratch set and merged only when it parsed completely, so a
 * bad or truncated file is an error naming file:line and changes nothing.
 * See zs_calib.h. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib_internal.h"
#include "zs_config.h"
#include "zs_fdio.h"
#include "zs_num.h"

void zs_meas_set_init(zs_meas_set *s)
{
    memset(s, 0, sizeof *s);
}

void zs_meas_set_clear(zs_meas_set *s)
{
    free(s->v);
    free(s->files);
    zs_meas_set_init(s);
}

int zs_meas_add(zs_meas_set *s, const zs_meas *m, zs_err *e)
{
    if (m->docs < 1) { /* a point built without a document count: one document */
        zs_meas one = *m;
        one.docs = 1;
        return zs_meas_add(s, &one, e);
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        zs_meas *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory adding a measurement");
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = *m;
    return ZS_OK;
}

/* A number in [min, max] (whole when `whole`), else an error naming
 * file:line (where), the column and the range. Every cell goes through
 * here before it is converted, so no cast sees a value out of its type. */
static int cell(const char *tok, const char *col, double min, double max, int whole,
                const char *where, double *v, zs_err *e)
{
    int rc = zs_num_f64(tok, min, max, ZS_EINPUT, col, v, e);
    if (!rc && whole && *v != floor(*v))
        rc = zs_err_set(e, ZS_EINPUT, col, "give a whole number", "bad value '%s'", tok);
    if (rc && e)
        snprintf(e->where, sizeof e->where, "%s: column %s", where, col);
    return rc;
}

static int meas_check(const zs_meas *m, const char *where, zs_err *e);

static void where_line(char *buf, size_t n, const char *path, int line)
{
    snprintf(buf, n, "%s:%d", path, line);
}

/* nccl-tests logs: zs_nccl_log.c. */

/* Ranges shared by every measurement source (the JSON format's). */
#define ZS_MEAS_MAX_GPUS  (1 << 20)
#define ZS_MEAS_MAX_HEADS (1 << 16)

/* ---- delimited text: kernel CSV and Megatron TSV --------------------------------- */

/* The widest table read: a layer-op TSV has one column per op (a few dozen
 * in Megatron's); the limit only keeps a hostile file bounded. */
#define MAXCOLS 1024

/* Splits line in place at d into tok (room for max fields): the number of
 * fields, or -1 when there are more than max (tok then holds the first
 * max, nothing past them is touched). */
static int split_delim(char *line, char d, char **tok, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        tok[n++] = p;
        char *q = strchr(p, d);
        if (!q)
            return n;
        *q = '\0';
        p = q + 1;
    }
}

static int col_of(char **hdr, int n, const char *const *names)
{
    for (int i = 0; i < n; i++)
        for (const char *const *nm = names; *nm; nm++)
            if (strcmp(hdr[i], *nm) == 0)
                return i;
    return -1;
}

/* The header row split into hdr (MAXCOLS + 1 slots): its field count, or
 * an error naming line 1 when the table is wider than MAXCOLS. */
static int header(char *line, char delim, char **hdr, const char *path, char *where, size_t wn,
                  int *nh, zs_err *e)
{
    where_line(where, wn, path, 1);
    *nh = split_delim(line, delim, hdr, MAXCOLS);
    if (*nh < 0)
        return zs_err_set(e, ZS_EINPUT, where, "split the table into files of fewer columns",
                          "more than %d columns", MAXCOLS);
    return ZS_OK;
}

/* The next non-empty row of a delimited table into tok (nh fields, as the
 * header has): 1 for a row, 0 at the end, or an error naming the line. */
static int next_row(char **cur, int *line_no, char delim, int nh, char **tok, const char *path,
                    char *where, size_t wn, zs_err *e)
{
    char *line;
    while ((line = zs_next_line(cur))) {
        ++*line_no;
        if (!*line)
            continue;
        where_line(where, wn, path, *line_no);
        int nt = split_delim(line, delim, tok, MAXCOLS);
        if (nt != nh)
            return zs_err_set(e, ZS_EINPUT, where, "every row needs as many fields as the header",
                              nt < 0 ? "row has more than %d fields, header has %d"
                                     : "row has %d fields, header has %d (truncated file?)",
                              nt < 0 ? MAXCOLS : nt, nh);
        return 1;
    }
    return 0;
}

/* Kernel latency CSVs. Two layouts:
 *  - one row per document length with its shape: seq_len, latency(ms), hqo,
 *    hkv, d (optional: op, gpu_type, tp, cp, tested_total_seqlen: the
 *    tokens of the launch, which packs tested_total_seqlen / seq_len equal
 *    documents; latency is then per document);
 *  - per-document attention profiles without a shape: L, cp, tp,
 *    duration_per_doc (ms per document; one document per launch unless a
 *    total_len column packs total_len / L of them); heads and head dim
 *    come from --model. One document per launch because the profile
 *    DistCA's simulator reads (distca/profiling/data/compute-attn-H100.csv)
 *    has rows at L = 65536, longer than any packed launch of its profiler
 *    (32768 tokens), and a floor of 18-30 us per row from 64 to 512 tokens
 *    whatever tp (8x less work at tp = 8), where that profiler's packed
 *    runs (compute-attn-H100.0.psv) give 1.4-2.6 us per 32-128-token
 *    document: a per-launch cost, not a per-document one. */
static int parse_csv(zs_meas_set *s, const char *path, char *text, zs_err *e)
{
    char where[600];
    char *cur = text, *line = zs_next_line(&cur);
    char *hdr[MAXCOLS + 1];
    int nh, rc;
    if ((rc = header(line, ',', hdr, path, where, sizeof where, &nh, e)))
        return rc;
    static const char *const c_len[] = {"seq_len", "seqlen", "tokens", "L", NULL};
    static const char *const c_ms[] = {"latency(ms)", "latency_ms", "ms", "duration_per_doc", NULL};
    static const char *const c_hq[] = {"hqo", "heads", "hq", NULL};
    static const char *const c_hkv[] = {"hkv", "kv_heads", NULL};
    static const char *const c_d[] = {"d", "head_dim", NULL};
    static const char *const c_op[] = {"op", NULL};
    static const char *const c_gpu[] = {"gpu_type", "gpu", NULL};
    static const char *const c_tp[] = {"tp", NULL}, *const c_cp[] = {"cp", NULL};
    static const char *const c_tot[] = {"tested_total_seqlen", "total_len", NULL};
    static const char *const c_prof[] = {"duration_per_doc", NULL};
    int il = col_of(hdr, nh, c_len), it = col_of(hdr, nh, c_ms), ih = col_of(hdr, nh, c_hq),
        ik = col_of(hdr, nh, c_hkv), id = col_of(hdr, nh, c_d), io = col_of(hdr, nh, c_op),
        ig = col_of(hdr, nh, c_gpu), itp = col_of(hdr, nh, c_tp), icp = col_of(hdr, nh, c_cp),
        itot = col_of(hdr, nh, c_tot), profile = col_of(hdr, nh, c_prof) >= 0;
    if (il < 0 || it < 0 || (!profile && (ih < 0 || id < 0)))
        return zs_err_set(e, ZS_EINPUT, where,
                          "a kernel latency CSV needs the columns seq_len, latency(ms), hqo, "
                          "hkv and d, or (per-document profiles) L, cp, tp and "
                          "duration_per_doc (see docs/validation.md)",
                          "unrecognised CSV header");
    int line_no = 1, rows = 0;
    char *tok[MAXCOLS + 1];
    int got;
    while ((got = next_row(&cur, &line_no, ',', nh, tok, path, where, sizeof where, e)) > 0) {
        double len, ms, hq = 0, hkv = 0, d = 0, tp = 1, cp = 1, tot = 0;
        if ((rc = cell(tok[il], hdr[il], 1, INT32_MAX, 1, where, &len, e)) ||
            (rc = cell(tok[it], hdr[it], 1e-9, 1e9, 0, where, &ms, e)) ||
            (ih >= 0 && (rc = cell(tok[ih], hdr[ih], 1, ZS_MEAS_MAX_HEADS, 1, where, &hq, e))) ||
            (id >= 0 && (rc = cell(tok[id], hdr[id], 1, ZS_MEAS_MAX_HEADS, 1, where, &d, e))) ||
            (ik >= 0 && (rc = cell(tok[ik], hdr[ik], 0, ZS_MEAS_MAX_HEADS, 1, where, &hkv, e))) ||
            (itp >= 0 && (rc = cell(tok[itp], hdr[itp], 1, ZS_MEAS_MAX_GPUS, 1, where, &tp, e))) ||
            (icp >= 0 && (rc = cell(tok[icp], hdr[icp], 1, ZS_MEAS_MAX_GPUS, 1, where, &cp, e))) ||
            (itot >= 0 && (rc = cell(tok[itot], hdr[itot], 0, INT32_MAX, 1, where, &tot, e))))
            return rc;
        const char *opname = io >= 0 ? tok[io] : "attn";
        zs_meas m;
        memset(&m, 0, sizeof m);
        if (strcmp(opname, "attn") == 0 || strcmp(opname, "attn_fwd") == 0)
            snprintf(m.op, sizeof m.op, "attn_fwd");
        else if (strcmp(opname, "attn_bwd") == 0)
            snprintf(m.op, sizeof m.op, "attn_bwd");
        else
            return zs_err_set(e, ZS_EINPUT, where, "use op attn, attn_fwd or attn_bwd",
                              "unknown kernel op '%.40s'", opname);
        if (ig >= 0 && !s->gpu[0])
            snprintf(s->gpu, sizeof s->gpu, "%s", tok[ig]);
        m.gpus = 1;
        m.seq_len = (int)len;
        m.docs = tot >= len ? (int)(tot / len) : 1;
        m.causal = 1;
        m.heads = (int)hq;
        m.kv_heads = (int)hkv;
        m.head_dim = (int)d;
        m.seconds = ms * 1e-3;
        m.tp = (int)tp;
        m.cp = (int)cp;
        snprintf(m.source, sizeof m.source, "%s", where);
        if ((rc = meas_check(&m, where, e)) || (rc = zs_meas_add(s, &m, e)))
            return rc;
        rows++;
    }
    if (got < 0)
        return got; /* a short or long row */
    if (!rows)
        return zs_err_set(e, ZS_EINPUT, where, "add measurement rows", "CSV has no rows");
    return ZS_OK;
}

static int parse_tsv(zs_meas_set *s, const char *path, char *text, zs_err *e)
{
    char where[600];
    char *cur = text, *line = zs_next_line(&cur);
    char *hdr[MAXCOLS + 1];
    int nh, rc;
    if ((rc = header(line, '\t', hdr, path, where, sizeof where, &nh, e)))
        return rc;
    static const char *const c_ctx[] = {"ctx_length", NULL}, *const c_tp[] = {"tp", NULL},
                             *const c_cp[] = {"cp", NULL};
    int ic = col_of(hdr, nh, c_ctx), itp = col_of(hdr, nh, c_tp), icp = col_of(hdr, nh, c_cp);
    if (ic < 0 || itp < 0 || icp < 0 || nh < 4)
        return zs_err_set(e, ZS_EINPUT, where,
                          "a layer-op TSV needs ctx_length, tp, cp and one column per op",
                          "unrecognised TSV header");
    int line_no = 1, rows = 0;
    char *tok[MAXCOLS + 1];
    int got;
    while ((got = next_row(&cur, &line_no, '\t', nh, tok, path, where, sizeof where, e)) > 0) {
        double ctx, tp, cp;
        if ((rc = cell(tok[ic], "ctx_length", 1, 1e12, 1, where, &ctx, e)) ||
            (rc = cell(tok[itp], "tp", 1, ZS_MEAS_MAX_GPUS, 1, where, &tp, e)) ||
            (rc = cell(tok[icp], "cp", 1, ZS_MEAS_MAX_GPUS, 1, where, &cp, e)))
            return rc;
        if (tp * cp > ZS_MEAS_MAX_GPUS)
            return zs_err_set(e, ZS_EINPUT, where, "tp x cp is the GPU count: at most 2^20",
                              "tp %g x cp %g GPUs", tp, cp);
        for (int i = 0; i < nh; i++) {
            if (i == ic || i == itp || i == icp)
                continue;
            double ms;
            if ((rc = cell(tok[i], hdr[i], 1e-9, 1e9, 0, where, &ms, e)))
                return rc;
            /* "megatron.core...forward.qkv_1" -> "qkv" */
            const char *nm = strrchr(hdr[i], '.');
            nm = nm ? nm + 1 : hdr[i];
            zs_meas m;
            memset(&m, 0, sizeof m);
            int len = (int)strlen(nm);
            if (len > 2 && nm[len - 2] == '_' && isdigit((unsigned char)nm[len - 1]))
                len -= 2;
            snprintf(m.op, sizeof m.op, "layer:%.*s", len, nm);
            m.gpus = (int)(tp * cp);
            m.tp = (int)tp;
            m.cp = (int)cp;
            m.tokens = ctx / cp;
            m.seconds = ms * 1e-3;
            snprintf(m.source, sizeof m.source, "%s", where);
            if ((rc = meas_check(&m, where, e)) || (rc = zs_meas_add(s, &m, e)))
                return rc;
            rows++;
        }
    }
    if (got < 0)
        return got; /* a short or long row */
    if (!rows)
        return zs_err_set(e, ZS_EINPUT, where, "add measurement rows", "TSV has no rows");
    return ZS_OK;
}

/* ---- JSON measurement files -------------------------------------------------------- */
#define F(key, type, member, min, max, req, def, unit, help)                                       \
    {                                                                                              \
        key, type, offsetof(zs_meas, member), sizeof(((zs_meas *)0)->member), min, max, req, def,  \
            unit, help                                                                             \
    }
static const zs_field meas_fields[] = {
    F("op", ZS_F_STRING, op, 0, 0, 1, 0, "", "op class (docs/validation.md)"),
    F("seconds", ZS_F_DOUBLE, seconds, 1e-12, 1e6, 1, 0, "s", "measured time"),
    F("gpus", ZS_F_INT, gpus, 1, ZS_MEAS_MAX_GPUS, 0, 1, "", "GPUs taking part"),
    F("nodes", ZS_F_INT, nodes, 0, 1 << 16, 0, 1, "", "nodes the GPUs span (collectives; 0 = 1)"),
    F("bytes", ZS_F_DOUBLE, bytes, 0, 1e15, 0, 0, "B", "collective size (nccl-tests) or p2p bytes"),
    F("seq_len", ZS_F_INT, seq_len, 0, 2147483647.0, 0, 0, "tokens", "document length"),
    F("docs", ZS_F_INT, docs, 1, 1 << 24, 0, 1, "",
      "equal documents in the launch (seconds is per document)"),
    F("causal", ZS_F_BOOL, causal, 0, 1, 0, 1, "", "causal attention"),
    F("heads", ZS_F_INT, heads, 0, ZS_MEAS_MAX_HEADS, 0, 0, "", "query heads"),
    F("kv_heads", ZS_F_INT, kv_heads, 0, ZS_MEAS_MAX_HEADS, 0, 0, "", "KV heads"),
    F("head_dim", ZS_F_INT, head_dim, 0, ZS_MEAS_MAX_HEADS, 0, 0, "", "head dimension"),
    F("m", ZS_F_DOUBLE, m, 0, 1e12, 0, 0, "", "GEMM rows (tokens)"),
    F("n", ZS_F_DOUBLE, n, 0, 1e12, 0, 0, "", "GEMM columns"),
    F("k", ZS_F_DOUBLE, k, 0, 1e12, 0, 0, "", "GEMM inner dimension"),
    F("tp", ZS_F_INT, tp, 1, ZS_MEAS_MAX_GPUS, 0, 1, "", "tensor-parallel degree"),
    F("cp", ZS_F_INT, cp, 1, ZS_MEAS_MAX_GPUS, 0, 1, "", "context-parallel degree"),
    F("tokens", ZS_F_DOUBLE, tokens, 0, 1e12, 0, 0, "", "tokens per GPU (layer ops)"),
    F("source", ZS_F_STRING, source, 0, 0, 0, 0, "", "where the point comes from"),
};
#undef F
static const size_t meas_nfields = sizeof meas_fields / sizeof meas_fields[0];

/* Holds a point read from a CSV or TSV to the JSON format's ranges, so
 * every source gives the fit the same bounded numbers. */
static int meas_check(const zs_meas *m, const char *where, zs_err *e)
{
    zs_meas n = *m;
    if (n.docs < 1) /* as zs_meas_add reads it: one document */
        n.docs = 1;
    for (size_t i = 0; i < meas_nfields; i++) {
        const zs_field *f = &meas_fields[i];
        const char *p = (const char *)&n + f->offset;
        double v;
        if (f->type == ZS_F_INT)
            v = *(const int *)p;
        else if (f->type == ZS_F_DOUBLE)
            v = *(const double *)p;
        else
            continue;
        int rc = zs_num_check_f64(v, f->min, f->max, ZS_EINPUT, f->key, e);
        if (rc) {
            if (e)
                snprintf(e->where, sizeof e->where, "%s: %s", where, f->key);
            return rc;
        }
    }
    return ZS_OK;
}

static int op_known(const char *op)
{
    return zs_calib_slot_parse(op) >= 0 || strncmp(op, "layer:", 6) == 0;
}

static int parse_json(zs_meas_set *s, const char *path, const char *text, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_json_doc_load_text(path, text, &doc, e);
    if (rc)
        return rc;
    char where[600];
    json_t *fmt = json_object_get(doc->root, "format"), *pts = json_object_get(doc->root, "points");
    json_t *dev = json_object_get(doc->root, "device");
    if (!json_is_object(doc->root) || !json_is_string(fmt) ||
        strcmp(json_string_value(fmt), "zepsim-measurements") != 0 || !json_is_array(pts)) {
        zs_json_where(doc, NULL, "format", where, sizeof where);
        rc = zs_err_set(e, ZS_EINPUT, where,
                        "a measurement file is {\"format\": \"zepsim-measurements\", "
                        "\"version\": 1, \"points\": [...]} (docs/validation.md)",
                        "not a zepsim measurement file");
    }
    if (!rc && json_is_string(dev) && !s->gpu[0])
        snprintf(s->gpu, sizeof s->gpu, "%s", json_string_value(dev));
    size_t i;
    json_t *pt;
    static const char *const ignore[] = {"shape", NULL};
    json_array_foreach(pts, i, pt)
    {
        if (rc)
            break;
        zs_meas m;
        memset(&m, 0, sizeof m);
        snprintf(where, sizeof where, "%s: points[%zu]", path, i);
        if (!json_is_object(pt)) {
            rc = zs_err_set(e, ZS_EINPUT, where, "each point is an object", "bad point");
            break;
        }
        rc = zs_config_parse(doc, pt, "points", meas_fields, meas_nfields, ignore, &m, e);
        if (rc) {
            snprintf(e->where, sizeof e->where, "%s", where);
            break;
        }
        if (!op_known(m.op)) {
            rc = zs_err_set(e, ZS_EINPUT, where,
                            "use attn_fwd, attn_bwd, gemm, elementwise, p2p_nvlink, p2p_nic, "
                            "all-gather, reduce-scatter, all-reduce, all-to-all or layer:NAME",
                            "unknown op '%s'", m.op);
            break;
        }
        if (!m.source[0])
            snprintf(m.source, sizeof m.source, "%s", where);
        rc = zs_meas_add(s, &m, e);
    }
    zs_json_doc_free(doc);
    return rc;
}

static void merge_dim(int *dst, int v)
{
    if (v > 0 && *dst != -1)
        *dst = *dst == 0 || *dst == v ? v : -1;
}

/* What one file measured: its device, the slots its points feed, the
 * shape of its attention points (those without one get it from the model
 * later: zs_meas_set_apply_model). */
static void source_provenance(zs_calib_source *f, const zs_meas_set *t)
{
    snprintf(f->gpu, sizeof f->gpu, "%s", t->gpu);
    for (size_t i = 0; i < t->n; i++) {
        const zs_meas *m = &t->v[i];
        int sl = zs_calib_slot_parse(m->op);
        if (strncmp(m->op, "layer:", 6) == 0)
            f->slots |= 1u << ZS_CAL_GEMM | 1u << ZS_CAL_ELEMENTWISE;
        else if (sl >= 0)
            f->slots |= 1u << sl;
        if (sl == ZS_CAL_ATTN_FWD || sl == ZS_CAL_ATTN_BWD) {
            merge_dim(&f->heads, m->heads);
            merge_dim(&f->kv_heads, m->kv_heads);
            merge_dim(&f->head_dim, m->head_dim);
        }
    }
}

/* The measurement file formats, tried in order: the first whose sniff
 * accepts the text and its first line parses it (and names it in the
 * error for a file none accepts). A new format is a parser and one row here. */
typedef struct meas_format {
    const char *name;
    int (*sniff)(const char *text, const char *first_line);
    int (*parse)(zs_meas_set *s, const char *path, char *text, zs_err *e);
} meas_format;

static int sniff_json(const char *text, const char *first)
{
    text += strspn(text, " \t\n\r");
    return *text == '{';
}

static int parse_json_rw(zs_meas_set *s, const char *path, char *text, zs_err *e)
{
    return parse_json(s, path, text, e);
}

static int sniff_nccl(const char *text, const char *first)
{
    return zs__nccl_log_sniff(text);
}

static int sniff_tsv(const char *text, const char *first)
{
    return strchr(first, '\t') != NULL;
}

static int sniff_csv(const char *text, const char *first)
{
    return strchr(first, ',') != NULL;
}

static const meas_format formats[] = {
    {"zepsim-measurements JSON", sniff_json, parse_json_rw},
    {"nccl-tests log", sniff_nccl, zs__nccl_log_parse},
    {"layer-op TSV", sniff_tsv, parse_tsv},
    {"kernel CSV", sniff_csv, parse_csv},
};

int zs_meas_read(zs_meas_set *s, const char *path, zs_err *e)
{
    char *text = NULL; /* initialised for gcc -O3, which cannot see zs_read_file set them */
    size_t len = 0;
    int rc = zs_read_file(path, NULL, &text, &len, e);
    if (rc)
        return rc;
    zs_meas_set tmp;
    zs_meas_set_init(&tmp); /* its gpu stays "": the file's own device, for its provenance */
    tmp.nccl_inplace = s->nccl_inplace;
    tmp.nccl_algo_mask = s->nccl_algo_mask;
    tmp.nccl_proto_mask = s->nccl_proto_mask;
    memcpy(tmp.nccl_collective, s->nccl_collective, sizeof tmp.nccl_collective);
    char sha[65];
    zs_sha256_hex(text, len, sha);
    char first[512];
    size_t fl = strcspn(text, "\n");
    snprintf(first, sizeof first, "%.*s", (int)(fl < 511 ? fl : 511), text);
    const meas_format *fmt = NULL;
    for (size_t i = 0; !fmt && i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].sniff(text, first))
            fmt = &formats[i];
    if (strlen(text) != len)
        rc = zs_err_set(e, ZS_EINPUT, path, "pass a text file", "file contains a NUL byte");
    else if (fmt)
        rc = fmt->parse(&tmp, path, text, e);
    else {
        char fix[256] = "pass one of: ";
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
            snprintf(fix + strlen(fix), sizeof fix - strlen(fix), "%s%s", i ? ", " : "",
                     formats[i].name);
        rc = zs_err_set(e, ZS_EINPUT, path, fix, "unrecognised measurement file format");
    }
    free(text);
    if (rc) {
        zs_meas_set_clear(&tmp);
        return rc;
    }
    void *nf = realloc(s->files, (s->nfiles + 1) * sizeof *s->files);
    if (!nf) {
        zs_meas_set_clear(&tmp);
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory");
    }
    s->files = nf;
    for (size_t i = 0; i < tmp.n; i++)
        if ((rc = zs_meas_add(s, &tmp.v[i], e))) {
            s->n -= i; /* leave s as it was */
            zs_meas_set_clear(&tmp);
            return rc;
        }
    zs_calib_source *f = &s->files[s->nfiles];
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    memcpy(f->sha256, sha, sizeof sha);
    f->points = (int)tmp.n;
    source_provenance(f, &tmp);
    s->nfiles++;
    if (!s->gpu[0])
        snprintf(s->gpu, sizeof s->gpu, "%s", tmp.gpu);
    zs_meas_set_clear(&tmp);
    return ZS_OK;
}

int zs_meas_write_json(const zs_meas_set *s, const char *path, zs_err *e)
{
    json_t *root = json_object(), *pts = json_array();
    json_object_set_new(root, "format", json_string("zepsim-measurements"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "device", json_string(s->gpu));
    for (size_t i = 0; i < s->n; i++) {
        json_t *o = zs_config_to_json(meas_fields, meas_nfields, &s->v[i]);
        json_array_append_new(pts, o);
    }
    json_object_set_new(root, "points", pts);
    int rc = zs_json_write_file(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER, e);
    json_decref(root);
    return rc;
}

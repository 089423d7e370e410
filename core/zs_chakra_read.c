/* Chakra trace reader: one rank's file decoded into compact nodes
 * (zs_chakra_internal.h): length-delimited messages, the global metadata
 * (zepsim's attributes when present), each node's type, sizes, peer,
 * communicator and dependencies, every value bounded. zs_chakra_load.c
 * finds and reads a trace set, zs_chakra_build.c makes the schedule. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "zs_chakra_internal.h"
#include "zs_fdio.h"

#ifdef ZS_HAVE_CHAKRA
#include "zs_chakra_et.pb-c.h"
#include "zs_grow.h"

typedef ChakraProtoMsg__AttributeProto ck_attr;

#define FIX_ET                                                                                     \
    "the file must be a Chakra execution trace (`zepsim plan --chakra`, Chakra's converters)"

int zs__ck_bad(ck_set *set, const ck_rank *r, const ck_node *nd, const char *fix, const char *fmt,
               ...)
{
    char where[700], what[512];
    if (nd)
        snprintf(where, sizeof where, "%s: node %llu ('%s')", r->path, (unsigned long long)nd->id,
                 nd->label >= 0 ? set->labels[nd->label] : "");
    else
        snprintf(where, sizeof where, "%s", r ? r->path : "Chakra traces");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return zs_err_set(set->e, ZS_EINPUT, where, fix ? fix : FIX_ET, "%s", what);
}

static int nomem(ck_set *set, const ck_rank *r)
{
    return zs_err_set(set->e, ZS_ENOMEM, r ? r->path : NULL, NULL,
                      "out of memory reading Chakra traces");
}

static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

int32_t zs__ck_label(ck_set *set, const char *name, size_t len)
{
    if (len > 127)
        len = 127;
    if (set->nlabels * 2 >= set->hash_cap) {
        int32_t cap = set->hash_cap ? set->hash_cap * 2 : 256;
        int32_t *h = calloc((size_t)cap, sizeof(int32_t));
        if (!h)
            return ZS_ENOMEM;
        for (int32_t i = 0; i < set->nlabels; i++) {
            uint64_t j = hash_str(set->labels[i], strlen(set->labels[i])) & (uint64_t)(cap - 1);
            while (h[j])
                j = (j + 1) & (uint64_t)(cap - 1);
            h[j] = i + 1;
        }
        free(set->label_hash);
        set->label_hash = h;
        set->hash_cap = cap;
    }
    uint64_t j = hash_str(name, len) & (uint64_t)(set->hash_cap - 1);
    for (; set->label_hash[j]; j = (j + 1) & (uint64_t)(set->hash_cap - 1)) {
        const char *l = set->labels[set->label_hash[j] - 1];
        if (strncmp(l, name, len) == 0 && l[len] == 0)
            return set->label_hash[j] - 1;
    }
    if (set->nlabels >= 65535)
        return ZS_EINPUT;
    int64_t cap = set->labels_cap;
    char *d = malloc(len + 1);
    if (!d || zs_grow((void **)&set->labels, &cap, set->nlabels + 1, sizeof(char *))) {
        free(d);
        return ZS_ENOMEM;
    }
    set->labels_cap = (int32_t)cap;
    memcpy(d, name, len);
    d[len] = 0;
    set->labels[set->nlabels] = d;
    set->label_hash[j] = set->nlabels + 1;
    return set->nlabels++;
}

int32_t zs__ck_pg(ck_set *set, const char *name)
{
    if (strcmp(name, "") == 0)
        name = "0"; /* ASTRA-sim: no pg_name and "0" are both every rank */
    for (int32_t i = 0; i < set->npgs; i++)
        if (strcmp(set->pgs[i].name, name) == 0)
            return i;
    int64_t cap = set->pgs_cap;
    if (strlen(name) >= sizeof set->pgs[0].name || set->npgs >= 65536)
        return ZS_EINPUT;
    if (zs_grow((void **)&set->pgs, &cap, set->npgs + 1, sizeof(ck_pg)))
        return ZS_ENOMEM;
    set->pgs_cap = (int32_t)cap;
    ck_pg *p = &set->pgs[set->npgs];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->rank0 = -1;
    return set->npgs++;
}

/* ---- attribute values -------------------------------------------------- */

/* An integer attribute of any integer type (bool included). */
static int attr_int(const ck_attr *a, int64_t *v)
{
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        *v = a->int32_val;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        *v = a->int64_val;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        *v = a->uint32_val;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        *v = a->uint64_val > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->uint64_val;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        *v = a->bool_val != 0;
        return 1;
    default:
        return 0;
    }
}

/* A number: a double or float attribute, or an integer one. */
static int attr_num(const ck_attr *a, double *v)
{
    int64_t i;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL)
        *v = a->double_val;
    else if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL)
        *v = a->float_val;
    else if (attr_int(a, &i))
        *v = (double)i;
    else
        return 0;
    return 1;
}

/* An integer list of any integer type: *n values, (*get)(i) through vals. */
static int attr_ints(const ck_attr *a, size_t *n, const void **vals, int *width)
{
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_LIST:
        *n = a->int32_list->n_values, *vals = a->int32_list->values, *width = 4;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_LIST:
        *n = a->sint32_list->n_values, *vals = a->sint32_list->values, *width = 4;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_LIST:
        *n = a->uint32_list->n_values, *vals = a->uint32_list->values, *width = -4;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST:
        *n = a->int64_list->n_values, *vals = a->int64_list->values, *width = 8;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_LIST:
        *n = a->sint64_list->n_values, *vals = a->sint64_list->values, *width = 8;
        return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_LIST:
        *n = a->uint64_list->n_values, *vals = a->uint64_list->values, *width = -8;
        return 1;
    default:
        return 0;
    }
}

static int64_t list_at(const void *vals, int width, size_t i)
{
    switch (width) {
    case 4:
        return ((const int32_t *)vals)[i];
    case -4:
        return ((const uint32_t *)vals)[i];
    case 8:
        return ((const int64_t *)vals)[i];
    default: {
        uint64_t u = ((const uint64_t *)vals)[i];
        return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    }
}

/* An integer list attribute into a new int32 array, every value in
 * [lo, hi] and a multiple-of-`per` length: 1, 0 when the attribute is not
 * such a list. */
static int attr_i32s(const ck_attr *a, int64_t lo, int64_t hi, size_t per, int32_t **out, size_t *n)
{
    const void *vals;
    int width;
    size_t k;
    if (!attr_ints(a, &k, &vals, &width) || (per && k % per))
        return 0;
    int32_t *x = malloc(sizeof(int32_t) * (k + 1));
    if (!x)
        return -1;
    for (size_t i = 0; i < k; i++) {
        int64_t v = list_at(vals, width, i);
        if (v < lo || v > hi) {
            free(x);
            return 0;
        }
        x[i] = (int32_t)v;
    }
    *out = x;
    *n = k;
    return 1;
}

/* ---- global metadata ------------------------------------------------------ */

static int meta_int(ck_set *set, ck_rank *r, const ck_attr *a, int64_t lo, int64_t hi, int *out)
{
    int64_t v;
    if (!attr_int(a, &v) || v < lo || v > hi)
        return zs__ck_bad(set, r, NULL, NULL,
                          "global metadata: %s must be an integer in [%lld, %lld]", a->name,
                          (long long)lo, (long long)hi);
    *out = (int)v;
    return ZS_OK;
}

static int meta_str(ck_set *set, ck_rank *r, const ck_attr *a, char *out, size_t n)
{
    if (a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        return zs__ck_bad(set, r, NULL, NULL, "global metadata: %s must be a string", a->name);
    snprintf(out, n, "%s", a->string_val);
    return ZS_OK;
}

/* A list attribute into a new int32 array (lo..hi, length a multiple of per). */
static int meta_list(ck_set *set, ck_rank *r, const ck_attr *a, int64_t lo, int64_t hi, size_t per,
                     int32_t **out, size_t *n)
{
    int k = attr_i32s(a, lo, hi, per, out, n);
    if (k < 0)
        return nomem(set, r);
    if (k == 0)
        return zs__ck_bad(set, r, NULL, NULL,
                          "global metadata: %s must be a list of integers in [%lld, %lld], "
                          "%zu per entry",
                          a->name, (long long)lo, (long long)hi, per);
    return ZS_OK;
}

/* Names of streams or labels, as rank 0's file lists them. */
static int meta_names(ck_set *set, ck_rank *r, const ck_attr *a, int streams)
{
    if (a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_LIST)
        return zs__ck_bad(set, r, NULL, NULL, "global metadata: %s must be a list of strings",
                          a->name);
    size_t n = a->string_list->n_values;
    if (streams && (n < 2 || n > ZS_MAX_STREAMS))
        return zs__ck_bad(set, r, NULL, NULL, "global metadata: 2 to %d streams", ZS_MAX_STREAMS);
    for (size_t i = 0; i < n; i++) {
        const char *v = a->string_list->values[i];
        if (streams) {
            snprintf(set->meta.streams[i], sizeof set->meta.streams[i], "%s", v);
            continue;
        }
        int32_t k = zs__ck_label(set, v, strlen(v));
        if (k == ZS_ENOMEM)
            return nomem(set, r);
        if (k != (int32_t)i)
            return zs__ck_bad(set, r, NULL, NULL, "global metadata: zs_labels must be distinct");
    }
    if (streams)
        set->meta.nstreams = (int)n;
    return ZS_OK;
}

/* zepsim's attributes every file has (its rank, segments, block pool). */
static int meta_rank(ck_set *set, ck_rank *r, int rank, const ck_attr *a)
{
    int v, rc = ZS_OK;
    size_t n;
    int32_t *x = NULL;
    if (strcmp(a->name, "zs_rank") == 0) {
        if (!(rc = meta_int(set, r, a, 0, INT32_MAX, &v)) && v != rank)
            rc = zs__ck_bad(set, r, NULL, "keep the file names zepsim wrote",
                            "the file is rank %d's trace, named as rank %d's", v, rank);
    } else if (strcmp(a->name, "zs_nranks") == 0) {
        if (!(rc = meta_int(set, r, a, 1, set->lim.ranks, &v)) && rank > 0 && v != set->meta.nranks)
            rc = zs__ck_bad(set, r, NULL, "keep the files of one export together",
                            "a trace of %d ranks among rank 0's %d", v, set->meta.nranks);
        else if (!rc)
            set->meta.nranks = v;
    } else if (strcmp(a->name, "zs_segments") == 0) {
        if (!(rc = meta_list(set, r, a, 0, INT32_MAX, 2, &x, &n))) {
            free(r->segs);
            r->segs = x, r->nsegs = (int32_t)(n / 2);
        }
    } else if (strcmp(a->name, "zs_blocks") == 0) {
        if (!(rc = meta_list(set, r, a, 0, INT32_MAX, 5, &x, &n))) {
            free(r->blocks);
            r->blocks = malloc(sizeof(zs_attn_block) * (n / 5 + 1));
            for (size_t i = 0; r->blocks && i < n / 5; i++)
                r->blocks[i] = (zs_attn_block){x[5 * i], x[5 * i + 1], x[5 * i + 2], x[5 * i + 3],
                                               x[5 * i + 4]};
            r->nblocks = (int64_t)(n / 5);
            free(x);
            if (!r->blocks)
                rc = nomem(set, r);
            if (!rc && (int64_t)(n / 5) > set->lim.ops)
                rc = zs__ck_bad(set, r, NULL, NULL, "more attention blocks than the op limit");
        }
    }
    return rc;
}

/* zepsim's attributes rank 0's file has: the schedule's header and plan. */
static int meta_head(ck_set *set, ck_rank *r, const ck_attr *a)
{
    ck_meta *m = &set->meta;
    const char *k = a->name;
    size_t n;
    int32_t *x = NULL;
    int rc = ZS_OK;
    if (strcmp(k, "zs_method") == 0)
        return meta_str(set, r, a, m->method, sizeof m->method);
    if (strcmp(k, "zs_model") == 0)
        return meta_str(set, r, a, m->model, sizeof m->model);
    if (strcmp(k, "zs_cluster") == 0)
        return meta_str(set, r, a, m->cluster, sizeof m->cluster);
    if (strcmp(k, "zs_cost") == 0)
        return meta_str(set, r, a, m->cost, sizeof m->cost);
    if (strcmp(k, "zs_layers") == 0)
        return meta_int(set, r, a, 1, 1 << 16, &m->layers);
    if (strcmp(k, "zs_heads") == 0)
        return meta_int(set, r, a, 1, 32767, &m->heads);
    if (strcmp(k, "zs_micro_batches") == 0)
        return meta_int(set, r, a, 1, 1 << 20, &m->micro);
    if (strcmp(k, "zs_streams") == 0 || strcmp(k, "zs_labels") == 0)
        return meta_names(set, r, a, k[3] == 's');
    if (strcmp(k, "zs_dims") == 0) {
        if (!(rc = meta_list(set, r, a, 1, 1 << 20, 4, &x, &n)) && n != 4)
            rc = zs__ck_bad(set, r, NULL, NULL, "global metadata: zs_dims has 4 values");
        for (size_t i = 0; !rc && i < 4; i++)
            m->dims[i] = x[i];
    } else if (strcmp(k, "zs_docs") == 0) {
        if (!(rc = meta_list(set, r, a, 1, INT32_MAX, 1, &x, &n)) && (int64_t)n > set->lim.ops)
            rc = zs__ck_bad(set, r, NULL, NULL, "more documents than the op limit");
        if (!rc) {
            free(m->docs);
            m->docs = x, m->ndocs = (int32_t)n, x = NULL;
        }
    } else if (strcmp(k, "zs_pieces") == 0) {
        if (!(rc = meta_list(set, r, a, 0, INT32_MAX, 6, &x, &n)) && (int64_t)n / 6 > set->lim.ops)
            rc = zs__ck_bad(set, r, NULL, NULL, "more pieces than the op limit");
        if (!rc) {
            free(m->pieces);
            m->pieces = x, m->npieces = (int64_t)n / 6, x = NULL;
        }
    }
    free(x);
    return rc;
}

static int read_meta(ck_set *set, ck_rank *r, int rank, const uint8_t *buf, size_t len)
{
    ChakraProtoMsg__GlobalMetadata *g = chakra_proto_msg__global_metadata__unpack(NULL, len, buf);
    if (!g)
        return zs__ck_bad(set, r, NULL, NULL,
                          "the first message is not a Chakra GlobalMetadata (protobuf decoding "
                          "failed)");
    int rc = ZS_OK, version = -1;
    for (size_t i = 0; i < g->n_attr && !rc; i++)
        if (strcmp(g->attr[i]->name, "zs_schedule") == 0)
            rc = meta_int(set, r, g->attr[i], 0, INT32_MAX, &version);
    if (!rc && version >= 0 && version != ZS_CHAKRA_VERSION)
        rc = zs__ck_bad(set, r, NULL, "write the traces again with this zepsim",
                        "zepsim trace version %d (this zepsim reads %d)", version,
                        ZS_CHAKRA_VERSION);
    r->zs = version == ZS_CHAKRA_VERSION;
    if (rank == 0)
        set->meta.have = r->zs;
    else if (!rc && r->zs != set->meta.have)
        rc = zs__ck_bad(set, r, NULL, "keep the files of one export together",
                        "rank 0's trace %s zepsim's, this one %s", set->meta.have ? "is" : "is not",
                        r->zs ? "is" : "is not");
    for (size_t i = 0; i < g->n_attr && !rc && r->zs; i++) {
        if (strncmp(g->attr[i]->name, "zs_", 3) != 0)
            continue;
        rc = meta_rank(set, r, rank, g->attr[i]);
        if (!rc && rank == 0)
            rc = meta_head(set, r, g->attr[i]);
    }
    if (!rc && rank == 0 && r->zs && set->meta.nranks > set->nranks)
        rc = zs__ck_bad(set, r, NULL, "keep the files of one export together",
                        "the trace has %d ranks but only %d files were found", set->meta.nranks,
                        set->nranks);
    else if (!rc && rank == 0 && r->zs && set->meta.nranks > 0)
        set->nranks = set->meta.nranks; /* files beyond: not of this export */
    chakra_proto_msg__global_metadata__free_unpacked(g, NULL);
    return rc;
}

/* ---- nodes ---------------------------------------------------------------- */

enum {
    A_CPU,
    A_TYPE,
    A_SIZE,
    A_SRC,
    A_DST,
    A_TAG,
    A_PG,
    A_PGRANKS,
    A_TENSOR,
    A_KIND,
    A_T,
    A_MNK,
    A_BYTES,
    A_HEADS,
    A_BLOCK0,
    A_NBLOCKS,
    A_STREAM,
    A_DEPS,
    A_FLAGS,
    A_MARKER,
    A_VALUE,
    A_PGTAG,
    A_CDOCS,
    A_CBYTES,
    A_N
};
static const char *const attr_names[A_N] = {
    "is_cpu_op", "comm_type", "comm_size",   "comm_src",   "comm_dst",      "comm_tag",
    "pg_name",   "pg_ranks",  "tensor_size", "zs_kind",    "zs_t",          "zs_mnk",
    "zs_bytes",  "zs_heads",  "zs_block0",   "zs_nblocks", "zs_stream",     "zs_deps",
    "zs_flags",  "zs_marker", "zs_value",    "zs_pg_tag",  "zs_carry_docs", "zs_carry_bytes"};

typedef struct nread {
    ck_set *set;
    ck_rank *r;
    int rank;
    ck_node *nd;
    const ChakraProtoMsg__Node *msg;
    const ck_attr *a[A_N];
} nread;

/* Attribute k as a number in [lo, hi]: 1 found, 0 absent (def), < 0 error. */
static int num(nread *x, int k, double lo, double hi, double def, double *out)
{
    *out = def;
    if (!x->a[k])
        return 0;
    double v;
    if (!attr_num(x->a[k], &v) || !(v >= lo && v <= hi))
        return zs__ck_bad(x->set, x->r, x->nd, NULL, "%s must be a number in [%g, %g]",
                          attr_names[k], lo, hi);
    *out = v;
    return 1;
}

static int inum(nread *x, int k, double lo, double hi, double def, int32_t *out)
{
    double v;
    int rc = num(x, k, lo, hi, def, &v);
    if (rc >= 0 && floor(v) != v)
        return zs__ck_bad(x->set, x->r, x->nd, NULL, "%s must be an integer", attr_names[k]);
    *out = (int32_t)v;
    return rc;
}

static int node_comp(nread *x)
{
    ck_node *nd = x->nd;
    double cpu, size;
    nd->kind = ZS_OP_COMPUTE;
    nd->ck = ZS_CK_ELEMWISE;
    if (num(x, A_CPU, 0, 1, 0, &cpu) < 0 ||
        num(x, A_T, 0, ZS_PLAN_MAX_SECONDS, (double)x->msg->duration_micros / 1e6, &nd->t) < 0)
        return ZS_EINPUT;
    if (!(nd->t <= ZS_PLAN_MAX_SECONDS))
        return zs__ck_bad(x->set, x->r, nd, NULL, "duration_micros %llu: more than %g s",
                          (unsigned long long)x->msg->duration_micros, ZS_PLAN_MAX_SECONDS);
    nd->stream = cpu ? 2 : ZS_STREAM_COMPUTE;
    x->set->cpu_stream |= cpu != 0;
    if (!x->a[A_KIND]) { /* another tool's: its bytes, priced by its duration */
        if (num(x, A_TENSOR, 0, ZS_PLAN_MAX_BYTES, 0, &size) < 0)
            return ZS_EINPUT;
        nd->bytes = size;
        return ZS_OK;
    }
    const char *kind =
        x->a[A_KIND]->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL
            ? x->a[A_KIND]->string_val
            : "";
    int ck = -1;
    for (int k = 0; k < ZS_CK_NKINDS; k++)
        if (strcmp(kind, zs_compute_kind_name(k)) == 0)
            ck = k;
    if (ck < 0)
        return zs__ck_bad(x->set, x->r, nd, NULL, "unknown zs_kind '%s'", kind);
    nd->ck = (int8_t)ck;
    if (ck == ZS_CK_ELEMWISE)
        return num(x, A_BYTES, 0, ZS_PLAN_MAX_BYTES, 0, &nd->bytes) < 0 ? ZS_EINPUT : ZS_OK;
    if (ck == ZS_CK_GEMM) {
        const ck_attr *a = x->a[A_MNK];
        if (!a || a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_LIST ||
            a->double_list->n_values != 3)
            return zs__ck_bad(x->set, x->r, nd, NULL, "a GEMM needs zs_mnk, 3 numbers");
        double *v = a->double_list->values;
        for (int i = 0; i < 3; i++)
            if (!(v[i] >= 0 && v[i] <= ZS_PLAN_MAX_DIM))
                return zs__ck_bad(x->set, x->r, nd, NULL, "zs_mnk: numbers in [0, %g]",
                                  ZS_PLAN_MAX_DIM);
        nd->m = v[0], nd->n = v[1], nd->k = v[2];
        return ZS_OK;
    }
    double b0, nb;
    if (inum(x, A_HEADS, 1, 32767, 0, &nd->heads) <= 0 ||
        num(x, A_BLOCK0, 0, (double)x->r->nblocks, -1, &b0) <= 0 ||
        num(x, A_NBLOCKS, 1, (double)x->r->nblocks, 0, &nb) <= 0 || b0 + nb > (double)x->r->nblocks)
        return zs__ck_bad(x->set, x->r, nd, NULL,
                          "attention needs zs_heads, and zs_block0 and zs_nblocks inside the "
                          "file's zs_blocks (%lld blocks)",
                          (long long)x->r->nblocks);
    nd->blk0 = (int64_t)b0, nd->nblk = (int32_t)nb;
    return ZS_OK;
}

/* A transfer's carry list (zs_carry_docs, zs_carry_bytes: the documents
 * it moves and each one's bytes) into the rank's carry pool, as the node's
 * blk0/nblk; none when both are absent. */
static int node_carry(nread *x)
{
    const ck_attr *d = x->a[A_CDOCS], *b = x->a[A_CBYTES];
    if (!d && !b)
        return ZS_OK;
    int32_t *docs = NULL;
    size_t n = 0;
    int k = d ? attr_i32s(d, 0, INT32_MAX, 1, &docs, &n) : 0;
    if (k < 0)
        return nomem(x->set, x->r);
    if (!k || !b || b->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_LIST ||
        b->double_list->n_values != n || n < 1 || n > INT32_MAX) {
        free(docs);
        return zs__ck_bad(x->set, x->r, x->nd,
                          "give both, zs_carry_docs as document numbers (>= 0) and "
                          "zs_carry_bytes as as many numbers, or neither",
                          "zs_carry_docs and zs_carry_bytes: not a carry list");
    }
    ck_rank *r = x->r;
    if (zs_grow((void **)&r->carry, &r->carry_cap, r->ncarry + (int64_t)n, sizeof(zs_carry))) {
        free(docs);
        return nomem(x->set, r);
    }
    for (size_t i = 0; i < n; i++)
        r->carry[r->ncarry + (int64_t)i] = (zs_carry){docs[i], b->double_list->values[i]};
    free(docs);
    x->nd->blk0 = r->ncarry, x->nd->nblk = (int32_t)n;
    r->ncarry += (int64_t)n;
    return ZS_OK;
}

static int node_p2p(nread *x, int send)
{
    ck_node *nd = x->nd;
    int32_t src, dst, tag;
    double size;
    int hi = x->set->nranks - 1;
    nd->kind = send ? ZS_OP_SEND : ZS_OP_RECV;
    nd->stream = ZS_STREAM_COMM;
    int s = inum(x, A_SRC, 0, hi, x->rank, &src), d = inum(x, A_DST, 0, hi, x->rank, &dst);
    if (s < 0 || d < 0 || inum(x, A_TAG, INT32_MIN, INT32_MAX, 0, &tag) < 0)
        return ZS_EINPUT;
    if ((send && !d) || (!send && !s))
        return zs__ck_bad(x->set, x->r, nd,
                          "give the node its peer: comm_dst for a send, comm_src for a receive",
                          "missing peer: a %s without %s", send ? "send" : "receive",
                          send ? "comm_dst" : "comm_src");
    if ((send ? src : dst) != x->rank || src == dst)
        return zs__ck_bad(x->set, x->r, nd, NULL,
                          "comm_src %d, comm_dst %d: a %s of rank %d must have comm_%s %d and "
                          "another peer",
                          src, dst, send ? "send" : "receive", x->rank, send ? "src" : "dst",
                          x->rank);
    if (num(x, A_TENSOR, 0, ZS_PLAN_MAX_BYTES, 0, &size) < 0 ||
        num(x, A_SIZE, 0, ZS_PLAN_MAX_BYTES, size, &size) < 0 ||
        num(x, A_BYTES, 0, ZS_PLAN_MAX_BYTES, size, &nd->bytes) < 0)
        return ZS_EINPUT;
    nd->peer = send ? dst : src;
    nd->tag = tag;
    return node_carry(x);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The communicator's ranks as the node gives them (pg_ranks), the same in
 * every node naming it. */
static int coll_ranks(nread *x, ck_pg *pg)
{
    int32_t *v;
    size_t n;
    int k = attr_i32s(x->a[A_PGRANKS], 0, x->set->nranks - 1, 1, &v, &n);
    if (k < 0)
        return nomem(x->set, x->r);
    if (k > 0 && n == 0)
        free(v); /* an empty list */
    if (k == 0 || n == 0)
        return zs__ck_bad(x->set, x->r, x->nd, NULL,
                          "pg_ranks must list ranks of the trace (0 to %d)", x->set->nranks - 1);
    qsort(v, n, sizeof *v, cmp_i32);
    for (size_t i = 1; i < n; i++)
        if (v[i] == v[i - 1]) {
            int32_t twice = v[i];
            free(v);
            return zs__ck_bad(x->set, x->r, x->nd, NULL, "pg_ranks lists rank %d twice", twice);
        }
    if (pg->ranks && (pg->n != (int32_t)n || memcmp(pg->ranks, v, n * sizeof *v) != 0)) {
        free(v);
        return zs__ck_bad(
            x->set, x->r, x->nd, NULL,
            "communicator '%s' has other ranks (pg_ranks) than where it was first used", pg->name);
    }
    if (pg->ranks)
        free(v);
    else
        pg->ranks = v, pg->n = (int32_t)n;
    return ZS_OK;
}

static int node_coll(nread *x)
{
    ck_node *nd = x->nd;
    int32_t type, tag;
    double size;
    nd->kind = ZS_OP_COLL;
    nd->stream = ZS_STREAM_COMM;
    if (inum(x, A_TYPE, 0, 1000, CK_ALL_REDUCE, &type) < 0 ||
        num(x, A_SIZE, 0, ZS_PLAN_MAX_BYTES, 0, &size) < 0 ||
        num(x, A_BYTES, 0, ZS_PLAN_MAX_BYTES, size, &nd->bytes) < 0)
        return ZS_EINPUT;
    switch (type) {
    case CK_ALL_REDUCE:
    case CK_BARRIER: /* an all-reduce of nothing */
        nd->ck = ZS_COLL_ALLREDUCE;
        nd->bytes = type == CK_BARRIER ? 0 : nd->bytes;
        break;
    case CK_ALL_GATHER:
        nd->ck = ZS_COLL_ALLGATHER;
        break;
    case CK_REDUCE_SCATTER:
        nd->ck = ZS_COLL_REDUCESCATTER;
        break;
    case CK_ALL_TO_ALL:
        nd->ck = ZS_COLL_ALLTOALL;
        break;
    default:
        return zs__ck_bad(x->set, x->r, nd,
                          "zepsim runs ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL and "
                          "BARRIER",
                          "collective comm_type %d is not supported", type);
    }
    const ck_attr *a = x->a[A_PG];
    if (a && a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        return zs__ck_bad(x->set, x->r, nd, NULL, "pg_name must be a string");
    int32_t pg = zs__ck_pg(x->set, a ? a->string_val : "");
    if (pg == ZS_ENOMEM)
        return nomem(x->set, x->r);
    if (pg < 0)
        return zs__ck_bad(x->set, x->r, nd, NULL, "pg_name too long, or too many communicators");
    ck_pg *p = &x->set->pgs[pg];
    nd->pg = pg;
    if (p->rank0 < 0)
        p->rank0 = x->rank, p->node0 = x->r->n;
    int rc = inum(x, A_PGTAG, INT32_MIN, INT32_MAX, 0, &tag);
    if (rc < 0)
        return rc;
    if (rc > 0)
        p->tag = tag, p->has_tag = 1;
    return x->a[A_PGRANKS] ? coll_ranks(x, p) : ZS_OK;
}

static int node_meta(nread *x)
{
    ck_node *nd = x->nd;
    int32_t mk, value;
    nd->kind = CK_PASS;
    nd->stream = ZS_STREAM_COMPUTE;
    if (!x->a[A_MARKER])
        return ZS_OK;
    if (inum(x, A_MARKER, 0, ZS_MARK_NKINDS - 1, 0, &mk) < 0 ||
        inum(x, A_VALUE, INT32_MIN, INT32_MAX, 0, &value) < 0)
        return ZS_EINPUT;
    nd->kind = ZS_OP_MARKER;
    nd->ck = (int8_t)mk;
    nd->value = value;
    return ZS_OK;
}

/* The node's kind and payload, by its Chakra type. */
static int node_body(nread *x)
{
    switch ((int)x->msg->type) {
    case CK_COMP_NODE:
        return node_comp(x);
    case CK_COMM_SEND_NODE:
    case CK_COMM_RECV_NODE:
        return node_p2p(x, (int)x->msg->type == CK_COMM_SEND_NODE);
    case CK_COMM_COLL_NODE:
        return node_coll(x);
    case CK_METADATA_NODE:
        return node_meta(x);
    case CK_INVALID_NODE:
        x->nd->kind = CK_PASS;
        return ZS_OK;
    case CK_MEM_LOAD_NODE:
    case CK_MEM_STORE_NODE:
        return zs__ck_bad(x->set, x->r, x->nd, "remove the node, or make it a COMP_NODE",
                          "remote memory nodes (MEM_LOAD_NODE, MEM_STORE_NODE) are not supported");
    default:
        return zs__ck_bad(x->set, x->r, x->nd, "node types are 0 to 7 (Chakra's NodeType)",
                          "unknown node type %d", (int)x->msg->type);
    }
}

/* zepsim's stream, flags and own-dependency count; the dependencies. */
static int node_deps(nread *x)
{
    ck_node *nd = x->nd;
    ck_rank *r = x->r;
    const ChakraProtoMsg__Node *m = x->msg;
    int32_t stream, flags, own;
    int nstreams = x->set->meta.have ? x->set->meta.nstreams : 3;
    if (inum(x, A_STREAM, 0, nstreams - 1, nd->stream, &stream) < 0 ||
        inum(x, A_FLAGS, 0, 65535, 0, &flags) < 0 ||
        inum(x, A_DEPS, 0, (double)m->n_data_deps, r->zs ? 0 : (double)m->n_data_deps, &own) < 0)
        return ZS_EINPUT;
    nd->stream = (int8_t)stream;
    nd->flags = (uint16_t)flags;
    nd->nown = own;
    if (own > ZS_CHAKRA_MAX_DEPS)
        return zs__ck_bad(x->set, r, nd, NULL, "%d dependencies: more than the limit of %d", own,
                          ZS_CHAKRA_MAX_DEPS);
    size_t nc = r->zs ? m->n_ctrl_deps : 0; /* another tool's ctrl_deps are not waited for */
    if (m->n_data_deps > (size_t)INT32_MAX || nc > (size_t)INT32_MAX ||
        zs_grow((void **)&r->deps, &r->deps_cap, r->ndeps + (int64_t)(m->n_data_deps + nc),
                sizeof(uint64_t)))
        return nomem(x->set, r);
    nd->dep0 = r->ndeps;
    nd->ndata = (int32_t)m->n_data_deps;
    nd->nctrl = (int32_t)nc;
    if (m->n_data_deps) /* memcpy from NULL is undefined even for 0 bytes (UBSan) */
        memcpy(r->deps + r->ndeps, m->data_deps, sizeof(uint64_t) * m->n_data_deps);
    r->ndeps += (int64_t)m->n_data_deps;
    if (nc)
        memcpy(r->deps + r->ndeps, m->ctrl_deps, sizeof(uint64_t) * nc);
    r->ndeps += (int64_t)nc;
    return ZS_OK;
}

static int read_node(ck_set *set, ck_rank *r, int rank, const uint8_t *buf, size_t len)
{
    if (++set->total > set->lim.ops) {
        char fix[200];
        snprintf(fix, sizeof fix,
                 "read fewer or smaller traces, or raise the limit with the environment variable "
                 "ZEPSIM_MAX_PLAN_OPS (now %lld)",
                 (long long)set->lim.ops);
        return zs__ck_bad(set, r, NULL, fix, "more nodes than the limit of %lld",
                          (long long)set->lim.ops);
    }
    if (zs_grow((void **)&r->nodes, &r->cap, r->n + 1, sizeof(ck_node)))
        return nomem(set, r);
    ck_node *nd = &r->nodes[r->n];
    memset(nd, 0, sizeof *nd);
    nd->label = -1;
    ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(NULL, len, buf);
    if (!m)
        return zs__ck_bad(set, r, NULL, NULL,
                          "message %lld (node %lld of the file) is not a Chakra Node (protobuf "
                          "decoding failed)",
                          (long long)r->n + 2, (long long)r->n + 1);
    nread x = {set, r, rank, nd, m, {0}};
    nd->id = m->id;
    int rc = ZS_OK;
    int32_t lab = zs__ck_label(set, m->name, strlen(m->name));
    if (lab < 0)
        lab = zs__ck_label(set, "chakra", 6); /* more than 65535 names: the rest share one */
    if (lab < 0)
        rc = nomem(set, r);
    nd->label = lab;
    for (size_t i = 0; i < m->n_attr && !rc; i++)
        for (int k = 0; k < A_N; k++)
            if (strcmp(m->attr[i]->name, attr_names[k]) == 0)
                x.a[k] = m->attr[i];
    if (!rc && !(rc = node_body(&x)))
        rc = node_deps(&x);
    chakra_proto_msg__node__free_unpacked(m, NULL);
    if (!rc)
        r->n++;
    return rc;
}

/* ---- files ---------------------------------------------------------------- */

/* A base-128 varint at *pos: 0, or -1 truncated by the end, -2 too long. */
static int varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= n)
            return -1;
        uint8_t b = p[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -2;
}

/* The messages of one file: the metadata, then the nodes. */
static int read_messages(ck_set *set, int rank, const uint8_t *p, size_t n)
{
    ck_rank *r = &set->ranks[rank];
    size_t pos = 0;
    int64_t k = 0;
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return zs__ck_bad(set, r, NULL, "decompress it first (gunzip)", "a gzip-compressed trace");
    if (n == 0)
        return zs__ck_bad(set, r, NULL, NULL, "an empty file (no GlobalMetadata)");
    for (; pos < n; k++) {
        size_t at = pos;
        uint64_t len;
        int v = varint(p, n, &pos, &len);
        if (v)
            return zs__ck_bad(set, r, NULL, NULL, "message %lld at byte %zu: %s", (long long)k + 1,
                              at,
                              v == -1 ? "truncated varint (the file ends inside a length)"
                                      : "malformed varint (more than 10 bytes)");
        if (len > ZS_CHAKRA_MAX_MESSAGE)
            return zs__ck_bad(set, r, NULL, NULL,
                              "message %lld at byte %zu: %llu bytes, more than the limit of %zu",
                              (long long)k + 1, at, (unsigned long long)len,
                              (size_t)ZS_CHAKRA_MAX_MESSAGE);
        if (len > n - pos)
            return zs__ck_bad(set, r, NULL, "the file is truncated: write it again",
                              "message %lld at byte %zu: a length of %llu bytes, beyond the end "
                              "of the file (%zu bytes)",
                              (long long)k + 1, at, (unsigned long long)len, n);
        int rc = k == 0 ? read_meta(set, r, rank, p + pos, (size_t)len)
                        : read_node(set, r, rank, p + pos, (size_t)len);
        if (rc)
            return rc;
        pos += (size_t)len;
    }
    return ZS_OK;
}

int zs__ck_read_file(ck_set *set, int rank)
{
    ck_rank *r = &set->ranks[rank];
    char *text = NULL;
    size_t len = 0;
    int rc = zs_read_file(r->path, "check the path; a Chakra trace set is DIR/PREFIX.RANK.et",
                          &text, &len, set->e);
    if (rc)
        return rc;
    rc = read_messages(set, rank, (const uint8_t *)text, len);
    free(text);
    return rc;
}

#endif

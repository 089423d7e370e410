/* Chakra trace writer: one ET per rank, the schedule unrolled into nodes in
 * program order (see zs_chakra.h for what each node carries). */
#include "zs_chakra.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zs_afile.h"
#include "zs_hash.h"
#include "zs_version.h"

#ifdef ZS_HAVE_CHAKRA
#include "zs_chakra_et.pb-c.h"
#include "zs_grow.h"

typedef ChakraProtoMsg__AttributeProto ck_attr;

#define MAX_ATTRS 32

/* The attributes of one message, built in place (no allocation). */
typedef struct attrs {
    ck_attr a[MAX_ATTRS];
    ck_attr *p[MAX_ATTRS];
    int n;
    ChakraProtoMsg__Int64List l64[8];
    ChakraProtoMsg__Int32List l32[2];
    ChakraProtoMsg__DoubleList ld[2];
    ChakraProtoMsg__StringList ls[2];
    int n64, n32, nd, ns;
} attrs;

static ck_attr *attr(attrs *A, const char *name, ChakraProtoMsg__AttributeProto__ValueCase c)
{
    ck_attr *x = &A->a[A->n];
    ck_attr init = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__INIT;
    *x = init;
    x->name = (char *)name;
    x->value_case = c;
    A->p[A->n++] = x;
    return x;
}

static void a_i64(attrs *A, const char *name, int64_t v)
{
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL)->int64_val = v;
}
static void a_i32(attrs *A, const char *name, int32_t v)
{
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL)->int32_val = v;
}
static void a_u64(attrs *A, const char *name, uint64_t v)
{
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL)->uint64_val = v;
}
static void a_dbl(attrs *A, const char *name, double v)
{
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL)->double_val = v;
}
static void a_bool(attrs *A, const char *name, int v)
{
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL)->bool_val = v != 0;
}
static void a_str(attrs *A, const char *name, const char *v)
{
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)->string_val = (char *)v;
}
static void a_l64(attrs *A, const char *name, int64_t *v, size_t n)
{
    ChakraProtoMsg__Int64List *l = &A->l64[A->n64++];
    ChakraProtoMsg__Int64List init = CHAKRA_PROTO_MSG__INT64_LIST__INIT;
    *l = init;
    l->n_values = n;
    l->values = v;
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST)->int64_list = l;
}
static void a_l32(attrs *A, const char *name, int32_t *v, size_t n)
{
    ChakraProtoMsg__Int32List *l = &A->l32[A->n32++];
    ChakraProtoMsg__Int32List init = CHAKRA_PROTO_MSG__INT32_LIST__INIT;
    *l = init;
    l->n_values = n;
    l->values = v;
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_LIST)->int32_list = l;
}
static void a_ld(attrs *A, const char *name, double *v, size_t n)
{
    ChakraProtoMsg__DoubleList *l = &A->ld[A->nd++];
    ChakraProtoMsg__DoubleList init = CHAKRA_PROTO_MSG__DOUBLE_LIST__INIT;
    *l = init;
    l->n_values = n;
    l->values = v;
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_LIST)->double_list = l;
}
static void a_ls(attrs *A, const char *name, char **v, size_t n)
{
    ChakraProtoMsg__StringList *l = &A->ls[A->ns++];
    ChakraProtoMsg__StringList init = CHAKRA_PROTO_MSG__STRING_LIST__INIT;
    *l = init;
    l->n_values = n;
    l->values = v;
    attr(A, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_LIST)->string_list = l;
}

/* One rank's writer state. */
typedef struct wr {
    const zs_schedule *s;
    const zs_model *m;
    int rank;
    FILE *f;
    const char *path;
    zs_err *e;
    uint8_t *buf; /* packed message */
    size_t cap;
    int32_t *segof;  /* segment of each stored op */
    int64_t *base;   /* unrolled index of each segment's first op */
    int64_t *bstart; /* local pool start of each stored attention op's blocks */
    zs_attn_block *pool;
    int64_t npool;
    uint64_t *data, *ctrl; /* one node's dependencies */
    int64_t dcap;
    int64_t last[ZS_MAX_STREAMS];   /* last op of each stream that holds it (-1: none) */
    uint64_t *pend[ZS_MAX_STREAMS]; /* sends/receives issued since */
    int64_t npend[ZS_MAX_STREAMS], pcap[ZS_MAX_STREAMS];
    int32_t *cdoc; /* one transfer's carry list: documents, bytes */
    double *cbytes;
    int64_t ccap;
} wr;

static int nomem(wr *w)
{
    return zs_err_set(w->e, ZS_ENOMEM, w->path, NULL, "out of memory writing a Chakra trace");
}

static void put_varint(FILE *f, uint64_t v)
{
    while (v >= 0x80) {
        fputc((int)(0x80 | (v & 0x7f)), f);
        v >>= 7;
    }
    fputc((int)v, f);
}

/* A message preceded by its length (Chakra's protolib encodeMessage). */
static int put_msg(wr *w, const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    if (len > ZS_CHAKRA_MAX_MESSAGE)
        return zs_err_set(w->e, ZS_EINVALID, w->path, "plan fewer ops per rank",
                          "a Chakra message of %zu bytes (the readers' limit is %zu)", len,
                          (size_t)ZS_CHAKRA_MAX_MESSAGE);
    if (len > w->cap) {
        uint8_t *b = realloc(w->buf, len);
        if (!b)
            return nomem(w);
        w->buf = b;
        w->cap = len;
    }
    protobuf_c_message_pack(msg, w->buf);
    put_varint(w->f, len);
    fwrite(w->buf, 1, len, w->f);
    return ZS_OK;
}

/* The rank's attention block pool: each distinct block range its ops use,
 * once, in the order of first use (a hash of the ranges seen); bstart[i]
 * is op i's start in it. */
static int block_pool(wr *w)
{
    const zs_rank_prog *p = &w->s->ranks[w->rank];
    int64_t cap = 16;
    while (cap < 2 * p->nops)
        cap *= 2;
    int64_t *h = malloc(sizeof(int64_t) * (size_t)cap); /* op index + 1, 0: empty */
    w->pool = malloc(sizeof(zs_attn_block) * 16);
    int64_t pool_cap = 16;
    if (!h || !w->pool) {
        free(h);
        return nomem(w);
    }
    memset(h, 0, sizeof(int64_t) * (size_t)cap);
    for (int64_t i = 0; i < p->nops; i++) {
        const zs_op *op = &p->ops[i];
        w->bstart[i] = -1;
        if (op->kind != ZS_OP_COMPUTE || op->u.compute.ck > ZS_CK_ATTN_BWD)
            continue;
        int64_t b0 = op->u.compute.block0, nb = op->u.compute.nblocks;
        uint64_t k = zs_hash3((int32_t)b0, (int32_t)(b0 >> 32), (int32_t)nb);
        int64_t j = (int64_t)(k & (uint64_t)(cap - 1));
        while (h[j]) {
            const zs_op *o = &p->ops[h[j] - 1];
            if (o->u.compute.block0 == b0 && o->u.compute.nblocks == nb)
                break;
            j = (j + 1) & (cap - 1);
        }
        if (h[j]) {
            w->bstart[i] = w->bstart[h[j] - 1];
            continue;
        }
        h[j] = i + 1;
        if (zs_grow((void **)&w->pool, &pool_cap, w->npool + nb, sizeof(zs_attn_block))) {
            free(h);
            return nomem(w);
        }
        memcpy(w->pool + w->npool, w->s->blocks + b0, sizeof(zs_attn_block) * (size_t)nb);
        w->bstart[i] = w->npool;
        w->npool += nb;
    }
    free(h);
    return ZS_OK;
}

/* The unrolled index (node id) of stored op d seen from an op of segment
 * seg in iteration it: the same iteration inside the segment, the last
 * iteration of an earlier one (zs_schedule.h). */
static int64_t unrolled(const wr *w, int64_t d, int32_t seg, int64_t it)
{
    const zs_segment *sg = w->s->ranks[w->rank].segs;
    int32_t ds = w->segof[d];
    int64_t iter = ds == seg ? it : sg[ds].repeat - 1;
    return w->base[ds] + iter * sg[ds].nops + (d - sg[ds].op0);
}

/* FLOPs and HBM bytes of a compute op (attention as zs_kernel counts
 * them: exact causal pairs, 2.5x for the backward). */
static void compute_work(const wr *w, const zs_op *op, double *flops, double *bytes)
{
    const zs_model *m = w->m;
    double db = m && m->dtype_bytes > 0 ? m->dtype_bytes : 2;
    *flops = *bytes = 0;
    if (op->u.compute.ck == ZS_CK_GEMM) {
        double a = op->u.compute.m, b = op->u.compute.n, c = op->u.compute.k;
        *flops = 2 * a * b * c;
        *bytes = db * (a * c + c * b + a * b);
    } else if (op->u.compute.ck == ZS_CK_ELEMWISE) {
        *bytes = op->u.compute.bytes;
        *flops = *bytes / db; /* one op per element */
    } else {
        int bwd = op->u.compute.ck == ZS_CK_ATTN_BWD;
        double H = op->u.compute.heads, d = m && m->head_dim > 0 ? m->head_dim : 128;
        double kvh = m && m->heads > 0 && m->kv_heads > 0 ? H * m->kv_heads / m->heads : H;
        kvh = kvh < 1 ? 1 : kvh;
        double pairs = 0, q = 0, k = 0;
        for (int32_t i = 0; i < op->u.compute.nblocks; i++) {
            const zs_attn_block *b = &w->s->blocks[op->u.compute.block0 + i];
            pairs += (double)zs_attn_block_pairs(b);
            q += b->q1 - b->q0;
            k += b->k1 - b->k0;
        }
        *flops = 4.0 * H * d * (bwd ? 2.5 : 1.0) * pairs;
        *bytes = db * d *
                 (bwd ? 4.0 * H * q + 2.0 * kvh * k + 2.0 * H * k : 2.0 * H * q + 2.0 * kvh * k);
    }
}

static uint64_t to_u64(double x)
{
    return x <= 0 ? 0 : x >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(x);
}
static int64_t to_i64(double x)
{
    return x <= 0 ? 0 : x >= 9.2e18 ? INT64_MAX : (int64_t)llround(x);
}

/* The op's own attributes, by kind. */
static void op_attrs(wr *w, const zs_op *op, int64_t i, attrs *A, ChakraProtoMsg__Node *nd,
                     double mnk[3], char *pg, size_t pgn)
{
    const zs_schedule *s = w->s;
    switch (op->kind) {
    case ZS_OP_COMPUTE: {
        double flops, bytes;
        compute_work(w, op, &flops, &bytes);
        nd->type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
        nd->duration_micros = to_u64(op->duration * 1e6);
        a_bool(A, "is_cpu_op", 0);
        a_i64(A, "num_ops", to_i64(flops));
        a_u64(A, "tensor_size", to_u64(bytes));
        a_str(A, "zs_kind", zs_compute_kind_name(op->u.compute.ck));
        a_dbl(A, "zs_t", op->duration);
        if (op->u.compute.ck == ZS_CK_GEMM) {
            mnk[0] = op->u.compute.m, mnk[1] = op->u.compute.n, mnk[2] = op->u.compute.k;
            a_ld(A, "zs_mnk", mnk, 3);
        } else if (op->u.compute.ck == ZS_CK_ELEMWISE) {
            a_dbl(A, "zs_bytes", op->u.compute.bytes);
        } else {
            a_i64(A, "zs_heads", op->u.compute.heads);
            a_i64(A, "zs_block0", w->bstart[i]);
            a_i64(A, "zs_nblocks", op->u.compute.nblocks);
        }
        break;
    }
    case ZS_OP_SEND:
    case ZS_OP_RECV: {
        int send = op->kind == ZS_OP_SEND;
        nd->type = send ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                        : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
        a_bool(A, "is_cpu_op", 0);
        a_i32(A, "comm_src", send ? w->rank : op->u.p2p.peer);
        a_i32(A, "comm_dst", send ? op->u.p2p.peer : w->rank);
        a_i32(A, "comm_tag", op->u.p2p.tag);
        a_i64(A, "comm_size", to_i64(op->u.p2p.bytes));
        a_dbl(A, "zs_bytes", op->u.p2p.bytes);
        break;
    }
    case ZS_OP_COLL: {
        static const int64_t type[ZS_COLL_NKINDS] = {
            CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER,
            CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER,
            CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE,
            CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL};
        const zs_group *g = &s->groups[op->u.coll.group];
        nd->type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
        snprintf(pg, pgn, "%d", op->u.coll.group + 1);
        a_bool(A, "is_cpu_op", 0);
        a_i64(A, "comm_type", type[op->u.coll.ck]);
        a_i64(A, "comm_size", to_i64(op->u.coll.bytes));
        a_str(A, "pg_name", pg);
        a_l32(A, "pg_ranks", g->ranks, (size_t)g->n);
        a_i64(A, "zs_pg_tag", g->tag);
        a_dbl(A, "zs_bytes", op->u.coll.bytes);
        break;
    }
    case ZS_OP_MARKER:
        nd->type = CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE;
        a_i64(A, "zs_marker", op->u.marker.mk);
        a_i64(A, "zs_value", op->u.marker.value);
        break;
    }
}

/* The node's dependencies: its own (the IR's, as unrolled ids) in
 * data_deps, then what its stream makes it wait for (data_deps and
 * ctrl_deps): the last op that held the stream and, for an op that holds
 * it, every send and receive issued since. Updates the stream's state. */
static int node_deps(wr *w, const zs_op *op, int32_t seg, int64_t it, int64_t u, int64_t *ndata,
                     int64_t *nctrl)
{
    const int32_t *d = zs_schedule_deps(w->s, w->rank, op);
    int st = op->stream, p2p = op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV;
    int64_t need = op->ndeps + 1 + (p2p ? 0 : w->npend[st]);
    if (zs_grow((void **)&w->data, &w->dcap, need, sizeof(uint64_t)) ||
        !(w->ctrl = realloc(w->ctrl, sizeof(uint64_t) * (size_t)w->dcap)))
        return nomem(w);
    int64_t nd = 0, nc = 0;
    for (int i = 0; i < op->ndeps; i++)
        w->data[nd++] = (uint64_t)unrolled(w, d[i], seg, it);
    int64_t own = nd;
    if (w->last[st] >= 0)
        w->ctrl[nc++] = (uint64_t)w->last[st];
    if (!p2p)
        for (int64_t i = 0; i < w->npend[st]; i++)
            w->ctrl[nc++] = w->pend[st][i];
    for (int64_t i = 0; i < nc; i++) {
        int64_t k = 0;
        while (k < own && w->data[k] != w->ctrl[i])
            k++;
        if (k == own)
            w->data[nd++] = w->ctrl[i];
    }
    if (p2p) {
        if (zs_grow((void **)&w->pend[st], &w->pcap[st], w->npend[st] + 1, sizeof(uint64_t)))
            return nomem(w);
        w->pend[st][w->npend[st]++] = (uint64_t)u;
    } else {
        w->last[st] = u;
        w->npend[st] = 0;
    }
    *ndata = nd;
    *nctrl = nc;
    return ZS_OK;
}

/* A transfer's carry list (zs_carry) as two lists, zs_carry_docs and
 * zs_carry_bytes: a merged transfer reads back as the documents it moves. */
static int carry_attrs(wr *w, const zs_op *op, attrs *A)
{
    int n = op->u.p2p.ncarry;
    const zs_carry *c = w->s->carry + op->u.p2p.carry0;
    int64_t cap = w->ccap;
    if (zs_grow((void **)&w->cdoc, &w->ccap, n, sizeof(int32_t)))
        return nomem(w);
    if (w->ccap != cap) {
        double *q = realloc(w->cbytes, sizeof(double) * (size_t)w->ccap);
        if (!q) {
            w->ccap = cap; /* cbytes still holds only the old capacity */
            return nomem(w);
        }
        w->cbytes = q;
    }
    for (int k = 0; k < n; k++)
        w->cdoc[k] = c[k].doc, w->cbytes[k] = c[k].bytes;
    a_l32(A, "zs_carry_docs", w->cdoc, (size_t)n);
    a_ld(A, "zs_carry_bytes", w->cbytes, (size_t)n);
    return ZS_OK;
}

/* Node u: stored op i of segment seg in iteration it. */
static int put_node(wr *w, int64_t i, int32_t seg, int64_t it, int64_t u)
{
    const zs_op *op = &w->s->ranks[w->rank].ops[i];
    ChakraProtoMsg__Node nd = CHAKRA_PROTO_MSG__NODE__INIT;
    attrs A;
    A.n = A.n64 = A.n32 = A.nd = A.ns = 0;
    double mnk[3];
    char pg[16];
    int64_t ndata = 0, nctrl = 0;
    int rc = node_deps(w, op, seg, it, u, &ndata, &nctrl);
    if (rc)
        return rc;
    nd.id = (uint64_t)u;
    nd.name = w->s->labels[op->label];
    op_attrs(w, op, i, &A, &nd, mnk, pg, sizeof pg);
    if ((op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV) && op->u.p2p.ncarry > 0 &&
        (rc = carry_attrs(w, op, &A)))
        return rc;
    a_i64(&A, "zs_stream", op->stream);
    if (op->ndeps)
        a_i64(&A, "zs_deps", op->ndeps);
    if (op->flags)
        a_i64(&A, "zs_flags", op->flags);
    nd.n_data_deps = (size_t)ndata;
    nd.data_deps = w->data;
    nd.n_ctrl_deps = (size_t)nctrl;
    nd.ctrl_deps = w->ctrl;
    nd.n_attr = (size_t)A.n;
    nd.attr = A.p;
    return put_msg(w, &nd.base);
}

/* The global metadata: Chakra's version and schema, then zepsim's. */
static int put_meta(wr *w)
{
    const zs_schedule *s = w->s;
    const zs_rank_prog *p = &s->ranks[w->rank];
    attrs A;
    A.n = A.n64 = A.n32 = A.nd = A.ns = 0;
    int64_t dims[4] = {s->dims.tp, s->dims.cp, s->dims.pp, s->dims.dp};
    int64_t np = w->rank == 0 ? s->npieces : 0, nd = w->rank == 0 ? s->ndocs : 0;
    int64_t *segs = malloc(sizeof(int64_t) * (size_t)(2 * p->nsegs + 1));
    int64_t *blk = malloc(sizeof(int64_t) * (size_t)(5 * w->npool + 1));
    int64_t *docs = malloc(sizeof(int64_t) * (size_t)(nd + 1));
    int64_t *pcs = malloc(sizeof(int64_t) * (size_t)(6 * np + 1));
    char *streams[ZS_MAX_STREAMS];
    int rc = ZS_OK;
    if (!segs || !blk || !docs || !pcs) {
        rc = nomem(w);
        goto out;
    }
    for (int i = 0; i < s->nstreams; i++)
        streams[i] = (char *)s->stream_names[i];
    for (int32_t i = 0; i < p->nsegs; i++)
        segs[2 * i] = p->segs[i].nops, segs[2 * i + 1] = p->segs[i].repeat;
    for (int64_t i = 0; i < w->npool; i++) {
        const zs_attn_block *b = &w->pool[i];
        int64_t *x = blk + 5 * i;
        x[0] = b->doc, x[1] = b->q0, x[2] = b->q1, x[3] = b->k0, x[4] = b->k1;
    }
    for (int64_t i = 0; i < nd; i++)
        docs[i] = s->doc_len[i];
    for (int64_t i = 0; i < np; i++) {
        const zs_piece *q = &s->pieces[i];
        int64_t *x = pcs + 6 * i;
        x[0] = q->doc, x[1] = q->t0, x[2] = q->t1, x[3] = q->rank, x[4] = q->layout;
        x[5] = q->micro;
    }
    a_str(&A, "schema", "zepsim-chakra." ZS_VERSION);
    a_i64(&A, "zs_schedule", ZS_CHAKRA_VERSION);
    a_i64(&A, "zs_rank", w->rank);
    a_i64(&A, "zs_nranks", s->nranks);
    a_str(&A, "zs_method", s->method);
    a_str(&A, "zs_model", s->model);
    a_str(&A, "zs_cluster", s->cluster);
    a_str(&A, "zs_cost", s->cost_desc);
    a_l64(&A, "zs_dims", dims, 4);
    a_i64(&A, "zs_layers", s->layers);
    a_i64(&A, "zs_heads", s->heads);
    a_i64(&A, "zs_micro_batches", s->micro_batches);
    a_ls(&A, "zs_streams", streams, (size_t)s->nstreams);
    a_ls(&A, "zs_labels", s->labels, (size_t)s->nlabels);
    a_l64(&A, "zs_segments", segs, (size_t)(2 * p->nsegs));
    a_l64(&A, "zs_blocks", blk, (size_t)(5 * w->npool));
    if (w->rank == 0) {
        a_l64(&A, "zs_docs", docs, (size_t)nd);
        a_l64(&A, "zs_pieces", pcs, (size_t)(6 * np));
    }
    ChakraProtoMsg__GlobalMetadata g = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    g.version = "1.0.0";
    g.n_attr = (size_t)A.n;
    g.attr = A.p;
    rc = put_msg(w, &g.base);
out:
    free(segs);
    free(blk);
    free(docs);
    free(pcs);
    return rc;
}

static void wr_free(wr *w)
{
    free(w->buf);
    free(w->segof);
    free(w->base);
    free(w->bstart);
    free(w->pool);
    free(w->data);
    free(w->ctrl);
    free(w->cdoc);
    free(w->cbytes);
    for (int i = 0; i < ZS_MAX_STREAMS; i++)
        free(w->pend[i]);
}

/* The rank's metadata and nodes into w->f. */
static int put_rank(wr *w)
{
    const zs_rank_prog *p = &w->s->ranks[w->rank];
    w->segof = malloc(sizeof(int32_t) * (size_t)(p->nops + 1));
    w->base = malloc(sizeof(int64_t) * (size_t)(p->nsegs + 1));
    w->bstart = malloc(sizeof(int64_t) * (size_t)(p->nops + 1));
    if (!w->segof || !w->base || !w->bstart)
        return nomem(w);
    int64_t u = 0;
    for (int32_t g = 0; g < p->nsegs; g++) {
        w->base[g] = u;
        u += (int64_t)p->segs[g].nops * p->segs[g].repeat;
        for (int32_t i = 0; i < p->segs[g].nops; i++)
            w->segof[p->segs[g].op0 + i] = g;
    }
    for (int i = 0; i < ZS_MAX_STREAMS; i++)
        w->last[i] = -1;
    int rc = block_pool(w);
    if (rc || (rc = put_meta(w)))
        return rc;
    u = 0;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t it = 0; it < p->segs[g].repeat; it++)
            for (int32_t i = 0; i < p->segs[g].nops; i++)
                if ((rc = put_node(w, p->segs[g].op0 + i, g, it, u++)))
                    return rc;
    if (ferror(w->f))
        return zs_err_set(w->e, ZS_EIO, w->path, "check free disk space",
                          "write error while writing a Chakra trace");
    return ZS_OK;
}

static int write_rank(const zs_schedule *s, const zs_model *m, int rank, const char *path,
                      zs_err *e)
{
    zs_afile a;
    int rc = zs_afile_open(&a, path, e);
    if (rc)
        return rc;
    wr w;
    memset(&w, 0, sizeof w);
    w.s = s, w.m = m, w.rank = rank, w.f = a.f, w.path = path, w.e = e;
    rc = put_rank(&w);
    wr_free(&w);
    return rc ? zs_afile_fail(&a, rc, e) : zs_afile_commit(&a, e);
}

/* <prefix>.comm_group.json: pg_name -> ranks, ASTRA-sim's format. */
static int write_groups(const zs_schedule *s, const char *path, zs_err *e)
{
    zs_afile a;
    int rc = zs_afile_open(&a, path, e);
    if (rc)
        return rc;
    fputs("{", a.f);
    for (int32_t g = 0; g < s->ngroups; g++) {
        fprintf(a.f, "%s\n  \"%d\": [", g ? "," : "", g + 1);
        for (int32_t i = 0; i < s->groups[g].n; i++)
            fprintf(a.f, "%s%d", i ? ", " : "", s->groups[g].ranks[i]);
        fputs("]", a.f);
    }
    fputs("\n}\n", a.f);
    return zs_afile_commit(&a, e);
}

static int make_path(char *buf, size_t n, const char *dir, const char *prefix, const char *tail,
                     long rank, zs_err *e)
{
    int k = rank >= 0 ? snprintf(buf, n, "%s/%s.%ld.et", dir, prefix, rank)
                      : snprintf(buf, n, "%s/%s.%s", dir, prefix, tail);
    if (k < 0 || (size_t)k >= n)
        return zs_err_set(e, ZS_EINPUT, dir, "use a shorter folder or prefix",
                          "the trace file name is too long");
    return ZS_OK;
}

int zs_chakra_available(void)
{
    return 1;
}

int zs_chakra_write(const zs_schedule *s, const zs_model *m, const char *dir, const char *prefix,
                    zs_err *e)
{
    /* Chakra's compute nodes take the SMs; a host copy has no node type of
     * its own there, and writing it as either would change its meaning. */
    if (zs_schedule_has_host_copies(s))
        return zs_err_set(e, ZS_EINPUT, "--chakra",
                          "plan it without offloading (bytescale: offload=off)",
                          "Chakra traces cannot hold host copies (d2h/h2d ops)");
    if (!prefix[0] || strchr(prefix, '/'))
        return zs_err_set(e, ZS_EUSAGE, "--chakra-prefix", "give a file name prefix without '/'",
                          "bad Chakra trace prefix '%s'", prefix);
    struct stat st;
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0)
        return zs_err_set(e, ZS_EIO, dir, "check the path and its permissions",
                          "cannot create the folder (%s)", strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return zs_err_set(e, ZS_EINPUT, dir, "give a folder for --chakra", "not a folder");
    char path[4096];
    int rc = ZS_OK;
    for (int r = 0; r < s->nranks && !rc; r++)
        if (!(rc = make_path(path, sizeof path, dir, prefix, NULL, r, e)))
            rc = write_rank(s, m, r, path, e);
    if (!rc && !(rc = make_path(path, sizeof path, dir, prefix, "comm_group.json", -1, e)))
        rc = write_groups(s, path, e);
    /* files of ranks beyond this plan, from an earlier, larger export */
    for (long r = s->nranks; !rc && r < INT32_MAX; r++) {
        if (make_path(path, sizeof path, dir, prefix, NULL, r, e) || unlink(path) != 0)
            break;
    }
    return rc;
}

#else /* no protobuf-c: the same functions, saying what to install (the readers'                   \
       * in zs_chakra_load.c) */

static int missing(zs_err *e)
{
    return zs_err_set(e, ZS_EUNSUPPORTED, "Chakra traces",
                      "install the Debian packages 'protobuf-c-compiler' and 'libprotobuf-c-dev' "
                      "(scripts/setup) and rebuild",
                      "this zepsim was built without protobuf-c");
}

int zs_chakra_available(void)
{
    return 0;
}

int zs_chakra_write(const zs_schedule *s, const zs_model *m, const char *dir, const char *prefix,
                    zs_err *e)
{
    return missing(e);
}

#endif

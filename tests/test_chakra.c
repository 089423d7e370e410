/* Chakra execution traces (core/zs_chakra.h, issue 34 item 1):
 * - round trip: plans of several methods written with `zepsim plan
 *   --chakra` read back into the same schedule as their `--dump`, and
 *   `zepsim run` gives the same figures on both backends;
 * - Chakra's own format: small traces built here byte by byte from the
 *   schema (a minimal protobuf encoder below, independent of protobuf-c),
 *   shaped as Chakra's converters write them (text_converter.py: ids that
 *   go on across ranks, compute nodes with only duration_micros,
 *   collectives with int64 comm_type and comm_size; generator.py: sends
 *   and receives with int32 comm_src/comm_dst/comm_tag and uint64
 *   tensor_size, is_cpu_op), read and run as the same schedule built by
 *   hand;
 * - the attribute types our writer uses are the ones Chakra's feeder
 *   reads (decoded here from the bytes);
 * - bad traces: a clear ZS_EINPUT error (exit 2) naming the file and node.
 * Skips (77) in a build without protobuf-c. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zs_analytic.h"
#include "zs_chakra.h"
#include "zs_test.h"
#include "zs_test_env.h"
#include "zs_schedule_internal.h"

/* ---- a minimal protobuf encoder ------------------------------------------ */

typedef struct pb {
    uint8_t b[1 << 16];
    size_t n;
} pb;

static void pv(pb *o, uint64_t v)
{
    while (v >= 0x80) {
        o->b[o->n++] = (uint8_t)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    o->b[o->n++] = (uint8_t)v;
}
static void f_var(pb *o, int field, uint64_t v)
{
    pv(o, (uint64_t)field << 3);
    pv(o, v);
}
static void f_bytes(pb *o, int field, const void *p, size_t n)
{
    pv(o, ((uint64_t)field << 3) | 2);
    pv(o, n);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void f_str(pb *o, int field, const char *s)
{
    f_bytes(o, field, s, strlen(s));
}
/* An AttributeProto: name, then the value in field `vf` as a varint
 * (int32 7, int64 9, uint64 13, bool 27) or a string (29). */
static void attr_var(pb *o, const char *name, int vf, int64_t v)
{
    pb a = {.n = 0};
    f_str(&a, 1, name);
    f_var(&a, vf, (uint64_t)v); /* negative int32/int64: ten bytes, as protobuf writes them */
    f_bytes(o, 10, a.b, a.n);
}
static void attr_str(pb *o, int field, const char *name, const char *v)
{
    pb a = {.n = 0};
    f_str(&a, 1, name);
    f_str(&a, 29, v);
    f_bytes(o, field, a.b, a.n);
}
/* A node: id, name, type, packed data_deps (proto3's default). */
static void node(pb *o, uint64_t id, const char *name, int type, const uint64_t *deps, int nd)
{
    f_var(o, 1, id);
    f_str(o, 2, name);
    f_var(o, 3, (uint64_t)type);
    if (nd) {
        pb d = {.n = 0};
        for (int i = 0; i < nd; i++)
            pv(&d, deps[i]);
        f_bytes(o, 5, d.b, d.n);
    }
}
/* The message m, length-prefixed, onto file f. */
static void msg(pb *f, const pb *m)
{
    pv(f, m->n);
    memcpy(f->b + f->n, m->b, m->n);
    f->n += m->n;
}
static void meta(pb *f, const char *version)
{
    pb m = {.n = 0};
    if (version)
        f_str(&m, 1, version);
    attr_str(&m, 2, "schema", "1.0.2-chakra.0.0.4");
    msg(f, &m);
}

static const char *save(const char *name, const pb *f)
{
    static char path[8][512];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, 512, "%s/%s", zs_test_tmpdir(), name);
    FILE *o = fopen(p, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    fwrite(f->b, 1, f->n, o);
    fclose(o);
    return p;
}

static pb F[4], M; /* files being built, a message being built */

/* The first difference between two schedules ("" when the same): every
 * field a backend or the validator reads; attention blocks by content
 * and transfers' carry lists (the pools are laid out differently), groups
 * by ranks and tag. */
static const char *diff(const zs_schedule *a, const zs_schedule *b)
{
    static char why[256];
#define D(cond, ...)                                                                               \
    do {                                                                                           \
        if (cond) {                                                                                \
            snprintf(why, sizeof why, __VA_ARGS__);                                                \
            return why;                                                                            \
        }                                                                                          \
    } while (0)
    D(a->nranks != b->nranks, "nranks %d %d", a->nranks, b->nranks);
    D(strcmp(a->method, b->method) || strcmp(a->model, b->model) ||
          strcmp(a->cluster, b->cluster) || strcmp(a->cost_desc, b->cost_desc),
      "provenance");
    D(memcmp(&a->dims, &b->dims, sizeof a->dims) || a->layers != b->layers ||
          a->heads != b->heads || a->micro_batches != b->micro_batches,
      "shape");
    D(a->nstreams != b->nstreams, "streams");
    for (int i = 0; i < a->nstreams; i++)
        D(strcmp(a->stream_names[i], b->stream_names[i]), "stream %d", i);
    D(a->nlabels != b->nlabels, "labels %d %d", a->nlabels, b->nlabels);
    for (int i = 0; i < a->nlabels; i++)
        D(strcmp(a->labels[i], b->labels[i]), "label %d", i);
    D(a->ndocs != b->ndocs ||
          (a->ndocs && memcmp(a->doc_len, b->doc_len, sizeof(int32_t) * (size_t)a->ndocs)),
      "docs");
    D(a->npieces != b->npieces, "pieces");
    for (int64_t i = 0; i < a->npieces; i++) {
        const zs_piece *x = &a->pieces[i], *y = &b->pieces[i];
        D(x->doc != y->doc || x->t0 != y->t0 || x->t1 != y->t1 || x->rank != y->rank ||
              x->layout != y->layout || x->micro != y->micro,
          "piece %lld", (long long)i);
    }
    for (int r = 0; r < a->nranks; r++) {
        const zs_rank_prog *p = &a->ranks[r], *q = &b->ranks[r];
        D(p->nsegs != q->nsegs || memcmp(p->segs, q->segs, sizeof(zs_segment) * (size_t)p->nsegs),
          "rank %d segments", r);
        D(p->nops != q->nops, "rank %d: %lld ops, %lld", r, (long long)p->nops, (long long)q->nops);
        for (int64_t i = 0; i < p->nops; i++) {
            const zs_op *x = &p->ops[i], *y = &q->ops[i];
            D(x->kind != y->kind || x->stream != y->stream || x->label != y->label ||
                  x->flags != y->flags || x->ndeps != y->ndeps || x->duration != y->duration,
              "rank %d op %lld", r, (long long)i);
            for (int k = 0; k < x->ndeps; k++)
                D(p->deps[x->dep0 + k] != q->deps[y->dep0 + k], "rank %d op %lld deps", r,
                  (long long)i);
            if (x->kind == ZS_OP_COMPUTE) {
                D(x->u.compute.ck != y->u.compute.ck || x->u.compute.m != y->u.compute.m ||
                      x->u.compute.n != y->u.compute.n || x->u.compute.k != y->u.compute.k ||
                      x->u.compute.bytes != y->u.compute.bytes ||
                      x->u.compute.heads != y->u.compute.heads ||
                      x->u.compute.nblocks != y->u.compute.nblocks,
                  "rank %d op %lld compute", r, (long long)i);
                D(x->u.compute.nblocks &&
                      memcmp(a->blocks + x->u.compute.block0, b->blocks + y->u.compute.block0,
                             sizeof(zs_attn_block) * (size_t)x->u.compute.nblocks),
                  "rank %d op %lld blocks", r, (long long)i);
            } else if (x->kind == ZS_OP_SEND || x->kind == ZS_OP_RECV) {
                D(x->u.p2p.peer != y->u.p2p.peer || x->u.p2p.tag != y->u.p2p.tag ||
                      x->u.p2p.bytes != y->u.p2p.bytes || x->u.p2p.ncarry != y->u.p2p.ncarry,
                  "rank %d op %lld p2p", r, (long long)i);
                for (int k = 0; k < x->u.p2p.ncarry; k++) {
                    const zs_carry *c = &a->carry[x->u.p2p.carry0 + k],
                                   *d = &b->carry[y->u.p2p.carry0 + k];
                    D(c->doc != d->doc || c->bytes != d->bytes, "rank %d op %lld carry %d", r,
                      (long long)i, k);
                }
            } else if (x->kind == ZS_OP_COLL) {
                const zs_group *g = &a->groups[x->u.coll.group], *h = &b->groups[y->u.coll.group];
                D(x->u.coll.ck != y->u.coll.ck || x->u.coll.bytes != y->u.coll.bytes ||
                      g->n != h->n || g->tag != h->tag ||
                      memcmp(g->ranks, h->ranks, sizeof(int32_t) * (size_t)g->n),
                  "rank %d op %lld collective", r, (long long)i);
            } else {
                D(x->u.marker.mk != y->u.marker.mk || x->u.marker.value != y->u.marker.value,
                  "rank %d op %lld marker", r, (long long)i);
            }
        }
    }
#undef D
    return "";
}

static double analytic(const zs_schedule *s)
{
    static zs_test_env v;
    static int init;
    if (!init) {
        zs_test_env_init(&v, "llama-7b", 2, NULL);
        init = 1;
    }
    zs_err e;
    zs_result *r = NULL;
    ZS_ASSERT_OK(zs_analytic_run(s, v.cost, NULL, &r, &e), &e);
    double t = r->iter_time;
    zs_result_free(r);
    return t;
}

static zs_schedule *load(const char *base)
{
    zs_err e;
    zs_schedule *s = NULL;
    int rc = zs_chakra_load(base, &s, &e);
    if (rc)
        zs_err_print(stderr, &e);
    ZS_ASSERT_INT_EQ(rc, 0);
    return s;
}

/* ---- Chakra's own traces ---------------------------------------------------- */

/* text_converter.py's DATA parallelism on 2 NPUs, 2 layers, one pass:
 * forward, then per layer backward weight gradient + all-reduce, input
 * gradient; node ids go on across the files (its counter is global). */
static void test_text_converter(void)
{
    const char *path[2];
    for (int r = 0; r < 2; r++) {
        uint64_t id = r ? 7 : 0, d[1];
        F[r].n = 0;
        meta(&F[r], NULL);
        static const struct {
            const char *name;
            int type, dur, dep; /* dep: -1 none, else the offset of its parent */
        } n[] = {{"COMP_NODE_l0_FWD", 4, 100, -1},        {"COMP_NODE_l1_FWD", 4, 200, 0},
                 {"COMP_NODE_l1_BWD_WG", 4, 300, 1},      {"COMM_COLL_NODE_l1_ALLREDUCE", 7, 0, 2},
                 {"COMP_NODE_l1_BWD_IG", 4, 50, 2},       {"COMP_NODE_l0_BWD_WG", 4, 300, 4},
                 {"COMM_COLL_NODE_l0_ALLREDUCE", 7, 0, 5}};
        for (int i = 0; i < 7; i++) {
            M.n = 0;
            d[0] = id + (uint64_t)n[i].dep;
            node(&M, id + (uint64_t)i, n[i].name, n[i].type, d, n[i].dep >= 0);
            if (n[i].type == 4)
                f_var(&M, 7, (uint64_t)n[i].dur);
            else
                attr_var(&M, "comm_type", 9, 0), attr_var(&M, "comm_size", 9, 1 << 20);
            msg(&F[r], &M);
        }
        char name[32];
        snprintf(name, sizeof name, "text.%d.et", r);
        path[r] = save(name, &F[r]);
    }
    (void)path;
    char base[512];
    snprintf(base, sizeof base, "%s/text", zs_test_tmpdir());
    zs_schedule *s = load(base);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    /* the same schedule by hand */
    zs_schedule *h = zs_schedule_new(2);
    int world = zs_schedule_group(h, (int[]){0, 1}, 2);
    for (int r = 0; r < 2; r++) {
        int64_t a = zs_sched_elementwise(h, r, 0, "COMP_NODE_l0_FWD", 0, 100e-6, NULL, 0);
        int64_t b = zs_sched_elementwise(h, r, 0, "COMP_NODE_l1_FWD", 0, 200e-6, &a, 1);
        int64_t c = zs_sched_elementwise(h, r, 0, "COMP_NODE_l1_BWD_WG", 0, 300e-6, &b, 1);
        zs_sched_coll(h, r, 1, "COMM_COLL_NODE_l1_ALLREDUCE", world, ZS_COLL_ALLREDUCE, 1 << 20, &c,
                      1);
        int64_t d = zs_sched_elementwise(h, r, 0, "COMP_NODE_l1_BWD_IG", 0, 50e-6, &c, 1);
        int64_t f = zs_sched_elementwise(h, r, 0, "COMP_NODE_l0_BWD_WG", 0, 300e-6, &d, 1);
        zs_sched_coll(h, r, 1, "COMM_COLL_NODE_l0_ALLREDUCE", world, ZS_COLL_ALLREDUCE, 1 << 20, &f,
                      1);
    }
    snprintf(h->method, sizeof h->method, "chakra");
    snprintf(h->cost_desc, sizeof h->cost_desc, "durations from the Chakra trace");
    h->dims = (zs_layout_dims){1, 1, 1, 2};
    h->layers = h->heads = h->micro_batches = 1;
    ZS_ASSERT_STR_EQ(diff(s, h), "");
    ZS_ASSERT_NEAR(analytic(s), analytic(h), 0);
    CU_ASSERT(analytic(s) > 950e-6);
    zs_schedule_free(s);
    zs_schedule_free(h);
}

/* generator.py's nodes: sends and receives with int32 comm_src, comm_dst,
 * comm_tag and uint64 tensor_size, is_cpu_op; here on 2 ranks with a
 * dependency that points forward in the file and one through a METADATA
 * node, which passes it on. */
static void test_generator_p2p(void)
{
    uint64_t d3 = 3, d1 = 1, d0 = 0;
    F[0].n = F[1].n = 0;
    meta(&F[0], "1.0.0");
    M.n = 0; /* node 7: send to rank 1, after node 3 (later in the file) */
    node(&M, 7, "COMM_SEND_NODE", 5, &d3, 1);
    attr_var(&M, "is_cpu_op", 27, 0);
    attr_var(&M, "tensor_size", 13, 65536);
    attr_var(&M, "comm_src", 7, 0);
    attr_var(&M, "comm_dst", 7, 1);
    attr_var(&M, "comm_tag", 7, 5);
    msg(&F[0], &M);
    M.n = 0;
    node(&M, 3, "METADATA_NODE", 1, &d1, 1);
    msg(&F[0], &M);
    M.n = 0;
    node(&M, 1, "COMP_NODE", 4, NULL, 0);
    attr_var(&M, "is_cpu_op", 27, 0);
    f_var(&M, 7, 10);
    msg(&F[0], &M);
    M.n = 0;
    node(&M, 9, "CPU_NODE", 4, NULL, 0);
    attr_var(&M, "is_cpu_op", 27, 1);
    f_var(&M, 7, 4);
    msg(&F[0], &M);
    meta(&F[1], "1.0.0");
    M.n = 0;
    node(&M, 0, "COMM_RECV_NODE", 6, NULL, 0);
    attr_var(&M, "tensor_size", 13, 65536);
    attr_var(&M, "comm_src", 7, 0);
    attr_var(&M, "comm_dst", 7, 1);
    attr_var(&M, "comm_tag", 7, 5);
    msg(&F[1], &M);
    M.n = 0;
    node(&M, 1, "COMP_NODE", 4, &d0, 1);
    f_var(&M, 7, 5);
    msg(&F[1], &M);
    const char *paths[2] = {save("gen.0.et", &F[0]), save("gen.1.et", &F[1])};
    zs_err e;
    zs_schedule *s = NULL;
    ZS_ASSERT_OK(zs_chakra_load_files(paths, 2, NULL, &s, &e), &e);
    zs_schedule *h = zs_schedule_new(2);
    ZS_ASSERT_INT_EQ(zs_schedule_add_stream(h, "cpu"), 2);
    zs_schedule_label(h, "COMM_SEND_NODE");
    zs_schedule_label(h, "METADATA_NODE");
    int64_t c = zs_sched_elementwise(h, 0, 0, "COMP_NODE", 0, 10e-6, NULL, 0);
    zs_sched_send(h, 0, 1, "COMM_SEND_NODE", 1, 5, 65536, &c, 1);
    zs_sched_elementwise(h, 0, 2, "CPU_NODE", 0, 4e-6, NULL, 0);
    int64_t r = zs_sched_recv(h, 1, 1, "COMM_RECV_NODE", 0, 5, 65536, NULL, 0);
    zs_sched_elementwise(h, 1, 0, "COMP_NODE", 0, 5e-6, &r, 1);
    snprintf(h->method, sizeof h->method, "chakra");
    snprintf(h->cost_desc, sizeof h->cost_desc, "durations from the Chakra trace");
    h->dims = (zs_layout_dims){1, 1, 1, 2};
    h->layers = h->heads = h->micro_batches = 1;
    ZS_ASSERT_STR_EQ(diff(s, h), "");
    ZS_ASSERT_NEAR(analytic(s), analytic(h), 0);
    CU_ASSERT(analytic(s) > 15e-6);
    zs_schedule_free(s);
    zs_schedule_free(h);
}

/* Communicators: pg_name in PREFIX.comm_group.json (ASTRA-sim's file), or
 * pg_ranks on the node; "" and "0" are every rank. */
static void test_comm_groups(void)
{
    for (int r = 0; r < 4; r++) {
        char name[32], pg[8];
        F[r].n = 0;
        meta(&F[r], "1.0.0");
        M.n = 0;
        node(&M, 0, "AG", 7, NULL, 0);
        attr_var(&M, "comm_type", 9, 2); /* ALL_GATHER */
        attr_var(&M, "comm_size", 9, 4096);
        snprintf(pg, sizeof pg, "%d", r / 2 + 1);
        attr_str(&M, 10, "pg_name", pg);
        msg(&F[r], &M);
        M.n = 0;
        node(&M, 1, "AR", 7, (uint64_t[]){0}, 1);
        attr_var(&M, "comm_size", 9, 8192); /* comm_type absent: ALL_REDUCE (0) */
        msg(&F[r], &M);
        M.n = 0;
        node(&M, 2, "RS", 7, (uint64_t[]){1}, 1);
        attr_var(&M, "comm_type", 9, 7);
        attr_var(&M, "comm_size", 9, 100);
        snprintf(pg, sizeof pg, "p%d", r / 2);
        attr_str(&M, 10, "pg_name", pg);
        pb l = {.n = 0}, v = {.n = 0}, at = {.n = 0};
        pv(&l, (uint64_t)(r ^ 1)), pv(&l, (uint64_t)r);
        f_bytes(&v, 1, l.b, l.n); /* Int32List.values, packed */
        f_str(&at, 1, "pg_ranks");
        f_bytes(&at, 8, v.b, v.n);
        f_bytes(&M, 10, at.b, at.n);
        msg(&F[r], &M);
        snprintf(name, sizeof name, "pg.%d.et", r);
        save(name, &F[r]);
    }
    char base[512];
    snprintf(base, sizeof base, "%s/pg", zs_test_tmpdir());
    zs_err e;
    zs_schedule *s = NULL;
    /* without the group file, communicator "1" has no ranks */
    char groups[600];
    snprintf(groups, sizeof groups, "%s.comm_group.json", base);
    unlink(groups);
    ZS_ASSERT_INT_EQ(zs_chakra_load(base, &s, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "communicator '1' (pg_name) has no ranks");
    ZS_ASSERT_STR_CONTAINS(e.where, "pg.0.et: node 0 ('AG')");
    zs_test_write("pg.comm_group.json", "{\"1\": [1, 0], \"2\": [2, 3], \"9\": [0]}");
    s = load(base);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    for (int r = 0; r < 4; r++) {
        const zs_op *ag = zs_schedule_op(s, r, 0), *ar = zs_schedule_op(s, r, 1),
                    *rs = zs_schedule_op(s, r, 2);
        const zs_group *g = &s->groups[ag->u.coll.group];
        ZS_ASSERT_INT_EQ(ag->u.coll.ck, ZS_COLL_ALLGATHER);
        ZS_ASSERT_INT_EQ(g->n, 2);
        ZS_ASSERT_INT_EQ(g->ranks[0], r / 2 * 2);
        ZS_ASSERT_INT_EQ(s->groups[ar->u.coll.group].n, 4);
        ZS_ASSERT_INT_EQ(ar->u.coll.ck, ZS_COLL_ALLREDUCE);
        ZS_ASSERT_INT_EQ(ar->u.coll.bytes, 8192);
        ZS_ASSERT_INT_EQ(rs->u.coll.ck, ZS_COLL_REDUCESCATTER);
        ZS_ASSERT_INT_EQ(s->groups[rs->u.coll.group].n, 2);
    }
    CU_ASSERT(analytic(s) > 0);
    zs_schedule_free(s);
}

/* ---- bad traces ------------------------------------------------------------- */

/* A one-node trace of one rank: node 5 "x" of the type, with an attribute. */
static void one(int type, const char *attr, int vf, int64_t v, const uint64_t *deps, int nd)
{
    F[0].n = 0;
    meta(&F[0], "1.0.0");
    M.n = 0;
    node(&M, 5, "x", type, deps, nd);
    if (attr)
        attr_var(&M, attr, vf, v);
    msg(&F[0], &M);
}

static void bad_truncated(void)
{
    one(4, NULL, 0, 0, NULL, 0);
    F[0].b[F[0].n++] = 0x80; /* a length whose varint never ends */
}
static void bad_beyond(void)
{
    one(4, NULL, 0, 0, NULL, 0);
    F[0].b[F[0].n++] = 40;
    F[0].b[F[0].n++] = 0x08;
}
static void bad_type(void)
{
    one(12, NULL, 0, 0, NULL, 0);
}
static void bad_peer(void)
{
    one(5, "tensor_size", 13, 64, NULL, 0);
}
static void bad_missing(void)
{
    one(4, NULL, 0, 0, (uint64_t[]){42}, 1);
}
static void bad_cycle(void)
{
    F[0].n = 0;
    meta(&F[0], "1.0.0");
    for (uint64_t i = 0; i < 3; i++) {
        M.n = 0;
        uint64_t d = (i + 2) % 3; /* 0 <- 2 <- 1 <- 0 */
        node(&M, 10 + i, i == 1 ? "y" : "x", 4, (uint64_t[]){10 + d}, 1);
        msg(&F[0], &M);
    }
}
static void bad_dup(void)
{
    one(4, NULL, 0, 0, NULL, 0);
    msg(&F[0], &M);
}
static void bad_coll(void)
{
    one(7, "comm_type", 9, 5, NULL, 0); /* BROADCAST */
}
static void bad_mem(void)
{
    one(2, "tensor_size", 13, 64, NULL, 0);
}
static void bad_gzip(void)
{
    F[0].n = 0;
    memcpy(F[0].b, "\x1f\x8b\x08\x00", 4);
    F[0].n = 4;
}
static void bad_proto(void)
{
    one(4, NULL, 0, 0, NULL, 0);
    F[0].b[F[0].n++] = 2;
    F[0].b[F[0].n++] = 0x0f; /* field 1, wire type 7: not protobuf */
    F[0].b[F[0].n++] = 0x00;
}
static void bad_empty(void)
{
    F[0].n = 0;
}
static void bad_self(void)
{
    one(5, "comm_dst", 7, 0, NULL, 0);
}
static void bad_time(void)
{
    one(4, NULL, 0, 0, NULL, 0);
    F[0].n = 0;
    meta(&F[0], "1.0.0");
    f_var(&M, 7, (uint64_t)1 << 62); /* duration_micros: 146 millennia */
    msg(&F[0], &M);
}

static void test_bad_traces(void)
{
    static const struct {
        const char *name;
        void (*make)(void);
        const char *what, *where;
    } cases[] = {
        {"truncated", bad_truncated, "truncated varint", ""},
        {"beyond", bad_beyond, "beyond the end of the file", ""},
        {"type", bad_type, "unknown node type 12", "node 5 ('x')"},
        {"peer", bad_peer, "missing peer: a send without comm_dst", "node 5 ('x')"},
        {"missing", bad_missing, "depends on node 42, which is not in the file", "node 5 ('x')"},
        {"cycle", bad_cycle, "a dependency cycle goes through this node", "node 1"},
        {"dup", bad_dup, "a second node with id 5", "node 5 ('x')"},
        {"coll", bad_coll, "collective comm_type 5 is not supported", "node 5 ('x')"},
        {"mem", bad_mem, "remote memory nodes", "node 5 ('x')"},
        {"gzip", bad_gzip, "gzip-compressed", ""},
        {"proto", bad_proto, "not a Chakra Node (protobuf decoding failed)", ""},
        {"empty", bad_empty, "an empty file", ""},
        {"self", bad_self, "must have comm_src 0 and another peer", "node 5 ('x')"},
        {"time", bad_time, "more than 1e+06 s", "node 5 ('x')"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "bad_%s.0.et", cases[i].name);
        cases[i].make();
        const char *path = save(name, &F[0]);
        zs_err e;
        zs_err_clear(&e);
        zs_schedule *s = NULL;
        int rc = zs_chakra_load_files(&path, 1, NULL, &s, &e);
        if (rc != ZS_EINPUT)
            fprintf(stderr, "case %s: rc %d\n", cases[i].name, rc);
        ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
        ZS_ASSERT_INT_EQ(zs_err_exit_code(rc), 2);
        CU_ASSERT_PTR_NULL(s);
        ZS_ASSERT_STR_CONTAINS(e.what, cases[i].what);
        ZS_ASSERT_STR_CONTAINS(e.where, path);
        ZS_ASSERT_STR_CONTAINS(e.where, cases[i].where);
        CU_ASSERT(e.fix[0] != 0);
    }
    /* a send whose carry list is one number, not a list, and lacks its bytes */
    const char *two[2];
    for (int r = 0; r < 2; r++) {
        F[r].n = 0;
        meta(&F[r], "1.0.0");
        M.n = 0;
        node(&M, 5, "x", r ? 6 : 5, NULL, 0);
        attr_var(&M, r ? "comm_src" : "comm_dst", 7, 1 - r);
        if (!r)
            attr_var(&M, "zs_carry_docs", 7, 0);
        msg(&F[r], &M);
        two[r] = save(r ? "bad_carry.1.et" : "bad_carry.0.et", &F[r]);
    }
    zs_err e;
    zs_err_clear(&e);
    zs_schedule *s = NULL;
    ZS_ASSERT_INT_EQ(zs_chakra_load_files(two, 2, NULL, &s, &e), ZS_EINPUT);
    CU_ASSERT_PTR_NULL(s);
    ZS_ASSERT_STR_CONTAINS(e.what, "zs_carry_docs and zs_carry_bytes: not a carry list");
    ZS_ASSERT_STR_CONTAINS(e.where, "bad_carry.0.et: node 5 ('x')");
    /* the command line: exit 2, the file and the node named */
    bad_cycle();
    save("cli.0.et", &F[0]);
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "%s run --chakra %s/cli", zs_test_zepsim(), zs_test_tmpdir());
    ZS_ASSERT_INT_EQ(zs_test_run(cmd, out, sizeof out), 2);
    ZS_ASSERT_STR_CONTAINS(out, "a dependency cycle goes through this node");
    ZS_ASSERT_STR_CONTAINS(out, "cli.0.et: node 1");
}

/* ---- round trip ------------------------------------------------------------- */

/* out without its line that names the input ("plan": ...) and without
 * what a sanitizer build adds (AddressSanitizer's note on SimGrid's stack
 * switches, which names a pid). */
static void drop_plan(char *out)
{
    char *w = out;
    for (char *l = out; *l;) {
        char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l + 1) : strlen(l);
        if (strncmp(l, " \"plan\":", 8) != 0 && strncmp(l, "==", 2) != 0 &&
            strncmp(l, "False positive error reports", 28) != 0 &&
            strncmp(l, "For details see https://github.com/google/sanitizers", 52) != 0)
            memmove(w, l, n), w += n;
        l += n;
    }
    *w = 0;
}

/* zepsim run of the dump and of the traces: the same output (standard
 * output only: a sanitizer build's notes on standard error name pids). */
static void same_run(const char *dump, const char *dir, const char *backend)
{
    char cmd[2048], fa[600], fb[600];
    snprintf(fa, sizeof fa, "%s/run_dump.json", zs_test_tmpdir());
    snprintf(fb, sizeof fb, "%s/run_chakra.json", zs_test_tmpdir());
    /* zs_test_run adds 2>&1 to the command: here to the last one, the status */
    snprintf(
        cmd, sizeof cmd,
        "%s run --quiet --backend %s --format json --ranks %s >%s 2>/dev/null; st=$?; (exit $st)",
        zs_test_zepsim(), backend, dump, fa);
    ZS_ASSERT_INT_EQ(zs_test_run(cmd, NULL, 0), 0);
    snprintf(cmd, sizeof cmd,
             "%s run --quiet --backend %s --format json --ranks --chakra %s >%s 2>/dev/null; "
             "st=$?; (exit $st)",
             zs_test_zepsim(), backend, dir, fb);
    ZS_ASSERT_INT_EQ(zs_test_run(cmd, NULL, 0), 0);
    char *a = zs_test_slurp(fa), *b = zs_test_slurp(fb);
    CU_ASSERT_FATAL(a && b);
    drop_plan(a);
    drop_plan(b);
    ZS_ASSERT_STR_CONTAINS(a, "\"iter_ms\"");
    ZS_ASSERT_STR_EQ(a, b);
    free(a);
    free(b);
}

static void test_round_trip(void)
{
    static const struct {
        const char *method, *opt;
        int sim;
    } m[] = {{"usp", "", 1},
             {"te-cp", "", 0},
             {"zeppelin", "", 1},
             {"hybrid-dp", "", 0},
             {"plain-4d", "--opt tp=2,cp=2,pp=2", 1},
             {"llama-cp", "", 0}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        char cmd[2048], out[4096], dump[512], dir[512], base[600];
        snprintf(dump, sizeof dump, "%s/%s.json", zs_test_tmpdir(), m[i].method);
        snprintf(dir, sizeof dir, "%s/%s_et", zs_test_tmpdir(), m[i].method);
        snprintf(cmd, sizeof cmd,
                 "%s plan --method %s %s --nodes 2 --group 8 --context 16384 --dump %s "
                 "--chakra %s --chakra-prefix p",
                 zs_test_zepsim(), m[i].method, m[i].opt, dump, dir);
        int rc = zs_test_run(cmd, out, sizeof out);
        if (rc)
            fprintf(stderr, "%s\n%s\n", cmd, out);
        ZS_ASSERT_INT_EQ(rc, 0);
        ZS_ASSERT_STR_CONTAINS(out, "Chakra traces written to");
        if (i == 0) { /* ASTRA-sim's inputs for the 2 nodes of 8 GPUs of cluster-a */
            char f[700];
            snprintf(f, sizeof f, "%s/p.network.yml", dir);
            char *net = zs_test_slurp(f);
            ZS_ASSERT_STR_CONTAINS(net, "topology: [ Switch, Switch ]\nnpus_count: [ 8, 2 ]\n"
                                        "bandwidth: [ 200, 12.5 ]  # GB/s\n");
            free(net);
            snprintf(f, sizeof f, "%s/p.system.json", dir);
            char *sys = zs_test_slurp(f);
            ZS_ASSERT_STR_CONTAINS(sys, "\"roofline-enabled\": 0");
            free(sys);
        }
        zs_err e;
        zs_schedule *s = NULL;
        ZS_ASSERT_OK(zs_schedule_load_file(dump, &s, &e), &e);
        snprintf(base, sizeof base, "%s/p", dir);
        zs_schedule *c = load(base);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        const char *d = diff(s, c);
        if (*d)
            fprintf(stderr, "%s: %s\n", m[i].method, d);
        ZS_ASSERT_STR_EQ(d, "");
        ZS_ASSERT_NEAR(analytic(c), analytic(s), 0);
        zs_schedule_free(s);
        zs_schedule_free(c);
        same_run(dump, dir, "analytic");
        if (m[i].sim)
            same_run(dump, dir, "sim");
    }
}

/* ---- the writer --------------------------------------------------------------- */

static uint64_t rv(const uint8_t *p, size_t *i)
{
    uint64_t v = 0;
    for (int s = 0; s < 64; s += 7) {
        uint8_t b = p[(*i)++];
        v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80))
            break;
    }
    return v;
}

/* "name=field;" for every attribute of every node of a file (decoded here
 * from the bytes, not by protobuf-c), into out. */
static void attr_fields(const char *path, char *out, size_t n)
{
    char *text = zs_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    struct stat st;
    stat(path, &st);
    const uint8_t *p = (const uint8_t *)text;
    size_t i = 0, end = (size_t)st.st_size, o = 0;
    out[0] = 0;
    for (int msgno = 0; i < end; msgno++) {
        size_t len = (size_t)rv(p, &i), stop = i + len;
        while (msgno > 0 && i < stop) {
            uint64_t key = rv(p, &i);
            int field = (int)(key >> 3), wt = (int)(key & 7);
            if (wt == 0) {
                rv(p, &i);
                continue;
            }
            size_t l = wt == 2 ? (size_t)rv(p, &i) : wt == 1 ? 8 : 4, q = i, qe = i + l;
            i += l;
            if (field != 10)
                continue;
            char name[64] = "";
            int vf = 0;
            while (q < qe) {
                uint64_t k = rv(p, &q);
                int f = (int)(k >> 3), w = (int)(k & 7);
                size_t ll = w == 0 ? 0 : w == 2 ? (size_t)rv(p, &q) : w == 1 ? 8 : 4;
                if (w == 0)
                    rv(p, &q);
                if (f == 1)
                    snprintf(name, sizeof name, "%.*s", (int)ll, (const char *)p + q);
                else
                    vf = f;
                q += ll;
            }
            char item[96];
            snprintf(item, sizeof item, "%s=%d;", name, vf);
            if (!strstr(out, item) && o + strlen(item) < n)
                o += (size_t)snprintf(out + o, n - o, "%s", item);
        }
        i = stop;
    }
    free(text);
}

/* A small schedule with every op kind, flags, markers and a repeated
 * segment; attention blocks shared by two ops. */
static zs_schedule *small_schedule(int nranks)
{
    zs_schedule *s = zs_schedule_new(nranks);
    snprintf(s->method, sizeof s->method, "hand");
    snprintf(s->model, sizeof s->model, "llama-7b");
    snprintf(s->cluster, sizeof s->cluster, "cluster-a");
    s->layers = 4, s->heads = 32, s->micro_batches = 1;
    s->dims = (zs_layout_dims){1, nranks, 1, 1};
    zs_schedule_set_docs(s, (int32_t[]){64}, 1);
    int all[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int g = zs_schedule_group_tagged(s, all, nranks, 3);
    zs_attn_block blk[2] = {{0, 0, 32, 0, 32}, {0, 32, 64, 0, 64}};
    for (int r = 0; r < nranks; r++) {
        zs_schedule_add_piece(s, 0, 0, 64, r, ZS_LAYOUT_ATTN, 0);
        zs_sched_marker(s, r, ZS_MARK_PHASE, ZS_PHASE_FORWARD);
        zs_schedule_begin_segment(s, r, 4);
        int64_t m = zs_sched_marker(s, r, ZS_MARK_LAYER, 0);
        int64_t a = zs_sched_gemm(s, r, 0, "qkv", 64, 4096, 4096, 1e-4, &m, 1);
        int64_t f = zs_sched_attn(s, r, 0, "attn", 0, blk, 2, 32, 2e-4, &a, 1);
        int64_t x = zs_sched_send(s, r, 1, "ring", (r + 1) % nranks, 7, 1e6, &f, 1);
        int64_t y = zs_sched_recv(s, r, 1, "ring", (r + nranks - 1) % nranks, 7, 1e6, &a, 1);
        int64_t dd[2] = {x, y};
        zs_sched_elementwise(s, r, 0, "norm", 3.5e5, 3e-5, dd, 2);
        zs_schedule_begin_segment(s, r, 1);
        int64_t b = zs__sched_attn_ref(s, r, 0, "attn", 1, s->ranks[r].ops[f].u.compute.block0, 2,
                                       32, 5e-4, NULL, 0);
        zs_schedule_flag_ops(s, r, b, ZS_OPF_RECOMPUTE);
        zs_sched_coll(s, r, 1, "grad", g, ZS_COLL_REDUCESCATTER, 1.5e7, &b, 1);
    }
    return s;
}

static void test_writer(void)
{
    zs_err e;
    char dir[512], base[600], path[700];
    snprintf(dir, sizeof dir, "%s/w", zs_test_tmpdir());
    snprintf(base, sizeof base, "%s/t", dir);
    zs_schedule *big = small_schedule(4), *s = small_schedule(2);
    ZS_ASSERT_OK(zs_schedule_check(s, &e), &e);
    ZS_ASSERT_OK(zs_chakra_write(big, NULL, dir, "t", &e), &e);
    snprintf(path, sizeof path, "%s.3.et", base);
    CU_ASSERT(access(path, F_OK) == 0);
    ZS_ASSERT_OK(zs_chakra_write(s, NULL, dir, "t", &e), &e);
    CU_ASSERT(access(path, F_OK) != 0); /* ranks 2 and 3 of the larger export: gone */
    snprintf(path, sizeof path, "%s.2.et", base);
    CU_ASSERT(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s.0.et", base);
    char *first = zs_test_slurp(path);
    ZS_ASSERT_OK(zs_chakra_write(s, NULL, dir, "t", &e), &e);
    char *second = zs_test_slurp(path);
    CU_ASSERT(first && second && memcmp(first, second, 64) == 0); /* deterministic */
    /* the metadata's first field: version "1.0.0" */
    size_t at = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    rv((const uint8_t *)first, &at); /* the metadata's length */
    CU_ASSERT(memcmp(first + at,
                     "\x0a\x05"
                     "1.0.0",
                     7) == 0);
    free(first);
    free(second);
    char fields[4096];
    attr_fields(path, fields, sizeof fields);
    /* the value types Chakra's feeder reads (et_feeder_node.cpp) */
    static const char *const want[] = {"is_cpu_op=27;", "num_ops=9;",   "tensor_size=13;",
                                       "comm_src=7;",   "comm_dst=7;",  "comm_tag=7;",
                                       "comm_size=9;",  "comm_type=9;", "pg_name=29;",
                                       "pg_ranks=8;",   "zs_t=3;"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ZS_ASSERT_STR_CONTAINS(fields, want[i]);
    snprintf(path, sizeof path, "%s.comm_group.json", base);
    char *groups = zs_test_slurp(path);
    ZS_ASSERT_STR_EQ(groups, "{\n  \"1\": [0, 1]\n}\n");
    free(groups);
    zs_schedule *c = load(base);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    ZS_ASSERT_STR_EQ(diff(s, c), "");
    ZS_ASSERT_NEAR(analytic(c), analytic(s), 0);
    /* a folder holding one set, a rank's file, the prefix: the same set */
    char found[700];
    ZS_ASSERT_OK(zs_chakra_find(dir, found, sizeof found, &e), &e);
    ZS_ASSERT_STR_EQ(found, base);
    snprintf(path, sizeof path, "%s.1.et", base);
    ZS_ASSERT_OK(zs_chakra_find(path, found, sizeof found, &e), &e);
    ZS_ASSERT_STR_EQ(found, base);
    ZS_ASSERT_INT_EQ(zs_chakra_find(zs_test_tmpdir(), found, sizeof found, &e), ZS_EINPUT);
    zs_schedule_free(c);
    zs_schedule_free(s);
    zs_schedule_free(big);
}

int main(int argc, char **argv)
{
    if (!zs_chakra_available()) {
        printf("skipping: this zepsim was built without protobuf-c (no Chakra traces)\n");
        return 77;
    }
    static const zs_test_case cases[] = {{"text_converter", test_text_converter},
                                         {"generator_p2p", test_generator_p2p},
                                         {"comm_groups", test_comm_groups},
                                         {"bad_traces", test_bad_traces},
                                         {"writer", test_writer},
                                         {"round_trip", test_round_trip},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"chakra", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

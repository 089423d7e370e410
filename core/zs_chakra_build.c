/* Chakra trace reader, second half: the decoded nodes of every rank
 * (zs_chakra_read.c) into a schedule. Dependencies are resolved by id
 * (a missing node is an error), the nodes put in a dependency order (file
 * order among ready nodes; a cycle is an error naming a node on it), and
 * each becomes an op on its stream. A trace zepsim wrote is rolled back
 * into its repeated segments when every iteration is the copy the writer
 * made of the first (so the schedule is the one that was written); any
 * other trace is one segment run once. */
#include <stdlib.h>
#include <string.h>

#include "zs_chakra_internal.h"
#include "zs_grow.h"
#include "zs_schedule_internal.h"

#ifdef ZS_HAVE_CHAKRA

/* One rank's build state. */
typedef struct rb {
    ck_set *set;
    ck_rank *r;
    zs_schedule *s;
    int rank;
    const int32_t *gmap; /* communicator -> group */
    int64_t *dep;        /* resolved r->deps: node indices */
    int64_t *order;      /* dependency order: position -> node */
    int64_t *opidx;      /* node -> op index (-1: passes its dependencies on) */
    int64_t *fwd0;       /* a passing node's dependencies: fwd[fwd0 .. fwd0 + nfwd) */
    int32_t *nfwd;
    int64_t *fwd, nf, fcap;
    int64_t *deps, dcap; /* one op's dependencies */
    int64_t *gblk;       /* the rank's pool start -> the schedule's, -1 not yet */
} rb;

static int nomem(rb *b)
{
    return zs_err_set(b->set->e, ZS_ENOMEM, b->r->path, NULL,
                      "out of memory reading Chakra traces");
}

/* The builder's failure at the node, as bad input. */
static int built(rb *b, const ck_node *nd)
{
    zs_err tmp;
    int rc = zs_schedule_check(b->s, &tmp);
    if (rc == ZS_ENOMEM)
        return nomem(b);
    return zs__ck_bad(b->set, b->r, nd, NULL, "%s", tmp.what);
}

static int cmp_idpos(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b; /* id, index */
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Every dependency id to the index of its node; a missing node or an id
 * used twice is an error naming the node. Returns 1 in *sorted when every
 * node depends only on nodes before it in the file. */
static int resolve(rb *b, int *sorted)
{
    ck_rank *r = b->r;
    uint64_t *m = malloc(sizeof(uint64_t) * 2 * (size_t)(r->n + 1));
    b->dep = malloc(sizeof(int64_t) * (size_t)(r->ndeps + 1));
    if (!m || !b->dep) {
        free(m);
        return nomem(b);
    }
    for (int64_t i = 0; i < r->n; i++)
        m[2 * i] = r->nodes[i].id, m[2 * i + 1] = (uint64_t)i;
    qsort(m, (size_t)r->n, 2 * sizeof(uint64_t), cmp_idpos);
    for (int64_t i = 1; i < r->n; i++)
        if (m[2 * i] == m[2 * i - 2]) {
            const ck_node *nd = &r->nodes[m[2 * i + 1]];
            free(m);
            return zs__ck_bad(b->set, r, nd, "give every node of a file its own id",
                              "a second node with id %llu", (unsigned long long)nd->id);
        }
    *sorted = 1;
    for (int64_t i = 0; i < r->n; i++) {
        const ck_node *nd = &r->nodes[i];
        for (int64_t k = nd->dep0; k < nd->dep0 + nd->ndata + nd->nctrl; k++) {
            int64_t lo = 0, hi = r->n;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (m[2 * mid] < r->deps[k])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == r->n || m[2 * lo] != r->deps[k]) {
                free(m);
                return zs__ck_bad(b->set, r, nd, "depend only on nodes of the same file",
                                  "depends on node %llu, which is not in the file",
                                  (unsigned long long)r->deps[k]);
            }
            b->dep[k] = (int64_t)m[2 * lo + 1];
            if (k < nd->dep0 + nd->ndata && b->dep[k] >= i)
                *sorted = 0;
        }
    }
    free(m);
    return ZS_OK;
}

/* A node on a dependency cycle among the nodes not yet ordered (left[v]). */
static int cycle(rb *b, const int32_t *left)
{
    int64_t v = 0;
    while (!left[v])
        v++;
    for (int64_t step = 0; step < b->r->n; step++) {
        const ck_node *nd = &b->r->nodes[v];
        for (int32_t k = 0; k < nd->ndata; k++)
            if (left[b->dep[nd->dep0 + k]]) {
                v = b->dep[nd->dep0 + k];
                break;
            }
    }
    return zs__ck_bad(b->set, b->r, &b->r->nodes[v], "remove the dependency that closes the cycle",
                      "a dependency cycle goes through this node");
}

static void heap_push(int64_t *h, int64_t *n, int64_t v)
{
    int64_t i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static int64_t heap_pop(int64_t *h, int64_t *n)
{
    int64_t top = h[0], v = h[--*n], i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* b->order: the nodes in a dependency order, the earliest in the file
 * first among those ready (Kahn's algorithm on data_deps). */
static int order(rb *b, int sorted)
{
    ck_rank *r = b->r;
    int64_t n = r->n;
    b->order = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!b->order)
        return nomem(b);
    if (sorted) {
        for (int64_t i = 0; i < n; i++)
            b->order[i] = i;
        return ZS_OK;
    }
    int32_t *left = calloc((size_t)n + 1, sizeof(int32_t)); /* data deps not yet done */
    int64_t *c0 = calloc((size_t)n + 2, sizeof(int64_t)), *ch = NULL, *h = NULL, nh = 0, done = 0;
    int64_t nd_total = 0;
    for (int64_t i = 0; i < n; i++)
        nd_total += r->nodes[i].ndata;
    ch = malloc(sizeof(int64_t) * (size_t)(nd_total + 1));
    h = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int rc = ZS_OK;
    if (!left || !c0 || !ch || !h) {
        rc = nomem(b);
        goto out;
    }
    for (int64_t i = 0; i < n; i++)
        for (int32_t k = 0; k < r->nodes[i].ndata; k++)
            c0[b->dep[r->nodes[i].dep0 + k] + 2]++, left[i]++;
    for (int64_t i = 0; i < n; i++)
        c0[i + 2] += c0[i + 1];
    for (int64_t i = 0; i < n; i++) /* children of each node, in CSR form */
        for (int32_t k = 0; k < r->nodes[i].ndata; k++)
            ch[c0[b->dep[r->nodes[i].dep0 + k] + 1]++] = i;
    for (int64_t i = 0; i < n; i++)
        if (!left[i])
            heap_push(h, &nh, i);
    while (nh) {
        int64_t v = heap_pop(h, &nh);
        b->order[done++] = v;
        for (int64_t k = c0[v]; k < c0[v + 1]; k++)
            if (--left[ch[k]] == 0)
                heap_push(h, &nh, ch[k]);
    }
    if (done < n)
        rc = cycle(b, left);
out:
    free(left);
    free(c0);
    free(ch);
    free(h);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The op's dependencies as op indices: its own dependencies, through the
 * nodes that pass theirs on, sorted and distinct, into b->deps. */
static int op_deps(rb *b, const ck_node *nd, int64_t *n)
{
    int64_t k = 0;
    for (int32_t i = 0; i < nd->nown; i++) {
        int64_t d = b->dep[nd->dep0 + i];
        int64_t m = b->opidx[d] >= 0 ? 1 : b->nfwd[d];
        if (zs_grow((void **)&b->deps, &b->dcap, k + m, sizeof(int64_t)))
            return nomem(b);
        if (b->opidx[d] >= 0)
            b->deps[k++] = b->opidx[d];
        else
            for (int32_t j = 0; j < b->nfwd[d]; j++)
                b->deps[k++] = b->fwd[b->fwd0[d] + j];
    }
    if (k) /* no NULL to qsort, even for nothing (UBSan) */
        qsort(b->deps, (size_t)k, sizeof(int64_t), cmp_i64);
    int64_t u = 0;
    for (int64_t i = 0; i < k; i++)
        if (u == 0 || b->deps[i] != b->deps[u - 1])
            b->deps[u++] = b->deps[i];
    if (u > ZS_CHAKRA_MAX_DEPS)
        return zs__ck_bad(b->set, b->r, nd, NULL, "%lld dependencies: more than the limit of %d",
                          (long long)u, ZS_CHAKRA_MAX_DEPS);
    *n = u;
    return ZS_OK;
}

static int64_t put_attn(rb *b, const ck_node *nd, const char *lab, const int64_t *deps, int nd_)
{
    zs_schedule *s = b->s;
    int bwd = nd->ck == ZS_CK_ATTN_BWD;
    if (b->gblk[nd->blk0] >= 0 && b->gblk[nd->blk0] + nd->nblk <= s->nblocks &&
        memcmp(s->blocks + b->gblk[nd->blk0], b->r->blocks + nd->blk0,
               sizeof(zs_attn_block) * (size_t)nd->nblk) == 0)
        return zs__sched_attn_ref(s, b->rank, nd->stream, lab, bwd, b->gblk[nd->blk0], nd->nblk,
                                  nd->heads, nd->t, deps, nd_);
    int64_t i = zs_sched_attn(s, b->rank, nd->stream, lab, bwd, b->r->blocks + nd->blk0, nd->nblk,
                              nd->heads, nd->t, deps, nd_);
    if (i >= 0)
        b->gblk[nd->blk0] = s->ranks[b->rank].ops[i].u.compute.block0;
    return i;
}

/* The node as an op with the given dependencies (op indices). */
static int put_op(rb *b, const ck_node *nd, const int64_t *deps, int64_t ndeps)
{
    zs_schedule *s = b->s;
    const char *lab = b->set->labels[nd->label];
    int rank = b->rank, st = nd->stream, n = (int)ndeps;
    int64_t i = -1;
    switch (nd->kind) {
    case ZS_OP_COMPUTE:
        if (nd->ck <= ZS_CK_ATTN_BWD)
            i = put_attn(b, nd, lab, deps, n);
        else if (nd->ck == ZS_CK_GEMM)
            i = zs_sched_gemm(s, rank, st, lab, nd->m, nd->n, nd->k, nd->t, deps, n);
        else
            i = zs_sched_elementwise(s, rank, st, lab, nd->bytes, nd->t, deps, n);
        break;
    case ZS_OP_SEND:
    case ZS_OP_RECV:
        i = (nd->kind == ZS_OP_SEND ? zs_sched_send : zs_sched_recv)(s, rank, st, lab, nd->peer,
                                                                     nd->tag, nd->bytes, deps, n);
        if (i >= 0 && nd->nblk > 0)
            zs_sched_set_carry(s, rank, i, zs_schedule_carry(s, b->r->carry + nd->blk0, nd->nblk),
                               nd->nblk);
        break;
    case ZS_OP_COLL: {
        int g = b->gmap[nd->pg];
        if (zs_group_index(&s->groups[g], rank) < 0)
            return zs__ck_bad(b->set, b->r, nd, "list every member in the communicator's ranks",
                              "rank %d is not a member of communicator '%s'", rank,
                              b->set->pgs[nd->pg].name);
        i = zs_sched_coll(s, rank, st, lab, g, (zs_coll_kind)nd->ck, nd->bytes, deps, n);
        break;
    }
    case ZS_OP_MARKER:
        i = zs_sched_marker(s, rank, (zs_marker_kind)nd->ck, nd->value);
        break;
    }
    if (i < 0)
        return built(b, nd);
    s->ranks[rank].ops[i].flags = nd->flags;
    return ZS_OK;
}

/* Every node in dependency order, one segment run once. */
static int put_unrolled(rb *b)
{
    ck_rank *r = b->r;
    int64_t ops = 0;
    int rc = ZS_OK;
    for (int64_t p = 0; p < r->n && !rc; p++) {
        int64_t v = b->order[p], n = 0;
        const ck_node *nd = &r->nodes[v];
        if ((rc = op_deps(b, nd, &n)))
            break;
        if (nd->kind == CK_PASS) {
            b->opidx[v] = -1;
            if (zs_grow((void **)&b->fwd, &b->fcap, b->nf + n, sizeof(int64_t)))
                return nomem(b);
            if (n)
                memcpy(b->fwd + b->nf, b->deps, sizeof(int64_t) * (size_t)n);
            b->fwd0[v] = b->nf;
            b->nfwd[v] = (int32_t)n;
            b->nf += n;
            continue;
        }
        b->opidx[v] = ops++;
        rc = put_op(b, nd, b->deps, n);
    }
    return rc;
}

/* n carry entries the same (by field: the struct has padding). */
static int same_carry(const zs_carry *a, const zs_carry *b, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (a[i].doc != b[i].doc || a[i].bytes != b[i].bytes)
            return 0;
    return 1;
}

/* Two nodes of rank r the same op, dependencies aside (a transfer's carry
 * list by content: each node read has its own copy). */
static int same_op(const ck_rank *r, const ck_node *x, const ck_node *y)
{
    int p2p = x->kind == ZS_OP_SEND || x->kind == ZS_OP_RECV;
    return x->kind == y->kind && x->ck == y->ck && x->stream == y->stream && x->flags == y->flags &&
           x->label == y->label && x->peer == y->peer && x->tag == y->tag && x->pg == y->pg &&
           x->heads == y->heads && x->value == y->value && x->nblk == y->nblk &&
           (p2p ? x->nblk == 0 || same_carry(r->carry + x->blk0, r->carry + y->blk0, x->nblk)
                : x->blk0 == y->blk0) &&
           x->t == y->t && x->bytes == y->bytes && x->m == y->m && x->n == y->n && x->k == y->k &&
           x->nown == y->nown;
}

/* The segment of node v (U: each segment's first node, nsegs + 1 entries). */
static int32_t seg_of(const int64_t *U, int32_t nsegs, int64_t v)
{
    int32_t lo = 0, hi = nsegs - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (U[mid] <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* 1 when the file (in file order) is the writer's unrolling of its
 * segments: every iteration a copy of the first, dependencies inside the
 * segment on the same iteration, outside it on an earlier segment's last
 * iteration. U[g]: segment g's first node. */
static int rolls(const rb *b, const int64_t *U)
{
    const ck_rank *r = b->r;
    const int32_t *sg = r->segs;
    int32_t ns = r->nsegs;
    for (int32_t g = 0; g < ns; g++) {
        int64_t nops = sg[2 * g], rep = sg[2 * g + 1];
        for (int64_t j = 0; j < rep; j++)
            for (int64_t i = 0; i < nops; i++) {
                const ck_node *v = &r->nodes[U[g] + j * nops + i], *w = &r->nodes[U[g] + i];
                if (v->kind == CK_PASS || !same_op(r, v, w))
                    return 0;
                for (int32_t k = 0; k < w->nown; k++) {
                    int64_t dv = b->dep[v->dep0 + k], dw = b->dep[w->dep0 + k];
                    if (dw >= U[g] && dw < U[g] + nops) {
                        if (dw >= U[g] + i || dv != dw + j * nops)
                            return 0;
                        continue;
                    }
                    int32_t h = seg_of(U, ns, dw);
                    if (dv != dw || h >= g || dw < U[h] + (int64_t)(sg[2 * h + 1] - 1) * sg[2 * h])
                        return 0;
                }
            }
    }
    return 1;
}

/* The segments back: each segment's first iteration as its ops, repeated. */
static int put_rolled(rb *b, const int64_t *U, const int64_t *Sg)
{
    const ck_rank *r = b->r;
    const int32_t *sg = r->segs;
    int64_t S = 0; /* the segment's first op */
    int rc = ZS_OK;
    for (int32_t g = 0; g < r->nsegs && !rc; g++) {
        if (zs_schedule_begin_segment(b->s, b->rank, sg[2 * g + 1]))
            return built(b, NULL);
        for (int64_t i = 0; i < sg[2 * g] && !rc; i++) {
            const ck_node *nd = &r->nodes[U[g] + i];
            if (zs_grow((void **)&b->deps, &b->dcap, nd->nown, sizeof(int64_t)))
                return nomem(b);
            for (int32_t k = 0; k < nd->nown; k++) {
                int64_t d = b->dep[nd->dep0 + k];
                int32_t h = seg_of(U, r->nsegs, d);
                b->deps[k] = h == g ? S + (d - U[g])
                                    : Sg[h] + (d - U[h] - (int64_t)(sg[2 * h + 1] - 1) * sg[2 * h]);
            }
            rc = put_op(b, nd, b->deps, nd->nown);
        }
        S += sg[2 * g];
    }
    return rc;
}

/* Where each segment starts among the nodes (U) and the ops (S); 1 when
 * the segments account for exactly the file's nodes. */
static int seg_starts(const ck_rank *r, int64_t *U, int64_t *S)
{
    int64_t u = 0, o = 0;
    for (int32_t g = 0; g < r->nsegs; g++) {
        U[g] = u, S[g] = o;
        if (r->segs[2 * g + 1] < 1 || (int64_t)r->segs[2 * g] * r->segs[2 * g + 1] > r->n - u)
            return 0;
        u += (int64_t)r->segs[2 * g] * r->segs[2 * g + 1];
        o += r->segs[2 * g];
    }
    U[r->nsegs] = u, S[r->nsegs] = o;
    return u == r->n;
}

static int build_rank(ck_set *set, zs_schedule *s, int rank, const int32_t *gmap)
{
    ck_rank *r = &set->ranks[rank];
    rb b;
    memset(&b, 0, sizeof b);
    b.set = set, b.r = r, b.s = s, b.rank = rank, b.gmap = gmap;
    for (int64_t i = 0; i < r->nblocks; i++)
        if (r->blocks[i].doc >= s->ndocs)
            return zs__ck_bad(set, r, NULL, NULL, "zs_blocks: block %lld of document %d of %d",
                              (long long)i, r->blocks[i].doc, s->ndocs);
    b.opidx = malloc(sizeof(int64_t) * (size_t)(r->n + 1));
    b.fwd0 = malloc(sizeof(int64_t) * (size_t)(r->n + 1));
    b.nfwd = malloc(sizeof(int32_t) * (size_t)(r->n + 1));
    b.gblk = malloc(sizeof(int64_t) * (size_t)(r->nblocks + 1));
    int64_t *U = malloc(sizeof(int64_t) * (size_t)(r->nsegs + 1));
    int64_t *S = malloc(sizeof(int64_t) * (size_t)(r->nsegs + 1));
    int sorted = 0, rc = ZS_OK;
    if (!b.opidx || !b.fwd0 || !b.nfwd || !b.gblk || !U || !S)
        rc = nomem(&b);
    for (int64_t i = 0; !rc && i < r->nblocks; i++)
        b.gblk[i] = -1;
    if (!rc && !(rc = resolve(&b, &sorted)) && !(rc = order(&b, sorted))) {
        int roll = r->zs && sorted && r->nsegs > 0 && seg_starts(r, U, S) && rolls(&b, U);
        rc = roll ? put_rolled(&b, U, S) : put_unrolled(&b);
    }
    free(U);
    free(S);
    free(b.dep);
    free(b.order);
    free(b.opidx);
    free(b.fwd0);
    free(b.nfwd);
    free(b.fwd);
    free(b.deps);
    free(b.gblk);
    return rc;
}

/* Communicators in order of their names (numbers by value, then others):
 * zepsim's pg_name g + 1 gives back group g. */
static int cmp_pg(const void *a, const void *b)
{
    const ck_pg *x = *(const ck_pg *const *)a, *y = *(const ck_pg *const *)b;
    char *ex, *ey;
    long vx = strtol(x->name, &ex, 10), vy = strtol(y->name, &ey, 10);
    int nx = x->name[0] && !*ex, ny = y->name[0] && !*ey;
    if (nx != ny)
        return ny - nx;
    if (nx && vx != vy)
        return (vx > vy) - (vx < vy);
    return strcmp(x->name, y->name);
}

/* A group for every communicator a node uses; gmap[pg] its index. */
static int make_groups(ck_set *set, zs_schedule *s, int32_t *gmap)
{
    ck_pg **p = malloc(sizeof(ck_pg *) * (size_t)(set->npgs + 1));
    int32_t *world = malloc(sizeof(int32_t) * (size_t)set->nranks);
    int rc = ZS_OK;
    if (!p || !world)
        rc = zs_err_set(set->e, ZS_ENOMEM, NULL, NULL, "out of memory reading Chakra traces");
    for (int32_t i = 0; !rc && i < set->npgs; i++)
        p[i] = &set->pgs[i];
    for (int i = 0; !rc && i < set->nranks; i++)
        world[i] = i;
    if (!rc)
        qsort(p, (size_t)set->npgs, sizeof *p, cmp_pg);
    for (int32_t i = 0; !rc && i < set->npgs; i++) {
        ck_pg *g = p[i];
        int is_world = strcmp(g->name, "0") == 0 && !g->ranks;
        if (g->rank0 < 0)
            continue; /* named only in the group file */
        if (!g->ranks && !is_world) {
            ck_rank *r = &set->ranks[g->rank0];
            rc = zs__ck_bad(set, r, &r->nodes[g->node0],
                            "give the node pg_ranks, or list the group in PREFIX.comm_group.json",
                            "communicator '%s' (pg_name) has no ranks", g->name);
            break;
        }
        int tag = g->has_tag ? g->tag : is_world ? 0 : i + 1;
        int k = zs_schedule_group_tagged(s, is_world ? world : g->ranks,
                                         is_world ? set->nranks : g->n, tag);
        if (k < 0) {
            zs_err tmp;
            zs_schedule_check(s, &tmp);
            rc = zs__ck_bad(set, &set->ranks[g->rank0], NULL, NULL, "communicator '%s': %s",
                            g->name, tmp.what);
        }
        gmap[g - set->pgs] = k;
    }
    free(p);
    free(world);
    return rc;
}

/* A builder failure while making the header: bad input at rank 0's file. */
static int built_head(ck_set *set, zs_schedule *s)
{
    zs_err tmp;
    int rc = zs_schedule_check(s, &tmp);
    if (rc == ZS_ENOMEM)
        return zs_err_set(set->e, rc, NULL, NULL, "out of memory reading Chakra traces");
    return zs__ck_bad(set, &set->ranks[0], NULL, NULL, "%s", tmp.what);
}

/* The header, streams, labels and plan (zepsim's metadata, or defaults). */
static int make_head(ck_set *set, zs_schedule *s)
{
    const ck_meta *m = &set->meta;
    ck_rank *r0 = &set->ranks[0];
    snprintf(s->method, sizeof s->method, "%s", m->have ? m->method : "chakra");
    snprintf(s->model, sizeof s->model, "%s", m->have ? m->model : "");
    snprintf(s->cluster, sizeof s->cluster, "%s", m->have ? m->cluster : "");
    snprintf(s->cost_desc, sizeof s->cost_desc, "%s",
             m->have ? m->cost : "durations from the Chakra trace");
    s->dims = m->have ? (zs_layout_dims){m->dims[0], m->dims[1], m->dims[2], m->dims[3]}
                      : (zs_layout_dims){1, 1, 1, set->nranks};
    s->layers = m->layers;
    s->heads = m->heads;
    s->micro_batches = m->micro;
    if (m->have) {
        s->nstreams = 0;
        for (int i = 0; i < m->nstreams; i++)
            if (zs_schedule_add_stream(s, m->streams[i]) < 0)
                return zs__ck_bad(set, r0, NULL, NULL, "global metadata: bad stream name '%s'",
                                  m->streams[i]);
    } else {
        int used = 0;
        for (int i = 0; i < set->nranks; i++)
            for (int64_t k = 0; k < set->ranks[i].n; k++)
                used |= set->ranks[i].nodes[k].stream == 2;
        if (used && zs_schedule_add_stream(s, "cpu") < 0)
            return built_head(set, s);
    }
    for (int32_t i = 0; i < set->nlabels; i++)
        if (zs_schedule_label(s, set->labels[i]) != i)
            return built_head(set, s);
    if (m->ndocs) {
        zs_schedule_set_docs(s, m->docs, m->ndocs);
        if (s->error.code)
            return built_head(set, s);
    }
    for (int64_t i = 0; i < m->npieces; i++) {
        const int32_t *v = m->pieces + 6 * i;
        if (v[0] >= m->ndocs || v[3] >= set->nranks || v[4] > 1 || v[5] > 32767)
            return zs__ck_bad(
                set, r0, NULL, NULL,
                "zs_pieces: piece %lld: doc, rank, layout or micro-batch out of range",
                (long long)i);
        zs_schedule_add_piece(s, v[0], v[1], v[2], v[3], (zs_layout)v[4], v[5]);
        if (s->error.code)
            return built_head(set, s);
    }
    return ZS_OK;
}

int zs__ck_build(ck_set *set, zs_schedule **out)
{
    zs_schedule *s = zs_schedule_new(set->nranks);
    int32_t *gmap = malloc(sizeof(int32_t) * (size_t)(set->npgs + 1));
    int rc = ZS_OK;
    if (!s || !gmap)
        rc = zs_err_set(set->e, ZS_ENOMEM, NULL, NULL, "out of memory reading Chakra traces");
    if (!rc && !(rc = make_head(set, s)))
        rc = make_groups(set, s, gmap);
    for (int i = 0; !rc && i < set->nranks; i++)
        rc = build_rank(set, s, i, gmap);
    free(gmap);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

#endif

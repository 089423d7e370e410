/* The schedule IR: building and reading. See zs_schedule.h; the dump and
 * reload live in zs_schedule_io.c. */
#include "zs_schedule.h"

#include <stdlib.h>
#include <string.h>

/* Grows *arr (element size sz) to hold at least need elements. */
static int grow(void **arr, int64_t *cap, int64_t need, size_t sz)
{
    if (need <= *cap)
        return ZS_OK;
    int64_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*arr, (size_t)nc * sz);
    if (!p)
        return ZS_ENOMEM;
    *arr = p;
    *cap = nc;
    return ZS_OK;
}

static int grow32(void **arr, int32_t *cap, int64_t need, size_t sz)
{
    int64_t c = *cap;
    int rc = grow(arr, &c, need, sz);
    *cap = (int32_t)c;
    return rc;
}

zs_schedule *zs_schedule_new(int nranks)
{
    if (nranks < 1)
        return NULL;
    zs_schedule *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nranks = nranks;
    s->ranks = calloc((size_t)nranks, sizeof *s->ranks);
    s->dims = (zs_layout_dims){1, 1, 1, nranks};
    s->micro_batches = 1;
    s->layers = 1;
    s->heads = 1;
    if (!s->ranks || zs_schedule_add_stream(s, "compute") < 0 ||
        zs_schedule_add_stream(s, "comm") < 0) {
        zs_schedule_free(s);
        return NULL;
    }
    return s;
}

void zs_schedule_free(zs_schedule *s)
{
    if (!s)
        return;
    for (int r = 0; s->ranks && r < s->nranks; r++) {
        free(s->ranks[r].ops);
        free(s->ranks[r].deps);
        free(s->ranks[r].segs);
    }
    free(s->ranks);
    free(s->blocks);
    for (int32_t g = 0; g < s->ngroups; g++)
        free(s->groups[g].ranks);
    free(s->groups);
    for (int32_t i = 0; i < s->nlabels; i++)
        free(s->labels[i]);
    free(s->labels);
    free(s->doc_len);
    free(s->pieces);
    free(s);
}

int zs_schedule_add_stream(zs_schedule *s, const char *name)
{
    if (s->nstreams >= ZS_MAX_STREAMS || strlen(name) >= sizeof s->stream_names[0])
        return ZS_EINVALID;
    snprintf(s->stream_names[s->nstreams], sizeof s->stream_names[0], "%s", name);
    return s->nstreams++;
}

int zs_schedule_label(zs_schedule *s, const char *name)
{
    /* Planners append ops of the same label in runs: check the last hit first. */
    int32_t h = s->label_hint;
    if (h >= 0 && h < s->nlabels && strcmp(s->labels[h], name) == 0)
        return h;
    for (int32_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i], name) == 0) {
            s->label_hint = i;
            return i;
        }
    if (s->nlabels >= 65535 ||
        grow32((void **)&s->labels, &s->labels_cap, s->nlabels + 1, sizeof(char *)))
        return ZS_ENOMEM;
    size_t n = strlen(name) + 1;
    char *d = malloc(n);
    if (!d)
        return ZS_ENOMEM;
    memcpy(d, name, n);
    s->labels[s->nlabels] = d;
    s->label_hint = s->nlabels;
    return s->nlabels++;
}

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int zs_schedule_group(zs_schedule *s, const int *ranks, int n)
{
    return zs_schedule_group_tagged(s, ranks, n, 0);
}

int zs_schedule_group_tagged(zs_schedule *s, const int *ranks, int n, int tag)
{
    if (n < 1)
        return ZS_EINVALID;
    int32_t *sorted = malloc(sizeof(int32_t) * (size_t)n);
    if (!sorted)
        return ZS_ENOMEM;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= s->nranks) {
            free(sorted);
            return ZS_EINVALID;
        }
        sorted[i] = ranks[i];
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_int32);
    for (int i = 1; i < n; i++)
        if (sorted[i] == sorted[i - 1]) {
            free(sorted);
            return ZS_EINVALID;
        }
    for (int32_t g = s->ngroups - 1; g >= 0; g--)
        if (s->groups[g].n == n && s->groups[g].tag == tag &&
            memcmp(s->groups[g].ranks, sorted, sizeof(int32_t) * n) == 0) {
            free(sorted);
            return g;
        }
    if (grow32((void **)&s->groups, &s->groups_cap, s->ngroups + 1, sizeof(zs_group))) {
        free(sorted);
        return ZS_ENOMEM;
    }
    s->groups[s->ngroups].n = n;
    s->groups[s->ngroups].ranks = sorted;
    s->groups[s->ngroups].tag = tag;
    return s->ngroups++;
}

int zs_schedule_set_docs(zs_schedule *s, const int32_t *len, int32_t ndocs)
{
    int32_t *d = malloc(sizeof(int32_t) * (size_t)(ndocs > 0 ? ndocs : 1));
    if (!d)
        return ZS_ENOMEM;
    if (ndocs > 0)
        memcpy(d, len, sizeof(int32_t) * (size_t)ndocs);
    free(s->doc_len);
    s->doc_len = d;
    s->ndocs = ndocs;
    return ZS_OK;
}

int zs_schedule_add_piece(zs_schedule *s, int32_t doc, int32_t t0, int32_t t1, int32_t rank,
                          zs_layout layout, int micro)
{
    if (grow((void **)&s->pieces, &s->pieces_cap, s->npieces + 1, sizeof(zs_piece)))
        return ZS_ENOMEM;
    zs_piece *p = &s->pieces[s->npieces++];
    p->doc = doc;
    p->t0 = t0;
    p->t1 = t1;
    p->rank = rank;
    p->layout = (uint8_t)layout;
    p->micro = (int16_t)micro;
    return ZS_OK;
}

int zs_schedule_begin_segment(zs_schedule *s, int rank, int repeat)
{
    if (rank < 0 || rank >= s->nranks || repeat < 1)
        return ZS_EINVALID;
    zs_rank_prog *p = &s->ranks[rank];
    /* An empty last segment is reused rather than left behind. */
    if (p->nsegs > 0 && p->segs[p->nsegs - 1].nops == 0) {
        p->segs[p->nsegs - 1].repeat = repeat;
        return ZS_OK;
    }
    if (grow32((void **)&p->segs, &p->segs_cap, p->nsegs + 1, sizeof(zs_segment)))
        return ZS_ENOMEM;
    p->segs[p->nsegs].op0 = p->nops;
    p->segs[p->nsegs].nops = 0;
    p->segs[p->nsegs].repeat = repeat;
    p->nsegs++;
    return ZS_OK;
}

/* Appends a zeroed op with its common fields; returns its index or < 0. */
static int64_t append(zs_schedule *s, int rank, int stream, const char *label, zs_op_kind kind,
                      const int64_t *deps, int ndeps)
{
    if (rank < 0 || rank >= s->nranks || stream < 0 || stream >= s->nstreams || ndeps < 0 ||
        ndeps > 32767)
        return ZS_EINVALID;
    zs_rank_prog *p = &s->ranks[rank];
    for (int i = 0; i < ndeps; i++)
        if (deps[i] < 0 || deps[i] >= p->nops)
            return ZS_EINVALID; /* only earlier ops: keeps every program acyclic */
    int lab = zs_schedule_label(s, label ? label : "");
    if (lab < 0)
        return lab;
    if (p->nsegs == 0 && zs_schedule_begin_segment(s, rank, 1))
        return ZS_ENOMEM;
    if (grow((void **)&p->ops, &p->ops_cap, p->nops + 1, sizeof(zs_op)) ||
        grow((void **)&p->deps, &p->deps_cap, p->ndeps + ndeps, sizeof(int32_t)))
        return ZS_ENOMEM;
    zs_op *op = &p->ops[p->nops];
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    op->stream = (uint8_t)stream;
    op->label = (uint16_t)lab;
    op->ndeps = ndeps;
    op->dep0 = p->ndeps;
    for (int i = 0; i < ndeps; i++)
        p->deps[p->ndeps++] = (int32_t)deps[i];
    p->segs[p->nsegs - 1].nops++;
    return p->nops++;
}

int64_t zs__sched_attn_ref(zs_schedule *s, int rank, int stream, const char *label, int backward,
                           int64_t block0, int nblocks, int heads, double duration,
                           const int64_t *deps, int ndeps)
{
    if (nblocks < 1 || heads < 1 || heads > 32767 || block0 < 0 || block0 + nblocks > s->nblocks)
        return ZS_EINVALID;
    int64_t i = append(s, rank, stream, label, ZS_OP_COMPUTE, deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->duration = duration;
    op->u.compute.ck = backward ? ZS_CK_ATTN_BWD : ZS_CK_ATTN_FWD;
    op->u.compute.heads = (int16_t)heads;
    op->u.compute.nblocks = nblocks;
    op->u.compute.block0 = block0;
    return i;
}

int64_t zs_sched_attn(zs_schedule *s, int rank, int stream, const char *label, int backward,
                      const zs_attn_block *b, int nblocks, int heads, double duration,
                      const int64_t *deps, int ndeps)
{
    if (nblocks < 1)
        return ZS_EINVALID;
    if (grow((void **)&s->blocks, &s->blocks_cap, s->nblocks + nblocks, sizeof(zs_attn_block)))
        return ZS_ENOMEM;
    int64_t block0 = s->nblocks;
    memcpy(s->blocks + block0, b, sizeof(zs_attn_block) * (size_t)nblocks);
    s->nblocks += nblocks;
    int64_t i = zs__sched_attn_ref(s, rank, stream, label, backward, block0, nblocks, heads,
                                   duration, deps, ndeps);
    if (i < 0)
        s->nblocks = block0; /* a failed append leaves the pool as it was */
    return i;
}

int64_t zs_sched_gemm(zs_schedule *s, int rank, int stream, const char *label, double m, double n,
                      double k, double duration, const int64_t *deps, int ndeps)
{
    int64_t i = append(s, rank, stream, label, ZS_OP_COMPUTE, deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->duration = duration;
    op->u.compute.ck = ZS_CK_GEMM;
    op->u.compute.m = m;
    op->u.compute.n = n;
    op->u.compute.k = k;
    return i;
}

int64_t zs_sched_elementwise(zs_schedule *s, int rank, int stream, const char *label, double bytes,
                             double duration, const int64_t *deps, int ndeps)
{
    int64_t i = append(s, rank, stream, label, ZS_OP_COMPUTE, deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->duration = duration;
    op->u.compute.ck = ZS_CK_ELEMWISE;
    op->u.compute.bytes = bytes;
    return i;
}

static int64_t p2p(zs_schedule *s, zs_op_kind kind, int rank, int stream, const char *label,
                   int peer, int tag, double bytes, const int64_t *deps, int ndeps)
{
    if (peer < 0 || peer >= s->nranks || peer == rank || bytes < 0)
        return ZS_EINVALID;
    int64_t i = append(s, rank, stream, label, kind, deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->u.p2p.peer = peer;
    op->u.p2p.tag = tag;
    op->u.p2p.bytes = bytes;
    return i;
}

int64_t zs_sched_send(zs_schedule *s, int rank, int stream, const char *label, int peer, int tag,
                      double bytes, const int64_t *deps, int ndeps)
{
    return p2p(s, ZS_OP_SEND, rank, stream, label, peer, tag, bytes, deps, ndeps);
}

int64_t zs_sched_recv(zs_schedule *s, int rank, int stream, const char *label, int peer, int tag,
                      double bytes, const int64_t *deps, int ndeps)
{
    return p2p(s, ZS_OP_RECV, rank, stream, label, peer, tag, bytes, deps, ndeps);
}

int64_t zs_sched_coll(zs_schedule *s, int rank, int stream, const char *label, int group,
                      zs_coll_kind kind, double bytes, const int64_t *deps, int ndeps)
{
    if (group < 0 || group >= s->ngroups || kind < 0 || kind >= ZS_COLL_NKINDS || bytes < 0)
        return ZS_EINVALID;
    int64_t i = append(s, rank, stream, label, ZS_OP_COLL, deps, ndeps);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->u.coll.group = group;
    op->u.coll.ck = (uint8_t)kind;
    op->u.coll.bytes = bytes;
    return i;
}

int64_t zs_sched_marker(zs_schedule *s, int rank, zs_marker_kind mk, int value)
{
    static const char *names[] = {"layer", "phase", "micro-batch", "layer"};
    int64_t i =
        append(s, rank, ZS_STREAM_COMPUTE, names[mk % ZS_MARK_NKINDS], ZS_OP_MARKER, NULL, 0);
    if (i < 0)
        return i;
    zs_op *op = &s->ranks[rank].ops[i];
    op->u.marker.mk = (uint8_t)mk;
    op->u.marker.value = value;
    return i;
}

void zs_schedule_flag_ops(zs_schedule *s, int rank, int64_t from, unsigned flags)
{
    zs_rank_prog *p = &s->ranks[rank];
    for (int64_t i = from < 0 ? 0 : from; i < p->nops; i++)
        p->ops[i].flags |= (uint16_t)flags;
}

double zs_schedule_attn_work(const zs_schedule *s, int rank)
{
    const zs_rank_prog *p = &s->ranks[rank];
    double w = 0;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
            const zs_op *op = &p->ops[i];
            if (op->kind != ZS_OP_COMPUTE || op->u.compute.ck != ZS_CK_ATTN_FWD ||
                (op->flags & ZS_OPF_RECOMPUTE))
                continue;
            for (int j = 0; j < op->u.compute.nblocks; j++)
                w += (double)zs_attn_block_pairs(&s->blocks[op->u.compute.block0 + j]) *
                     op->u.compute.heads * p->segs[g].repeat;
        }
    return w;
}

int64_t zs_schedule_unrolled_ops(const zs_schedule *s, int rank)
{
    const zs_rank_prog *p = &s->ranks[rank];
    int64_t n = 0;
    for (int32_t i = 0; i < p->nsegs; i++)
        n += (int64_t)p->segs[i].nops * p->segs[i].repeat;
    return n;
}

int64_t zs_schedule_total_ops(const zs_schedule *s)
{
    int64_t n = 0;
    for (int r = 0; r < s->nranks; r++)
        n += s->ranks[r].nops;
    return n;
}

int64_t zs_schedule_total_unrolled(const zs_schedule *s)
{
    int64_t n = 0;
    for (int r = 0; r < s->nranks; r++)
        n += zs_schedule_unrolled_ops(s, r);
    return n;
}

size_t zs_schedule_memory(const zs_schedule *s)
{
    size_t m = sizeof *s + sizeof(zs_rank_prog) * (size_t)s->nranks;
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        m += (size_t)p->ops_cap * sizeof(zs_op) + (size_t)p->deps_cap * sizeof(int32_t) +
             (size_t)p->segs_cap * sizeof(zs_segment);
    }
    m += (size_t)s->blocks_cap * sizeof(zs_attn_block) + (size_t)s->pieces_cap * sizeof(zs_piece);
    for (int32_t g = 0; g < s->ngroups; g++)
        m += sizeof(zs_group) + sizeof(int32_t) * (size_t)s->groups[g].n;
    return m;
}

const char *zs_op_kind_name(int k)
{
    static const char *n[] = {"compute", "send", "recv", "coll", "marker"};
    return k >= 0 && k < ZS_OP_NKINDS ? n[k] : "?";
}

const char *zs_compute_kind_name(int k)
{
    static const char *n[] = {"attn_fwd", "attn_bwd", "gemm", "elementwise"};
    return k >= 0 && k < ZS_CK_NKINDS ? n[k] : "?";
}

const char *zs_phase_name(int p)
{
    static const char *n[] = {"forward", "backward", "grad-sync", "optimizer"};
    return p >= 0 && p < ZS_PHASE_NPHASES ? n[p] : "?";
}

void zs_op_print(FILE *f, const zs_schedule *s, int rank, int64_t i)
{
    const zs_op *op = zs_schedule_op(s, rank, i);
    fprintf(f, "r%d #%lld %s %s %s", rank, (long long)i, s->stream_names[op->stream],
            op->kind == ZS_OP_COMPUTE ? zs_compute_kind_name(op->u.compute.ck)
                                      : zs_op_kind_name(op->kind),
            s->labels[op->label]);
    switch (op->kind) {
    case ZS_OP_COMPUTE:
        if (op->u.compute.ck <= ZS_CK_ATTN_BWD)
            fprintf(f, " blocks=%d heads=%d", op->u.compute.nblocks, op->u.compute.heads);
        else if (op->u.compute.ck == ZS_CK_GEMM)
            fprintf(f, " m=%.0f n=%.0f k=%.0f", op->u.compute.m, op->u.compute.n, op->u.compute.k);
        else
            fprintf(f, " bytes=%.0f", op->u.compute.bytes);
        fprintf(f, " t=%.3gus", op->duration * 1e6);
        break;
    case ZS_OP_SEND:
    case ZS_OP_RECV:
        fprintf(f, " peer=%d tag=%d bytes=%.0f", op->u.p2p.peer, op->u.p2p.tag, op->u.p2p.bytes);
        break;
    case ZS_OP_COLL:
        fprintf(f, " %s group=%d (n=%d) bytes=%.0f", zs_coll_kind_name(op->u.coll.ck),
                op->u.coll.group, s->groups[op->u.coll.group].n, op->u.coll.bytes);
        break;
    case ZS_OP_MARKER:
        fprintf(f, " value=%d", op->u.marker.value);
        break;
    }
    fputc('\n', f);
}

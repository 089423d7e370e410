/* Setup and teardown of the SimGrid executor (see zs_sim_internal.h): the
 * engine's configuration, the generated platform (loaded from memory), the
 * per-rank tables the walker uses (each op's segment, the next op of its
 * stream, each stream's first op per segment), the link counters, the
 * timeline, and the report on a schedule that could not finish. */
#define _GNU_SOURCE /* memfd_create */
#include "zs_sim_internal.h"
#include "zs_platform_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void zs__sim_engine_init(void)
{
    /* Log threshold first so the configuration changes print nothing. */
    static char a0[] = "zepsim", a1[] = "--log=root.thresh:critical",
                a2[] = "--cfg=network/model:CM02", a3[] = "--cfg=network/crosstraffic:0",
                a4[] = "--cfg=network/TCP-gamma:0", a5[] = "--cfg=network/optim:Lazy",
#if defined(__SANITIZE_ADDRESS__)
                /* ASan cannot follow SimGrid's raw stack switches. */
        a6[] = "--cfg=contexts/factory:thread";
#else
                a6[] = "--cfg=contexts/stack-size:128";
#endif
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, NULL};
    int argc = 7;
    simgrid_init(&argc, argv);
}

int zs__sim_load_platform(const zs_cluster *c, zs_err *e)
{
    int fd = memfd_create("zepsim-platform", 0);
    if (fd < 0)
        return zs_err_set(e, ZS_ERUNTIME, "memfd_create", NULL,
                          "cannot create the in-memory platform file: %s", strerror(errno));
    FILE *f = fdopen(dup(fd), "w");
    if (!f) {
        close(fd);
        return zs_err_set(e, ZS_ERUNTIME, "fdopen", NULL, "cannot write the platform: %s",
                          strerror(errno));
    }
    int rc = zs_platform_write(c, f, e);
    if (fclose(f) != 0 && rc == ZS_OK)
        rc = zs_err_set(e, ZS_ERUNTIME, NULL, NULL, "cannot write the in-memory platform");
    if (rc == ZS_OK) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        simgrid_load_platform(path);
    }
    close(fd);
    return rc;
}

/* Checks one segment's ops and links each to the next op of its stream. */
static int rank_segment(sim *x, rank_st *R, int32_t sg, int32_t *seg_of)
{
    const zs_rank_prog *p = R->p;
    const zs_segment *seg = &p->segs[sg];
    int64_t last[ZS_MAX_STREAMS];
    for (int s = 0; s < ZS_MAX_STREAMS; s++) {
        R->first[(int64_t)sg * ZS_MAX_STREAMS + s] = -1;
        last[s] = -1;
    }
    if (seg->repeat < 1)
        return zs_err_set(&x->err, ZS_EINVALID, NULL, "rebuild the schedule",
                          "rank %d segment %d repeats %d times", R->rank, sg, seg->repeat);
    for (int64_t i = seg->op0; i < seg->op0 + seg->nops; i++) {
        const zs_op *op = &p->ops[i];
        if (op->stream >= x->s->nstreams)
            return zs_err_set(&x->err, ZS_EINVALID, NULL, "rebuild the schedule",
                              "rank %d op #%lld is on stream %d of %d", R->rank, (long long)i,
                              op->stream, x->s->nstreams);
        const int32_t *d = p->deps + op->dep0;
        for (int k = 0; k < op->ndeps; k++) {
            if (d[k] < 0 || d[k] >= i)
                return zs_err_set(&x->err, ZS_EINVALID, NULL,
                                  "a dependency must name an earlier op of the same rank",
                                  "rank %d op #%lld depends on op #%d", R->rank, (long long)i,
                                  d[k]);
            R->waiters[d[k]] |= (uint8_t)(1u << op->stream);
        }
        seg_of[i] = sg;
        R->next_same[i] = -1;
        if (last[op->stream] >= 0)
            R->next_same[last[op->stream]] = (int32_t)i;
        else
            R->first[(int64_t)sg * ZS_MAX_STREAMS + op->stream] = (int32_t)i;
        last[op->stream] = i;
    }
    return ZS_OK;
}

/* The walker's op records (wop, wdep), once every op's segment is known. */
static int rank_wops(sim *x, rank_st *R, const int32_t *seg_of)
{
    const zs_rank_prog *p = R->p;
    int64_t nd = 0;
    for (int64_t i = 0; i < p->nops; i++)
        nd += p->ops[i].ndeps;
    if (nd > INT32_MAX)
        return zs_err_set(&x->err, ZS_EINVALID, NULL, "split the schedule over more ranks",
                          "rank %d has %lld dependencies (at most %d)", R->rank, (long long)nd,
                          INT32_MAX);
    R->wo = malloc(sizeof *R->wo * (size_t)(p->nops > 0 ? p->nops : 1));
    R->wd = malloc(sizeof *R->wd * (size_t)(nd > 0 ? nd : 1));
    if (!R->wo || !R->wd)
        return ZS_ENOMEM;
    int32_t k = 0;
    for (int64_t i = 0; i < p->nops; i++) {
        const zs_op *op = &p->ops[i];
        const int32_t *d = p->deps + op->dep0;
        int f = op->kind == ZS_OP_SEND || op->kind == ZS_OP_RECV ? WOP_P2P : 0;
        if (op->kind == ZS_OP_COMPUTE) {
            f |= op->duration > 0 ? WOP_TIMED : 0;
            f |= zs_ck_is_host_copy(op->u.compute.ck) ? WOP_COPY : 0;
        }
        R->wo[i] = (wop){k, op->ndeps, (uint8_t)f, op->kind, op->duration};
        for (int j = 0; j < op->ndeps; j++, k++) {
            int32_t sj = seg_of[d[j]];
            R->wd[k] = (wdep){d[j], sj == seg_of[i] ? -1 : p->segs[sj].repeat};
        }
    }
    return ZS_OK;
}

static int rank_prepare(sim *x, rank_st *R, int rank)
{
    const zs_rank_prog *p = &x->s->ranks[rank];
    R->x = x;
    R->rank = rank;
    zs_foldacct_init(&R->acct);
    R->p = p;
    int64_t n = p->nops > 0 ? p->nops : 1;
    R->done = calloc((size_t)n, sizeof(int32_t));
    R->next_same = malloc(sizeof(int32_t) * (size_t)n);
    R->waiters = calloc((size_t)n, 1);
    R->chan_of = calloc((size_t)n, sizeof(chan *));
    R->first = malloc(sizeof(int32_t) * (size_t)(p->nsegs > 0 ? p->nsegs : 1) * ZS_MAX_STREAMS);
    R->sgw = zs__sgw_new();
    if (!R->done || !R->next_same || !R->waiters || !R->chan_of || !R->first || !R->sgw)
        return ZS_ENOMEM;
    if (x->fold) {
        R->skip_at = calloc((size_t)n, sizeof(int32_t));
        R->skip_add = calloc((size_t)n, sizeof(int32_t));
        if (!R->skip_at || !R->skip_add)
            return ZS_ENOMEM;
    }
    int32_t *seg_of = malloc(sizeof(int32_t) * (size_t)n);
    if (!seg_of)
        return ZS_ENOMEM;
    int rc = ZS_OK;
    for (int32_t sg = 0; sg < p->nsegs && !rc; sg++)
        rc = rank_segment(x, R, sg, seg_of);
    if (!rc)
        rc = rank_wops(x, R, seg_of);
    free(seg_of);
    if (rc)
        return rc;
    R->host = x->hosts[rank];
    for (int s = 0; s < x->s->nstreams; s++) {
        char name[48];
        snprintf(name, sizeof name, "w%d.%d", rank, s);
        R->wake_mb[s] = sg_mailbox_by_name(name);
        zs__sim_stream_seek(R, s, 0);
    }
    return ZS_OK;
}

static void rank_release(rank_st *R)
{
    free(R->wo);
    free(R->wd);
    free(R->done);
    free(R->next_same);
    free(R->waiters);
    free(R->chan_of);
    free(R->first);
    free(R->skip_at);
    free(R->skip_add);
    free(R->cmax);
    zs_foldacct_free(&R->acct);
    zs__sgw_free(R->sgw);
    for (int k = 0; k < R->nw; k++)
        free(R->w[k]);
    while (R->free_w) {
        went *w = R->free_w;
        R->free_w = w->next_free;
        free(w);
    }
    free(R->w);
}

void zs__sim_release(sim *x)
{
    if (!x)
        return;
    zs__sim_fin_close(x);
    if (x->ranks)
        for (int r = 0; r < x->s->nranks; r++)
            rank_release(&x->ranks[r]);
    free(x->ranks);
    free(x->hosts);
    if (x->groups)
        for (int g = 0; g < x->s->ngroups; g++) {
            free(x->groups[g].mb_in);
            free(x->groups[g].mstream);
            free(x->groups[g].ring);
        }
    free(x->groups);
    free(x->l_act);
    free(x->l_last);
    free(x->l_busy);
    free(x->l_class);
    free(x->l_nic);
    free(x->n_busy);
    free(x->nic_act);
    free(x->nic_last);
    free(x->c_load);
    free(x->c_lat);
    free(x->c_touched);
    zs_fold_free(x->fold);
    x->fold = NULL;
    if (x->chash)
        for (size_t b = 0; b < x->nchash; b++)
            while (x->chash[b]) {
                chan *c = x->chash[b];
                x->chash[b] = c->next;
                free(c->sq[0]);
                free(c->sq[1]);
                free(c);
            }
    free(x->chash);
    zs_timeline_free(x->tl); /* an unfinished timeline leaves no file */
    x->tl = NULL;
    zs_result_free(x->r);
    x->r = NULL;
}

static int alloc_tables(sim *x, zs_err *e)
{
    const zs_schedule *s = x->s;
    const zs_cluster *c = x->c;
    x->r = zs_result_new(s->nranks, c->nodes * c->nics_per_node);
    x->ranks = calloc((size_t)s->nranks, sizeof *x->ranks);
    x->hosts = calloc((size_t)s->nranks, sizeof *x->hosts);
    x->groups = calloc((size_t)(s->ngroups > 0 ? s->ngroups : 1), sizeof *x->groups);
    x->nlinks = zs__plat_nlinks(c);
    x->l_act = calloc((size_t)x->nlinks, sizeof *x->l_act);
    x->l_last = calloc((size_t)x->nlinks, sizeof *x->l_last);
    x->nic_act = calloc((size_t)(c->nodes * c->nics_per_node), sizeof *x->nic_act);
    x->nic_last = calloc((size_t)(c->nodes * c->nics_per_node), sizeof *x->nic_last);
    x->l_busy = calloc((size_t)x->nlinks, sizeof *x->l_busy);
    x->l_class = malloc((size_t)x->nlinks);
    x->l_nic = malloc(sizeof *x->l_nic * (size_t)x->nlinks);
    for (int l = 0; x->l_class && x->l_nic && l < x->nlinks; l++) {
        x->l_class[l] = (uint8_t)zs__plat_link_class(c, l);
        x->l_nic[l] = zs__plat_link_nic(c, l);
    }
    x->n_busy = calloc((size_t)(c->nodes * c->nics_per_node), sizeof *x->n_busy);
    x->nchash = (size_t)s->nranks * 8 + 64;
    x->chash = calloc(x->nchash, sizeof *x->chash);
    if (!x->r || !x->ranks || !x->hosts || !x->groups || !x->l_act || !x->l_last || !x->nic_act ||
        !x->nic_last || !x->l_busy || !x->n_busy || !x->l_class || !x->l_nic || !x->chash)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory setting up the simulation");
    for (int g = 0; g < s->ngroups; g++) {
        x->groups[g].mb_in =
            calloc((size_t)(s->groups[g].n > 0 ? s->groups[g].n : 1), sizeof(sg_mailbox_t));
        x->groups[g].mstream = calloc((size_t)(s->groups[g].n > 0 ? s->groups[g].n : 1), 1);
        if (!x->groups[g].mb_in || !x->groups[g].mstream)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory setting up the simulation");
    }
    return ZS_OK;
}

/* The timeline, when one is asked for. */
static int tl_open(sim *x, zs_err *e)
{
    if (!x->o.exec.timeline)
        return ZS_OK;
    zs_tl_cfg tc;
    zs_exec_tl_cfg(&x->o.exec, x->c->gpus_per_node, &tc);
    return zs_timeline_open(x->o.exec.timeline, x->s, &tc, &x->tl, e);
}

/* Folding unless off; a timeline (opened first) keeps the iterations it
 * shows. */
static int fold_open(sim *x, zs_err *e)
{
    zs_fold_cfg fc;
    zs_exec_fold_cfg(&x->o.exec, x->tl, &fc);
    return fc.on ? zs_fold_new(x->s, &fc, &x->fold, e) : ZS_OK;
}

int zs__sim_setup(sim *x, zs_err *e)
{
    const zs_schedule *s = x->s;
    int rc = alloc_tables(x, e);
    if (rc == ZS_OK)
        rc = tl_open(x, e);
    if (rc == ZS_OK)
        rc = fold_open(x, e);
    if (rc)
        return rc;
    snprintf(x->r->backend, sizeof x->r->backend, "simgrid");
    for (int r = 0; r < s->nranks; r++) {
        char name[32];
        snprintf(name, sizeof name, "g%d", r);
        x->hosts[r] = sg_host_by_name(name);
        if (!x->hosts[r])
            return zs_err_set(e, ZS_ERUNTIME, name, NULL, "host missing from the platform");
    }
    for (int r = 0; r < s->nranks; r++) {
        if ((rc = rank_prepare(x, &x->ranks[r], r))) {
            if (x->err.code) {
                *e = x->err;
                return rc;
            }
            return zs_err_set(e, rc, NULL, NULL, "out of memory setting up rank %d", r);
        }
    }
    if (zs__sim_fin_open(x))
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory setting up the simulation");
    return ZS_OK;
}

void zs__sim_describe_stuck(sim *x, zs_err *e)
{
    for (int r = 0; r < x->s->nranks; r++) {
        rank_st *R = &x->ranks[r];
        if (R->finished)
            continue;
        for (int s = 0; s < x->s->nstreams; s++) {
            if (R->st[s].cur < 0)
                continue;
            char where[128];
            snprintf(where, sizeof where, "rank %d op #%lld (stream %s, iteration %d)", r,
                     (long long)R->st[s].cur, x->s->stream_names[s], R->st[s].iter);
            zs_err_set(e, ZS_EINVALID, where,
                       "check that every send has its receive and every member joins each "
                       "collective (zepsim validate)",
                       "the schedule cannot finish: %s '%s' never completes",
                       zs_op_kind_name(R->p->ops[R->st[s].cur].kind),
                       x->s->labels[R->p->ops[R->st[s].cur].label]);
            return;
        }
    }
}

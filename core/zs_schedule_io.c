/* Schedule dump and reload: a JSON document written one op per line so that
 * two dumps diff line by line, read back with jansson so that any valid
 * JSON (reformatted by a user, say) loads too. See zs_schedule.h. */
#include "zs_schedule.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "zs_afile.h"
#include "zs_fdio.h"
#include "zs_schedule_internal.h"

#define ZS_DUMP_VERSION 1

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void put_deps(FILE *f, const zs_schedule *s, int rank, const zs_op *op)
{
    if (op->ndeps == 0)
        return;
    const int32_t *d = zs_schedule_deps(s, rank, op);
    fputs(", \"deps\": [", f);
    for (int i = 0; i < op->ndeps; i++)
        fprintf(f, "%s%d", i ? ", " : "", d[i]);
    fputc(']', f);
}

int zs_schedule_dump(const zs_schedule *s, FILE *f, zs_err *e)
{
    fprintf(f, "{\"zepsim_schedule\": %d,\n", ZS_DUMP_VERSION);
    fputs(" \"method\": ", f);
    put_str(f, s->method);
    fputs(", \"model\": ", f);
    put_str(f, s->model);
    fputs(", \"cluster\": ", f);
    put_str(f, s->cluster);
    fputs(",\n \"cost\": ", f);
    put_str(f, s->cost_desc);
    fprintf(f, ",\n \"dims\": {\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d},\n", s->dims.tp,
            s->dims.cp, s->dims.pp, s->dims.dp);
    fprintf(f, " \"nranks\": %d, \"layers\": %d, \"heads\": %d, \"micro_batches\": %d,\n",
            s->nranks, s->layers, s->heads, s->micro_batches);
    fputs(" \"streams\": [", f);
    for (int i = 0; i < s->nstreams; i++) {
        fputs(i ? ", " : "", f);
        put_str(f, s->stream_names[i]);
    }
    fputs("],\n \"labels\": [", f);
    for (int32_t i = 0; i < s->nlabels; i++) {
        fputs(i ? ", " : "", f);
        put_str(f, s->labels[i]);
    }
    fputs("],\n \"groups\": [", f);
    for (int32_t g = 0; g < s->ngroups; g++) {
        fputs(g ? ",\n  [" : "\n  [", f);
        for (int i = 0; i < s->groups[g].n; i++)
            fprintf(f, "%s%d", i ? ", " : "", s->groups[g].ranks[i]);
        fputc(']', f);
    }
    fputs("],\n \"group_tags\": [", f);
    for (int32_t g = 0; g < s->ngroups; g++)
        fprintf(f, "%s%d", g ? ", " : "", s->groups[g].tag);
    fputs("],\n \"docs\": [", f);
    for (int32_t d = 0; d < s->ndocs; d++)
        fprintf(f, "%s%d", d ? ", " : "", s->doc_len[d]);
    fputs("],\n \"pieces\": [", f);
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *p = &s->pieces[i];
        fprintf(f, "%s[%d, %d, %d, %d, %d, %d]", i ? ",\n  " : "\n  ", p->doc, p->t0, p->t1,
                p->rank, p->layout, p->micro);
    }
    fputs("],\n \"blocks\": [", f);
    for (int64_t i = 0; i < s->nblocks; i++) {
        const zs_attn_block *b = &s->blocks[i];
        fprintf(f, "%s[%d, %d, %d, %d, %d]", i ? ",\n  " : "\n  ", b->doc, b->q0, b->q1, b->k0,
                b->k1);
    }
    fputs("],\n \"carry\": [", f);
    for (int64_t i = 0; i < s->ncarry; i++)
        fprintf(f, "%s[%d, %.17g]", i ? ",\n  " : "\n  ", s->carry[i].doc, s->carry[i].bytes);
    fputs("],\n \"ranks\": [", f);
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        fprintf(f, "%s{\"rank\": %d, \"segments\": [", r ? ",\n " : "\n ", r);
        for (int32_t i = 0; i < p->nsegs; i++)
            fprintf(f, "%s[%lld, %d, %d]", i ? ", " : "", (long long)p->segs[i].op0,
                    p->segs[i].nops, p->segs[i].repeat);
        fputs("],\n  \"ops\": [", f);
        for (int64_t i = 0; i < p->nops; i++) {
            const zs_op *op = &p->ops[i];
            fputs(i ? ",\n   {" : "\n   {", f);
            fputs("\"op\": ", f);
            put_str(f, op->kind == ZS_OP_COMPUTE ? zs_compute_kind_name(op->u.compute.ck)
                                                 : zs_op_kind_name(op->kind));
            fprintf(f, ", \"stream\": %d, \"label\": %d", op->stream, op->label);
            switch (op->kind) {
            case ZS_OP_COMPUTE:
                fprintf(f, ", \"t\": %.17g", op->duration);
                if (op->u.compute.ck <= ZS_CK_ATTN_BWD)
                    fprintf(f, ", \"heads\": %d, \"blocks\": [%lld, %d]", op->u.compute.heads,
                            (long long)op->u.compute.block0, op->u.compute.nblocks);
                else if (op->u.compute.ck == ZS_CK_GEMM)
                    fprintf(f, ", \"mnk\": [%.17g, %.17g, %.17g]", op->u.compute.m, op->u.compute.n,
                            op->u.compute.k);
                else
                    fprintf(f, ", \"bytes\": %.17g", op->u.compute.bytes);
                break;
            case ZS_OP_SEND:
            case ZS_OP_RECV:
                fprintf(f, ", \"peer\": %d, \"tag\": %d, \"bytes\": %.17g", op->u.p2p.peer,
                        op->u.p2p.tag, op->u.p2p.bytes);
                if (op->u.p2p.ncarry > 0)
                    fprintf(f, ", \"carry\": [%lld, %d]", (long long)op->u.p2p.carry0,
                            op->u.p2p.ncarry);
                break;
            case ZS_OP_COLL:
                fprintf(f, ", \"kind\": \"%s\", \"group\": %d, \"bytes\": %.17g",
                        zs_coll_kind_name(op->u.coll.ck), op->u.coll.group, op->u.coll.bytes);
                break;
            case ZS_OP_MARKER:
                fprintf(f, ", \"marker\": %d, \"value\": %d", op->u.marker.mk, op->u.marker.value);
                break;
            }
            if (op->flags)
                fprintf(f, ", \"flags\": %u", (unsigned)op->flags);
            put_deps(f, s, r, op);
            fputc('}', f);
        }
        fputs("]}", f);
    }
    fputs("]}\n", f);
    if (ferror(f))
        return zs_err_set(e, ZS_EIO, "schedule dump", "check free disk space",
                          "write error while dumping the schedule");
    return ZS_OK;
}

int zs_schedule_dump_file(const zs_schedule *s, const char *path, zs_err *e)
{
    zs_afile a;
    int rc = zs_afile_open(&a, path, e);
    if (rc)
        return rc;
    rc = zs_schedule_dump(s, a.f, e);
    return rc ? zs_afile_fail(&a, rc, e) : zs_afile_commit(&a, e);
}

/* ---- reader ---------------------------------------------------------------- */

static zs_plan_limits g_limits = {ZS_PLAN_MAX_RANKS_DEFAULT, ZS_PLAN_MAX_OPS_DEFAULT};

zs_plan_limits zs_plan_limits_get(void)
{
    return g_limits;
}

void zs_plan_limits_set(zs_plan_limits l)
{
    g_limits.ranks = l.ranks > 0 ? l.ranks : 1;
    g_limits.ops = l.ops > 0 ? l.ops : 1;
}

typedef struct rd {
    const char *path;
    zs_err *e;
    zs_plan_limits lim;
    int64_t refs; /* attention block references read so far */
} rd;

static int bad(rd *r, const char *where, const char *fmt, const char *detail)
{
    char w[600];
    snprintf(w, sizeof w, "%s: %s", r->path, where);
    return zs_err_set(r->e, ZS_EINPUT, w,
                      "the file must be a schedule written by `zepsim plan --dump`", fmt, detail);
}

static int get_int(rd *r, json_t *o, const char *key, long min, long max, long *out,
                   const char *where)
{
    json_t *v = json_object_get(o, key);
    char w[600];
    snprintf(w, sizeof w, "%s.%s", where, key);
    if (!json_is_integer(v))
        return bad(r, w, "%s: missing or not an integer", key);
    long x = (long)json_integer_value(v);
    if (x < min || x > max)
        return bad(r, w, "%s: out of range", key);
    *out = x;
    return ZS_OK;
}

/* A number in [0, max]: jansson refuses non-finite JSON numbers, so this
 * bounds every time and size a plan carries, and sums over the op limit
 * stay finite. */
static int get_num(rd *r, json_t *o, const char *key, double max, double *out, const char *where)
{
    json_t *v = json_object_get(o, key);
    char w[600];
    snprintf(w, sizeof w, "%s.%s", where, key);
    if (!json_is_number(v))
        return bad(r, w, "%s: missing or not a number", key);
    double x = json_number_value(v);
    if (!(x >= 0 && x <= max)) {
        char fix[128], full[1200];
        snprintf(fix, sizeof fix, "give a number in [0, %g]", max);
        snprintf(full, sizeof full, "%s: %s", r->path, w);
        return zs_err_set(r->e, ZS_EINPUT, full, fix, "%s: %g out of range", key, x);
    }
    *out = x;
    return ZS_OK;
}

static int get_str(rd *r, json_t *o, const char *key, char *buf, size_t n)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return bad(r, key, "%s: missing or not a string", key);
    snprintf(buf, n, "%s", json_string_value(v));
    return ZS_OK;
}

/* An array of n integers (all in [min, max]) into out. */
static int int_tuple(rd *r, json_t *a, int n, long min, long max, long *out, const char *where)
{
    if (!json_is_array(a) || (int)json_array_size(a) != n)
        return bad(r, where, "%s: expected an array of the right length", "tuple");
    for (int i = 0; i < n; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
            return bad(r, where, "%s: bad integer in tuple", "tuple");
        out[i] = (long)json_integer_value(v);
    }
    return ZS_OK;
}

static int parse_kind(const char *name, int *kind, int *ck)
{
    for (int k = 0; k < ZS_CK_NKINDS; k++)
        if (strcmp(name, zs_compute_kind_name(k)) == 0) {
            *kind = ZS_OP_COMPUTE;
            *ck = k;
            return 1;
        }
    for (int k = ZS_OP_SEND; k < ZS_OP_NKINDS; k++)
        if (strcmp(name, zs_op_kind_name(k)) == 0) {
            *kind = k;
            *ck = 0;
            return 1;
        }
    return 0;
}

/* A failure of the schedule builder while reading: the builder's message
 * at the file (input the builder refuses is bad input). */
static int built(rd *r, const zs_schedule *s, const char *where)
{
    int rc = zs_schedule_check(s, r->e);
    if (rc && r->e) {
        snprintf(r->e->where, sizeof r->e->where, "%s: %s", r->path, where);
        if (rc == ZS_EINVALID) {
            rc = r->e->code = ZS_EINPUT;
            snprintf(r->e->fix, sizeof r->e->fix,
                     "the file must be a schedule written by `zepsim plan --dump`");
        }
    }
    return rc;
}

static int over_ops(rd *r, const char *what)
{
    char fix[200];
    snprintf(fix, sizeof fix,
             "plan a smaller batch, or raise the limit with the environment variable "
             "ZEPSIM_MAX_PLAN_OPS (now %lld)",
             (long long)r->lim.ops);
    return zs_err_set(r->e, ZS_EINPUT, r->path, fix, "more %s than the limit of %lld", what,
                      (long long)r->lim.ops);
}

/* A send or receive (and its carry list) of rank; *got its index. */
static int read_p2p(rd *r, zs_schedule *s, int rank, int kind, int stream, const char *lab,
                    json_t *o, const int64_t *deps, int ndeps, int64_t *got, const char *where)
{
    long peer, tag, v[2];
    double bytes;
    int rc;
    if ((rc = get_int(r, o, "peer", 0, s->nranks - 1, &peer, where)) ||
        (rc = get_int(r, o, "tag", INT32_MIN, INT32_MAX, &tag, where)) ||
        (rc = get_num(r, o, "bytes", ZS_PLAN_MAX_BYTES, &bytes, where)))
        return rc;
    if (peer == rank)
        return bad(r, where, "%s: a rank cannot send to itself", "peer");
    json_t *cv = json_object_get(o, "carry");
    if (cv &&
        ((rc = int_tuple(r, cv, 2, 0, INT64_MAX, v, where)) || v[1] < 1 || v[0] + v[1] > s->ncarry))
        return rc ? rc : bad(r, where, "%s: entry range outside the carry list", "carry");
    *got = kind == ZS_OP_SEND
               ? zs_sched_send(s, rank, stream, lab, (int)peer, (int)tag, bytes, deps, ndeps)
               : zs_sched_recv(s, rank, stream, lab, (int)peer, (int)tag, bytes, deps, ndeps);
    if (cv)
        zs_sched_set_carry(s, rank, *got, v[0], (int)v[1]);
    return ZS_OK;
}

static int read_op(rd *r, zs_schedule *s, int rank, int64_t idx, json_t *o)
{
    char where[128];
    snprintf(where, sizeof where, "rank %d op %lld", rank, (long long)idx);
    json_t *kv = json_object_get(o, "op");
    int kind, ck;
    if (!json_is_string(kv) || !parse_kind(json_string_value(kv), &kind, &ck))
        return bad(r, where, "%s: unknown or missing op kind", "op");
    long stream, label;
    int rc;
    if ((rc = get_int(r, o, "stream", 0, s->nstreams - 1, &stream, where)) ||
        (rc = get_int(r, o, "label", 0, s->nlabels - 1, &label, where)))
        return rc;
    int64_t deps[64];
    int ndeps = 0;
    json_t *dv = json_object_get(o, "deps");
    if (dv) {
        if (!json_is_array(dv) || json_array_size(dv) > 64)
            return bad(r, where, "%s: must be an array of at most 64 op indices", "deps");
        for (size_t i = 0; i < json_array_size(dv); i++) {
            json_t *d = json_array_get(dv, i);
            if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) >= idx)
                return bad(r, where, "%s: must name earlier ops of the same rank", "deps");
            deps[ndeps++] = json_integer_value(d);
        }
    }
    const char *lab = s->labels[label];
    int64_t got = -1;
    double t = 0, bytes = 0;
    long v[5];
    switch (kind) {
    case ZS_OP_COMPUTE:
        if ((rc = get_num(r, o, "t", ZS_PLAN_MAX_SECONDS, &t, where)))
            return rc;
        if (ck <= ZS_CK_ATTN_BWD) {
            long heads;
            if ((rc = get_int(r, o, "heads", 1, 32767, &heads, where)) ||
                (rc = int_tuple(r, json_object_get(o, "blocks"), 2, 0, INT32_MAX, v, where)))
                return rc;
            if (v[1] < 1 || v[0] + v[1] > s->nblocks)
                return bad(r, where, "%s: block range outside the block list", "blocks");
            if ((r->refs += v[1]) > r->lim.ops)
                return over_ops(r, "attention block references");
            got = zs__sched_attn_ref(s, rank, (int)stream, lab, ck == ZS_CK_ATTN_BWD, v[0],
                                     (int)v[1], (int)heads, t, deps, ndeps);
        } else if (ck == ZS_CK_GEMM) {
            json_t *a = json_object_get(o, "mnk");
            if (!json_is_array(a) || json_array_size(a) != 3)
                return bad(r, where, "%s: expected [m, n, k]", "mnk");
            double mnk[3];
            for (int i = 0; i < 3; i++) {
                json_t *x = json_array_get(a, (size_t)i);
                if (!json_is_number(x) || !(json_number_value(x) >= 0) ||
                    json_number_value(x) > ZS_PLAN_MAX_DIM)
                    return bad(r, where, "%s: expected numbers in [0, 1e12]", "mnk");
                mnk[i] = json_number_value(x);
            }
            got = zs_sched_gemm(s, rank, (int)stream, lab, mnk[0], mnk[1], mnk[2], t, deps, ndeps);
        } else {
            if ((rc = get_num(r, o, "bytes", ZS_PLAN_MAX_BYTES, &bytes, where)))
                return rc;
            got = zs_ck_is_host_copy(ck)
                      ? zs_sched_host_copy(s, rank, (int)stream, lab, ck == ZS_CK_D2H, bytes, t,
                                           deps, ndeps)
                      : zs_sched_elementwise(s, rank, (int)stream, lab, bytes, t, deps, ndeps);
        }
        break;
    case ZS_OP_SEND:
    case ZS_OP_RECV:
        if ((rc = read_p2p(r, s, rank, kind, (int)stream, lab, o, deps, ndeps, &got, where)))
            return rc;
        break;
    case ZS_OP_COLL: {
        long group;
        char kname[32];
        int ckind = -1;
        if ((rc = get_int(r, o, "group", 0, s->ngroups - 1, &group, where)) ||
            (rc = get_num(r, o, "bytes", ZS_PLAN_MAX_BYTES, &bytes, where)) ||
            (rc = get_str(r, o, "kind", kname, sizeof kname)))
            return rc;
        for (int k = 0; k < ZS_COLL_NKINDS; k++)
            if (strcmp(kname, zs_coll_kind_name(k)) == 0)
                ckind = k;
        if (ckind < 0)
            return bad(r, where, "%s: unknown collective kind", "kind");
        got = zs_sched_coll(s, rank, (int)stream, lab, (int)group, (zs_coll_kind)ckind, bytes, deps,
                            ndeps);
        break;
    }
    case ZS_OP_MARKER: {
        long mk, value;
        if ((rc = get_int(r, o, "marker", 0, ZS_MARK_NKINDS - 1, &mk, where)) ||
            (rc = get_int(r, o, "value", INT32_MIN, INT32_MAX, &value, where)))
            return rc;
        got = zs_sched_marker(s, rank, (zs_marker_kind)mk, (int)value);
        break;
    }
    }
    if (got < 0)
        return built(r, s, where);
    if (got != idx)
        return bad(r, where, "%s: inconsistent op", "op");
    json_t *fl = json_object_get(o, "flags");
    if (fl) {
        if (!json_is_integer(fl) || json_integer_value(fl) < 0 || json_integer_value(fl) > 65535)
            return bad(r, where, "%s: must be a small non-negative integer", "flags");
        s->ranks[rank].ops[idx].flags = (uint16_t)json_integer_value(fl);
    }
    return ZS_OK;
}

/* The header: version, shape, provenance and layout; a new schedule. */
static int read_header(rd *r, json_t *root, zs_schedule **out)
{
    int rc;
    if (!json_is_object(root) || !json_is_integer(json_object_get(root, "zepsim_schedule")))
        return bad(r, "top level", "%s: not a zepsim schedule dump", "zepsim_schedule");
    if (json_integer_value(json_object_get(root, "zepsim_schedule")) != ZS_DUMP_VERSION)
        return bad(r, "zepsim_schedule", "%s: unsupported dump version", "version");
    long nranks, layers, micro, heads;
    json_t *nr = json_object_get(root, "nranks");
    if (json_is_integer(nr) && json_integer_value(nr) > r->lim.ranks) {
        char fix[200], w[600];
        snprintf(fix, sizeof fix,
                 "plan for fewer GPUs, or raise the limit with the environment variable "
                 "ZEPSIM_MAX_PLAN_RANKS (now %lld)",
                 (long long)r->lim.ranks);
        snprintf(w, sizeof w, "%s: nranks", r->path);
        return zs_err_set(r->e, ZS_EINPUT, w, fix, "%lld ranks: more than the limit of %lld",
                          (long long)json_integer_value(nr), (long long)r->lim.ranks);
    }
    if ((rc = get_int(r, root, "nranks", 1, 1 << 20, &nranks, "top")) ||
        (rc = get_int(r, root, "layers", 1, 1 << 16, &layers, "top")) ||
        (rc = get_int(r, root, "heads", 1, 32767, &heads, "top")) ||
        (rc = get_int(r, root, "micro_batches", 1, 1 << 20, &micro, "top")))
        return rc;
    zs_schedule *s = zs_schedule_new((int)nranks);
    if (!s)
        return zs_err_set(r->e, ZS_ENOMEM, r->path, NULL, "out of memory");
    s->layers = (int)layers;
    s->heads = (int)heads;
    s->micro_batches = (int)micro;
    json_t *dims = json_object_get(root, "dims");
    long tp, cp, pp, dp;
    if ((rc = get_str(r, root, "method", s->method, sizeof s->method)) ||
        (rc = get_str(r, root, "model", s->model, sizeof s->model)) ||
        (rc = get_str(r, root, "cluster", s->cluster, sizeof s->cluster)) ||
        (rc = get_str(r, root, "cost", s->cost_desc, sizeof s->cost_desc)))
        goto fail;
    if (!json_is_object(dims)) {
        rc = bad(r, "dims", "%s: missing", "dims");
        goto fail;
    }
    if ((rc = get_int(r, dims, "tp", 1, nranks, &tp, "dims")) ||
        (rc = get_int(r, dims, "cp", 1, nranks, &cp, "dims")) ||
        (rc = get_int(r, dims, "pp", 1, nranks, &pp, "dims")) ||
        (rc = get_int(r, dims, "dp", 1, nranks, &dp, "dims")))
        goto fail;
    s->dims = (zs_layout_dims){(int)tp, (int)cp, (int)pp, (int)dp};
    *out = s;
    return ZS_OK;
fail:
    zs_schedule_free(s);
    return rc;
}

/* Stream names, labels and groups: each must come back at its index. */
static int read_names(rd *r, json_t *root, zs_schedule *s)
{
    json_t *a = json_object_get(root, "streams");
    if (!json_is_array(a) || json_array_size(a) < 2 || json_array_size(a) > ZS_MAX_STREAMS)
        return bad(r, "streams", "%s: expected 2 to 4 stream names", "streams");
    s->nstreams = 0;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *n = json_array_get(a, i);
        if (!json_is_string(n) || zs_schedule_add_stream(s, json_string_value(n)) < 0)
            return bad(r, "streams", "%s: bad stream name", "streams");
    }
    a = json_object_get(root, "labels");
    if (!json_is_array(a))
        return bad(r, "labels", "%s: missing", "labels");
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *n = json_array_get(a, i);
        if (!json_is_string(n) || zs_schedule_label(s, json_string_value(n)) != (int)i)
            return bad(r, "labels", "%s: labels must be distinct strings", "labels");
    }
    a = json_object_get(root, "groups");
    if (!json_is_array(a))
        return bad(r, "groups", "%s: missing", "groups");
    for (size_t g = 0; g < json_array_size(a); g++) {
        json_t *ga = json_array_get(a, g);
        int n = json_is_array(ga) ? (int)json_array_size(ga) : 0;
        int *ranks = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
        int okg = n > 0 && ranks;
        for (int i = 0; okg && i < n; i++) {
            json_t *x = json_array_get(ga, (size_t)i);
            okg = json_is_integer(x) && json_integer_value(x) >= 0 &&
                  json_integer_value(x) < s->nranks;
            if (okg)
                ranks[i] = (int)json_integer_value(x);
        }
        /* Tags are optional (dumps before they existed): 0 by default. */
        json_t *tags = json_object_get(root, "group_tags");
        json_t *tv = json_is_array(tags) ? json_array_get(tags, g) : NULL;
        int tag = json_is_integer(tv) ? (int)json_integer_value(tv) : 0;
        int got = okg ? zs_schedule_group_tagged(s, ranks, n, tag) : -1;
        free(ranks);
        if (got != (int)g) {
            char w[64];
            snprintf(w, sizeof w, "groups[%zu]", g);
            return bad(r, w, "%s: a group is a list of distinct ranks, groups are distinct",
                       "groups");
        }
    }
    return ZS_OK;
}

/* The plan: document lengths and pieces. */
static int read_plan(rd *r, json_t *root, zs_schedule *s)
{
    long v[6];
    json_t *a = json_object_get(root, "docs");
    if (!json_is_array(a))
        return bad(r, "docs", "%s: missing", "docs");
    int32_t nd = (int32_t)json_array_size(a);
    int32_t *len = malloc(sizeof(int32_t) * (size_t)(nd > 0 ? nd : 1));
    if (!len)
        return zs_err_set(r->e, ZS_ENOMEM, r->path, NULL, "out of memory");
    for (int32_t d = 0; d < nd; d++) {
        json_t *x = json_array_get(a, (size_t)d);
        if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > INT32_MAX) {
            free(len);
            char w[64];
            snprintf(w, sizeof w, "docs[%d]", d);
            return bad(r, w, "%s: document lengths are positive integers", "docs");
        }
        len[d] = (int32_t)json_integer_value(x);
    }
    zs_schedule_set_docs(s, len, nd);
    free(len);
    int rc = built(r, s, "docs");
    if (rc)
        return rc;
    a = json_object_get(root, "pieces");
    if (!json_is_array(a))
        return bad(r, "pieces", "%s: missing", "pieces");
    for (size_t i = 0; i < json_array_size(a); i++) {
        char w[64];
        snprintf(w, sizeof w, "pieces[%zu]", i);
        if ((rc = int_tuple(r, json_array_get(a, i), 6, 0, INT32_MAX, v, w)))
            return rc;
        if (v[0] >= nd || v[3] >= s->nranks || v[4] > 1 || v[5] > 32767)
            return bad(r, w, "%s: doc, rank, layout or micro-batch out of range", "piece");
        zs_schedule_add_piece(s, (int32_t)v[0], (int32_t)v[1], (int32_t)v[2], (int32_t)v[3],
                              (zs_layout)v[4], (int)v[5]);
        if ((rc = built(r, s, w)))
            return rc;
    }
    return ZS_OK;
}

/* The attention block pool, as dumped. */
static int read_blocks(rd *r, json_t *root, zs_schedule *s)
{
    long v[6];
    json_t *a = json_object_get(root, "blocks");
    if (!json_is_array(a))
        return bad(r, "blocks", "%s: missing", "blocks");
    size_t nb = json_array_size(a);
    s->blocks = malloc(sizeof(zs_attn_block) * (nb > 0 ? nb : 1));
    s->blocks_cap = (int64_t)(nb > 0 ? nb : 1);
    if (!s->blocks)
        return zs_err_set(r->e, ZS_ENOMEM, r->path, NULL, "out of memory");
    for (size_t i = 0; i < nb; i++) {
        char w[64];
        snprintf(w, sizeof w, "blocks[%zu]", i);
        int rc = int_tuple(r, json_array_get(a, i), 5, 0, INT32_MAX, v, w);
        if (rc)
            return rc;
        if (v[0] >= s->ndocs)
            return bad(r, w, "%s: document index out of range", "block");
        s->blocks[i] = (zs_attn_block){(int32_t)v[0], (int32_t)v[1], (int32_t)v[2], (int32_t)v[3],
                                       (int32_t)v[4]};
    }
    s->nblocks = (int64_t)nb;
    return ZS_OK;
}

/* The carry pool, as dumped (optional: dumps before it existed have none). */
static int read_carry(rd *r, json_t *root, zs_schedule *s)
{
    json_t *a = json_object_get(root, "carry");
    if (!a)
        return ZS_OK;
    if (!json_is_array(a))
        return bad(r, "carry", "%s: not an array", "carry");
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        json_t *d = json_array_get(e, 0), *b = json_array_get(e, 1);
        char w[64];
        snprintf(w, sizeof w, "carry[%zu]", i);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(d) ||
            json_integer_value(d) < 0 || json_integer_value(d) >= s->ndocs || !json_is_number(b) ||
            !(json_number_value(b) >= 0) || json_number_value(b) > ZS_PLAN_MAX_BYTES)
            return bad(r, w, "%s: expected [document, bytes]", "carry");
        zs_carry c = {(int32_t)json_integer_value(d), json_number_value(b)};
        zs_schedule_carry(s, &c, 1);
        int rc = built(r, s, w);
        if (rc)
            return rc;
    }
    return ZS_OK;
}

/* Before anything is built: the segments of every rank tile its ops, no
 * segment repeats more often than the plan has layers (a segment is one
 * layer's ops), and the executed ops stay within the limit, so a small file
 * cannot ask for hours of work (a repeat of 2^31 - 1 did). */
static int check_work(rd *r, json_t *ranks, long layers)
{
    int64_t exec = 0;
    long v[3];
    for (size_t rk = 0; rk < json_array_size(ranks); rk++) {
        json_t *ro = json_array_get(ranks, rk);
        json_t *segs = json_object_get(ro, "segments"), *ops = json_object_get(ro, "ops");
        char w[64];
        snprintf(w, sizeof w, "ranks[%zu]", rk);
        if (!json_is_array(segs) || !json_is_array(ops))
            return bad(r, w, "%s: needs segments and ops", "rank");
        int64_t next = 0;
        for (size_t si = 0; si < json_array_size(segs); si++) {
            int rc = int_tuple(r, json_array_get(segs, si), 3, 0, INT32_MAX, v, w);
            if (rc)
                return rc;
            if (v[0] != next || v[2] < 1 || v[0] + v[1] > (long)json_array_size(ops))
                return bad(r, w, "%s: segments must tile the ops in order", "segments");
            if (v[2] > layers) {
                char fix[160];
                snprintf(fix, sizeof fix,
                         "a segment is a layer's ops repeated once per layer: at most %ld", layers);
                char where[600];
                snprintf(where, sizeof where, "%s: ranks[%zu].segments[%zu]", r->path, rk, si);
                return zs_err_set(r->e, ZS_EINPUT, where, fix,
                                  "repeat %ld is more than the plan's %ld layers", v[2], layers);
            }
            next = v[0] + v[1];
            if ((exec += (int64_t)v[1] * v[2]) > r->lim.ops)
                return over_ops(r, "executed ops");
        }
        if (next != (int64_t)json_array_size(ops))
            return bad(r, w, "%s: ops outside any segment", "segments");
    }
    return ZS_OK;
}

/* Every rank's segments and ops, once check_work has seen them. */
static int read_ranks(rd *r, json_t *root, zs_schedule *s)
{
    int rc;
    json_t *a = json_object_get(root, "ranks");
    if (!json_is_array(a) || (long)json_array_size(a) != s->nranks)
        return bad(r, "ranks", "%s: expected one entry per rank", "ranks");
    if ((rc = check_work(r, a, s->layers)))
        return rc;
    for (int rk = 0; rk < s->nranks; rk++) {
        json_t *ro = json_array_get(a, (size_t)rk);
        json_t *segs = json_object_get(ro, "segments"), *ops = json_object_get(ro, "ops");
        char w[64];
        snprintf(w, sizeof w, "ranks[%d]", rk);
        for (size_t si = 0; si < json_array_size(segs); si++) {
            json_t *sg = json_array_get(segs, si);
            long op0 = (long)json_integer_value(json_array_get(sg, 0));
            long nops = (long)json_integer_value(json_array_get(sg, 1));
            zs_schedule_begin_segment(s, rk, (int)json_integer_value(json_array_get(sg, 2)));
            if ((rc = built(r, s, w)))
                return rc;
            for (long i = op0; i < op0 + nops; i++)
                if ((rc = read_op(r, s, rk, i, json_array_get(ops, (size_t)i))))
                    return rc;
        }
    }
    return ZS_OK;
}

static int read_doc(rd *r, json_t *root, zs_schedule **out)
{
    zs_schedule *s = NULL;
    int rc = read_header(r, root, &s);
    if (rc)
        return rc;
    if ((rc = read_names(r, root, s)) || (rc = read_plan(r, root, s)) ||
        (rc = read_blocks(r, root, s)) || (rc = read_carry(r, root, s)) ||
        (rc = read_ranks(r, root, s))) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

int zs_schedule_load_file(const char *path, zs_schedule **out, zs_err *e)
{
    char *text = NULL;
    size_t len = 0;
    int rc = zs_read_file(path, "check the path; the file must be a dump from `zepsim plan --dump`",
                          &text, &len, e);
    if (rc)
        return rc;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root) {
        char where[600];
        snprintf(where, sizeof where, "%s:%d:%d", path, je.line, je.column);
        return zs_err_set(e, ZS_EINPUT, where, "the file must be a dump from `zepsim plan --dump`",
                          "cannot read schedule (%s)", je.text);
    }
    rd r = {path, e, g_limits, 0};
    rc = read_doc(&r, root, out);
    json_decref(root);
    return rc;
}

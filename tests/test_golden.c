/* Golden schedules: the printed schedule (layout, groups, plan pieces and
 * every op through zs_op_print) of one small plan per registered planner,
 * compared with tests/golden/<method>.txt, so that any change of a
 * planner's output shows up in review as a diff of that file.
 *
 * The plans: llama-550m on 2 nodes of cluster-a (16 GPUs), one fixed batch
 * of seven documents (a long one that needs a ring across nodes, a middle
 * one, short ones), options that fit 16 GPUs where a method's defaults do
 * not. A layer's ops are stored once with their repeat count, so the files
 * stay small.
 *
 * After an intended change of a planner, regenerate and review the diff:
 *     ZS_UPDATE_GOLDEN=1 build/tests/test_golden
 *     git diff tests/golden/
 * A mismatch names the first differing line and leaves the new output in
 * build/tests/tmp/test_golden/<method>.txt. */
#include <stdlib.h>

#include "zs_afile.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

/* Per method: options that make its plan fit 16 GPUs and exercise tensor
 * and pipeline parallelism where the method has them. */
static const struct {
    const char *method, *opts;
} cases[] = {
    {"local", "tp=2"},
    {"te-cp", "cp=4"},
    {"llama-cp", "cp=4"},
    {"ulysses", "cp=4"},
    {"zeppelin", "chunk_kib=65536"},
    {"hybrid-dp", "cp=4"},
    {"plain-4d", "tp=2,cp=2,pp=2"},
    {"fixed-4d", "tp=2,cp=2,pp=2"},
    {"wlb-llm", "tp=2,cp=2,pp=2"},
    {"usp", "cp=4,ulysses=2"},
    {"flashcp", "cp=4"},
    {"dyn-cp", "max_seqlen=32768"},
    {"dcp", "tp=2,block=8192"},
    {"flexsp", ""},
    {"bytescale", ""},
    {"distca", "tp=2"},
    {"auto", ""},
};

static const char *opts_of(const char *method)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].method, method) == 0)
            return cases[i].opts;
    return NULL;
}

/* Whether rank r runs its TP leader t0's program with peers and group
 * members shifted by r - t0 (TP groups, which hold both, excepted): such a
 * copy is printed as one line. */
static int tp_copy(const zs_schedule *s, int t0, int r)
{
    const zs_rank_prog *p = &s->ranks[t0], *q = &s->ranks[r];
    int o = r - t0;
    if (p->nops != q->nops || p->nsegs != q->nsegs || p->ndeps != q->ndeps ||
        memcmp(p->segs, q->segs, sizeof(zs_segment) * (size_t)p->nsegs) != 0 ||
        memcmp(p->deps, q->deps, sizeof(int32_t) * (size_t)p->ndeps) != 0)
        return 0;
    for (int64_t i = 0; i < p->nops; i++) {
        zs_op a = p->ops[i], b = q->ops[i];
        if (a.kind == ZS_OP_SEND || a.kind == ZS_OP_RECV)
            a.u.p2p.peer += o;
        if (a.kind == ZS_OP_COLL) {
            const zs_group *ga = &s->groups[a.u.coll.group], *gb = &s->groups[b.u.coll.group];
            int same = ga->n == gb->n && ga->tag == gb->tag;
            int tp = a.u.coll.group == b.u.coll.group;
            for (int j = 0; same && !tp && j < ga->n; j++)
                same = gb->ranks[j] == ga->ranks[j] + o;
            if (!same)
                return 0;
            a.u.coll.group = b.u.coll.group;
        }
        if (memcmp(&a, &b, sizeof a) != 0)
            return 0;
    }
    return 1;
}

static void print_schedule(FILE *f, const zs_schedule *s, const char *opts)
{
    fprintf(f, "# %s --opt '%s': %s on %s, %d ranks, tp=%d cp=%d pp=%d dp=%d, %d micro-batches\n",
            s->method, opts, s->model, s->cluster, s->nranks, s->dims.tp, s->dims.cp, s->dims.pp,
            s->dims.dp, s->micro_batches);
    fprintf(f, "streams");
    for (int i = 0; i < s->nstreams; i++)
        fprintf(f, " %s", s->stream_names[i]);
    fprintf(f, "\ngroups %d\n", s->ngroups);
    for (int32_t g = 0; g < s->ngroups; g++) {
        fprintf(f, "g%d tag=%d:", g, s->groups[g].tag);
        for (int i = 0; i < s->groups[g].n; i++)
            fprintf(f, " %d", s->groups[g].ranks[i]);
        fputc('\n', f);
    }
    fprintf(f, "pieces %lld (doc [t0, t1) rank layout micro)\n", (long long)s->npieces);
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *p = &s->pieces[i];
        fprintf(f, "d%d [%d, %d) r%d %s %d\n", p->doc, p->t0, p->t1, p->rank,
                p->layout == ZS_LAYOUT_ATTN ? "attn" : "linear", p->micro);
    }
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        int t0 = r - r % s->dims.tp;
        if (r != t0 && tp_copy(s, t0, r)) {
            fprintf(f, "rank %d: %lld ops, rank %d's with peers +%d\n", r, (long long)p->nops, t0,
                    r - t0);
            continue;
        }
        fprintf(f, "rank %d: %lld ops\n", r, (long long)p->nops);
        for (int32_t g = 0; g < p->nsegs; g++) {
            fprintf(f, "segment x%d\n", p->segs[g].repeat);
            for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
                const zs_op *op = &p->ops[i];
                zs_op_print(f, s, r, i);
                if (op->ndeps > 0 || op->flags) {
                    /* Dependencies and flags are decisions too. */
                    fprintf(f, "  deps");
                    const int32_t *d = zs_schedule_deps(s, r, op);
                    for (int j = 0; j < op->ndeps; j++)
                        fprintf(f, " #%d", d[j]);
                    if (op->flags)
                        fprintf(f, " flags=%u", (unsigned)op->flags);
                    fputc('\n', f);
                }
            }
        }
    }
}

/* llama-550m on the golden cluster (tests/golden/cluster.json: 2 nodes of
 * 4 GPUs, 2 NICs each), analytic costs, default memory configuration. */
static void golden_env(zs_test_env *v, const char *opts)
{
    zs_err e;
    char cl[1024];
    snprintf(cl, sizeof cl, "%s/tests/golden/cluster.json", ZS_SOURCE_DIR);
    ZS_ASSERT_OK(zs_model_load("llama-550m", &v->m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load(cl, 2, &v->c, &e), &e);
    v->cost = zs_cost_analytic_new(&v->m, &v->c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v->cost);
    zs_opts_init(&v->opts);
    if (*opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, &e), &e);
    v->ctx = (zs_plan_ctx){&v->m, &v->c, v->cost, zs_mem_cfg_default(), &v->opts, 1};
}

/* The batch every method plans: lengths chosen so that Zeppelin and
 * hybrid-dp use all their classes (local, intra-node ring, ring across
 * nodes) while every method fits 16 GPUs. */
static zs_batch *golden_batch(void)
{
    static const int32_t len[] = {120000, 30000, 9000, 4096, 2500, 700, 64};
    return zs_batch_from_lengths(len, (int32_t)(sizeof len / sizeof len[0]));
}

/* The first line where a and b differ (1-based), 0 when equal. */
static int first_diff(const char *a, const char *b, char *la, char *lb, size_t n)
{
    int line = 1;
    while (*a || *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t na = ea ? (size_t)(ea - a) : strlen(a), nb = eb ? (size_t)(eb - b) : strlen(b);
        if (na != nb || memcmp(a, b, na) != 0 || !ea != !eb) {
            snprintf(la, n, "%.*s", (int)na, a);
            snprintf(lb, n, "%.*s", (int)nb, b);
            return line;
        }
        a = ea ? ea + 1 : a + na;
        b = eb ? eb + 1 : b + nb;
        line++;
    }
    return 0;
}

static void check_method(const zs_planner_ops *p, int update)
{
    const char *opts = opts_of(p->name);
    if (!opts) {
        fprintf(stderr, "test_golden: method %s has no golden case: add one to cases[]\n", p->name);
        CU_FAIL("a registered method without a golden case");
        return;
    }
    zs_test_env v;
    golden_env(&v, opts);
    zs_batch *b = golden_batch();
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_plan_batch(p, &v.ctx, b, 1, &s, &rep, &e);
    if (rc)
        fprintf(stderr, "%s: ", p->name);
    ZS_ASSERT_OK(rc, &e);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    print_schedule(f, s, opts);
    fclose(f);
    char path[1024], out[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s.txt", ZS_SOURCE_DIR, p->name);
    snprintf(out, sizeof out, "%s/%s.txt", zs_test_tmpdir(), p->name);
    if (update) {
        ZS_ASSERT_OK(zs_afile_write(path, text, len, &e), &e);
        printf("wrote %s (%zu bytes)\n", path, len);
    } else {
        char *want = zs_test_slurp(path);
        if (!want)
            fprintf(stderr, "%s: missing; generate it with ZS_UPDATE_GOLDEN=1 %s\n", path,
                    "build/tests/test_golden");
        CU_ASSERT_PTR_NOT_NULL(want);
        char la[256], lb[256];
        int line = want ? first_diff(want, text, la, lb, sizeof la) : 0;
        if (line) {
            zs_afile_write(out, text, len, &e);
            fprintf(stderr,
                    "%s: line %d differs\n  expected: %s\n  got:      %s\n"
                    "the whole output is in %s; if the change is intended, run "
                    "ZS_UPDATE_GOLDEN=1 build/tests/test_golden and review the diff\n",
                    path, line, la, lb, out);
        }
        CU_ASSERT(want && line == 0);
        free(want);
    }
    free(text);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_every_planner(void)
{
    const char *u = getenv("ZS_UPDATE_GOLDEN");
    int update = u && *u && strcmp(u, "0") != 0;
    int n = 0;
    for (const zs_planner_ops *p; (p = zs_planner_at(n)); n++)
        check_method(p, update);
    ZS_ASSERT_INT_EQ(n, zs_planner_count());
    /* Every golden case names a registered method. */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(zs_planner_find(cases[i].method));
}

/* The comparison itself can fail: a changed line is found and named. */
static void test_first_diff(void)
{
    char a[64], b[64];
    ZS_ASSERT_INT_EQ(first_diff("x\ny\n", "x\ny\n", a, b, sizeof a), 0);
    ZS_ASSERT_INT_EQ(first_diff("x\ny\nz\n", "x\nY\nz\n", a, b, sizeof a), 2);
    CU_ASSERT_STRING_EQUAL(a, "y");
    CU_ASSERT_STRING_EQUAL(b, "Y");
    ZS_ASSERT_INT_EQ(first_diff("x\n", "x\ny\n", a, b, sizeof a), 2);
    ZS_ASSERT_INT_EQ(first_diff("x\n", "x", a, b, sizeof a), 1);
}

int main(int argc, char **argv)
{
    static const zs_test_case tests[] = {
        {"first_diff", test_first_diff}, {"every_planner", test_every_planner}, {NULL, NULL}};
    static const zs_test_suite suites[] = {{"golden", tests}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

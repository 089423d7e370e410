/* The point env and the backend registry: `plan` (zs_point_plan_batch) and
 * `simulate` (zs_point_run) plan the same batch for every registered
 * method, each method gets the batcher its hook asks for, configuration
 * errors name the option at fault, every backend in the registry runs
 * a schedule, and the memory report counts the tokens alive at once. */
#include <stdlib.h>

#include "zs_backend.h"
#include "zs_hw.h"
#include "zs_machine.h"
#include "zs_fork.h"
#include "zs_point_env.h"
#include "zs_workers.h"
#include "zs_test.h"
#include "zs_pack.h"

/* A small study every method can plan: 2 nodes (16 GPUs) of cluster-a,
 * one iteration on the analytic backend; the 4D methods (those with a pp
 * option) get a layout that divides 16 GPUs. */
static void small_cfg(const zs_planner_ops *p, zs_point_cfg *c)
{
    zs_point_cfg_default(c);
    snprintf(c->method, sizeof c->method, "%s", p->name);
    snprintf(c->backend, sizeof c->backend, "analytic");
    c->nodes = 2;
    c->iterations = 1;
    for (int k = 0; p->options && p->options[k]; k++)
        if (!strcmp(p->options[k]->key, "pp"))
            snprintf(c->opts, sizeof c->opts, "tp=4,cp=2,pp=2");
}

/* plan's batch index 0 is simulate's first iteration: same tokens, same
 * planner figures, same schedule size. */
static void expect_same_batch(const zs_point_cfg *c)
{
    zs_err e;
    zs_err_clear(&e);
    zs_point_plan pl;
    zs_point_result r;
    ZS_ASSERT_OK(zs_point_plan_batch(c, 0, &pl, &e), &e);
    ZS_ASSERT_OK(zs_point_run(c, NULL, NULL, &r, &e), &e);
    ZS_ASSERT_INT_EQ(r.iterations, 1);
    ZS_ASSERT_INT_EQ((int64_t)r.tokens, pl.batch->tokens);
    ZS_ASSERT_INT_EQ(r.ops, zs_schedule_total_unrolled(pl.sched));
    ZS_ASSERT_REL(r.attn_imbalance, pl.rep.attn_imbalance, 0);
    ZS_ASSERT_REL(r.linear_imbalance, pl.rep.linear_imbalance, 0);
    if ((int64_t)r.tokens != pl.batch->tokens)
        fprintf(stderr, "method %s: plan and simulate disagree\n", c->method);
    zs_point_plan_clear(&pl);
    zs_point_result_clear(&r);
}

static void test_plan_is_simulate(void)
{
    for (int i = 0; i < zs_planner_count(); i++) {
        zs_point_cfg c;
        small_cfg(zs_planner_at(i), &c);
        expect_same_batch(&c);
    }
}

/* peak_mem (peak_mem_gib) is the memory model's state plus the activations
 * of the tokens one GPU holds alive at once (zs_plan_report max_live_*),
 * not of all of its micro-batches, for every method. */
static void test_peak_mem_live(void)
{
    for (int i = 0; i < zs_planner_count(); i++) {
        zs_point_cfg c;
        small_cfg(zs_planner_at(i), &c);
        zs_err e;
        zs_err_clear(&e);
        zs_point_plan pl;
        ZS_ASSERT_OK(zs_point_plan_batch(&c, 0, &pl, &e), &e);
        const zs_plan_report *r = &pl.rep;
        zs_mem_cfg mc = zs_mem_cfg_default();
        mc.zero_stage = c.zero_stage;
        mc.recompute = c.recompute;
        mc.tp = r->dims.tp;
        mc.pp = r->dims.pp;
        mc.dp = zs_cluster_gpus(&pl.cluster) / (mc.tp * mc.pp);
        zs_mem_breakdown mb;
        ZS_ASSERT_OK(zs_mem_breakdown_compute(&pl.model, &pl.cluster.gpu, &mc, &mb, &e), &e);
        int64_t live = r->max_live_attn_tokens > r->max_live_linear_tokens
                           ? r->max_live_attn_tokens
                           : r->max_live_linear_tokens;
        CU_ASSERT(live > 0);
        CU_ASSERT(live <= r->max_attn_tokens || live <= r->max_linear_tokens);
        ZS_ASSERT_REL(pl.peak_mem, mb.static_bytes + mb.act_per_token * (double)live, 1e-12);
        zs_point_plan_clear(&pl);
    }
}

/* The case of issue 19: WLB-LLM on 8 nodes with 64K windows packs its own
 * batches (nmicro windows through the outlier queues), far more than the
 * greedy 16-GPU-group batch plan used to show. */
static void test_plan_is_simulate_wlb(void)
{
    zs_point_cfg c;
    small_cfg(zs_planner_find("wlb-llm"), &c);
    c.nodes = 8;
    c.context = 65536;
    c.opts[0] = '\0';
    expect_same_batch(&c);
    zs_err e;
    zs_err_clear(&e);
    zs_point_plan pl;
    ZS_ASSERT_OK(zs_point_plan_batch(&c, 0, &pl, &e), &e);
    CU_ASSERT(pl.batch->tokens > 8 * 8 / 16 * 65536); /* more than the greedy study's shape */
    CU_ASSERT_PTR_NOT_NULL(pl.batch->micro_of);       /* packed by the packer */
    zs_point_plan_clear(&pl);
}

/* Iterations run apart (zs_point_run_iter, as `compare` runs them, one
 * process each) and added in order give the sequential run's figures bit
 * for bit: for a greedy-batched method, for WLB-LLM (whose batcher keeps
 * outliers from one batch to the next) and for Zeppelin. */
static void expect_split_is_sequential(zs_point_cfg *c)
{
    zs_err e;
    zs_err_clear(&e);
    zs_point_result seq, par;
    ZS_ASSERT_OK(zs_point_run(c, NULL, NULL, &seq, &e), &e);
    memset(&par, 0, sizeof par);
    zs_point_acc acc;
    memset(&acc, 0, sizeof acc);
    zs_point_iter q;
    for (int it = c->iterations - 1; it >= 0; it--) { /* any order of runs ... */
        ZS_ASSERT_OK(zs_point_run_iter(c, it, &q, NULL, &e), &e);
        CU_ASSERT(q.wall_s > 0);
    }
    for (int it = 0; it < c->iterations; it++) { /* ... added in order */
        ZS_ASSERT_OK(zs_point_run_iter(c, it, &q, NULL, &e), &e);
        zs_point_add(&acc, &q, &par);
    }
    zs_point_finish(&acc, &par);
    ZS_ASSERT_INT_EQ(par.iterations, seq.iterations);
    ZS_ASSERT_INT_EQ(par.ops, seq.ops);
    ZS_ASSERT_INT_EQ(par.nodes, seq.nodes);
    ZS_ASSERT_INT_EQ(par.gpus, seq.gpus);
    const double a[] = {
        par.tokens,       par.seconds,        par.iter_time,        par.tokens_per_s,
        par.mfu,          par.compute_share,  par.exposed_share,    par.idle_share,
        par.max_nic_util, par.attn_imbalance, par.linear_imbalance, par.imbalance_degree,
        par.delay_iters,  par.peak_mem,       par.mem_capacity};
    const double b[] = {
        seq.tokens,       seq.seconds,        seq.iter_time,        seq.tokens_per_s,
        seq.mfu,          seq.compute_share,  seq.exposed_share,    seq.idle_share,
        seq.max_nic_util, seq.attn_imbalance, seq.linear_imbalance, seq.imbalance_degree,
        seq.delay_iters,  seq.peak_mem,       seq.mem_capacity};
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++)
        if (memcmp(&a[k], &b[k], sizeof a[k])) {
            CU_FAIL("split and sequential figures differ");
            fprintf(stderr, "%s figure %zu: %.17g split, %.17g sequential\n", c->method, k, a[k],
                    b[k]);
        }
    ZS_ASSERT_STR_EQ(par.notes, seq.notes);
    ZS_ASSERT_STR_EQ(par.why, seq.why);
    ZS_ASSERT_STR_EQ(par.cost_desc, seq.cost_desc);
    CU_ASSERT(seq.tokens_per_s > 0);
    zs_point_result_clear(&seq);
}

static void test_split_iterations(void)
{
    static const char *const methods[] = {"te-cp", "wlb-llm", "zeppelin"};
    for (int i = 0; i < 3; i++) {
        zs_point_cfg c;
        small_cfg(zs_planner_find(methods[i]), &c);
        c.iterations = 3;
        if (!strcmp(methods[i], "wlb-llm")) {
            c.opts[0] = '\0';
            c.nodes = 8;
            c.context = 65536;
        }
        expect_split_is_sequential(&c);
    }
    /* an iteration the point does not have */
    zs_point_cfg c;
    small_cfg(zs_planner_find("te-cp"), &c);
    zs_point_iter q;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_INT_EQ(zs_point_run_iter(&c, 1, &q, NULL, &e), ZS_EUSAGE); /* past the point's end */
    ZS_ASSERT_INT_EQ(zs_point_run_iter(&c, -1, &q, NULL, &e), ZS_EUSAGE);
}

/* The iteration workers (compare's and simulate's): the same figures as
 * zs_point_run, the last iteration's result when asked for, and a failing
 * point's earliest error without holding up the others. */
static void test_workers(void)
{
    zs_work_point pts[3];
    memset(pts, 0, sizeof pts);
    const char *const methods[] = {"te-cp", "plain-4d", "zeppelin"};
    for (int i = 0; i < 3; i++) {
        small_cfg(zs_planner_find(methods[i]), &pts[i].cfg);
        pts[i].cfg.iterations = 3;
        pts[i].want_last = i == 2;
    }
    snprintf(pts[1].cfg.opts, sizeof pts[1].cfg.opts, "tp=8,cp=4,pp=4"); /* 128 GPUs: fails */
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_workers_run(pts, 3, 2, NULL, NULL, &e), &e);
    ZS_ASSERT_INT_EQ(pts[1].rc, ZS_EINPUT); /* as zs_point_run says */
    ZS_ASSERT_STR_CONTAINS(pts[1].err.what, "does not divide");
    CU_ASSERT(pts[1].finished && pts[1].started == pts[1].done);
    CU_ASSERT(pts[1].started < 3); /* it started no more once one failed */
    for (int i = 0; i < 3; i += 2) {
        ZS_ASSERT_OK(pts[i].rc, &pts[i].err);
        zs_point_result seq;
        ZS_ASSERT_OK(zs_point_run(&pts[i].cfg, NULL, NULL, &seq, &e), &e);
        CU_ASSERT(!memcmp(&pts[i].r.tokens_per_s, &seq.tokens_per_s, sizeof seq.tokens_per_s));
        CU_ASSERT(!memcmp(&pts[i].r.compute_share, &seq.compute_share, sizeof seq.compute_share));
        ZS_ASSERT_INT_EQ(pts[i].r.ops, seq.ops);
        if (i == 2) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(pts[i].r.last);
            ZS_ASSERT_INT_EQ(pts[i].r.last->nranks, seq.last->nranks);
            CU_ASSERT(!memcmp(pts[i].r.last->ranks, seq.last->ranks,
                              sizeof *seq.last->ranks * (size_t)seq.last->nranks));
            CU_ASSERT(!memcmp(&pts[i].r.last->iter_time, &seq.last->iter_time, sizeof(double)));
        } else {
            CU_ASSERT_PTR_NULL(pts[i].r.last);
        }
        zs_point_result_clear(&pts[i].r);
        zs_point_result_clear(&seq);
    }
}

/* Folding's replay of a stream that lagged behind its component (session
 * 5): Zeppelin without routing or remapping on GitHub, 4 nodes. The
 * gradient all-reduce's stream entered the fold iteration after the other
 * streams had fallen asleep, so its last period had an all-reduce without
 * the rings' traffic: replayed, the mean exposed share fell from 22.2% to
 * 16.5% (analytic backend; the same on SimGrid). Each stream now replays
 * the period it had completed when the component decided, in that
 * period's phase. */
static void test_fold_lagging_stream(void)
{
    zs_point_cfg c;
    small_cfg(zs_planner_find("zeppelin"), &c);
    c.nodes = 4;
    snprintf(c.trace, sizeof c.trace, "github");
    snprintf(c.opts, sizeof c.opts, "routing=0,remap=0");
    zs_point_result r[2];
    zs_err e;
    zs_err_clear(&e);
    for (int f = 0; f < 2; f++) {
        c.fold = f;
        ZS_ASSERT_OK(zs_point_run(&c, NULL, NULL, &r[f], &e), &e);
    }
    CU_ASSERT(r[1].ops == r[0].ops);
    ZS_ASSERT_REL(r[1].iter_time, r[0].iter_time, 5e-3);
    ZS_ASSERT_NEAR(r[1].exposed_share, r[0].exposed_share, 5e-3);
    ZS_ASSERT_NEAR(r[1].idle_share, r[0].idle_share, 5e-3);
    ZS_ASSERT_NEAR(r[1].compute_share, r[0].compute_share, 5e-3);
    CU_ASSERT(r[0].exposed_share > 0.15); /* the case still has what it tests */
    for (int f = 0; f < 2; f++)
        zs_point_result_clear(&r[f]);
}

/* Each method gets the batcher its hook asks for. */
static void test_batchers(void)
{
    zs_err e;
    zs_err_clear(&e);
    for (int i = 0; i < zs_planner_count(); i++) {
        const zs_planner_ops *p = zs_planner_at(i);
        zs_point_cfg c;
        small_cfg(p, &c);
        zs_point_env *env = NULL;
        ZS_ASSERT_OK(zs_point_env_new(&c, &env, &e), &e);
        if (!p->batcher) { /* the study's shape: 16 GPUs / 16 x context */
            ZS_ASSERT_INT_EQ(env->batcher->budget, c.context);
        } else if (!strcmp(p->name, "wlb-llm")) {
            CU_ASSERT_PTR_NOT_NULL(zs_batcher_wlb_packer(env->batcher));
        } else { /* tp=4 cp=2 pp=2 on 16 GPUs: dp 1, nmicro = pp x dp = 2 windows */
            ZS_ASSERT_INT_EQ(env->batcher->budget, 2 * 131072);
        }
        zs_point_env_free(env);
    }
}

static void expect_env_error(const zs_point_cfg *c, int code, const char *needle)
{
    zs_err e;
    zs_err_clear(&e);
    zs_point_env *env = NULL;
    ZS_ASSERT_INT_EQ(zs_point_env_new(c, &env, &e), code);
    CU_ASSERT_PTR_NULL(env);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s | %s | %s", e.what, e.where, e.fix);
    ZS_ASSERT_STR_CONTAINS(msg, needle);
}

static void test_env_errors(void)
{
    zs_point_cfg c;
    small_cfg(zs_planner_find("te-cp"), &c);
    snprintf(c.method, sizeof c.method, "zeppeln");
    expect_env_error(&c, ZS_EUSAGE, "did you mean 'zeppelin'");
    snprintf(c.method, sizeof c.method, "te-cp");
    snprintf(c.backend, sizeof c.backend, "gpu");
    expect_env_error(&c, ZS_EUSAGE, "unknown backend 'gpu' | --backend");
    snprintf(c.backend, sizeof c.backend, "analytic");
    c.group = 5; /* 16 GPUs are no groups of 5 ... */
    expect_env_error(&c, ZS_EUSAGE, "--group");
    /* ... but a method with its own batcher does not use the group */
    small_cfg(zs_planner_find("plain-4d"), &c);
    c.group = 5;
    zs_err e;
    zs_err_clear(&e);
    zs_point_env *env = NULL;
    ZS_ASSERT_OK(zs_point_env_new(&c, &env, &e), &e);
    zs_point_env_free(env);
    /* a 4D layout that does not divide the GPUs fails in the hook */
    snprintf(c.opts, sizeof c.opts, "tp=8,cp=2,pp=4");
    expect_env_error(&c, ZS_EINPUT, "does not divide 16 GPUs");
}

/* Names resolve in any case to the registry's spelling. */
static void test_names(void)
{
    zs_point_cfg c;
    small_cfg(zs_planner_find("zeppelin"), &c);
    snprintf(c.method, sizeof c.method, "ZePPelin");
    snprintf(c.backend, sizeof c.backend, "ANALYTIC");
    zs_err e;
    zs_err_clear(&e);
    zs_point_env *env = NULL;
    ZS_ASSERT_OK(zs_point_env_new(&c, &env, &e), &e);
    CU_ASSERT_STRING_EQUAL(env->cfg.method, "zeppelin");
    CU_ASSERT_STRING_EQUAL(env->cfg.backend, "analytic");
    CU_ASSERT_PTR_EQUAL(env->planner, zs_planner_find("zeppelin"));
    zs_point_env_free(env);
    const zs_planner_ops *p = NULL;
    ZS_ASSERT_INT_EQ(zs_planner_lookup("bogus", "--method", &p, &e), ZS_EUSAGE);
    CU_ASSERT_PTR_NULL(p);
    ZS_ASSERT_STR_CONTAINS(e.what, "unknown method 'bogus'");
    CU_ASSERT(strstr(e.fix, "did you mean") == NULL); /* nothing close */
    ZS_ASSERT_STR_CONTAINS(e.fix, "use one of: local, te-cp");
}

/* Every backend of the registry runs a schedule and can be found by name. */
/* A backend's run_here in a child (SimGrid allows one platform per
 * process), shipping the iteration time back. */
typedef struct here_job {
    const zs_backend *be;
    const zs_schedule *s;
    const zs_backend_in *in;
} here_job;

static int run_here_child(void *arg, zs_fork_buf *out, zs_err *e)
{
    const here_job *j = arg;
    zs_result *r = NULL;
    int rc = j->be->run_here(j->s, j->in, &r, e);
    if (rc)
        return rc;
    double t = r->iter_time;
    zs_result_free(r);
    return zs_fork_buf_add(out, &t, sizeof t, e);
}

static void test_backends(void)
{
    /* hw is a row in every build, named among the usable ones only where
     * it was built */
    ZS_ASSERT_INT_EQ(zs_backend_count(), 3);
    char names[64];
    zs_backend_names("|", names, sizeof names);
    zs_err he;
    zs_err_clear(&he);
    const zs_backend *hw = NULL;
    if (zs_hw_available(&he) == ZS_OK) {
        CU_ASSERT_STRING_EQUAL(names, "sim|analytic|hw");
        ZS_ASSERT_OK(zs_backend_lookup("hw", "--backend", ZS_EUSAGE, &hw, &he), &he);
    } else {
        CU_ASSERT_STRING_EQUAL(names, "sim|analytic");
        ZS_ASSERT_INT_EQ(zs_backend_lookup("hw", "--backend", ZS_EUSAGE, &hw, &he),
                         ZS_EUNSUPPORTED);
        ZS_ASSERT_STR_CONTAINS(he.what, "not built");
        CU_ASSERT_PTR_NULL(hw);
    }
    zs_point_cfg c;
    small_cfg(zs_planner_find("te-cp"), &c);
    c.nodes = 1;
    c.group = 8;
    c.context = 16384;
    zs_err e;
    zs_err_clear(&e);
    zs_point_env *env = NULL;
    ZS_ASSERT_OK(zs_point_env_new(&c, &env, &e), &e);
    zs_batch *b = NULL;
    zs_schedule *s = NULL;
    zs_plan_report rep;
    ZS_ASSERT_OK(zs_point_env_next(env, &b, &e), &e);
    ZS_ASSERT_OK(zs_point_env_plan(env, b, &s, &rep, &e), &e);
    for (int i = 0; i < zs_backend_count(); i++) {
        const zs_backend *be = zs_backend_at(i);
        CU_ASSERT_PTR_EQUAL(zs_backend_find(be->name), be);
        zs_backend_in in;
        zs_backend_in_init(&in, &env->mach.cluster, env->mach.cost);
        zs_result *r = NULL;
        int rc = be->run(s, &in, &r, &e);
        if (rc && be->usable) { /* the GPUs: none here, or not built */
            fprintf(stderr, "  backend %s not run: %s\n", be->name, e.what);
            continue;
        }
        ZS_ASSERT_OK(rc, &e);
        CU_ASSERT(r && r->iter_time > 0);
        /* what `zepsim bench` times is the run simulate makes */
        here_job j = {be, s, &in};
        zs_fork_buf fb = {0};
        ZS_ASSERT_OK(zs_fork_call("run_here", run_here_child, &j, &fb, NULL, &e), &e);
        double t = 0;
        size_t pos = 0;
        ZS_ASSERT_INT_EQ(zs_fork_buf_get(&fb, &pos, &t, sizeof t), 0);
        ZS_ASSERT_REL(t, r->iter_time, 0);
        zs_fork_buf_free(&fb);
        zs_result_free(r);
    }
    const zs_backend *be = NULL;
    ZS_ASSERT_INT_EQ(zs_backend_lookup("simm", "--backend", ZS_EINPUT, &be, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "did you mean 'sim'");
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_point_env_free(env);
}

/* The machine loader sizes a cluster to a plan's ranks, replaces what it
 * is told to and prices with the cost model of the table's choice. */
static void test_machine(void)
{
    zs_machine_cfg mc;
    zs_machine_cfg_init(&mc);
    mc.model = "llama-7b";
    mc.cluster = "cluster-a";
    mc.ranks = 20;
    mc.mem_gib = 40;
    zs_machine m;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_machine_load(&mc, &m, &e), &e);
    ZS_ASSERT_INT_EQ(m.cluster.nodes, (20 + m.cluster.gpus_per_node - 1) / m.cluster.gpus_per_node);
    ZS_ASSERT_REL(m.cluster.gpu.mem_gib, 40, 0);
    CU_ASSERT_PTR_NULL(m.calib);
    CU_ASSERT_PTR_EQUAL(m.cost_model, zs_cost_model_for(NULL));
    CU_ASSERT_STRING_EQUAL(m.cost->ops->name, m.cost_model->name);
    zs_machine_clear(&m);
    zs_machine_clear(&m); /* cleared: a no-op */
    mc.kv_heads = 64;     /* more KV heads than llama-7b's 32 heads */
    ZS_ASSERT_INT_EQ(zs_machine_load(&mc, &m, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.where, "--kv-heads");
    CU_ASSERT_PTR_NULL(m.cost);
    mc.kv_heads = 0;
    mc.calib = "/nonexistent.calib.json";
    CU_ASSERT(zs_machine_load(&mc, &m, &e) != ZS_OK);
    CU_ASSERT_PTR_NULL(m.cost);
    ZS_ASSERT_INT_EQ(zs_cost_model_count(), 2);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"machine", test_machine},
                                         {"plan_is_simulate", test_plan_is_simulate},
                                         {"plan_is_simulate_wlb", test_plan_is_simulate_wlb},
                                         {"peak_mem_live", test_peak_mem_live},
                                         {"split_iterations", test_split_iterations},
                                         {"workers", test_workers},
                                         {"fold_lagging_stream", test_fold_lagging_stream},
                                         {"batchers", test_batchers},
                                         {"env_errors", test_env_errors},
                                         {"names", test_names},
                                         {"backends", test_backends},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"env", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

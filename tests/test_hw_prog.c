/* The hardware executor's CPU-side preparation (hw/zs_hw_prog.c): unrolling
 * with dependency resolution, send/receive grouping, message and collective
 * matching (and refusing what NCCL cannot run), host copies (activation
 * offloading) and their buffer, accounting of measured times, the
 * timeline, and attention tile lists. No GPU needed. */
#include <jansson.h>
#include <stdlib.h>

#include "zs_hw_prog.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static const int64_t *D1(int64_t a)
{
    static int64_t d[4][1];
    static int i;
    i = (i + 1) % 4;
    d[i][0] = a;
    return d[i];
}

/* Host copies (activation offloading) build: their need is the largest
 * copy, apart from the elementwise ops', and a copy engine moves them, so
 * the accounting counts them as communication. Rank 0: a GEMM [0, 2] and
 * an elementwise op [2, 2.5] on the compute stream, a d2h [2, 4] and an
 * h2d [4, 5] on the offload stream: compute 2.5, communication 3, exposed
 * 2.5, no idle. */
static void test_host_copies(void)
{
    zs_schedule *s = zs_schedule_new(1);
    zs_err e;
    snprintf(s->model, sizeof s->model, "llama-7b");
    int st = zs_schedule_add_stream(s, "offload");
    CU_ASSERT(zs_sched_gemm(s, 0, 0, "a", 8, 8, 8, 1e-6, NULL, 0) == 0);
    CU_ASSERT(zs_sched_elementwise(s, 0, 0, "e", 64, 1e-6, D1(0), 1) == 1);
    CU_ASSERT(zs_sched_host_copy(s, 0, st, "offload-d2h", 1, 1e6, 1e-5, D1(0), 1) == 2);
    CU_ASSERT(zs_sched_host_copy(s, 0, st, "offload-h2d", 0, 3e6, 1e-5, D1(2), 1) == 3);
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    ZS_ASSERT_INT_EQ(p[0].n, 4);
    CU_ASSERT(nd.host_copy_bytes == 3e6);
    CU_ASSERT(nd.elem_bytes == 64); /* the copies are not elementwise bytes */
    CU_ASSERT(nd.gemm_c == 64 && nd.p2p_lanes == 0 && nd.coll_bytes == 0);
    double s0[] = {0, 2, 2, 4}, e0[] = {2, 2.5, 4, 5};
    zs_hw_times t = {s0, e0};
    zs_result *r = zs_result_new(1, 0);
    ZS_ASSERT_OK(zs_hw_account(s, p, &t, r), NULL);
    ZS_ASSERT_NEAR(r->ranks[0].compute, 2.5, 1e-12);
    ZS_ASSERT_NEAR(r->ranks[0].comm, 3, 1e-12);
    ZS_ASSERT_NEAR(r->ranks[0].exposed_comm, 2.5, 1e-12);
    ZS_ASSERT_NEAR(r->ranks[0].idle, 0, 1e-12);
    ZS_ASSERT_NEAR(r->iter_time, 5, 1e-12);
    zs_result_free(r);
    zs_hw_progs_free(p, 1);
    zs_schedule_free(s);
    /* Without copies the need is 0 (no pinned buffer is allocated). */
    s = zs_schedule_new(1);
    CU_ASSERT(zs_sched_gemm(s, 0, 0, "a", 8, 8, 8, 1e-6, NULL, 0) == 0);
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    CU_ASSERT(nd.host_copy_bytes == 0);
    zs_hw_progs_free(p, 1);
    zs_schedule_free(s);
}

/* ByteScale with offload=on (the case of tests/test_bytescale_offload.c:
 * eight 150,000-token documents, one A800 each, max_seqlen=100000, full
 * recomputation) is executable as written; the largest copy is one
 * layer's offloaded share, r a s = 0.3556 x 8192 x 150000 bytes. */
static void test_bytescale_offload_executable(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-7b", 1, "max_seqlen=100000,offload=on");
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    int32_t len[8];
    for (int d = 0; d < 8; d++)
        len[d] = 150000;
    zs_batch *b = zs_batch_from_lengths(len, 8);
    zs_plan_report rep;
    zs_schedule *s = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_plan_batch(zs_planner_find("bytescale"), &v.ctx, b, 1, &s, &rep, &e), &e);
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT(zs_schedule_has_host_copies(s));
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    ZS_ASSERT_REL(nd.host_copy_bytes, (32 - 32.0 / 1.5) / 30 * 8192 * 150000, 1e-12);
    zs_hw_progs_free(p, s->nranks);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Rank 0: segment A (once) op0; segment B (x3) op1 dep op0, op2 dep op1;
 * segment C (once) op3 dep op2 (last iteration of B). */
static void test_unroll_deps(void)
{
    zs_schedule *s = zs_schedule_new(1);
    zs_err e;
    snprintf(s->model, sizeof s->model, "llama-7b");
    CU_ASSERT(zs_sched_gemm(s, 0, 0, "a", 8, 8, 8, 1e-6, NULL, 0) == 0);
    ZS_ASSERT_OK(zs_schedule_begin_segment(s, 0, 3), NULL);
    CU_ASSERT(zs_sched_gemm(s, 0, 0, "b", 8, 8, 8, 1e-6, D1(0), 1) == 1);
    CU_ASSERT(zs_sched_elementwise(s, 0, 1, "c", 64, 1e-6, D1(1), 1) == 2);
    ZS_ASSERT_OK(zs_schedule_begin_segment(s, 0, 1), NULL);
    CU_ASSERT(zs_sched_gemm(s, 0, 0, "d", 8, 8, 8, 1e-6, D1(2), 1) == 3);
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    ZS_ASSERT_INT_EQ(p[0].n, 8);
    /* items: op0 | op1 op2 (it 0) | op1 op2 (it 1) | op1 op2 (it 2) | op3 */
    ZS_ASSERT_INT_EQ(p[0].items[3].op, 1);
    ZS_ASSERT_INT_EQ(p[0].items[3].iter, 1);
    ZS_ASSERT_INT_EQ(p[0].deps[p[0].items[3].dep0], 0); /* earlier segment, run once */
    ZS_ASSERT_INT_EQ(p[0].deps[p[0].items[4].dep0], 3); /* same iteration */
    ZS_ASSERT_INT_EQ(p[0].deps[p[0].items[7].dep0], 6); /* last iteration of B */
    ZS_ASSERT_INT_EQ(p[0].items[7].group, -1);
    CU_ASSERT(nd.gemm_c == 64 && nd.elem_bytes == 64 && nd.p2p_lanes == 0);
    zs_hw_progs_free(p, 1);
    zs_schedule_free(s);
}

/* A two-rank ring step: each rank sends its KV to the other and receives
 * the other's, on the comm stream; the pair is one NCCL group. */
static zs_schedule *ring2(int swap_tags_on_1)
{
    zs_schedule *s = zs_schedule_new(2);
    for (int r = 0; r < 2; r++) {
        int peer = 1 - r;
        int64_t c = zs_sched_gemm(s, r, 0, "qkv", 16, 16, 16, 1e-6, NULL, 0);
        zs_sched_send(s, r, 1, "ring-kv", peer, 1, 4096, D1(c), 1);
        zs_sched_recv(s, r, 1, "ring-kv", peer, 1, 4096, NULL, 0);
        zs_sched_gemm(s, r, 0, "mid", 16, 16, 16, 1e-6, NULL, 0);
        /* a second message each way, tag 2, after a compute op on the comm stream */
        zs_sched_elementwise(s, r, 1, "merge", 32, 1e-6, NULL, 0);
        if (r == 1 && swap_tags_on_1) {
            zs_sched_recv(s, r, 1, "x", peer, 3, 100, NULL, 0);
            zs_sched_elementwise(s, r, 1, "gap", 32, 1e-6, NULL, 0);
            zs_sched_recv(s, r, 1, "x", peer, 2, 100, NULL, 0);
            zs_sched_send(s, r, 1, "x", peer, 2, 100, NULL, 0);
            zs_sched_send(s, r, 1, "x", peer, 3, 100, NULL, 0);
        } else {
            zs_sched_send(s, r, 1, "x", peer, 2, 100, NULL, 0);
            zs_sched_send(s, r, 1, "x", peer, 3, 100, NULL, 0);
            zs_sched_recv(s, r, 1, "x", peer, 2, 100, NULL, 0);
            zs_sched_elementwise(s, r, 1, "gap", 32, 1e-6, NULL, 0);
            zs_sched_recv(s, r, 1, "x", peer, 3, 100, NULL, 0);
        }
    }
    return s;
}

static void test_p2p_groups_and_matching(void)
{
    zs_schedule *s = ring2(0);
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    zs_err e;
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    /* rank 0: 0 qkv, 1 send, 2 recv, 3 mid, 4 merge, 5 send, 6 send, 7 recv, 8 gap, 9 recv */
    ZS_ASSERT_INT_EQ(p[0].items[1].group, 1);
    ZS_ASSERT_INT_EQ(p[0].items[2].group, 1); /* the mid op is on the other stream */
    ZS_ASSERT_INT_EQ(p[0].items[4].group, -1);
    ZS_ASSERT_INT_EQ(p[0].items[7].group, 5);
    ZS_ASSERT_INT_EQ(p[0].items[9].group, 9); /* the gap op broke the run */
    ZS_ASSERT_INT_EQ(p[0].items[2].comm, 1);  /* lane = the sender's stream */
    ZS_ASSERT_INT_EQ(nd.p2p_lanes, 1);        /* only stream 1 sends */
    ZS_ASSERT_INT_EQ(nd.p2p_lane_mask, 2);
    CU_ASSERT(nd.p2p_bytes == 4096);
    zs_hw_progs_free(p, 2);
    zs_schedule_free(s);
}

static void test_reordered_messages_refused(void)
{
    /* Rank 1 receives tag 3 before tag 2 while rank 0 sends 2 then 3:
     * NCCL would pair them the wrong way round. */
    zs_schedule *s = ring2(1);
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    zs_err e;
    zs_err_clear(&e);
    CU_ASSERT(zs_hw_progs_build(s, &p, &nd, &e) == ZS_EUNSUPPORTED);
    ZS_ASSERT_STR_CONTAINS(e.what, "different order");
    ZS_ASSERT_STR_CONTAINS(e.where, "rank 1");
    CU_ASSERT(p == NULL);
    zs_schedule_free(s);
}

static void test_unmatched_and_bad_deps(void)
{
    zs_err e;
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    /* A send with no receive. */
    zs_schedule *s = zs_schedule_new(2);
    zs_sched_send(s, 0, 1, "lost", 1, 0, 10, NULL, 0);
    CU_ASSERT(zs_hw_progs_build(s, &p, &nd, &e) == ZS_EINVALID);
    ZS_ASSERT_STR_CONTAINS(e.fix, "receive");
    zs_schedule_free(s);
    /* Sizes differ. */
    s = zs_schedule_new(2);
    zs_sched_send(s, 0, 1, "a", 1, 0, 10, NULL, 0);
    zs_sched_recv(s, 1, 1, "a", 0, 0, 20, NULL, 0);
    CU_ASSERT(zs_hw_progs_build(s, &p, &nd, &e) == ZS_EINVALID);
    zs_schedule_free(s);
}

/* A ring step that forwards what the previous step received (TE CP's
 * pattern: send, recv, then a send that depends on that recv) and a receive
 * waiting on a compute op issued after the run started: each starts a new
 * NCCL group instead of joining the running one. */
static void test_p2p_group_cut_by_dependency(void)
{
    zs_err e;
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    zs_schedule *s = zs_schedule_new(2);
    for (int r = 0; r < 2; r++) {
        zs_sched_send(s, r, 1, "kv", 1 - r, 0, 10, NULL, 0);
        int64_t rv = zs_sched_recv(s, r, 1, "kv", 1 - r, 0, 10, NULL, 0);
        zs_sched_send(s, r, 1, "kv", 1 - r, 0, 10, D1(rv), 1); /* forwards what op 1 got */
        int64_t c = zs_sched_gemm(s, r, 0, "attn", 4, 4, 4, 1e-6, NULL, 0);
        zs_sched_recv(s, r, 1, "kv", 1 - r, 0, 10, D1(c), 1); /* waits on op 3 */
        zs_sched_recv(s, r, 1, "kv2", 1 - r, 5, 10, NULL, 0);
        zs_sched_send(s, r, 1, "kv2", 1 - r, 5, 10, NULL, 0);
    }
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    const int64_t want[] = {0, 0, 2, -1, 4, 4, 4};
    for (int i = 0; i < 7; i++)
        ZS_ASSERT_INT_EQ(p[0].items[i].group, want[i]);
    zs_hw_progs_free(p, 2);
    zs_schedule_free(s);
}

static void test_collectives(void)
{
    zs_err e;
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    zs_schedule *s = zs_schedule_new(3);
    int g01[] = {0, 1};
    int g = zs_schedule_group(s, g01, 2);
    CU_ASSERT(g >= 0);
    for (int r = 0; r < 2; r++) {
        zs_sched_coll(s, r, 1, "ag", g, ZS_COLL_ALLGATHER, 1000, NULL, 0);
        zs_sched_coll(s, r, 1, "ar", g, ZS_COLL_ALLREDUCE, 500, NULL, 0);
    }
    zs_sched_gemm(s, 2, 0, "alone", 4, 4, 4, 1e-6, NULL, 0);
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    ZS_ASSERT_INT_EQ(p[1].items[1].nth, 1);
    CU_ASSERT(nd.coll_bytes == 2000); /* all-gather output: 2 x 1000 */
    zs_hw_progs_free(p, 3);
    zs_schedule_free(s);
    /* Members disagree on the size. */
    s = zs_schedule_new(2);
    g = zs_schedule_group(s, g01, 2);
    zs_sched_coll(s, 0, 1, "ar", g, ZS_COLL_ALLREDUCE, 500, NULL, 0);
    zs_sched_coll(s, 1, 1, "ar", g, ZS_COLL_ALLREDUCE, 600, NULL, 0);
    CU_ASSERT(zs_hw_progs_build(s, &p, &nd, &e) == ZS_EINVALID);
    ZS_ASSERT_STR_CONTAINS(e.what, "agree");
    zs_schedule_free(s);
}

/* Compute [0, 2], a receive [1, 3] on the comm stream, iteration ends at 4
 * (another rank): compute 2, exposed comm 1, idle 1, comm 2. */
static void test_account_by_hand(void)
{
    zs_schedule *s = zs_schedule_new(2);
    zs_sched_gemm(s, 0, 0, "g", 4, 4, 4, 1e-6, NULL, 0);
    zs_sched_recv(s, 0, 1, "r", 1, 0, 8, NULL, 0);
    zs_sched_marker(s, 0, ZS_MARK_LAYER, 0);
    zs_sched_send(s, 1, 1, "s", 0, 0, 8, NULL, 0);
    zs_hw_prog *p = NULL;
    zs_hw_needs nd;
    zs_err e;
    ZS_ASSERT_OK(zs_hw_progs_build(s, &p, &nd, &e), &e);
    double s0[] = {0, 1, 3}, e0[] = {2, 3, 3}, s1[] = {1}, e1[] = {4};
    zs_hw_times t[2] = {{s0, e0}, {s1, e1}};
    zs_result *r = zs_result_new(2, 0);
    ZS_ASSERT_OK(zs_hw_account(s, p, t, r), NULL);
    ZS_ASSERT_NEAR(r->ranks[0].compute, 2, 1e-12);
    ZS_ASSERT_NEAR(r->ranks[0].exposed_comm, 1, 1e-12);
    ZS_ASSERT_NEAR(r->ranks[0].idle, 1, 1e-12);
    ZS_ASSERT_NEAR(r->ranks[0].comm, 2, 1e-12);
    ZS_ASSERT_NEAR(r->ranks[0].end, 3, 1e-12);
    ZS_ASSERT_INT_EQ(r->ranks[0].ops, 3);
    ZS_ASSERT_NEAR(r->iter_time, 4, 1e-12);
    ZS_ASSERT_INT_EQ(r->slowest_rank, 1);
    /* The timeline: valid JSON, one "X" event per non-marker op. */
    char path[512];
    snprintf(path, sizeof path, "%s/hw-timeline.json", zs_test_tmpdir());
    double bytes = 0;
    ZS_ASSERT_OK(zs_hw_timeline_write(s, p, t, 8, -1, path, &bytes, &e), &e);
    char *buf = zs_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    ZS_ASSERT_INT_EQ(bytes, strlen(buf));
    json_error_t je;
    json_t *doc = json_loads(buf, 0, &je);
    CU_ASSERT_FATAL(doc != NULL);
    json_t *ev = json_object_get(doc, "traceEvents"), *x;
    size_t i;
    int nx = 0, comm_thread = 0, ns = 0, nf = 0;
    json_array_foreach(ev, i, x)
    {
        const char *ph = json_string_value(json_object_get(x, "ph"));
        nx += ph && ph[0] == 'X';
        ns += ph && ph[0] == 's';
        nf += ph && ph[0] == 'f';
        const char *nm = json_string_value(json_object_get(json_object_get(x, "args"), "name"));
        comm_thread += nm && strcmp(nm, "gpu 1 (rank 1) comm") == 0;
    }
    ZS_ASSERT_INT_EQ(nx, 3);
    ZS_ASSERT_INT_EQ(comm_thread, 1);
    /* The send [1, 4] -> receive [1, 3]: one flow, leaving at the match (1)
     * and landing inside the receive (2). */
    ZS_ASSERT_INT_EQ(ns, 1);
    ZS_ASSERT_INT_EQ(nf, 1);
    ZS_ASSERT_STR_CONTAINS(buf, "\"ph\":\"s\",\"id\":0,\"pid\":0,\"tid\":3,\"ts\":1000000.000");
    ZS_ASSERT_STR_CONTAINS(buf, "\"ph\":\"f\",\"bp\":\"e\",\"id\":0,\"pid\":0,\"tid\":1,"
                                "\"ts\":2000000.000");
    ZS_ASSERT_STR_CONTAINS(buf, "\"op\":0,\"predicted_us\":");
    ZS_ASSERT_STR_CONTAINS(buf, "\"ts\":1000000.000,\"dur\":2000000.000");
    json_decref(doc);
    free(buf);
    zs_result_free(r);
    zs_hw_progs_free(p, 2);
    zs_schedule_free(s);
}

static void test_tiles(void)
{
    zs_attn_block in[2] = {{0, 0, 300, 0, 300}, {1, 0, 150, 100, 230}};
    zs_hw_block b[2];
    int64_t qr, kr;
    zs_hw_blocks_pack(in, 2, b, &qr, &kr);
    ZS_ASSERT_INT_EQ(qr, 450);
    ZS_ASSERT_INT_EQ(kr, 430);
    ZS_ASSERT_INT_EQ(b[1].q_off, 300);
    ZS_ASSERT_INT_EQ(b[1].k_pos, 100);
    int32_t t[16];
    /* Causal 300: tiles of 128 hold 8256, 24640 and 12254 pairs. */
    ZS_ASSERT_INT_EQ(zs_hw_attn_tiles(b, 1, 128, 0, t, 8), 3);
    ZS_ASSERT_INT_EQ(t[1], 128);
    ZS_ASSERT_INT_EQ(t[3], 256);
    ZS_ASSERT_INT_EQ(t[5], 0);
    /* Keys at positions 100..229 against queries 0..149: only the first
     * key tile (100..163) is seen; 164..227 and 228..229 are left out. */
    ZS_ASSERT_INT_EQ(zs_hw_attn_tiles(b + 1, 1, 64, 1, t, 8), 1);
    ZS_ASSERT_INT_EQ(t[1], 0);
    /* Over queries: rows 0..99 see no key but rows 100..127 do. */
    ZS_ASSERT_INT_EQ(zs_hw_attn_tiles(b + 1, 1, 128, 0, NULL, 0), 2);
    /* Entirely above the diagonal: no key tile does work, but the query
     * tile still runs to write O = 0 and LSE = -inf. */
    zs_hw_block above = {0, 0, 10, 10, 0, 50};
    ZS_ASSERT_INT_EQ(zs_hw_attn_tiles(&above, 1, 64, 1, NULL, 0), 0);
    ZS_ASSERT_INT_EQ(zs_hw_attn_tiles(&above, 1, 128, 0, NULL, 0), 1);
    /* Zero-work query tiles go last. */
    zs_hw_block two[2] = {above, {10, 10, 20, 20, 0, 0}};
    ZS_ASSERT_INT_EQ(zs_hw_attn_tiles(two, 2, 128, 0, t, 8), 2);
    ZS_ASSERT_INT_EQ(t[0], 1);
}

/* Every registered planner's schedule (llama-7b on 8 nodes of cluster-b,
 * documents from 300 to 64K tokens) is executable by the hardware backend
 * as written: unrolls, groups, matches in NCCL's order. */
static void test_every_planner_executable(void)
{
    zs_err e;
    zs_model m;
    zs_cluster c;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-b", 8, &c, &e), &e);
    zs_cost *cost = zs_cost_analytic_new(&m, &c);
    const int32_t lens[] = {65536, 32768, 32768, 16384, 16384, 8192, 8192, 8192, 8192,
                            4096,  4096,  4096,  4096,  2048,  2048, 1024, 512,  300};
    int planned = 0;
    for (int i = 0; zs_planner_at(i); i++) {
        const zs_planner_ops *p = zs_planner_at(i);
        zs_opts o;
        zs_opts_init(&o);
        zs_plan_ctx ctx = {&m, &c, cost, zs_mem_cfg_default(), &o, 1};
        zs_batch *b = zs_batch_from_lengths(lens, 18);
        zs_plan_report rep;
        zs_schedule *s = NULL;
        if (zs_plan_batch(p, &ctx, b, 0, &s, &rep, &e) != ZS_OK) {
            /* e.g. "local": a 64K document does not fit one GPU */
            printf("  %s: no plan for this batch (%s)\n", p->name, e.what);
            zs_batch_free(b);
            continue;
        }
        planned++;
        zs_hw_prog *pr = NULL;
        zs_hw_needs nd;
        int rc = zs_hw_progs_build(s, &pr, &nd, &e);
        if (rc)
            fprintf(stderr, "planner %s: ", p->name);
        ZS_ASSERT_OK(rc, &e);
        zs_hw_progs_free(pr, s->nranks);
        zs_schedule_free(s);
        zs_batch_free(b);
    }
    /* Ten planners ship; all but "local" place this batch today. */
    CU_ASSERT(planned >= 8);
    zs_cost_free(cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"unroll_deps", test_unroll_deps},
        {"host_copies", test_host_copies},
        {"bytescale_offload_executable", test_bytescale_offload_executable},
        {"p2p_groups_and_matching", test_p2p_groups_and_matching},
        {"reordered_messages_refused", test_reordered_messages_refused},
        {"unmatched_and_bad_deps", test_unmatched_and_bad_deps},
        {"p2p_group_cut_by_dependency", test_p2p_group_cut_by_dependency},
        {"collectives", test_collectives},
        {"account_by_hand", test_account_by_hand},
        {"tiles", test_tiles},
        {"every_planner_executable", test_every_planner_executable},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"hw_prog", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

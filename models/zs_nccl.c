/* NCCL's tuning model (2.29.2) on zepsim's cluster descriptions: the
 * topology figures, a simplified version of NCCL's graph search, the
 * per-algorithm bandwidth and latency formulas, NCCL's choice, and their
 * evaluation with calibrated parameters. Constants are quoted from
 * NVIDIA/nccl src/graph/tuning.cc (v2.29.2), src/graph/search.cc (v2.25.1)
 * and src/graph/topo.h; docs/cost-model.md lists them with their sources.
 * See zs_nccl.h. */
#include "zs_nccl.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- names and masks ------------------------------------------------------- */
static const char *const algo_names[] = {
    "tree", "ring", "collnet-direct", "collnet-chain", "nvls", "nvls-tree", "pat", "p2p"};
static const char *const proto_names[] = {"LL", "LL128", "Simple"};

const char *zs_nccl_algo_name(int a)
{
    return a >= 0 && a <= ZS_NCCL_P2P ? algo_names[a] : "?";
}

const char *zs_nccl_proto_name(int p)
{
    return p >= 0 && p < ZS_NCCL_NPROTOS ? proto_names[p] : "?";
}

/* Lower-case letters and digits only: "NVLSTree", "nvls-tree" and
 * "CollnetDirect" compare equal to our names. */
static void squash(const char *s, size_t len, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < n; i++)
        if (isalnum((unsigned char)s[i]))
            out[k++] = (char)tolower((unsigned char)s[i]);
    out[k] = '\0';
}

static int mask_parse(const char *s, int algos, unsigned *mask, zs_err *e)
{
    const char *const *names = algos ? algo_names : proto_names;
    int count = algos ? ZS_NCCL_NALGOS : ZS_NCCL_NPROTOS;
    const char *what = algos ? "NCCL_ALGO" : "NCCL_PROTO";
    const char *fix = algos ? "use ring, tree, nvls, nvls-tree, collnet-direct, collnet-chain or "
                              "pat, comma-separated, or ^NAMES to exclude"
                            : "use LL, LL128 or Simple, comma-separated, or ^NAMES to exclude";
    const char *p = s;
    int exclude = *p == '^';
    if (exclude)
        p++;
    unsigned m = 0;
    int any = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        char tok[64], name[64];
        squash(p, len < 63 ? len : 63, tok, sizeof tok);
        int hit = -1;
        for (int i = 0; i < count && hit < 0; i++) {
            squash(names[i], strlen(names[i]), name, sizeof name);
            if (tok[0] && strcmp(tok, name) == 0)
                hit = i;
        }
        if (hit < 0)
            return zs_err_set(e, ZS_EINPUT, what, fix, "unknown %s '%.*s'",
                              algos ? "algorithm" : "protocol", (int)(len < 40 ? len : 40), p);
        m |= 1u << hit;
        any = 1;
        p += len;
        if (*p == ',')
            p++;
    }
    if (!any)
        return zs_err_set(e, ZS_EINPUT, what, fix, "empty %s", what);
    unsigned all = algos ? ZS_NCCL_ALL_ALGOS : ZS_NCCL_ALL_PROTOS;
    m = exclude ? all & ~m : m;
    if (!m)
        return zs_err_set(e, ZS_EINPUT, what, fix, "%s '%s' excludes everything", what, s);
    *mask = m;
    return ZS_OK;
}

int zs_nccl_algo_mask_parse(const char *s, unsigned *mask, zs_err *e)
{
    return mask_parse(s, 1, mask, e);
}

int zs_nccl_proto_mask_parse(const char *s, unsigned *mask, zs_err *e)
{
    return mask_parse(s, 0, mask, e);
}

void zs_nccl_mask_str(unsigned mask, int algos, char *buf, size_t n)
{
    unsigned all = algos ? ZS_NCCL_ALL_ALGOS : ZS_NCCL_ALL_PROTOS;
    int count = algos ? ZS_NCCL_NALGOS : ZS_NCCL_NPROTOS;
    size_t o = 0;
    buf[0] = '\0';
    if (!mask || (mask & all) == all)
        return;
    for (int i = 0; i < count && o < n; i++)
        if (mask & (1u << i))
            o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? "," : "",
                                  algos ? algo_names[i] : proto_names[i]);
}

/* ---- NCCL's constants ------------------------------------------------------ */
/* tuning.cc v2.29.2, ncclTunerConstantsDefaults. Latencies in us, rows in
 * zs_nccl_algo order, columns LL, LL128, Simple. */
static const double base_lat[ZS_NCCL_NALGOS][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0},
                                                   {0, 0, 0},        {0, 0, 0},        {0, 0, 0},
                                                   {8.0, 8.0, 8.0}};
enum { HW_NVLINK, HW_PCI, HW_NET };
static const double hw_lat[3][ZS_NCCL_NALGOS][3] = {
    {{.6, 1.25, 4.0},
     {.6, 1.9, 3.4},
     {0, 0, 3.7},
     {0, 0, 2.8},
     {0, 0, 25},
     {0, 0, 25},
     {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14},
     {2.7, 4.0, 14.0},
     {0, 0, 31},
     {0, 0, 30},
     {0, 0, 18},
     {0, 0, 20.9},
     {0, 0, 14}}};
/* [compute capability index][N1, N2, N4]: Volta, Ampere, Hopper, Blackwell. */
static const double ll_max_bw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
static const double ring_ll128_max[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {34.5, 34.6, 34.5}};
static const double tree_ll128_max[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
static const double tree_max[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
static const double nvls_tree_max[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}};
static const double nvls_efficiency[4] = {0.0, 0.0, 0.85, 0.74};
/* Powers of two from 64 B, index log2(nBytes / 64); rows LL, LL128, Simple. */
static const double tree_correction[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
/* ncclTopoGetNetOverhead for x86 Intel hosts (AMD: 2.0 us). */
#define NET_OVERHEAD_US 1.0
/* The ring/Simple all-reduce plateau across nodes (sm80 and newer). */
#define RING_PLATEAU 1.4
/* search.cc v2.25.1 speed ladders, GB/s per channel. */
static const double ladder_intra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                      9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
static const double ladder_inter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                      7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
static const double sm90_intra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
static const double sm90_inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                    15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
static const double sm100_intra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0};
/* topo.h: NVLink GB/s per link as NCCL counts it, by architecture. */
#define SM80_NVLINK_BW  20.0
#define SM90_NVLINK_BW  20.6
#define SM100_NVLINK_BW 40.1
#define MAX_SEARCH_CH   16 /* MAXCHANNELS/2: the search leaves room for duplication */
#define NVLS_ARITY      32 /* NCCL_MAX_NVLS_ARITY */

static int cc_index(int sm)
{
    return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0;
}

static int scale_index(int nnodes)
{
    return nnodes <= 1 ? 0 : nnodes == 2 ? 1 : 2;
}

static int log2i(double x)
{
    int l = -1;
    while (x >= 1) {
        x /= 2;
        l++;
    }
    return l;
}

/* ---- topology and graph search -------------------------------------------- */
/* NCCL's PCIe figure for an x16 link (width * GT/s / 80: 12, 24, 48, 96 GB/s
 * for Gen3-Gen6): the highest generation the cluster's link reaches. */
static double nccl_pci_bw(double pcie_gbs)
{
    static const double gen[] = {96.0, 48.0, 24.0, 12.0};
    for (size_t i = 0; i < 4; i++)
        if (pcie_gbs >= gen[i])
            return gen[i];
    return pcie_gbs;
}

/* A GPU's NVLinks as NCCL counts them: links (given, or the spec-sheet
 * bandwidth over the raw per-link rate) times NCCL's per-link figure. */
static double nccl_nvl_bw(const zs_gpu *g, int sm)
{
    double raw = sm >= 100 ? 50.0 : 25.0;
    double per = sm >= 100 ? SM100_NVLINK_BW : sm >= 90 ? SM90_NVLINK_BW : SM80_NVLINK_BW;
    double links = g->nvlinks > 0 ? g->nvlinks : g->nvlink_gbs / raw;
    return links * per;
}

typedef struct ladder {
    const double *v;
    size_t n;
} ladder;

static ladder intra_ladder(int sm)
{
    if (sm >= 100)
        return (ladder){sm100_intra, sizeof sm100_intra / sizeof sm100_intra[0]};
    if (sm >= 90)
        return (ladder){sm90_intra, sizeof sm90_intra / sizeof sm90_intra[0]};
    return (ladder){ladder_intra, sizeof ladder_intra / sizeof ladder_intra[0]};
}

static ladder inter_ladder(int sm)
{
    if (sm >= 90)
        return (ladder){sm90_inter, sizeof sm90_inter / sizeof sm90_inter[0]};
    return (ladder){ladder_inter, sizeof ladder_inter / sizeof ladder_inter[0]};
}

static int fl(double x)
{
    return (int)floor(x + 1e-9);
}

/* Channels a ring can have at `speed` GB/s each. */
static int ring_channels(const zs_nccl_topo *t, double speed)
{
    int nch = MAX_SEARCH_CH;
    double intra = (t->nvlink ? t->nvl_bw : t->pci_bw) / speed;
    if (t->nnodes == 1) {
        int c = fl(intra);
        nch = c < nch ? c : nch;
    } else if (t->ppn > 1) {
        /* Across nodes each GPU leaves the node (through its NIC) for 1/ppn
         * of the channels and forwards the others over NVLink. */
        int c = fl(intra * t->ppn / (t->ppn - 1));
        nch = c < nch ? c : nch;
    }
    if (t->nnodes > 1) {
        double nic = t->net_bw < t->pci_bw ? t->net_bw : t->pci_bw;
        int c = t->nics * fl(nic / speed);
        nch = c < nch ? c : nch;
    }
    return nch;
}

/* search.cc: start at the first speed the paths allow, keep the graph with
 * the most bandwidth, stop when it covers the GPU's total bandwidth or the
 * speed falls below half of the best one; then ncclTopoDupChannels. */
static zs_nccl_graph search_ring(const zs_nccl_topo *t)
{
    ladder l = t->nnodes > 1 ? inter_ladder(t->sm) : intra_ladder(t->sm);
    double intra = t->nvlink ? t->nvl_bw : t->pci_bw;
    double maxbw = intra;
    if (t->nnodes > 1) {
        double nic = t->net_bw < t->pci_bw ? t->net_bw : t->pci_bw;
        maxbw = t->ppn > 1 && intra < nic ? intra : nic;
    }
    double total = intra > t->pci_bw ? intra : t->pci_bw;
    size_t i0 = 0;
    while (i0 + 1 < l.n && l.v[i0] > maxbw)
        i0++;
    zs_nccl_graph g = {0, 0, 0};
    for (size_t i = i0; i < l.n; i++) {
        double s = l.v[i];
        if (g.nch && s / g.bw_intra <= 0.49)
            break;
        int nch = ring_channels(t, s);
        if (nch * s > g.nch * g.bw_intra)
            g = (zs_nccl_graph){nch, s, s};
        if (nch * s >= total - 1e-9)
            break;
    }
    if (!g.nch) /* "falling back to simple order": one slow channel */
        g = (zs_nccl_graph){1, l.v[l.n - 1], l.v[l.n - 1]};
    if (!(g.bw_intra < 25 || (t->sm > 80 && g.bw_intra < 50 && g.nch > 4))) {
        g.nch *= 2;
        g.bw_intra /= 2;
        g.bw_inter /= 2;
    }
    return g;
}

/* Tree graphs have the ring's channels; across two nodes the search raises
 * the intra-node speed towards twice the network one (pass 2) as far as
 * NVLink allows. */
static zs_nccl_graph search_tree(const zs_nccl_topo *t, zs_nccl_graph ring)
{
    zs_nccl_graph g = ring;
    if (t->nnodes > 1 && t->ppn > 1 && g.nch) {
        ladder l = inter_ladder(t->sm);
        double cap = (t->nvlink ? t->nvl_bw : t->pci_bw) / g.nch, want = 2 * g.bw_inter;
        double best = g.bw_intra;
        for (size_t i = 0; i < l.n; i++)
            if (l.v[i] <= want && l.v[i] <= cap && l.v[i] > best)
                best = l.v[i];
        g.bw_intra = best;
    }
    return g;
}

/* NVLS graphs: one channel per local GPU (each GPU the head of one), so a
 * GPU's NVLinks carry ppn + 1 channel shares; pass 2 raises the other side
 * towards twice that. Across nodes each head sends through a NIC. */
static zs_nccl_graph search_nvls(const zs_nccl_topo *t)
{
    zs_nccl_graph g = {0, 0, 0};
    if (!t->nvls || !t->nvlink || t->sm < 90 || t->ppn < 2)
        return g;
    ladder l = intra_ladder(t->sm);
    g.nch = t->ppn < NVLS_ARITY ? t->ppn : NVLS_ARITY;
    for (size_t i = 0; i < l.n && !g.bw_intra; i++)
        if ((t->ppn + 1) * l.v[i] <= t->nvl_bw + 1e-9)
            g.bw_intra = l.v[i];
    if (!g.bw_intra)
        g.bw_intra = l.v[l.n - 1];
    g.bw_inter = 2 * g.bw_intra < l.v[0] ? 2 * g.bw_intra : l.v[0];
    if (t->nnodes > 1) {
        ladder li = inter_ladder(t->sm);
        double nic = (t->net_bw < t->pci_bw ? t->net_bw : t->pci_bw) * t->nics / g.nch;
        g.bw_inter = li.v[li.n - 1];
        for (size_t i = 0; i < li.n; i++)
            if (li.v[i] <= nic + 1e-9) {
                g.bw_inter = li.v[i];
                break;
            }
    }
    return g;
}

int zs_nccl_topo_init(const zs_cluster *cl, int nodes, int ppn, int nics, zs_nccl_topo *t,
                      zs_err *e)
{
    if (nodes < 1 || ppn < 1 || ppn > cl->gpus_per_node)
        return zs_err_set(e, ZS_EINPUT, cl->name,
                          "give at least one node and at most gpus_per_node ranks per node",
                          "cannot place %d ranks per node on %d nodes of cluster '%s' (%d GPUs "
                          "per node)",
                          ppn, nodes, cl->name, cl->gpus_per_node);
    zs_nccl_topo x;
    memset(&x, 0, sizeof x);
    x.nranks = nodes * ppn;
    x.nnodes = nodes;
    x.ppn = ppn;
    int gpn = zs_cluster_gpus_per_nic(cl);
    x.nics = nics > 0 ? nics : (ppn + gpn - 1) / gpn;
    if (x.nics > cl->nics_per_node)
        x.nics = cl->nics_per_node;
    x.sm = (int)lround(cl->gpu.cc * 10);
    x.nvlink = cl->nvswitch && cl->gpu.nvlink_gbs > 0;
    x.nvls = cl->nvls;
    x.collnet = cl->collnet;
    x.nvl_bw = nccl_nvl_bw(&cl->gpu, x.sm);
    x.pci_bw = nccl_pci_bw(cl->pcie_gbs);
    /* NCCL plans its channels per device: a NIC of several ports (or
     * SR-IOV functions) is several NICs of a part of the rate to it. */
    int ports = cl->nic_ports > 0 ? cl->nic_ports : 1;
    x.nics *= ports;
    double line = cl->nic_line_gbps > 0 ? cl->nic_line_gbps : cl->nic_gbps;
    x.net_bw = line / 8.0 / ports;
    x.hbm_bw = cl->gpu.hbm_gbs;
    if (x.nranks > 1) {
        x.ring = search_ring(&x);
        x.tree = search_tree(&x, x.ring);
        x.nvls_g = search_nvls(&x);
    }
    *t = x;
    return ZS_OK;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int zs_nccl_topo_group(const zs_cluster *cl, const int *ranks, int n, zs_nccl_topo *t, zs_err *e)
{
    if (n < 1)
        return zs_err_set(e, ZS_EINPUT, "group", NULL, "a collective needs at least one rank");
    /* (node, nic) of each member, sorted: nodes, the most members on one
     * node and the fewest NICs one node's members reach. */
    int *key = malloc(sizeof(int) * (size_t)n);
    if (!key)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < n; i++)
        key[i] =
            zs_cluster_node_of(cl, ranks[i]) * cl->nics_per_node + zs_cluster_nic_of(cl, ranks[i]);
    qsort(key, (size_t)n, sizeof *key, cmp_int);
    int nodes = 0, ppn = 0, nics = cl->nics_per_node;
    for (int i = 0; i < n;) {
        int node = key[i] / cl->nics_per_node, members = 0, k = 0;
        for (; i < n && key[i] / cl->nics_per_node == node; i++) {
            members++;
            if (members == 1 || key[i] != key[i - 1])
                k++;
        }
        nodes++;
        ppn = members > ppn ? members : ppn;
        nics = k < nics ? k : nics;
    }
    free(key);
    return zs_nccl_topo_init(cl, nodes, ppn, nics, t, e);
}

/* ---- parameters ---------------------------------------------------------------- */
static const char *const param_names[ZS_NP_NPARAMS] = {
    "nvlink_eff",      "pcie_eff",          "net_eff",         "intra_lat_scale",
    "net_lat_scale",   "tree_eff",          "nvls_eff",        "nvls_tree_eff",
    "collnet_eff",     "pat_eff",           "ramp_half_bytes", "ramp_power",
    "reduce_hbm_frac", "reduce_half_bytes", "reduce_power",    "net_ramp_half_bytes",
    "net_ramp_power"};

void zs_nccl_params_default(zs_nccl_params *p)
{
    memset(p, 0, sizeof *p);
    for (int i = 0; i < ZS_NP_NPARAMS; i++)
        p->v[i] = 1.0;
    p->v[ZS_NP_RAMP_HALF] = 0;
    p->v[ZS_NP_RED_HALF] = 0;
    p->v[ZS_NP_RED_FRAC] = 1.0 / 3.0;
    p->v[ZS_NP_NET_RAMP_HALF] = 0;
}

const char *zs_nccl_param_name(int i)
{
    return i >= 0 && i < ZS_NP_NPARAMS ? param_names[i] : "?";
}

int zs_nccl_param_parse(const char *name)
{
    for (int i = 0; i < ZS_NP_NPARAMS; i++)
        if (strcmp(name, param_names[i]) == 0)
            return i;
    return -1;
}

double zs_nccl_param_max(int i)
{
    /* The reduce step reads two buffers and writes one: at most a third of
     * HBM. A ramp power above 1 would make the overhead grow as messages
     * shrink (without bound below the measured sizes). */
    if (i == ZS_NP_RED_FRAC)
        return 1.0 / 3.0;
    if (i == ZS_NP_RAMP_POW || i == ZS_NP_RED_POW || i == ZS_NP_NET_RAMP_POW)
        return 1.0;
    return INFINITY;
}

/* ---- the model ------------------------------------------------------------------ */
double zs_nccl_bus_bytes(zs_coll_kind k, int n, double nbytes)
{
    double f = n > 1 ? (double)(n - 1) / n : 0;
    if (k == ZS_COLL_ALLTOALL) /* nBytes is n ranks' buffers; each GPU sends (n-1)/n of its own */
        return n > 1 ? f * nbytes / n : 0;
    return k == ZS_COLL_ALLREDUCE ? 2 * f * nbytes : f * nbytes;
}

double zs_nccl_nbytes(zs_coll_kind k, int n, double bytes)
{
    return k == ZS_COLL_ALLGATHER || k == ZS_COLL_REDUCESCATTER || k == ZS_COLL_ALLTOALL ? bytes * n
                                                                                         : bytes;
}

static int nsteps_of(zs_coll_kind k, int n)
{
    return k == ZS_COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
}

/* Whether NCCL would consider the pair at all (ncclTopoTuneModel's
 * filters and the enable rules of 2.29.2). */
static int available(const zs_nccl_topo *t, zs_coll_kind k, zs_nccl_algo a, zs_nccl_proto p)
{
    int ar = k == ZS_COLL_ALLREDUCE, agrs = k == ZS_COLL_ALLGATHER || k == ZS_COLL_REDUCESCATTER;
    if (t->nranks < 2 || !(ar || agrs))
        return 0;
    /* LL128: NVLink inside the node (or one GPU per node), sm70+. */
    if (p == ZS_NCCL_LL128 && (t->sm < 70 || !(t->nvlink || t->ppn == 1)))
        return 0;
    switch (a) {
    case ZS_NCCL_RING:
        return t->ring.nch > 0;
    case ZS_NCCL_TREE:
        return ar && t->tree.nch > 0;
    case ZS_NCCL_NVLS:
        return p == ZS_NCCL_SIMPLE && t->nvls_g.nch >= 2 && (t->nnodes == 1 || (ar && t->collnet));
    case ZS_NCCL_NVLS_TREE:
        return p == ZS_NCCL_SIMPLE && ar && t->nnodes > 1 && t->nvls_g.nch >= 2;
    case ZS_NCCL_COLLNET_DIRECT:
        return p == ZS_NCCL_SIMPLE && t->collnet && t->nnodes > 1 && t->nvlink;
    case ZS_NCCL_COLLNET_CHAIN:
        return p == ZS_NCCL_SIMPLE && ar && t->collnet && t->nnodes > 1;
    case ZS_NCCL_PAT:
        return p == ZS_NCCL_SIMPLE && agrs && t->ppn == 1 && t->nnodes > 1 && t->sm >= 60;
    default:
        return 0;
    }
}

/* Link efficiencies and latency scales applied to NCCL's formulas (all 1
 * for NCCL's own estimate). */
typedef struct scales {
    double intra, inter;       /* on graph bandwidths inside a node / on the network */
    double lat_intra, lat_net; /* on base + intra latencies / network latencies */
} scales;

static const scales nccl_scales = {1, 1, 1, 1};

/* The bus bandwidth NCCL assigns to a pair (GB/s), before the bus-to-
 * algorithm ratio; 0 when the pair cannot run. */
static double bus_bw(const zs_nccl_topo *t, zs_coll_kind k, zs_nccl_algo a, zs_nccl_proto p,
                     const scales *s)
{
    int cc = cc_index(t->sm), sc = scale_index(t->nnodes), ar = k == ZS_COLL_ALLREDUCE;
    const zs_nccl_graph *g = a == ZS_NCCL_TREE                             ? &t->tree
                             : a == ZS_NCCL_NVLS || a == ZS_NCCL_NVLS_TREE ? &t->nvls_g
                                                                           : &t->ring;
    /* A multi-node ring or tree graph runs at the network's speed; the
     * NVLS graphs have an NVLink side and a network side. */
    int nvls = a == ZS_NCCL_NVLS || a == ZS_NCCL_NVLS_TREE;
    double si = t->nnodes > 1 && !nvls ? s->inter : s->intra;
    double so = t->nnodes > 1 ? s->inter : s->intra;
    double bw_intra = g->bw_intra * si, bw_inter = g->bw_inter * so;
    int collnet = a == ZS_NCCL_COLLNET_DIRECT || a == ZS_NCCL_COLLNET_CHAIN;
    double bw = t->nnodes <= 2 || collnet ? bw_intra : bw_inter;
    double bw_scale = t->nnodes <= 2 || collnet ? si : so;
    double busbw = g->nch * bw;
    double llmax = t->nnodes == 1 ? ll_max_bw[cc][0] : ll_max_bw[0][sc];
    if (nvls) {
        double eff = nvls_efficiency[cc];
        double intra = bw_intra * eff * (g->nch - 1) / g->nch;
        intra *= ar ? 2.0 : (double)(t->ppn - 1) / t->ppn;
        double inter = bw_inter * (a == ZS_NCCL_NVLS_TREE && t->nnodes <= 2 ? 2 : 1);
        double b = intra < inter ? intra : inter;
        if (a == ZS_NCCL_NVLS_TREE) {
            /* NCCL's per-channel cap is in the units of its estimates: it
             * scales with the fitted efficiency of the side that limits. */
            double cap = nvls_tree_max[cc][sc] * (intra < inter ? si : so);
            b = cap < b ? cap : b;
        }
        return g->nch * b;
    }
    if (a == ZS_NCCL_COLLNET_DIRECT) {
        if (!ar) {
            double b = bw_intra < bw_inter * 0.9 ? bw_intra : bw_inter * 0.9;
            return t->ppn * b;
        }
        double f = (double)t->ppn / g->nch;
        f -= (f - 1) / 2;
        busbw /= f;
        if (t->sm >= 90)
            busbw *= 0.85;
        return busbw;
    }
    if (a == ZS_NCCL_PAT)
        return busbw * 0.75;
    if (a == ZS_NCCL_RING) {
        if (p == ZS_NCCL_LL)
            busbw = busbw * 0.5 < llmax ? busbw * 0.5 : llmax;
        else if (p == ZS_NCCL_LL128) {
            double cap = g->nch * ring_ll128_max[cc][sc];
            busbw = busbw * 0.92 < cap ? busbw * 0.92 : cap;
        }
        return busbw;
    }
    if (a == ZS_NCCL_TREE) {
        double cap = g->nch * tree_max[cc][sc] * bw_scale; /* in NCCL's units, as above */
        busbw = busbw * 0.92 < cap ? busbw * 0.92 : cap;
        if (p == ZS_NCCL_LL)
            busbw = busbw / 3.8 < llmax ? busbw / 3.8 : llmax;
        else if (p == ZS_NCCL_LL128) {
            double c2 = g->nch * tree_ll128_max[cc][sc];
            double b = busbw * (t->nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
            busbw = b < c2 ? b : c2;
        }
        /* sm90 searches the balanced tree first: no x0.85 TREE-pattern
         * penalty for the graphs we assume. */
        return busbw;
    }
    return busbw; /* CollNet chain */
}

/* busBw -> algBw (tuning.cc's ratio; none for all-gather and
 * reduce-scatter on anything but a ring). */
static double alg_ratio(const zs_nccl_topo *t, zs_coll_kind k, zs_nccl_algo a)
{
    if (a != ZS_NCCL_RING && k != ZS_COLL_ALLREDUCE)
        return 1.0;
    if (a == ZS_NCCL_RING || a == ZS_NCCL_NVLS || a == ZS_NCCL_NVLS_TREE)
        return (double)t->nranks / nsteps_of(k, t->nranks);
    return 0.5; /* tree, CollNet */
}

/* NCCL's latency (us) of a pair. */
static double latency_us(const zs_nccl_topo *t, zs_coll_kind k, zs_nccl_algo a, zs_nccl_proto p,
                         double nbytes, const scales *s)
{
    int intra_hw = t->nvlink ? HW_NVLINK : HW_PCI;
    double base = base_lat[a][p] * s->lat_intra;
    double intra = hw_lat[intra_hw][a][p] * s->lat_intra;
    double inter =
        (t->ppn == 1 ? hw_lat[HW_NET][ZS_NCCL_TREE][p] : hw_lat[HW_NET][a][p]) * s->lat_net;
    int nn = t->nnodes, n = t->nranks, ppn = t->ppn, l2 = log2i(nn);
    double lat = base;
    switch (a) {
    case ZS_NCCL_RING: {
        double over = nn > 1 ? NET_OVERHEAD_US * (p == ZS_NCCL_SIMPLE ? 3 : 1) * s->lat_net : 0;
        if (intra < over)
            intra = over;
        int nsteps = nsteps_of(k, n);
        int ninter = nn == 1 ? 0 : k == ZS_COLL_ALLREDUCE ? 2 * (nn - 1) : nn - 1;
        lat += (nsteps - ninter) * intra + ninter * inter;
        int nch = 2 * t->ring.nch < 32 ? 2 * t->ring.nch : 32; /* runtime channels */
        if (p == ZS_NCCL_SIMPLE && nn > 1 && k == ZS_COLL_ALLREDUCE &&
            nbytes / ((double)nch * n) >= 64)
            lat *= t->sm < 80 ? 1.9 : RING_PLATEAU;
        break;
    }
    case ZS_NCCL_TREE:
        lat += 2 * ((ppn - 1) * intra + l2 * inter);
        break;
    case ZS_NCCL_COLLNET_DIRECT:
        lat += 2 * ((ppn - 1 < 1 ? ppn - 1 : 1) * intra + (ppn - 1) * 0.4) + inter;
        break;
    case ZS_NCCL_COLLNET_CHAIN:
        lat += 2 * (ppn - 1) * intra + inter;
        break;
    case ZS_NCCL_NVLS:
        lat = intra + (nn > 1 ? inter : 0);
        break;
    case ZS_NCCL_NVLS_TREE:
        lat += intra + 2 * l2 * inter;
        break;
    case ZS_NCCL_PAT:
        lat = base + l2 * inter / 3.5 + n * 2.8 * s->lat_intra;
        break;
    default:
        break;
    }
    return lat;
}

double zs_nccl_ring_step_us(int network)
{
    return hw_lat[network ? HW_NET : HW_NVLINK][ZS_NCCL_RING][ZS_NCCL_SIMPLE];
}

/* Tree all-reduce bandwidth correction by size (ncclTopoGetAlgoTime). */
static double correction(zs_coll_kind k, zs_nccl_algo a, zs_nccl_proto p, double nbytes)
{
    int ls = log2i(nbytes / 64);
    if (a == ZS_NCCL_TREE && k == ZS_COLL_ALLREDUCE && ls >= 0 && ls < 23)
        return tree_correction[p][ls];
    return 1.0;
}

double zs_nccl_model_us(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, zs_nccl_algo a,
                        zs_nccl_proto p)
{
    if (a < 0 || a >= ZS_NCCL_NALGOS || p < 0 || p >= ZS_NCCL_NPROTOS || !available(t, k, a, p))
        return -1;
    double bus = bus_bw(t, k, a, p, &nccl_scales);
    if (!(bus > 0))
        return -1;
    double algbw = bus * alg_ratio(t, k, a) * correction(k, a, p, nbytes);
    return latency_us(t, k, a, p, nbytes, &nccl_scales) + nbytes / (1000.0 * algbw);
}

static double eff_of(const zs_nccl_params *prm, zs_nccl_algo a)
{
    switch (a) {
    case ZS_NCCL_TREE:
        return prm->v[ZS_NP_TREE_EFF];
    case ZS_NCCL_NVLS:
        return prm->v[ZS_NP_NVLS_EFF];
    case ZS_NCCL_NVLS_TREE:
        return prm->v[ZS_NP_NVLS_TREE_EFF];
    case ZS_NCCL_COLLNET_DIRECT:
    case ZS_NCCL_COLLNET_CHAIN:
        return prm->v[ZS_NP_COLLNET_EFF];
    case ZS_NCCL_PAT:
        return prm->v[ZS_NP_PAT_EFF];
    default:
        return 1.0;
    }
}

static double ramp(double half, double pw, double x)
{
    return half > 0 && x > 0 ? 1.0 + pow(half / x, pw) : 1.0;
}

/* The data term's size ramp on this topology: across nodes the network's
 * own once fitted (a NIC's pipeline fills with other chunk and proxy
 * costs than NVLink's), else the one ramp. */
static double ramp_of(const zs_nccl_topo *t, const zs_nccl_params *prm, double bus)
{
    if (t->nnodes > 1 && prm->fitted[ZS_NP_NET_RAMP_HALF])
        return ramp(prm->v[ZS_NP_NET_RAMP_HALF], prm->v[ZS_NP_NET_RAMP_POW], bus);
    return ramp(prm->v[ZS_NP_RAMP_HALF], prm->v[ZS_NP_RAMP_POW], bus);
}

/* All-to-all: NCCL runs it as grouped sends and receives, no tuning. Each
 * GPU sends (ppn-1)/n of its buffer over NVLink and the rest through the
 * NICs of its node (shared by its ppn GPUs); one step's latency. */
static void eval_p2p(const zs_nccl_topo *t, double nbytes, const zs_nccl_params *prm,
                     zs_nccl_choice *c)
{
    int n = t->nranks, ppn = t->ppn;
    double sin = t->nvlink ? prm->v[ZS_NP_NVL_EFF] : prm->v[ZS_NP_PCI_EFF];
    double intra_bw = (t->nvlink ? t->nvl_bw : t->pci_bw) * sin;
    double nic = t->net_bw < t->pci_bw ? t->net_bw : t->pci_bw;
    double inter_bw = nic * t->nics / ppn * prm->v[ZS_NP_NET_EFF];
    double per = nbytes / n / n; /* each rank's buffer, one n-th to each peer */
    double ti = (ppn - 1) * per / (intra_bw * 1e9), to = (n - ppn) * per / (inter_bw * 1e9);
    double lat = (base_lat[ZS_NCCL_RING][ZS_NCCL_SIMPLE] +
                  hw_lat[t->nvlink ? HW_NVLINK : HW_PCI][ZS_NCCL_RING][ZS_NCCL_SIMPLE]) *
                 prm->v[ZS_NP_INTRA_LAT];
    if (t->nnodes > 1)
        lat += hw_lat[HW_NET][ZS_NCCL_RING][ZS_NCCL_SIMPLE] * prm->v[ZS_NP_NET_LAT];
    double bus = zs_nccl_bus_bytes(ZS_COLL_ALLTOALL, n, nbytes);
    double data = (ti > to ? ti : to) * ramp_of(t, prm, bus);
    c->algo = ZS_NCCL_P2P;
    c->proto = ZS_NCCL_SIMPLE;
    c->lat_s = lat * 1e-6;
    c->data_s = data;
    c->reduce_s = 0;
    c->seconds = c->lat_s + data;
    c->nccl_us = lat + (ti > to ? ti : to) * 1e6;
    c->busbw_gbs = data > 0 ? bus / (ti > to ? ti : to) / 1e9 : 0;
    c->nsteps = n - 1;
}

int zs_nccl_eval(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, zs_nccl_algo a,
                 zs_nccl_proto p, const zs_nccl_params *prm, zs_nccl_choice *out, zs_err *e)
{
    zs_nccl_params def;
    if (!prm) {
        zs_nccl_params_default(&def);
        prm = &def;
    }
    zs_nccl_choice c;
    memset(&c, 0, sizeof c);
    if (!(nbytes >= 0) || !isfinite(nbytes))
        return zs_err_set(e, ZS_EINPUT, zs_coll_kind_name(k), "give a size >= 0",
                          "bad collective size %g", nbytes);
    if (t->nranks < 2 || nbytes == 0) { /* nothing moves */
        c.algo = k == ZS_COLL_ALLTOALL ? ZS_NCCL_P2P : ZS_NCCL_RING;
        c.proto = ZS_NCCL_SIMPLE;
        *out = c;
        return ZS_OK;
    }
    if (k == ZS_COLL_ALLTOALL) {
        eval_p2p(t, nbytes, prm, &c);
        *out = c;
        return ZS_OK;
    }
    if (a < 0 || a >= ZS_NCCL_NALGOS || p < 0 || p >= ZS_NCCL_NPROTOS || !available(t, k, a, p))
        return zs_err_set(e, ZS_EINPUT, zs_coll_kind_name(k),
                          "pick an algorithm and protocol NCCL runs on this topology",
                          "NCCL does not run %s %s/%s on %d ranks over %d node(s) here",
                          zs_coll_kind_name(k), zs_nccl_algo_name(a), zs_nccl_proto_name(p),
                          t->nranks, t->nnodes);
    double sin = t->nvlink ? prm->v[ZS_NP_NVL_EFF] : prm->v[ZS_NP_PCI_EFF];
    scales s = {sin, prm->v[ZS_NP_NET_EFF], prm->v[ZS_NP_INTRA_LAT], prm->v[ZS_NP_NET_LAT]};
    double bus = bus_bw(t, k, a, p, &s);
    if (!(bus > 0))
        return zs_err_set(e, ZS_EINPUT, zs_coll_kind_name(k), NULL,
                          "%s/%s has no bandwidth on this topology", zs_nccl_algo_name(a),
                          zs_nccl_proto_name(p));
    double ratio = alg_ratio(t, k, a), corr = correction(k, a, p, nbytes);
    double algbw = bus * ratio * corr * eff_of(prm, a); /* GB/s */
    int n = t->nranks;
    double busbytes = zs_nccl_bus_bytes(k, n, nbytes);
    c.algo = a;
    c.proto = p;
    c.nsteps = nsteps_of(k, n);
    c.nccl_us = zs_nccl_model_us(t, k, nbytes, a, p);
    c.lat_s = latency_us(t, k, a, p, nbytes, &s) * 1e-6;
    /* The size ramp: an overhead that grows with the bytes each GPU moves
     * (as bus/B x (half/bus)^pow), at the algorithm's Simple bandwidth
     * whatever the protocol, so a slow protocol does not inflate it. */
    double simple = bus_bw(t, k, a, ZS_NCCL_SIMPLE, &s) * ratio * corr * eff_of(prm, a);
    double rs = busbytes / nbytes * simple * 1e9; /* B/s, nccl-tests convention */
    c.data_s = nbytes / (algbw * 1e9) + busbytes / rs * (ramp_of(t, prm, busbytes) - 1);
    /* The last step of a reduce-scatter ring (and PAT) reduces what it
     * received into the output without sending: one n-th of the buffer
     * read twice and written once from HBM, after the others. */
    if (k == ZS_COLL_REDUCESCATTER && (a == ZS_NCCL_RING || a == ZS_NCCL_PAT)) {
        double rate = prm->v[ZS_NP_RED_FRAC] * t->hbm_bw * 1e9;
        c.reduce_s =
            nbytes / n / rate * ramp(prm->v[ZS_NP_RED_HALF], prm->v[ZS_NP_RED_POW], busbytes);
    }
    c.seconds = c.lat_s + c.data_s + c.reduce_s;
    c.busbw_gbs = busbytes / nbytes * algbw;
    *out = c;
    return ZS_OK;
}

int zs_nccl_choose(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, unsigned algo_mask,
                   unsigned proto_mask, const zs_nccl_params *prm, zs_nccl_choice *out, zs_err *e)
{
    if (k == ZS_COLL_ALLTOALL || t->nranks < 2 || nbytes == 0)
        return zs_nccl_eval(t, k, nbytes, ZS_NCCL_RING, ZS_NCCL_SIMPLE, prm, out, e);
    if (!algo_mask)
        algo_mask = ZS_NCCL_ALL_ALGOS;
    if (!proto_mask)
        proto_mask = ZS_NCCL_ALL_PROTOS;
    /* topoGetAlgoInfo: the smallest time wins, ties to the first pair in
     * NCCL's order (algorithm, then protocol). */
    double best = INFINITY;
    int ba = -1, bp = -1;
    for (int a = 0; a < ZS_NCCL_NALGOS; a++) {
        if (!(algo_mask & (1u << a)))
            continue;
        for (int p = 0; p < ZS_NCCL_NPROTOS; p++) {
            if (!(proto_mask & (1u << p)))
                continue;
            double us = zs_nccl_model_us(t, k, nbytes, (zs_nccl_algo)a, (zs_nccl_proto)p);
            if (us >= 0 && us < best) {
                best = us;
                ba = a;
                bp = p;
            }
        }
    }
    if (ba < 0) {
        char am[128], pm[64];
        zs_nccl_mask_str(algo_mask, 1, am, sizeof am);
        zs_nccl_mask_str(proto_mask, 0, pm, sizeof pm);
        return zs_err_set(e, ZS_EINPUT, zs_coll_kind_name(k),
                          "allow more algorithms or protocols (NCCL_ALGO / NCCL_PROTO)",
                          "no enabled pair (algorithms '%s', protocols '%s') can run %s on %d "
                          "ranks over %d node(s)",
                          am[0] ? am : "all", pm[0] ? pm : "all", zs_coll_kind_name(k), t->nranks,
                          t->nnodes);
    }
    return zs_nccl_eval(t, k, nbytes, (zs_nccl_algo)ba, (zs_nccl_proto)bp, prm, out, e);
}

void zs_nccl_traffic_of(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, zs_nccl_algo a,
                        zs_nccl_traffic *out)
{
    int n = t->nranks, ppn = t->ppn, nn = t->nnodes;
    double bus = zs_nccl_bus_bytes(k, n, nbytes), S = nbytes;
    double share = nn > 1 ? (double)(ppn - 1) / ppn : 1.0; /* ring edges inside a node */
    zs_nccl_traffic x = {0, 0};
    if (n < 2 || nbytes <= 0) {
        *out = x;
        return;
    }
    switch (a) {
    case ZS_NCCL_TREE: /* up the chain and the tree, then down */
        x.gpu_intra = 2 * S * (ppn - 1) / ppn;
        x.node_net = nn > 1 ? 2 * S * (nn - 1) / nn : 0;
        break;
    case ZS_NCCL_NVLS: /* each GPU's part to the switch (reduced or multicast there) */
        x.gpu_intra = k == ZS_COLL_ALLREDUCE ? S : k == ZS_COLL_ALLGATHER ? S / n : S * (n - 1) / n;
        x.node_net = nn > 1 ? S : 0; /* through the network switches (CollNet) */
        break;
    case ZS_NCCL_NVLS_TREE:
        x.gpu_intra = S;
        x.node_net = 2 * S * (nn - 1) / nn;
        break;
    case ZS_NCCL_COLLNET_DIRECT:
    case ZS_NCCL_COLLNET_CHAIN: /* to the network switch and back */
        x.gpu_intra = S * (ppn - 1) / ppn;
        x.node_net = S;
        break;
    case ZS_NCCL_P2P: /* S/n per rank, S/n^2 to each peer */
        x.gpu_intra = S * (ppn - 1) / n / n;
        x.node_net = nn > 1 ? S * ppn * (n - ppn) / n / n : 0;
        break;
    default: /* ring, PAT */
        x.gpu_intra = ppn > 1 ? bus * share : 0;
        x.node_net = nn > 1 ? bus : 0;
        break;
    }
    *out = x;
}

/* ---- memo of group plans -------------------------------------------------------
 * zs_nccl_group_plan and zs_nccl_group_ctas are pure functions of the
 * cluster, the ranks, the kind, the bytes and the parameters, and the
 * backends ask them the same few questions for every instance of a
 * collective (the analytic backend three times per instance: price, plan,
 * CTAs), each a topology search and NCCL's model over every algorithm and
 * protocol: 6-7% of a 256-iteration analytic point. The memo keeps the
 * answers for one cluster (a copy, compared byte for byte at each call: a
 * different cluster, or the same one changed, empties it) in a
 * direct-mapped table whose entries hold their whole question, so a hit is
 * the same question and returns the same answer. Process-wide (zepsim
 * runs no threads); failures and groups over MEMO_RANKS ranks are not
 * kept. */
#define MEMO_SLOTS 256 /* a power of two */
#define MEMO_RANKS 64

typedef struct memo_ent {
    int used, n, k, has_prm, has_ctas, ctas;
    double bytes;
    zs_nccl_params prm;
    int ranks[MEMO_RANKS];
    zs_nccl_choice ch;
    zs_nccl_traffic tr;
} memo_ent;

static struct {
    int have;
    zs_cluster cl;
    memo_ent e[MEMO_SLOTS];
} memo;

/* a and b are the same cluster to NCCL's model: equal bytes but for the
 * GPU's attention kernels, which it never reads (half the struct, and the
 * comparison runs at every call). */
static int memo_same_cluster(const zs_cluster *a, const zs_cluster *b)
{
    size_t k0 = offsetof(zs_cluster, gpu.kernels), k1 = k0 + sizeof a->gpu.kernels;
    return memcmp(a, b, k0) == 0 &&
           memcmp((const char *)a + k1, (const char *)b + k1, sizeof *a - k1) == 0;
}

/* The entry for this question: a hit (*hit = 1) or the slot to fill; NULL
 * when the question is not memoised. */
static memo_ent *memo_find(const zs_cluster *cl, const int *ranks, int n, zs_coll_kind k,
                           double bytes, const zs_nccl_params *prm, int *hit)
{
    *hit = 0;
    if (n < 1 || n > MEMO_RANKS)
        return NULL;
    if (!memo.have || !memo_same_cluster(&memo.cl, cl)) {
        memset(memo.e, 0, sizeof memo.e);
        memcpy(&memo.cl, cl, sizeof *cl);
        memo.have = 1;
    }
    uint64_t h = 0xcbf29ce484222325ull, b;
    memcpy(&b, &bytes, sizeof b);
    h = (h ^ b) * 0x100000001b3ull;
    h = (h ^ (uint64_t)(uint32_t)k) * 0x100000001b3ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uint32_t)ranks[i]) * 0x100000001b3ull;
    memo_ent *m = &memo.e[(h ^ h >> 29) & (MEMO_SLOTS - 1)];
    *hit = m->used && m->n == n && m->k == (int)k && memcmp(&m->bytes, &bytes, sizeof bytes) == 0 &&
           m->has_prm == (prm != NULL) && (!prm || memcmp(&m->prm, prm, sizeof *prm) == 0) &&
           memcmp(m->ranks, ranks, sizeof *ranks * (size_t)n) == 0;
    return m;
}

static int group_plan(const zs_cluster *cl, const int *ranks, int n, zs_coll_kind k, double bytes,
                      const zs_nccl_params *prm, zs_nccl_choice *ch, zs_nccl_traffic *tr, zs_err *e)
{
    zs_nccl_topo t;
    zs_nccl_choice c;
    int rc = zs_nccl_topo_group(cl, ranks, n, &t, e);
    double nbytes = zs_nccl_nbytes(k, n, bytes);
    if (rc == ZS_OK)
        rc = zs_nccl_choose(&t, k, nbytes, 0, 0, prm, &c, e);
    if (rc)
        return rc;
    if (tr)
        zs_nccl_traffic_of(&t, k, nbytes, c.algo, tr);
    *ch = c;
    return ZS_OK;
}

int zs_nccl_group_plan(const zs_cluster *cl, const int *ranks, int n, zs_coll_kind k, double bytes,
                       const zs_nccl_params *prm, zs_nccl_choice *ch, zs_nccl_traffic *tr,
                       zs_err *e)
{
    int hit;
    memo_ent *m = memo_find(cl, ranks, n, k, bytes, prm, &hit);
    if (!m)
        return group_plan(cl, ranks, n, k, bytes, prm, ch, tr, e);
    if (!hit) {
        zs_nccl_choice c;
        zs_nccl_traffic x;
        int rc = group_plan(cl, ranks, n, k, bytes, prm, &c, &x, e);
        if (rc)
            return rc;
        memset(m, 0, sizeof *m);
        m->used = 1;
        m->n = n;
        m->k = (int)k;
        m->bytes = bytes;
        m->has_prm = prm != NULL;
        if (prm)
            m->prm = *prm;
        memcpy(m->ranks, ranks, sizeof *ranks * (size_t)n);
        m->ch = c;
        m->tr = x;
    }
    if (tr)
        *tr = m->tr;
    *ch = m->ch;
    return ZS_OK;
}

/* ---- SMs held by NCCL's kernels ----------------------------------------------- */

static int pow2_up(int x)
{
    int p = 1;
    while (p < x)
        p *= 2;
    return p;
}

static int group_ctas(const zs_cluster *cl, const int *ranks, int n, zs_coll_kind k, double bytes,
                      const zs_nccl_params *prm)
{
    zs_nccl_choice ch;
    zs_nccl_topo t;
    zs_err e;
    if (n < 2 || zs_nccl_group_plan(cl, ranks, n, k, bytes, prm, &ch, NULL, &e) ||
        zs_nccl_topo_group(cl, ranks, n, &t, &e))
        return 0;
    switch (ch.algo) {
    case ZS_NCCL_RING:
    case ZS_NCCL_PAT:
        return t.ring.nch;
    case ZS_NCCL_TREE:
        return t.tree.nch;
    case ZS_NCCL_NVLS:
    case ZS_NCCL_NVLS_TREE:
        return t.nvls_g.nch;
    case ZS_NCCL_P2P: {
        int c = pow2_up(t.ring.nch > 0 ? t.ring.nch : 1);
        return c < ZS_NCCL_MAXCHANNELS ? c : ZS_NCCL_MAXCHANNELS;
    }
    default:
        return 0;
    }
}

int zs_nccl_group_ctas(const zs_cluster *cl, const int *ranks, int n, zs_coll_kind k, double bytes,
                       const zs_nccl_params *prm)
{
    int hit;
    memo_ent *m = memo_find(cl, ranks, n, k, bytes, prm, &hit);
    if (m && hit && m->has_ctas)
        return m->ctas;
    int ctas = group_ctas(cl, ranks, n, k, bytes, prm);
    /* group_ctas's plan filled the entry unless it failed */
    if ((m = memo_find(cl, ranks, n, k, bytes, prm, &hit)) && hit) {
        m->has_ctas = 1;
        m->ctas = ctas;
    }
    return ctas;
}

void zs_nccl_p2p_chans(const zs_cluster *cl, int src, int dst, int *per, double *part)
{
    int ranks[2] = {src, dst};
    zs_nccl_topo t;
    zs_err e;
    *per = 0;
    *part = 0;
    if (src == dst || zs_nccl_topo_group(cl, ranks, 2, &t, &e))
        return;
    int c;
    if (t.nnodes > 1) {
        /* paths.cc: at least one channel per local NIC, and one per 14 GB/s
         * of them; enqueue.cc: parts of at most NCCL_P2P_NET_CHUNKSIZE. */
        int nics = t.nics > 0 ? t.nics : 1;
        int bw = (int)(nics * t.net_bw);
        c = (bw + 13) / 14;
        c = pow2_up(c > nics ? c : nics);
        *part = 128.0 * 1024;
    } else {
        double link = t.sm >= 100 ? SM100_NVLINK_BW : t.sm >= 90 ? SM90_NVLINK_BW : SM80_NVLINK_BW;
        int links = (int)(t.nvl_bw / link);
        c = pow2_up(t.nvlink ? 2 * (links > 1 ? links : 1) : 2);
        int p2p = pow2_up(t.ring.nch > 0 ? t.ring.nch : 1); /* p2pnChannels */
        c = c < p2p ? c : p2p;
        *part = 32.0 * 512 * 1024; /* 32 x NCCL_P2P_NVL_CHUNKSIZE */
    }
    *per = c;
}

int zs_nccl_p2p_split(int per, double part, double bytes)
{
    if (per <= 0)
        return 0;
    int c = 1;
    while (c < per && bytes / c > part)
        c *= 2;
    return c;
}

int zs_nccl_p2p_ctas(const zs_cluster *cl, int src, int dst, double bytes)
{
    int per;
    double part;
    zs_nccl_p2p_chans(cl, src, dst, &per, &part);
    return zs_nccl_p2p_split(per, part, bytes);
}

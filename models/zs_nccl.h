/* Collectives as NCCL runs them. NCCL (2.29.2, src/graph/tuning.cc) prices
 * every algorithm (ring, tree, NVLS, NVLS-tree, CollNet direct/chain, PAT)
 * with every protocol (LL, LL128, Simple) as latency + bytes / bandwidth,
 * using per-step latency tables and the bandwidth its topology search finds
 * for each algorithm's graph of channels, and runs the cheapest pair. This
 * module reproduces that: zs_nccl_topo is NCCL's view of a group of GPUs on
 * a cluster (NVLink through NVSwitch with or without SHARP, PCIe, NICs with
 * the GPU-NIC affinity, channels found by a simplified graph search),
 * zs_nccl_model_us is NCCL's own cost of one pair, and zs_nccl_choose picks
 * the pair NCCL would pick. The choice is always NCCL's (its constants, its
 * topology figures), so a fit can never change which algorithm runs.
 *
 * How long the chosen pair takes is a separate, calibrated question:
 * zs_nccl_eval evaluates the same formulas with the fitted parameters of
 * zs_nccl_params (the efficiency of each link class against NCCL's
 * estimate, latency scales, per-algorithm efficiencies, the size ramp of
 * the achieved bandwidth and the local reduce step of a reduce-scatter),
 * which zs_nccl_fit fits to nccl-tests measurements. docs/cost-model.md
 * gives every formula and constant with its source.
 *
 * Sizes follow NCCL's nBytes: the whole buffer for all-reduce, the
 * gathered/scattered buffer (n x the per-rank part) for all-gather and
 * reduce-scatter, i.e. the nccl-tests "size" column. All-to-all is not
 * tuned by NCCL (grouped point-to-point): it has one pseudo-algorithm,
 * ZS_NCCL_P2P. Depends on zs_cluster and zs_cost (collective kinds). */
#ifndef ZS_NCCL_H
#define ZS_NCCL_H

#include <stddef.h>

#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_err.h"

/* NCCL's algorithm and protocol indices (devcomm.h order), plus P2P. */
typedef enum zs_nccl_algo {
    ZS_NCCL_TREE = 0,
    ZS_NCCL_RING,
    ZS_NCCL_COLLNET_DIRECT,
    ZS_NCCL_COLLNET_CHAIN,
    ZS_NCCL_NVLS,
    ZS_NCCL_NVLS_TREE,
    ZS_NCCL_PAT,
    ZS_NCCL_NALGOS, /* the ones NCCL tunes */
    ZS_NCCL_P2P = ZS_NCCL_NALGOS
} zs_nccl_algo;

typedef enum zs_nccl_proto {
    ZS_NCCL_LL = 0,
    ZS_NCCL_LL128,
    ZS_NCCL_SIMPLE,
    ZS_NCCL_NPROTOS
} zs_nccl_proto;

#define ZS_NCCL_ALL_ALGOS  ((1u << ZS_NCCL_NALGOS) - 1)
#define ZS_NCCL_ALL_PROTOS ((1u << ZS_NCCL_NPROTOS) - 1)

/* "ring", "tree", "nvls", "nvls-tree", "collnet-direct", "collnet-chain",
 * "pat", "p2p"; "LL", "LL128", "Simple". */
const char *zs_nccl_algo_name(int a);
const char *zs_nccl_proto_name(int p);
/* NCCL_ALGO / NCCL_PROTO values as NCCL reads them: a comma-separated list
 * of names (any case; NCCL's spellings such as NVLSTree and CollnetDirect
 * too), or '^' then names to exclude. Fills a bit mask of enabled ones. */
int zs_nccl_algo_mask_parse(const char *s, unsigned *mask, zs_err *e);
int zs_nccl_proto_mask_parse(const char *s, unsigned *mask, zs_err *e);
/* The mask as NCCL_ALGO/NCCL_PROTO would spell it ("ring,tree"); "" for all. */
void zs_nccl_mask_str(unsigned mask, int algos, char *buf, size_t n);

/* One algorithm's graph as NCCL's topology search leaves it: search
 * channels and the bandwidth each carries inside a node and across the
 * network (GB/s). nch == 0: the algorithm has no graph here. */
typedef struct zs_nccl_graph {
    int nch;
    double bw_intra, bw_inter;
} zs_nccl_graph;

/* NCCL's view of a communicator. */
typedef struct zs_nccl_topo {
    int nranks, nnodes, ppn; /* ppn: ranks per node (the most on any node) */
    int nics;                /* fewest distinct NICs the ranks of one node reach */
    int sm;                  /* compute capability x 10 */
    int nvlink;              /* 1: intra-node over NVLink (NVSwitch); 0: PCIe */
    int nvls, collnet;       /* fabric features (zs_cluster) */
    /* NCCL's link figures, GB/s: a GPU's NVLinks together, the PCIe link
     * (NCCL's per-generation value), one NIC; HBM for the reduce step. */
    double nvl_bw, pci_bw, net_bw, hbm_bw;
    zs_nccl_graph ring, tree, nvls_g; /* nvls_g serves NVLS and NVLS-tree */
} zs_nccl_topo;

/* NCCL's view of `nodes` nodes with `ppn` ranks each reaching `nics` NICs
 * per node (ranks placed in GPU order from GPU 0 of each node when nics <=
 * 0). Bad shapes (ppn above the node's GPUs, nodes < 1) are ZS_EINPUT. */
int zs_nccl_topo_init(const zs_cluster *cl, int nodes, int ppn, int nics, zs_nccl_topo *t,
                      zs_err *e);
/* NCCL's view of the ranks listed (global ranks, any order, no repeats). */
int zs_nccl_topo_group(const zs_cluster *cl, const int *ranks, int n, zs_nccl_topo *t, zs_err *e);

/* ---- calibration parameters ---------------------------------------------------- */
typedef enum zs_nccl_param {
    ZS_NP_NVL_EFF = 0, /* achieved / NCCL-estimated bandwidth, NVLink graphs */
    ZS_NP_PCI_EFF,     /* ... intra-node PCIe graphs */
    ZS_NP_NET_EFF,     /* ... network (NIC) graphs */
    ZS_NP_INTRA_LAT,   /* scale of NCCL's base and intra-node per-step latencies */
    ZS_NP_NET_LAT,     /* scale of NCCL's network per-step latencies */
    ZS_NP_TREE_EFF,    /* per-algorithm efficiency against ring (ring is 1) */
    ZS_NP_NVLS_EFF,
    ZS_NP_NVLS_TREE_EFF,
    ZS_NP_COLLNET_EFF,
    ZS_NP_PAT_EFF,
    ZS_NP_RAMP_HALF, /* bus bytes per GPU at which the data term doubles (0: none) */
    ZS_NP_RAMP_POW,  /* its power */
    ZS_NP_RED_FRAC,  /* local reduce step: rate as a fraction of HBM (<= 1/3) */
    ZS_NP_RED_HALF,  /* its size ramp, as RAMP_HALF */
    ZS_NP_RED_POW,
    ZS_NP_NET_RAMP_HALF, /* the size ramp of transfers that cross the network (unfitted: RAMP_*) */
    ZS_NP_NET_RAMP_POW,
    ZS_NP_NPARAMS
} zs_nccl_param;

typedef struct zs_nccl_params {
    double v[ZS_NP_NPARAMS];
    unsigned char fitted[ZS_NP_NPARAMS]; /* 1: from measurements */
} zs_nccl_params;

/* NCCL's own figures: efficiencies and latency scales 1, no size ramp, the
 * reduce step at a third of HBM (it reads two buffers and writes one). */
void zs_nccl_params_default(zs_nccl_params *p);
const char *zs_nccl_param_name(int i);
int zs_nccl_param_parse(const char *name); /* -1 when unknown */
/* Largest value a parameter may take (RED_FRAC: 1/3), else INFINITY. */
double zs_nccl_param_max(int i);

/* ---- NCCL's model and the calibrated prediction ------------------------------ */
typedef struct zs_nccl_choice {
    zs_nccl_algo algo;
    zs_nccl_proto proto;
    double nccl_us;   /* NCCL's own estimate of the pair (its tuning model) */
    double seconds;   /* calibrated prediction */
    double lat_s;     /* latency part of seconds */
    double data_s;    /* bandwidth part (with the size ramp) */
    double reduce_s;  /* local reduce step */
    double busbw_gbs; /* calibrated bus bandwidth (nccl-tests convention), before the ramp */
    int nsteps;       /* ring-equivalent steps (2(n-1) all-reduce, n-1 others) */
} zs_nccl_choice;

/* NCCL's per-step latency (us) of a ring/Simple step over NVLink
 * (network 0: 3.4) or across the network (network 1: 14), its table's
 * figures before any calibrated scale. */
double zs_nccl_ring_step_us(int network);
/* NCCL's estimate (us) of one pair, or -1 when NCCL would not run it. */
double zs_nccl_model_us(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, zs_nccl_algo a,
                        zs_nccl_proto p);
/* Evaluates one pair with calibration parameters (NULL: defaults). Returns
 * ZS_EINPUT when NCCL would not run that pair on this topology. */
int zs_nccl_eval(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, zs_nccl_algo a,
                 zs_nccl_proto p, const zs_nccl_params *prm, zs_nccl_choice *out, zs_err *e);
/* The pair NCCL runs among the enabled ones (masks 0: all), evaluated with
 * prm. ZS_EINPUT when the masks leave nothing NCCL can run. */
int zs_nccl_choose(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, unsigned algo_mask,
                   unsigned proto_mask, const zs_nccl_params *prm, zs_nccl_choice *out, zs_err *e);

/* What a pair moves over which links, for the backends: the bytes each
 * GPU sends inside its node (NVLink, or PCIe without it) and each node
 * sends into the network (over all the NICs its members reach, `nics` of
 * them); receives mirror sends. Rings send the bus bytes (a node's share
 * of the ring edges leaves it); trees send the buffer up and down; NVLS
 * sends each GPU's contribution to the switch; all-to-all each pair's part.
 * docs/cost-model.md lists them. */
typedef struct zs_nccl_traffic {
    double gpu_intra; /* bytes per GPU inside its node */
    double node_net;  /* bytes per node into the network */
} zs_nccl_traffic;

void zs_nccl_traffic_of(const zs_nccl_topo *t, zs_coll_kind k, double nbytes, zs_nccl_algo a,
                        zs_nccl_traffic *out);

/* One collective of a plan, as both backends price it: NCCL's choice on
 * the group's topology (the ranks listed, any order), its calibrated time
 * (prm NULL: NCCL's own figures) and its traffic. bytes is each rank's
 * buffer as zs_cost_ops.collective takes it. A pure function of its
 * inputs, answered from a memo when asked again (zs_nccl.c), as is
 * zs_nccl_group_ctas. */
int zs_nccl_group_plan(const zs_cluster *cl, const int *ranks, int n, zs_coll_kind k, double bytes,
                       const zs_nccl_params *prm, zs_nccl_choice *ch, zs_nccl_traffic *tr,
                       zs_err *e);

/* ---- SMs held by NCCL's kernels ----------------------------------------------- */
#define ZS_NCCL_MAXCHANNELS 64 /* the most channels NCCL runs (src/include/device.h) */

/* NCCL launches one CTA per channel of a plan (src/enqueue.cc: the grid is
 * the channel mask's population) and each CTA holds an SM while the kernel
 * runs. The CTAs of the collective zs_nccl_group_plan prices: the channel
 * count of the graph of the algorithm NCCL picks (ring and PAT: the ring
 * graph, tree, NVLS and NVLS-tree theirs); all-to-all (grouped
 * point-to-point) stripes its peers over every p2p channel, the ring's
 * channel count rounded up to a power of two (ncclTopoComputeP2pChannels).
 * 0 when the plan fails or the group is one rank. */
int zs_nccl_group_ctas(const zs_cluster *cl, const int *ranks, int n, zs_coll_kind k, double bytes,
                       const zs_nccl_params *prm);
/* The CTAs of one send (or receive) of `bytes` between global ranks src
 * and dst: NCCL's channels per peer (src/graph/paths.cc,
 * ncclTopoGetNchannels: across nodes max(local NICs, NIC GB/s / 14
 * (NCCL_P2P_PER_CHANNEL_NET_BW)), inside a node 2 x NVLinks (2 over PCIe),
 * the p2p channels at most, a power of two), of which a transfer uses the
 * fewest that keep each part at most NCCL's part size (src/enqueue.cc,
 * addP2pToPlan: the p2p chunk across nodes, 128 KiB; 32 chunks of 512 KiB
 * inside a node), starting from one channel per operation (as in a
 * communicator of at least as many ranks as p2p channels; a smaller one
 * starts from more: this is a floor). */
int zs_nccl_p2p_ctas(const zs_cluster *cl, int src, int dst, double bytes);
/* The same in two steps, for a caller pricing many transfers between
 * pairs alike: the channels per peer and the largest part of src and dst
 * (0 and 0 when src == dst or the pair is not on the cluster), then the
 * CTAs of `bytes` from them. */
void zs_nccl_p2p_chans(const zs_cluster *cl, int src, int dst, int *per, double *part);
int zs_nccl_p2p_split(int per, double part, double bytes);

/* nccl-tests bus bytes per GPU for a collective of nBytes on n ranks
 * (all-to-all: the bytes each GPU sends, (n-1)/n of its nBytes/n buffer). */
double zs_nccl_bus_bytes(zs_coll_kind k, int n, double nbytes);
/* NCCL's nBytes for zs_cost's per-rank `bytes` (zs_cost_ops.collective). */
double zs_nccl_nbytes(zs_coll_kind k, int n, double bytes);

/* ---- fitting ------------------------------------------------------------------- */
/* One measured collective. The fit fills algo, proto and predicted. */
typedef struct zs_nccl_obs {
    zs_coll_kind kind;
    int nodes, ppn;
    unsigned algo_mask, proto_mask; /* NCCL_ALGO / NCCL_PROTO of the run, 0: default */
    double nbytes, seconds;
    zs_nccl_algo algo;
    zs_nccl_proto proto;
    double predicted;
} zs_nccl_obs;

/* Fits the parameters the observations can identify (the others keep
 * their defaults, fitted = 0) by least squares on relative errors, and
 * fills each observation's pair and prediction. ZS_EINPUT when an
 * observation does not fit the cluster or no pair can run it. */
int zs_nccl_fit(const zs_cluster *cl, zs_nccl_obs *obs, size_t n, zs_nccl_params *out, zs_err *e);

#endif

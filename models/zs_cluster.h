/* Cluster descriptions: nodes of GPUs joined by NVLink through an NVSwitch
 * (with or without NVLink SHARP), PCIe switches that each hold gpus_per_nic
 * GPUs and one NIC (the static GPU-NIC affinity), and a rail-optimised
 * leaf/spine fabric (NIC k of every node on leaf k; with or without
 * in-network reduction). Everything a backend needs to build a platform and a cost
 * model needs to price a transfer. Depends on zs_gpu and zs_config. */
#ifndef ZS_CLUSTER_H
#define ZS_CLUSTER_H

#include <stdio.h>

#include "zs_config.h"
#include "zs_err.h"
#include "zs_gpu.h"

typedef struct zs_cluster {
    char name[64];
    char source[256]; /* where the numbers come from (optional, free text) */
    zs_gpu gpu;
    int nodes;
    int gpus_per_node;
    int nics_per_node;
    double nic_gbps; /* NIC line rate, Gb/s (bits) */
    /* The NIC's line rate when nic_gbps holds a calibrated, achieved rate
     * (zs_calib_apply_links): NCCL's view of the network is the line rate,
     * which a fitted net_eff then scales. 0: nic_gbps is the line rate.
     * Not read from cluster files. */
    double nic_line_gbps;
    int nic_ports;            /* ports (or virtual functions) per NIC that NCCL sees as NICs of
                                 their own, nic_gbps / nic_ports each: it plans channels per
                                 port (models/zs_nccl.c); the platform keeps one link */
    double pcie_gbs;          /* PCIe switch link per direction, GB/s */
    double nvlink_latency_us; /* one NVLink hop through the NVSwitch */
    double pcie_latency_us;   /* GPU <-> PCIe switch <-> NIC */
    double nic_latency_us;    /* NIC to leaf switch, per end */
    double fabric_latency_us; /* one switch hop inside the fabric */
    int nodes_per_leaf;       /* nodes whose NIC k share one rail leaf */
    double oversubscription;  /* leaf down-links : spine up-links bandwidth */
    /* Fabric features NCCL's algorithm choice depends on (models/zs_nccl.h). */
    int nvswitch; /* 1: the GPUs of a node reach each other through NVSwitch */
    int nvls;     /* 1: the NVSwitch does NVLink SHARP (multicast/reduction: NVLS) */
    int collnet;  /* 1: the network switches reduce (InfiniBand SHARP: CollNet) */
} zs_cluster;

/* Link classes every backend reports bytes and busy time for. */
typedef enum zs_link_class {
    ZS_LINK_NVLINK = 0,
    ZS_LINK_PCIE,
    ZS_LINK_NIC,
    ZS_LINK_FABRIC,
    ZS_LINK_NCLASSES
} zs_link_class;

const char *zs_link_class_name(int c);

extern const zs_field zs_cluster_fields[];
extern const size_t zs_cluster_nfields;

/* Loads a preset or JSON file; nodes > 0 overrides the node count. */
int zs_cluster_load(const char *name_or_file, int nodes, zs_cluster *out, zs_err *e);
int zs_cluster_check(const zs_cluster *c, const char *where, zs_err *e);

static inline int zs_cluster_gpus(const zs_cluster *c)
{
    return c->nodes * c->gpus_per_node;
}
static inline int zs_cluster_gpus_per_nic(const zs_cluster *c)
{
    return c->gpus_per_node / c->nics_per_node;
}
static inline int zs_cluster_node_of(const zs_cluster *c, int rank)
{
    return rank / c->gpus_per_node;
}
/* NIC index inside the node that GPU `rank` reaches the network through. */
static inline int zs_cluster_nic_of(const zs_cluster *c, int rank)
{
    return (rank % c->gpus_per_node) / zs_cluster_gpus_per_nic(c);
}
/* Bandwidth of one link of a class, bytes/s. */
double zs_cluster_link_bw(const zs_cluster *c, zs_link_class lc);
/* Uncontended one-way latency (s) and bottleneck bandwidth (bytes/s) of the
 * default path between two GPUs (NVLink inside a node; GPU-PCIe-NIC-fabric-
 * NIC-PCIe-GPU across nodes). */
void zs_cluster_path(const zs_cluster *c, int src, int dst, double *latency_s, double *bw_Bps);

void zs_cluster_print(FILE *f, const zs_cluster *c);

#endif

/* Cluster descriptions: see zs_cluster.h. */
#include "zs_cluster.h"

#include <stddef.h>
#include <string.h>

#include "zs_presets.h"

#define F(key, type, member, min, max, req, def, unit, help)                                       \
    {                                                                                              \
        key, type, offsetof(zs_cluster, member), sizeof(((zs_cluster *)0)->member), min, max, req, \
            def, unit, help                                                                        \
    }
const zs_field zs_cluster_fields[] = {
    F("name", ZS_F_STRING, name, 0, 0, 1, 0, "", "cluster name"),
    F("source", ZS_F_STRING, source, 0, 0, 0, 0, "", "where the numbers come from"),
    F("nodes", ZS_F_INT, nodes, 1, 65536, 0, 2, "", "number of nodes (--nodes overrides)"),
    F("gpus_per_node", ZS_F_INT, gpus_per_node, 1, 64, 1, 0, "", "GPUs per node"),
    F("nics_per_node", ZS_F_INT, nics_per_node, 1, 64, 1, 0, "", "NICs per node"),
    F("nic_gbps", ZS_F_DOUBLE, nic_gbps, 1, 1e5, 1, 0, "Gb/s", "NIC line rate"),
    F("nic_ports", ZS_F_INT, nic_ports, 1, 8, 0, 1, "",
      "ports per NIC that NCCL drives as devices of their own (nic_gbps split among them)"),
    F("pcie_gbs", ZS_F_DOUBLE, pcie_gbs, 1, 1e4, 1, 0, "GB/s", "PCIe link per direction"),
    F("nvlink_latency_us", ZS_F_DOUBLE, nvlink_latency_us, 0, 1e4, 0, 2.0, "us", "NVLink hop"),
    F("pcie_latency_us", ZS_F_DOUBLE, pcie_latency_us, 0, 1e4, 0, 0.5, "us", "PCIe hop"),
    F("nic_latency_us", ZS_F_DOUBLE, nic_latency_us, 0, 1e4, 0, 2.0, "us", "NIC to leaf"),
    F("fabric_latency_us", ZS_F_DOUBLE, fabric_latency_us, 0, 1e4, 0, 1.0, "us",
      "switch hop in the fabric"),
    F("nodes_per_leaf", ZS_F_INT, nodes_per_leaf, 1, 65536, 0, 32, "",
      "nodes whose NIC k share one rail leaf switch"),
    F("oversubscription", ZS_F_DOUBLE, oversubscription, 1, 64, 0, 1.0, "",
      "leaf down:up bandwidth ratio"),
    F("nvswitch", ZS_F_BOOL, nvswitch, 0, 1, 0, 1, "", "GPUs of a node joined by NVSwitch"),
    F("nvls", ZS_F_BOOL, nvls, 0, 1, 0, 0, "",
      "NVSwitch does NVLink SHARP (NCCL's NVLS algorithms)"),
    F("collnet", ZS_F_BOOL, collnet, 0, 1, 0, 0, "",
      "network switches reduce (InfiniBand SHARP: NCCL's CollNet)"),
};
#undef F
const size_t zs_cluster_nfields = sizeof zs_cluster_fields / sizeof zs_cluster_fields[0];

const char *zs_link_class_name(int c)
{
    static const char *names[] = {"nvlink", "pcie", "nic", "fabric"};
    return c >= 0 && c < ZS_LINK_NCLASSES ? names[c] : "?";
}

int zs_cluster_check(const zs_cluster *c, const char *where, zs_err *e)
{
    if (c->nvls && !c->nvswitch)
        return zs_err_set(e, ZS_EINPUT, where,
                          "NVLink SHARP is a feature of the NVSwitch: set \"nvswitch\": true or "
                          "\"nvls\": false",
                          "cluster '%s' has nvls without an NVSwitch", c->name);
    if (c->gpus_per_node % c->nics_per_node != 0)
        return zs_err_set(e, ZS_EINPUT, where,
                          "nics_per_node must divide gpus_per_node (each PCIe switch holds "
                          "gpus_per_node/nics_per_node GPUs and one NIC)",
                          "cluster '%s': %d GPUs per node cannot share %d NICs evenly", c->name,
                          c->gpus_per_node, c->nics_per_node);
    return ZS_OK;
}

static const char *const cluster_extra_keys[] = {"gpu", NULL};

int zs_cluster_load(const char *name_or_file, int nodes, zs_cluster *out, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_preset_open("cluster", name_or_file, &doc, e);
    if (rc)
        return rc;
    zs_cluster c;
    memset(&c, 0, sizeof c); /* fields no file sets (nic_line_gbps) start at 0 */
    rc = zs_config_parse(doc, doc->root, NULL, zs_cluster_fields, zs_cluster_nfields,
                         cluster_extra_keys, &c, e);
    if (rc == ZS_OK) {
        /* "gpu": a preset name or an inline GPU object. */
        json_t *g = json_object_get(doc->root, "gpu");
        char where[512];
        zs_json_where(doc, NULL, "gpu", where, sizeof where);
        if (!g) {
            rc = zs_err_set(e, ZS_EINPUT, doc->source,
                            "add \"gpu\": \"<preset name>\" or an inline GPU object",
                            "missing key 'gpu'");
        } else if (json_is_string(g)) {
            rc = zs_gpu_load(json_string_value(g), &c.gpu, e);
            if (rc)
                zs_err_prefix_where(e, where);
        } else {
            rc = zs_gpu_from_json(doc, g, "gpu", &c.gpu, e);
        }
    }
    if (rc == ZS_OK && nodes > 0)
        c.nodes = nodes;
    if (rc == ZS_OK)
        rc = zs_cluster_check(&c, doc->source, e);
    zs_json_doc_free(doc);
    if (rc == ZS_OK)
        *out = c;
    return rc;
}

double zs_cluster_link_bw(const zs_cluster *c, zs_link_class lc)
{
    switch (lc) {
    case ZS_LINK_NVLINK:
        return c->gpu.nvlink_gbs * 1e9;
    case ZS_LINK_PCIE:
        return c->pcie_gbs * 1e9;
    case ZS_LINK_NIC:
        return c->nic_gbps * 1e9 / 8.0;
    case ZS_LINK_FABRIC:
        return c->nic_gbps * 1e9 / 8.0; /* rail links run at NIC speed */
    default:
        return 0;
    }
}

void zs_cluster_path(const zs_cluster *c, int src, int dst, double *latency_s, double *bw_Bps)
{
    if (zs_cluster_node_of(c, src) == zs_cluster_node_of(c, dst)) {
        *latency_s = c->nvlink_latency_us * 1e-6;
        *bw_Bps = zs_cluster_link_bw(c, ZS_LINK_NVLINK);
        return;
    }
    /* GPU-PCIe-NIC on both ends, then leaf (and spine when the rails or
     * leaf groups differ). */
    int same_leaf = zs_cluster_nic_of(c, src) == zs_cluster_nic_of(c, dst) &&
                    zs_cluster_node_of(c, src) / c->nodes_per_leaf ==
                        zs_cluster_node_of(c, dst) / c->nodes_per_leaf;
    int hops = same_leaf ? 1 : 3;
    *latency_s =
        (2 * c->pcie_latency_us + 2 * c->nic_latency_us + hops * c->fabric_latency_us) * 1e-6;
    double bw = zs_cluster_link_bw(c, ZS_LINK_NIC);
    double pcie = zs_cluster_link_bw(c, ZS_LINK_PCIE);
    if (pcie < bw)
        bw = pcie;
    if (!same_leaf) {
        double spine = zs_cluster_link_bw(c, ZS_LINK_FABRIC) / c->oversubscription;
        if (spine < bw)
            bw = spine;
    }
    *bw_Bps = bw;
}

void zs_cluster_print(FILE *f, const zs_cluster *c)
{
    zs_config_print(f, zs_cluster_fields, zs_cluster_nfields, c, 2);
    fprintf(f, "  gpu:\n");
    zs_config_print(f, zs_gpu_fields, zs_gpu_nfields, &c->gpu, 4);
}

/* ASTRA-sim inputs beside a plan's Chakra traces (`zepsim plan --chakra`):
 * the analytical network backend's topology derived from the cluster
 * (NVLink switch inside a node, the NICs' share per GPU across nodes), a
 * system configuration that replays the traces' compute durations, and
 * the remote-memory file it asks for. docs/interop.md says how to run
 * them; no ASTRA-sim run checks them here. */
#include <string.h>

#include "cli.h"
#include "zs_afile.h"

static int put(const char *dir, const char *prefix, const char *tail, const char *text, zs_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.%s", dir, prefix, tail);
    return zs_afile_write(path, text, strlen(text), e);
}

int zs_cli_astra_inputs(const zs_cluster *c, int nranks, const char *dir, const char *prefix,
                        zs_err *e)
{
    char net[1024], sys[1024];
    int g = c->gpus_per_node, two = nranks > g && nranks % g == 0;
    /* per GPU: NVLink per direction; across nodes the node's NICs shared by its GPUs */
    double nvl = c->gpu.nvlink_gbs, nic = c->nic_gbps / 8.0 * c->nics_per_node / g;
    double lat_in = c->nvlink_latency_us * 1e3,
           lat_out = (2 * c->pcie_latency_us + 2 * c->nic_latency_us + c->fabric_latency_us) * 1e3;
    if (two)
        snprintf(net, sizeof net,
                 "# ASTRA-sim analytical network for %s (%d ranks: %d nodes of %d GPUs),\n"
                 "# written by zepsim: NVLink switch inside a node, the NICs' share per GPU\n"
                 "# across nodes (%g Gb/s x %d NICs / %d GPUs); latencies one hop / GPU-PCIe-NIC-\n"
                 "# fabric-NIC-PCIe-GPU\n"
                 "topology: [ Switch, Switch ]\n"
                 "npus_count: [ %d, %d ]\n"
                 "bandwidth: [ %.6g, %.6g ]  # GB/s\n"
                 "latency: [ %.6g, %.6g ]  # ns\n",
                 c->name, nranks, nranks / g, g, c->nic_gbps, c->nics_per_node, g, g, nranks / g,
                 nvl, nic, lat_in, lat_out);
    else
        snprintf(net, sizeof net,
                 "# ASTRA-sim analytical network for %s (%d ranks), written by zepsim\n"
                 "topology: [ Switch ]\n"
                 "npus_count: [ %d ]\n"
                 "bandwidth: [ %.6g ]  # GB/s\n"
                 "latency: [ %.6g ]  # ns\n",
                 c->name, nranks, nranks, nranks <= g ? nvl : nic, nranks <= g ? lat_in : lat_out);
    const char *impl = two ? "[ \"ring\", \"ring\" ]" : "[ \"ring\" ]";
    snprintf(sys, sizeof sys,
             "{\n"
             "  \"scheduling-policy\": \"LIFO\",\n"
             "  \"endpoint-delay\": 10,\n"
             "  \"active-chunks-per-dimension\": 1,\n"
             "  \"preferred-dataset-splits\": 4,\n"
             "  \"all-reduce-implementation\": %s,\n"
             "  \"all-gather-implementation\": %s,\n"
             "  \"reduce-scatter-implementation\": %s,\n"
             "  \"all-to-all-implementation\": %s,\n"
             "  \"collective-optimization\": \"localBWAware\",\n"
             "  \"local-mem-bw\": %.6g,\n"
             "  \"boost-mode\": 0,\n"
             "  \"roofline-enabled\": 0,\n"
             "  \"peak-perf\": %.6g\n"
             "}\n",
             impl, impl, impl, impl, c->gpu.hbm_gbs, c->gpu.peak_tflops);
    int rc = put(dir, prefix, "network.yml", net, e);
    if (!rc)
        rc = put(dir, prefix, "system.json", sys, e);
    if (!rc)
        rc = put(dir, prefix, "remote_memory.json",
                 "{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n", e);
    return rc;
}

/* SimGrid platform for a zs_cluster, generated as XML (SimGrid 3.32's C
 * API can read platforms but not build them).
 *
 * Shape, one zone per node so that routing stays cheap at thousands of GPUs:
 *   - per GPU g: NVLink up/down links into the NVSwitch (nvu/nvd), a PCIe
 *     link pair to its PCIe switch (pu/pd), and a private "compute" link
 *     used by the executor to time compute ops (route g -> g);
 *   - per node and NIC k: the NIC's link pair to its rail leaf (xu/xd),
 *     shared by the gpus_per_nic GPUs behind that PCIe switch (the static
 *     GPU-NIC affinity);
 *   - per node: its ports into the fabric (su/sd, aggregate of its NICs);
 *   - with more nodes than nodes_per_leaf: per leaf group an uplink pair to
 *     the spine (gu/gd) of bandwidth (group NIC bandwidth / oversubscription).
 * Node links are declared in one zone ahead of the node zones (SimGrid
 * resolves a route's link names by searching zones in order; see
 * zs_platform.c). No link is crossed by every flow. Hosts are named "g<rank>", so the
 * executor looks them up by name. Latencies add up to zs_cluster_path():
 * NVLink nvlink_latency; across nodes 2 pcie + 2 nic + 1 fabric hop inside
 * a leaf group, + 2 fabric hops through the spine.
 *
 * The link table below mirrors the XML so that the executor can attribute
 * bytes and busy time to link classes and NICs by the route a flow takes.
 * Depends on zs_cluster and zs_err only (no SimGrid headers). */
#ifndef ZS_PLATFORM_H
#define ZS_PLATFORM_H

#include <stdio.h>

#include "zs_cluster.h"
#include "zs_err.h"

/* Bandwidth of the private compute link (bytes/s): a compute op of d
 * seconds is a self-transfer of d * ZS_COMPUTE_BPS bytes (1 ps resolution). */
#define ZS_COMPUTE_BPS 1e12

/* Most links a default route crosses. */
#define ZS_ROUTE_MAX 8

/* Writes the platform XML for c. */
int zs_platform_write(const zs_cluster *c, FILE *out, zs_err *e);
int zs_platform_write_file(const zs_cluster *c, const char *path, zs_err *e);

/* Checks that c can be turned into a platform (sizes, divisibility). */
int zs_platform_check(const zs_cluster *c, zs_err *e);

#endif

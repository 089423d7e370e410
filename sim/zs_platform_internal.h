/* The platform's link table, for the SimGrid executor's accounting
 * (sim/zs_sim_*.c) and its tests: which links exist, their class,
 * bandwidth and NIC, and the links a route crosses. Not exported. */
#ifndef ZS_PLATFORM_INTERNAL_H
#define ZS_PLATFORM_INTERNAL_H

#include "zs_platform.h"

/* Number of links (compute links excluded). */
int zs__plat_nlinks(const zs_cluster *c);
/* Class of link id l. */
zs_link_class zs__plat_link_class(const zs_cluster *c, int l);
/* Bandwidth of link id l, bytes/s (as the XML declares it). */
double zs__plat_link_bw(const zs_cluster *c, int l);
/* NIC index (node * nics_per_node + k) a link belongs to, or -1. */
int zs__plat_link_nic(const zs_cluster *c, int l);
/* The links GPU g's flows can cross at its end of a route (its NVLink and
 * PCIe pairs, its NIC's pair, its node's fabric ports, its leaf group's
 * uplinks) and how many GPUs share each; returns their count (<= 10). */
#define ZS_GPU_LINKS_MAX 10
int zs__plat_gpu_links(const zs_cluster *c, int g, int links[ZS_GPU_LINKS_MAX],
                       int share[ZS_GPU_LINKS_MAX]);
/* Links of the route src -> dst (ranks, src != dst); returns their count. */
int zs__plat_route(const zs_cluster *c, int src, int dst, int links[ZS_ROUTE_MAX]);

#endif

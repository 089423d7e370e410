/* SimGrid platform generation: see zs_platform.h. */
#include "zs_platform.h"

#include "zs_afile.h"
#include "zs_platform_internal.h"

#include <errno.h>
#include <string.h>

typedef struct plat_dims {
    int G;  /* GPUs */
    int N;  /* NICs */
    int ND; /* nodes */
    int NG; /* leaf groups */
} plat_dims;

static plat_dims dims_of(const zs_cluster *c)
{
    plat_dims d;
    d.G = c->nodes * c->gpus_per_node;
    d.N = c->nodes * c->nics_per_node;
    d.ND = c->nodes;
    d.NG = (c->nodes + c->nodes_per_leaf - 1) / c->nodes_per_leaf;
    return d;
}

/* Link id layout: [nvu G][nvd G][pu G][pd G][xu N][xd N][su ND][sd ND][gu NG][gd NG]. */
enum { L_NVU, L_NVD, L_PU, L_PD, L_XU, L_XD, L_SU, L_SD, L_GU, L_GD, L_NKINDS };

static int kind_base(const plat_dims *d, int kind)
{
    const int size[L_NKINDS] = {d->G, d->G, d->G, d->G, d->N, d->N, d->ND, d->ND, d->NG, d->NG};
    int base = 0;
    for (int k = 0; k < kind; k++)
        base += size[k];
    return base;
}

int zs__plat_nlinks(const zs_cluster *c)
{
    plat_dims d = dims_of(c);
    return kind_base(&d, L_NKINDS);
}

static int kind_of(const zs_cluster *c, int l, int *index)
{
    plat_dims d = dims_of(c);
    for (int k = L_NKINDS - 1; k >= 0; k--) {
        int b = kind_base(&d, k);
        if (l >= b) {
            *index = l - b;
            return k;
        }
    }
    *index = l;
    return L_NVU;
}

zs_link_class zs__plat_link_class(const zs_cluster *c, int l)
{
    int i;
    switch (kind_of(c, l, &i)) {
    case L_NVU:
    case L_NVD:
        return ZS_LINK_NVLINK;
    case L_PU:
    case L_PD:
        return ZS_LINK_PCIE;
    case L_XU:
    case L_XD:
        return ZS_LINK_NIC;
    default:
        return ZS_LINK_FABRIC;
    }
}

double zs__plat_link_bw(const zs_cluster *c, int l)
{
    int i;
    double nic = zs_cluster_link_bw(c, ZS_LINK_NIC);
    switch (kind_of(c, l, &i)) {
    case L_NVU:
    case L_NVD:
        return zs_cluster_link_bw(c, ZS_LINK_NVLINK);
    case L_PU:
    case L_PD:
        return zs_cluster_link_bw(c, ZS_LINK_PCIE);
    case L_XU:
    case L_XD:
        return nic;
    case L_SU:
    case L_SD:
        return nic * c->nics_per_node;
    default: { /* leaf group uplinks, as zs_platform_write declares them */
        int members = c->nodes - i * c->nodes_per_leaf;
        if (members > c->nodes_per_leaf)
            members = c->nodes_per_leaf;
        return nic * c->nics_per_node * members / c->oversubscription;
    }
    }
}

int zs__plat_link_nic(const zs_cluster *c, int l)
{
    int i;
    int k = kind_of(c, l, &i);
    return k == L_XU || k == L_XD ? i : -1;
}

static int nic_id(const zs_cluster *c, int rank)
{
    return zs_cluster_node_of(c, rank) * c->nics_per_node + zs_cluster_nic_of(c, rank);
}

int zs__plat_gpu_links(const zs_cluster *c, int g, int links[ZS_GPU_LINKS_MAX],
                       int share[ZS_GPU_LINKS_MAX])
{
    plat_dims d = dims_of(c);
    int node = zs_cluster_node_of(c, g), grp = node / c->nodes_per_leaf, n = 0;
    int per_nic = c->gpus_per_node / c->nics_per_node, in_grp = c->nodes_per_leaf;
    if (in_grp > c->nodes - grp * c->nodes_per_leaf)
        in_grp = c->nodes - grp * c->nodes_per_leaf; /* the last group may be smaller */
    const struct {
        int kind, index, share;
    } at[ZS_GPU_LINKS_MAX] = {
        {L_NVU, g, 1},
        {L_NVD, g, 1},
        {L_PU, g, 1},
        {L_PD, g, 1},
        {L_XU, nic_id(c, g), per_nic > 0 ? per_nic : 1},
        {L_XD, nic_id(c, g), per_nic > 0 ? per_nic : 1},
        {L_SU, node, c->gpus_per_node},
        {L_SD, node, c->gpus_per_node},
        {L_GU, grp, in_grp * c->gpus_per_node},
        {L_GD, grp, in_grp * c->gpus_per_node},
    };
    for (int i = 0; i < ZS_GPU_LINKS_MAX; i++) {
        if ((at[i].kind == L_GU || at[i].kind == L_GD) && d.NG < 2)
            continue; /* no spine */
        links[n] = kind_base(&d, at[i].kind) + at[i].index;
        share[n++] = at[i].share;
    }
    return n;
}

int zs__plat_route(const zs_cluster *c, int src, int dst, int links[ZS_ROUTE_MAX])
{
    plat_dims d = dims_of(c);
    int ns = zs_cluster_node_of(c, src), nd = zs_cluster_node_of(c, dst);
    int n = 0;
    if (ns == nd) {
        links[n++] = kind_base(&d, L_NVU) + src;
        links[n++] = kind_base(&d, L_NVD) + dst;
        return n;
    }
    links[n++] = kind_base(&d, L_PU) + src;
    links[n++] = kind_base(&d, L_XU) + nic_id(c, src);
    links[n++] = kind_base(&d, L_SU) + ns;
    int gs = ns / c->nodes_per_leaf, gd = nd / c->nodes_per_leaf;
    if (gs != gd) {
        links[n++] = kind_base(&d, L_GU) + gs;
        links[n++] = kind_base(&d, L_GD) + gd;
    }
    links[n++] = kind_base(&d, L_SD) + nd;
    links[n++] = kind_base(&d, L_XD) + nic_id(c, dst);
    links[n++] = kind_base(&d, L_PD) + dst;
    return n;
}

int zs_platform_check(const zs_cluster *c, zs_err *e)
{
    int rc = zs_cluster_check(c, c->name, e);
    if (rc)
        return rc;
    if (c->nodes < 1 || c->gpus_per_node < 1 || c->nodes_per_leaf < 1)
        return zs_err_set(e, ZS_EINPUT, c->name, "give at least one node and one GPU per node",
                          "cluster '%s' has %d nodes of %d GPUs", c->name, c->nodes,
                          c->gpus_per_node);
    if ((double)c->nodes * c->gpus_per_node > 1 << 20)
        return zs_err_set(e, ZS_EINPUT, c->name, "simulate at most 1M GPUs",
                          "cluster '%s' is too large (%d x %d GPUs)", c->name, c->nodes,
                          c->gpus_per_node);
    if (c->gpu.nvlink_gbs <= 0 || c->pcie_gbs <= 0 || c->nic_gbps <= 0)
        return zs_err_set(e, ZS_EINPUT, c->name, "give positive link bandwidths",
                          "cluster '%s' has a zero bandwidth", c->name);
    return ZS_OK;
}

static void link(FILE *f, const char *name, int i, double bps, double lat_s)
{
    fprintf(f, "<link id=\"%s%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\"/>\n", name, i, bps,
            lat_s);
}

/* A node's links. They are declared in one zone of links, the first
 * child of the top zone, not in the node's own zone: SimGrid 3.32 resolves
 * every <link_ctn> by a depth-first search from the top zone over every
 * zone's link map, so links kept in node zones make loading quadratic in
 * the number of nodes; in the first child each lookup is one map search.
 * Routes may use links of any zone; a link's zone does not change how
 * flows share it. */
static void node_links(FILE *f, const zs_cluster *c, int node)
{
    int gpn = c->gpus_per_node;
    int g0 = node * gpn;
    double nvl = zs_cluster_link_bw(c, ZS_LINK_NVLINK);
    double pcie = zs_cluster_link_bw(c, ZS_LINK_PCIE);
    double nic = zs_cluster_link_bw(c, ZS_LINK_NIC);
    for (int g = g0; g < g0 + gpn; g++) {
        link(f, "nvu", g, nvl, c->nvlink_latency_us * 0.5e-6);
        link(f, "nvd", g, nvl, c->nvlink_latency_us * 0.5e-6);
        link(f, "pu", g, pcie, c->pcie_latency_us * 1e-6);
        link(f, "pd", g, pcie, c->pcie_latency_us * 1e-6);
        link(f, "c", g, ZS_COMPUTE_BPS, 0);
    }
    for (int k = 0; k < c->nics_per_node; k++) {
        link(f, "xu", node * c->nics_per_node + k, nic, c->nic_latency_us * 1e-6);
        link(f, "xd", node * c->nics_per_node + k, nic, c->nic_latency_us * 1e-6);
    }
}

static void node_routes(FILE *f, const zs_cluster *c, int node)
{
    int gpn = c->gpus_per_node;
    int g0 = node * gpn;
    for (int g = g0; g < g0 + gpn; g++) {
        fprintf(
            f, "<route src=\"g%d\" dst=\"g%d\" symmetrical=\"NO\"><link_ctn id=\"c%d\"/></route>\n",
            g, g, g);
        for (int h = g0; h < g0 + gpn; h++)
            if (h != g)
                fprintf(f,
                        "<route src=\"g%d\" dst=\"g%d\" symmetrical=\"NO\"><link_ctn "
                        "id=\"nvu%d\"/><link_ctn id=\"nvd%d\"/></route>\n",
                        g, h, g, h);
        int x = nic_id(c, g);
        fprintf(f,
                "<route src=\"g%d\" dst=\"n%d-gw\" symmetrical=\"NO\"><link_ctn id=\"pu%d\"/>"
                "<link_ctn id=\"xu%d\"/></route>\n",
                g, node, g, x);
        fprintf(f,
                "<route src=\"n%d-gw\" dst=\"g%d\" symmetrical=\"NO\"><link_ctn id=\"xd%d\"/>"
                "<link_ctn id=\"pd%d\"/></route>\n",
                node, g, x, g);
    }
}

static void node_zone(FILE *f, const zs_cluster *c, int node)
{
    int gpn = c->gpus_per_node;
    int g0 = node * gpn;
    fprintf(f, "<zone id=\"n%d\" routing=\"Full\">\n", node);
    for (int g = g0; g < g0 + gpn; g++)
        fprintf(f, "<host id=\"g%d\" speed=\"1f\"/>\n", g);
    fprintf(f, "<router id=\"n%d-gw\"/>\n", node);
    node_routes(f, c, node);
    fprintf(f, "</zone>\n");
}

static void zone_route(FILE *f, const char *src, int si, const char *gws, const char *dst, int di,
                       const char *gwd, const char *lnk, int li)
{
    fprintf(f,
            "<zoneRoute src=\"%s%d\" dst=\"%s%d\" gw_src=\"%s%d%s\" gw_dst=\"%s%d%s\" "
            "symmetrical=\"NO\"><link_ctn id=\"%s%d\"/></zoneRoute>\n",
            src, si, dst, di, src, si, gws, dst, di, gwd, lnk, li);
}

int zs_platform_write(const zs_cluster *c, FILE *f, zs_err *e)
{
    int rc = zs_platform_check(c, e);
    if (rc)
        return rc;
    plat_dims d = dims_of(c);
    double nic = zs_cluster_link_bw(c, ZS_LINK_NIC);
    double fab = c->fabric_latency_us * 1e-6;
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n");
    fprintf(f,
            "<!-- zepsim platform for cluster '%s': %d nodes x %d GPUs, %d NICs per node "
            "(%g Gb/s), %d leaf group(s) of %d nodes, oversubscription %g -->\n",
            c->name, c->nodes, c->gpus_per_node, c->nics_per_node, c->nic_gbps, d.NG,
            c->nodes_per_leaf, c->oversubscription);
    /* Dijkstra at the top: the fabric is a tree of routers, so each source
     * zone's tree is computed once and cached, and the XML stays linear in
     * the number of nodes (Full routing would need nodes^2 zone routes). */
    fprintf(f, "<zone id=\"top\" routing=\"DijkstraCache\">\n");
    fprintf(f, "<zone id=\"links\" routing=\"None\">\n");
    for (int n = 0; n < c->nodes; n++)
        node_links(f, c, n);
    fprintf(f, "</zone>\n");
    for (int n = 0; n < c->nodes; n++)
        node_zone(f, c, n);
    for (int g = 0; g < d.NG; g++)
        fprintf(f, "<zone id=\"l%d\" routing=\"Full\"><router id=\"l%d-r\"/></zone>\n", g, g);
    if (d.NG > 1)
        fprintf(f, "<zone id=\"s0\" routing=\"Full\"><router id=\"s0-r\"/></zone>\n");
    for (int n = 0; n < c->nodes; n++) {
        /* A node's ports into its leaf: the aggregate of its NICs, so they
         * never bind before the NIC links do; they carry half a hop each. */
        link(f, "su", n, nic * c->nics_per_node, fab * 0.5);
        link(f, "sd", n, nic * c->nics_per_node, fab * 0.5);
    }
    for (int g = 0; g < d.NG; g++) {
        int members = c->nodes - g * c->nodes_per_leaf;
        if (members > c->nodes_per_leaf)
            members = c->nodes_per_leaf;
        double up = nic * c->nics_per_node * members / c->oversubscription;
        link(f, "gu", g, up, fab);
        link(f, "gd", g, up, fab);
    }
    for (int n = 0; n < c->nodes; n++) {
        int g = n / c->nodes_per_leaf;
        zone_route(f, "n", n, "-gw", "l", g, "-r", "su", n);
        zone_route(f, "l", g, "-r", "n", n, "-gw", "sd", n);
    }
    if (d.NG > 1)
        for (int g = 0; g < d.NG; g++) {
            zone_route(f, "l", g, "-r", "s", 0, "-r", "gu", g);
            zone_route(f, "s", 0, "-r", "l", g, "-r", "gd", g);
        }
    fprintf(f, "</zone>\n</platform>\n");
    if (ferror(f))
        return zs_err_set(e, ZS_EIO, NULL, "check free disk space",
                          "writing the platform XML failed");
    return ZS_OK;
}

int zs_platform_write_file(const zs_cluster *c, const char *path, zs_err *e)
{
    zs_afile a;
    int rc = zs_afile_open(&a, path, e);
    if (rc)
        return rc;
    rc = zs_platform_write(c, a.f, e);
    return rc ? zs_afile_fail(&a, rc, e) : zs_afile_commit(&a, e);
}

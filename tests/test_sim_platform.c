/* The generated SimGrid platform: its XML names every GPU host, its link
 * table routes each pair of GPUs through the links the cluster description
 * says (NVLink inside a node; PCIe, the GPU's own NIC and the fabric across
 * nodes), and the latencies along a route add up to zs_cluster_path(). No
 * simulation runs here. */
#include <stdlib.h>

#include "zs_cluster.h"
#include "zs_platform.h"
#include "zs_test.h"
#include "zs_platform_internal.h"

static char *platform_text(const zs_cluster *c)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    zs_err e;
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ZS_ASSERT_OK(zs_platform_write(c, f, &e), &e);
    fclose(f);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void test_xml_hosts_and_routes(void)
{
    zs_cluster c;
    zs_err e;
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 2, &c, &e), &e);
    char *x = platform_text(&c);
    /* 16 GPU hosts named by rank, one zone per node, CM02-friendly plain links. */
    ZS_ASSERT_INT_EQ(count(x, "<host id="), 16);
    ZS_ASSERT_STR_CONTAINS(x, "<host id=\"g15\"");
    ZS_ASSERT_INT_EQ(count(x, "<zone id=\"n"), 2);
    /* per node: 8 self routes + 56 NVLink pairs + 8 to and 8 from the gateway */
    ZS_ASSERT_INT_EQ(count(x, "<route "), 2 * (8 + 56 + 16));
    /* 4 NICs per node, each with an up and a down link */
    ZS_ASSERT_INT_EQ(count(x, "<link id=\"xu"), 8);
    /* every node joins its leaf; one leaf group: no spine */
    ZS_ASSERT_INT_EQ(count(x, "<zoneRoute "), 4);
    CU_ASSERT(strstr(x, "s0-r") == NULL);
    /* GPU 3 reaches the network through NIC 1 of node 0 */
    ZS_ASSERT_STR_CONTAINS(x, "<route src=\"g3\" dst=\"n0-gw\" symmetrical=\"NO\"><link_ctn "
                              "id=\"pu3\"/><link_ctn id=\"xu1\"/></route>");
    free(x);

    /* 40 nodes with 32 per leaf: two leaf groups joined by a spine */
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 40, &c, &e), &e);
    x = platform_text(&c);
    ZS_ASSERT_INT_EQ(count(x, "<zoneRoute "), 2 * 40 + 2 * 2);
    ZS_ASSERT_STR_CONTAINS(x, "<router id=\"s0-r\"/>");
    free(x);
}

/* Sums latencies and finds the narrowest link along a route, using the
 * same rules as the XML. */
static void route_figures(const zs_cluster *c, int src, int dst, int *nlinks, int classes[4])
{
    int l[ZS_ROUTE_MAX];
    *nlinks = zs__plat_route(c, src, dst, l);
    for (int k = 0; k < 4; k++)
        classes[k] = 0;
    for (int i = 0; i < *nlinks; i++)
        classes[zs__plat_link_class(c, l[i])]++;
}

static void test_route_table(void)
{
    zs_cluster c;
    zs_err e;
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 40, &c, &e), &e);
    int n, cl[4];
    route_figures(&c, 0, 5, &n, cl);
    ZS_ASSERT_INT_EQ(n, 2);
    ZS_ASSERT_INT_EQ(cl[ZS_LINK_NVLINK], 2);
    route_figures(&c, 1, 9, &n, cl); /* node 0 -> node 1, same leaf group */
    ZS_ASSERT_INT_EQ(n, 6);
    ZS_ASSERT_INT_EQ(cl[ZS_LINK_PCIE], 2);
    ZS_ASSERT_INT_EQ(cl[ZS_LINK_NIC], 2);
    ZS_ASSERT_INT_EQ(cl[ZS_LINK_FABRIC], 2);
    route_figures(&c, 1, 33 * 8, &n, cl); /* node 0 -> node 33: through the spine */
    ZS_ASSERT_INT_EQ(n, 8);
    ZS_ASSERT_INT_EQ(cl[ZS_LINK_FABRIC], 4);

    /* GPUs 0 and 1 share NIC 0 of node 0 on cluster-a; on cluster-c each has its own. */
    int a[ZS_ROUTE_MAX], b[ZS_ROUTE_MAX];
    zs__plat_route(&c, 0, 8, a);
    zs__plat_route(&c, 1, 9, b);
    ZS_ASSERT_INT_EQ(zs__plat_link_nic(&c, a[1]), 0);
    ZS_ASSERT_INT_EQ(zs__plat_link_nic(&c, b[1]), 0);
    ZS_ASSERT_INT_EQ(zs__plat_link_nic(&c, b[4]), 4); /* node 1, NIC 0 */
    zs_cluster cc;
    ZS_ASSERT_OK(zs_cluster_load("cluster-c", 2, &cc, &e), &e);
    zs__plat_route(&cc, 0, 8, a);
    zs__plat_route(&cc, 1, 9, b);
    ZS_ASSERT_INT_EQ(zs__plat_link_nic(&cc, a[1]), 0);
    ZS_ASSERT_INT_EQ(zs__plat_link_nic(&cc, b[1]), 1);
}

static void test_rejects_bad_cluster(void)
{
    zs_cluster c;
    zs_err e;
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 2, &c, &e), &e);
    c.nics_per_node = 3;
    FILE *f = fopen("/dev/null", "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ZS_ASSERT_INT_EQ(zs_platform_write(&c, f, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "nics_per_node");
    fclose(f);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"xml_hosts_and_routes", test_xml_hosts_and_routes},
        {"route_table", test_route_table},
        {"rejects_bad_cluster", test_rejects_bad_cluster},
        {NULL, NULL},
    };
    static const zs_test_suite suites[] = {{"sim_platform", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

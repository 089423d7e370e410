/* Link and NIC accounting of the SimGrid executor (see zs_sim_internal.h).
 *
 * A flow follows its default route through the link table of zs_platform.h.
 * A link (or NIC) is busy while at least one flow crosses it: busy time
 * accrues from its first flow's start to its last flow's end. A flow's
 * bytes count once per link class it crosses, and once on each NIC it
 * leaves or enters. A p2p flow starts at the mailbox match and ends when
 * the receive completes; collective flows start when the last member
 * arrives. Folding (zs_sim_fold.c) adds the bytes of replayed flows without
 * simulating them, and their busy time from each GPU's share of its links
 * in the last simulated period (zs__sim_links_share). */
#include "zs_sim_internal.h"
#include "zs_platform_internal.h"

void zs__sim_flow_start(sim *x, int src, int dst, double now)
{
    int l[ZS_ROUTE_MAX];
    int n = zs__plat_route(x->c, src, dst, l);
    for (int i = 0; i < n; i++) {
        if (x->l_act[l[i]]++ == 0)
            x->l_last[l[i]] = now;
        int k = x->l_nic[l[i]];
        if (k >= 0 && x->nic_act[k]++ == 0)
            x->nic_last[k] = now;
    }
}

void zs__sim_flow_end(sim *x, int src, int dst, double bytes, double now)
{
    int l[ZS_ROUTE_MAX];
    int n = zs__plat_route(x->c, src, dst, l);
    int seen[ZS_LINK_NCLASSES] = {0};
    for (int i = 0; i < n; i++) {
        zs_link_class lc = (zs_link_class)x->l_class[l[i]];
        if (--x->l_act[l[i]] == 0) {
            x->r->link_busy[lc] += now - x->l_last[l[i]];
            x->l_busy[l[i]] += now - x->l_last[l[i]];
        }
        if (!seen[lc]) { /* a flow's payload counts once per class it crosses */
            seen[lc] = 1;
            x->r->link_bytes[lc] += bytes;
        }
        int k = x->l_nic[l[i]];
        if (k >= 0) {
            x->r->nic_bytes[k] += bytes; /* once on the way out, once on the way in */
            if (--x->nic_act[k] == 0) {
                x->r->nic_busy[k] += now - x->nic_last[k];
                x->n_busy[k] += now - x->nic_last[k];
            }
        }
    }
}

void zs__sim_flow_replay(sim *x, int src, int dst, double bytes)
{
    int l[ZS_ROUTE_MAX];
    int n = zs__plat_route(x->c, src, dst, l);
    int seen[ZS_LINK_NCLASSES] = {0};
    for (int i = 0; i < n; i++) {
        zs_link_class lc = (zs_link_class)x->l_class[l[i]];
        if (!seen[lc]) {
            seen[lc] = 1;
            x->r->link_bytes[lc] += bytes;
        }
        int k = x->l_nic[l[i]];
        if (k >= 0)
            x->r->nic_bytes[k] += bytes;
    }
}

void zs__sim_links_share(sim *x, int g, double now, double v[ZS_LINK_NCLASSES + 1])
{
    int l[ZS_GPU_LINKS_MAX], share[ZS_GPU_LINKS_MAX];
    int n = zs__plat_gpu_links(x->c, g, l, share);
    for (int c = 0; c <= ZS_LINK_NCLASSES; c++)
        v[c] = 0;
    for (int i = 0; i < n; i++) {
        double b = x->l_busy[l[i]] + (x->l_act[l[i]] > 0 ? now - x->l_last[l[i]] : 0);
        v[(zs_link_class)x->l_class[l[i]]] += b / share[i];
    }
    int k = zs_cluster_node_of(x->c, g) * x->c->nics_per_node + zs_cluster_nic_of(x->c, g);
    double b = x->n_busy[k] + (x->nic_act[k] > 0 ? now - x->nic_last[k] : 0);
    v[ZS_LINK_NCLASSES] = b / zs_cluster_gpus_per_nic(x->c);
}

/* Routing over all NICs (Zeppelin's routing layer; te-cp and auto use it too): an inter-node
 * transfer of n bytes from GPU a (node A) to GPU b (node B) is split into k slices; slice i goes
 * over NVLink to proxy p_i of node A, through p_i's NIC to the GPU q_i of node B on the same rail
 * (same local index), and over NVLink to b. Slices are cut into chunks so that scatter, network and
 * gather pipeline. The k NICs are the least-loaded ones in planned bytes of the current phase (one
 * attention pass; the source node's NIC out plus the destination node's
 * NIC in), so the whole phase is balanced, not each transfer alone. A proxy
 * that is the source (or a gather GPU that is the destination) skips its
 * NVLink hop. Which transfers are routed is the planner's decision
 * (zs_route_set_direct: pairs that go direct although routing is on).
 *
 * Schedule shape: a direct transfer is a send and a receive on the
 * caller's stream. A routed one: the source's sends go on the caller's
 * stream (a slice's chunks one after the other); relaying GPUs receive on
 * the "route" stream (only receives without dependencies: always posted,
 * so no source ever waits for a busy relay) and forward each chunk on the "route-send"
 * stream once it arrived; the destination receives on "route" too and a
 * zero-cost join on "route-join" waits for all its chunks: it is the op the
 * ring's next steps wait for. Relayed traffic therefore never waits behind
 * a GPU's own rings, and relays of different transfers through one GPU
 * wait only for their own data. Each relaying GPU behind a NIC is chosen
 * by least relayed bytes in the phase. Every routed transfer gets a fresh
 * tag shared by its hops.
 * Depends on the schedule IR, the iteration builder and the cluster. */
#ifndef ZS_ROUTE_H
#define ZS_ROUTE_H

#include "zs_iteration.h"

#define ZS_ZEP_MAX_K 16

typedef struct zs_route zs_route;

/* The path of one transfer. */
typedef struct zs_route_path {
    int k;                      /* slices (1 and direct: not routed) */
    int direct;                 /* 1: one plain send/receive (same node, or routing off) */
    int proxy[ZS_ZEP_MAX_K];    /* source-node GPU whose NIC carries slice i */
    int peer[ZS_ZEP_MAX_K];     /* destination-node GPU on the same rail */
    int nic[ZS_ZEP_MAX_K];      /* NIC index (inside the node) of slice i */
    double slice[ZS_ZEP_MAX_K]; /* bytes of slice i */
    int nchunks[ZS_ZEP_MAX_K];  /* chunks of slice i */
    double chunk;               /* chunk size (the last chunk of a slice may be smaller) */
} zs_route_path;

/* k NICs per transfer (1: routing off, every transfer direct); chunk in
 * bytes; tp: proxies are TP rank 0 of their group; route_stream: the
 * schedule stream relays receive on (and, until zs_route_set_streams,
 * forward and join on). NULL when out of memory. */
zs_route *zs_route_new(const zs_cluster *cl, int tp, int k, double chunk, int route_stream);
/* The streams relays forward on and destinations join on. */
void zs_route_set_streams(zs_route *r, int send_stream, int join_stream);
void zs_route_free(zs_route *r);
/* Starts a new phase: planned NIC bytes back to zero. */
void zs_route_phase(zs_route *r);
/* Chooses the path of a transfer and charges its bytes to the NICs. */
void zs_route_plan(zs_route *r, int src, int dst, double bytes, zs_route_path *p);
/* Planned bytes through NIC `nic` of `node` in the current phase (sent + received). */
double zs_route_nic_bytes(const zs_route *r, int node, int nic);
/* The transfers from rank src[i] to rank dst[i] (i < n) go direct from now
 * on, although routing is on (replaces any earlier list). ZS_OK or
 * ZS_ENOMEM. */
int zs_route_set_direct(zs_route *r, const int *src, const int *dst, int n);
/* Routing on (the direct list applies) or off for every transfer. */
void zs_route_enable(zs_route *r, int on);
/* Whether transfers from src to dst are routed (nodes differ, k > 1, and
 * the pair is not on the direct list). */
int zs_route_routed(const zs_route *r, int src, int dst);
/* The stream relays and destinations of routed transfers receive on. */
int zs_route_recv_stream(const zs_route *r);
/* The path of the last transfer planned. */
const zs_route_path *zs_route_last(const zs_route *r);
/* Transfers routed / sent direct across nodes since creation. */
void zs_route_counts(const zs_route *r, long *routed, long *direct);

/* What relaying costs the relaying GPU. A relay forwards each chunk with an
 * NCCL point-to-point kernel (a receive and a send), whose channels each
 * hold one CTA, i.e. one SM under the cost model's one-CTA-per-SM
 * assumption, for as long as the slice takes through the NIC. The CTAs
 * (NCCL's default channels per network peer) and the compute seconds a
 * relay loses for `bytes` forwarded: ctas / SMs x bytes / NIC rate. Every
 * relay of a routed transfer is charged that on its compute stream
 * ("route-relay-sm"); sources and destinations are not (they run one
 * NCCL kernel per transfer routed or not, and no method is charged for
 * those). */
int zs_route_relay_ctas(const zs_cluster *cl);
double zs_route_relay_compute_s(const zs_cluster *cl, double bytes);

/* The zs_ring_xfer_fn hook (arg: a zs_route). */
int zs_route_xfer(void *arg, zs_iter *it, const zs_xfer *x, int64_t *src_op, int64_t *dst_op,
                  zs_err *e);

/* The same on a bare schedule: x->tag for a direct transfer, `route_tag`
 * (fresh, unused elsewhere) for the hops of a routed one, whose every chunk
 * carries x's carry list scaled to its bytes. Returns ZS_OK or the
 * schedule's first failure (zs_schedule_check). */
int zs_route_emit(zs_route *r, zs_schedule *s, const zs_xfer *x, int route_tag, int64_t *src_op,
                  int64_t *dst_op, zs_err *e);

/* Appends a zero-cost op on `stream` of `rank` (after deps): it separates
 * send/receive groups that must not be issued together. */
int64_t zs_route_sync(zs_schedule *s, int rank, int stream, const int64_t *deps, int ndeps);

#endif

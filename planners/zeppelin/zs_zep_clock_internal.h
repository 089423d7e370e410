/* The predicted clock of Zeppelin's attention engine: the engine decides
 * the order of every GPU's attention work by simulating the pass on
 * predicted times (zs_zep_engine_internal.h), and this module supplies those
 * times for transfers plus a time-ordered event queue.
 *
 * A transfer's uncontended time comes from the cost model (zs_cost_p2p per
 * hop; a routed slice is its network hop plus the NVLink hop of one chunk
 * before and after it, the pipeline's fill and drain). Contention is
 * approximated by first come, first served on the links of its path: each
 * directional link (a GPU's NVLink port, its PCIe link, a NIC, each way)
 * is busy for bytes / bandwidth from the transfer's start, and a transfer
 * starts when it is issued and every link of its path is free. Transfers
 * are priced in the order they are issued, which is the engine's event
 * order. Depends on the cost model and the routing layer's paths. */
#ifndef ZS_ZEP_CLOCK_INTERNAL_H
#define ZS_ZEP_CLOCK_INTERNAL_H

#include "zs_cost.h"
#include "zs_route.h"

typedef struct zs_zep_clock zs_zep_clock;

/* NULL when out of memory. Borrows c. */
zs_zep_clock *zs_zep_clock_new(const zs_cost *c);
void zs_zep_clock_free(zs_zep_clock *k);
/* A new pass: every link free at time 0. */
void zs_zep_clock_reset(zs_zep_clock *k);
/* Ends at the returned time: `bytes` from rank src to rank dst along path p
 * (direct or routed, as the routing layer chose), issued at time t. */
double zs_zep_clock_xfer(zs_zep_clock *k, const zs_route_path *p, int src, int dst, double bytes,
                         double t);

/* ---- events ---------------------------------------------------------------
 * A min-heap of (time, sequence): equal times pop in insertion order, so
 * the engine is deterministic. */
typedef struct zs_zep_event {
    double t;
    int64_t seq;
    int kind, a, b, c;
} zs_zep_event;

typedef struct zs_zep_events {
    zs_zep_event *v;
    int64_t n, cap, seq;
} zs_zep_events;

/* ZS_OK or ZS_ENOMEM. */
int zs_zep_events_push(zs_zep_events *q, double t, int kind, int a, int b, int c);
/* 0 when empty. */
int zs_zep_events_pop(zs_zep_events *q, zs_zep_event *out);
void zs_zep_events_free(zs_zep_events *q);

#endif

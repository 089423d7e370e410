/* Shared links for the analytic backend: transfers in flight that cross the
 * same resource (a NIC direction) share its capacity. Each item has an
 * uncontended duration T (the cost model's time) and a load on each
 * resource it crosses (bytes); alone it uses load / T of the resource.
 * When the items on a resource ask for more than its capacity, each of
 * them slows to capacity / demand; an item runs at the slowest of its
 * resources' shares (never faster than alone). Speeds change only when an
 * item starts or ends, so the caller reschedules the items this module
 * says changed (a generation number tells stale completions apart).
 *
 * This is proportional sharing per resource, not a global max-min fill: a
 * resource whose items are held back elsewhere is not re-shared, which is
 * pessimistic in chains of bottlenecks and cheap (only the items on the
 * touched resources are revisited). Depends on zs_err only. */
#ifndef ZS_LINKSHARE_INTERNAL_H
#define ZS_LINKSHARE_INTERNAL_H

#include <stdint.h>

#include "zs_err.h"

typedef struct zs_linkshare zs_linkshare;

/* nres resources with capacities cap[] (bytes/s). NULL when out of memory. */
zs_linkshare *zs_linkshare_new(int nres, const double *cap);
void zs_linkshare_free(zs_linkshare *s);

/* Starts an item at `now` that takes T seconds alone and puts load[i]
 * bytes on resource res[i]; its id into *id. ZS_ENOMEM on failure. */
int zs_linkshare_add(zs_linkshare *s, double now, double T, const int *res, const double *load,
                     int n, int32_t *id);
/* Ends item id at `now` (its completion was reached). */
void zs_linkshare_remove(zs_linkshare *s, double now, int32_t id);

/* Items whose speed changed in the last add or remove (the added item
 * included), to reschedule: count and ids (valid until the next call). */
int zs_linkshare_changed(const zs_linkshare *s, const int32_t **ids);
/* When item id completes at its current speed, and its generation (bumped
 * at every change of speed). */
double zs_linkshare_finish(const zs_linkshare *s, int32_t id);
uint32_t zs_linkshare_gen(const zs_linkshare *s, int32_t id);
/* Current speed (1: as fast as alone). */
double zs_linkshare_speed(const zs_linkshare *s, int32_t id);
/* A hint that item id ends soon: fetches into the cache what its end
 * reads, a link of the chain a stage (1 to 4, in order, events apart):
 * its record, its loads, their resources, their lists of items. Any id
 * (a stale one fetches in vain); changes nothing. */
void zs_linkshare_prefetch(const zs_linkshare *s, int32_t id, int stage);

#endif

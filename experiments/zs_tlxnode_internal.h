/* Cross-node transfer times read back from a timeline (the Chrome trace
 * of exec/zs_timeline.h): how long one point-to-point transfer between
 * two nodes took, the quantity the Zeppelin paper's Fig. 12 reports per
 * ring round (TE CP's inter-node hop ~2.18 ms, Zeppelin's routed one
 * ~411 us). Iteration time cannot show it: a ring round overlaps compute.
 *
 * A transfer is either
 * - direct: a send whose rank and peer sit on different nodes, paired with
 *   its receive (the k-th on a source, destination and tag meets the k-th);
 *   it starts when both ends are posted, or
 * - routed: the chunks of one transfer Zeppelin's routing layer spread
 *   over the NICs (events named "route-*", one tag per transfer within a
 *   layer), from its origin (sends chunks, receives none) to its
 *   destination; it starts when its first chunk is sent.
 * Either ends when it arrives (its receive ends; the last chunk arrives),
 * and its time is counted from its start or, if later, from the arrival of
 * the previous transfer between the same two GPUs (on the same tag, or
 * routed): a ring's steps queue one behind another, and what the paper
 * calls a round is the time one step adds on the link. Routed transfers
 * whose chunks never leave their node, and transfers with only one end in
 * the file (a rank subset), are not counted.
 * Only the forward pass's transfers count where events name their phase
 * (args "phase", as zepsim writes them): in the backward pass a ring moves
 * dK/dV beside K/V over the same links, so its transfers take up to twice
 * as long, and the paper's rounds are the forward pass's. Collectives are
 * not transfers here. Depends on zs_tlread and zs_err. */
#ifndef ZS_TLXNODE_INTERNAL_H
#define ZS_TLXNODE_INTERNAL_H

#include <stddef.h>

#include "zs_err.h"

/* Times are each transfer's time on its link as above, microseconds; 0
 * when n is 0. The mean is the figure to quote: where a ring's steps
 * overlap on the link (its sends run ahead), a step adds little or all of
 * its time, and the mean is the link's busy time per step. */
typedef struct zs_tlxnode {
    size_t n;        /* cross-node transfers found */
    size_t n_routed; /* of which routed */
    double mean_us;
    double median_us;
    double max_us;
} zs_tlxnode;

/* Reads the timeline at path (plain or gzip) and measures its cross-node
 * transfers, with ranks gpus_per_node to a node (rank / gpus_per_node is
 * the node). ZS_EINPUT for a file that is not a timeline or an event
 * without the fields a transfer needs (path and event index named),
 * ZS_ENOMEM (the events held are bounded by zs_input_limit()), ZS_EIO. */
int zs_tlxnode_file(const char *path, int gpus_per_node, zs_tlxnode *out, zs_err *e);

#endif

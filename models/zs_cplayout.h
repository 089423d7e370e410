/* Context-parallel token layouts: how a document's tokens are placed on the
 * g members of a CP group and which attention blocks each member computes,
 * for the four layouts users choose between (docs/cost-model.md, "CP
 * layouts"):
 *   zigzag  2g chunks, member k holds chunks k and 2g-1-k (TransformerEngine's
 *           load balancing); KV passed around a ring;
 *   ring    g contiguous chunks, member k holds chunk k; KV passed around a
 *           ring (causal: the last member does ~(2g-1)x the first's work);
 *   stripe  token t on member t mod g (Striped Attention, Brandon et al.
 *           2023); KV passed around a ring;
 *   llama3  zigzag placement, K and V all-gathered before attention and dK,
 *           dV reduce-scattered after it (Llama 3, Dubey et al. 2024, 3.3.2).
 * Ring step j of member k uses the KV first held by member (k - j) mod g.
 *
 * Two geometries: the real one (what the plan records and the validator
 * checks: token ranges of the document) and the priced one (what the
 * kernel runs: padded chunks when padding, and for stripe the member's
 * strided tokens packed together, so that a step is one local causal block,
 * shifted by one token when the KV comes from a later member). A schedule
 * records stripes as ZS_CPL_STRIPES contiguous runs per member per document
 * (token-level pieces would be one per token); the price is token-level
 * striping. Depends on zs_kernel (zs_attn_block) and zs_err. */
#ifndef ZS_CPLAYOUT_H
#define ZS_CPLAYOUT_H

#include <stdint.h>

#include "zs_err.h"
#include "zs_kernel.h"

typedef enum zs_cp_layout {
    ZS_CPL_ZIGZAG = 0,
    ZS_CPL_RING = 1,
    ZS_CPL_STRIPE = 2,
    ZS_CPL_LLAMA3 = 3,
    ZS_CPL_N
} zs_cp_layout;

/* The option values, in enum order (zs_opt_spec ENUM rows). */
#define ZS_CPL_VALUES "zigzag|ring|stripe|llama3"

/* Runs a member's stripes are recorded as in a schedule (see above). */
#define ZS_CPL_STRIPES 4
/* Most blocks one member computes in one step for one document. */
#define ZS_CPL_MAXBLK (ZS_CPL_STRIPES * ZS_CPL_STRIPES)

const char *zs_cpl_name(zs_cp_layout l);
/* Parses a layout name; a ZS_EUSAGE error naming `what` otherwise. */
int zs_cpl_parse(const char *s, const char *what, zs_cp_layout *out, zs_err *e);
/* 1 when the layout passes KV around a ring (all but llama3). */
int zs_cpl_is_ring(zs_cp_layout l);

/* Chunks a document is cut into over g members, how many a member holds,
 * and the i-th chunk member k holds (ascending for ring and stripe). */
int zs_cpl_nchunks(zs_cp_layout l, int g);
int zs_cpl_nowned(zs_cp_layout l);
int zs_cpl_owned(zs_cp_layout l, int g, int k, int i);

/* Token range of chunk c of n of a document of len tokens: pad = 1 cuts
 * chunks of ceil(len / n) (the last ones clipped, possibly empty), pad = 0
 * cuts chunks of floor(len / n) and deals the remainder one token each to
 * the first chunks. */
void zs_cpl_chunk(int32_t len, int n, int pad, int c, int32_t *t0, int32_t *t1);

/* Tokens member k holds of a document (pad = 1: what it computes and
 * moves, padding included). */
int64_t zs_cpl_member_tokens(zs_cp_layout l, int32_t len, int g, int pad, int k);

/* Ring layouts: the blocks member k computes in step j of a document:
 * real geometry into real[] (returns the count through *nreal), priced
 * geometry into cost[] (*ncost). Both arrays hold ZS_CPL_MAXBLK. */
void zs_cpl_step_blocks(zs_cp_layout l, int32_t doc, int32_t len, int g, int pad, int k, int j,
                        zs_attn_block *real, int *nreal, zs_attn_block *cost, int *ncost);

/* llama3: the blocks of member k once the KV is gathered: each of its
 * query chunks against the document's keys up to the chunk's end (real and
 * priced as above; at most 2 each). */
void zs_cpl_gather_blocks(int32_t doc, int32_t len, int g, int pad, int k, zs_attn_block *real,
                          int *nreal, zs_attn_block *cost, int *ncost);

/* ring-flash-attention's llama3_flash_attn_varlen_func (zhuzilin/
 * ring-flash-attention 01c8baf5, llama3_flash_attn_prepare_cu_seqlens):
 * the packed documents as one sequence of L = sum(lens) tokens, member k
 * holding the contiguous [k L / g, (k + 1) L / g), each document's part
 * against that document's keys from its start. Writes member k's blocks
 * (at most docs) to out and returns how many. */
int zs_cpl_pack_blocks(const int32_t *lens, int docs, int g, int k, zs_attn_block *out);

#endif

/* Chakra execution traces: a schedule written as one Chakra ET per rank
 * (`zepsim plan --chakra DIR`) for ASTRA-sim and Chakra's tools, and
 * Chakra ETs (zepsim's, or those Chakra's converters write) read back into
 * the schedule IR to run on any backend (`zepsim run --chakra DIR`).
 *
 * A trace set is DIR/<prefix>.<rank>.et for ranks 0..n-1 (ASTRA-sim's
 * naming). Each file is a sequence of messages, each preceded by its length
 * as a varint (Chakra's protolib): one GlobalMetadata, then the rank's
 * nodes. The schema is our copy of Chakra's (core/zs_chakra_et.proto, the
 * same field numbers), compiled by protoc-c; a build without protobuf-c
 * has the same functions, which return ZS_EUNSUPPORTED saying what to
 * install.
 *
 * Writing unrolls each rank's program (segments x repeats) into nodes
 * numbered 0.. in program order: compute nodes carry the priced duration
 * (duration_micros, and the exact seconds), FLOPs (num_ops) and HBM bytes
 * (tensor_size); sends and receives comm_src, comm_dst, comm_tag and
 * comm_size; collectives comm_type, comm_size, pg_name and the
 * communicator's ranks (pg_ranks); markers are METADATA nodes. data_deps
 * hold everything a node waits for (as Chakra's converters and ASTRA-sim
 * use them): the op's own dependencies, then the ops before it on its
 * stream that it waits for; ctrl_deps repeat the latter (program order).
 * Attributes named zs_* keep what the IR needs beyond Chakra's fields
 * (stream, exact sizes, attention blocks, segments, the plan), so a
 * written trace reads back into the same schedule. A <prefix>.comm_group.json
 * beside the traces maps each pg_name to its ranks (ASTRA-sim's
 * --comm-group-configuration).
 *
 * Reading takes any Chakra ET: nodes in any order (dependencies may point
 * forward), ids need not start at 0; the nodes run in a dependency order
 * (file order among ready nodes). Without zepsim's attributes, compute
 * nodes go on the "compute" stream (is_cpu_op ones on a "cpu" stream),
 * communication on "comm"; data_deps are the dependencies, ctrl_deps are
 * not waited for (in traces from PyTorch they link a callee to its caller,
 * and ASTRA-sim ignores them too); METADATA and INVALID nodes pass their
 * dependencies through. A collective's group is pg_ranks, else pg_name in
 * <prefix>.comm_group.json, else (pg_name "" or "0") every rank. Errors
 * name the file and the node; every input is bounded (zs_plan_limits,
 * zs_input_limit). Depends on zs_schedule (and zs_model for FLOPs). */
#ifndef ZS_CHAKRA_H
#define ZS_CHAKRA_H

#include <stddef.h>

#include "zs_err.h"
#include "zs_model.h"
#include "zs_schedule.h"

/* Version of zepsim's attributes in the global metadata (zs_schedule). */
#define ZS_CHAKRA_VERSION 1
/* The largest message (metadata or node) read, in bytes. */
#define ZS_CHAKRA_MAX_MESSAGE ((size_t)64 << 20)
/* The most dependencies one node may have after reading. */
#define ZS_CHAKRA_MAX_DEPS 4096

/* 1 when this build reads and writes Chakra traces (protobuf-c found). */
int zs_chakra_available(void);

/* Writes s as dir/<prefix>.<rank>.et for every rank, each file atomically,
 * and dir/<prefix>.comm_group.json; creates dir when missing and removes
 * dir/<prefix>.<n>.et, <n+1>... left by an earlier, larger export. m
 * (may be NULL) gives the FLOPs and bytes of attention ops. */
int zs_chakra_write(const zs_schedule *s, const zs_model *m, const char *dir, const char *prefix,
                    zs_err *e);

/* Finds a trace set: path is a folder holding one set (<prefix>.0.et,
 * ...), or a prefix (path.0.et exists). Fills base (dir/prefix, the files'
 * common start) and returns ZS_OK, or ZS_EINPUT saying what was found. */
int zs_chakra_find(const char *path, char *base, size_t n, zs_err *e);

/* Reads base.0.et, base.1.et, ... (every rank up to the first missing
 * file, or the ranks zepsim's metadata names) and base.comm_group.json
 * when present. */
int zs_chakra_load(const char *base, zs_schedule **out, zs_err *e);

/* Reads the n rank files paths[0..n) (rank = index) with an optional
 * communicator-group file (NULL: none). */
int zs_chakra_load_files(const char *const *paths, int n, const char *groups, zs_schedule **out,
                         zs_err *e);

#endif

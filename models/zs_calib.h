/* Calibration: measurements in (nccl-tests logs of one node or many,
 * kernel latency CSV/TSV files, the hardware backend's JSON measurement
 * files), fitted parameters out (GSL least squares), kept in a versioned
 * JSON calibration file with its provenance, and a calibrated cost model
 * built from it. Kernels are priced with curves (zs_curve) and kernel
 * models; collectives with NCCL's model (zs_nccl.h), whose parameters the
 * nccl-tests points fit. Calibration replaces parameters, never formulas.
 *
 * Depends on zs_cost, zs_model, zs_cluster, zs_nccl, GSL and jansson;
 * never on a backend. The SimGrid backend reads link figures through
 * zs_calib_link. */
#ifndef ZS_CALIB_H
#define ZS_CALIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_err.h"
#include "zs_model.h"
#include "zs_nccl.h"

/* Version 2: collective curves take the bus bytes per GPU as their size
 * variable x (version 1 took the nccl-tests buffer size). Version 3:
 * attention is fitted as a tiled kernel (zs_kernel.h), not a curve.
 * Version 4: collectives are NCCL's model with fitted parameters, not
 * curves. */
#define ZS_CALIB_VERSION 4

/* ---- the shared curve ------------------------------------------------------
 * time(W, x) = steps * t0 + W / rmax * (1 + (half / x)^p)
 *   W: work (FLOPs, bytes, bus bytes); rmax: the asymptotic rate (FLOP/s,
 *   bytes/s); x: the size that drives efficiency (the work itself, GEMM
 *   tokens, message bytes, a collective's bus bytes per GPU); half: the size where the achieved
 * rate is rmax/2 (0: no size effect); t0: fixed cost per launch or per step. */
typedef struct zs_curve {
    double t0, rmax, half, p;
    int fitted; /* 1: from measurements; 0: an assumption */
    int npoints;
    double rms_rel, max_rel; /* fit residuals (relative), when fitted */
    double x_floor; /* the smallest x of the fit's data: below it the size term keeps its value
                       there (0: extrapolated). Set for the GEMM slot (its x is a GEMM's smallest
                       dimension, the curve's dim_floor) */
} zs_curve;

double zs_curve_time(const zs_curve *c, double steps, double work, double x);

/* Curve slots a calibration may hold. The collective slots name the
 * collectives of measurements; their time comes from the NCCL model. */
typedef enum zs_calib_slot {
    ZS_CAL_ATTN_FWD = 0,
    ZS_CAL_ATTN_BWD,
    ZS_CAL_GEMM,
    ZS_CAL_ELEMENTWISE,
    ZS_CAL_LINK_NVLINK, /* p2p, link classes in zs_link_class order */
    ZS_CAL_LINK_PCIE,
    ZS_CAL_LINK_NIC,
    ZS_CAL_LINK_FABRIC,
    ZS_CAL_COLL_AG, /* collectives, zs_coll_kind order, intra-node */
    ZS_CAL_COLL_RS,
    ZS_CAL_COLL_AR,
    ZS_CAL_COLL_A2A,
    ZS_CAL_NSLOTS
} zs_calib_slot;

const char *zs_calib_slot_name(int s);
/* Slot index of a name, or -1. */
int zs_calib_slot_parse(const char *name);

/* ---- measurements ----------------------------------------------------------- */
typedef struct zs_meas {
    char op[32]; /* a slot name (attn_fwd, gemm, all-gather, p2p_nvlink...) or
                    "layer:<name>" for a Megatron layer op */
    int gpus;    /* GPUs taking part (collectives), 1 for kernels */
    int nodes;   /* collectives: nodes those GPUs span (same number on each); 0 = 1 */
    unsigned algo_mask, proto_mask; /* NCCL_ALGO / NCCL_PROTO of the run (zs_nccl
                                       masks), 0: NCCL chose freely */
    double bytes;                   /* collectives: nccl-tests "size" (total buffer); p2p: bytes */
    int seq_len;                    /* attention: tokens of one document */
    int docs;   /* attention: equal documents in the launch (varlen); seconds is per document */
    int causal; /* attention: 1 causal (default), 0 every query sees every key */
    int heads, kv_heads, head_dim; /* attention: the model's (tp divides them); 0: from --model */
    double m, n, k;                /* GEMM shape (m = tokens) */
    int tp, cp;       /* parallel degrees: layer ops; attention shards (heads / tp; L / cp
                         queries against the (1 + 1/cp) L / 2 keys they see on average) */
    double tokens;    /* layer ops: tokens per GPU */
    double seconds;   /* measured */
    char source[256]; /* file:line of the measurement */
} zs_meas;

/* One measurement file behind a set or a calibration: its path, SHA-256 and
 * how many points it gave. */
typedef struct zs_calib_source {
    char path[512];
    char sha256[65];
    int points;
    /* Provenance (issue 35): what the file measured, so a calibration says
     * per curve which GPU and model shape its data came from. */
    char gpu[64];   /* the device the file names ("" : it names none) */
    unsigned slots; /* bit s: the file has points for slot s (layer ops: gemm, elementwise) */
    int heads, kv_heads, head_dim; /* its attention points' shape (0: none; -1: several) */
} zs_calib_source;

typedef struct zs_meas_set {
    zs_meas *v;
    size_t n, cap;
    char gpu[64]; /* device named by the files ("" when unknown or mixed) */
    /* provenance: every file read, with its SHA-256 */
    zs_calib_source *files;
    size_t nfiles;
    /* How nccl-tests logs are read (set before zs_meas_read): the in-place
     * time instead of the out-of-place one, and the NCCL_ALGO/NCCL_PROTO
     * runs used when their log does not say (0: NCCL's default). */
    int nccl_inplace;
    unsigned nccl_algo_mask, nccl_proto_mask;
    /* The collective every nccl-tests run measured ("" : the log's own
     * name for it, else the file name, else inferred from the rows). */
    char nccl_collective[32];
} zs_meas_set;

void zs_meas_set_init(zs_meas_set *s);
/* Sets nccl_collective from a user's name for it (all-reduce, allreduce,
 * all_reduce, ...); ZS_EUSAGE for an unknown one. */
int zs_meas_set_collective(zs_meas_set *s, const char *name, zs_err *e);
void zs_meas_set_clear(zs_meas_set *s);
/* Reads one file, detecting its format (nccl-tests log, CSV, TSV, JSON
 * measurement file), and appends its points. Bad or truncated files fail
 * with file:line and leave s unchanged. */
int zs_meas_read(zs_meas_set *s, const char *path, zs_err *e);
int zs_meas_add(zs_meas_set *s, const zs_meas *m, zs_err *e);
/* Gives attention points that carry no shape (per-document profiles:
 * L,cp,tp,duration_per_doc) the model's heads, KV heads and head dim;
 * returns how many points it filled. */
int zs_meas_set_apply_model(zs_meas_set *s, const zs_model *m);
/* Attention points without a shape (they need zs_meas_set_apply_model). */
int zs_meas_set_unshaped(const zs_meas_set *s);
/* The launch an attention point measures: `docs` blocks of the point's
 * shard shape (caller frees *blocks) and the heads on the GPU. ZS_EINPUT
 * when the point has no usable shape. */
int zs_meas_attn_launch(const zs_meas *m, zs_attn_block **blocks, int *n, int *heads, int *kv_heads,
                        zs_err *e);
/* Writes a measurement file in the documented JSON schema (docs/validation.md). */
int zs_meas_write_json(const zs_meas_set *s, const char *path, zs_err *e);

/* SHA-256 of a file as 64 lowercase hex digits. */
int zs_sha256_file(const char *path, char out[65], zs_err *e);
void zs_sha256_hex(const void *data, size_t n, char out[65]);

/* ---- calibration --------------------------------------------------------------- */
typedef struct zs_calib zs_calib;

/* Fit options. model describes the layer ops of Megatron TSVs (NULL: those
 * points are imported but not fitted). A hold-out predicate excludes points
 * from the fit (NULL: fit on everything). */
typedef struct zs_fit_opts {
    const zs_model *model;
    int (*exclude)(const zs_meas *m, void *arg);
    void *exclude_arg;
    const zs_cluster *cluster; /* the hardware the collectives ran on (required for them) */
} zs_fit_opts;

/* Fits every slot the measurements cover and the NCCL model's parameters
 * from the collectives; what the data does not cover stays analytic.
 * Attention is fitted as the kernel of the preset matching the measured
 * device (h100-sxm when none matches): its structure (tiles, CTAs per SM,
 * dfix, launch cost, SMs) is kept, its rate and fixed costs fitted. */
int zs_calib_fit(const zs_meas_set *s, const zs_fit_opts *o, zs_calib **out, zs_err *e);
/* The same with the structure of gpu's selected attention kernel. */
int zs_calib_fit_gpu(const zs_meas_set *s, const zs_fit_opts *o, const zs_gpu *gpu, zs_calib **out,
                     zs_err *e);
zs_calib *zs_calib_new(void);
void zs_calib_free(zs_calib *c);
int zs_calib_save(const zs_calib *c, const char *path, zs_err *e);
int zs_calib_load(const char *path, zs_calib **out, zs_err *e);

/* The curve of a slot; NULL when the calibration does not fit it. For the
 * attention slots only the fit record (points, residuals) is meaningful:
 * the fitted figures are in the kernel (zs_calib_attn_kernel). */
const zs_curve *zs_calib_curve(const zs_calib *c, zs_calib_slot s);
/* The fitted attention kernel (its fwd / bwd valid where the attention
 * slots are fitted) and the SMs it was fitted for; NULL when neither
 * direction is fitted. */
const zs_attn_kernel *zs_calib_attn_kernel(const zs_calib *c, int *sms);
/* The NCCL model's parameters (defaults where not fitted); NULL when the
 * calibration has no collective data. The collective slots never have a
 * curve. */
const zs_nccl_params *zs_calib_nccl(const zs_calib *c);
/* Name of the cluster description the collective fit ran on ("" if none). */
const char *zs_calib_nccl_cluster(const zs_calib *c);
/* Link figures for the SimGrid platform: latency (s) and asymptotic
 * bandwidth (bytes/s) of one link class. Returns 1 when the calibration
 * fits that class (outputs set), 0 when it does not (outputs untouched:
 * keep the cluster description's figures). */
int zs_calib_link(const zs_calib *c, zs_link_class lc, double *latency_s, double *bw_Bps);
/* Puts the calibration's NVLink and NIC figures (zs_calib_link) into a
 * cluster description, so a platform and a cost model built from it price
 * transfers as calibrated; classes the calibration does not fit keep the
 * description's. Every command that takes --calib goes through it. */
void zs_calib_apply_links(const zs_calib *c, zs_cluster *cl);
/* GPU the calibration data was measured on ("" when unknown). */
const char *zs_calib_gpu(const zs_calib *c);
/* Copies into dst every slot that src fits and dst does not. */
void zs_calib_merge(zs_calib *dst, const zs_calib *src);
/* Prints the fitted curves and their residuals (a human summary). */
void zs_calib_print(FILE *f, const zs_calib *c);

/* What a calibration holds, for reports (models/zs_calib_info.c). */
int zs_calib_version(const zs_calib *c);
size_t zs_calib_nsources(const zs_calib *c);
const zs_calib_source *zs_calib_source_at(const zs_calib *c, size_t i);
/* The collective fit: points, rms and largest relative residual, the
 * achieved ring bus bandwidth inside a node (GB/s, 0: unknown), and the
 * smallest collective measured (*min: its nccl-tests size in bytes, its op
 * and GPUs; 0 when there is none). Returns 0 when there is no collective
 * fit. */
typedef struct zs_calib_nccl_info {
    size_t points;
    double rms, max, nvl_bus_gbs;
    double min_bytes;
    char min_op[32];
    int min_gpus, min_nodes;
    int inplace;     /* fitted on in-place times */
    char pairs[256]; /* which algorithm/protocol NCCL runs on how many points */
} zs_calib_nccl_info;
int zs_calib_nccl_info_get(const zs_calib *c, zs_calib_nccl_info *out);

/* Where a fit's data came from: the GPU its files name ("" : none names
 * one; "H100, H200" : several), its attention shape (0: none or unknown;
 * -1: several) and the files. slot is a zs_calib_slot; any collective slot
 * means the collective fit (the files with collectives). */
typedef struct zs_calib_origin {
    char gpu[160];
    int heads, kv_heads, head_dim;
    int nfiles;
    const zs_calib_source *file[16]; /* the first 16 of them */
} zs_calib_origin;
/* 1 when the calibration fits slot (for collectives: has the NCCL fit) and
 * o is filled; 0 otherwise. */
int zs_calib_origin_get(const zs_calib *c, int slot, zs_calib_origin *o);
/* Warnings, one line each ending in '\n', where applying c to a cluster
 * of gpu (a preset name) and model m (NULL: no shape check) uses a fit
 * beyond its data: measured on another GPU, or attention measured at
 * another head shape; each says what to do. Returns how many. */
int zs_calib_check_use(const zs_calib *c, const char *gpu, const zs_model *m, char *out, size_t n);
/* A warning line when the calibration's files name several GPUs (one
 * calibration should describe one GPU); 0 when they do not. */
int zs_calib_check_mixed(const zs_calib *c, char *out, size_t n);

/* A cost model using the calibration's curves where they exist and the
 * analytic ones elsewhere; desc lists which. calib is copied. */
zs_cost *zs_cost_calibrated_new(const zs_model *m, const zs_cluster *cl, const zs_calib *calib);

/* Predicted seconds of one measurement point under a cost model (the model
 * shape of the point, not c->model, is used for kernels). Collectives are
 * priced by the NCCL model on c's cluster with cal's parameters (NCCL's
 * defaults when cal is NULL or has none); choice (may be NULL) receives
 * the algorithm and protocol. Returns ZS_EINPUT for points the model
 * cannot price (e.g. layer ops without a model). */
int zs_calib_predict(const zs_cost *c, const zs_calib *cal, const zs_meas *m,
                     const zs_model *layer_model, double *seconds, zs_nccl_choice *choice,
                     zs_err *e);

#endif

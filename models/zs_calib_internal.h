/* Internals shared by the calibration files (zs_calib_*.c, zs_nccl_log.c):
 * the fit point, the calibration object's layout, the per-slot fitter and
 * the nccl-tests reader. Not part of the public interface; depends on
 * zs_calib.h. */
#ifndef ZS_CALIB_INTERNAL_H
#define ZS_CALIB_INTERNAL_H

#include "zs_calib.h"
#include "zs_config.h"

/* One measurement seen by a slot's curve: steps, work and size variable
 * as zs_curve_time takes them, and the measured seconds. */
typedef struct zs__fit_pt {
    double steps, work, x, t;
    const zs_meas *m;
} zs__fit_pt;

typedef struct zs__resid {
    int slot;
    char source[256];
    double x, measured, predicted;
} zs__resid;

/* One collective measurement as the NCCL fit explained it. */
typedef struct zs__coll_pt {
    char source[256];
    char op[32];
    int gpus, nodes;
    double bytes, measured, predicted;
    char algo[16], proto[8];
} zs__coll_pt;

struct zs_calib {
    int version;
    char gpu[64];
    zs_curve curve[ZS_CAL_NSLOTS]; /* fitted == 1 where the data covers the slot */
    zs_attn_kernel attn;           /* attention slots: the fitted kernel */
    int attn_sms;
    zs_calib_source *files;
    size_t nfiles;
    zs__resid *resid;
    size_t nresid;
    /* Collectives: NCCL's model. */
    int has_nccl;
    zs_nccl_params nccl;
    char nccl_cluster[64]; /* the hardware description the fit used */
    int nccl_inplace;      /* fitted on in-place times */
    double nvl_bus_gbs;    /* achieved ring bus bandwidth inside one node, GB/s (0: unknown) */
    double nic_gbs;        /* achieved data rate of one NIC across nodes, GB/s (0: unknown) */
    zs__coll_pt *cpts;
    size_t ncpts;
};

/* "NVIDIA H200" / "H200" vs the preset "h200": 1 when they name the same
 * GPU (or the measured name is unknown). */
int zs__same_gpu(const char *measured, const char *preset);
/* The GPU preset a measured device name matches (h100-sxm when none). */
int zs__gpu_for_device(const char *device, zs_gpu *out, zs_err *e);

/* Fits one curve; parameters whose free_mask entry is 0 keep fixed[].
 * Returns 1 on success (out filled, residuals set), 0 when it cannot. */
int zs__fit_curve(const zs__fit_pt *pt, size_t n, const int free_mask[4], const double fixed[4],
                  zs_curve *out);

/* A model of npar positive parameters: predicted seconds of point i. */
typedef double (*zs__fit_model)(const double *par, size_t i, void *arg);
#define ZS__FIT_MAXPAR 8
/* Nonlinear least squares on relative residuals over n points (measured
 * t[i]), parameters in log space, or below upper[j] when upper (may be
 * NULL) gives a positive bound; free_mask[j] = 0 keeps the start value.
 * Tries each of the nstart starting vectors (npar each) and keeps the
 * best; out gets the parameters, *rms / *max the relative residuals.
 * Returns 1 on success, 0 when no start converges to a finite cost. */
int zs__fit_params(size_t n, const double *t, int npar, const int *free_mask, const double *upper,
                   const double *starts, int nstart, zs__fit_model f, void *arg, double *out,
                   double *rms, double *max);
/* Fits the attention slot's kernel direction to the points (structure of
 * base kept); fills c->attn and the slot's fit record. Returns 1 on
 * success, 0 when it cannot. */
int zs__fit_attn(zs_calib *c, int slot, const zs__fit_pt *pt, size_t n, const zs_attn_kernel *base,
                 int sms, double peak_tflops);
/* The slot and curve inputs of a measurement; returns the slot, or -1 when
 * the point cannot be priced (layer ops without a model, tp > 1). */
int zs__meas_point(const zs_meas *m, const zs_model *layer_model, zs__fit_pt *out);
/* Parses an nccl-tests log (text is modified) into s; see zs_nccl_log.c. */
int zs__nccl_log_parse(zs_meas_set *s, const char *path, char *text, zs_err *e);
/* 1 when text reads as an nccl-tests log: its first non-blank line, once
 * launcher prefixes ("[1,0]<stdout>:", "0: ") are removed, starts with '#'
 * or '$'. */
int zs__nccl_log_sniff(const char *text);
/* Fits the NCCL model to the collective points of s that fit() keeps
 * (keep[i] != 0), filling c's collective fields. */
int zs__calib_fit_nccl(zs_calib *c, const zs_meas_set *s, const char *keep, const zs_cluster *cl,
                       zs_err *e);
/* The "collectives" object of the file, and back. */
json_t *zs__calib_nccl_json(const zs_calib *c);
int zs__calib_nccl_load(zs_calib *c, const zs_json_doc *doc, json_t *o, zs_err *e);
void zs__calib_nccl_print(FILE *f, const zs_calib *c);
/* The collective a measurement names, or -1. */
int zs__meas_coll(const zs_meas *m);
/* Nodes and GPUs per node of a collective measurement. */
int zs__coll_shape(const zs_meas *m, int *nodes, int *ppn, zs_err *e);

/* ---- shared by the cost models (zs_calib_cost.c, zs_cost_analytic.c) ---- */
/* The analytic curves for a model and cluster (assumptions, documented in
 * docs/cost-model.md). */
void zs__cost_analytic_curves(const zs_cluster *cl, zs_curve out[ZS_CAL_NSLOTS]);
/* Builds a cost model from explicit curves (link slot curves with rmax ==
 * 0 mean "the cluster's bottleneck bandwidth"), the attention kernel whose
 * CTAs spread over kern_sms SMs, and the NCCL model's parameters for
 * collectives (NULL: NCCL's own figures); calibrated: 1 for the calibrated
 * model's ops (their name), 0 for the analytic one's. */
zs_cost *zs__cost_curves_new(int calibrated, const zs_model *m, const zs_cluster *cl,
                             const zs_curve curves[ZS_CAL_NSLOTS], const zs_attn_kernel *kern,
                             int kern_sms, const zs_nccl_params *nccl, const char *desc);

#endif

/* Internals shared by the calibration files (zs_calib_*.c): the fit point,
 * the calibration object's layout and the per-slot fitter. Not part of the
 * public interface; depends on zs_calib.h. */
#ifndef ZS_CALIB_INTERNAL_H
#define ZS_CALIB_INTERNAL_H

#include "zs_calib.h"

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

struct zs_calib {
    int version;
    char gpu[64];
    zs_curve curve[ZS_CAL_NSLOTS]; /* fitted == 1 where the data covers the slot */
    zs_calib_source *files;
    size_t nfiles;
    zs__resid *resid;
    size_t nresid;
};

/* Fits one curve; parameters whose free_mask entry is 0 keep fixed[].
 * Returns 1 on success (out filled, residuals set), 0 when it cannot. */
int zs__fit_curve(const zs__fit_pt *pt, size_t n, const int free_mask[4], const double fixed[4],
                  zs_curve *out);
/* The slot and curve inputs of a measurement; returns the slot, or -1 when
 * the point cannot be priced (layer ops without a model, tp > 1). */
int zs__meas_point(const zs_meas *m, const zs_model *layer_model, zs__fit_pt *out);

#endif

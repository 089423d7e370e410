/* Numbers from users: one strict parser for command-line values, spec and
 * config fields, and CSV cells. Strict means the whole text is the number
 * (no leading blanks, no trailing garbage), it is in range, it did not
 * overflow, an unsigned value has no minus sign (strtoull turns "-1" into
 * 2^64 - 1), and a real number is finite. Depends on zs_err only.
 *
 * Each parser returns ZS_OK and sets *out, or returns `code` (ZS_EUSAGE for
 * a command-line option, ZS_EINPUT for a file) with e naming `where` (the
 * option or field) and the accepted range; *out is untouched on failure. */
#ifndef ZS_NUM_H
#define ZS_NUM_H

#include <stdint.h>

#include "zs_err.h"

int zs_num_i64(const char *s, int64_t min, int64_t max, int code, const char *where, int64_t *out,
               zs_err *e);
int zs_num_u64(const char *s, uint64_t min, uint64_t max, int code, const char *where,
               uint64_t *out, zs_err *e);
int zs_num_f64(const char *s, double min, double max, int code, const char *where, double *out,
               zs_err *e);

/* Checks a real number that came from elsewhere (a JSON field, a computed
 * figure): finite and in [min, max]. Same contract as the parsers; `s` in
 * the message is the value printed with %g. */
int zs_num_check_f64(double v, double min, double max, int code, const char *where, zs_err *e);

#endif

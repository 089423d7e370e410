/* compare's verdict: which method is fastest, by how much, and the notes a
 * reader needs to trust the figures (a NIC busier than its line rate
 * allows, methods that train different token counts). Pure functions of
 * the results, so they are tested on hand-made ones. Depends on
 * zs_point. */
#ifndef ZS_VERDICT_H
#define ZS_VERDICT_H

#include <stddef.h>

#include "zs_point.h"

typedef struct zs_verdict {
    int fastest, second; /* indexes of the methods by tokens/s; -1: none */
    double margin_pct;   /* fastest over second in tokens/s, %; NAN: no second */
    char line[768];      /* "verdict: ..." for people; "" when nothing ran */
} zs_verdict;

/* res[i] is method i's result, NULL when it failed; base is the
 * baseline's index (-1: none ran). Ties go to the earlier method. */
void zs_verdict_make(const char *const *methods, const zs_point_result *const *res, int n, int base,
                     zs_verdict *v);

/* A note on the methods whose busiest NIC was busy longer than the
 * iteration (max_nic_util > 1), naming them and why the backend allows
 * it; 0 and "" when none. */
int zs_verdict_nic_note(const char *const *methods, const zs_point_result *const *res, int n,
                        const char *backend, char *buf, size_t len);

#endif

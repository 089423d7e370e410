/* Method options: "key=value,key=value" strings (`--opt cp=16,routing=0`)
 * that a planner reads with typed getters; keys a planner never read are
 * reported as errors, so a misspelt option never silently does nothing.
 * Depends on zs_err. */
#ifndef ZS_OPTS_H
#define ZS_OPTS_H

#include "zs_err.h"

#define ZS_OPTS_MAX 32

typedef struct zs_opts {
    int n;
    char key[ZS_OPTS_MAX][32];
    char val[ZS_OPTS_MAX][96];
    int used[ZS_OPTS_MAX];
} zs_opts;

void zs_opts_init(zs_opts *o);
/* Adds "k=v[,k=v...]" (a bare "k" means k=1); later values override. */
int zs_opts_parse(zs_opts *o, const char *spec, zs_err *e);
/* Sets a key programmatically (overrides). */
int zs_opts_set(zs_opts *o, const char *key, const char *val, zs_err *e);
/* Typed getters: the default when absent, an error when malformed or out of range. */
int zs_opts_int(zs_opts *o, const char *key, long def, long min, long max, long *out, zs_err *e);
int zs_opts_double(zs_opts *o, const char *key, double def, double min, double max, double *out,
                   zs_err *e);
int zs_opts_bool(zs_opts *o, const char *key, int def, int *out, zs_err *e);
/* The string value or def (no copy). */
const char *zs_opts_str(zs_opts *o, const char *key, const char *def);
/* Error on any key nobody read; `who` names the method in the message. */
int zs_opts_check_used(const zs_opts *o, const char *who, zs_err *e);
/* "k=v,k=v" of all keys, for provenance. */
void zs_opts_format(const zs_opts *o, char *buf, size_t n);

#endif

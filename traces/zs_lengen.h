/* Document-length generators: seeded, reproducible streams of lengths that
 * imitate the corpora of the papers, or simple parametric families.
 *
 * A spec is one of
 *   a preset name      arxiv, github, prolong64k, fineweb, openwebmath,
 *                      stackexchange, wlb-meta-128k, squad (see docs/traces.md)
 *   fixed:N            every document has N tokens
 *   uniform:A-B        uniform integers in [A, B]
 *   lognormal:MU,SIGMA[,MAX]  exp(N(MU, SIGMA^2)) rounded, truncated to [1, MAX]
 *   mix:S1=W1,S2=W2..  a mixture; Wi are shares of TOKENS (as data mixtures
 *                      are quoted), normalised to sum to 1
 *
 * Every model is a mixture of pieces (fixed, uniform, truncated lognormal,
 * truncated power law) sampled by inverse CDF from one gsl_rng_mt19937
 * stream, so the same spec and seed give the same lengths on every run
 * and every machine with IEEE-754 doubles (see docs/traces.md for the one
 * caveat on libm). Depends on GSL and zs_err. */
#ifndef ZS_LENGEN_H
#define ZS_LENGEN_H

#include <stdint.h>

#include "zs_err.h"

typedef struct zs_lengen zs_lengen;

/* Parses spec and seeds the stream; bad specs are ZS_EINPUT errors. */
int zs_lengen_new(const char *spec, uint64_t seed, zs_lengen **out, zs_err *e);
void zs_lengen_free(zs_lengen *g);
/* The next length (>= 1). */
int32_t zs_lengen_next(zs_lengen *g);
/* Restarts the stream: the same lengths come again. */
void zs_lengen_reset(zs_lengen *g);
/* Expected length of the model (analytic, before rounding to integers). */
double zs_lengen_mean(const zs_lengen *g);
/* Largest length the model can produce. */
int32_t zs_lengen_max(const zs_lengen *g);
/* One line: the spec and what the model is. */
const char *zs_lengen_describe(const zs_lengen *g);

/* Whether spec names a generator (a preset or a family prefix) rather than
 * a file. */
int zs_lengen_is_spec(const char *spec);

/* The presets, for `zepsim trace presets` and the docs. */
typedef struct zs_lengen_preset_info {
    const char *name;
    const char *model;   /* the parametric model in words */
    const char *matches; /* the published statistics it reproduces */
    const char *assumes; /* what is assumed rather than published */
} zs_lengen_preset_info;

/* NULL past the end. */
const zs_lengen_preset_info *zs_lengen_preset_at(int i);

#endif

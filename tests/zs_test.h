/* Test harness on top of CUnit: assertions that print both values, a
 * small runner, and helpers for scratch files and the shared reference
 * data. A program exits 0 on success, 1 on failure, 77 on skip. */
#ifndef ZS_TEST_H
#define ZS_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "zs_err.h"
#include "zs_schedule.h"

typedef struct zs_test_case {
    const char *name;
    void (*fn)(void);
} zs_test_case;

typedef struct zs_test_suite {
    const char *name;
    const zs_test_case *cases; /* terminated by {NULL, NULL} */
} zs_test_suite;

/* Runs the suites (terminated by {NULL, NULL}); returns the exit status.
 * `PROGRAM NAME` runs only the cases whose name contains NAME. */
int zs_test_main(int argc, char **argv, const zs_test_suite *suites);

/* Absolute path of a file under ../shared, or NULL (with a "skipping"
 * line on stdout naming why) when it is absent. */
const char *zs_test_shared(const char *rel);
/* A scratch folder for this program (created on first use). */
const char *zs_test_tmpdir(void);
/* Writes text to tmpdir/name and returns the full path (static buffer
 * rotated over 8 slots). */
const char *zs_test_write(const char *name, const char *text);
/* Runs a shell command, captures stdout+stderr into out (may be NULL) and
 * returns its exit status (-1 when it could not run). */
int zs_test_run(const char *cmd, char *out, size_t n);
/* A file's whole text (NUL-terminated, caller frees), NULL when it cannot
 * be read. */
char *zs_test_slurp(const char *path);
/* Tokens the schedule's pieces place on `rank` in `layout`. */
int64_t zs_test_piece_tokens(const zs_schedule *s, int rank, int layout);
/* Deterministic pseudo-random numbers for property tests (xorshift64 on
 * the caller's state, which must start non-zero). */
uint64_t zs_test_rng(uint64_t *x);
/* Path to the built zepsim binary (tests/zs_test_cli.c: a test that calls
 * it links the CLI and is built after it). */
const char *zs_test_zepsim(void);

#define ZS_ASSERT_OK(expr, errp)                                                                   \
    do {                                                                                           \
        int zs__rc = (expr);                                                                       \
        if (zs__rc != 0) {                                                                         \
            fprintf(stderr, "%s:%d: %s returned %d: ", __FILE__, __LINE__, #expr, zs__rc);         \
            zs_err_print(stderr, (errp));                                                          \
        }                                                                                          \
        CU_ASSERT_EQUAL_FATAL(zs__rc, 0);                                                          \
    } while (0)

#define ZS_ASSERT_INT_EQ(a, b)                                                                     \
    do {                                                                                           \
        long long zs__a = (long long)(a), zs__b = (long long)(b);                                  \
        if (zs__a != zs__b)                                                                        \
            fprintf(stderr, "%s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b, zs__a,  \
                    zs__b);                                                                        \
        CU_ASSERT(zs__a == zs__b);                                                                 \
    } while (0)

/* |a - b| <= rel * |b| */
#define ZS_ASSERT_REL(a, b, rel)                                                                   \
    do {                                                                                           \
        double zs__a = (double)(a), zs__b = (double)(b);                                           \
        int zs__ok = fabs(zs__a - zs__b) <= (rel)*fabs(zs__b);                                     \
        if (!zs__ok)                                                                               \
            fprintf(stderr, "%s:%d: %s ~ %s (rel %g): %.9g vs %.9g (ratio %.4f)\n", __FILE__,      \
                    __LINE__, #a, #b, (double)(rel), zs__a, zs__b, zs__b ? zs__a / zs__b : 0.0);   \
        CU_ASSERT(zs__ok);                                                                         \
    } while (0)

#define ZS_ASSERT_NEAR(a, b, tol)                                                                  \
    do {                                                                                           \
        double zs__a = (double)(a), zs__b = (double)(b);                                           \
        int zs__ok = fabs(zs__a - zs__b) <= (tol);                                                 \
        if (!zs__ok)                                                                               \
            fprintf(stderr, "%s:%d: %s ~ %s (tol %g): %.9g vs %.9g\n", __FILE__, __LINE__, #a, #b, \
                    (double)(tol), zs__a, zs__b);                                                  \
        CU_ASSERT(zs__ok);                                                                         \
    } while (0)

#define ZS_ASSERT_STR_EQ(a, b)                                                                     \
    do {                                                                                           \
        const char *zs__a = (a), *zs__b = (b);                                                     \
        int zs__ok = zs__a && zs__b && strcmp(zs__a, zs__b) == 0;                                  \
        if (!zs__ok)                                                                               \
            fprintf(stderr, "%s:%d: %s == %s: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b,     \
                    zs__a ? zs__a : "(null)", zs__b ? zs__b : "(null)");                           \
        CU_ASSERT(zs__ok);                                                                         \
    } while (0)

#define ZS_ASSERT_STR_CONTAINS(hay, needle)                                                        \
    do {                                                                                           \
        const char *zs__h = (hay), *zs__n = (needle);                                              \
        int zs__ok = zs__h && strstr(zs__h, zs__n) != NULL;                                        \
        if (!zs__ok)                                                                               \
            fprintf(stderr, "%s:%d: expected \"%s\" in:\n%s\n", __FILE__, __LINE__, zs__n,         \
                    zs__h ? zs__h : "(null)");                                                     \
        CU_ASSERT(zs__ok);                                                                         \
    } while (0)

#endif

/* "Did you mean": the registered name nearest to a misspelt one, so an
 * unknown method, backend or option key is answered with the likely fix
 * (`--method zeppeln` -> did you mean 'zeppelin'?). Names are compared
 * case-insensitively by edit distance (insertions, deletions,
 * substitutions and swaps of neighbours); a candidate counts only when it
 * is close for the length of the word, so "bogus" suggests nothing.
 * Depends on libc only. */
#ifndef ZS_SUGGEST_H
#define ZS_SUGGEST_H

#include <stddef.h>

typedef struct zs_suggest {
    const char *word; /* borrowed */
    const char *best; /* borrowed from the candidates; NULL: none close */
    int dist;
} zs_suggest;

void zs_suggest_init(zs_suggest *s, const char *word);
/* Considers one candidate (borrowed: it must outlive s); ties keep the first. */
void zs_suggest_add(zs_suggest *s, const char *cand);
/* The nearest close candidate, or NULL. */
const char *zs_suggest_best(const zs_suggest *s);

/* Writes "did you mean 'BEST'? " into buf when there is a close candidate,
 * else "" (for the start of an error's fix). */
void zs_suggest_phrase(const zs_suggest *s, char *buf, size_t n);

#endif

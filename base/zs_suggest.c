/* "Did you mean": see zs_suggest.h. */
#include "zs_suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAXLEN 64

/* Optimal string alignment distance, case-insensitive; words longer than
 * MAXLEN are never close. */
static int distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAXLEN || m >= MAXLEN)
        return MAXLEN;
    int d[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* Edits that still read as a typo of a word of len characters. */
static int close_enough(size_t len)
{
    return len <= 4 ? 1 : len <= 8 ? 2 : 3;
}

void zs_suggest_init(zs_suggest *s, const char *word)
{
    s->word = word;
    s->best = NULL;
    s->dist = MAXLEN;
}

void zs_suggest_add(zs_suggest *s, const char *cand)
{
    if (!s->word || !cand)
        return;
    int d = distance(s->word, cand);
    if (d < s->dist && d <= close_enough(strlen(s->word))) {
        s->best = cand;
        s->dist = d;
    }
}

const char *zs_suggest_best(const zs_suggest *s)
{
    return s->best;
}

void zs_suggest_phrase(const zs_suggest *s, char *buf, size_t n)
{
    if (!n)
        return;
    if (s->best)
        snprintf(buf, n, "did you mean '%s'? ", s->best);
    else
        buf[0] = '\0';
}

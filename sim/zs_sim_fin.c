/* Completion notices of the SimGrid executor (see zs_sim_internal.h): which
 * of a rank's outstanding comms SimGrid has completed, known without a
 * simcall.
 *
 * Why: an actor waited for its next completion with a wait-any over all
 * its outstanding comms, which costs SimGrid O(n) per call (it tests,
 * registers with and unregisters from every comm of the set). Comms that
 * complete at one date are completed together, so after a wake-up the
 * actor's next wait usually returns at once: the first completed comm in
 * the array. With the notices the walker picks that comm itself and waits
 * on it alone (one simcall as before, answered at once, as before); when
 * none is complete it parks (zs__sgp_park), and the notice of the first
 * comm to complete wakes it, in the order the wait-any would have answered
 * (one blocking simcall as before, its timeout set and removed as before,
 * then the wait on that comm alone, answered at once). The transfers,
 * their dates and the timers are the same, and so are the results
 * (scripts/check-identical --backend sim).
 *
 * How: SimGrid copies a message's payload pointer once, when its comm
 * completes, before it answers any wait (zs__sgw_on_done). Every went with
 * a comm is entered under its comm's key in sim.fin (a chained hash over
 * the wents themselves, no allocation); the notice marks the went(s) of
 * that key (the sender's and the receiver's, when both are this run's) and
 * takes them out. */
#include "zs_sim_internal.h"

#include <stdlib.h>

static size_t fin_bucket(const sim *x, const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> (64 - x->fin_bits));
}

static void fin_done(void *ctx, const void *key)
{
    sim *x = ctx;
    went **p = &x->fin[fin_bucket(x, key)];
    went *wake[2];
    int nwake = 0;
    while (*p) {
        went *w = *p;
        if (w->key == key) {
            *p = w->fin_next;
            w->fin_next = NULL;
            w->fin = 1;
            w->owner->nfin++;
            if (w->owner->park.state == 1 && nwake < 2)
                wake[nwake++] = w;
        } else {
            p = &w->fin_next;
        }
    }
    if (nwake == 2 && wake[1]->owner->park.seq < wake[0]->owner->park.seq) {
        went *t = wake[0];
        wake[0] = wake[1];
        wake[1] = t;
    }
    for (int i = 0; i < nwake; i++)
        zs__sgp_wake(&wake[i]->owner->park, wake[i]);
}

int zs__sim_fin_open(sim *x)
{
    int bits = 10;
    while (bits < 22 && ((size_t)1 << bits) < (size_t)x->s->nranks * 128)
        bits++;
    x->fin_bits = bits;
    x->fin = calloc((size_t)1 << bits, sizeof *x->fin);
    if (!x->fin)
        return ZS_ENOMEM;
    zs__sgw_on_done(fin_done, x);
    return ZS_OK;
}

void zs__sim_fin_close(sim *x)
{
    if (!x->fin)
        return;
    zs__sgw_on_done(NULL, NULL);
    free(x->fin);
    x->fin = NULL;
}

void zs__sim_fin_watch(rank_st *R, went *w)
{
    sim *x = R->x;
    w->key = zs__sgw_key(w->comm);
    w->owner = R;
    size_t b = fin_bucket(x, w->key);
    w->fin_next = x->fin[b];
    x->fin[b] = w;
}

void zs__sim_fin_retire(rank_st *R, went *w)
{
    if (w->fin) {
        R->nfin--;
        return;
    }
    /* completed without a notice (not expected): out of its bucket before
     * the went is reused */
    sim *x = R->x;
    for (went **p = &x->fin[fin_bucket(x, w->key)]; *p; p = &(*p)->fin_next)
        if (*p == w) {
            *p = w->fin_next;
            break;
        }
}

ssize_t zs__sim_fin_first(const rank_st *R)
{
    for (int j = 0; j < R->nw; j++)
        if (R->w[j]->fin)
            return j;
    return -1;
}

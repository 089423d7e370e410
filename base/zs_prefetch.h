/* A prefetch hint that the compiler keeps: the analytic backend fetches the
 * state coming events will touch before it handles them (with thousands of
 * ranks each event lands on state in no cache). Hints only: nothing is
 * decided on what is fetched. */
#ifndef ZS_PREFETCH_H
#define ZS_PREFETCH_H

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* An asm statement, not __builtin_prefetch: GCC 12 at -O2 drops a
 * __builtin_prefetch under a condition (its control-dependent dead code
 * elimination sees no effect), which removed every one of them in the
 * analytic backend. */
#define ZS_PF(p) __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)(p)))
#elif defined(__GNUC__)
#define ZS_PF(p) __builtin_prefetch((p), 1)
#else
#define ZS_PF(p) ((void)(p))
#endif

#endif

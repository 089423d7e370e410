/* Room in a growing array: the one doubling policy the schedule builder,
 * the NIC sharing and the Chakra reader and writer use for their arrays
 * (capacity from 16, doubled until it holds what is needed). */
#ifndef ZS_GROW_H
#define ZS_GROW_H

#include <stddef.h>
#include <stdint.h>

/* Makes *p (of *cap elements of `size` bytes) hold at least `need`
 * elements, reallocating and updating *cap when it does not. ZS_OK, or
 * ZS_ENOMEM with *p and *cap unchanged. */
int zs_grow(void **p, int64_t *cap, int64_t need, size_t size);

#endif

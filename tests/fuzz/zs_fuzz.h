/* Fuzz targets for every reader (docs/reliability.md). Each fuzz_*.c
 * defines the libFuzzer entry point LLVMFuzzerTestOneInput; built with
 * clang -fsanitize=fuzzer it is a fuzzer (make fuzz), linked with replay.c
 * it is a plain program that runs saved inputs through the same entry
 * point (the fuzz_replay_* ctest entries, any compiler). Readers that take
 * a path get the input through an in-memory file. */
#ifndef ZS_FUZZ_H
#define ZS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A path ("/proc/self/fd/N") whose content is data; valid until the next
 * call. NULL when the in-memory file cannot be made (the input is then
 * skipped). */
const char *zs_fuzz_path(const uint8_t *data, size_t size);

/* Lowers the process-wide limits once, so that one input stays a few
 * milliseconds of work (the limits themselves are what is tested): 1 MiB
 * per file, plans of at most 64 ranks and 100000 executed ops. */
void zs_fuzz_limits(void);

#endif

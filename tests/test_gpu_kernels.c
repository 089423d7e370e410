/* GPU: every CUDA kernel against the CPU reference (`zepsim hw check`'s
 * cases). Exits 77 (skip) with the reason when no GPU is visible or the
 * CUDA backend was not built. */
#include <stdlib.h>

#include "zs_hw.h"
#include "zs_test.h"

static void test_kernels_match_reference(void)
{
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_hw_check(stdout, &e), &e);
}

int main(int argc, char **argv)
{
    int n = 0;
    zs_err e;
    if (zs_hw_devices(&n, NULL, 0, &e) != ZS_OK) {
        printf("skipping GPU kernel tests: %s\n", e.what);
        return 77;
    }
    static const zs_test_case cases[] = {{"kernels_match_reference", test_kernels_match_reference},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"gpu_kernels", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}

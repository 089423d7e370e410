/* The path of the built zepsim binary, for tests that run the CLI: see
 * zs_test.h. Apart from the other helpers so that only such tests depend
 * on the CLI and the libraries under it. */
#include "zs_test.h"

const char *zs_test_zepsim(void)
{
    return ZS_BIN;
}

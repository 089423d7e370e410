/* What the SimGrid backend was built against: see zs_sim_info.h. */
#include "zs_sim_info.h"

#include <stdio.h>

#include <simgrid/engine.h> /* brings the base macros version.h needs */
#include <simgrid/version.h>

const char *zs_sim_simgrid_version(void)
{
    static char buf[64];
    int major, minor, patch;
    sg_version_get(&major, &minor, &patch);
    snprintf(buf, sizeof buf, "SimGrid %d.%d.%d", major, minor, patch);
    return buf;
}

/* What the SimGrid backend was built against (for --version and result
 * provenance). */
#ifndef ZS_SIM_INFO_H
#define ZS_SIM_INFO_H

/* "SimGrid 3.32" as reported by the library at run time. */
const char *zs_sim_simgrid_version(void);

#endif

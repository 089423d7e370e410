/* The toy method and toy backend that tests/test_extend.c registers: one
 * row each, defined in one file each (toy_planner.c, toy_backend.c). */
#ifndef TOY_H
#define TOY_H

#include "zs_backend.h"
#include "zs_planner.h"

extern const zs_planner_ops zs_toy_planner;
extern const zs_backend zs_toy_backend;

#endif

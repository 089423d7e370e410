/* See zs_sg_wait_internal.h: the wait-any with a timeout that SimGrid 3.32's C API
 * lacks. */
#include "zs_sg_wait_internal.h"

#include <new>
#include <vector>

#include <simgrid/s4u/Comm.hpp>

/* Activities, not comms: s4u::Comm::wait_any_for only copies its vector
 * into one of ActivityPtr (a dynamic_cast and an allocation per call, 2-3%
 * of a run) before calling Activity::wait_any_for. */
struct zs_sgw {
    std::vector<simgrid::s4u::ActivityPtr> v;
};

zs_sgw *zs__sgw_new(void)
{
    return new (std::nothrow) zs_sgw;
}

void zs__sgw_free(zs_sgw *w)
{
    delete w;
}

ssize_t zs__sgw_wait_any_for(zs_sgw *w, sg_comm_t *comms, size_t n, double timeout)
{
    ssize_t k;
    try {
        w->v.clear();
        for (size_t i = 0; i < n; i++)
            w->v.emplace_back(static_cast<simgrid::s4u::Activity *>(comms[i]),
                              false); /* borrow the caller's reference */
        k = simgrid::s4u::Activity::wait_any_for(w->v, timeout);
    } catch (...) { /* no exception may cross into C */
        k = -2;
    }
    for (size_t i = 0; i < w->v.size(); i++)
        if ((ssize_t)i != k)
            w->v[i].detach(); /* give the reference back to the caller */
    w->v.clear();             /* releases the completed comm's */
    return k;
}

/* See zs_sg_wait_internal.h: the wait-any with a timeout that SimGrid 3.32's C API
 * lacks. */
#include "zs_sg_wait_internal.h"

#include <new>
#include <vector>

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>

/* Activities, not comms: s4u::Comm::wait_any_for only copies its vector
 * into one of ActivityPtr (a dynamic_cast and an allocation per call, 2-3%
 * of a run) before calling Activity::wait_any_for. */
struct zs_sgw {
    std::vector<simgrid::s4u::ActivityPtr> v;   /* zs__sgw_wait_any_for's scratch */
    std::vector<simgrid::s4u::ActivityPtr> set; /* zs__sgw_add's, borrowed references */
};

zs_sgw *zs__sgw_new(void)
{
    return new (std::nothrow) zs_sgw;
}

void zs__sgw_free(zs_sgw *w)
{
    if (!w)
        return;
    for (auto &a : w->set)
        a.detach(); /* the caller's references */
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

void zs__sgw_on_done(void (*fn)(void *ctx, const void *key), void *ctx)
{
    using simgrid::kernel::activity::CommImpl;
    simgrid::s4u::Engine *e = simgrid::s4u::Engine::get_instance();
    if (!fn) {
        e->set_default_comm_data_copy_callback(&simgrid::s4u::Comm::copy_pointer_callback);
        return;
    }
    /* The key is the kernel comm both handles share: the engine's CommImpl
     * pointer here, the handle's ActivityImpl (its only base) there. */
    e->set_default_comm_data_copy_callback([fn, ctx](CommImpl *c, void *buf, size_t size) {
        simgrid::s4u::Comm::copy_pointer_callback(c, buf, size);
        fn(ctx, c);
    });
}

const void *zs__sgw_key(sg_comm_t c)
{
    return static_cast<simgrid::s4u::Activity *>(c)->get_impl();
}

int zs__sgw_add(zs_sgw *w, sg_comm_t c)
{
    try {
        w->set.emplace_back(static_cast<simgrid::s4u::Activity *>(c), false);
    } catch (...) {
        return -1;
    }
    return 0;
}

size_t zs__sgw_size(const zs_sgw *w)
{
    return w->set.size();
}

ssize_t zs__sgw_wait(zs_sgw *w, double timeout)
{
    ssize_t k;
    try {
        k = simgrid::s4u::Activity::wait_any_for(w->set, timeout);
    } catch (...) { /* no exception may cross into C */
        k = -2;
    }
    if (k >= 0) /* moving the rest down releases the completed comm's reference */
        w->set.erase(w->set.begin() + k);
    return k;
}

void zs__sgw_drop(zs_sgw *w, size_t k)
{
    w->set[k].detach();
    w->set.erase(w->set.begin() + (ptrdiff_t)k);
}

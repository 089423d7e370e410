/* See zs_sg_wait_internal.h: the wait-any with a timeout that SimGrid 3.32's C API
 * lacks. */
#include "zs_sg_wait_internal.h"

#include <new>
#include <vector>

#include <simgrid/actor.h>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/simix.hpp>

/* The one member of SimGrid's kernel actor that parking needs: answering
 * an actor's blocking simcall is what every SimGrid activity does when it
 * completes, but ActorImpl's header (src/kernel/actor/ActorImpl.hpp) is
 * not installed. simcall_answer is exported by libsimgrid 3.32 (nm -D),
 * non-virtual, and called through s4u::Actor::get_impl()'s pointer; the
 * class is otherwise only forward-declared by the installed headers. */
namespace simgrid::kernel::actor
{
class ActorImpl
{
  public:
    void simcall_answer();
};
} // namespace simgrid::kernel::actor

/* Activities, not comms: s4u::Comm::wait_any_for only copies its vector
 * into one of ActivityPtr (a dynamic_cast and an allocation per call, 2-3%
 * of a run) before calling Activity::wait_any_for. */
struct zs_sgw {
    std::vector<simgrid::s4u::ActivityPtr> v; /* zs__sgw_wait_any_for's scratch */
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

/* Parking numbers: the order in which actors blocked, which is the order
 * a comm's completion answered their wait-anys (each wait-any registered
 * its simcall at the back of every comm of its set). */
static unsigned long long park_seq;

/* One blocking simcall, as the wait-any over the set was, whose timeout is
 * a kernel timer set at the same point of the simcall's handling, so
 * timers keep their order at equal dates. */
int zs__sgp_park(zs_sgp *p, double timeout)
{
    using simgrid::kernel::actor::ActorImpl;
    using simgrid::kernel::timer::Timer;
    ActorImpl *me = sg_actor_self()->get_impl();
    try {
        simgrid::kernel::actor::simcall_blocking([p, me, timeout] {
            p->who = me;
            p->seq = ++park_seq;
            p->state = 1;
            p->woke = nullptr;
            p->timer = nullptr;
            if (timeout >= 0)
                p->timer = Timer::set(simgrid::s4u::Engine::get_clock() + timeout, [p] {
                    p->timer = nullptr; /* the engine frees a timer that fired */
                    p->state = 3;
                    auto *a = static_cast<ActorImpl *>(p->who);
                    p->who = nullptr;
                    a->simcall_answer();
                });
        });
    } catch (...) { /* no exception may cross into C */
        return -2;
    }
    return p->state == 2 ? 1 : 0;
}

int zs__sgp_wake(zs_sgp *p, void *what)
{
    if (p->state != 1)
        return 0;
    if (p->timer) { /* as a completed wait-any removed its timeout */
        static_cast<simgrid::kernel::timer::Timer *>(p->timer)->remove();
        p->timer = nullptr;
    }
    p->state = 2;
    p->woke = what;
    auto *a = static_cast<simgrid::kernel::actor::ActorImpl *>(p->who);
    p->who = nullptr;
    a->simcall_answer();
    return 1;
}

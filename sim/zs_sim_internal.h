/* Internals of the SimGrid executor (zs_sim.h), shared by its files, one
 * concern each:
 *   zs_sim.c        zs_sim_run: checks, the engine, the actors, the result;
 *   zs_sim_setup.c  per-rank tables, the platform, the engine flags, release;
 *   zs_sim_walk.c   the program walker: each rank's actor and its event loop;
 *   zs_sim_chan.c   point-to-point: channels, posting, completion;
 *   zs_sim_coll.c   collectives: arrival, aggregated flows, wake-ups;
 *   zs_sim_links.c  link and NIC accounting along each flow's route;
 *   zs_sim_fold.c   folding: skipping the iterations zs_fold replays;
 *   zs_sim_fork.c   running a simulation in a child process (zs_fork);
 *   zs_sim_fin.c    completion notices: the comms SimGrid has completed;
 *   zs_sg_wait.cpp  the wait-any with a timeout SimGrid's C API lacks, the
 *                   actors' wait sets, the completion callback.
 *
 * One simulation per process: SimGrid 3.32 holds one platform and one
 * engine per process, so a `sim` exists at most once. It is not a global:
 * each rank's state points back to it (rank_st.x) and every function
 * reaches it from there, so the data flow stays visible. Only the
 * once-per-process guard is static (zs_sim.c).
 *
 * Nothing outside sim/ includes this header. Depends on SimGrid 3.32's C
 * API, the schedule IR, zs_fold, zs_result, zs_platform and zs_timeline. */
#ifndef ZS_SIM_INTERNAL_H
#define ZS_SIM_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "zs_foldacct.h"
#include "zs_fold.h"
#include "zs_platform.h"
#include "zs_sg_wait_internal.h"
#include "zs_sim.h"
#include "zs_timeline.h"

/* What an outstanding communication of a rank is: a transfer, a flow of a
 * collective into this member, the go that starts a collective's flows out
 * of it, or the wake-up that ends a collective. Compute ops are no SimGrid
 * activity: they end at dates the actor knows. */
enum { W_P2P, W_COLL, W_GO, W_WAKE };

typedef struct chan { /* the p2p channel (src, dst, tag) */
    int32_t src, dst, tag;
    int32_t pend_send, pend_recv; /* posted, not yet matched */
    int32_t nsend, nrecv;         /* posted so far: the k-th send meets the k-th receive */
    uint8_t *sq[2];               /* streams of the posts waiting on each side (sends [0],
                                   * receives [1]), oldest at sq_head: ring buffers */
    int32_t sq_head[2], sq_cap[2];
    sg_mailbox_t mb;
    struct chan *next;
} chan;

struct coll_inst;

typedef struct flow {          /* one flow of a collective, the payload of its comm */
    int32_t src, dst, dst_idx; /* ranks; the destination's member index */
    double bytes, moved;       /* payload; bytes SimGrid moves (zs__sim_coll_flows) */
    struct coll_inst *inst;
} flow;

/* One running collective: its members are done when all its flows are, as
 * in a real ring where every step waits for the previous one everywhere.
 * Each member posts its own flows out (the source's actor sends, the
 * destination's receives, so SimGrid routes them between their hosts)
 * and collects its sends when the collective is over; the last member
 * to arrive tells the others to start with a go. No flow is detached: SimGrid 3.32
 * keeps every detached comm in one list that it searches linearly at each
 * completion. */
typedef struct coll_inst {
    int flows_left;
    int nwait;
    int nref;           /* members not done with it yet: the last frees it */
    int32_t *wait_rank; /* members whose own flows are in, waiting for the rest */
    uint8_t *wait_stream;
    int32_t *out0;    /* member i's flows out are flows[out0[i] .. out0[i + 1]) */
    flow *flows;      /* grouped by source member */
    sg_comm_t *sends; /* per flow: its source's handle, collected at the end */
} coll_inst;

typedef struct went { /* one outstanding communication of a rank */
    sg_comm_t comm;
    void *data;
    chan *ch; /* receives: the channel, for accounting */
    double bytes;
    int64_t op; /* p2p: the op, its segment iteration, issue date, message number */
    int32_t seg, iter, seq;
    double t0;
    uint8_t kind, stream, is_recv;
    uint8_t fin; /* SimGrid completed the comm (zs__sim_fin_done); not yet retired */
    struct went *next_free;
    /* completion notices: the comm's key and the next went of its bucket in
     * sim.fin (until the notice), and the rank whose went it is */
    const void *key;
    struct went *fin_next;
    struct rank_st *owner;
} went;

/* What the walker's head_action reads of an op, packed for it: the
 * schedule's zs_op (72 bytes), its dependency list, each dependency's
 * segment and that segment's repeat count were four cache misses per look
 * at a stream's head op (head_action runs in start_ready and
 * local_horizon, 14% of a Zeppelin iteration on 128 GPUs). */
typedef struct wdep {
    int32_t op;   /* the op depended on */
    int32_t need; /* completions it needs; < 0: the waiting op's iteration + 1 (same segment) */
} wdep;

/* a send or receive; a compute op that takes time; a host copy (zs_ck_is_host_copy) */
enum { WOP_P2P = 1, WOP_TIMED = 2, WOP_COPY = 4 };

typedef struct wop {
    int32_t d0; /* its dependencies: wd[d0 .. d0 + ndeps) */
    int16_t ndeps;
    uint8_t flags;   /* WOP_* */
    uint8_t kind;    /* zs_op_kind */
    double duration; /* a compute op's */
} wop;

typedef struct stream_st {
    int32_t seg, iter;
    int64_t cur;     /* stored index of the head op; -1 when the stream is done */
    int npend;       /* outstanding communications of the running op */
    int p2p_pending; /* sends and receives issued and not complete */
    int running;     /* a compute op or collective holds the stream */
    int computing;   /* the running op is a compute op; rem: its work left */
    int copying;     /* ... a host copy: a copy engine's, not shared with the SMs */
    double rem;      /* seconds of work at the GPU's full speed */
    double t_start;
    int asleep; /* folded (zs_fold.h): skipping iterations until wake_at */
    double wake_at;
    int32_t wseg, witer, wskip; /* the skip: segment, first iteration, count */
    coll_inst *ci;              /* the running collective (NULL until its go) */
    int32_t cidx;               /* this rank's member index in it */
} stream_st;

struct sim;

typedef struct rank_st {
    struct sim *x; /* the simulation */
    int rank;
    const zs_rank_prog *p;
    wop *wo;                           /* per op */
    wdep *wd;                          /* the ops' dependencies (wop.d0) */
    int32_t *done, *next_same, *first; /* first[seg * ZS_MAX_STREAMS + s] */
    uint8_t *waiters;                  /* per op: bit s, an op of stream s depends on it */
    double horizon; /* the actor's wait ends here at the latest (see local_horizon) */
    int past;       /* starting ops at a date before SimGrid's clock: compute only */
    chan **chan_of;
    stream_st st[ZS_MAX_STREAMS];
    went **w; /* outstanding comms, in the order they were posted */
    int nw, capw;
    int nfin; /* wents in w that SimGrid completed (went.fin) */
    went *free_w;
    zs_sgw *sgw;                 /* its waits on one comm (zs__sgw_wait_any_for) */
    zs_sgp park;                 /* where it blocks until a notice (zs__sgp_park) */
    zs_foldacct acct;            /* compute / exposed / idle, knowing sleeping streams */
    double now;                  /* the date of the event being handled */
    double ps_last;              /* compute ops share the GPU: their work left is as of ps_last */
    int ncomp;                   /* compute ops running */
    unsigned comp;               /* bit s: stream s runs a compute op (st[s].computing) */
    int ncopy;                   /* host copies running (copy engines, not the SMs) */
    int nasleep;                 /* streams asleep (folding) */
    double *cmax;                /* folding, a group's first member: per collective op, the largest
                                  * buffer of its last instance (all-to-all(v) replays), lazily */
    int32_t *skip_at, *skip_add; /* folding: op i gets skip_add[i] completions more when
                                  * done[i] reaches skip_at[i]; NULL when nothing folds */
    /* folding: busy time so far of the GPU's share of its links per class,
     * and of its NIC, at the reference stream's last ZS_FACCT_NB boundaries */
    double lsnap[ZS_FACCT_NB][ZS_LINK_NCLASSES + 1];
    double end;
    int finished;
    sg_host_t host;
    sg_mailbox_t wake_mb[ZS_MAX_STREAMS];
} rank_st;

typedef struct group_st {
    int arrived;
    double max_bytes;    /* largest buffer among the members arrived so far */
    sg_mailbox_t *mb_in; /* per member index */
    uint8_t *mstream;    /* per member index: the stream its collective runs on */
    int64_t op0;         /* the first member's op in the collective under way */
    int nch;             /* its rings' channels (0: not computed yet) */
    int32_t *ring;       /* member index at position pos of channel c's ring: ring[c * n + pos] */
} group_st;

typedef struct sim {
    const zs_schedule *s;
    const zs_cluster *c;
    zs_sim_opts o;
    zs_result *r;
    rank_st *ranks;
    sg_host_t *hosts;
    group_st *groups;
    /* links */
    int nlinks;
    int32_t *l_act;
    double *l_last;
    double *l_busy;   /* per link: busy seconds simulated so far (closed intervals) */
    uint8_t *l_class; /* per link: its zs_link_class (zs__plat_link_class, looked up once) */
    int32_t *l_nic;   /* per link: its NIC or -1 (zs__plat_link_nic) */
    double *n_busy;   /* per NIC: the same */
    int32_t *nic_act;
    double *nic_last;
    /* scratch of the collectives: bytes and longest path latency per link,
     * and the links touched */
    double *c_load, *c_lat;
    int32_t *c_touched;
    /* p2p channels */
    chan **chash;
    size_t nchash;
    /* outstanding comms by key (zs__sgw_key), to mark a went complete when
     * SimGrid reports its comm (zs__sim_fin_done); 1 << fin_bits buckets */
    went **fin;
    int fin_bits;
    zs_timeline *tl;    /* NULL: no timeline */
    zs_fold *fold;      /* NULL: unrolled */
    char dummy;         /* payload of every message: SimGrid refuses NULL payloads */
    zs_sim_stats stats; /* transfers started (zs_sim_last_stats) */
    /* failure reported by an actor */
    int failed;
    zs_err err;
} sim;

/* Bytes as SimGrid takes them. */
static inline long zs__sim_bytes(double b)
{
    return b <= 0 ? 0 : (long)llround(b);
}

/* Counts a transfer from rank src to rank dst in *n, and in *across when
 * their GPUs are in different nodes (zs_sim_last_stats). */
static inline void zs__sim_count(const sim *x, int src, int dst, int64_t *n, int64_t *across)
{
    int gpn = x->c->gpus_per_node;
    (*n)++;
    if (gpn > 0 && src / gpn != dst / gpn)
        (*across)++;
}

/* A hint to fetch *p into the caches (see zs_analytic.c's PF: an asm
 * statement, which GCC keeps under a condition). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define ZS_SIM_PF(p) __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)(p)))
#elif defined(__GNUC__)
#define ZS_SIM_PF(p) __builtin_prefetch((p), 1)
#else
#define ZS_SIM_PF(p) ((void)(p))
#endif

/* The lowest set bit of m (m != 0): the next stream of a stream mask. */
static inline int zs__sim_low(unsigned m)
{
#if defined(__GNUC__)
    return __builtin_ctz(m);
#else
    int s = 0;
    while (!(m >> s & 1u))
        s++;
    return s;
#endif
}

/* zs_sim_setup.c */
int zs__sim_setup(sim *x, zs_err *e);
void zs__sim_release(sim *x);
void zs__sim_engine_init(void);
int zs__sim_load_platform(const zs_cluster *c, zs_err *e);
void zs__sim_describe_stuck(sim *x, zs_err *e);

/* zs_sim_walk.c */
void zs__sim_actor_main(int argc, char **argv);
/* Records the first failure (later ones are dropped): the run stops. */
void zs__sim_fail(const rank_st *R, int code, const char *fix, const char *fmt, int64_t op,
                  const char *what);
void zs__sim_stream_seek(rank_st *R, int s, int32_t seg);
void zs__sim_stream_next(rank_st *R, int s, int64_t i);
void zs__sim_op_done(rank_st *R, int64_t i, double now);
/* One more completion of op i (and any skipped ones waiting for it). */
void zs__sim_done_inc(rank_st *R, int64_t i);
/* Another rank's actor is about to change P's accounting at `now`: P's
 * compute ends before `now` that its actor did not wake for
 * (local_horizon) happen first, so that P's accounting stays in time
 * order. */
void zs__sim_catch_up(rank_st *P, double now);
/* A new outstanding communication of stream s (NULL when out of memory). */
went *zs__sim_went_new(rank_st *R, int kind, int s);

/* zs_sim_fin.c: completion notices (sim.fin, went.fin, rank_st.nfin) */
int zs__sim_fin_open(sim *x); /* ZS_ENOMEM; notices on until zs__sim_fin_close */
void zs__sim_fin_close(sim *x);
/* w (R->w's last) has just posted w->comm: w->fin is set when SimGrid
 * completes it, and the actor is woken if it is parked (zs__sgp_park). */
void zs__sim_fin_watch(rank_st *R, went *w);
/* w's comm was waited on and is leaving R->w. */
void zs__sim_fin_retire(rank_st *R, went *w);
/* The first went of R->w whose comm is complete (-1: none): the one a
 * wait-any over R->w returns at once. */
ssize_t zs__sim_fin_first(const rank_st *R);

/* zs_sim_chan.c */
int zs__sim_start_p2p(rank_st *R, int s, int64_t i, double now);
void zs__sim_p2p_done(rank_st *R, went *w, double now);

/* zs_sim_coll.c */
int zs__sim_start_coll(rank_st *R, int s, int64_t i, double now);
/* Retires a comm of stream s's collective: a flow in, the go (the member
 * posts its flows out) or the wake-up. Returns 1 when the member is done
 * with the collective (its op ends now), 0 otherwise. */
int zs__sim_coll_retire(rank_st *R, went *w);

/* Calls fn for every flow of collective op (group n > 1) with `bytes` per
 * member: source and destination ranks, the destination's index among the
 * members, payload bytes, bytes SimGrid moves (payload + the latency of
 * the extra ring steps as equivalent bytes). Returns fn's first nonzero. */
typedef int (*zs__coll_flow_fn)(sim *x, int src, int dst, int dst_idx, double bytes, double moved,
                                void *arg);
int zs__sim_coll_flows(sim *x, const zs_op *op, double bytes, zs__coll_flow_fn fn, void *arg);

/* zs_sim_links.c */
void zs__sim_flow_start(sim *x, int src, int dst, double now);
void zs__sim_flow_end(sim *x, int src, int dst, double bytes, double now);
/* Bytes of a flow folding replayed (busy time: zs__sim_links_share). */
void zs__sim_flow_replay(sim *x, int src, int dst, double bytes);
/* GPU g's share of the busy time so far of its links, per class, and of
 * its NIC (v[ZS_LINK_NCLASSES]), at `now`. */
void zs__sim_links_share(sim *x, int g, double now, double v[ZS_LINK_NCLASSES + 1]);

/* zs_sim_fold.c */
/* Stream s entered its next iteration of a candidate segment (t->iter). */
void zs__sim_fold_cross(rank_st *R, int s);
/* Stream s's sleep ended at R->now. */
void zs__sim_fold_wake(rank_st *R, int s);

#endif

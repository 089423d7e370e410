/* nccl-tests logs as the *_perf binaries print them, on one node or many,
 * in every shape published logs come in:
 * - both column layouts: 2.10 and later (size count type redop root, then
 *   time algbw busbw #wrong out of place and in place: 13 columns) and
 *   earlier ones (no root column, and an `error` column holding the largest
 *   numerical error, such as 1e-07, instead of a count of wrong elements;
 *   all-gather rows of those versions may leave redop blank);
 * - line prefixes added by launchers: mpirun --tag-output's "[1,0]<stdout>:"
 *   (also where it lands inside a line, as it does when two ranks' output
 *   interleaves), srun --label's "0: ", pdsh's "host: ";
 * - single-process runs (-g N): the "# nThread 1 nGpus N" header and N
 *   "Rank" lines on one host;
 * - several runs concatenated: every "# nThread" header starts a run of its
 *   own, with its own collective, ranks and hosts, and each must end with
 *   its "# Avg bus bandwidth" line.
 * The collective comes from --collective (zs_meas_set.nccl_collective),
 * else the command line or "Collective test" header, else the file name,
 * else the rows: a reduction op with count x type size = size is an
 * all-reduce, with count x type size x ranks = size a reduce-scatter, and
 * no reduction with the latter an all-gather. Where a named collective
 * contradicts its rows the log is refused, with the override to use.
 * Nodes are the distinct hosts of the "Rank" lines, ranks the highest rank
 * plus one. NCCL_ALGO / NCCL_PROTO come from the command line or NCCL's
 * INFO lines (or the reader's --nccl-algo / --nccl-proto defaults). One
 * point per result row, from the out-of-place or the in-place columns;
 * the rows of a one-rank run (a local copy, no communication) are checked
 * but give no point.
 * Lines NCCL itself prints with NCCL_DEBUG=INFO are skipped. See
 * zs_calib.h and docs/validation.md. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib_internal.h"
#include "zs_fdio.h"
#include "zs_nccl.h"
#include "zs_num.h"

static const struct {
    const char *bin, *op;
} nccl_ops[] = {{"all_gather", "all-gather"},
                {"reduce_scatter", "reduce-scatter"},
                {"all_reduce", "all-reduce"},
                {"alltoall", "all-to-all"},
                {"sendrecv", "p2p"}};

static const char *nccl_op_of(const char *text)
{
    for (size_t i = 0; i < sizeof nccl_ops / sizeof nccl_ops[0]; i++)
        if (strstr(text, nccl_ops[i].bin))
            return nccl_ops[i].op;
    return NULL;
}

/* --collective's value as a collective name, any spelling the tools use. */
static const char *nccl_op_named(const char *name)
{
    static const struct {
        const char *name, *op;
    } names[] = {{"allgather", "all-gather"},
                 {"all_gather", "all-gather"},
                 {"reducescatter", "reduce-scatter"},
                 {"reduce_scatter", "reduce-scatter"},
                 {"allreduce", "all-reduce"},
                 {"all_reduce", "all-reduce"},
                 {"alltoall", "all-to-all"},
                 {"all_to_all", "all-to-all"},
                 {"sendrecv", "p2p"},
                 {"p2p", "p2p"}};
    char canon[32]; /* lower case, '-' read as '_' */
    size_t n = 0;
    for (const char *p = name; *p && n < sizeof canon - 1; p++)
        canon[n++] = *p == '-' ? '_' : (char)tolower((unsigned char)*p);
    canon[n] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(canon, names[i].name) == 0)
            return names[i].op;
    return nccl_op_of(canon); /* a binary's name: all_reduce_perf */
}

int zs_meas_set_collective(zs_meas_set *s, const char *name, zs_err *e)
{
    const char *op = nccl_op_named(name);
    if (!op)
        return zs_err_set(e, ZS_EUSAGE, "--collective",
                          "use all-reduce, all-gather, reduce-scatter, all-to-all or sendrecv",
                          "unknown collective '%s'", name);
    snprintf(s->nccl_collective, sizeof s->nccl_collective, "%s", op);
    return ZS_OK;
}

#define MAX_HOSTS 65536
#define HOST_LEN  256

/* One run of a *_perf binary: a log holds one or more. */
typedef struct run_state {
    const char *op;      /* the collective, once known */
    const char *op_from; /* where it came from, for messages */
    int ranks;           /* highest "Rank N" + 1 */
    int nthread, ngpus;  /* the header's counts */
    int rows, footer, oob;
    int err_is_count; /* 1: the layout's #wrong column; 0: a max error; -1: unknown */
    int header_line;  /* line of the "# nThread" header (0: none) */
    char (*hosts)[HOST_LEN];
    int nhosts;
} run_state;

typedef struct log_state {
    const char *path;
    const char *forced;   /* --collective */
    const char *next_cmd; /* collective of a command line seen before the next run */
    unsigned algo, proto; /* from the log; 0: not stated */
    run_state run;
    int runs, points, last;
    int lone; /* rows of one-rank runs: read, not kept */
    char where[600];
} log_state;

static void run_reset(run_state *r)
{
    char(*hosts)[HOST_LEN] = r->hosts;
    memset(r, 0, sizeof *r);
    r->hosts = hosts;
    r->err_is_count = -1;
}

static int add_host(log_state *st, const char *h, zs_err *e)
{
    run_state *r = &st->run;
    /* Rank lines list a host's ranks together: the last one usually matches. */
    for (int i = r->nhosts - 1; i >= 0; i--)
        if (strcmp(r->hosts[i], h) == 0)
            return ZS_OK;
    if (r->nhosts == MAX_HOSTS)
        return zs_err_set(e, ZS_EINPUT, st->where, "split the log per run",
                          "more than %d hosts in one nccl-tests run", MAX_HOSTS);
    if (r->nhosts % 64 == 0) {
        void *p = realloc(r->hosts, sizeof *r->hosts * (size_t)(r->nhosts + 64));
        if (!p)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        r->hosts = p;
    }
    snprintf(r->hosts[r->nhosts++], sizeof r->hosts[0], "%s", h);
    return ZS_OK;
}

/* Removes what launchers put on nccl-tests' lines: mpirun --tag-output's
 * "[J,R]<stdout>:" (or <stderr>/<stddiag>) wherever it stands, and one or
 * two leading "LABEL:" prefixes (srun --label "12: ", pdsh "host: ") where
 * what follows is nccl-tests text (a '#', a '$', a digit or nothing). A
 * result row never has a colon right after its first field, so rows are
 * left alone. Works in place. */
static void strip_tags(char *line)
{
    for (char *p = strchr(line, '['); p; p = strchr(p, '[')) {
        char *q = p + 1;
        int digits = 0;
        while (isdigit((unsigned char)*q))
            q++, digits++;
        if (!digits || *q != ',') {
            p++;
            continue;
        }
        q++;
        digits = 0;
        while (isdigit((unsigned char)*q))
            q++, digits++;
        static const char *const streams[] = {"]<stdout>:", "]<stderr>:", "]<stddiag>:"};
        size_t sl = 0;
        for (size_t i = 0; digits && i < 3 && !sl; i++)
            if (strncmp(q, streams[i], strlen(streams[i])) == 0)
                sl = strlen(streams[i]);
        if (!sl) {
            p++;
            continue;
        }
        memmove(p, q + sl, strlen(q + sl) + 1);
    }
    for (int pass = 0; pass < 2; pass++) {
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '$')
            return;
        char *c = p;
        while (*c && *c != ':' && *c != ' ' && *c != '\t' && *c != '#')
            c++;
        if (*c != ':' || c == p || c - p > HOST_LEN)
            return;
        char *rest = c + 1;
        while (*rest == ' ' || *rest == '\t')
            rest++;
        if (*rest && *rest != '#' && *rest != '$' && !isdigit((unsigned char)*rest))
            return;
        memmove(line, rest, strlen(rest) + 1);
    }
}

int zs__nccl_log_sniff(const char *text)
{
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < 1023 ? len : 1023), p);
        strip_tags(line);
        const char *q = line + strspn(line, " \t\r");
        if (*q)
            return *q == '#' || *q == '$';
        p = nl ? nl + 1 : NULL;
    }
    return 0;
}

/* NCCL_ALGO=VALUE / NCCL_PROTO=VALUE anywhere on a line (command lines,
 * `-x NCCL_ALGO=...`, `export ...`), and NCCL's own INFO line "NCCL_ALGO
 * set by environment to VALUE". Conflicting values are an error. */
static int scan_setting(log_state *st, const char *line, const char *key, int algos, unsigned *mask,
                        zs_err *e)
{
    size_t kl = strlen(key);
    for (const char *p = strstr(line, key); p; p = strstr(p + kl, key)) {
        const char *v = p + kl;
        if (*v == '=')
            v++;
        else if (strncmp(v, " set by environment to ", 23) == 0)
            v += 23;
        else
            continue;
        while (*v == '"' || *v == '\'')
            v++;
        char val[128];
        size_t n = strcspn(v, " \t\"'");
        snprintf(val, sizeof val, "%.*s", (int)(n < 127 ? n : 127), v);
        unsigned m = 0;
        int rc = algos ? zs_nccl_algo_mask_parse(val, &m, e) : zs_nccl_proto_mask_parse(val, &m, e);
        if (rc) {
            snprintf(e->where, sizeof e->where, "%s", st->where);
            return rc;
        }
        if (*mask && *mask != m)
            return zs_err_set(e, ZS_EINPUT, st->where, "keep one run per log",
                              "the log sets %s to two different values", key);
        *mask = m;
    }
    return ZS_OK;
}

/* The largest GPU count a log may describe (the measurement format's). */
#define MAX_GPUS (1 << 20)

/* The count after `key` in the header line ("# nThread 1 nGpus 8 ..."),
 * when the key is there: strict, so "99999999999" is an error rather than
 * an overflow (sscanf's %d has no range). */
static int header_count(log_state *st, const char *line, const char *key, int *out, zs_err *e)
{
    const char *q = strstr(line, key);
    if (!q)
        return ZS_OK;
    q += strlen(key);
    while (*q == ' ')
        q++;
    /* 15 characters tell a valid count (at most 7 digits) from anything else */
    char num[16];
    size_t n = strcspn(q, " \t");
    snprintf(num, sizeof num, "%.*s", (int)(n < sizeof num ? n : sizeof num - 1), q);
    int64_t v;
    int rc = zs_num_i64(num, 1, MAX_GPUS, ZS_EINPUT, key, &v, e);
    if (rc && e)
        snprintf(e->where, sizeof e->where, "%s: %s", st->where, key);
    if (!rc)
        *out = (int)v;
    return rc;
}

/* Ends the current run: a run with rows must have its footer. */
static int run_end(log_state *st, zs_err *e)
{
    run_state *r = &st->run;
    if (r->rows && !r->footer)
        return zs_err_set(e, ZS_EINPUT, st->where,
                          "the run was cut short: rerun nccl-tests to completion",
                          "truncated nccl-tests run (started at line %d): no '# Avg bus "
                          "bandwidth' line after its rows",
                          r->header_line);
    if (r->oob > 0)
        return zs_err_set(e, ZS_EINPUT, st->where,
                          "NCCL found wrong results: fix the setup before calibrating on it",
                          "nccl-tests reports %d out-of-bounds values", r->oob);
    if (r->rows)
        st->runs++;
    run_reset(r);
    return ZS_OK;
}

/* "#  Rank 12 Group 0 Pid 123 on host device 4 [0x..] NVIDIA H100 ..." and
 * the older "#   Rank 12 Pid 123 on host device 4 [0x00] A100-SXM4-40GB". */
static int rank_line(log_state *st, zs_meas_set *s, const char *p, zs_err *e)
{
    run_state *r = &st->run;
    const char *q = strstr(p, "Rank") + 4;
    while (*q == ' ')
        q++;
    if (isdigit((unsigned char)*q)) {
        char num[16];
        size_t n = strspn(q, "0123456789");
        snprintf(num, sizeof num, "%.*s", (int)(n < sizeof num ? n : sizeof num - 1), q);
        int64_t v;
        zs_err ne;
        if (n >= sizeof num || zs_num_i64(num, 0, MAX_GPUS - 1, ZS_EINPUT, "Rank", &v, &ne))
            return zs_err_set(e, ZS_EINPUT, st->where, "a log describes at most 2^20 GPUs",
                              "rank number out of range");
        if (v + 1 > r->ranks)
            r->ranks = (int)v + 1;
    }
    const char *on = strstr(p, " on ");
    char host[HOST_LEN];
    if (on && sscanf(on + 4, "%255s", host) == 1) {
        int rc = add_host(st, host, e);
        if (rc)
            return rc;
    }
    if (!s->gpu[0]) {
        const char *g = strstr(p, "NVIDIA ");
        if (g)
            g += 7;
        else if ((g = strstr(p, "] ")) != NULL)
            g += 2; /* older versions print the name alone after the bus id */
        if (g) {
            while (*g == ' ')
                g++;
            snprintf(s->gpu, sizeof s->gpu, "%s", g);
            size_t n = strlen(s->gpu);
            while (n && (s->gpu[n - 1] == ' ' || s->gpu[n - 1] == '\t'))
                s->gpu[--n] = '\0';
        }
    }
    return ZS_OK;
}

static int header_line(log_state *st, zs_meas_set *s, const char *p, zs_err *e)
{
    run_state *r = &st->run;
    int rc;
    if (strstr(p, "nThread")) {
        if ((rc = run_end(st, e)))
            return rc;
        r->header_line = st->last;
        if (st->next_cmd) {
            r->op = st->next_cmd;
            r->op_from = "its command line";
            st->next_cmd = NULL;
        }
        if ((rc = header_count(st, p, "nThread", &r->nthread, e)) ||
            (rc = header_count(st, p, "nGpus", &r->ngpus, e)))
            return rc;
        return ZS_OK;
    }
    if (strstr(p, "Avg bus bandwidth"))
        r->footer = 1;
    const char *q = strstr(p, "Out of bounds values");
    if (q && (q = strchr(q, ':')) != NULL) {
        long v = strtol(q + 1, NULL, 10);
        r->oob = v > 0 ? (int)(v < 1000000000 ? v : 1000000000) : 0;
    }
    if (strstr(p, "_perf") || strstr(p, "Collective test")) {
        const char *op = nccl_op_of(p);
        if (op && !r->op && !r->rows) {
            r->op = op;
            r->op_from = "its header";
        }
    }
    /* the column header tells the layout of the error column */
    if (strstr(p, "busbw") && strstr(p, "time")) {
        if (strstr(p, "#wrong"))
            r->err_is_count = 1;
        else if (strstr(p, "error"))
            r->err_is_count = 0;
    }
    if (strstr(p, "Rank") && strstr(p, "device"))
        return rank_line(st, s, p, e);
    return ZS_OK;
}

/* Bytes of one element of an nccl-tests data type; 0 when unknown. */
static int type_size(const char *t)
{
    static const struct {
        const char *name;
        int size;
    } types[] = {{"int8", 1},     {"uint8", 1},    {"char", 1},   {"f8e4m3", 1},  {"f8e5m2", 1},
                 {"fp8_e4m3", 1}, {"fp8_e5m2", 1}, {"half", 2},   {"float16", 2}, {"bfloat16", 2},
                 {"bf16", 2},     {"int32", 4},    {"uint32", 4}, {"int", 4},     {"float", 4},
                 {"float32", 4},  {"int64", 8},    {"uint64", 8}, {"double", 8},  {"float64", 8}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i].name) == 0)
            return types[i].size;
    return 0;
}

static int is_int(const char *t)
{
    if (*t == '-' || *t == '+')
        t++;
    if (!*t)
        return 0;
    for (; *t; t++)
        if (!isdigit((unsigned char)*t))
            return 0;
    return 1;
}

/* What the row's shape says the collective is: all-reduce, reduce-scatter,
 * all-gather (or all-to-all, which looks the same), or NULL when it cannot
 * tell (unknown type or count); on one rank a reduction reads as an
 * all-reduce, anything else as an all-gather. *ag_like is set when the row looks like
 * an all-gather or an all-to-all. */
static const char *row_shape(const char *type, const char *redop, double size, double count,
                             int ranks, int *ag_like)
{
    *ag_like = 0;
    int ts = type_size(type);
    if (!ts || count <= 0)
        return NULL;
    int reduces = redop && *redop && strcmp(redop, "none") != 0;
    if (ranks == 1) /* every collective is the same copy on one rank */
        return reduces ? "all-reduce" : "all-gather";
    double ratio = size / (count * ts);
    if (ratio > 0.999 && ratio < 1.001)
        return reduces ? "all-reduce" : NULL;
    if (ratio > ranks * 0.999 && ratio < ranks * 1.001) {
        *ag_like = !reduces;
        return reduces ? "reduce-scatter" : "all-gather";
    }
    return NULL;
}

/* The collective of the current run at its first row: named, else the
 * rows' shape; a name the rows contradict is refused. */
static int run_collective(log_state *st, const char *shape, int ag_like, int ranks, zs_err *e)
{
    run_state *r = &st->run;
    if (st->forced) {
        r->op = st->forced;
        r->op_from = "--collective";
        return ZS_OK;
    }
    if (!r->op && st->runs == 0 && (r->op = nccl_op_of(st->path)) != NULL)
        r->op_from = "the file name";
    if (r->op) {
        int agrees =
            !shape || strcmp(shape, r->op) == 0 || (ag_like && strcmp(r->op, "all-to-all") == 0);
        if (!agrees && strcmp(r->op, "p2p") != 0)
            return zs_err_set(e, ZS_EINPUT, st->where,
                              "pass --collective with the collective the run measured",
                              "the rows look like %s (reduction op and count against size on "
                              "%d ranks) but %s says %s",
                              shape, ranks, r->op_from, r->op);
        return ZS_OK;
    }
    if (!shape)
        return zs_err_set(e, ZS_EINPUT, st->where,
                          "pass --collective, keep the '$ .../all_reduce_perf ...' line, or name "
                          "the file after the collective (all_gather, reduce_scatter, all_reduce, "
                          "alltoall, sendrecv)",
                          "cannot tell which collective this nccl-tests run measures");
    r->op = shape;
    r->op_from = "its rows";
    return ZS_OK;
}

static int row(log_state *st, zs_meas_set *s, char *p, unsigned algo, unsigned proto, zs_err *e)
{
    run_state *r = &st->run;
    const char *where = st->where;
    if (r->footer)
        return zs_err_set(e, ZS_EINPUT, where,
                          "keep each run's '# nThread ...' header before its rows",
                          "result rows after the end of a run");
    char *tok[16];
    int nt = 0;
    for (char *t = strtok(p, " \t"); t; t = strtok(NULL, " \t"))
        if (nt < 15)
            tok[nt++] = t;
        else
            nt = 16;
    /* size count type [redop] [root], then 4 columns out of place and 4 in place */
    if (nt < 11 || nt > 13)
        return zs_err_set(e, ZS_EINPUT, where,
                          "the file looks truncated or edited: regenerate it with nccl-tests",
                          "expected 11 to 13 columns (size count type [redop] [root], then time "
                          "algbw busbw #wrong/error out of place and in place), found %d",
                          nt > 15 ? 16 : nt);
    const char *redop = NULL;
    for (int i = 3; i < nt - 8; i++)
        if (!is_int(tok[i]))
            redop = tok[i];
    int tcol = s->nccl_inplace ? nt - 4 : nt - 8, wcol = tcol + 3;
    double size, count, t;
    zs_err ne;
    if (zs_num_f64(tok[0], 1, 1e18, ZS_EINPUT, "size", &size, &ne) ||
        zs_num_f64(tok[1], 0, 1e18, ZS_EINPUT, "count", &count, &ne) ||
        zs_num_f64(tok[tcol], 1e-9, 1e15, ZS_EINPUT, "time", &t, &ne))
        return zs_err_set(e, ZS_EINPUT, where, "size, count and time must be positive numbers",
                          "bad number in an nccl-tests row (%s column)",
                          s->nccl_inplace ? "in-place" : "out-of-place");
    /* #wrong: a count (2.10 on) or N/A when the run did not check (-c 0);
     * older versions print the largest error instead, judged by the
     * run's "Out of bounds values" line. */
    const char *w = tok[wcol];
    int count_col = r->err_is_count == 1 || (r->err_is_count < 0 && is_int(w));
    double wrong = 0;
    if (strcmp(w, "N/A") != 0 && zs_num_f64(w, 0, 1e18, ZS_EINPUT, "#wrong", &wrong, &ne))
        return zs_err_set(e, ZS_EINPUT, where,
                          "the #wrong column is a count, a maximum error or N/A",
                          "bad #wrong/error value '%s'", w);
    if (count_col && wrong != 0)
        return zs_err_set(e, ZS_EINPUT, where,
                          "NCCL found wrong results: fix the setup before calibrating on it",
                          "%g wrong elements reported", wrong);
    int64_t ranks = r->ranks;
    if (ranks == 0)
        ranks = r->nthread > 0 && r->ngpus > 0 ? (int64_t)r->nthread * r->ngpus : r->ngpus;
    if (ranks > MAX_GPUS)
        return zs_err_set(e, ZS_EINPUT, where, "a log describes at most 2^20 GPUs",
                          "%lld GPUs in the header", (long long)ranks);
    if (ranks < 1)
        return zs_err_set(e, ZS_EINPUT, where,
                          "keep the '# nThread ... nGpus ...' and '#  Rank ...' header lines",
                          "cannot tell the number of GPUs from the header");
    if (!r->rows) {
        int ag_like;
        const char *shape = row_shape(tok[2], redop, size, count, (int)ranks, &ag_like);
        int rc = run_collective(st, shape, ag_like, (int)ranks, e);
        if (rc)
            return rc;
    }
    if (ranks == 1) { /* one GPU moves no data: nothing to calibrate or predict */
        r->rows++, st->lone++;
        return ZS_OK;
    }
    int nodes = r->nhosts > 0 ? r->nhosts : 1;
    if (ranks % nodes != 0)
        return zs_err_set(
            e, ZS_EINPUT, where, "run the same number of GPUs on every node (the model assumes it)",
            "%lld ranks on %d hosts: not the same number per node", (long long)ranks, nodes);
    zs_meas m;
    memset(&m, 0, sizeof m);
    if (strcmp(r->op, "p2p") == 0)
        snprintf(m.op, sizeof m.op, "%s", nodes > 1 ? "p2p_nic" : "p2p_nvlink");
    else
        snprintf(m.op, sizeof m.op, "%s", r->op);
    m.gpus = (int)ranks;
    m.nodes = nodes;
    m.algo_mask = algo;
    m.proto_mask = proto;
    m.bytes = size;
    m.seconds = t * 1e-6; /* us */
    m.tp = m.cp = 1;
    snprintf(m.source, sizeof m.source, "%s", where);
    int rc = zs_meas_add(s, &m, e);
    if (rc == ZS_OK)
        r->rows++, st->points++;
    return rc;
}

/* The setting a run used: the log's, else the reader's default; both and
 * different is an error. */
static int setting(const log_state *st, unsigned from_log, unsigned given, int algos, unsigned *out,
                   zs_err *e)
{
    if (from_log && given && from_log != given) {
        char a[128], b[128];
        zs_nccl_mask_str(from_log, algos, a, sizeof a);
        zs_nccl_mask_str(given, algos, b, sizeof b);
        return zs_err_set(e, ZS_EINPUT, st->path,
                          "drop the option (the log says what the run used) or fix the log",
                          "the log sets %s to '%s' but --nccl-%s says '%s'",
                          algos ? "NCCL_ALGO" : "NCCL_PROTO", a, algos ? "algo" : "proto", b);
    }
    *out = from_log ? from_log : given;
    return ZS_OK;
}

int zs__nccl_log_parse(zs_meas_set *s, const char *path, char *text, zs_err *e)
{
    log_state st;
    memset(&st, 0, sizeof st);
    run_reset(&st.run);
    st.path = path;
    if (s->nccl_collective[0] && !(st.forced = nccl_op_named(s->nccl_collective)))
        return zs_meas_set_collective(s, s->nccl_collective, e);
    /* Settings first: NCCL prints its INFO lines anywhere in the log. */
    int rc = ZS_OK;
    for (const char *p = text; rc == ZS_OK && p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < 4095 ? len : 4095), p);
        strip_tags(line);
        snprintf(st.where, sizeof st.where, "%s", path);
        if ((rc = scan_setting(&st, line, "NCCL_ALGO", 1, &st.algo, e)) == ZS_OK)
            rc = scan_setting(&st, line, "NCCL_PROTO", 0, &st.proto, e);
        p = nl ? nl + 1 : NULL;
    }
    unsigned algo = 0, proto = 0;
    if (rc == ZS_OK)
        rc = setting(&st, st.algo, s->nccl_algo_mask, 1, &algo, e);
    if (rc == ZS_OK)
        rc = setting(&st, st.proto, s->nccl_proto_mask, 0, &proto, e);
    char *cur = text, *line;
    int line_no = 0;
    while (rc == ZS_OK && (line = zs_next_line(&cur))) {
        line_no++;
        strip_tags(line);
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            continue;
        st.last = line_no;
        snprintf(st.where, sizeof st.where, "%s:%d", path, line_no);
        if (*p == '$') { /* the command line some logs start each run with */
            const char *op = nccl_op_of(p);
            if (op) {
                if (st.run.rows)
                    rc = run_end(&st, e);
                st.next_cmd = op;
            }
            continue;
        }
        if (*p == '#') {
            rc = header_line(&st, s, p, e);
            continue;
        }
        if (strstr(p, " NCCL INFO ") || strstr(p, " NCCL WARN "))
            continue; /* NCCL_DEBUG output */
        if (!isdigit((unsigned char)*p)) {
            rc = zs_err_set(e, ZS_EINPUT, st.where,
                            "pass the unmodified output of an nccl-tests *_perf binary",
                            "unexpected text in an nccl-tests log: '%.40s'", p);
            break;
        }
        if (st.next_cmd && !st.run.rows && !st.run.op) {
            st.run.op = st.next_cmd; /* a command line with no '# nThread' header after it */
            st.run.op_from = "its command line";
            st.next_cmd = NULL;
        }
        rc = row(&st, s, p, algo, proto, e);
    }
    snprintf(st.where, sizeof st.where, "%s:%d", path, st.last);
    if (rc == ZS_OK)
        rc = run_end(&st, e);
    if (rc == ZS_OK && !st.points && !st.lone)
        rc = zs_err_set(e, ZS_EINPUT, st.where, "the log has a header but no result rows",
                        "no measurements in nccl-tests log");
    free(st.run.hosts);
    return rc;
}

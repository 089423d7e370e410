/* nccl-tests logs as the *_perf binaries print them, on one node or many:
 * the collective from the command line (or the file name), the ranks and
 * the nodes from the "#  Rank N ... on HOST device ..." lines (nodes =
 * distinct hosts, GPUs per node = ranks / nodes), NCCL_ALGO / NCCL_PROTO
 * when the command line or NCCL's INFO lines show them (or the reader's
 * --nccl-algo / --nccl-proto defaults when they do not), and one point per
 * result row from the out-of-place or the in-place columns. Lines NCCL
 * itself prints with NCCL_DEBUG=INFO are skipped. See zs_calib.h. */
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

#define MAX_HOSTS 65536

typedef struct log_state {
    const char *path;
    const char *op;
    int ranks, nthread, ngpus, rows, footer, last;
    char (*hosts)[64];
    int nhosts;
    unsigned algo, proto; /* from the log; 0: not stated */
    char where[600];
} log_state;

static int add_host(log_state *st, const char *h, zs_err *e)
{
    for (int i = 0; i < st->nhosts; i++)
        if (strcmp(st->hosts[i], h) == 0)
            return ZS_OK;
    if (st->nhosts == MAX_HOSTS)
        return zs_err_set(e, ZS_EINPUT, st->where, "split the log per run",
                          "more than %d hosts in one nccl-tests log", MAX_HOSTS);
    if (st->nhosts % 64 == 0) {
        void *p = realloc(st->hosts, sizeof *st->hosts * (size_t)(st->nhosts + 64));
        if (!p)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        st->hosts = p;
    }
    snprintf(st->hosts[st->nhosts++], sizeof st->hosts[0], "%s", h);
    return ZS_OK;
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

static int header_line(log_state *st, zs_meas_set *s, const char *p, zs_err *e)
{
    const char *q;
    int rc;
    if (strstr(p, "nThread") && ((rc = header_count(st, p, "nThread", &st->nthread, e)) ||
                                 (rc = header_count(st, p, "nGpus", &st->ngpus, e))))
        return rc;
    if (strstr(p, "Avg bus bandwidth"))
        st->footer = 1;
    if (!st->op && (strstr(p, "_perf") || strstr(p, "Collective test")))
        st->op = nccl_op_of(p);
    if ((q = strstr(p, "Rank")) && strstr(p, "device")) {
        q += 4;
        while (*q == ' ')
            q++;
        if (isdigit((unsigned char)*q) && st->ranks <= MAX_GPUS)
            st->ranks++;
        const char *on = strstr(p, " on ");
        char host[64];
        if (on && sscanf(on + 4, "%63s", host) == 1) {
            int rc = add_host(st, host, e);
            if (rc)
                return rc;
        }
        const char *g = strstr(p, "NVIDIA ");
        if (g && !s->gpu[0])
            snprintf(s->gpu, sizeof s->gpu, "%s", g + 7);
    }
    return ZS_OK;
}

static int row(log_state *st, zs_meas_set *s, char *p, unsigned algo, unsigned proto, zs_err *e)
{
    const char *where = st->where;
    if (!st->op)
        st->op = nccl_op_of(st->path);
    if (!st->op)
        return zs_err_set(e, ZS_EINPUT, where,
                          "keep the '$ .../all_reduce_perf ...' line or name the file after "
                          "the collective (all_gather, reduce_scatter, all_reduce, alltoall, "
                          "sendrecv)",
                          "cannot tell which collective this nccl-tests log measures");
    char *tok[16];
    int nt = 0;
    for (char *t = strtok(p, " \t"); t; t = strtok(NULL, " \t"))
        if (nt < 15)
            tok[nt++] = t;
        else
            nt = 16;
    if (nt != 13)
        return zs_err_set(e, ZS_EINPUT, where,
                          "the file looks truncated or edited: regenerate it with nccl-tests",
                          "expected 13 columns (size count type redop root, then time algbw "
                          "busbw #wrong out of place and in place), found %d",
                          nt > 15 ? 16 : nt);
    int tcol = s->nccl_inplace ? 9 : 5, wcol = s->nccl_inplace ? 12 : 8;
    double size, t;
    zs_err ne;
    if (zs_num_f64(tok[0], 1, 1e18, ZS_EINPUT, "size", &size, &ne) ||
        zs_num_f64(tok[tcol], 1e-9, 1e15, ZS_EINPUT, "time", &t, &ne))
        return zs_err_set(e, ZS_EINPUT, where, "size and time must be positive numbers",
                          "bad number in an nccl-tests row (%s column)",
                          s->nccl_inplace ? "in-place" : "out-of-place");
    /* #wrong: 0, or N/A when the run did not check (-c 0). */
    double wrong = 0;
    if (strcmp(tok[wcol], "N/A") != 0 &&
        zs_num_f64(tok[wcol], 0, 1e18, ZS_EINPUT, "#wrong", &wrong, &ne))
        return zs_err_set(e, ZS_EINPUT, where, "the #wrong column is a count or N/A",
                          "bad #wrong value '%s'", tok[wcol]);
    if (wrong != 0)
        return zs_err_set(e, ZS_EINPUT, where,
                          "NCCL found wrong results: fix the setup before calibrating on it",
                          "%g wrong elements reported", wrong);
    /* both counts are at most 2^20: their product fits int64 */
    int64_t ranks = st->ranks;
    if (ranks == 0)
        ranks = st->nthread > 0 && st->ngpus > 0 ? (int64_t)st->nthread * st->ngpus : st->ngpus;
    if (ranks > MAX_GPUS)
        return zs_err_set(e, ZS_EINPUT, where, "a log describes at most 2^20 GPUs",
                          "%lld GPUs in the header", (long long)ranks);
    if (ranks < 1)
        return zs_err_set(e, ZS_EINPUT, where,
                          "keep the '# nThread ... nGpus ...' and '#  Rank ...' header lines",
                          "cannot tell the number of GPUs from the header");
    int nodes = st->nhosts > 0 ? st->nhosts : 1;
    if (ranks % nodes != 0)
        return zs_err_set(
            e, ZS_EINPUT, where, "run the same number of GPUs on every node (the model assumes it)",
            "%lld ranks on %d hosts: not the same number per node", (long long)ranks, nodes);
    zs_meas m;
    memset(&m, 0, sizeof m);
    if (strcmp(st->op, "p2p") == 0)
        snprintf(m.op, sizeof m.op, "%s", nodes > 1 ? "p2p_nic" : "p2p_nvlink");
    else
        snprintf(m.op, sizeof m.op, "%s", st->op);
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
        st->rows++;
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
    st.path = path;
    /* Settings first: NCCL prints its INFO lines anywhere in the log. */
    char *scan = text;
    int rc = ZS_OK;
    for (const char *p = scan; rc == ZS_OK && p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < 4095 ? len : 4095), p);
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
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            continue;
        st.last = line_no;
        snprintf(st.where, sizeof st.where, "%s:%d", path, line_no);
        if (*p == '$') { /* the command line some logs start with */
            if (!st.op)
                st.op = nccl_op_of(p);
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
        rc = row(&st, s, p, algo, proto, e);
    }
    snprintf(st.where, sizeof st.where, "%s:%d", path, st.last);
    if (rc == ZS_OK && !st.rows)
        rc = zs_err_set(e, ZS_EINPUT, st.where, "the log has a header but no result rows",
                        "no measurements in nccl-tests log");
    if (rc == ZS_OK && !st.footer)
        rc = zs_err_set(e, ZS_EINPUT, st.where,
                        "the run was cut short: rerun nccl-tests to completion",
                        "truncated nccl-tests log: no '# Avg bus bandwidth' line after the rows");
    free(st.hosts);
    return rc;
}

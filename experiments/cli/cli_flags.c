/* The command line's shared flags: see cli_flags.h. */
#include "cli_flags.h"

#include <string.h>

#include "cli.h"
#include "zs_calib.h"
#include "zs_nccl.h"
#include "zs_planner.h"

/* Checks of the text rows: a plot's format, NCCL_ALGO / NCCL_PROTO lists
 * (checked when given, applied later); errors take the caller's code. */
static int as_code(int rc, int code, zs_err *e)
{
    if (rc)
        e->code = code;
    return rc;
}

static int check_plot(char *val, size_t n, int code, zs_err *e)
{
    (void)n;
    return as_code(zs_cli_plot_check(val, e), code, e);
}

static int check_algo(char *val, size_t n, int code, zs_err *e)
{
    unsigned mask = (unsigned)n;
    return as_code(zs_nccl_algo_mask_parse(val, &mask, e), code, e);
}

static int check_proto(char *val, size_t n, int code, zs_err *e)
{
    unsigned mask = (unsigned)n;
    return as_code(zs_nccl_proto_mask_parse(val, &mask, e), code, e);
}

_Static_assert(sizeof(zs_format) == sizeof(int), "--format is an ENUM row: an int field");

#define F(m) ZS_OPT_FIELD(zs_cli_flags, m)

/* Indexed by ZS_F_* - ZS_F_BASE. Defaults that differ from command to
 * command (where --out writes, which GPU) are in the commands' notes. */
static const zs_opt_spec flags[] = {
    [ZS_F_FORMAT - ZS_F_BASE] = {.cli = "format",
                                 .type = ZS_OPT_ENUM,
                                 F(fmt),
                                 .values = "table|csv|json",
                                 .deftext = "table",
                                 .arg = "table|csv|json",
                                 .help = "output format"},
    [ZS_F_QUIET - ZS_F_BASE] = {.cli = "quiet",
                                .type = ZS_OPT_FLAG,
                                F(quiet),
                                .max = 1,
                                .help = "no progress on stderr (default: on a terminal one line "
                                        "rewritten in place; in a log a line when a step "
                                        "finishes and at most one every 10 s between, with the "
                                        "time elapsed and, once it can be estimated, the time "
                                        "left)"},
    [ZS_F_GPU - ZS_F_BASE] =
        ZS_OPT_ROW("gpu", ZS_OPT_TEXT, zs_cli_flags, gpu, 0, 0, NULL, "NAME|FILE",
                   "GPU: a preset (`zepsim list gpus`) or a JSON file"),
    [ZS_F_OUT - ZS_F_BASE] =
        ZS_OPT_ROW("out", ZS_OPT_TEXT, zs_cli_flags, out, 0, 0, NULL, "PATH", "where to write"),
    [ZS_F_DIR - ZS_F_BASE] = ZS_OPT_ROW("dir", ZS_OPT_TEXT, zs_cli_flags, dir, 0, 0, NULL, "DIR",
                                        "folder of the figure specs (default: $ZEPSIM_SPECS, "
                                        "./experiments/specs, the installed specs, or the source "
                                        "tree zepsim was built from)"),
    [ZS_F_DB - ZS_F_BASE] = ZS_OPT_ROW("db", ZS_OPT_TEXT, zs_cli_flags, db, 0, 0, NULL, "FILE",
                                       "results database (default zepsim.db)"),
    [ZS_F_PLOT - ZS_F_BASE] = {.cli = "plot",
                               .type = ZS_OPT_TEXT,
                               F(plot),
                               .arg = "FILE|none",
                               .check = check_plot,
                               .help = "plot in the format its extension names (.png, .svg, "
                                       ".pdf); none: no plot"},
    [ZS_F_NCCL_COLUMN - ZS_F_BASE] = {.cli = "nccl-column",
                                      .type = ZS_OPT_ENUM,
                                      F(nccl_inplace),
                                      .values = "out-of-place|in-place",
                                      .deftext = "out-of-place",
                                      .arg = "out-of-place|in-place",
                                      .help = "nccl-tests time column to read"},
    [ZS_F_NCCL_ALGO - ZS_F_BASE] = {.cli = "nccl-algo",
                                    .type = ZS_OPT_TEXT,
                                    F(nccl_algo),
                                    .arg = "LIST",
                                    .check = check_algo,
                                    .help = "NCCL_ALGO: ring, tree, nvls, nvls-tree, "
                                            "collnet-direct, collnet-chain, pat; comma list, "
                                            "^LIST excludes"},
    [ZS_F_NCCL_PROTO - ZS_F_BASE] = {.cli = "nccl-proto",
                                     .type = ZS_OPT_TEXT,
                                     F(nccl_proto),
                                     .arg = "LIST",
                                     .check = check_proto,
                                     .help = "NCCL_PROTO: LL, LL128, Simple, as --nccl-algo"},
    [ZS_F_COLLECTIVE - ZS_F_BASE] =
        ZS_OPT_ROW("collective", ZS_OPT_TEXT, zs_cli_flags, collective, 0, 0, NULL, "NAME",
                   "the collective every nccl-tests run measured (all-reduce, all-gather, "
                   "reduce-scatter, all-to-all, sendrecv); default: the log's command line, "
                   "else the file name, else its rows"),
    /* As a planner's tp option: a TP group stays inside a node's NVLink. */
    [ZS_F_TP - ZS_F_BASE] = ZS_OPT_ROW("tp", ZS_OPT_INT, zs_cli_flags, tp, 1, ZS_TP_MAX, "1", "N",
                                       "tensor-parallel degree"),
    /* Replicas: as many as a cluster could hold GPUs (65536 nodes x 16). */
    [ZS_F_DP - ZS_F_BASE] = ZS_OPT_ROW("dp", ZS_OPT_INT, zs_cli_flags, dp, 1, 1 << 20, "1", "N",
                                       "data-parallel degree"),
    /* Worker processes: 256 covers the largest machines' CPUs and bounds
     * the processes a typo could fork. */
    [ZS_F_JOBS - ZS_F_BASE] =
        ZS_OPT_ROW("jobs", ZS_OPT_INT, zs_cli_flags, jobs, 1, 256, "", "N", "worker processes"),
    /* The cluster loader's range of gpus_per_node. */
    [ZS_F_GPUS_PER_NODE - ZS_F_BASE] = ZS_OPT_ROW("gpus-per-node", ZS_OPT_INT, zs_cli_flags,
                                                  gpus_per_node, 1, 64, "", "N", "GPUs per node"),
    /* A timing is the best or the median of them: 1000 bounds a typo's
     * wait. */
    [ZS_F_REPS - ZS_F_BASE] =
        ZS_OPT_ROW("reps", ZS_OPT_INT, zs_cli_flags, reps, 1, 1000, "", "N", "timed repetitions"),
    [ZS_F_RANKS - ZS_F_BASE] =
        ZS_OPT_ROW("ranks", ZS_OPT_FLAG, zs_cli_flags, ranks, 0, 1, "0", NULL, "per-rank table"),
};
#undef F

_Static_assert(sizeof flags / sizeof flags[0] == ZS_F_END - ZS_F_BASE, "a row for every flag");
_Static_assert(ZS_P_COUNT <= 64, "zs_cli_flags.given has a bit per study-point row");

/* The row of a getopt value, and in *base the struct its field is in;
 * NULL for another value. */
static const zs_opt_spec *row_of(int id, zs_cli_flags *f, void **base)
{
    if (id >= ZS_F_BASE && id < ZS_F_END) {
        *base = f;
        return &flags[id - ZS_F_BASE];
    }
    *base = f ? &f->p : NULL;
    return id >= ZS_PO_BASE ? zs_popt_at(id - ZS_PO_BASE) : NULL;
}

/* The shared flags at their defaults, none given. */
static void flags_init(zs_cli_flags *f)
{
    memset(f, 0, sizeof *f);
    zs_point_cfg_default(&f->p);
    zs_opt_defaults(flags, ZS_F_END - ZS_F_BASE, f);
}

const char *zs_cli_given(const zs_cli_flags *f, zs_popt_row r)
{
    const zs_opt_spec *o = zs_popt_at(r);
    return o && (f->given >> r & 1) ? (const char *)&f->p + o->off : NULL;
}

void zs_cli_point_uses(const zs_popt_row *skip, const zs_cli_use *extra, zs_cli_use *out)
{
    int n = 0;
    for (int r = 0; r < ZS_P_COUNT; r++) {
        int skipped = !zs_popt_at(r)->cli;
        for (int i = 0; skip && skip[i] != ZS_P_COUNT && !skipped; i++)
            skipped = (int)skip[i] == r;
        if (!skipped)
            out[n++] = (zs_cli_use){ZS_PO_BASE + r, NULL};
    }
    out[n++] = (zs_cli_use){ZS_F_FORMAT, NULL};
    for (int i = 0; extra && extra[i].id && n < ZS_CLI_MAX_OPTS - 1; i++)
        out[n++] = extra[i];
    out[n] = (zs_cli_use){0, NULL};
}

/* A command's getopt table into out[ZS_CLI_MAX_OPTS]: --help, its own
 * options (own, ended by a zero row) and the shared flags it takes. */
static void longopts(const zs_cli_use *uses, const struct option *own, struct option *out)
{
    int n = 0;
    out[n++] = (struct option){"help", no_argument, 0, 'h'};
    for (int i = 0; own && own[i].name && n < ZS_CLI_MAX_OPTS - 1; i++)
        out[n++] = own[i];
    for (int i = 0; uses && uses[i].id && n < ZS_CLI_MAX_OPTS - 1; i++) {
        void *base;
        const zs_opt_spec *o = row_of(uses[i].id, NULL, &base);
        if (o && o->cli)
            out[n++] =
                (struct option){o->cli, o->arg ? required_argument : no_argument, 0, uses[i].id};
    }
    out[n] = (struct option){0, 0, 0, 0};
}

/* One --help entry: "  --name ARG" (arg may be NULL) in a 25-column
 * gutter, the text wrapped at 79 columns. */
static void help_entry(FILE *f, const char *name, const char *arg, const char *text)
{
    char head[96];
    snprintf(head, sizeof head, "  --%s%s%s", name, arg ? " " : "", arg ? arg : "");
    fputs(head, f);
    int col = (int)strlen(head);
    if (col > 30) {
        fputc('\n', f);
        col = 0;
    }
    int start = col + 2 > 25 ? col + 2 : 25;
    fprintf(f, "%*s", start - col, "");
    col = start;
    for (const char *p = text; *p;) {
        size_t w = strcspn(p, " ");
        if (col > start && col + 1 + (int)w > 79) {
            fprintf(f, "\n%25s", "");
            col = start = 25;
        } else if (col > start) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

/* Row o's --help entry: its help, then the command's note, else its
 * default. */
static void help_row(FILE *f, const zs_opt_spec *o, const char *note)
{
    char text[800];
    const char *def = zs_opt_default(o);
    if (note)
        snprintf(text, sizeof text, "%s; %s", o->help, note);
    else if (def[0] && o->type != ZS_OPT_FLAG && o->type != ZS_OPT_OPTSET &&
             o->type != ZS_OPT_RANGE)
        snprintf(text, sizeof text, "%s (default %s)", o->help, def);
    else
        snprintf(text, sizeof text, "%s", o->help);
    help_entry(f, o->cli, o->arg, text);
}

/* The --help entries of the shared flags a command takes. */
static void flags_help(FILE *f, const zs_cli_use *uses)
{
    for (int i = 0; uses && uses[i].id; i++) {
        void *base;
        const zs_opt_spec *o = row_of(uses[i].id, NULL, &base);
        if (o && o->cli && !(uses[i].note && !uses[i].note[0]))
            help_row(f, o, uses[i].note);
    }
}

/* Sets row o's field in base from optarg (a flag without a value: 1) and
 * resolves its name; 0 or the exit status, the error printed. */
static int take(const zs_opt_spec *o, void *base)
{
    zs_err e;
    zs_err_clear(&e);
    char where[64];
    snprintf(where, sizeof where, "--%s", o->cli);
    if (zs_opt_parse(o, o->arg ? optarg : "1", ZS_EUSAGE, where, base, &e) ||
        zs_opt_check(o, base, ZS_EUSAGE, where, &e))
        return zs_cli_fail(&e);
    return 0;
}

/* Getopt result c (with optarg) of command cmd as a shared flag: its
 * value into f, its name resolved (an unknown model fails here, before
 * anything runs). 0, or the exit status after printing the error (a bad
 * value, or an option cmd does not know). */
static int flag(const char *cmd, int c, char **argv, zs_cli_flags *f)
{
    void *base;
    const zs_opt_spec *o = row_of(c, f, &base);
    if (!o || !o->cli)
        return zs_cli_bad_option(cmd, c, argv);
    int st = take(o, base);
    /* Only a study-point row has a bit: a command's own rows may write
     * into its own zs_point_cfg too (base == &f->p) with values from 2000. */
    if (!st && c >= ZS_PO_BASE && c < ZS_PO_BASE + ZS_P_COUNT)
        f->given |= 1ULL << (c - ZS_PO_BASE);
    return st;
}

void zs_cli_help(FILE *out, const zs_cli_cmd *cmd)
{
    fputs(cmd->head, out);
    for (int i = 0; i < cmd->nown; i++)
        help_row(out, &cmd->own[i], NULL);
    flags_help(out, cmd->uses);
    if (cmd->tail)
        fputs(cmd->tail, out);
}

/* The getopt value of option c: a one-letter spelling's option, else c. */
static int long_id(const zs_cli_cmd *cmd, int c)
{
    const char *l = cmd->letters && c > 0 && c < 256 ? strchr(cmd->letters, c) : NULL;
    return l ? cmd->letter_ids[l - cmd->letters] : c;
}

/* getopt's short options: -h and the command's letters, each with ':'
 * when its option takes a value (opts: the long options). */
static void short_opts(const zs_cli_cmd *cmd, const struct option *opts, char *out, size_t n)
{
    size_t o = (size_t)snprintf(out, n, ":h");
    for (int i = 0; cmd->letters && cmd->letters[i] && o + 3 < n; i++) {
        out[o++] = cmd->letters[i];
        for (const struct option *p = opts; p->name; p++)
            if (p->val == cmd->letter_ids[i] && p->has_arg == required_argument)
                out[o++] = ':';
        out[o] = '\0';
    }
}

int zs_cli_parse(const zs_cli_cmd *cmd, int argc, char **argv, void *args, zs_cli_flags *f)
{
    struct option own[ZS_CLI_MAX_OPTS], opts[ZS_CLI_MAX_OPTS];
    int n = 0;
    for (; n < cmd->nown && n < ZS_CLI_MAX_OPTS - 1; n++)
        own[n] = (struct option){cmd->own[n].cli, cmd->own[n].arg ? required_argument : no_argument,
                                 0, ZS_CLI_OWN + n};
    own[n] = (struct option){0, 0, 0, 0};
    longopts(cmd->uses, own, opts);
    char shorts[32];
    short_opts(cmd, opts, shorts, sizeof shorts);
    zs_opt_defaults(cmd->own, cmd->nown, args);
    flags_init(f);
    int c, st;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        if (c == 'h') {
            zs_cli_help(stdout, cmd);
            return 0;
        }
        c = long_id(cmd, c);
        st = c >= ZS_CLI_OWN && c < ZS_CLI_OWN + cmd->nown ? take(&cmd->own[c - ZS_CLI_OWN], args)
                                                           : flag(cmd->name, c, argv, f);
        if (!st && cmd->each)
            st = cmd->each(c, optarg, args);
        if (st)
            return st;
        if (f->ngiven < ZS_CLI_MAX_OPTS)
            f->given_ids[f->ngiven++] = c;
    }
    return -1;
}

int zs_cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int zs_cli_asks(int argc, char **argv, const zs_opt_spec *o)
{
    size_t n = strlen(o->cli);
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] == '-' && !strncmp(argv[i] + 2, o->cli, n) &&
            (argv[i][2 + n] == '\0' || argv[i][2 + n] == '='))
            return 1;
    return 0;
}

int zs_cli_was_given(const zs_cli_flags *f, int id)
{
    for (int i = 0; i < f->ngiven; i++)
        if (f->given_ids[i] == id)
            return 1;
    return 0;
}

const char *zs_cli_name(const zs_cli_cmd *cmd, int id)
{
    void *base;
    const zs_opt_spec *o = id >= ZS_CLI_OWN && id < ZS_CLI_OWN + cmd->nown
                               ? &cmd->own[id - ZS_CLI_OWN]
                               : row_of(id, NULL, &base);
    return o && o->cli ? o->cli : "?";
}

int zs_cli_only(const zs_cli_cmd *cmd, const char *part, const zs_cli_flags *f, const int *allowed)
{
    for (int i = 0; i < f->ngiven; i++) {
        int ok = 0;
        for (int j = 0; allowed[j] && !ok; j++)
            ok = allowed[j] == f->given_ids[i];
        if (!ok)
            return zs_cli_usage_error(cmd->name, "option '--%s' does not apply to %s %s",
                                      zs_cli_name(cmd, f->given_ids[i]), cmd->name, part);
    }
    return 0;
}

int zs_cli_nccl_apply(const zs_cli_flags *f, struct zs_meas_set *s, zs_err *e)
{
    s->nccl_inplace = f->nccl_inplace;
    int rc = ZS_OK;
    const char *where = "--collective";
    if (f->collective)
        rc = zs_meas_set_collective(s, f->collective, e);
    if (!rc && f->nccl_algo && (where = "--nccl-algo"))
        rc = zs_nccl_algo_mask_parse(f->nccl_algo, &s->nccl_algo_mask, e);
    if (!rc && f->nccl_proto && (where = "--nccl-proto"))
        rc = zs_nccl_proto_mask_parse(f->nccl_proto, &s->nccl_proto_mask, e);
    if (rc) {
        e->code = ZS_EUSAGE;
        snprintf(e->where, sizeof e->where, "%s", where);
    }
    return rc;
}

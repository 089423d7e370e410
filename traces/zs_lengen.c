/* Document-length generators: see zs_lengen.h.
 *
 * A model is a list of pieces, each with a probability (share of
 * documents). One draw takes one uniform to choose the piece and one (or,
 * for uniform integers, a few) to place the length inside it by inverse
 * CDF. Nothing here depends on the platform beyond IEEE-754 doubles and
 * libm's exp/log; lengths are rounded to the nearest integer, so a libm
 * difference in the last bit can only change a length that falls within
 * ~1e-12 of a half-integer.
 *
 * The preset parameters were fitted offline (a small script evaluating the
 * analytic mixture and large samples) to the statistics in
 * ../shared/design/TRACES.md; docs/traces.md lists, per preset, what is
 * matched and what is assumed. Tests check the published figures. */
#include "zs_lengen.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>

#include "zs_trace.h"

typedef enum piece_kind { P_FIXED, P_UNIFORM, P_LOGNORMAL, P_POWER } piece_kind;

/* One piece of a mixture: lengths in [a, b] (tokens). */
typedef struct piece {
    double w; /* share of documents */
    piece_kind kind;
    double a, b;
    double mu, sigma; /* lognormal: ln-space location and scale */
    double alpha;     /* power law: density ~ x^-(alpha+1); 0 is log-uniform,
                         -1 uniform, > 0 a Pareto segment */
} piece;

#define MAX_PIECES 64

/* ---- the presets ----------------------------------------------------------- */

#define LN(mu_, s_, a_, b_, w_)                                                                    \
    {                                                                                              \
        w_, P_LOGNORMAL, a_, b_, mu_, s_, 0                                                        \
    }
#define PW(al_, a_, b_, w_)                                                                        \
    {                                                                                              \
        w_, P_POWER, a_, b_, 0, 0, al_                                                             \
    }
#define UN(a_, b_, w_)                                                                             \
    {                                                                                              \
        w_, P_UNIFORM, a_, b_, 0, 0, 0                                                             \
    }

/* WLB-LLM 128K corpus. Body: 97% uniform on 1..6,250 (the paper's
 * description; it also gives median 3,222, p10 644, p90 5,799 against the
 * published 3,227 / 646 / 5,784). Tail: segments whose document shares are
 * the published ones (> 8K 2.4%, > 32K 0.89%, > 64K 0.53%, p99 26,058) and
 * whose power-law exponents make each segment hold the published token
 * share (> 8K 22.5%, > 32K 17.0%, > 64K 12.8%); the top ends at the
 * published maximum 124,913. */
static const piece wlb_meta_128k[] = {
    UN(1, 6250, 0.970),
    UN(6251, 8192, 0.006),
    PW(1.3934, 8193, 26058, 0.0140),
    UN(26059, 32768, 0.0011),
    PW(0.5636, 32769, 65536, 0.0036),
    PW(-1.1469, 65537, 124913, 0.0053),
};

/* ProLong 64K. Body: a two-piece lognormal around the published median
 * 1,914 (half the documents each side): sigma 0.604 below it puts 15% of
 * documents under 1K, sigma 0.899 above it gives p90 6,051; the published
 * bins 1-2K 38%, 2-4K 27%, 4-8K 14% follow. Tail above 8K: power-law
 * segments per doubling whose shares hit p95 8,378, p99 16,270 and p99.9
 * 47,398 and whose token masses are the published shares above 8K, 16K,
 * 32K, 64K and 128K; log-uniform up to the published maximum 340,149. */
static const piece prolong64k[] = {
    LN(7.556951, 0.6037, 1, 1914, 0.5), LN(7.556951, 0.8987, 1914, 8192, 0.447280),
    PW(2.3320, 8193, 16384, 0.042720),  PW(3.3560, 16385, 32768, 0.007919),
    PW(2.4132, 32769, 65536, 0.001490), PW(0.0, 65537, 131072, 0.000355),
    PW(0.0, 131073, 340149, 0.000237),
};

/* Repository-level GitHub (ByteScale). Published: 16.2% of tokens in
 * sequences > 128K and 9.8% > 256K. The Pareto exponent 1.516 of the tail
 * above 128K (cut at 2M) gives that ratio; its weight 0.47% of documents
 * gives the 16.2%. The body (lognormal, median 3K, sigma 1.4) is assumed. */
static const piece github[] = {
    LN(8.006368, 1.4, 16, 131072, 0.995315),
    PW(1.516, 131073, 2097152, 0.004685),
};

/* SQuAD v1.1's training set as fine-tuning samples (context, question and
 * answer in one prompt): a third-party tokenisation of all of it (NeMo
 * Automodel's make_squad_dataset, its chat template, Nemotron-3's 131K
 * tokenizer) published mean 206, p50 193, p90 294, p99 429 and max 1,037
 * tokens. A lognormal through the median and p90 (sigma = ln(294/193) /
 * 1.28155) gives mean 204 and p99 414: within 1% and 4% of the other two.
 * NeMo's published SFT runs pack these samples into 4,096-token rows. */
static const piece squad[] = {LN(5.262690, 0.32842, 1, 1037, 1.0)};

/* Presets without published numbers: lognormal models whose medians follow
 * the qualitative statements in TRACES.md (ArXiv papers typically 10K-30K
 * tokens; FineWeb and StackExchange mostly short, median well under 2K). */
static const piece arxiv[] = {LN(9.680344, 0.5, 512, 262144, 1.0)};
static const piece fineweb[] = {LN(6.551080, 1.0, 32, 131072, 1.0)};
static const piece openwebmath[] = {LN(7.244228, 1.0, 32, 262144, 1.0)};
static const piece stackexchange[] = {LN(6.214608, 0.9, 16, 65536, 1.0)};

typedef struct preset {
    zs_lengen_preset_info info;
    const piece *pieces;
    int npieces;
} preset;

#define PRESET(name_, arr_, model_, matches_, assumes_)                                            \
    {                                                                                              \
        {name_, model_, matches_, assumes_}, arr_, (int)(sizeof arr_ / sizeof arr_[0])             \
    }

static const preset presets[] = {
    PRESET("wlb-meta-128k", wlb_meta_128k,
           "97% uniform on 1..6,250 + power-law tail segments to 124,913",
           "mean 3,962; median 3,227; p99 26,058; max 124,913; > 8K: 2.4% docs, 22.5% tokens; "
           "> 32K: 0.89% / 17.0%; > 64K: 0.53% / 12.8%",
           "shape inside each tail segment (power law fitted to the segment's token mass)"),
    PRESET("prolong64k", prolong64k,
           "two-piece lognormal body (median 1,914) + power-law tail segments per doubling to "
           "340,149",
           "mean 3,052; median 1,914; p90 6,051; p95 8,378; p99 16,270; p99.9 47,398; tokens > "
           "8K 25.4%, > 16K 10.3%, > 32K 4.9%, > 64K 2.8%, > 128K 1.7%; documents <= 1K 15%, "
           "1-2K 38%, 2-4K 27%, 4-8K 14%, 8-16K 4.3%",
           "shape inside each tail segment"),
    PRESET("github", github, "lognormal body (median 3,000, sigma 1.4) + Pareto tail 128K..2M",
           "tokens in sequences > 128K: 16.2%; > 256K: 9.8% (ByteScale, repository level)",
           "the body (median, sigma), the 2M cap"),
    PRESET("arxiv", arxiv, "lognormal, median 16,000, sigma 0.5, in 512..262,144",
           "papers typically 10K-30K tokens (80% of documents in 8.4K..30.4K)",
           "everything numeric: no statistics are published"),
    PRESET("squad", squad, "lognormal, median 193, sigma 0.328, in 1..1,037",
           "SQuAD v1.1 fine-tuning samples: mean 206, p50 193, p90 294, p99 429, max 1,037 "
           "(a third-party tokenisation: chat template, Nemotron-3 tokenizer)",
           "the lognormal shape; another tokenizer or prompt template shifts the lengths"),
    PRESET("fineweb", fineweb, "lognormal, median 700, sigma 1.0, in 32..131,072",
           "mostly short, median well under 2K", "everything numeric: no statistics published"),
    PRESET("openwebmath", openwebmath, "lognormal, median 1,400, sigma 1.0, in 32..262,144",
           "long-tailed", "everything numeric: no statistics published"),
    PRESET("stackexchange", stackexchange, "lognormal, median 500, sigma 0.9, in 16..65,536",
           "mostly short, median well under 2K", "everything numeric: no statistics published"),
};
#define NPRESETS ((int)(sizeof presets / sizeof presets[0]))

const zs_lengen_preset_info *zs_lengen_preset_at(int i)
{
    return i >= 0 && i < NPRESETS ? &presets[i].info : NULL;
}

static const preset *find_preset(const char *name, size_t n)
{
    for (int i = 0; i < NPRESETS; i++)
        if (strlen(presets[i].info.name) == n && strncmp(presets[i].info.name, name, n) == 0)
            return &presets[i];
    return NULL;
}

/* ---- the generator ------------------------------------------------------- */

struct zs_lengen {
    char spec[256];
    char desc[512];
    int n;
    piece p[MAX_PIECES];
    double cum[MAX_PIECES];                  /* cumulative piece probabilities */
    double plo[MAX_PIECES], phi[MAX_PIECES]; /* lognormal: CDF at a and b */
    gsl_rng *rng;
    uint64_t seed;
    double mean;
    int32_t max;
};

static double Phi(double z)
{
    return gsl_cdf_ugaussian_P(z);
}

/* Continuous mean of a piece (before rounding). */
static double piece_mean(const piece *p)
{
    double a = p->a, b = p->b;
    switch (p->kind) {
    case P_FIXED:
        return a;
    case P_UNIFORM:
        return (a + b) / 2;
    case P_LOGNORMAL: {
        double s = p->sigma, m = exp(p->mu + s * s / 2);
        double z = Phi((log(b) - p->mu) / s) - Phi((log(a) - p->mu) / s);
        if (z <= 0)
            return a;
        return m * (Phi((log(b) - p->mu - s * s) / s) - Phi((log(a) - p->mu - s * s) / s)) / z;
    }
    case P_POWER: {
        double al = p->alpha;
        if (fabs(al) < 1e-12)
            return (b - a) / log(b / a);
        double c = al / (pow(a, -al) - pow(b, -al));
        if (fabs(al - 1) < 1e-12)
            return c * log(b / a);
        return c * (pow(b, 1 - al) - pow(a, 1 - al)) / (1 - al);
    }
    }
    return a;
}

static int32_t round_clamp(double x, const piece *p)
{
    double lo = ceil(p->a), hi = floor(p->b);
    if (lo < 1)
        lo = 1;
    if (!(x >= lo)) /* also catches NaN */
        x = lo;
    if (x > hi)
        x = hi;
    double r = floor(x + 0.5);
    return (int32_t)(r > hi ? hi : r);
}

int32_t zs_lengen_next(zs_lengen *g)
{
    int k = 0;
    if (g->n > 1) {
        double u = gsl_rng_uniform(g->rng);
        while (k < g->n - 1 && u >= g->cum[k])
            k++;
    }
    const piece *p = &g->p[k];
    switch (p->kind) {
    case P_FIXED:
        return (int32_t)p->a;
    case P_UNIFORM:
        return (int32_t)p->a +
               (int32_t)gsl_rng_uniform_int(g->rng, (unsigned long)(p->b - p->a) + 1);
    case P_LOGNORMAL: {
        double u = gsl_rng_uniform_pos(g->rng);
        double q = g->plo[k] + u * (g->phi[k] - g->plo[k]);
        return round_clamp(exp(p->mu + p->sigma * gsl_cdf_ugaussian_Pinv(q)), p);
    }
    case P_POWER: {
        double u = gsl_rng_uniform(g->rng), a = p->a, b = p->b, al = p->alpha;
        double x = fabs(al) < 1e-12 ? a * exp(u * log(b / a))
                                    : pow(pow(a, -al) - u * (pow(a, -al) - pow(b, -al)), -1 / al);
        return round_clamp(x, p);
    }
    }
    return 1;
}

void zs_lengen_reset(zs_lengen *g)
{
    /* mt19937 takes 32 bits of seed; fold the 64-bit seed so every bit counts. */
    gsl_rng_set(g->rng, (unsigned long)((g->seed ^ (g->seed >> 32)) & 0xffffffffu));
}

double zs_lengen_mean(const zs_lengen *g)
{
    return g->mean;
}

int32_t zs_lengen_max(const zs_lengen *g)
{
    return g->max;
}

const char *zs_lengen_describe(const zs_lengen *g)
{
    return g->desc;
}

void zs_lengen_free(zs_lengen *g)
{
    if (!g)
        return;
    gsl_rng_free(g->rng);
    free(g);
}

/* ---- spec parsing ---------------------------------------------------------- */

/* The fix of a bad spec names every preset from the table, so a new one
 * is listed without a second list to keep. */
static int bad_spec(zs_err *e, const char *spec, const char *fmt, const char *detail)
{
    char where[300], fix[400];
    snprintf(where, sizeof where, "generator '%s'", spec);
    size_t k = (size_t)snprintf(fix, sizeof fix, "use a preset (");
    for (int i = 0; i < NPRESETS && k < sizeof fix; i++)
        k += (size_t)snprintf(fix + k, sizeof fix - k, "%s%s", i ? ", " : "", presets[i].info.name);
    if (k < sizeof fix)
        snprintf(fix + k, sizeof fix - k,
                 "), fixed:N, uniform:A-B, lognormal:MU,SIGMA[,MAX] or mix:SPEC=W,SPEC=W");
    return zs_err_set(e, ZS_EINPUT, where, fix, fmt, detail);
}

/* Parses a number filling the whole of [s, s+n). */
static int parse_num(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int is_whole(double v, double lo, double hi)
{
    return v == floor(v) && v >= lo && v <= hi;
}

/* Parses a single (non-mix) spec of length n into pieces (appended to
 * p[*np], weights scaled by 1). */
static int parse_simple(const char *spec, size_t n, piece *p, int *np, zs_err *e)
{
    char s[256];
    snprintf(s, sizeof s, "%.*s", (int)(n < 255 ? n : 255), spec);
    const char *colon = strchr(s, ':');
    if (!colon) {
        const preset *pr = find_preset(s, strlen(s));
        if (!pr)
            return bad_spec(e, s, "unknown preset '%s'", s);
        if (*np + pr->npieces > MAX_PIECES)
            return bad_spec(e, s, "too many pieces in the mixture (%s)", "fewer components");
        memcpy(p + *np, pr->pieces, sizeof(piece) * (size_t)pr->npieces);
        *np += pr->npieces;
        return ZS_OK;
    }
    if (*np + 1 > MAX_PIECES)
        return bad_spec(e, s, "too many pieces in the mixture (%s)", "fewer components");
    const char *arg = colon + 1;
    size_t fam = (size_t)(colon - s);
    piece q = {1.0, P_FIXED, 0, 0, 0, 0, 0};
    double v[3];
    if (fam == 5 && strncmp(s, "fixed", 5) == 0) {
        if (parse_num(arg, strlen(arg), &v[0]) || !is_whole(v[0], 1, ZS_TRACE_MAX_LEN))
            return bad_spec(e, s, "fixed:N needs a whole N >= 1, got '%s'", arg);
        q.a = q.b = v[0];
    } else if (fam == 7 && strncmp(s, "uniform", 7) == 0) {
        const char *dash = strchr(arg, '-');
        if (!dash || parse_num(arg, (size_t)(dash - arg), &v[0]) ||
            parse_num(dash + 1, strlen(dash + 1), &v[1]) || !is_whole(v[0], 1, ZS_TRACE_MAX_LEN) ||
            !is_whole(v[1], v[0], ZS_TRACE_MAX_LEN))
            return bad_spec(e, s, "uniform:A-B needs whole numbers 1 <= A <= B, got '%s'", arg);
        q.kind = P_UNIFORM;
        q.a = v[0];
        q.b = v[1];
    } else if (fam == 9 && strncmp(s, "lognormal", 9) == 0) {
        int k = 0;
        const char *t = arg;
        while (k < 3) {
            const char *c = strchr(t, ',');
            size_t len = c ? (size_t)(c - t) : strlen(t);
            if (parse_num(t, len, &v[k]))
                return bad_spec(e, s, "lognormal:MU,SIGMA[,MAX] needs numbers, got '%s'", arg);
            k++;
            if (!c)
                break;
            t = c + 1;
            if (k == 3)
                return bad_spec(e, s, "lognormal takes at most 3 numbers, got '%s'", arg);
        }
        if (k < 2 || v[1] <= 0 || v[1] > 10 || v[0] < -10 || v[0] > 25)
            return bad_spec(e, s,
                            "lognormal:MU,SIGMA needs MU in [-10, 25] (ln tokens) and SIGMA in "
                            "(0, 10], got '%s'",
                            arg);
        q.kind = P_LOGNORMAL;
        q.mu = v[0];
        q.sigma = v[1];
        q.a = 1;
        q.b = k == 3 ? v[2] : ZS_TRACE_MAX_LEN;
        if (!is_whole(q.b, 1, ZS_TRACE_MAX_LEN))
            return bad_spec(e, s, "lognormal MAX must be a whole number >= 1, got '%s'", arg);
    } else {
        return bad_spec(e, s, "unknown generator family in '%s'", s);
    }
    p[(*np)++] = q;
    return ZS_OK;
}

/* mix:S1=W1,S2=W2: a component spec may itself contain commas
 * (lognormal:8,1=0.5), so pieces separated by ',' accumulate until one
 * holds the '=' that ends a component. */
static int parse_mix(const char *spec, piece *p, int *np, zs_err *e)
{
    const char *s = spec + 4;
    if (!*s)
        return bad_spec(e, spec, "empty mixture '%s'", spec);
    while (*s) {
        const char *eq = strchr(s, '=');
        if (!eq)
            return bad_spec(e, spec, "mixture component without '=WEIGHT' in '%s'", s);
        const char *end = strchr(eq, ',');
        size_t wl = end ? (size_t)(end - eq - 1) : strlen(eq + 1);
        double w;
        if (parse_num(eq + 1, wl, &w) || w <= 0)
            return bad_spec(e, spec, "mixture weights must be positive numbers: '%s'", eq + 1);
        if (strncmp(s, "mix:", 4) == 0)
            return bad_spec(e, spec, "mixtures cannot be nested: '%s'", s);
        int first = *np;
        int rc = parse_simple(s, (size_t)(eq - s), p, np, e);
        if (rc)
            return rc;
        /* w is a share of tokens: a component with mean m contributes w/m of
         * the documents. */
        double cw = 0, cm = 0;
        for (int i = first; i < *np; i++)
            cw += p[i].w;
        for (int i = first; i < *np; i++)
            cm += p[i].w / cw * piece_mean(&p[i]);
        for (int i = first; i < *np; i++)
            p[i].w = p[i].w / cw * (w / cm);
        s = end ? end + 1 : eq + 1 + wl;
    }
    return ZS_OK;
}

int zs_lengen_is_spec(const char *spec)
{
    static const char *const fams[] = {"fixed:", "uniform:", "lognormal:", "mix:"};
    for (size_t i = 0; i < 4; i++)
        if (strncmp(spec, fams[i], strlen(fams[i])) == 0)
            return 1;
    return find_preset(spec, strlen(spec)) != NULL;
}

int zs_lengen_new(const char *spec, uint64_t seed, zs_lengen **out, zs_err *e)
{
    zs_lengen *g = calloc(1, sizeof *g);
    if (!g || !(g->rng = gsl_rng_alloc(gsl_rng_mt19937))) {
        free(g);
        return zs_err_set(e, ZS_ENOMEM, spec, NULL, "out of memory");
    }
    snprintf(g->spec, sizeof g->spec, "%s", spec);
    int rc = strncmp(spec, "mix:", 4) == 0 ? parse_mix(spec, g->p, &g->n, e)
                                           : parse_simple(spec, strlen(spec), g->p, &g->n, e);
    if (rc) {
        zs_lengen_free(g);
        return rc;
    }
    double tot = 0;
    for (int i = 0; i < g->n; i++)
        tot += g->p[i].w;
    double c = 0;
    for (int i = 0; i < g->n; i++) {
        piece *p = &g->p[i];
        p->w /= tot;
        c += p->w;
        g->cum[i] = c;
        g->mean += p->w * piece_mean(p);
        if (p->b > g->max)
            g->max = (int32_t)floor(p->b);
        if (p->kind == P_LOGNORMAL) {
            g->plo[i] = Phi((log(p->a) - p->mu) / p->sigma);
            g->phi[i] = Phi((log(p->b) - p->mu) / p->sigma);
        }
    }
    g->cum[g->n - 1] = 1.0;
    const preset *pr = find_preset(spec, strlen(spec));
    if (pr)
        snprintf(g->desc, sizeof g->desc, "%s: %s", spec, pr->info.model);
    else
        snprintf(g->desc, sizeof g->desc, "%s: %d piece%s, model mean %.0f tokens", spec, g->n,
                 g->n == 1 ? "" : "s", g->mean);
    g->seed = seed;
    zs_lengen_reset(g);
    *out = g;
    return ZS_OK;
}

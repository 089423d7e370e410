/* Chakra trace sets: finding DIR/PREFIX.RANK.et files (a folder, a
 * prefix, one rank's file), reading every rank's file (zs_chakra_read.c)
 * and ASTRA-sim's communicator-group file, then the schedule
 * (zs_chakra_build.c). See zs_chakra.h. */
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zs_chakra_internal.h"
#include "zs_fdio.h"

#ifdef ZS_HAVE_CHAKRA

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* ASTRA-sim's communicator groups: {"<pg_name>": [ranks], ...}. */
static int read_groups(ck_set *set, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int rc = zs_read_file(path, NULL, &text, &len, set->e);
    if (rc)
        return rc;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    ck_rank fake = {.path = path};
    const char *fix = "a communicator group file maps each pg_name to a list of ranks: "
                      "{\"1\": [0, 1], ...}";
    if (!json_is_object(root)) {
        json_decref(root);
        return zs__ck_bad(set, &fake, NULL, fix, "not a JSON object of communicator groups");
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        int32_t pg = zs__ck_pg(set, key);
        size_t n = json_is_array(v) ? json_array_size(v) : 0;
        int32_t *ranks =
            pg >= 0 && n > 0 && n <= (size_t)set->nranks ? malloc(sizeof(int32_t) * n) : NULL;
        for (size_t i = 0; ranks && i < n; i++) {
            json_t *x = json_array_get(v, i);
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) >= set->nranks) {
                free(ranks);
                ranks = NULL;
            } else {
                ranks[i] = (int32_t)json_integer_value(x);
            }
        }
        if (!ranks) {
            json_decref(root);
            return zs__ck_bad(set, &fake, NULL, fix, "group '%s': not a list of ranks 0 to %d", key,
                              set->nranks - 1);
        }
        qsort(ranks, n, sizeof *ranks, cmp_i32);
        ck_pg *p = &set->pgs[pg];
        if (p->ranks) /* the nodes' pg_ranks win */
            free(ranks);
        else
            p->ranks = ranks, p->n = (int32_t)n;
    }
    json_decref(root);
    return rc;
}

/* ---- trace sets ------------------------------------------------------------- */

static void set_free(ck_set *set)
{
    for (int i = 0; set->ranks && i < set->nranks_alloc; i++) {
        ck_rank *r = &set->ranks[i];
        free(r->nodes);
        free(r->deps);
        free(r->blocks);
        free(r->carry);
        free(r->segs);
    }
    free(set->ranks);
    for (int32_t i = 0; i < set->nlabels; i++)
        free(set->labels[i]);
    free(set->labels);
    free(set->label_hash);
    for (int32_t i = 0; i < set->npgs; i++)
        free(set->pgs[i].ranks);
    free(set->pgs);
    free(set->meta.docs);
    free(set->meta.pieces);
}

int zs_chakra_load_files(const char *const *paths, int n, const char *groups, zs_schedule **out,
                         zs_err *e)
{
    ck_set set;
    memset(&set, 0, sizeof set);
    set.e = e;
    set.lim = zs_plan_limits_get();
    if (n < 1 || n > set.lim.ranks) {
        char fix[200];
        snprintf(fix, sizeof fix,
                 "read fewer ranks, or raise the limit with the environment variable "
                 "ZEPSIM_MAX_PLAN_RANKS (now %lld)",
                 (long long)set.lim.ranks);
        return zs_err_set(e, ZS_EINPUT, n > 0 ? paths[0] : "Chakra traces", fix,
                          "%d rank files: between 1 and the limit of %lld", n,
                          (long long)set.lim.ranks);
    }
    set.nranks = set.nranks_alloc = n;
    set.ranks = calloc((size_t)n, sizeof(ck_rank));
    int rc = set.ranks ? ZS_OK : zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < n && !rc; i++)
        set.ranks[i].path = paths[i];
    set.meta.layers = set.meta.heads = set.meta.micro = 1;
    set.meta.nstreams = 2;
    snprintf(set.meta.streams[0], sizeof set.meta.streams[0], "compute");
    snprintf(set.meta.streams[1], sizeof set.meta.streams[1], "comm");
    for (int i = 0; i < set.nranks && !rc; i++)
        rc = zs__ck_read_file(&set, i);
    if (!rc && groups)
        rc = read_groups(&set, groups);
    if (!rc)
        rc = zs__ck_build(&set, out);
    set_free(&set);
    return rc;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int zs_chakra_load(const char *base, zs_schedule **out, zs_err *e)
{
    int64_t lim = zs_plan_limits_get().ranks;
    size_t blen = strlen(base) + 32;
    int n = 0, cap = 0, rc = ZS_OK;
    char **paths = NULL;
    for (;; n++) {
        if (n >= cap) {
            cap = cap ? 2 * cap : 64;
            char **p = realloc(paths, sizeof(char *) * (size_t)cap);
            if (!p) {
                rc = zs_err_set(e, ZS_ENOMEM, base, NULL, "out of memory");
                break;
            }
            paths = p;
        }
        if (!(paths[n] = malloc(blen))) {
            rc = zs_err_set(e, ZS_ENOMEM, base, NULL, "out of memory");
            break;
        }
        snprintf(paths[n], blen, "%s.%d.et", base, n);
        if (!exists(paths[n]) || n > lim) {
            free(paths[n]);
            break;
        }
    }
    char *groups = malloc(blen);
    if (!rc && !groups)
        rc = zs_err_set(e, ZS_ENOMEM, base, NULL, "out of memory");
    if (!rc && n == 0)
        rc = zs_err_set(e, ZS_EINPUT, base,
                        "a Chakra trace set is DIR/PREFIX.0.et, DIR/PREFIX.1.et, ...",
                        "no Chakra trace %s.0.et", base);
    if (!rc) {
        snprintf(groups, blen, "%s.comm_group.json", base);
        rc = zs_chakra_load_files((const char *const *)paths, n, exists(groups) ? groups : NULL,
                                  out, e);
    }
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    free(groups);
    return rc;
}

/* The prefix of a file name "<prefix>.<digits>.et" with digits "0" only
 * (the first rank), into out: 1, or 0 when the name is not that. */
static int rank0_prefix(const char *name, char *out, size_t n)
{
    size_t l = strlen(name);
    if (l < 6 || strcmp(name + l - 5, ".0.et") != 0 || l - 5 >= n)
        return 0;
    memcpy(out, name, l - 5);
    out[l - 5] = 0;
    return 1;
}

int zs_chakra_find(const char *path, char *base, size_t n, zs_err *e)
{
    struct stat st;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s.0.et", path);
    if (exists(probe) && strlen(path) < n) {
        snprintf(base, n, "%s", path);
        return ZS_OK;
    }
    /* one rank's file, DIR/PREFIX.RANK.et: its set */
    size_t l = strlen(path), d = l >= 3 ? l - 3 : 0;
    if (l > 5 && l < n && strcmp(path + d, ".et") == 0 && exists(path)) {
        size_t i = d;
        while (i > 0 && isdigit((unsigned char)path[i - 1]))
            i--;
        if (i > 1 && i < d && path[i - 1] == '.') {
            memcpy(base, path, i - 1);
            base[i - 1] = 0;
            snprintf(probe, sizeof probe, "%s.0.et", base);
            if (exists(probe))
                return ZS_OK;
        }
    }
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return zs_err_set(e, ZS_EINPUT, path,
                          "give a folder of Chakra traces, or their prefix (DIR/PREFIX for "
                          "DIR/PREFIX.0.et, ...)",
                          "no Chakra traces here");
    DIR *dir = opendir(path);
    if (!dir)
        return zs_err_set(e, ZS_EINPUT, path, "check the permissions", "cannot read the folder");
    char found[256] = "", other[256] = "", pre[256];
    int count = 0;
    struct dirent *de;
    while ((de = readdir(dir)))
        if (rank0_prefix(de->d_name, pre, sizeof pre)) {
            count++;
            /* the smallest two, whatever order the folder lists them in */
            if (!found[0] || strcmp(pre, found) < 0) {
                snprintf(other, sizeof other, "%s", found);
                snprintf(found, sizeof found, "%s", pre);
            } else if (!other[0] || strcmp(pre, other) < 0) {
                snprintf(other, sizeof other, "%s", pre);
            }
        }
    closedir(dir);
    if (count == 0)
        return zs_err_set(e, ZS_EINPUT, path,
                          "a Chakra trace set is DIR/PREFIX.0.et, DIR/PREFIX.1.et, ...",
                          "no Chakra traces (no *.0.et file) in this folder");
    if (count > 1)
        return zs_err_set(e, ZS_EINPUT, path, "give the prefix: DIR/PREFIX",
                          "%d Chakra trace sets in this folder ('%s', '%s', ...)", count, found,
                          other);
    if ((size_t)snprintf(base, n, "%s/%s", path, found) >= n)
        return zs_err_set(e, ZS_EINPUT, path, "use a shorter path", "path too long");
    return ZS_OK;
}

#else /* no protobuf-c: the same functions, saying what to install */

static int missing(zs_err *e)
{
    return zs_err_set(e, ZS_EUNSUPPORTED, "Chakra traces",
                      "install the Debian packages 'protobuf-c-compiler' and 'libprotobuf-c-dev' "
                      "(scripts/setup) and rebuild",
                      "this zepsim was built without protobuf-c");
}

int zs_chakra_find(const char *path, char *base, size_t n, zs_err *e)
{
    return missing(e);
}

int zs_chakra_load(const char *base, zs_schedule **out, zs_err *e)
{
    return missing(e);
}

int zs_chakra_load_files(const char *const *paths, int n, const char *groups, zs_schedule **out,
                         zs_err *e)
{
    return missing(e);
}

#endif

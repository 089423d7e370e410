/* Whole-buffer descriptor I/O: see zs_fdio.h. */
#include "zs_fdio.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int zs_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int zs_read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return got ? -1 : 0;
        got += (size_t)r;
    }
    return 1;
}

static size_t g_input_limit = ZS_INPUT_LIMIT_DEFAULT;

size_t zs_input_limit(void)
{
    return g_input_limit;
}

void zs_input_limit_set(size_t bytes)
{
    g_input_limit = bytes < SIZE_MAX / 4 ? bytes : SIZE_MAX / 4; /* room for limit + 2 */
}

int zs_read_stream(FILE *f, char **out, size_t *len)
{
    size_t limit = g_input_limit, cap = 1 << 16, n = 0;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
        if ((uintmax_t)st.st_size > limit)
            return ZS_EINPUT;
        cap = (size_t)st.st_size + 2; /* one byte to see the end, one for the NUL */
    }
    if (cap > limit + 2)
        cap = limit + 2;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            if (n > limit)
                break;
            /* grow by doubling, but never past the limit + the NUL + one byte to see it */
            size_t ncap = cap > (limit + 2) / 2 ? limit + 2 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return ZS_ENOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (!buf)
        return ZS_ENOMEM;
    if (n > limit) {
        free(buf);
        return ZS_EINPUT;
    }
    if (ferror(f)) {
        free(buf);
        return ZS_EIO;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return ZS_OK;
}

int zs_read_file(const char *path, const char *open_fix, char **out, size_t *len, zs_err *e)
{
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return zs_err_set(e, ZS_EINPUT, path, open_fix ? open_fix : "check the path",
                          "cannot open file (%s)", strerror(errno));
    /* A folder opens but cannot be read: bad input (exit 2), not an I/O
     * failure (issue 35 item 7). */
    struct stat st;
    if (!is_stdin && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return zs_err_set(e, ZS_EINPUT, path, "give a file, not a folder",
                          "a folder where a file is expected");
    }
    errno = 0;
    int rc = zs_read_stream(f, out, len);
    int err = errno;
    if (!is_stdin)
        fclose(f);
    if (rc == ZS_EINPUT) {
        size_t l = g_input_limit;
        return zs_err_set(e, ZS_EINPUT, path,
                          "give a smaller file, or raise the limit with the environment "
                          "variable ZEPSIM_MAX_INPUT_MB",
                          "input larger than the %zu %s limit", l % (1 << 20) ? l : l >> 20,
                          l % (1 << 20) ? "byte" : "MiB");
    }
    if (rc == ZS_ENOMEM)
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the file");
    if (rc)
        return zs_err_set(e, ZS_EIO, path, "check that the path is a readable file",
                          "read error: %s", strerror(err ? err : EIO));
    return ZS_OK;
}

char *zs_next_line(char **cur)
{
    char *p = *cur;
    if (!p || !*p)
        return NULL;
    char *nl = strchr(p, '\n');
    if (nl) {
        *nl = '\0';
        *cur = nl + 1;
    } else {
        *cur = p + strlen(p);
    }
    size_t n = strlen(p);
    if (n && p[n - 1] == '\r')
        p[n - 1] = '\0';
    return p;
}

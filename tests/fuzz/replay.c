/* Replays saved inputs through a fuzz target's entry point without
 * libFuzzer: `replay_TARGET FILE|DIR...` runs every file (directories one
 * level deep, dot files and README* skipped) and exits 0 when all ran. A
 * crash or a sanitizer report fails the ctest entry that runs it. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zs_fdio.h"
#include "zs_fuzz.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    if (!f || zs_read_stream(f, &buf, &n) != 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        if (f)
            fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
    free(buf);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int bad = 0, ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            continue; /* an absent folder: nothing saved for this target */
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]);
            ran++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        char **names = NULL;
        size_t nn = 0;
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.' || !strncmp(de->d_name, "README", 6))
                continue;
            char **nv = realloc(names, (nn + 1) * sizeof *nv);
            if (!nv)
                break;
            names = nv;
            names[nn++] = strdup(de->d_name);
        }
        if (d)
            closedir(d);
        if (nn) /* qsort must not see a NULL array, even empty (UBSan) */
            qsort(names, nn, sizeof *names, cmp_str); /* a stable order for the log */
        for (size_t k = 0; k < nn; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                bad |= run_file(path);
                ran++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d inputs\n", ran);
    return bad;
}

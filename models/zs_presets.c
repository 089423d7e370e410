/* Built-in presets: see zs_presets.h. */
#include "zs_presets.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

struct zs__preset_text {
    const char *file;
    const char *text;
};
extern const struct zs__preset_text zs__preset_texts[];

/* Splits "KIND-NAME.json": returns the NAME part when the kind matches. */
static int match_kind(const char *file, const char *kind, char *name, size_t n)
{
    size_t kl = strlen(kind);
    if (strncmp(file, kind, kl) != 0 || file[kl] != '-')
        return 0;
    const char *s = file + kl + 1;
    size_t len = strlen(s);
    if (len > 5 && strcmp(s + len - 5, ".json") == 0)
        len -= 5;
    if (len >= n)
        return 0;
    memcpy(name, s, len);
    name[len] = '\0';
    return 1;
}

const char *zs_preset_text(const char *kind, const char *name)
{
    char buf[128];
    for (size_t i = 0; zs__preset_texts[i].file; i++)
        if (match_kind(zs__preset_texts[i].file, kind, buf, sizeof buf) &&
            strcasecmp(buf, name) == 0)
            return zs__preset_texts[i].text;
    return NULL;
}

int zs_preset_name(const char *kind, size_t idx, char *buf, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; zs__preset_texts[i].file; i++)
        if (match_kind(zs__preset_texts[i].file, kind, buf, n) && k++ == idx)
            return 1;
    return 0;
}

void zs_preset_names(const char *kind, char *buf, size_t n)
{
    char name[128];
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; zs_preset_name(kind, i, name, sizeof name) && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", name);
}

int zs_looks_like_path(const char *s)
{
    size_t len = strlen(s);
    return strchr(s, '/') != NULL || (len > 5 && strcmp(s + len - 5, ".json") == 0);
}

int zs_preset_open(const char *kind, const char *name_or_file, zs_json_doc **out, zs_err *e)
{
    if (zs_looks_like_path(name_or_file))
        return zs_json_doc_load_file(name_or_file, out, e);
    const char *text = zs_preset_text(kind, name_or_file);
    if (!text) {
        char names[1024], fix[1200];
        zs_preset_names(kind, names, sizeof names);
        snprintf(fix, sizeof fix, "use one of: %s (zepsim list %ss), or a JSON file path", names,
                 kind);
        return zs_err_set(e, ZS_EINPUT, name_or_file, fix, "unknown %s", kind);
    }
    char src[160];
    snprintf(src, sizeof src, "preset:%s-%s", kind, name_or_file);
    return zs_json_doc_load_text(src, text, out, e);
}

/* compare's verdict: see zs_verdict.h. */
#include "zs_verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zs_backend.h"

void zs_verdict_make(const char *const *methods, const zs_point_result *const *res, int n, int base,
                     zs_verdict *v)
{
    v->fastest = v->second = -1;
    v->margin_pct = NAN;
    v->line[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (!res[i])
            continue;
        if (v->fastest < 0 || res[i]->tokens_per_s > res[v->fastest]->tokens_per_s) {
            v->second = v->fastest;
            v->fastest = i;
        } else if (v->second < 0 || res[i]->tokens_per_s > res[v->second]->tokens_per_s) {
            v->second = i;
        }
    }
    if (v->fastest < 0)
        return;
    const zs_point_result *f = res[v->fastest];
    size_t o = (size_t)snprintf(v->line, sizeof v->line, "verdict: %s is fastest at %.0f tokens/s",
                                methods[v->fastest], f->tokens_per_s);
    if (v->second >= 0) {
        const zs_point_result *s = res[v->second];
        v->margin_pct = s->tokens_per_s > 0 ? (f->tokens_per_s / s->tokens_per_s - 1) * 100 : NAN;
        o += (size_t)snprintf(v->line + o, sizeof v->line - o, ", %.1f%% ahead of %s (%.0f)",
                              v->margin_pct, methods[v->second], s->tokens_per_s);
    } else {
        o += (size_t)snprintf(v->line + o, sizeof v->line - o, " (the only method that ran)");
    }
    if (base >= 0 && base != v->fastest && res[base] && res[base]->tokens_per_s > 0 &&
        o < sizeof v->line)
        o += (size_t)snprintf(v->line + o, sizeof v->line - o, "; %.2fx %s",
                              f->tokens_per_s / res[base]->tokens_per_s, methods[base]);
    /* throughput compares work done only at equal work per iteration */
    for (int i = 0; i < n && o < sizeof v->line; i++)
        if (res[i] && i != v->fastest && f->tokens_per_iter > 0 &&
            fabs(res[i]->tokens_per_iter / f->tokens_per_iter - 1) > 0.01) {
            snprintf(v->line + o, sizeof v->line - o,
                     "; the methods train different tokens per iteration (tokens_per_iter)");
            break;
        }
}

int zs_verdict_nic_note(const char *const *methods, const zs_point_result *const *res, int n,
                        const char *backend, char *buf, size_t len)
{
    size_t o = 0;
    int k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        if (res[i] && res[i]->max_nic_util > 1.0 && o < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%s %.0f%%", k++ ? ", " : "", methods[i],
                                  res[i]->max_nic_util * 100);
    if (!k)
        return 0;
    char names[512];
    snprintf(names, sizeof names, "%s", buf);
    const zs_backend *b = zs_backend_find(backend);
    if (b && b->nic_over)
        snprintf(buf, len,
                 "max_nic_pct above 100 (%s): that NIC's bytes at its line rate take longer "
                 "than the iteration. %s",
                 names, b->nic_over);
    else
        snprintf(buf, len,
                 "max_nic_pct above 100 (%s): a NIC was busy longer than the iteration on the "
                 "%s backend, which should not happen: please report it",
                 names, backend);
    return 1;
}

/* Execution options shared by every backend: see zs_exec.h. */
#include "zs_exec.h"

#include <string.h>

void zs_exec_opts_init(zs_exec_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeline = NULL;
    o->tl_ranks = NULL;
    o->tl_layer0 = o->tl_layer1 = -1;
    o->fold = ZS_FOLD_EXACT;
}

void zs_exec_tl_cfg(const zs_exec_opts *o, int gpus_per_node, zs_tl_cfg *tc)
{
    zs_tl_cfg_init(tc);
    tc->ranks = o->tl_ranks;
    tc->layer0 = o->tl_layer0;
    tc->layer1 = o->tl_layer1;
    tc->gpus_per_node = gpus_per_node;
}

void zs_exec_fold_cfg(const zs_exec_opts *o, const zs_timeline *tl, zs_fold_cfg *fc)
{
    zs_fold_cfg_init(fc);
    if (o && o->fold == ZS_FOLD_OFF) {
        fc->on = 0;
        return;
    }
    if (o && o->fold == ZS_FOLD_STEADY)
        zs_fold_cfg_steady(fc);
    if (o && o->fold_tol > 0)
        fc->tol = o->fold_tol;
    if (tl && o) {
        /* A timeline of every layer keeps every iteration; one of some
         * layers keeps theirs on the ranks it writes. */
        fc->keep_all = o->tl_layer0 < 0;
        fc->rank_on = zs_timeline_ranks(tl);
        fc->layer0 = o->tl_layer0;
        fc->layer1 = o->tl_layer1;
    }
}

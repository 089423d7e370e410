/* zepsim: entry point. Dispatches `zepsim <command> [options]` through the
 * registry in commands.def. The only place that calls exit statuses. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "zs_intr.h"
#include "zs_hw_info.h"
#include "zs_sim_info.h"
#include "zs_version.h"

typedef struct {
    const char *name;
    zs_cmd_fn fn;
    const char *summary;
} zs_cmd;

static const zs_cmd commands[] = {
#define ZS_CMD(name, fn, summary) {name, fn, summary},
#include "commands.def"
#undef ZS_CMD
};

static void usage(FILE *out)
{
    fprintf(out, "usage: zepsim <command> [options]\n\n"
                 "Simulates long-context LLM training schedules (Zeppelin, WLB-LLM and their\n"
                 "baselines) on a SimGrid model of a GPU cluster, or runs them on real GPUs.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`zepsim <command> --help` (or `zepsim help <command>`) describes a "
                 "command's options.\n"
                 "Exit status: 0 success, 1 runtime failure, 2 bad usage or bad input.\n"
                 "Inputs are bounded (docs/reliability.md): ZEPSIM_MAX_INPUT_MB (default 512)\n"
                 "caps a file read whole, ZEPSIM_MAX_PLAN_OPS (default 2^28) and\n"
                 "ZEPSIM_MAX_PLAN_RANKS (default 65536) the work a plan file may ask for.\n"
                 "A timeline over ZEPSIM_TIMELINE_MAX_MB (default 64) of JSON keeps 8 of its\n"
                 "ranks unless --timeline-ranks says which (all, or 0,5,17-20).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc > 2 && !strcmp(argv[1], "help")) { /* `zepsim help CMD` = `zepsim CMD --help` */
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    char *av[] = {argv[2], "--help", NULL};
                    return commands[i].fn(2, av);
                }
            fprintf(stderr, "zepsim: unknown command '%s': run `zepsim --help` for the list\n",
                    argv[2]);
            return 2;
        }
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("zepsim %s (%s; %s)\n", ZS_VERSION, zs_sim_simgrid_version(), zs_hw_build_summary());
        return 0;
    }
    zs_err e;
    zs_err_clear(&e);
    if (zs_cli_limits_from_env(&e))
        return zs_cli_fail(&e);
    /* SIGINT / SIGTERM / SIGHUP: remove the files being written, say so in
     * one line, and die of the signal (base/zs_intr.h). */
    zs_intr_install();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "zepsim: unknown command '%s': run `zepsim --help` for the list\n", argv[1]);
    return 2;
}

/*
 * admin.h — the subcommands of avfs-admin (SPEC §10) that live in files of their own. Each
 * takes the arguments after the subcommand's name (argv[0] is the subcommand) and returns
 * the process exit status: 0 done, 1 failed, 2 bad usage.
 */
#ifndef AVFS_ADMIN_H
#define AVFS_ADMIN_H

#include <json-c/json.h>
#include <stdio.h>

/* plot TRACE --out FILE.svg: the trace of docs/TRACE.md drawn as an SVG (tools/admin_plot.c) */
int admin_plot(int argc, char **argv);

/* profile DEVICE: the disk profiler of SPEC §6.4 (tools/admin_profile.c) */
int admin_profile(int argc, char **argv);

/* quota DIR [SIZE|none], retention DIR [--high H --low L | --off]: the per-directory space
 * rules (tools/admin_space.c) */
int admin_space(int argc, char **argv);

/* stats --prometheus: the stats document in Prometheus's text format on f
 * (tools/admin_prom.c); 0, or 1 when f could not be written */
int admin_prometheus(FILE *f, json_object *stats);

#endif

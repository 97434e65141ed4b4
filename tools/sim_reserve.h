/*
 * sim_reserve.h — avfs-sim's admission and isolation studies (SPEC §7 in virtual time): the
 * `reserve` and `isolation` subcommands, dispatched from tools/avfs-sim.c.
 */
#ifndef AVFS_SIM_RESERVE_H
#define AVFS_SIM_RESERVE_H

/* argv[0] is the subcommand's name. The exit code: 0, 1 (a run failed), 2 (bad input). */
int avfs_sim_cmd_reserve(int argc, char **argv);
int avfs_sim_cmd_isolation(int argc, char **argv);

#endif

/*
 * sim_scenario.h — avfs-sim's scenario commands (docs/SCENARIOS.md): `run FILE` carries out a
 * scenario file and prints per-class and per-generator figures; `search FILE --grow CLASS` grows
 * one class a stream at a time, the rest held, to the largest count with no miss. Options on
 * the command line override the file's keys. The tool parses, runs (sim/) and prints.
 */
#ifndef AVFS_SIM_SCENARIO_H
#define AVFS_SIM_SCENARIO_H

/* avfs-sim run FILE [options] (argv[0] "run"): the exit code. */
int avfs_sim_cmd_run_file(int argc, char **argv);
/* avfs-sim search FILE --grow CLASS [options] (argv[0] "search"): the exit code. */
int avfs_sim_cmd_search_file(int argc, char **argv);

#endif

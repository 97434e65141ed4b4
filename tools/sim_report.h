/*
 * sim_report.h — a simulated run's QoS figures as avfs-sim prints them (SPEC §10): the keys of
 * its --json document and the lines of its table, for the NrMw run, the real-time run and the
 * scenario run (sim_scenario.c) alike. What names the run (its workload, its file, its
 * classes) is each caller's; this prints only what struct avfs_simrun_result holds.
 */
#ifndef AVFS_SIM_REPORT_H
#define AVFS_SIM_REPORT_H

#include <json-c/json.h>
#include <stdbool.h>

#include "simrun.h"

/* Add the run's figures to j: rt_requests, deadline_misses, etime_failed, p0, margin_ms,
 * disk_utilization, seek_gb, seek_classes, be_mbps, be_requests, e_twait_ms, commands, the
 * high-priority probe's, decision_us, max_pending, zones, block_size, files_filled,
 * deleted_files, wall_s, fill_wall_s. */
void avfs_sim_report_json(json_object *j, const struct avfs_simrun_result *r);
/* The same as the table's lines on stdout (the best-effort line when be). */
void avfs_sim_report_text(const struct avfs_simrun_result *r, bool be);

#endif

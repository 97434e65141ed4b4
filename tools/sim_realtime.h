/*
 * sim_realtime.h — avfs-sim realtime and fill: a simulated run's workload carried out in real
 * time against avfsd, so that a virtual-time figure and a real-time one can be set side by
 * side (bench/parity.sh). `fill` formats and fills a real device exactly as avfs-sim does its
 * simulated one (the same code: the same files at the same places); `realtime` plays the same
 * workload plan (sim/workload.c) through libavio and the daemon's FUSE mount and reads the
 * daemon's own metrics back — the engine's, counted as avfs-sim counts them.
 */
#ifndef AVFS_SIM_REALTIME_H
#define AVFS_SIM_REALTIME_H

#include <stddef.h>

#include "simrun.h"

/* What only a real-time run has. */
struct avfs_sim_rt_extra {
	double hddemu_err_mean_us, hddemu_err_max_us;	/* hddemu's timing error (-1: none) */
	double hddemu_utilization;	/* hddemu's own busy time over the run (-1: none) */
	unsigned long long hddemu_late;	/* its requests served late */
	unsigned long long client_errors;	/* requests that failed other than by -ETIME */
	unsigned long long pictures;	/* pictures written whole */
	unsigned reserved;	/* reservations the daemon admitted */
};

/* Play o's workload against the avfsd serving `mount` (its socket found from the mount) for
 * o->duration_s, the daemon's metrics reset at the start; hddemu: its mount directory, whose
 * statistics are reset and read too (NULL: none). Fills r as avfs_simrun would (per-stream
 * results for heterogeneous streams) and x. 0, or -errno with why (a workload that needs the
 * simulator: raw streams, random or probe best effort; a refused reservation...). */
int avfs_sim_realtime(const struct avfs_simrun_opts *o, const char *mount, const char *hddemu,
		      struct avfs_simrun_result *r, struct avfs_sim_rt_extra *x, char *why,
		      size_t whylen);

/* Format and fill the device or image at path as avfs_simrun does its simulated disk (o->size
 * bytes of it, or all). 0, or -errno with why. */
int avfs_sim_fill(const struct avfs_simrun_opts *o, const char *path, size_t *files, char *why,
		  size_t whylen);

#endif

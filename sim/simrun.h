/*
 * simrun.h — one simulated run: the real file system (mkfs, fill, files) and the engine avfsd
 * runs (engine/: the scheduler, data plans, the bandwidth class, ordered commits, the
 * metrics) over the simulated disk in virtual time, driven by the workloads of sim/workload.h
 * (SPEC §12): NrMw constant-bit-rate streams with buffer deadlines, heterogeneous streams
 * (reserved or not, with buffer or per-round deadlines, in classes: a scenario file's), best-
 * effort generators, and the high-priority probe of the preemption study (papers/003). It
 * measures, per class and per generator too; it prints nothing (avfs-sim does).
 */
#ifndef AVFS_SIMRUN_H
#define AVFS_SIMRUN_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "iosched.h"
#include "metrics.h"
#include "simdisk.h"

/* The best-effort loads: avfs-sim --be names one (a single client), a scenario's [be]
 * sections several generators (struct avfs_simrun_be). */
enum avfs_be_load {
	AVFS_BE_NONE,
	AVFS_BE_PICTURES,	/* 100 files of ~1.3 MB written in turn (papers/001 §4.3.2), looped;
				 * 1 MiB writes */
	AVFS_BE_RANDOM,		/* 4 KiB random reads, one at a time */
	AVFS_BE_GREEDY,		/* a sequential reader of a recording, 1 MiB requests */
	AVFS_BE_DELETE,		/* one recording deleted half-way through */
	AVFS_BE_PROBE,		/* preemption study: random BE reads of be_size, queue depth 1 */
	AVFS_BE_COPY,		/* a recording copied into a new file (read, write), the copy
				 * deleted when whole, again */
};

/* A best-effort generator (a scenario's [be NAME]): count clients, each with one request
 * outstanding, asking again when it completes unless a cap holds it back (the next request
 * starts no sooner than len / rate and 1 / iops after the last one started). */
struct avfs_simrun_be {
	enum avfs_be_load kind;	/* PICTURES, RANDOM, GREEDY (sequential), COPY or DELETE */
	unsigned count;		/* clients; DELETE: recordings deleted, spread evenly over the run */
	uint32_t io;		/* bytes a request: a multiple of 4 KiB (pictures: its pieces) */
	double rate;		/* bytes/s each client at most; 0: no cap */
	double iops;		/* requests/s each client at most; 0: no cap */
};

/* One stream of a heterogeneous workload (issue 7): given as an array, the streams replace
 * NrMw. A rate + buffer service (ABISS, SPEC §7) that keeps its buffer full: a request is
 * issued each time a request's worth of buffer frees (every io / rate, or at once on each
 * completion when greedy) and is due when the rest of the buffer drains
 * (avfs_service_deadline()). */
struct avfs_simrun_stream {
	double rate;		/* bytes/s the client consumes (reads) or produces (writes) */
	double reserve;		/* reserved: bytes/s reserved (0: rate); the deadlines follow it */
	uint32_t io;		/* bytes per request: a multiple of 4 KiB dividing the data block */
	uint64_t buffer;	/* bytes of client buffer, more than io */
	bool write;
	bool reserved;		/* through the bandwidth class's token bucket (avfs_bucket_charge:
				 * rate reserve, size buffer): within it real-time, above it best
				 * effort; not reserved: every request best effort */
	bool greedy;		/* keeps buffer / io requests outstanding, ignoring rate */
	double place;		/* < 0: a random recording (reads) or a new file (writes) through
				 * the file system; 0..1: raw sequential I/O from this fraction of
				 * the data region on (wrapping at its end), outside the fs */
	int64_t round_ns;	/* > 0: per-round deadlines (papers/004 §3.3.1): at the start of
				 * each round, per_round requests at once, all due at the round's
				 * end (not greedy); 0: buffer deadlines */
	unsigned per_round;	/* requests a round */
	bool rt;		/* not reserved: its own deadlines (buffer or round), as an NrMw
				 * stream's; false: best effort */
	unsigned cls;		/* its class, for per-class results (< opts.nclasses) */
};

/* What one stream got. */
struct avfs_simrun_stream_res {
	struct avfs_qos qos;	/* RT requests, misses, margins; be_requests; bytes (RT + BE) */
	uint64_t rt_bytes, be_bytes;
	double mbps;		/* MB/s (10^6 bytes) moved over the run, RT and BE */
	double rt_util, be_util;	/* disk time of its RT / BE commands over the run */
	double lat_mean_ms, lat_max_ms;	/* submit to completion, every request */
};

/* What one class of streams got (opts.nclasses). */
struct avfs_simrun_class_res {
	struct avfs_qos qos;	/* its streams' requests: RT ones (misses, margins; a request
				 * refused because its deadline had passed is a failed one), BE
				 * ones, the bytes moved */
	uint64_t overdue;	/* requests still in flight at the end whose deadline had passed
				 * (a starved stream misses without a completion to show it) */
	double mib_s;		/* MiB/s delivered over the run, RT and BE */
};

/* What one best-effort generator got, all its clients together. */
struct avfs_simrun_be_res {
	uint64_t requests, bytes;	/* done */
	uint64_t errors;	/* requests that failed */
	uint64_t files;		/* pictures begun, copies finished, recordings deleted */
	double mib_s;		/* MiB/s moved over the run */
	double lat_mean_ms, lat_max_ms;	/* submit to completion */
};


struct avfs_simrun_opts {
	const char *disk;	/* model name */
	uint64_t seed;
	unsigned nread, nwrite;	/* NrMw */
	double rate;		/* bytes/s per stream (19.39 Mbps) */
	uint32_t io;		/* bytes per stream request (512 KiB) */
	unsigned depth;		/* requests outstanding per stream = buffer / io (8) */
	double duration_s;
	int64_t stall_at_ns, stall_ns;	/* a stall of the disk this far into the run (--stall) */
	double fill;		/* fraction of the data region filled with recordings first */
	const char *policy;	/* tm, fifo, cscan, edf, scan-edf */
	struct avfs_sched_conf conf;	/* margin, urgent, chunk, jit...; model from the fs */
	uint32_t alloc;		/* enum avfs_alloc_policy: 0 ZRR, 1 contiguous first-fit, 2 ZRR in
				 * runs (the default) */
	uint32_t block_shift;	/* data block size (22: 4 MiB) */
	enum avfs_be_load be;
	uint32_t be_size;	/* probe: BE read size */
	double hp_rate;		/* probe: high-priority requests per second (0 = none) */
	const char *trace_path;	/* CSV of every request, or NULL */
	const struct avfs_simrun_stream *streams;	/* heterogeneous streams instead of NrMw */
	unsigned nstreams;	/* (nread, nwrite, rate, io and depth then do not apply) */
	unsigned nclasses;	/* the streams' classes (streams[i].cls), 0: none */
	const struct avfs_simrun_be *bes;	/* best-effort generators instead of `be` */
	unsigned nbes;
	enum avfs_bw_policy bw_policy;
	/* JIT / split: "model" (default: the simulated disk's own state, exact) or "rotpred" (what
	 * avfsd runs: the model's mechanics, the platter's phase learned from completions) */
	const char *predictor;
	uint64_t size;		/* bytes of the model used (its outer part, as hddemu --size); 0 all */
	uint64_t read_ahead;	/* the engine's read-ahead of deadline streams (8 MiB), 0: off */
	uint64_t read_ahead_start;	/* ... as a stream starts (2.5 MiB), 0: all at once */
	int64_t read_ahead_ramp_ns;	/* ... growing to read_ahead over this (30 s), 0: at once */
	int64_t commit_wait_ns;	/* the engine's commit-wait (10 s), 0: off */
	bool stop_at_miss;	/* end the run at its first deadline miss (the result then covers
				 * the run up to it): a search asks only whether there is one */
};

void avfs_simrun_defaults(struct avfs_simrun_opts *o);
/* One "NAME=VALUE" setting (the tools' --set): the engine's "read-ahead",
 * "read-ahead-start", "read-ahead-ramp" or "commit-wait", else the scheduler's
 * (avfs_sched_conf_set_pair). 0 or -errno with why. */
int avfs_simrun_set(struct avfs_simrun_opts *o, const char *pair, char *why, size_t whylen);

struct avfs_simrun_result {
	uint64_t rt_requests, deadline_misses, etime_failed;
	/* of the deadline misses, a recording's writes refused for want of room (-ENOSPC: the
	 * file system full and every recording a DVR could delete being played), and when the
	 * first was, s from the measured start (0 if none): a full disk, not a late one */
	uint64_t nospace;
	double nospace_s;
	double p0;
	double margin_min_ms, margin_p001_ms, margin_p01_ms, margin_p50_ms;
	double disk_utilization;
	double seek_p50_gb, seek_p90_gb, seek_frac_below_5;
	uint64_t seek_class[AVFS_SEEK_CLASSES];	/* avfs_seek_class_names: 0, <1, <5 ... GB */
	uint64_t be_bytes, be_requests;
	double be_mbps;		/* megabits per second, as papers/001 quotes BE rates */
	double e_twait_ms;	/* papers/003 eq. (2) over every disk command */
	uint64_t commands;
	uint64_t satf_picks;	/* order = satf: commands that jumped a batch's C-SCAN order */
	uint64_t overload;	/* the mixer's decisions in C-SCAN order under overload */
	struct avfs_engine_ra_counts ra;	/* the engine's read-ahead of deadline streams */
	struct avfs_simdisk_split split;	/* where the drive's time went over the run */
	uint64_t hp_requests;	/* probe */
	double hp_mean_ms, hp_max_ms;
	double decision_us;	/* mean wall time of one scheduler decision */
	uint64_t decisions;
	uint64_t max_pending;
	double sim_s, wall_s, fill_wall_s;
	uint64_t files_filled;
	uint32_t zones;
	uint64_t block_size;
	uint64_t deleted_files;
	uint64_t commits;	/* metadata commits done (best-effort writes through the scheduler) */
	double commit_max_s;	/* the longest one, or the age of one still in flight at the end */
	uint64_t checkpoints;	/* checkpoints done (committed metadata written home) */
	/* o->streams: one entry per stream (malloc'ed; avfs_simrun_result_free) */
	struct avfs_simrun_stream_res *streams;
	unsigned nstreams;
	struct avfs_simrun_class_res *classes;	/* o->nclasses of them (malloc'ed) */
	unsigned nclasses;
	struct avfs_simrun_be_res *bes;	/* one per generator: o->bes, or o->be's (malloc'ed) */
	unsigned nbes;
};

/* Run. 0, or -errno with why (bad options, the disk too small for the workload...). */
int avfs_simrun(const struct avfs_simrun_opts *o, struct avfs_simrun_result *r, char *why,
		size_t whylen);
/* Free what a result holds (its per-stream, per-class and per-generator results). */
void avfs_simrun_result_free(struct avfs_simrun_result *r);

struct avfs_fsio;
/* Format d as avfs_simrun does for o (mkfs with o's allocator, block size, seed and named
 * model; o->size bytes of it, or all) and mount it. 0 or -errno with why. */
int avfs_simrun_format(struct avfs_disk *d, const struct avfs_simrun_opts *o,
		       struct avfs_fsio **io, char *why, size_t whylen);
/* Fill the mounted file system to o->fill with 30-minute recordings rec-NNNNN.ts at o->rate,
 * written two at a time through the real allocator, their blocks mapped and marked written
 * without moving data (as hddemu's fast mode would fill a disk), and committed. The inode
 * numbers in *recs (malloc'ed, *nrecs of them, in name order). 0 or -errno. */
int avfs_simrun_fill(struct avfs_fsio *io, const struct avfs_simrun_opts *o, int64_t now,
		     uint64_t **recs, size_t *nrecs);

/* The service-time model and data block size that the file system avfs_simrun formats for
 * these options records in its superblock: what the scheduler and admission control see.
 * 0, or -errno with why. */
int avfs_simrun_model(const struct avfs_simrun_opts *o, struct avfs_svc_model *m,
		      uint64_t *block_size, char *why, size_t whylen);

#endif

/*
 * metrics.h — the QoS metrics of SPEC §12, counted one way for avfsd and avfs-sim: completion
 * margins and P0 of real-time requests (a log histogram, per stream and overall), disk
 * utilization (the union of the intervals with a command on the device), the seek distance
 * between consecutively executed requests, papers/003's E(T_wait), best-effort throughput.
 * Pure accumulation: `now` is an argument; it never reads a clock. The engine feeds it; the
 * drivers read summaries.
 */
#ifndef AVFS_METRICS_H
#define AVFS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Margins: a signed log histogram. Bin 0: requests that failed (never done: -ETIME or an
 * error); then late completions from the latest (most negative) up, one bin for |margin| < 1 µs,
 * and on time from 1 µs up, 32 bins an octave (2.2 % wide), 34 octaves (2.4 h) each way. */
#define AVFS_MARGIN_PER_OCTAVE 32
#define AVFS_MARGIN_OCTAVES 34
#define AVFS_MARGIN_SIDE (AVFS_MARGIN_PER_OCTAVE * AVFS_MARGIN_OCTAVES)
#define AVFS_MARGIN_BINS (2 + 2 * AVFS_MARGIN_SIDE)

/* What one set of requests got (a stream, or every real-time request). */
struct avfs_qos {
	uint64_t requests;	/* real-time requests completed or failed */
	uint64_t misses;	/* ... late or failed */
	uint64_t failed;	/* ... failed (no data: -ETIME, an error) */
	uint64_t be_requests;	/* requests served as best effort */
	uint64_t bytes;		/* moved, real time and best effort */
	uint64_t rt_bytes;
	int64_t margin_min_ns;	/* the smallest margin of a completed RT request */
	uint32_t bins[AVFS_MARGIN_BINS];
};

/* Account a completed request: deadline 0 = served as best effort; res < 0 = failed. */
void avfs_qos_add(struct avfs_qos *q, int64_t deadline, int64_t done, uint64_t bytes, int res);
/* The q-quantile (0..1) of the RT margins, ns, interpolated inside its bin (±1.1 %); failed
 * requests count as -INFINITY. 0 with no RT request. */
double avfs_qos_margin_quantile(const struct avfs_qos *q, double quantile);

/* Seek distances between consecutively executed requests (SPEC §12): eight coarse classes in
 * GB (as avfs-admin shows them) and a log histogram for quantiles (16 bins an octave from
 * 4 KiB; bin 0: no seek). */
#define AVFS_SEEK_CLASSES 8
extern const char *const avfs_seek_class_names[AVFS_SEEK_CLASSES];	/* "0", "<1", ... ">=200" */
#define AVFS_SEEK_BINS (1 + 16 * 34)

struct avfs_metrics {
	int64_t since;		/* the measurement began */
	struct avfs_qos rt;	/* every request with a deadline */
	uint64_t etime;		/* front ends' requests refused or failed with -ETIME (their deadline
				 * passed before they were issued), one each */
	uint64_t be_requests, be_bytes;	/* best-effort requests done (metadata not counted) */
	/* the device */
	int64_t busy_ns;	/* closed busy intervals */
	int64_t busy_from;	/* start of the open one (busy_n > 0) */
	unsigned busy_n;	/* commands on the device */
	uint64_t commands;
	double svc_sum_ns, svc_sq_ns2;	/* Σ T_i, Σ T_i² over completed commands */
	uint64_t seek_class[AVFS_SEEK_CLASSES];
	uint32_t seek_bins[AVFS_SEEK_BINS];
	uint64_t seeks;
	uint64_t head;		/* the byte after the last command (transfer) */
	size_t max_pending;	/* requests in the scheduler, at the most */
	uint64_t decisions;	/* scheduler decisions asked for */
};

void avfs_metrics_reset(struct avfs_metrics *m, int64_t now);
/* A command goes to the device. first: it is the first command of its request (the seek
 * distance is counted per request; chunks are not requests). transfer: a read or write (not a
 * SEEK or FLUSH: those move no data and do not move the head's end). */
void avfs_metrics_cmd_start(struct avfs_metrics *m, uint64_t off, uint32_t len, bool first,
			    bool transfer, int64_t now);
/* A command carried n more requests than its first (coalescing), each starting where the one
 * before it ended: n seek distances of zero. */
void avfs_metrics_carried(struct avfs_metrics *m, unsigned n);
/* A command that started at `start` completed at now. */
void avfs_metrics_cmd_end(struct avfs_metrics *m, int64_t start, int64_t now);

/* What a measurement says, at `now`. */
struct avfs_metrics_summary {
	double seconds;		/* since the measurement began */
	uint64_t rt_requests, misses, etime;
	double p0;
	double margin_min_ms, margin_p001_ms, margin_p01_ms, margin_p50_ms;
	double utilization;
	uint64_t commands;
	double e_twait_ms;	/* papers/003 eq. (2): ½ ΣT_i² / (ΣT_i + T_idle) */
	double seek_p50_gb, seek_p90_gb, seek_frac_below_5;
	uint64_t seek_class[AVFS_SEEK_CLASSES];
	uint64_t be_requests, be_bytes;
	double be_mbps;		/* megabits per second, as papers/001 quotes BE rates */
	uint64_t rt_bytes;
	uint64_t max_pending;
	uint64_t decisions;
};
void avfs_metrics_summary(const struct avfs_metrics *m, int64_t now,
			  struct avfs_metrics_summary *s);

#endif

/*
 * profile.h — the disk profiler (SPEC §6.4, papers/003 §3.4): measures, through the backend
 * interface of disk.h alone and with reads only unless writes are asked for, what the
 * service-time model and chunking need: sequential throughput against request size, the
 * transfer rate across the LBA range, the rotation period, the seek curve and the command
 * overhead; and on request the write throughput. It neither prints nor stores the result (the
 * tools do), nor decides whether a device may be written (the caller does), and it reads no
 * clock of its own: the caller passes one (virtual time for the simulated disk,
 * CLOCK_MONOTONIC for a real one).
 */
#ifndef AVFS_PROFILE_H
#define AVFS_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "disk.h"

/* The smallest device worth profiling: every step needs room for cold regions of its own. */
#define AVFS_PROFILE_MIN_BYTES (64ull << 20)

/* Up to this many points per curve. */
#define AVFS_PROFILE_MAX_CHUNKS 16
#define AVFS_PROFILE_MAX_RATES 32
#define AVFS_PROFILE_MAX_SEEKS 16

/* Time as the profiler sees it. For the simulated disk both act on the engine's virtual clock;
 * for a real device they are CLOCK_MONOTONIC and a sleep. */
struct avfs_profile_clock {
	void *ctx;
	uint64_t (*now)(void *ctx);		/* ns, monotonic */
	void (*pause)(void *ctx, uint64_t ns);	/* let ns pass, with nothing in flight */
};

/* Optional: the logical-to-physical block mapping (papers/003 §3.4, "disk block mappings"),
 * which Diskbench extracts from SCSI drives and the simulated disk knows. With it, seek
 * distances are cylinders; without it, they are bytes and the mapping is taken as linear. */
struct avfs_profile_geom {
	void *ctx;
	uint32_t ncyl;						/* cylinders holding sectors */
	uint64_t (*cyl_sector)(void *ctx, uint32_t cyl);	/* first 512-byte sector of cyl */
	uint32_t (*track_sectors)(void *ctx, uint64_t sector);	/* sectors per track there */
};

/* Steps, for avfs_profile_opts.steps. Without any of the read steps, all of them run: 0 is
 * every read step, AVFS_PROFILE_WRITE alone every read step and the writes. */
#define AVFS_PROFILE_CHUNKS (1u << 0)	/* sequential throughput against request size */
#define AVFS_PROFILE_ZONES (1u << 1)	/* transfer rate across the LBA range (always run: the
					 * other steps need it to take transfer time out) */
#define AVFS_PROFILE_RANDOM (1u << 2)	/* random 4 KiB reads: mean access time, mean seek */
#define AVFS_PROFILE_MECH (1u << 3)	/* rotation period, overhead, seek curve (rotating only) */
#define AVFS_PROFILE_READS (AVFS_PROFILE_CHUNKS | AVFS_PROFILE_ZONES | AVFS_PROFILE_RANDOM | \
			    AVFS_PROFILE_MECH)
#define AVFS_PROFILE_WRITE (1u << 4)	/* sequential writes: throughput against request size and
					 * the rate across the LBA range, after the reads. It
					 * OVERWRITES the outer 128/512 MiB and a span at each
					 * point: only ever asked for on a scratch device */

/* Sample counts are 0 for the defaults (in brackets: --quick). */
struct avfs_profile_opts {
	unsigned steps;
	bool quick;		/* fewer samples: for CI and for real devices */
	uint64_t seed;		/* the profiler's random choices (locations, pauses) */
	unsigned rate_points;	/* points across the LBA range [16; 8] */
	unsigned wrate_points;	/* write points across the LBA range [8; 4] */
	uint64_t rate_span;	/* bytes read at each point [64 MiB; 16 MiB], less on small devices */
	uint32_t rate_io;	/* request size for those reads [1 MiB] */
	unsigned n_random;	/* random 4 KiB reads [4000; 1000] */
	unsigned n_rot;		/* rotation samples [64; 16] */
	unsigned n_seek;	/* samples per seek distance [1000; 150]; short seeks twice (>= 1000) */
	/* Called now and then (not on every request) with the step's name and its progress. */
	void (*progress)(void *arg, const char *step, unsigned done, unsigned total);
	void *progress_arg;
};

struct avfs_profile {
	/* the device */
	uint64_t capacity;	/* bytes */
	uint32_t lbs;		/* logical block size */
	bool rotational;	/* what the device says (sysfs, the model) */
	bool mapped;		/* seek distances are cylinders (a geometry was given) */
	uint32_t ncyl;		/* cylinders, when mapped */
	uint32_t io;		/* size of the small reads (4 KiB, or lbs if larger) */
	/* sequential read throughput against request size (papers/003 Fig. 5) */
	unsigned nchunk;
	uint32_t chunk_size[AVFS_PROFILE_MAX_CHUNKS];	/* bytes */
	double chunk_rate[AVFS_PROFILE_MAX_CHUNKS];	/* bytes/s */
	uint32_t chunk;		/* chosen: smallest size within 1% of the best (SPEC §6), 0 if not run */
	double chunk_max_rate;	/* bytes/s */
	/* transfer rate across the LBA range */
	unsigned nrate;
	uint64_t rate_off[AVFS_PROFILE_MAX_RATES];	/* byte offset of each measured span */
	double rate[AVFS_PROFILE_MAX_RATES];		/* bytes/s */
	double outer, inner;	/* bytes/s at the first and the last point */
	/* sequential writes at queue depth 1 (AVFS_PROFILE_WRITE; papers/003 Fig. 6), each rate up
	 * to the completion of a FLUSH after the last write; as for reads otherwise */
	unsigned nwchunk;
	uint32_t wchunk_size[AVFS_PROFILE_MAX_CHUNKS];	/* bytes */
	double wchunk_rate[AVFS_PROFILE_MAX_CHUNKS];	/* bytes/s */
	uint32_t wchunk;	/* smallest size within 1% of the best write rate, 0 if not run */
	double wchunk_max_rate;	/* bytes/s */
	unsigned nwrate;
	uint64_t wrate_off[AVFS_PROFILE_MAX_RATES];	/* byte offset of each written span */
	double wrate[AVFS_PROFILE_MAX_RATES];		/* bytes/s */
	/* random 4 KiB reads at queue depth 1 */
	unsigned nrandom;
	double random_ns;	/* mean service time */
	/* mechanics: valid only when rot_measured (a rotating device whose timing shows it) */
	bool rot_measured;
	double rotation_ns;	/* rotation period T_r */
	double rot_latency_ns;	/* mean rotational wait, measured */
	double overhead_ns;	/* command overhead (+ host path), as a zero-seek read sees it */
	unsigned nseek;
	uint64_t seek_dist[AVFS_PROFILE_MAX_SEEKS];	/* cylinders (mapped) or bytes */
	double seek_frac[AVFS_PROFILE_MAX_SEEKS];	/* of the full stroke */
	double seek_ns[AVFS_PROFILE_MAX_SEEKS];		/* the seek alone */
	double seek_track_ns, seek_third_ns, seek_full_ns;
	double seek_mean_ns;	/* mean over uniformly random LBA pairs */
	/* the service-time model of SPEC §5.2 (struct avfs_svc_model's fields) */
	double tr_ns;		/* T_r: rotation period (0 when not rotating or not measured) */
	double tk_ns;		/* T_k: mean seek; without mechanics, the mean access latency */
	double dmax, dmin;	/* bytes/s at LBA 0 and at the end; equal (the slowest rate seen) when
				 * the device shows no rotation: no zones to draw a line through */
	uint64_t lmax;		/* bytes */
	/* the cost of the measurement */
	uint64_t requests;	/* commands of every kind */
	uint64_t writes;	/* of which writes */
	uint64_t elapsed_ns;	/* on the profiler's clock */
};

/* Profile disk d. Reads only unless opts->steps has AVFS_PROFILE_WRITE (d must then accept
 * writes); d must have nothing in flight. geom may be NULL, opts may be NULL (the read steps,
 * full sample counts, seed 1). 0 and *out filled, or -errno: -ENOSPC for a device smaller than
 * AVFS_PROFILE_MIN_BYTES, -ENOMEM, or the error of a failed command. */
int avfs_profile_run(struct avfs_disk *d, const struct avfs_profile_clock *clk,
		     const struct avfs_profile_geom *geom, const struct avfs_profile_opts *opts,
		     struct avfs_profile *out);

/* The clock and geometry of a simulated disk (disk/simdisk.h): virtual time and the model's
 * mapping. The structures refer to d, which must outlive them. 0, or -EINVAL if d is not a
 * simulated disk (geom's ncyl is 0 for the ssd model: pass NULL then). */
int avfs_profile_sim_env(struct avfs_disk *d, struct avfs_profile_clock *clk,
			 struct avfs_profile_geom *geom);

/* Real time: CLOCK_MONOTONIC and clock_nanosleep. */
void avfs_profile_real_clock(struct avfs_profile_clock *clk);

/* The smallest chunk size whose rate is within 1% of the maximum (SPEC §6): the index into
 * size[]/rate[] (n entries, sizes ascending), or -1 when n is 0. */
int avfs_profile_pick_chunk(const double *rate, unsigned n);

#endif

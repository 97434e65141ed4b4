/*
 * hddmodel.h — the mechanical model of a rotating disk (SPEC §11), shared by the
 * virtual-time simulated disk and hddemu: zones, a Ruemmler–Wilkes seek curve, rotation
 * with angular position taken from time, head/track switch with skew, command overhead,
 * a segmented read-ahead cache and an optional write cache. Pure computation: it is told
 * the time and returns when a command completes; it never reads a clock.
 */
#ifndef AVFS_HDDMODEL_H
#define AVFS_HDDMODEL_H

#include <stdbool.h>
#include <stdint.h>

#define AVFS_HDD_SECTOR 512u

struct avfs_hdd_params {
	char name[32];
	uint64_t capacity;	/* bytes */
	bool ssd;		/* no mechanics: fixed latency + bandwidth */
	double rpm;
	unsigned heads;		/* surfaces = tracks per cylinder */
	unsigned nzones;
	double rate_outer;	/* sustained sequential bytes/s in the outer zone (LBA 0) */
	double rate_inner;	/* ... in the inner zone; zones fall linearly between */
	double seek_track_ms;	/* 1-cylinder seek */
	double seek_mean_ms;	/* mean over uniformly random LBA pairs */
	double seek_full_ms;	/* full stroke */
	double head_switch_ms;
	double overhead_ms;	/* command overhead, every command */
	double bus_rate;	/* bytes/s between the drive's cache and the host */
	uint64_t cache_bytes;	/* read cache, split into segments */
	unsigned cache_segments;
	bool read_ahead;
	bool write_cache;	/* write-back cache (off by default, papers/001 §4.1) */
	double ssd_read_ms, ssd_write_ms, ssd_rate;	/* ssd only */
	/* options: seeded, deterministic */
	uint64_t seed;
	double jitter;		/* seek time scaled by 1 + jitter·U(-1,1) */
	double err_prob;	/* probability that a media access needs error recovery */
	double err_ms;		/* ... which then takes this much longer */
};

/* Fill *p with the named model's parameters. 0, or -ENOENT for an unknown name. */
int avfs_hdd_params_lookup(const char *name, struct avfs_hdd_params *p);
/* NULL-terminated list of model names. */
const char *const *avfs_hdd_model_names(void);

struct avfs_hdd;

/* Build the model's geometry and fit its seek curve. 0 or -EINVAL / -ENOMEM. */
int avfs_hdd_new(const struct avfs_hdd_params *p, struct avfs_hdd **out);
void avfs_hdd_free(struct avfs_hdd *h);
const struct avfs_hdd_params *avfs_hdd_params(const struct avfs_hdd *h);

enum avfs_hdd_op { AVFS_HDD_READ, AVFS_HDD_WRITE, AVFS_HDD_FLUSH, AVFS_HDD_SEEK };

/* What one command cost, in ns of (virtual) time. */
struct avfs_hdd_result {
	uint64_t start;		/* the command began (the drive was free) */
	uint64_t end;		/* completion reported to the host */
	uint64_t busy_until;	/* the drive is free again (> end for write-back) */
	double overhead, seek, rot, xfer;	/* components in ns; seek includes head switch */
	int64_t seek_cyl;	/* signed cylinder distance of the positioning seek */
	uint32_t from_cyl, to_cyl;
	bool cache_hit;		/* served (wholly or partly) from the read cache */
	bool recovered;		/* an error-recovery delay was added */
};

/* Serve one command that reaches the drive at time now (ns). The drive serves one
 * command at a time: the command starts at max(now, the previous busy_until).
 * sector/nsect in 512-byte sectors. 0, or -EINVAL beyond the end. */
int avfs_hdd_service(struct avfs_hdd *h, uint64_t now, enum avfs_hdd_op op, uint64_t sector,
		     uint32_t nsect, bool fua, struct avfs_hdd_result *r);

/* Predict, without changing the drive's state, what a read or write of `sector` would see
 * if the command reached the drive at `now`: the positioning seek, the rotational wait after
 * it, the seek time over half the distance and the sector in the middle (for splitting).
 * A sequential read served by the read-ahead stream sees no seek and no wait. 0 or -EINVAL. */
int avfs_hdd_predict(const struct avfs_hdd *h, uint64_t now, uint64_t sector, double *seek,
		     double *rot, double *half_seek, uint64_t *mid_sector);

/* The model's mechanics for a predictor outside it (daemon/rotpred.h, which takes them as
 * callbacks, hence the const void *): the angle, in turns [0, 1), under which the sector holding
 * byte off passes (skew included: the rotational wait for it from time t is the fraction of a
 * turn from t / T_r to this angle), and the positioning time in ns from the track holding byte
 * from to the one holding byte to (seek, or head switch, or 0). Bytes beyond the model's end
 * are taken at its last sector. */
double avfs_hdd_angle_of(const void *h, uint64_t off);
double avfs_hdd_seek_between(const void *h, uint64_t from, uint64_t to);

/* Figures of the model's first `bytes` bytes (a device smaller than the model is its outer
 * part, like hddemu --size): the transfer rate (bytes/s) at its start and at its end, the mean
 * seek over random pairs of its sectors and its full stroke, in ns. */
void avfs_hdd_part(const struct avfs_hdd *h, uint64_t bytes, double *rate_first, double *rate_last,
		   double *seek_mean_ns, double *seek_full_ns);

/* Geometry queries (the profiler's view of the mapping, papers/003 §3.4). */
uint64_t avfs_hdd_sectors(const struct avfs_hdd *h);
uint32_t avfs_hdd_cylinders(const struct avfs_hdd *h);	/* cylinders holding sectors */
uint32_t avfs_hdd_cyl_of(const struct avfs_hdd *h, uint64_t sector);
uint64_t avfs_hdd_cyl_first_sector(const struct avfs_hdd *h, uint32_t cyl);
uint32_t avfs_hdd_spt_at(const struct avfs_hdd *h, uint64_t sector);	/* sectors per track */
double avfs_hdd_seek_ms(const struct avfs_hdd *h, uint32_t dist);	/* the fitted curve */
double avfs_hdd_rotation_ms(const struct avfs_hdd *h);
/* Zone table: rate (bytes/s, including switches) and first sector of zone z. */
unsigned avfs_hdd_nzones(const struct avfs_hdd *h);
double avfs_hdd_zone_rate(const struct avfs_hdd *h, unsigned z);
uint64_t avfs_hdd_zone_first_sector(const struct avfs_hdd *h, unsigned z);

#endif

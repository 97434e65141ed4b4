/*
 * simdisk.h — the simulated disk: the backend interface of disk.h served in virtual time by
 * the HDD model on the discrete-event engine. Keeps written content sparsely, honours SEEK,
 * and records a per-request trace. It does not schedule: requests run in arrival order.
 */
#ifndef AVFS_SIMDISK_H
#define AVFS_SIMDISK_H

#include "disk.h"
#include "hddmodel.h"
#include "simengine.h"

#define AVFS_SIMDISK_NODATA (1u << 0)	/* timing only: writes are not kept, reads give zeros */
#define AVFS_SIMDISK_TRACE (1u << 1)	/* record every request */

struct avfs_simdisk_rec {
	uint8_t op;		/* enum avfs_disk_op */
	uint8_t fua;
	uint8_t cache_hit;
	uint8_t recovered;
	uint32_t len;		/* bytes */
	uint64_t lba;		/* 512-byte sectors */
	uint64_t submit, start, end;	/* ns virtual time */
	int64_t seek_cyl;	/* signed cylinder distance */
	double seek_ns, rot_ns, xfer_ns;
	int64_t res;
};

/* Open a simulated disk of model p on engine eng. 0 or -errno. */
int avfs_simdisk_open(struct avfs_sim_engine *eng, const struct avfs_hdd_params *p,
		      unsigned flags, struct avfs_disk **out);
/* By model name, with a seed. 0, -ENOENT (unknown model) or -errno. */
int avfs_simdisk_open_model(struct avfs_sim_engine *eng, const char *model, uint64_t seed,
			    unsigned flags, struct avfs_disk **out);

bool avfs_simdisk_is(const struct avfs_disk *d);
struct avfs_hdd *avfs_simdisk_model(const struct avfs_disk *d);
struct avfs_sim_engine *avfs_simdisk_engine(const struct avfs_disk *d);
const struct avfs_simdisk_rec *avfs_simdisk_trace(const struct avfs_disk *d, size_t *n);
void avfs_simdisk_trace_clear(struct avfs_disk *d);
/* FNV-1a over the trace (ops, addresses, times): equal traces hash equal. */
uint64_t avfs_simdisk_trace_hash(const struct avfs_disk *d);
/* Keep no content for bytes in [lo, hi) (the data region of a big simulated file system):
 * requests wholly inside cost time only: writes are not kept and reads leave the buffer as
 * it is (no copy: a simulated hour moves hundreds of GB). Metadata outside stays real. */
void avfs_simdisk_nostore(struct avfs_disk *d, uint64_t lo, uint64_t hi);
/* A stall: the first command the drive starts at or after `at` (simulated ns) takes `ns`
 * longer, as a drive's error recovery or recalibration does. Once; 0 ns: none. */
void avfs_simdisk_stall(struct avfs_disk *d, uint64_t at, uint64_t ns);
/* The model's prediction for a command at byte offset off reaching the drive at now
 * (avfs_hdd_predict), for JIT seek and seek splitting. 0 or -errno. */
int avfs_simdisk_predict(struct avfs_disk *d, uint64_t now, uint64_t off, double *seek,
			 double *rot, double *half_seek, uint64_t *mid_off);

/* Busy time (ns) since open: the sum of command service intervals. */
uint64_t avfs_simdisk_busy_ns(const struct avfs_disk *d);

/* Where the drive's time went since open, summed over its commands (the model's components:
 * what a round model of the scheduler's service can be checked against term by term). */
struct avfs_simdisk_split {
	uint64_t commands;	/* reads and writes (not FLUSH or SEEK) */
	uint64_t seeks;		/* of them, those that moved the head (seek or head switch > 0) */
	uint64_t waits;		/* those that waited for their sector (rotation > 0) */
	double overhead_ns, seek_ns, rot_ns, xfer_ns;	/* of reads and writes */
	double write_rot_ns;	/* of rot_ns, the writes' */
};

void avfs_simdisk_split(const struct avfs_disk *d, struct avfs_simdisk_split *out);
/* Pages of 4 KiB holding written content (sparse store). */
size_t avfs_simdisk_pages(const struct avfs_disk *d);

#endif

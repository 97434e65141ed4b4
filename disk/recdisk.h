/*
 * recdisk.h — a recording wrapper backend (after littlefs lfs_emubd and dm-log-writes):
 * forwards every request to an inner disk and logs each successful WRITE (with a copy of
 * its data) and FLUSH in completion order, for crashsim.h to build power-cut images from.
 * It changes no request and injects no fault; the inner disk does the I/O.
 */
#ifndef AVFS_RECDISK_H
#define AVFS_RECDISK_H

#include "disk.h"

enum {
	AVFS_REC_WRITE = 1,
	AVFS_REC_FLUSH = 2,
};

struct avfs_rec_entry {
	uint8_t kind;		/* AVFS_REC_WRITE or AVFS_REC_FLUSH */
	uint8_t fua;		/* write: issued with AVFS_DISK_FUA, durable by itself */
	uint64_t off;		/* write: byte offset on the disk */
	uint32_t len;		/* write: bytes */
	uint8_t *data;		/* write: len bytes as submitted, owned by the log; flush: NULL */
};

/* Wrap inner. On success the recdisk owns inner: closing the recdisk closes inner, and
 * inner must not be used directly any more (its completions would bypass the log). On
 * failure inner stays the caller's. info is inner's, with model "rec:<inner model>";
 * buffers registered on the recdisk are registered on inner. 0 and *out, or -EINVAL
 * (NULL argument) / -ENOMEM. Call with nothing in flight on inner. */
int avfs_recdisk_open(struct avfs_disk *inner, struct avfs_disk **out);

bool avfs_recdisk_is(const struct avfs_disk *d);

/* The log so far, oldest completion first, and its length in *n. Valid until the next
 * reap, log_clear or close. NULL and *n = 0 when empty or when d is not a recdisk.
 * A write appears when its completion is reaped with res >= 0; a write that failed at
 * submit or completed with an error never appears. */
const struct avfs_rec_entry *avfs_recdisk_log(const struct avfs_disk *d, size_t *n);
/* Forget every entry and free the data copies; requests in flight are logged as usual. */
void avfs_recdisk_log_clear(struct avfs_disk *d);
/* Bytes of write data held by the log (the sum of the write entries' len). */
size_t avfs_recdisk_log_bytes(const struct avfs_disk *d);

#endif

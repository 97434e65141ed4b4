/*
 * guest.h — what the standalone programs of the QEMU guest suite share (tests/guest/): the
 * FAIL/INFO lines run.sh and the test log read, a synchronous request that may bypass
 * avfs_disk_submit's checks (so that the device itself judges it), and the drain of a full
 * queue through the backend's poll fd. Header-only: each program is one translation unit.
 */
#ifndef AVFS_GUEST_H
#define AVFS_GUEST_H

#include "disk.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>

static int failures;

#define FAIL(...)                                                                              \
	do {                                                                                   \
		printf("FAIL ");                                                               \
		printf(__VA_ARGS__);                                                           \
		printf("\n");                                                                  \
		failures++;                                                                    \
	} while (0)
#define INFO(...)                                                                              \
	do {                                                                                   \
		printf(__VA_ARGS__);                                                           \
		printf("\n");                                                                  \
	} while (0)

/* Submit req and wait for its completion. raw: straight to the backend, so that the device
 * itself judges the request (avfs_disk_submit refuses an out-of-range one before any
 * command). The completion's result, or the submit error. */
static inline int64_t guest_io(struct avfs_disk *d, const struct avfs_disk_req *req, bool raw)
{
	struct avfs_disk_cqe cqe;
	int ret = raw ? d->ops->submit(d->ctx, req) : avfs_disk_submit(d, req);

	while (!ret && (ret = avfs_disk_reap(d, &cqe, 1)) == 0)
		ret = avfs_disk_wait(d);
	if (ret < 0)
		return ret;
	return cqe.cookie == req->cookie ? cqe.res : -EPROTO;
}

/* With want requests queued on d, reap them all as the poll fd says they are ready, in odd
 * batches (completions stay for the next), counting those whose result is not
 * expect(cookie, arg); FAIL when the fd stays quiet, when requests are left in flight or when
 * any result was wrong. True when all came back right. */
static inline bool guest_drain(const char *path, struct avfs_disk *d, unsigned want,
			       int64_t (*expect)(uint64_t cookie, void *arg), void *arg)
{
	struct pollfd p = { .fd = avfs_disk_poll_fd(d), .events = POLLIN };
	struct avfs_disk_cqe cqe[7];
	unsigned got = 0, bad = 0;

	while (got < want) {
		int n;

		if (poll(&p, 1, 30000) != 1) {
			FAIL("%s: poll fd not readable with %u completions due", path, want - got);
			break;
		}
		n = avfs_disk_reap(d, cqe, 7);
		for (int i = 0; i < n; i++)
			bad += cqe[i].res != expect(cqe[i].cookie, arg);
		got += n > 0 ? (unsigned)n : 0;
	}
	if (avfs_disk_inflight(d) || avfs_disk_wait(d) != -EAGAIN)
		FAIL("%s: requests left in flight after reaping all", path);
	if (bad)
		FAIL("%s: %u of the queued reads failed", path, bad);
	return got == want && !bad;
}

#endif

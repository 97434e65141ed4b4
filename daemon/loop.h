/*
 * loop.h — avfsd's event loop, as a library (redis ae.c's shape): descriptors watched for
 * readiness through io_uring poll requests, one absolute timer, one wait for all of them, and
 * the handlers of what is ready run with the time read once after waking. It knows nothing of
 * what the descriptors are (FUSE, sockets, the disk's ring, a signalfd).
 */
#ifndef AVFSD_LOOP_H
#define AVFSD_LOOP_H

#include <stdint.h>

struct avfs_loop;

/* A handler: the descriptor is ready; now is this iteration's time (CLOCK_MONOTONIC ns). */
typedef void (*avfs_loop_fn)(void *ctx, int64_t now);

/* A loop of at most `watches` watches. 0 or -errno. */
int avfs_loop_new(struct avfs_loop **out, unsigned watches);
void avfs_loop_free(struct avfs_loop *l);

/* A watch of fd: fn(ctx, now) runs once each time it was armed and fd became ready. Its id
 * (>= 0), or -ENOSPC / -EINVAL. */
int avfs_loop_add(struct avfs_loop *l, int fd, avfs_loop_fn fn, void *ctx);
/* Ask for one readiness (POLLIN or POLLOUT) of watch id; again after each. 0 or -errno. A watch
 * already armed stays armed once. */
int avfs_loop_arm(struct avfs_loop *l, int id, unsigned events);
/* Forget watch id: a readiness already on its way is dropped, never handed to its handler. */
void avfs_loop_del(struct avfs_loop *l, int id);

/* Wait until an armed watch is ready or CLOCK_MONOTONIC reaches `until` (ns; 0: no limit),
 * then run the handlers of what is ready. Returns the time read once after waking (the one
 * handed to the handlers), or -errno. */
int64_t avfs_loop_run_once(struct avfs_loop *l, int64_t until);

#endif

/*
 * loop.c — the event loop on one io_uring: a oneshot POLL_ADD per armed watch (user_data: the
 * watch's slot and generation, so that a readiness of a deleted watch is recognised and
 * dropped), one TIMEOUT with an absolute CLOCK_MONOTONIC time moved as the wanted time changes,
 * one blocking wait. It reads the clock once per iteration, after the wait.
 */
#include "loop.h"

#include "clock.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ll
#define UD_TIMER UINT64_MAX		/* the timer's own completion */
#define UD_IGNORE (UINT64_MAX - 1)	/* completions of failed timer updates */

struct watch {
	int fd;			/* -1: the slot is free */
	avfs_loop_fn fn;
	void *ctx;
	uint32_t gen;		/* bumped at each delete: stale completions carry the old one */
	bool armed;
};

struct avfs_loop {
	struct io_uring ring;
	struct watch *w;
	unsigned nw;
	bool timer_armed;	/* a TIMEOUT is in the kernel */
	int64_t timer_at;
	struct __kernel_timespec ts;	/* the TIMEOUT's time: it must live while submitted */
};

int avfs_loop_new(struct avfs_loop **out, unsigned watches)
{
	struct avfs_loop *l = calloc(1, sizeof(*l));
	int err;

	if (!l || !watches)
		return l ? (free(l), -EINVAL) : -ENOMEM;
	l->w = calloc(watches, sizeof(*l->w));
	if (!l->w) {
		free(l);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < watches; i++)
		l->w[i].fd = -1;
	l->nw = watches;
	err = io_uring_queue_init(256, &l->ring, 0);
	if (err) {
		free(l->w);
		free(l);
		return err;
	}
	*out = l;
	return 0;
}

void avfs_loop_free(struct avfs_loop *l)
{
	if (!l)
		return;
	io_uring_queue_exit(&l->ring);
	free(l->w);
	free(l);
}

static struct io_uring_sqe *sqe_get(struct avfs_loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

	if (!sqe) {	/* the submission queue is full: hand it to the kernel, then there is room */
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	return sqe;
}

int avfs_loop_add(struct avfs_loop *l, int fd, avfs_loop_fn fn, void *ctx)
{
	if (fd < 0 || !fn)
		return -EINVAL;
	for (unsigned i = 0; i < l->nw; i++) {
		if (l->w[i].fd >= 0)
			continue;
		l->w[i].fd = fd;
		l->w[i].fn = fn;
		l->w[i].ctx = ctx;
		l->w[i].armed = false;
		return (int)i;
	}
	return -ENOSPC;
}

int avfs_loop_arm(struct avfs_loop *l, int id, unsigned events)
{
	struct watch *w = id >= 0 && (unsigned)id < l->nw ? &l->w[id] : NULL;
	struct io_uring_sqe *sqe;

	if (!w || w->fd < 0)
		return -EINVAL;
	if (w->armed)
		return 0;
	sqe = sqe_get(l);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, w->fd, events);
	io_uring_sqe_set_data64(sqe, (uint64_t)w->gen << 32 | (unsigned)id);
	w->armed = true;
	return 0;
}

void avfs_loop_del(struct avfs_loop *l, int id)
{
	if (id < 0 || (unsigned)id >= l->nw)
		return;
	/* a poll still in the kernel completes when its descriptor is shut down or closed; its
	 * completion then carries the old generation and is dropped */
	l->w[id].fd = -1;
	l->w[id].armed = false;
	l->w[id].gen++;
}

/* The timer only ever moves earlier while it is armed: a later wake time is served by the one
 * in the kernel firing first (one early iteration, which asks again). Moving it later at each
 * iteration (the caller's "at least every LOOK" is now + LOOK) was a busy loop: an update's
 * own completion ended the wait at once, the next iteration had a later time again, and the
 * timer never fired. A successful update posts no completion (IOSQE_CQE_SKIP_SUCCESS). */
static void set_timer(struct avfs_loop *l, int64_t until)
{
	struct io_uring_sqe *sqe;

	if (l->timer_armed && until >= l->timer_at)
		return;
	sqe = sqe_get(l);
	if (!sqe)
		return;	/* the wait is then bounded by the next event only */
	l->ts.tv_sec = until / NS;
	l->ts.tv_nsec = until % NS;
	if (l->timer_armed) {
		io_uring_prep_timeout_update(sqe, &l->ts, UD_TIMER, IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, UD_IGNORE);
		io_uring_sqe_set_flags(sqe, IOSQE_CQE_SKIP_SUCCESS);
	} else {
		io_uring_prep_timeout(sqe, &l->ts, 0, IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, UD_TIMER);
	}
	l->timer_armed = true;
	l->timer_at = until;
}

int64_t avfs_loop_run_once(struct avfs_loop *l, int64_t until)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	int64_t now;
	int err;

	if (until)
		set_timer(l, until);
	err = io_uring_submit_and_wait(&l->ring, 1);
	if (err < 0 && err != -EINTR && err != -ETIME)
		return err;
	now = avfs_clock_ns();
	io_uring_for_each_cqe(&l->ring, head, cqe) {
		uint64_t ud = io_uring_cqe_get_data64(cqe);
		unsigned id = (unsigned)(ud & 0xffffffffu);
		struct watch *w;

		seen++;
		if (ud == UD_TIMER) {
			l->timer_armed = false;
			continue;
		}
		if (ud == UD_IGNORE || id >= l->nw)
			continue;
		w = &l->w[id];
		if (w->fd < 0 || w->gen != (uint32_t)(ud >> 32))
			continue;	/* deleted since it was armed */
		w->armed = false;
		w->fn(w->ctx, now);
	}
	io_uring_cq_advance(&l->ring, seen);
	return now;
}

/*
 * simengine.c — the virtual-time event queue: a binary min-heap keyed by (time, sequence),
 * each event remembering its heap slot so that a cancel is O(log n). Single-threaded.
 */
#include "simengine.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>

struct avfs_sim_event {
	uint64_t t;
	uint64_t seq;		/* tie-break: schedule order */
	size_t slot;		/* index in the heap */
	avfs_sim_fn fn;
	void *arg;
};

struct avfs_sim_engine {
	uint64_t now;
	uint64_t seq;
	struct avfs_sim_event **heap;
	size_t n, cap;
};

int avfs_sim_engine_new(struct avfs_sim_engine **out)
{
	struct avfs_sim_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	*out = e;
	return 0;
}

void avfs_sim_engine_free(struct avfs_sim_engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->heap[i]);
	free(e->heap);
	free(e);
}

uint64_t avfs_sim_now(const struct avfs_sim_engine *e)
{
	return e->now;
}

static int before(const struct avfs_sim_event *a, const struct avfs_sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void place(struct avfs_sim_engine *e, size_t i, struct avfs_sim_event *ev)
{
	e->heap[i] = ev;
	ev->slot = i;
}

static void sift_up(struct avfs_sim_engine *e, size_t i)
{
	struct avfs_sim_event *ev = e->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!before(ev, e->heap[p]))
			break;
		place(e, i, e->heap[p]);
		i = p;
	}
	place(e, i, ev);
}

static void sift_down(struct avfs_sim_engine *e, size_t i)
{
	struct avfs_sim_event *ev = e->heap[i];

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct avfs_sim_event *best = ev;

		if (l < e->n && before(e->heap[l], best))
			m = l, best = e->heap[l];
		if (l + 1 < e->n && before(e->heap[l + 1], best))
			m = l + 1, best = e->heap[l + 1];
		if (m == i)
			break;
		place(e, i, best);
		i = m;
	}
	place(e, i, ev);
}

struct avfs_sim_event *avfs_sim_at(struct avfs_sim_engine *e, uint64_t t, avfs_sim_fn fn,
				   void *arg)
{
	struct avfs_sim_event *ev, **h;

	if (t < e->now || !fn) {
		errno = EINVAL;
		return NULL;
	}
	h = avfs_grow(e->heap, &e->cap, e->n, sizeof(*h), 64);
	if (!h)
		return NULL;
	e->heap = h;
	ev = malloc(sizeof(*ev));
	if (!ev)
		return NULL;
	ev->t = t;
	ev->seq = e->seq++;
	ev->fn = fn;
	ev->arg = arg;
	place(e, e->n++, ev);
	sift_up(e, ev->slot);
	return ev;
}

static void remove_at(struct avfs_sim_engine *e, size_t i)
{
	struct avfs_sim_event *last = e->heap[--e->n];

	if (i == e->n)
		return;
	place(e, i, last);
	sift_down(e, i);
	sift_up(e, last->slot);
}

int avfs_sim_cancel(struct avfs_sim_engine *e, struct avfs_sim_event *ev)
{
	if (!ev || ev->slot >= e->n || e->heap[ev->slot] != ev)
		return -EINVAL;
	remove_at(e, ev->slot);
	free(ev);
	return 0;
}

uint64_t avfs_sim_next(const struct avfs_sim_engine *e)
{
	return e->n ? e->heap[0]->t : UINT64_MAX;
}

int avfs_sim_step(struct avfs_sim_engine *e)
{
	struct avfs_sim_event *ev;
	avfs_sim_fn fn;
	void *arg;

	if (!e->n)
		return 0;
	ev = e->heap[0];
	remove_at(e, 0);
	e->now = ev->t;
	fn = ev->fn;
	arg = ev->arg;
	free(ev);	/* before the call: the callback may schedule and cancel freely */
	fn(arg, e->now);
	return 1;
}

uint64_t avfs_sim_run_until(struct avfs_sim_engine *e, uint64_t t)
{
	uint64_t ran = 0;

	while (e->n && e->heap[0]->t <= t)
		ran += avfs_sim_step(e);
	if (t > e->now)
		e->now = t;
	return ran;
}

size_t avfs_sim_pending(const struct avfs_sim_engine *e)
{
	return e->n;
}

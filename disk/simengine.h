/*
 * simengine.h — a discrete-event engine in virtual time: a clock that only the engine
 * advances and an event queue ordered by (time, insertion order). It runs callbacks;
 * it knows nothing of disks, schedulers or workloads.
 */
#ifndef AVFS_SIMENGINE_H
#define AVFS_SIMENGINE_H

#include <stddef.h>
#include <stdint.h>

struct avfs_sim_engine;
struct avfs_sim_event;	/* a handle, valid until the event fires or is cancelled */

typedef void (*avfs_sim_fn)(void *arg, uint64_t now);

/* 0 or -ENOMEM. The clock starts at 0 ns. */
int avfs_sim_engine_new(struct avfs_sim_engine **out);
void avfs_sim_engine_free(struct avfs_sim_engine *e);

/* Virtual now, ns. */
uint64_t avfs_sim_now(const struct avfs_sim_engine *e);

/* Run fn(arg, t) at virtual time t >= now. Events at the same time run in the order they
 * were scheduled. Returns the handle, or NULL (errno EINVAL for t < now, ENOMEM). */
struct avfs_sim_event *avfs_sim_at(struct avfs_sim_engine *e, uint64_t t, avfs_sim_fn fn,
				   void *arg);

/* Remove a pending event. 0, or -EINVAL for a NULL handle. */
int avfs_sim_cancel(struct avfs_sim_engine *e, struct avfs_sim_event *ev);

/* Time of the next event, or UINT64_MAX when none is pending. */
uint64_t avfs_sim_next(const struct avfs_sim_engine *e);

/* Run the next event (advancing the clock to its time). 1 if one ran, 0 if none pending. */
int avfs_sim_step(struct avfs_sim_engine *e);

/* Run every event with time <= t, then set the clock to t (if later). Returns events run. */
uint64_t avfs_sim_run_until(struct avfs_sim_engine *e, uint64_t t);

size_t avfs_sim_pending(const struct avfs_sim_engine *e);

#endif

/*
 * progress.h — a tool's progress line for long work (mkfs.avfs, fsck.avfs, avfs-admin
 * profile), as e2fsprogs and fio show it: the step, a bar, the percentage and an estimate of
 * the time left, redrawn in place on a terminal at most five times a second and cleared at
 * the end. Off (it prints nothing) unless the descriptor is a terminal: a script's log gets
 * no carriage returns. It measures nothing: the caller says how far it is.
 */
#ifndef AVFS_PROGRESS_H
#define AVFS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct avfs_progress {
	const char *tool;	/* the line's prefix ("mkfs.avfs") */
	int fd;			/* where, -1 when off */
	char step[40];		/* the step shown */
	int64_t step_start;	/* ns, CLOCK_MONOTONIC: when the step began (its estimate) */
	int64_t last;		/* the last redraw */
	bool shown;		/* a line is out, to clear */
};

/* On fd if it is a terminal and !quiet; off otherwise. */
void avfs_progress_init(struct avfs_progress *p, const char *tool, int fd, bool quiet);
/* done of total units in step (a new step restarts the estimate); total 0: no percentage. */
void avfs_progress_show(struct avfs_progress *p, const char *step, uint64_t done, uint64_t total);
/* Clear the line (before other output, and at the end). */
void avfs_progress_clear(struct avfs_progress *p);

#endif

/*
 * progress.c — the progress line (progress.h): one write() per redraw, so that it never
 * interleaves with itself.
 */
#include "progress.h"

#include "clock.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define EVERY_NS 200000000ll	/* five redraws a second at most */
#define BAR 24

void avfs_progress_init(struct avfs_progress *p, const char *tool, int fd, bool quiet)
{
	memset(p, 0, sizeof(*p));
	p->tool = tool;
	p->fd = !quiet && isatty(fd) ? fd : -1;
}

void avfs_progress_show(struct avfs_progress *p, const char *step, uint64_t done, uint64_t total)
{
	int64_t now;
	char line[160], bar[BAR + 1], left[32] = "";
	int n;

	if (p->fd < 0)
		return;
	now = avfs_clock_ns();
	if (strncmp(p->step, step, sizeof(p->step) - 1)) {	/* a new step */
		snprintf(p->step, sizeof(p->step), "%s", step);
		p->step_start = now;
	} else if (p->shown && now - p->last < EVERY_NS && done < total) {
		return;
	}
	p->last = now;
	if (!total) {
		n = snprintf(line, sizeof(line), "\r%s: %-30s %5.0f s\033[K", p->tool, p->step,
			     (double)(now - p->step_start) / 1e9);
	} else {
		double f = done >= total ? 1 : (double)done / (double)total;
		double el = (double)(now - p->step_start) / 1e9;
		int fill = (int)(f * BAR);

		memset(bar, '=', (size_t)fill);
		memset(bar + fill, ' ', (size_t)(BAR - fill));
		if (fill < BAR)
			bar[fill] = '>';
		bar[BAR] = 0;
		/* the rate so far, once there is one to go by */
		if (f > 0.01 && f < 1 && el > 1) {
			double rest = el * (1 - f) / f;

			snprintf(left, sizeof(left), "%d:%02d left", (int)rest / 60, (int)rest % 60);
		}
		n = snprintf(line, sizeof(line), "\r%s: %-30s [%s] %3.0f%% %s\033[K", p->tool,
			     p->step, bar, 100 * f, left);
	}
	if (n > 0 && write(p->fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) > 0)
		p->shown = true;
}

void avfs_progress_clear(struct avfs_progress *p)
{
	if (p->fd >= 0 && p->shown && write(p->fd, "\r\033[K", 4) < 0)
		return;
	p->shown = false;
	p->step[0] = 0;
}

/*
 * log.c — avfsd's log lines: "avfsd: LEVEL: message" on stderr, below a level.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int max_level = AVFSD_INFO;

void avfsd_log_level(int level)
{
	max_level = level;
}

void avfsd_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	va_list ap;

	if (level > max_level || level < 0)
		return;
	fprintf(stderr, "avfsd: %s: ", names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * log.c — avfsd's log lines (log.h): stderr, the journal's native protocol (sd_journal_send,
 * with the level as PRIORITY and the device as AVFS_DEVICE) or syslog(3). Without libsystemd
 * (the static guest build) the journal is syslog's way in.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>
#ifdef AVFSD_SYSTEMD
#include <systemd/sd-journal.h>
#endif

enum sink { TO_STDERR, TO_JOURNAL, TO_SYSLOG };

static int max_level = AVFSD_INFO;
static int echo_level = -1;
static enum sink sink = TO_STDERR;
static char device[4096];

static const int priority[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void avfsd_log_level(int level)
{
	max_level = level;
}

void avfsd_log_echo(int level)
{
	echo_level = level;
}

/* $JOURNAL_STREAM is "DEV:INO" of the stream systemd connected stderr to (systemd.exec(5)) */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && !fstat(STDERR_FILENO, &st) &&
	       st.st_dev == dev && st.st_ino == ino;
}

const char *avfsd_log_open(bool background, const char *dev)
{
	snprintf(device, sizeof(device), "%s", dev ? dev : "");
#ifdef AVFSD_SYSTEMD
	if (background ? !access("/run/systemd/journal/socket", W_OK) : stderr_is_journal()) {
		sink = TO_JOURNAL;
		return "the journal";
	}
#else
	(void)stderr_is_journal;
#endif
	if (!background) {
		sink = TO_STDERR;
		return "stderr";
	}
	openlog("avfsd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	sink = TO_SYSLOG;
	return "syslog";
}

void avfsd_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char msg[2048];
	va_list ap;

	if (level > max_level || level < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	switch (sink) {
#ifdef AVFSD_SYSTEMD
	case TO_JOURNAL:
		if (sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priority[level],
				    "SYSLOG_IDENTIFIER=avfsd", "AVFS_DEVICE=%s", device, NULL) >= 0)
			break;
		/* journald went away; syslog may still be there */
		__attribute__((fallthrough));
#endif
	case TO_SYSLOG:
		syslog(priority[level], "%s", msg);
		break;
	default:
		fprintf(stderr, "avfsd: %s: %s\n", names[level], msg);
		return;
	}
	if (level <= echo_level)
		fprintf(stderr, "avfsd: %s: %s\n", names[level], msg);
}

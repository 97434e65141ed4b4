/*
 * log.h — avfsd's log: one line per event with a level. In the foreground the lines go to
 * stderr ("avfsd: level: message"), or to the journal when stderr is the journal's stream (a
 * systemd service: $JOURNAL_STREAM); in the background to the journal when journald runs,
 * else to syslog. Every part of the daemon logs through it; nothing else prints.
 */
#ifndef AVFSD_LOG_H
#define AVFSD_LOG_H

#include <stdbool.h>

enum { AVFSD_ERROR, AVFSD_WARNING, AVFSD_INFO, AVFSD_DEBUG };

/* Lines above this level are dropped (AVFSD_INFO unless --verbose). */
void avfsd_log_level(int level);
void avfsd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Where the lines go from now on: background false, the journal if stderr is its stream, else
 * stderr; background true (stderr is going away), the journal if journald runs, else syslog.
 * device tags the journal's entries (AVFS_DEVICE=). Returns the sink's name, for a log line. */
const char *avfsd_log_open(bool background, const char *device);
/* Lines at this level or more urgent also go to stderr (a background daemon's errors and
 * warnings while its starter waits, for mount(8) to show); -1: none. */
void avfsd_log_echo(int level);

#endif

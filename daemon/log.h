/*
 * log.h — avfsd's log: one line per event with a level, on stderr (journald takes it from
 * there). Every part of the daemon logs through it; nothing else prints.
 */
#ifndef AVFSD_LOG_H
#define AVFSD_LOG_H

enum { AVFSD_ERROR, AVFSD_WARNING, AVFSD_INFO, AVFSD_DEBUG };

/* Lines above this level are dropped (AVFSD_INFO unless --verbose). */
void avfsd_log_level(int level);
void avfsd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

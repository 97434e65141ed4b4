/*
 * trace.h — the request trace (docs/TRACE.md): one column table used by its writer (the engine,
 * for avfs-sim --trace and avfs-admin trace) and by its reader (avfs-admin plot). A record is one
 * device request when it completes or fails. Formatting and parsing only: no file, no clock.
 */
#ifndef AVFS_TRACE_H
#define AVFS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum avfs_trace_class {
	AVFS_TRACE_BE,		/* "be": best effort (the zero value: a front end's default) */
	AVFS_TRACE_RT,		/* "rt": it had a deadline */
	AVFS_TRACE_META,	/* "meta": file system metadata (commits) */
	AVFS_TRACE_HP,		/* "hp": the preemption study's high-priority probe */
	AVFS_TRACE_NCLASS,
};
extern const char *const avfs_trace_class_names[AVFS_TRACE_NCLASS];

struct avfs_trace_rec {
	int64_t submit_ns;	/* reached the scheduler */
	int64_t complete_ns;	/* completed or failed */
	int64_t stream;		/* -1: no stream */
	enum avfs_trace_class cls;
	bool write;
	uint64_t offset, length;	/* device bytes */
	int64_t deadline_ns;	/* 0: best effort */
	int result;		/* 0 or -errno */
	int64_t service_ns;	/* its commands' time on the device; -1: unknown (an old trace) */
};

/* The columns, in order; the last (service_ns) may be missing in older traces. */
#define AVFS_TRACE_COLUMNS 10
extern const char *const avfs_trace_columns[AVFS_TRACE_COLUMNS];
/* Longest line the writer makes, with its newline. */
#define AVFS_TRACE_LINE_MAX 192

/* The header line, with its newline, into buf; its length (or what it would be). */
size_t avfs_trace_header(char *buf, size_t len);
/* One record as a line, with its newline; its length (or what it would be). */
size_t avfs_trace_format(const struct avfs_trace_rec *r, char *buf, size_t len);
/* Check a header line (its newline removed): the number of columns it has (AVFS_TRACE_COLUMNS,
 * or one less for an old trace), or -EINVAL. */
int avfs_trace_parse_header(const char *line);
/* Parse one data line (its newline removed; changed in place) of a trace of ncols columns.
 * 0, or -EINVAL with the reason in why. */
int avfs_trace_parse(char *line, int ncols, struct avfs_trace_rec *r, char *why, size_t whylen);

#endif

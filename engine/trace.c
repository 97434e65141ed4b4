/*
 * trace.c — the request trace's one column table: the line the engine writes and the parser
 * avfs-admin plot reads it with (docs/TRACE.md). Text only; where lines go is the caller's.
 */
#include "trace.h"

#include "why.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *const avfs_trace_class_names[AVFS_TRACE_NCLASS] = { "be", "rt", "meta", "hp" };

const char *const avfs_trace_columns[AVFS_TRACE_COLUMNS] = {
	"submit_ns", "complete_ns", "stream", "class", "dir", "offset", "length", "deadline_ns",
	"result", "service_ns",
};

enum { C_SUBMIT, C_COMPLETE, C_STREAM, C_CLASS, C_DIR, C_OFFSET, C_LENGTH, C_DEADLINE,
       C_RESULT, C_SERVICE };

size_t avfs_trace_header(char *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < AVFS_TRACE_COLUMNS; i++) {
		size_t k = strlen(avfs_trace_columns[i]);

		if (buf && n + k + 1 < len) {
			memcpy(buf + n, avfs_trace_columns[i], k);
			buf[n + k] = i + 1 < AVFS_TRACE_COLUMNS ? ',' : '\n';
			buf[n + k + 1] = 0;
		}
		n += k + 1;
	}
	return n;
}

size_t avfs_trace_format(const struct avfs_trace_rec *r, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%s,%" PRIu64 ",%" PRIu64
			 ",%" PRId64 ",%d,%" PRId64 "\n", r->submit_ns, r->complete_ns, r->stream,
			 avfs_trace_class_names[r->cls < AVFS_TRACE_NCLASS ? r->cls : AVFS_TRACE_BE],
			 r->write ? "w" : "r", r->offset, r->length, r->deadline_ns, r->result,
			 r->service_ns);

	return n < 0 ? 0 : (size_t)n;
}

int avfs_trace_parse_header(const char *line)
{
	size_t n = 0;

	for (int i = 0; i < AVFS_TRACE_COLUMNS; i++) {
		size_t k = strlen(avfs_trace_columns[i]);

		if (i && line[n] == '\0' && i == AVFS_TRACE_COLUMNS - 1)
			return i;	/* an older trace, without service_ns */
		if (i && line[n++] != ',')
			return -EINVAL;
		if (strncmp(line + n, avfs_trace_columns[i], k))
			return -EINVAL;
		n += k;
	}
	return line[n] ? -EINVAL : AVFS_TRACE_COLUMNS;
}

/* A decimal integer filling all of s; 0 or -EINVAL (not one) or -ERANGE. */
static int parse_i64(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	uint64_t v = 0;
	const char *p = s + neg;

	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

int avfs_trace_parse(char *line, int ncols, struct avfs_trace_rec *r, char *why, size_t whylen)
{
	char *f[AVFS_TRACE_COLUMNS];
	int64_t v[AVFS_TRACE_COLUMNS] = { 0 };
	size_t n = 1;
	int i, err;

	if (ncols != AVFS_TRACE_COLUMNS && ncols != AVFS_TRACE_COLUMNS - 1)
		return -EINVAL;
	f[0] = line;
	for (char *p = line; *p; p++) {
		if (*p != ',')
			continue;
		if (n < AVFS_TRACE_COLUMNS)
			f[n] = p + 1;
		n++;
		*p = '\0';
	}
	if (n != (size_t)ncols) {
		avfs_why(why, whylen, "expected %d comma-separated fields, found %zu", ncols, n);
		return -EINVAL;
	}
	for (i = 0; i < ncols; i++) {
		if (i == C_CLASS || i == C_DIR)
			continue;
		err = parse_i64(f[i], &v[i]);
		if (err) {
			avfs_why(why, whylen, "%s '%.40s' is not %s", avfs_trace_columns[i], f[i],
			    err == -ERANGE ? "a 64-bit integer" : "an integer");
			return -EINVAL;
		}
	}
	for (i = 0; i < AVFS_TRACE_NCLASS && strcmp(f[C_CLASS], avfs_trace_class_names[i]); i++)
		;
	if (i == AVFS_TRACE_NCLASS) {
		avfs_why(why, whylen, "class '%.40s' is none of rt, be, meta, hp", f[C_CLASS]);
		return -EINVAL;
	}
	r->cls = (enum avfs_trace_class)i;
	if (strcmp(f[C_DIR], "r") && strcmp(f[C_DIR], "w")) {
		avfs_why(why, whylen, "dir '%.40s' is neither r nor w", f[C_DIR]);
		return -EINVAL;
	}
	r->write = !strcmp(f[C_DIR], "w");
	r->submit_ns = v[C_SUBMIT];
	r->complete_ns = v[C_COMPLETE];
	r->stream = v[C_STREAM];
	r->deadline_ns = v[C_DEADLINE];
	r->service_ns = ncols == AVFS_TRACE_COLUMNS ? v[C_SERVICE] : -1;
	if (ncols == AVFS_TRACE_COLUMNS && (r->service_ns < 0 || r->service_ns > r->complete_ns)) {
		avfs_why(why, whylen, "service_ns %" PRId64 " is negative or before the clock's start",
		    r->service_ns);
		return -EINVAL;
	}
	if (r->submit_ns < 0) {
		avfs_why(why, whylen, "submit_ns %" PRId64 " is negative", r->submit_ns);
		return -EINVAL;
	}
	if (r->complete_ns < r->submit_ns) {
		avfs_why(why, whylen, "complete_ns %" PRId64 " is before submit_ns %" PRId64,
		    r->complete_ns, r->submit_ns);
		return -EINVAL;
	}
	if (r->stream < -1 || r->stream > INT32_MAX) {
		avfs_why(why, whylen, "stream %" PRId64 " is out of range (-1 or a stream id >= 0)",
		    r->stream);
		return -EINVAL;
	}
	if (v[C_OFFSET] < 0 || v[C_LENGTH] < 0 || v[C_LENGTH] > INT64_MAX - v[C_OFFSET]) {
		avfs_why(why, whylen, "offset %" PRId64 " + length %" PRId64 " is out of range",
		    v[C_OFFSET], v[C_LENGTH]);
		return -EINVAL;
	}
	r->offset = (uint64_t)v[C_OFFSET];
	r->length = (uint64_t)v[C_LENGTH];
	if (r->deadline_ns < 0 || (r->cls == AVFS_TRACE_RT && r->deadline_ns == 0)) {
		avfs_why(why, whylen, "deadline_ns %" PRId64 " is invalid%s", r->deadline_ns,
		    r->cls == AVFS_TRACE_RT ? " for an rt request" : "");
		return -EINVAL;
	}
	if (v[C_RESULT] > 0 || v[C_RESULT] < -4095) {
		avfs_why(why, whylen, "result %" PRId64 " is neither 0 nor -errno", v[C_RESULT]);
		return -EINVAL;
	}
	r->result = (int)v[C_RESULT];
	return 0;
}

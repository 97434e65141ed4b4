/*
 * admin_prom.c — `avfs-admin stats --prometheus`: the daemon's statistics (the stats JSON of
 * docs/ADMIN.md) in Prometheus's text exposition format (version 0.0.4), for node-exporter's
 * textfile collector or a scrape. Every sample carries the device and the mount point as
 * labels, so that several daemons' files can sit side by side; per-reservation samples add the
 * reservation's id, uid, inode and direction. It only translates: the figures are the
 * daemon's, counted since its start or the last `avfs-admin reset`.
 */
#include "admin.h"

#include "jsonout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One metric family: name, type, help, the member of the document (or of a reservation) that
 * holds it, and the factor that brings it to Prometheus's base units (seconds, bytes, ratios). */
struct family {
	const char *name, *type, *help, *path;
	double scale;
};

static const struct family daemon_families[] = {
	{ "avfs_measured_seconds", "gauge", "Time the statistics cover (since start or reset).",
	  "uptime_s", 1 },
	{ "avfs_disk_utilization_ratio", "gauge", "Share of the time the disk was busy.",
	  "disk_utilization", 1 },
	{ "avfs_rt_requests_total", "counter", "Real-time requests completed.", "rt.requests", 1 },
	{ "avfs_rt_misses_total", "counter", "Real-time requests that completed after their "
	  "deadline.", "rt.misses", 1 },
	{ "avfs_rt_etime_total", "counter", "Real-time requests failed with ETIME (dropped "
	  "unserved past their deadline).", "rt.etime", 1 },
	{ "avfs_rt_miss_ratio", "gauge", "P0: misses per real-time request.", "rt.p0", 1 },
	{ "avfs_be_requests_total", "counter", "Best-effort requests completed.", "be.requests", 1 },
	{ "avfs_be_bytes_total", "counter", "Best-effort bytes moved.", "be.bytes", 1 },
	{ "avfs_commands_total", "counter", "Commands sent to the disk.", "commands", 1 },
	{ "avfs_wait_expected_seconds", "gauge", "E(T_wait): the expected wait of a high-priority "
	  "request for the command in service (papers/003 eq. 2).", "e_twait_ms", 1e-3 },
	{ "avfs_queue_pending", "gauge", "Requests waiting in the scheduler.", "queue.pending", 1 },
	{ "avfs_queue_pending_max", "gauge", "Most requests waiting at once.", "queue.max_pending",
	  1 },
	{ "avfs_queue_inflight", "gauge", "Commands on the disk.", "queue.inflight", 1 },
	{ "avfs_retention_deleted_total", "counter", "Files retention deleted (per-directory "
	  "high-water marks).", "retention.deleted", 1 },
	{ "avfs_retention_deleted_bytes_total", "counter", "Bytes those files held.",
	  "retention.deleted_bytes", 1 },
	{ "avfs_retention_failed_total", "counter", "Deletions retention tried that failed.",
	  "retention.failed", 1 },
	{ "avfs_quota_edquot_total", "counter", "Operations refused with EDQUOT (per-directory "
	  "quotas).", "retention.edquot", 1 },
};

/* The completion margin (deadline minus completion) at quantiles: min, 0.1 %, 1 %, median. */
static const struct {
	const char *q, *key;
} margin_q[] = { { "0", "min" }, { "0.001", "p001" }, { "0.01", "p01" }, { "0.5", "p50" } };

static const struct family stream_families[] = {
	{ "avfs_stream_rate_bytes_per_second", "gauge", "The reservation's rate.", "rate", 1 },
	{ "avfs_stream_buffer_bytes", "gauge", "The reservation's buffer.", "buffer", 1 },
	{ "avfs_stream_utilization_ratio", "gauge", "Disk time the reservation holds.",
	  "utilization", 1 },
	{ "avfs_stream_utilization_padded_ratio", "gauge", "Disk time held, with admission's "
	  "padding.", "utilization_padded", 1 },
	{ "avfs_stream_requests_total", "counter", "Real-time requests of the reservation.",
	  "requests", 1 },
	{ "avfs_stream_misses_total", "counter", "Its requests completed after their deadline.",
	  "misses", 1 },
	{ "avfs_stream_bytes_total", "counter", "Bytes moved for the reservation.", "bytes", 1 },
};

/* A label value with the format's escapes: backslash, double quote, newline. */
static void label(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void value(FILE *f, double v)
{
	if (isnan(v))
		fputs(" NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
	else
		fprintf(f, " %.17g\n", v);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels every sample has, and a reservation's. */
static void labels(FILE *f, json_object *doc, json_object *s, const char *q)
{
	char n[32];

	fputc('{', f);
	label(f, "device", avfs_json_str(doc, "device"), true);
	label(f, "mountpoint", avfs_json_str(doc, "mountpoint"), false);
	if (s) {
		snprintf(n, sizeof(n), "%.0f", avfs_json_num(s, "id"));
		label(f, "id", n, false);
		snprintf(n, sizeof(n), "%.0f", avfs_json_num(s, "uid"));
		label(f, "uid", n, false);
		if (*avfs_json_str(s, "inode"))	/* hidden from other users than its own */
			label(f, "inode", avfs_json_str(s, "inode"), false);
		label(f, "direction", avfs_json_str(s, "direction"), false);
	}
	if (q)
		label(f, "quantile", q, false);
	fputc('}', f);
}

static void margins(FILE *f, const char *name, json_object *doc, json_object *s, json_object *m)
{
	for (size_t i = 0; i < sizeof(margin_q) / sizeof(margin_q[0]); i++) {
		json_object *v = avfs_json_get(m, margin_q[i].key);

		if (!v)
			continue;
		fputs(name, f);
		labels(f, doc, s, margin_q[i].q);
		/* the daemon writes a failed request's "minus forever" as -1e9 ms */
		value(f, json_object_get_double(v) <= -1e9 ? -INFINITY :
		      json_object_get_double(v) / 1e3);
	}
}

int admin_prometheus(FILE *f, json_object *doc)
{
	json_object *streams = avfs_json_get(doc, "streams");
	size_t n = streams && json_object_is_type(streams, json_type_array) ?
		   json_object_array_length(streams) : 0;

	for (size_t i = 0; i < sizeof(daemon_families) / sizeof(daemon_families[0]); i++) {
		const struct family *fam = &daemon_families[i];
		json_object *v = avfs_json_get(doc, fam->path);

		if (!v)
			continue;
		head(f, fam->name, fam->type, fam->help);
		fputs(fam->name, f);
		labels(f, doc, NULL, NULL);
		value(f, json_object_get_double(v) * fam->scale);
	}
	head(f, "avfs_rt_margin_seconds", "gauge", "Completion margin of real-time requests "
	     "(deadline minus completion; negative: a miss) at quantiles; 0 is the smallest.");
	margins(f, "avfs_rt_margin_seconds", doc, NULL, avfs_json_get(doc, "rt.margin_ms"));
	head(f, "avfs_streams", "gauge", "Reservations admitted.");
	fputs("avfs_streams", f);
	labels(f, doc, NULL, NULL);
	value(f, (double)n);
	for (size_t i = 0; n && i < sizeof(stream_families) / sizeof(stream_families[0]); i++) {
		const struct family *fam = &stream_families[i];

		head(f, fam->name, fam->type, fam->help);
		for (size_t k = 0; k < n; k++) {
			json_object *s = json_object_array_get_idx(streams, k);
			json_object *v = avfs_json_get(s, fam->path);

			if (!v || json_object_is_type(v, json_type_null))
				continue;
			fputs(fam->name, f);
			labels(f, doc, s, NULL);
			value(f, json_object_get_double(v) * fam->scale);
		}
	}
	if (n) {
		head(f, "avfs_stream_margin_seconds", "gauge", "Completion margin of the "
		     "reservation's requests at quantiles; 0 is the smallest.");
		for (size_t k = 0; k < n; k++) {
			json_object *s = json_object_array_get_idx(streams, k);

			margins(f, "avfs_stream_margin_seconds", doc, s,
				avfs_json_get(s, "margin_ms"));
		}
	}
	return fflush(f) || ferror(f) ? 1 : 0;
}

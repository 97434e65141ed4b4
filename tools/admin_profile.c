/*
 * admin_profile.c — `avfs-admin profile DEVICE` (SPEC §6.4): opens a simulated disk (sim:MODEL,
 * virtual time) or a block device / image file (io_uring, O_DIRECT, read-only), runs the
 * profiler of disk/profile.c, prints the result as a table or as JSON and can keep it in a file.
 * The measuring is all in disk/profile.c; this file parses, opens, prints.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "disk.h"
#include "hddmodel.h"
#include "iosched.h"
#include "profile.h"
#include "simdisk.h"
#include "simengine.h"

#define MB 1e6
#define MS 1e6	/* ns per ms */

static void usage(FILE *f)
{
	const char *const *m = avfs_hdd_model_names();

	fprintf(f,
		"usage: avfs-admin profile [--json] [--quick] [--seed N] [--out FILE] DEVICE\n"
		"\n"
		"Measure a disk for the service-time model and chunking (SPEC §6.4, papers/003 §3.4):\n"
		"sequential read throughput against request size and the chunk size chosen from it\n"
		"(the smallest within 1%% of the best), the transfer rate from the outer to the inner\n"
		"edge, the rotation period, the seek curve and the command overhead. The profiler only\n"
		"reads: it never writes to DEVICE. On a non-rotational device it skips the mechanics.\n"
		"\n"
		"  DEVICE        a block device or image file (io_uring, O_DIRECT, real time), or\n"
		"                sim:MODEL for a simulated disk in virtual time; MODEL one of:\n"
		"               ");
	for (; *m; m++)
		fprintf(f, " %s", *m);
	fprintf(f, "\n"
		"  --json        machine-readable output (keys below)\n"
		"  --quick       fewer samples: for CI, and minutes rather than many on a real disk\n"
		"  --seed N      the profiler's random choices and, for sim:, the model's seed\n"
		"  --out FILE    also write the profile, as the JSON below, to FILE\n"
		"  --no-map      sim: only: measure without the model's block mapping, with seek\n"
		"                distances in bytes, as on a real disk\n"
		"\n"
		"JSON keys (stable; times in ms, rates in MB/s = 1e6 bytes/s, null when not measured):\n"
		"  device, backend (sim|uring), capacity_bytes, logical_block_bytes, rotational (as the\n"
		"  device or model says), quick, seed, time (virtual|real), elapsed_s, requests,\n"
		"  chunk_mbs [{bytes, mbs}], chunk_bytes, chunk_max_mbs,\n"
		"  rate_mbs [{offset_bytes, offset_gb, mbs}], outer_rate_mbs, inner_rate_mbs,\n"
		"  random_4k_ms (mean, queue depth 1), rotation_measured (a rotational timing was\n"
		"  found), rotation_ms, rpm, rotational_latency_ms, overhead_ms, seek_unit\n"
		"  (cylinders|bytes), cylinders, seek_ms {track, third, full, mean},\n"
		"  seek_curve [{distance, fraction, ms}],\n"
		"  svc_model {tr_ns, tk_ns, dmax, dmin, lmax} (struct avfs_svc_model, SPEC §5.2;\n"
		"  dmax/dmin in bytes/s, lmax in bytes).\n"
		"Exit status: 0 done, 1 failed (no such device, unknown model, too small, I/O error),\n"
		"2 bad usage.\n");
}

struct target {
	const char *name;
	bool sim;
	struct avfs_sim_engine *eng;
	struct avfs_disk *d;
};

/* Open DEVICE. 0, or 1 with the reason printed. */
static int open_target(struct target *t, uint64_t seed)
{
	int err;

	if (!strncmp(t->name, "sim:", 4)) {
		const char *model = t->name + 4;
		struct avfs_hdd_params hp;

		t->sim = true;
		if (avfs_hdd_params_lookup(model, &hp)) {
			const char *const *m = avfs_hdd_model_names();

			fprintf(stderr, "avfs-admin: profile: unknown disk model '%s' (models:", model);
			for (; *m; m++)
				fprintf(stderr, " %s", *m);
			fprintf(stderr, ")\n");
			return 1;
		}
		err = avfs_sim_engine_new(&t->eng);
		if (!err)
			err = avfs_simdisk_open_model(t->eng, model, seed, AVFS_SIMDISK_NODATA, &t->d);
		if (err) {
			fprintf(stderr, "avfs-admin: profile: cannot open the simulated disk %s: %s\n",
				model, strerror(-err));
			return 1;
		}
		/* timing only: reads need not even clear the buffer */
		avfs_simdisk_nostore(t->d, 0, t->d->info.size);
		return 0;
	}
	/* read-only: the backend refuses a write at submit, whatever the code above it does */
	err = avfs_uring_open(t->name, AVFS_URING_RDONLY, 4, &t->d);
	if (err) {
		const char *why = strerror(-err);

		if (err == -EINVAL)
			why = "not an image file or block device (or its file system has no O_DIRECT)";
		fprintf(stderr, "avfs-admin: profile: cannot open %s: %s\n", t->name, why);
		return 1;
	}
	return 0;
}

static void progress(void *arg, const char *step, unsigned done, unsigned total)
{
	(void)arg;
	fprintf(stderr, "\r  profiling: %-34s %3u%%", step, (unsigned)((uint64_t)done * 100 / total));
	fflush(stderr);
}

static const char *size_str(uint64_t b, char *buf, size_t len)
{
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
	return buf;
}

static void model_of(const struct avfs_profile *r, struct avfs_svc_model *m)
{
	*m = (struct avfs_svc_model){ .tr_ns = r->tr_ns, .tk_ns = r->tk_ns, .dmax = r->dmax,
				      .dmin = r->dmin, .lmax = r->lmax };
}

static void print_text(const struct target *t, const struct avfs_profile *r)
{
	struct avfs_svc_model m;
	char b1[32];
	double pred = 0;

	printf("avfs-admin profile: %s (%s), %.2f GB, %u-byte blocks, %s\n", t->name,
	       t->d->info.model, (double)r->capacity / 1e9, r->lbs,
	       r->rotational ? "rotational" : "non-rotational");
	printf("  %" PRIu64 " reads in %.1f s of %s time; the profiler never writes\n", r->requests,
	       (double)r->elapsed_ns / 1e9, t->sim ? "virtual" : "real");

	if (r->nchunk) {
		printf("\nsequential read throughput against request size (queue depth 1)\n");
		printf("  %10s %10s %8s\n", "request", "MB/s", "of best");
		for (unsigned i = 0; i < r->nchunk; i++)
			printf("  %10s %10.2f %7.1f%%%s\n", size_str(r->chunk_size[i], b1, sizeof(b1)),
			       r->chunk_rate[i] / MB, 100 * r->chunk_rate[i] / r->chunk_max_rate,
			       r->chunk_size[i] == r->chunk ? "  <- chunk size" : "");
		printf("  chunk size %s: the smallest within 1%% of the best (%.2f MB/s)\n",
		       size_str(r->chunk, b1, sizeof(b1)), r->chunk_max_rate / MB);
	}

	printf("\ntransfer rate across the disk (outer edge first)\n");
	printf("  %12s %10s\n", "offset GB", "MB/s");
	for (unsigned i = 0; i < r->nrate; i++)
		printf("  %12.2f %10.2f\n", (double)r->rate_off[i] / 1e9, r->rate[i] / MB);
	printf("  outer %.2f MB/s, inner %.2f MB/s\n", r->outer / MB, r->inner / MB);

	printf("\naccess\n");
	if (r->nrandom)
		printf("  %-30s %10.3f ms (mean over %u, queue depth 1)\n", "random 4 KiB read",
		       r->random_ns / MS, r->nrandom);
	if (!r->rotational) {
		printf("  non-rotational device: no rotation or seek curve to measure\n");
	} else if (!r->rot_measured) {
		printf("  rotational by its own account, but no rotational timing shows through (a\n"
		       "  cache, a sparse or cached image, a virtual disk): rotation and seeks skipped\n");
	} else {
		printf("  %-30s %10.3f ms (%.0f rpm)\n", "rotation period", r->rotation_ns / MS,
		       60e9 / r->rotation_ns);
		printf("  %-30s %10.3f ms\n", "mean rotational latency", r->rot_latency_ns / MS);
		printf("  %-30s %10.3f ms\n", "command overhead", r->overhead_ns / MS);
		printf("\nseek curve (minimum over random rotational phases, overhead and transfer\n"
		       "taken out; distance in %s)\n", r->mapped ? "cylinders" : "bytes");
		printf("  %14s %9s %10s\n", "distance", "stroke", "ms");
		for (unsigned i = 0; i < r->nseek; i++)
			printf("  %14" PRIu64 " %8.2f%% %10.3f\n", r->seek_dist[i],
			       100 * r->seek_frac[i], r->seek_ns[i] / MS);
		printf("  %-30s %10.3f ms\n", r->mapped ? "track-to-track (1 cylinder)" :
		       "short (two turns' worth back)", r->seek_track_ns / MS);
		printf("  %-30s %10.3f ms\n", "1/3 stroke", r->seek_third_ns / MS);
		printf("  %-30s %10.3f ms\n", "full stroke", r->seek_full_ns / MS);
		printf("  %-30s %10.3f ms\n", "mean (random LBA pairs)", r->seek_mean_ns / MS);
	}

	model_of(r, &m);
	printf("\nservice-time model (SPEC §5.2, struct avfs_svc_model)\n");
	printf("  %-8s %16.0f ns   rotation period T_r\n", "tr_ns", m.tr_ns);
	printf("  %-8s %16.0f ns   %s\n", "tk_ns", m.tk_ns,
	       r->rot_measured ? "mean seek T_k" : "mean access latency (no mechanics)");
	printf("  %-8s %16.0f B/s  rate at LBA 0\n", "dmax", m.dmax);
	printf("  %-8s %16.0f B/s  rate at the end\n", "dmin", m.dmin);
	printf("  %-8s %16" PRIu64 " B    device size\n", "lmax", m.lmax);
	if (r->nrandom && m.dmax > 0 && m.dmin > 0) {
		/* the model's mean random 4 KiB read (taken at mid-disk), against the measurement */
		pred = avfs_svc_time(&m, m.lmax / 2, r->io, false);
		printf("  check: T_S(random %u B) %.3f ms by the model, %.3f ms measured\n", r->io,
		       pred / MS, r->random_ns / MS);
		if (r->rot_measured)
			printf("  (the model leaves out the command overhead: %.3f ms here)\n",
			       r->overhead_ns / MS);
	}
}

static void json_ms(FILE *f, const char *key, bool valid, double ns, const char *sep)
{
	if (valid)
		fprintf(f, "\"%s\": %.4f%s", key, ns / MS, sep);
	else
		fprintf(f, "\"%s\": null%s", key, sep);
}

static void print_json(FILE *f, const struct target *t, const struct avfs_profile *r, bool quick,
		       uint64_t seed)
{
	bool mech = r->rot_measured;
	struct avfs_svc_model m;

	model_of(r, &m);
	fprintf(f, "{\"device\": \"");
	for (const char *c = t->name; *c; c++)	/* a path is the one free-form string here */
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if ((unsigned char)*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	fprintf(f, "\", \"backend\": \"%s\", \"capacity_bytes\": %" PRIu64
		", \"logical_block_bytes\": %u, \"rotational\": %s, \"quick\": %s, \"seed\": %" PRIu64
		", \"time\": \"%s\", \"elapsed_s\": %.3f, \"requests\": %" PRIu64 ",\n",
		t->sim ? "sim" : "uring", r->capacity, r->lbs, r->rotational ? "true" : "false",
		quick ? "true" : "false", seed, t->sim ? "virtual" : "real",
		(double)r->elapsed_ns / 1e9, r->requests);
	fprintf(f, " \"chunk_mbs\": [");
	for (unsigned i = 0; i < r->nchunk; i++)
		fprintf(f, "%s{\"bytes\": %u, \"mbs\": %.3f}", i ? ", " : "", r->chunk_size[i],
			r->chunk_rate[i] / MB);
	fprintf(f, "], \"chunk_bytes\": %u, \"chunk_max_mbs\": %.3f,\n", r->chunk,
		r->chunk_max_rate / MB);
	fprintf(f, " \"rate_mbs\": [");
	for (unsigned i = 0; i < r->nrate; i++)
		fprintf(f, "%s{\"offset_bytes\": %" PRIu64 ", \"offset_gb\": %.3f, \"mbs\": %.3f}",
			i ? ", " : "", r->rate_off[i], (double)r->rate_off[i] / 1e9, r->rate[i] / MB);
	fprintf(f, "],\n \"outer_rate_mbs\": %.3f, \"inner_rate_mbs\": %.3f, ", r->outer / MB,
		r->inner / MB);
	json_ms(f, "random_4k_ms", r->nrandom, r->random_ns, ",\n");
	fprintf(f, " \"rotation_measured\": %s, ", mech ? "true" : "false");
	json_ms(f, "rotation_ms", mech, r->rotation_ns, ", ");
	if (mech)
		fprintf(f, "\"rpm\": %.1f, ", 60e9 / r->rotation_ns);
	else
		fprintf(f, "\"rpm\": null, ");
	json_ms(f, "rotational_latency_ms", mech, r->rot_latency_ns, ", ");
	json_ms(f, "overhead_ms", mech, r->overhead_ns, ",\n");
	if (mech) {
		fprintf(f, " \"seek_unit\": \"%s\", ", r->mapped ? "cylinders" : "bytes");
		if (r->mapped)
			fprintf(f, "\"cylinders\": %u, ", r->ncyl);
		else
			fprintf(f, "\"cylinders\": null, ");
		fprintf(f, "\"seek_ms\": {\"track\": %.4f, \"third\": %.4f, \"full\": %.4f, "
			"\"mean\": %.4f},\n", r->seek_track_ns / MS, r->seek_third_ns / MS,
			r->seek_full_ns / MS, r->seek_mean_ns / MS);
	} else {
		fprintf(f, " \"seek_unit\": null, \"cylinders\": null, \"seek_ms\": null,\n");
	}
	fprintf(f, " \"seek_curve\": [");
	for (unsigned i = 0; mech && i < r->nseek; i++)
		fprintf(f, "%s{\"distance\": %" PRIu64 ", \"fraction\": %.6f, \"ms\": %.4f}",
			i ? ", " : "", r->seek_dist[i], r->seek_frac[i], r->seek_ns[i] / MS);
	fprintf(f, "],\n \"svc_model\": {\"tr_ns\": %.0f, \"tk_ns\": %.0f, \"dmax\": %.0f, "
		"\"dmin\": %.0f, \"lmax\": %" PRIu64 "}}\n", m.tr_ns, m.tk_ns, m.dmax, m.dmin, m.lmax);
}

int admin_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ "seed", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "no-map", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct avfs_profile_opts po = { .seed = 1 };
	struct avfs_profile_clock clk;
	struct avfs_profile_geom geom, *g = NULL;
	struct avfs_profile *r = NULL;
	struct target t = { 0 };
	const char *out = NULL;
	bool json = false, no_map = false;
	int c, err, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'q': po.quick = true; break;
		case 'o': out = optarg; break;
		case 'n': no_map = true; break;
		case 's': {
			char *end;

			errno = 0;
			po.seed = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg || *optarg == '-') {
				fprintf(stderr, "avfs-admin: profile: --seed: not a number: '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "avfs-admin: profile: %s\n",
			optind >= argc ? "say which DEVICE" : "one DEVICE only");
		usage(stderr);
		return 2;
	}
	t.name = argv[optind];
	if (no_map && strncmp(t.name, "sim:", 4)) {
		fprintf(stderr, "avfs-admin: profile: --no-map is for sim:MODEL only\n");
		return 2;
	}
	if (open_target(&t, po.seed))
		goto out;
	if (t.d->info.size < AVFS_PROFILE_MIN_BYTES) {
		fprintf(stderr, "avfs-admin: profile: %s is too small to profile: %" PRIu64
			" bytes (at least %llu MiB)\n", t.name, t.d->info.size,
			AVFS_PROFILE_MIN_BYTES >> 20);
		goto out;
	}
	if (t.sim) {
		avfs_profile_sim_env(t.d, &clk, &geom);
		g = no_map || !geom.ncyl ? NULL : &geom;
	} else {
		avfs_profile_real_clock(&clk);
	}
	if (isatty(2)) {	/* SPEC §10: progress on a terminal, quiet otherwise */
		po.progress = progress;
		if (!t.sim)
			fprintf(stderr, "avfs-admin: profiling %s (%s) in real time%s\n", t.name,
				t.d->info.rotational ? "rotational" : "non-rotational",
				po.quick ? "" : "; --quick takes a fraction of the time");
	}
	r = malloc(sizeof(*r));
	err = r ? avfs_profile_run(t.d, &clk, g, &po, r) : -ENOMEM;
	if (po.progress)
		fprintf(stderr, "\r%-60s\r", "");
	if (err) {
		fprintf(stderr, "avfs-admin: profile: %s: %s\n", t.name,
			err == -ENOSPC ? "too small to profile" : strerror(-err));
		goto out;
	}
	if (out) {
		FILE *f = fopen(out, "w");

		if (!f) {
			fprintf(stderr, "avfs-admin: profile: cannot write %s: %s\n", out, strerror(errno));
			goto out;
		}
		print_json(f, &t, r, po.quick, po.seed);
		if (fclose(f)) {
			fprintf(stderr, "avfs-admin: profile: cannot write %s: %s\n", out, strerror(errno));
			goto out;
		}
	}
	if (json)
		print_json(stdout, &t, r, po.quick, po.seed);
	else
		print_text(&t, r);
	ret = 0;
out:
	free(r);
	avfs_disk_close(t.d);
	avfs_sim_engine_free(t.eng);
	return ret;
}

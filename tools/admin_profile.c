/*
 * admin_profile.c — `avfs-admin profile DEVICE` (SPEC §6.4): opens a simulated disk (sim:MODEL,
 * virtual time) or a block device / image file through a backend of avfs_disk_open (read-only
 * unless --write, which it allows only on a scratch device), runs the profiler of
 * disk/profile.c, prints the result as a table or as JSON and can keep it in a file. The
 * measuring is all in disk/profile.c; this file parses, opens, guards, prints.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "clock.h"
#include "disk.h"
#include "format.h"
#include "fs.h"
#include "hddmodel.h"
#include "iosched.h"
#include "jsonout.h"
#include "lock.h"
#include "profile.h"
#include "profile_json.h"
#include "progress.h"
#include "signature.h"
#include "simdisk.h"
#include "simengine.h"
#include "units.h"

#define MB 1e6
#define MS 1e6	/* ns per ms */

static void usage(FILE *f)
{
	const char *const *m = avfs_hdd_model_names();

	fprintf(f,
		"usage: avfs-admin profile [--json] [--quick] [--seed N] [--out FILE] [--quiet]\n"
		"                          [--backend auto|uring|sg|nvme] [--write [--force]] DEVICE\n"
		"\n"
		"Measure a disk for the service-time model and chunking (SPEC §6.4, papers/003 §3.4):\n"
		"sequential read throughput against request size and the chunk size chosen from it\n"
		"(the smallest within 1%% of the best), the transfer rate from the outer to the inner\n"
		"edge, the rotation period, the seek curve and the command overhead. The profiler only\n"
		"reads unless --write is given. On a non-rotational device it skips the mechanics.\n"
		"\n"
		"  DEVICE        a block device or image file (real time), or sim:MODEL for a\n"
		"                simulated disk in virtual time; MODEL one of:\n"
		"               ");
	for (; *m; m++)
		fprintf(f, " %s", *m);
	fprintf(f, "\n"
		"  --backend B   how to reach a block device (default auto): uring (io_uring,\n"
		"                O_DIRECT: any block device or image file), sg (SCSI commands over\n"
		"                SG_IO: a SCSI disk, its sg or bsg node), nvme (NVMe passthrough: an\n"
		"                NVMe namespace), auto (io_uring). Whatever the backend, the device's\n"
		"                identification is shown where it gives one (SCSI INQUIRY and VPD\n"
		"                pages, NVMe Identify)\n"
		"  --json        machine-readable output (keys below)\n"
		"  --quick       fewer samples: for CI, and minutes rather than many on a real disk\n"
		"  --seed N      the profiler's random choices and, for sim:, the model's seed\n"
		"  --out FILE    also write the profile, as the JSON below, to FILE (for mkfs.avfs\n"
		"                --profile FILE, which stores its svc_model in the superblock)\n"
		"  --quiet       no progress (otherwise, when stderr is a terminal, one line\n"
		"                'profile: STEP DONE/TOTAL' redrawn five times a second)\n"
		"  --no-map      sim: only: measure without the model's block mapping, with seek\n"
		"                distances in bytes, as on a real disk\n"
		"  --write       also measure writes, after the reads: sequential write throughput\n"
		"                against request size and the write rate at a few points across the\n"
		"                disk, each run ended by a flush. DESTROYS DATA: it overwrites the\n"
		"                first 128 MiB (512 MiB without --quick) and a span at each point.\n"
		"                Refused (exit 1, nothing written) on a device holding an AVFS file\n"
		"                system (primary or backup superblock), another file system (ext2/3/4,\n"
		"                XFS, btrfs, FAT, NTFS, ISO 9660, swap, LUKS, LVM2) or a partition\n"
		"                table (MBR with a used entry, GPT); always allowed on sim:\n"
		"  --force       with --write: write even over what was recognised\n"
		"\n"
		"JSON keys (stable; times in ms, rates in MB/s = 1e6 bytes/s, null when not measured):\n"
		"  device, backend (sim|uring|sg|nvme), ident {transport (scsi|nvme), vendor, product,\n"
		"  serial, firmware, lba_format (each \"\" when the device gave none), write_cache (null\n"
		"  when unknown), max_transfer (bytes one command may carry, 0 unknown), rotation_rate\n"
		"  (0 not reported, 1 non-rotating, else rpm)}, capacity_bytes, logical_block_bytes,\n"
		"  rotational (as the device or model says), quick, seed, time (virtual|real),\n"
		"  elapsed_s, requests (commands of every kind), writes (of them),\n"
		"  chunk_mbs [{bytes, mbs}], chunk_bytes, chunk_max_mbs,\n"
		"  rate_mbs [{offset_bytes, offset_gb, mbs}], outer_rate_mbs, inner_rate_mbs,\n"
		"  random_4k_ms (mean, queue depth 1), rotation_measured (a rotational timing was\n"
		"  found), rotation_ms, rpm, rotational_latency_ms, overhead_ms, seek_unit\n"
		"  (cylinders|bytes), cylinders, seek_ms {track, third, full, mean},\n"
		"  seek_curve [{distance, fraction, ms}],\n"
		"  write (--write given), write_chunk_mbs [{bytes, mbs}], write_chunk_bytes,\n"
		"  write_chunk_max_mbs, write_rate_mbs [{offset_bytes, offset_gb, mbs}] (without\n"
		"  --write: [] and null),\n"
		"  svc_model {tr_ns, tk_ns, dmax, dmin, lmax} (struct avfs_svc_model, SPEC §5.2;\n"
		"  dmax/dmin in bytes/s, lmax in bytes).\n"
		"Exit status: 0 done, 1 failed (no such device, unknown model, too small, I/O error,\n"
		"--write refused), 2 bad usage.\n");
}

struct target {
	const char *name;
	bool sim;
	enum avfs_backend backend;	/* asked for (real devices) */
	bool write;			/* open for writing */
	struct avfs_sim_engine *eng;
	struct avfs_disk *d;
};

/* Open DEVICE. 0, or 1 with the reason printed. */
static int open_target(struct target *t, uint64_t seed)
{
	char why[256] = "";
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
		/* timing only: reads need not even clear the buffer, writes keep nothing */
		avfs_simdisk_nostore(t->d, 0, t->d->info.size);
		return 0;
	}
	/* read-only unless --write: the backend then refuses a write at submit, whatever the
	 * code above it does */
	err = avfs_disk_open(t->name, t->backend, t->write ? 0 : AVFS_OPEN_RDONLY, &t->d, why,
			     sizeof(why));
	if (err) {
		fprintf(stderr, "avfs-admin: profile: %s%s\n", why[0] ? why : strerror(-err),
			err == -EINVAL && t->backend != AVFS_BACKEND_SG &&
			t->backend != AVFS_BACKEND_NVME ? " (not an image file or block device, or "
			"its file system has no O_DIRECT)" : "");
		return 1;
	}
	return 0;
}

/* ---- --write: on a scratch device only ---- */

/* Before --write on a real device: 0 to go on, 1 refused or failed (the reason printed). */
static int scratch_check(const struct target *t, bool force)
{
	char what[256], why[512];
	int err;

	/* in use (an avfsd serves it, the kernel has it mounted): never, --force or not */
	err = avfs_disk_in_use(t->name, why, sizeof(why));
	if (err == -EBUSY) {
		fprintf(stderr, "avfs-admin: profile: %s: --write refused, nothing written\n", why);
		return 1;
	}
	err = avfs_signature_disk(t->d, what, sizeof(what));
	if (err < 0) {
		fprintf(stderr, "avfs-admin: profile: %s: cannot tell whether it is a scratch device "
			"(%s)\n", t->name, what);
		return 1;
	}
	if (err && !force) {
		fprintf(stderr, "avfs-admin: profile: %s holds %s, which --write would destroy: "
			"refused, nothing written (--force writes anyway)\n", t->name, what);
		return 1;
	}
	if (err)
		fprintf(stderr, "avfs-admin: profile: %s holds %s: overwriting it (--force)\n",
			t->name, what);
	return 0;
}

/* ---- progress ---- */

static void progress(void *arg, const char *step, unsigned done, unsigned total)
{
	avfs_progress_show(arg, step, done, total);
}

/* ---- output ---- */

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

static const char *backend_of(const struct target *t)
{
	if (t->d->ident.backend[0])
		return t->d->ident.backend;
	return t->sim ? "sim" : avfs_backend_name(t->backend);
}

/* Throughput against request size (papers/003 Figs. 5 and 6), with the chunk size marked. */
static void text_chunks(const char *title, const char *what, unsigned n, const uint32_t *size,
			const double *rate, uint32_t chunk, double max)
{
	char b1[32];

	printf("\n%s\n", title);
	printf("  %10s %10s %8s\n", "request", "MB/s", "of best");
	for (unsigned i = 0; i < n; i++)
		printf("  %10s %10.2f %7.1f%%%s%s\n", size_str(size[i], b1, sizeof(b1)),
		       rate[i] / MB, 100 * rate[i] / max, size[i] == chunk ? "  <- " : "",
		       size[i] == chunk ? what : "");
	printf("  %s %s: the smallest within 1%% of the best (%.2f MB/s)\n", what,
	       size_str(chunk, b1, sizeof(b1)), max / MB);
}

static void text_rates(const char *title, unsigned n, const uint64_t *off, const double *rate)
{
	printf("\n%s\n", title);
	printf("  %12s %10s\n", "offset GB", "MB/s");
	for (unsigned i = 0; i < n; i++)
		printf("  %12.2f %10.2f\n", (double)off[i] / 1e9, rate[i] / MB);
}

static void text_ident(const struct avfs_disk_ident *id)
{
	if (!id->transport[0])
		return;
	printf("  identity     %s %s %s, firmware %s, serial '%s'\n", id->transport, id->vendor,
	       id->product, id->firmware, id->serial);
	if (id->lba_format[0])
		printf("  lba format   %s\n", id->lba_format);
	printf("  write cache  %s; max transfer ", !id->wce_known ? "unknown" : id->wce ? "on" : "off");
	if (id->max_transfer)
		printf("%u KiB", id->max_transfer >> 10);
	else
		printf("unknown");
	if (id->rotation_rate == 1)
		printf("; non-rotating by its own account\n");
	else if (id->rotation_rate)
		printf("; %u rpm by its own account\n", id->rotation_rate);
	else
		printf("; rotation rate not reported\n");
}

static void print_text(const struct target *t, const struct avfs_profile *r)
{
	struct avfs_svc_model m;
	double pred = 0;

	printf("avfs-admin profile: %s (%s backend), %.2f GB, %u-byte blocks, %s\n", t->name,
	       backend_of(t), (double)r->capacity / 1e9, r->lbs,
	       r->rotational ? "rotational" : "non-rotational");
	text_ident(&t->d->ident);
	if (r->writes)
		printf("  %" PRIu64 " commands, %" PRIu64 " of them writes, in %.1f s of %s time; %s\n",
		       r->requests, r->writes, (double)r->elapsed_ns / 1e9,
		       t->sim ? "virtual" : "real", t->sim ? "a virtual disk: nothing kept" :
		       "what was on the device is overwritten");
	else
		printf("  %" PRIu64 " reads in %.1f s of %s time; the profiler wrote nothing\n",
		       r->requests, (double)r->elapsed_ns / 1e9, t->sim ? "virtual" : "real");

	if (r->nchunk)
		text_chunks("sequential read throughput against request size (queue depth 1)",
			    "chunk size", r->nchunk, r->chunk_size, r->chunk_rate, r->chunk,
			    r->chunk_max_rate);

	text_rates("transfer rate across the disk (outer edge first)", r->nrate, r->rate_off,
		   r->rate);
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

	if (r->nwchunk)
		text_chunks("sequential write throughput against request size (queue depth 1, a "
			    "flush at the end of each)", "write chunk size", r->nwchunk,
			    r->wchunk_size, r->wchunk_rate, r->wchunk, r->wchunk_max_rate);
	if (r->nwrate)
		text_rates("write rate across the disk (outer edge first, a flush at the end of "
			   "each)", r->nwrate, r->wrate_off, r->wrate);

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


/* A time in ms, or null when it was not measured. */
static json_object *json_ms(bool valid, double ns)
{
	return valid ? avfs_json_double(ns / MS, "%.4f") : NULL;
}

/* The same keys as the "disk" object of `avfs-admin status --json`. */
static json_object *json_ident(const struct avfs_disk_ident *id)
{
	const struct {
		const char *key, *val;
	} s[] = {
		{ "transport", id->transport }, { "vendor", id->vendor },
		{ "product", id->product }, { "serial", id->serial },
		{ "firmware", id->firmware }, { "lba_format", id->lba_format },
	};
	json_object *o = json_object_new_object();

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		json_object_object_add(o, s[i].key, json_object_new_string(s[i].val));
	json_object_object_add(o, "write_cache",
			       id->wce_known ? json_object_new_boolean(id->wce) : NULL);
	json_object_object_add(o, "max_transfer", json_object_new_int64(id->max_transfer));
	json_object_object_add(o, "rotation_rate", json_object_new_int64(id->rotation_rate));
	return o;
}

/* Throughput against request size: [{bytes, mbs}]. */
static json_object *json_chunks(unsigned n, const uint32_t *size, const double *rate)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; i < n; i++) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "bytes", json_object_new_int64(size[i]));
		json_object_object_add(p, "mbs", avfs_json_double(rate[i] / MB, "%.3f"));
		json_object_array_add(a, p);
	}
	return a;
}

/* The mechanics: seek_unit, cylinders, seek_ms and seek_curve, null and [] unmeasured. */
static void json_seeks(json_object *o, const struct avfs_profile *r)
{
	bool mech = r->rot_measured;
	json_object *curve = json_object_new_array();

	json_object_object_add(o, "seek_unit", !mech ? NULL :
			       json_object_new_string(r->mapped ? "cylinders" : "bytes"));
	json_object_object_add(o, "cylinders", mech && r->mapped ? json_object_new_int64(r->ncyl) :
			       NULL);
	json_object_object_add(o, "seek_ms", mech ? avfs_profile_json_seeks(r) : NULL);
	for (unsigned i = 0; mech && i < r->nseek; i++) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "distance", json_object_new_uint64(r->seek_dist[i]));
		json_object_object_add(p, "fraction", avfs_json_double(r->seek_frac[i], "%.6f"));
		json_object_object_add(p, "ms", json_ms(true, r->seek_ns[i]));
		json_object_array_add(curve, p);
	}
	json_object_object_add(o, "seek_curve", curve);
}

/* The --json document (the keys of usage()), also what --out keeps. */
static json_object *profile_json(const struct target *t, const struct avfs_profile *r,
				 bool quick, uint64_t seed)
{
	bool mech = r->rot_measured, wrote = r->nwchunk || r->nwrate;
	json_object *o = json_object_new_object(), *svc = json_object_new_object();
	struct avfs_svc_model m;

	model_of(r, &m);
	json_object_object_add(o, "device", json_object_new_string(t->name));
	json_object_object_add(o, "backend", json_object_new_string(backend_of(t)));
	json_object_object_add(o, "ident", json_ident(&t->d->ident));
	json_object_object_add(o, "capacity_bytes", json_object_new_uint64(r->capacity));
	json_object_object_add(o, "logical_block_bytes", json_object_new_int64(r->lbs));
	json_object_object_add(o, "rotational", json_object_new_boolean(r->rotational));
	json_object_object_add(o, "quick", json_object_new_boolean(quick));
	json_object_object_add(o, "seed", json_object_new_uint64(seed));
	json_object_object_add(o, "time", json_object_new_string(t->sim ? "virtual" : "real"));
	json_object_object_add(o, "elapsed_s", avfs_json_double((double)r->elapsed_ns / 1e9,
								  "%.3f"));
	json_object_object_add(o, "requests", json_object_new_uint64(r->requests));
	json_object_object_add(o, "writes", json_object_new_uint64(r->writes));
	json_object_object_add(o, "chunk_mbs", json_chunks(r->nchunk, r->chunk_size,
							    r->chunk_rate));
	json_object_object_add(o, "chunk_bytes", json_object_new_int64(r->chunk));
	json_object_object_add(o, "chunk_max_mbs", avfs_json_double(r->chunk_max_rate / MB,
								      "%.3f"));
	json_object_object_add(o, "rate_mbs", avfs_profile_json_rates(r->nrate, r->rate_off,
								       r->rate, true));
	json_object_object_add(o, "outer_rate_mbs", avfs_json_double(r->outer / MB, "%.3f"));
	json_object_object_add(o, "inner_rate_mbs", avfs_json_double(r->inner / MB, "%.3f"));
	json_object_object_add(o, "random_4k_ms", json_ms(r->nrandom, r->random_ns));
	json_object_object_add(o, "rotation_measured", json_object_new_boolean(mech));
	json_object_object_add(o, "rotation_ms", json_ms(mech, r->rotation_ns));
	json_object_object_add(o, "rpm", mech ? avfs_json_double(60e9 / r->rotation_ns, "%.1f") :
			       NULL);
	json_object_object_add(o, "rotational_latency_ms", json_ms(mech, r->rot_latency_ns));
	json_object_object_add(o, "overhead_ms", json_ms(mech, r->overhead_ns));
	json_seeks(o, r);
	json_object_object_add(o, "write", json_object_new_boolean(wrote));
	json_object_object_add(o, "write_chunk_mbs", json_chunks(r->nwchunk, r->wchunk_size,
								  r->wchunk_rate));
	json_object_object_add(o, "write_chunk_bytes", wrote ? json_object_new_int64(r->wchunk) :
			       NULL);
	json_object_object_add(o, "write_chunk_max_mbs", !wrote ? NULL :
			       avfs_json_double(r->wchunk_max_rate / MB, "%.3f"));
	json_object_object_add(o, "write_rate_mbs",
			       avfs_profile_json_rates(r->nwrate, r->wrate_off, r->wrate, true));
	json_object_object_add(svc, "tr_ns", avfs_json_double(m.tr_ns, "%.0f"));
	json_object_object_add(svc, "tk_ns", avfs_json_double(m.tk_ns, "%.0f"));
	json_object_object_add(svc, "dmax", avfs_json_double(m.dmax, "%.0f"));
	json_object_object_add(svc, "dmin", avfs_json_double(m.dmin, "%.0f"));
	json_object_object_add(svc, "lmax", json_object_new_uint64(m.lmax));
	json_object_object_add(o, "svc_model", svc);
	return o;
}

int admin_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ "seed", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "no-map", no_argument, NULL, 'n' },
		{ "backend", required_argument, NULL, 'b' },
		{ "write", no_argument, NULL, 'w' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct avfs_profile_opts po = { .seed = 1 };
	struct avfs_profile_clock clk;
	struct avfs_profile_geom geom, *g = NULL;
	struct avfs_profile *r = NULL;
	struct avfs_progress pg;
	struct target t = { 0 };
	json_object *doc = NULL;	/* the --json and --out document */
	const char *out = NULL;
	bool json = false, no_map = false, backend_given = false, force = false, quiet = false;
	int c, err, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'q': po.quick = true; break;
		case 'o': out = optarg; break;
		case 'n': no_map = true; break;
		case 'w': t.write = true; break;
		case 'f': force = true; break;
		case 'Q': quiet = true; break;
		case 'b':
			if (avfs_backend_parse(optarg, &t.backend)) {
				fprintf(stderr, "avfs-admin: profile: --backend '%s': auto, uring, sg or "
					"nvme\n", optarg);
				return 2;
			}
			backend_given = true;
			break;
		case 's':
			if (avfs_parse_uint(optarg, &po.seed)) {
				fprintf(stderr, "avfs-admin: profile: --seed: not a number: '%s'\n", optarg);
				return 2;
			}
			break;
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
	if (backend_given && !strncmp(t.name, "sim:", 4)) {
		fprintf(stderr, "avfs-admin: profile: --backend is for a block device or image "
			"file, not sim:MODEL\n");
		return 2;
	}
	if (force && !t.write) {
		fprintf(stderr, "avfs-admin: profile: --force goes with --write only\n");
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
	/* a simulated disk is virtual: --write can destroy nothing there */
	if (t.write && !t.sim && scratch_check(&t, force))
		goto out;
	if (t.sim) {
		avfs_profile_sim_env(t.d, &clk, &geom);
		g = no_map || !geom.ncyl ? NULL : &geom;
	} else {
		avfs_profile_real_clock(&clk);
	}
	po.steps = t.write ? AVFS_PROFILE_WRITE : 0;	/* and every read step */
	avfs_progress_init(&pg, "avfs-admin: profile", STDERR_FILENO, quiet);
	if (pg.fd >= 0) {	/* SPEC §10: progress on a terminal, quiet elsewhere */
		po.progress = progress;
		po.progress_arg = &pg;
		if (!t.sim)
			fprintf(stderr, "avfs-admin: profiling %s (%s) in real time%s\n", t.name,
				t.d->info.rotational ? "rotational" : "non-rotational",
				po.quick ? "" : "; --quick takes a fraction of the time");
	}
	r = malloc(sizeof(*r));
	err = r ? avfs_profile_run(t.d, &clk, g, &po, r) : -ENOMEM;
	avfs_progress_clear(&pg);
	if (err) {
		fprintf(stderr, "avfs-admin: profile: %s: %s\n", t.name,
			err == -ENOSPC ? "too small to profile" : strerror(-err));
		goto out;
	}
	doc = profile_json(&t, r, po.quick, po.seed);
	if (out) {
		FILE *f = fopen(out, "w");

		err = f ? avfs_json_print(f, json_object_get(doc), true) : -errno;
		if (f && fclose(f) && !err)
			err = -errno;
		if (err) {
			fprintf(stderr, "avfs-admin: profile: cannot write %s: %s\n", out,
				strerror(-err));
			goto out;
		}
	}
	if (json) {
		err = avfs_json_print(stdout, json_object_get(doc), true);
		if (err) {
			fprintf(stderr, "avfs-admin: profile: cannot print the JSON: %s\n",
				strerror(-err));
			goto out;
		}
	} else {
		print_text(&t, r);
	}
	ret = 0;
out:
	json_object_put(doc);
	free(r);
	avfs_disk_close(t.d);
	avfs_sim_engine_free(t.eng);
	return ret;
}

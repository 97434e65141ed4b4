/*
 * mkfs.avfs — format a block device or an image file with the AVFS file system (SPEC §10).
 * An image file is created or extended to --size. Before writing it refuses a device that is in
 * use (disk/lock.h: an avfsd serves it, the kernel has it mounted, a loop device backs it) and,
 * without --force, one that holds anything (tools/signature.h: AVFS or what libblkid knows);
 * on failure it removes the image it created (or shrinks back the one it extended). Prints the
 * geometry (or JSON). Formatting itself is the core's avfs_fs_format, written through the
 * io_uring backend. The service-time model recorded is a named model's, or with --profile one
 * measured by disk/profile.c (read-only, through the backend --backend names) or loaded from
 * `avfs-admin profile --out FILE`. Exit status as mkfs(8): 0 formatted, 1 not (usage error,
 * refused, or failed: nothing usable was written).
 */
#include "config.h"
#include "disk.h"
#include "fs.h"
#include "fsio.h"
#include "jsonout.h"
#include "lock.h"
#include "profile.h"
#include "progress.h"
#include "signature.h"
#include "units.h"
#include "zrr.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkfs.avfs [options] DEVICE_OR_IMAGE\n"
		"Format a block device, or an image file (created or extended to --size), with AVFS.\n"
		"A device in use (served by an avfsd, mounted, attached to a loop device) is refused;\n"
		"so is one that holds a file system or partition table, unless --force.\n"
		"  -f, --force         format even over a file system or partition table found there\n"
		"  --block-size SIZE   data block size, a power of two from 64K to 4G (default 4M)\n"
		"  --zones N           ZRR zone count (default: at most 32 zones of >= 16 GiB)\n"
		"  --size BYTES        image size (creates or extends an image file; K/M/G/T)\n"
		"  --seed S            seed of the first ZRR zone (default 1)\n"
		"  --inodes N          inode count (default: 2 per data block or one per 128 KiB\n"
		"                      up to 131072, the more; at least 4096, at most 4194304)\n"
		"  --journal-blocks N  journal size in 4 KiB blocks\n"
		"  --alloc zrr-run|zrr|contig  allocation policy: ZRR in runs of 16 MiB (default),\n"
		"                      papers/001's ZRR one block per zone, or contig (first-fit\n"
		"                      in runs of 16 MiB, the baseline, not for use)\n"
		"  --disk-model NAME   service-time parameters to record (default avfs-250g)\n"
		"  --profile           measure them instead: a quick read-only profile of the device\n"
		"                      (as `avfs-admin profile --quick`; seconds on an image file,\n"
		"                      minutes on a disk) before formatting; recorded as \"profiled\"\n"
		"  --profile FILE      record the svc_model of a profile that `avfs-admin profile\n"
		"                      --out FILE` wrote of this device (its lmax must be the device's\n"
		"                      size); also --profile=FILE. A missing, malformed or impossible\n"
		"                      file is refused before anything is written\n"
		"  --backend B         how --profile reads a block device: auto (io_uring), uring, sg\n"
		"                      (SCSI over SG_IO), nvme (NVMe passthrough); the format itself is\n"
		"                      written through io_uring\n"
		"  --json              print the geometry as JSON (with the recorded model: model_source\n"
		"                      named|measured|file, rate_max, rate_min in bytes/s, seek_avg_ns,\n"
		"                      rotation_ns)\n"
		"  -q, --quiet         print nothing on success (and no progress line)\n"
		"  -V, --version       the version\n"
		"--profile and --disk-model exclude each other. Exit status (mkfs(8)): 0 formatted,\n"
		"1 not formatted (usage error, refused, or failed).\n");
}

/* The service-time model to record (SPEC §5.2: struct avfs_svc_model's figures) when it is not
 * a named model's. */
struct svc {
	const char *source;	/* "measured" or "file" */
	char backend[8];	/* measured: the backend that read the device */
	double tr_ns, tk_ns;	/* rotation period (0: none), mean seek or access latency */
	double dmax, dmin;	/* bytes/s at LBA 0 and at the end */
	uint64_t lmax;		/* bytes of the device profiled */
};

/* A figure a disk can have: finite, in [lo, hi]. */
static bool plausible(double v, double lo, double hi)
{
	return isfinite(v) && v >= lo && v <= hi;
}

/* Check m's figures. NULL if they are possible, else what is wrong. */
static const char *svc_impossible(const struct svc *m)
{
	if (!plausible(m->dmax, 1, 1e13) || !plausible(m->dmin, 1, 1e13))
		return "transfer rates dmax and dmin must be positive (bytes/s)";
	if (m->dmin > m->dmax)
		return "dmin (rate at the end) exceeds dmax (rate at LBA 0)";
	if (!plausible(m->tk_ns, 0, 1e10))
		return "tk_ns must be 0 to 10 s";
	if (m->tr_ns != 0 && !plausible(m->tr_ns, 1e6, 1e8))
		return "tr_ns must be 0 (no rotation) or a period of 1 to 100 ms";
	if (!m->lmax)
		return "lmax must be the device size in bytes";
	return NULL;
}

/* Load the svc_model of a profile file (`avfs-admin profile --out FILE`). 0, or 1 with the
 * reason printed. */
static int load_profile(const char *file, struct svc *m)
{
	static const char *const keys[] = { "tr_ns", "tk_ns", "dmax", "dmin" };
	double *vals[] = { &m->tr_ns, &m->tk_ns, &m->dmax, &m->dmin };
	json_object *o = NULL, *sm, *v;
	const char *bad = NULL;
	struct stat st;
	int ret = 1;

	*m = (struct svc){ .source = "file" };
	if (stat(file, &st)) {
		fprintf(stderr, "mkfs.avfs: --profile %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
		fprintf(stderr, "mkfs.avfs: --profile %s: not a profile (a JSON file of at most 1 MiB "
			"from avfs-admin profile --out)\n", file);
		return 1;
	}
	o = json_object_from_file(file);
	if (!o || !json_object_is_type(o, json_type_object)) {
		fprintf(stderr, "mkfs.avfs: --profile %s: not a JSON object (written by avfs-admin "
			"profile --out?)\n", file);
		goto out;
	}
	if (!json_object_object_get_ex(o, "svc_model", &sm) ||
	    !json_object_is_type(sm, json_type_object)) {
		fprintf(stderr, "mkfs.avfs: --profile %s: no svc_model object {tr_ns, tk_ns, dmax, "
			"dmin, lmax}\n", file);
		goto out;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!json_object_object_get_ex(sm, keys[i], &v) ||
		    !(json_object_is_type(v, json_type_int) ||
		      json_object_is_type(v, json_type_double))) {
			fprintf(stderr, "mkfs.avfs: --profile %s: svc_model.%s is missing or not a "
				"number\n", file, keys[i]);
			goto out;
		}
		*vals[i] = json_object_get_double(v);
	}
	if (!json_object_object_get_ex(sm, "lmax", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) <= 0) {
		fprintf(stderr, "mkfs.avfs: --profile %s: svc_model.lmax is missing or not a size in "
			"bytes\n", file);
		goto out;
	}
	m->lmax = (uint64_t)json_object_get_int64(v);
	bad = svc_impossible(m);
	if (bad) {
		fprintf(stderr, "mkfs.avfs: --profile %s: impossible svc_model: %s\n", file, bad);
		goto out;
	}
	ret = 0;
out:
	json_object_put(o);
	return ret;
}

/* Tell a profile's lmax from the size of the device it is to describe. 0, or 1 printed. */
static int check_lmax(const char *file, const struct svc *m, const char *path, uint64_t size)
{
	if (m->lmax == size)
		return 0;
	fprintf(stderr, "mkfs.avfs: --profile %s: a profile of a %" PRIu64 "-byte device, and %s "
		"has %" PRIu64 " bytes: profile this device (avfs-admin profile --out, or plain "
		"--profile)\n", file, m->lmax, path, size);
	return 1;
}

static struct avfs_progress bar;	/* on a terminal, unless --quiet */

static void profile_progress(void *arg, const char *step, unsigned done, unsigned total)
{
	char s[40];

	(void)arg;
	snprintf(s, sizeof(s), "profiling: %s", step);
	avfs_progress_show(&bar, s, done, total);
}

static void fsio_progress(void *arg, const char *step, uint64_t done, uint64_t total)
{
	(void)arg;
	avfs_progress_show(&bar, step, done, total);
}

/* Measure path with a quick read-only profile (the steps the model needs: the rate across the
 * disk, random reads, the mechanics) through backend b. 0, or 1 with the reason printed. */
static int measure(const char *path, enum avfs_backend b, struct svc *m)
{
	struct avfs_profile_opts po = {
		.steps = AVFS_PROFILE_ZONES | AVFS_PROFILE_RANDOM | AVFS_PROFILE_MECH,
		.quick = true, .seed = 1, .progress = profile_progress,
	};
	struct avfs_profile_clock clk;
	struct avfs_profile *r = malloc(sizeof(*r));
	struct avfs_disk *d = NULL;
	char why[256] = "";
	const char *bad;
	int err;

	if (!r) {
		fprintf(stderr, "mkfs.avfs: %s\n", strerror(ENOMEM));
		return 1;
	}
	err = avfs_disk_open(path, b, AVFS_OPEN_RDONLY, &d, why, sizeof(why));
	if (err) {
		fprintf(stderr, "mkfs.avfs: --profile: %s\n", why[0] ? why : strerror(-err));
		free(r);
		return 1;
	}
	avfs_profile_real_clock(&clk);
	err = avfs_profile_run(d, &clk, NULL, &po, r);
	avfs_progress_clear(&bar);
	snprintf(m->backend, sizeof(m->backend), "%s", d->ident.backend);
	avfs_disk_close(d);
	if (err == -ENOSPC)
		fprintf(stderr, "mkfs.avfs: --profile: %s is too small to profile (at least %llu MiB): "
			"give --disk-model instead\n", path, AVFS_PROFILE_MIN_BYTES >> 20);
	else if (err)
		fprintf(stderr, "mkfs.avfs: --profile: profiling %s failed: %s\n", path,
			strerror(-err));
	if (!err) {
		m->source = "measured";
		m->tr_ns = r->tr_ns;
		m->tk_ns = r->tk_ns;
		m->dmax = r->dmax;
		m->dmin = r->dmin;
		m->lmax = r->lmax;
		bad = svc_impossible(m);
		if (bad) {
			fprintf(stderr, "mkfs.avfs: --profile: %s measured an impossible model: %s\n",
				path, bad);
			err = -EINVAL;
		}
	}
	free(r);
	return err ? 1 : 0;
}

/* The geometry and the model recorded, as `--json` prints them (the keys of usage()). */
static void print_json(const char *path, const struct avfs_super *sb, const char *source)
{
	json_object *o = json_object_new_object();
	const struct {
		const char *key;
		uint64_t v;
	} num[] = {
		{ "size", sb->dev_size },
		{ "block_size", (uint64_t)1 << sb->block_shift },
		{ "data_blocks", sb->data_blocks },
		{ "zones", sb->nzones },
		{ "zone_blocks", sb->zone_blocks },
		{ "first_zone", (sb->last_zone + 1) % sb->nzones },
		{ "inodes", sb->ninodes },
		{ "metadata_blocks", sb->meta_blocks },
		{ "journal_blocks", sb->journal_blocks },
		{ "data_offset", sb->data_off },
		{ "backup_offset", sb->backup_off },
	};
	const struct {
		const char *key;
		uint64_t v;
	} model[] = {
		{ "rate_max", sb->rate_max },
		{ "rate_min", sb->rate_min },
		{ "seek_avg_ns", sb->seek_avg_ns },
		{ "rotation_ns", sb->rotation_ns },
	};
	int err;

	json_object_object_add(o, "device", json_object_new_string(path));
	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
		json_object_object_add(o, num[i].key, json_object_new_uint64(num[i].v));
	json_object_object_add(o, "alloc",
			       json_object_new_string(avfs_alloc_policy_name(sb->alloc_policy)));
	json_object_object_add(o, "alloc_run", json_object_new_uint64(sb->alloc_run));
	json_object_object_add(o, "disk_model", json_object_new_string(sb->disk_model));
	json_object_object_add(o, "model_source", json_object_new_string(source));
	for (size_t i = 0; i < sizeof(model) / sizeof(model[0]); i++)
		json_object_object_add(o, model[i].key, json_object_new_uint64(model[i].v));
	err = avfs_json_print(stdout, o, false);
	if (err)	/* formatted all the same: the exit status says so */
		fprintf(stderr, "mkfs.avfs: %s: formatted, but the JSON report failed: %s\n", path,
			strerror(-err));
}

/* The device or image, and what mkfs did to it (undone when it fails). */
struct target {
	const char *path;
	bool blockdev;
	bool created;		/* the image did not exist: removed on failure */
	bool extended;		/* grown to --size: shrunk back to old_size on failure */
	off_t old_size;
	uint64_t size;		/* bytes there now (a new image: --size) */
	int lock;		/* disk/lock.h's, held from the checks to the end; -1 */
};

/* What path is, before anything is touched. 0, or 1 with the reason printed. */
static int examine(struct target *t, uint64_t size)
{
	struct stat st;

	if (stat(t->path, &st)) {
		char *copy = strdup(t->path), *dir = copy ? dirname(copy) : NULL;
		struct stat ds;
		int ret = 1;

		if (errno != ENOENT)
			fprintf(stderr, "mkfs.avfs: %s: %s\n", t->path, strerror(errno));
		else if (!dir || stat(dir, &ds) || !S_ISDIR(ds.st_mode))
			fprintf(stderr, "mkfs.avfs: cannot create the image %s: there is no folder %s\n",
				t->path, dir ? dir : "");
		else if (!size)
			fprintf(stderr, "mkfs.avfs: %s does not exist: give --size to create an image "
				"file of that size, or name a block device\n", t->path);
		else
			ret = 0;
		free(copy);
		return ret;	/* t->size 0: a new image */
	}
	if (S_ISBLK(st.st_mode)) {
		t->blockdev = true;
		return 0;	/* its size once it is locked */
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "mkfs.avfs: %s is neither a block device nor a regular file\n",
			t->path);
		return 1;
	}
	if (!st.st_size && !size) {
		fprintf(stderr, "mkfs.avfs: %s is empty: give --size to make it an image of that "
			"size\n", t->path);
		return 1;
	}
	t->old_size = st.st_size;
	t->size = (uint64_t)st.st_size;
	return 0;
}

/* Take the device (creating a new image), and look at what it holds. 0, or 1 printed. */
static int take(struct target *t, bool force)
{
	char why[512] = "", what[256];
	int fd, found;

	if (!t->old_size && !t->blockdev && access(t->path, F_OK)) {
		fd = open(t->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "mkfs.avfs: cannot create %s: %s\n", t->path, strerror(errno));
			return 1;
		}
		close(fd);
		t->created = true;
	}
	t->lock = avfs_disk_lock(t->path, why, sizeof(why));
	if (t->lock < 0) {
		fprintf(stderr, "mkfs.avfs: %s: refused, nothing written\n", why);
		return 1;
	}
	if (t->blockdev && ioctl(t->lock, BLKGETSIZE64, &t->size)) {
		fprintf(stderr, "mkfs.avfs: %s: cannot read its size: %s\n", t->path, strerror(errno));
		return 1;
	}
	if (t->created)
		return 0;
	found = avfs_signature_fd(t->lock, t->size, what, sizeof(what));
	if (found < 0) {
		fprintf(stderr, "mkfs.avfs: %s: cannot tell what it holds (%s): refused, nothing "
			"written (--force formats it anyway)\n", t->path, what);
		return 1;
	}
	if (found && !force) {
		fprintf(stderr, "mkfs.avfs: %s holds %s: refused, nothing written (--force formats "
			"it anyway, destroying what is there)\n", t->path, what);
		return 1;
	}
	if (found)
		fprintf(stderr, "mkfs.avfs: %s holds %s: formatting over it (--force)\n", t->path,
			what);
	return 0;
}

/* Grow an image to size (the device stays as it is). 0, or 1 printed. */
static int extend(struct target *t, uint64_t size)
{
	int fd;

	if (t->blockdev || t->size >= size)
		return 0;
	fd = open(t->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		fprintf(stderr, "mkfs.avfs: %s: cannot extend to %" PRIu64 " bytes: %s\n", t->path,
			size, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	t->extended = !t->created;
	t->size = size;
	return 0;
}

/* After a failure: leave no file that mkfs created, nor the growth it gave one. */
static void undo(struct target *t)
{
	if (t->created && unlink(t->path))
		fprintf(stderr, "mkfs.avfs: cannot remove %s, which it created: %s\n", t->path,
			strerror(errno));
	if (t->extended && truncate(t->path, t->old_size))
		fprintf(stderr, "mkfs.avfs: cannot shrink %s back to %lld bytes: %s\n", t->path,
			(long long)t->old_size, strerror(errno));
}

static void print_text(const char *path, const struct avfs_super *sb, bool profile,
		       const char *profile_file, const struct svc *m)
{
	/* the zone the first file goes to: the one after last_zone, in the policy's order */
	struct avfs_alloc za = { .nzones = sb->nzones };
	uint32_t first_zone = sb->alloc_policy == AVFS_ALLOC_ZRR_RUN ?
			      avfs_alloc_next_zone(&za, sb->last_zone) :
			      (sb->last_zone + 1) % sb->nzones;
	char alloc_desc[64];

	if (sb->alloc_policy == AVFS_ALLOC_ZRR_RUN)
		snprintf(alloc_desc, sizeof(alloc_desc), "Zone-Round-Robin in runs of %u",
			 sb->alloc_run);
	else if (sb->alloc_policy == AVFS_ALLOC_CONTIG)
		snprintf(alloc_desc, sizeof(alloc_desc), "contiguous first-fit baseline, runs of %u",
			 sb->alloc_run);
	else
		snprintf(alloc_desc, sizeof(alloc_desc), "Zone-Round-Robin");
	printf("mkfs.avfs: formatted %s (%.2f GB)\n", path, (double)sb->dev_size / 1e9);
	printf("  data blocks      %" PRIu64 " x %" PRIu64 " KiB = %.2f GB, from byte %" PRIu64 "\n",
	       sb->data_blocks, (uint64_t)(1ull << sb->block_shift) >> 10,
	       (double)(sb->data_blocks << sb->block_shift) / 1e9, sb->data_off);
	printf("  zones            %u of about %" PRIu64 " blocks (%s), first zone %u\n",
	       sb->nzones, sb->zone_blocks, alloc_desc, first_zone);
	printf("  inodes           %" PRIu64 "\n", sb->ninodes);
	/* every file takes an inode, and small files take little else: say when the inodes, not
	 * the space, would end a copy of many of them (the default is one per 128 KiB) */
	if (sb->ninodes < sb->dev_size / (128u << 10) && sb->ninodes < AVFS_SMALL_INODES)
		fprintf(stderr, "mkfs.avfs: warning: %" PRIu64 " inodes: no more than that many files "
			"and directories fit, %.0f KiB a file on average; for many small files "
			"give --inodes %" PRIu64 " or more (the default)\n", sb->ninodes,
			(double)sb->dev_size / 1024 / (double)sb->ninodes,
			sb->dev_size / (128u << 10) < AVFS_SMALL_INODES ? sb->dev_size / (128u << 10)
									 : AVFS_SMALL_INODES);
	printf("  metadata         %" PRIu64 " blocks of 4 KiB (journal %" PRIu64 "), backup at "
	       "byte %" PRIu64 "\n", sb->meta_blocks, sb->journal_blocks, sb->backup_off);
	if (!profile)
		printf("  disk model       %s\n", sb->disk_model);
	else if (profile_file)
		printf("  disk model       %s, from %s\n", sb->disk_model, profile_file);
	else
		printf("  disk model       %s: measured now (a quick read-only profile through %s)\n",
		       sb->disk_model, m->backend);
	printf("  service time     %.2f MB/s at LBA 0 to %.2f MB/s at the end, mean %s %.3f ms\n",
	       (double)sb->rate_max / 1e6, (double)sb->rate_min / 1e6,
	       sb->rotation_ns ? "seek" : "access", (double)sb->seek_avg_ns / 1e6);
	if (sb->rotation_ns)
		printf("  rotation         %.3f ms (%.0f rpm)\n", (double)sb->rotation_ns / 1e6,
		       60e9 / (double)sb->rotation_ns);
	else
		printf("  rotation         none measured\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "block-size", required_argument, NULL, 'b' },
		{ "zones", required_argument, NULL, 'z' },
		{ "size", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "inodes", required_argument, NULL, 'i' },
		{ "journal-blocks", required_argument, NULL, 'J' },
		{ "alloc", required_argument, NULL, 'a' },
		{ "disk-model", required_argument, NULL, 'm' },
		{ "profile", optional_argument, NULL, 'P' },
		{ "backend", required_argument, NULL, 'B' },
		{ "force", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct avfs_mkfs_opts o = { .seed = 1, .alloc_policy = AVFS_ALLOC_ZRR_RUN };
	uint64_t size = 0, v;
	bool json = false, quiet = false, profile = false, backend_given = false, force = false;
	enum avfs_backend backend = AVFS_BACKEND_AUTO;
	const char *profile_file = NULL;
	struct avfs_disk *d = NULL;
	struct svc m = { 0 };
	struct avfs_mkfs_measured measured;
	struct avfs_fsio_progress pg = { .fn = fsio_progress };
	struct target t = { .lock = -1 };
	struct avfs_super sb;
	char why[256] = "";
	int c, err, ret = 1;

	while ((c = getopt_long(argc, argv, "fqhV", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (avfs_parse_size(optarg, &v) || v == 0 || (v & (v - 1)) || v < (1u << 16) ||
			    v > (1ull << 32)) {
				fprintf(stderr, "mkfs.avfs: --block-size '%s': a power of two from 64K "
					"to 4G\n", optarg);
				return 1;
			}
			o.block_shift = (uint32_t)__builtin_ctzll(v);
			break;
		case 'z':
			if (avfs_parse_size(optarg, &v) || v == 0 || v > AVFS_ZONES_MAX) {
				fprintf(stderr, "mkfs.avfs: --zones '%s': 1 to %u\n", optarg,
					(unsigned)AVFS_ZONES_MAX);
				return 1;
			}
			o.zones = (uint32_t)v;
			break;
		case 's':
			if (avfs_parse_size(optarg, &size) || !size) {
				fprintf(stderr, "mkfs.avfs: --size '%s': not a size (bytes, or with K, M, "
					"G, T)\n", optarg);
				return 1;
			}
			break;
		case 'S':
			if (avfs_parse_size(optarg, &o.seed)) {
				fprintf(stderr, "mkfs.avfs: --seed '%s': not a number\n", optarg);
				return 1;
			}
			break;
		case 'i':
			if (avfs_parse_size(optarg, &o.inodes) || !o.inodes) {
				fprintf(stderr, "mkfs.avfs: --inodes '%s': not a count of 1 or "
					"more\n", optarg);
				return 1;
			}
			break;
		case 'J':
			if (avfs_parse_size(optarg, &o.journal_blocks) || !o.journal_blocks) {
				fprintf(stderr, "mkfs.avfs: --journal-blocks '%s': not a count of 1 or "
					"more\n", optarg);
				return 1;
			}
			break;
		case 'a':
			if (avfs_alloc_policy_parse(optarg) < 0) {
				fprintf(stderr, "mkfs.avfs: --alloc '%s': zrr-run, zrr or contig\n",
					optarg);
				return 1;
			}
			o.alloc_policy = (uint32_t)avfs_alloc_policy_parse(optarg);
			break;
		case 'm': o.disk_model = optarg; break;
		case 'P':
			profile = true;
			profile_file = optarg;	/* --profile=FILE; --profile FILE: below */
			break;
		case 'B':
			if (avfs_backend_parse(optarg, &backend)) {
				fprintf(stderr, "mkfs.avfs: --backend '%s': auto, uring, sg or nvme\n",
					optarg);
				return 1;
			}
			backend_given = true;
			break;
		case 'f': force = true; break;
		case 'j': json = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("mkfs.avfs %s\n", AVFS_VERSION); return 0;
		default: usage(stderr); return 1;
		}
	}
	/* --profile takes its FILE as the next word: the one before DEVICE_OR_IMAGE */
	if (profile && !profile_file && optind + 2 == argc)
		profile_file = argv[optind++];
	if (optind + 1 != argc) {
		fprintf(stderr, "mkfs.avfs: %s\n", optind >= argc ? "say which DEVICE_OR_IMAGE to "
			"format" : "one DEVICE_OR_IMAGE only");
		usage(stderr);
		return 1;
	}
	t.path = argv[optind];
	if (profile && o.disk_model) {
		fprintf(stderr, "mkfs.avfs: --profile and --disk-model exclude each other: the model "
			"recorded is either measured or named\n");
		return 1;
	}
	if (backend_given && (!profile || profile_file)) {
		fprintf(stderr, "mkfs.avfs: --backend says how --profile measures the device: give "
			"it with --profile (without FILE)\n");
		return 1;
	}
	avfs_progress_init(&bar, "mkfs.avfs", STDERR_FILENO, quiet);
	/* everything that can be checked is, before anything is created or written: a profile
	 * file, the target, the geometry the options ask for */
	if (profile_file && load_profile(profile_file, &m))
		return 1;
	if (examine(&t, size))
		return 1;
	if (!t.blockdev) {
		uint64_t bytes = size > t.size ? size : t.size;

		o.size = size ? size : t.size;
		if ((profile_file && check_lmax(profile_file, &m, t.path, bytes)) ||
		    avfs_fs_geometry(&o, &sb, why, sizeof(why))) {
			if (why[0])
				fprintf(stderr, "mkfs.avfs: %s: %s: nothing written\n", t.path, why);
			return 1;
		}
	}
	if (take(&t, force) || extend(&t, size))
		goto out;
	if (profile && !profile_file && measure(t.path, backend, &m))
		goto out;
	err = avfs_uring_open(t.path, 0, 0, &d);
	if (err) {
		fprintf(stderr, "mkfs.avfs: cannot open %s: %s\n", t.path, strerror(-err));
		goto out;
	}
	if (profile && check_lmax(profile_file ? profile_file : t.path, &m, t.path, d->info.size))
		goto out;
	o.size = size ? size : d->info.size;
	if (profile)
		o.measured = &measured;
	measured = (struct avfs_mkfs_measured){ .rate_max = (uint64_t)llround(m.dmax),
						 .rate_min = (uint64_t)llround(m.dmin),
						 .seek_avg_ns = (uint64_t)llround(m.tk_ns),
						 .rotation_ns = (uint64_t)llround(m.tr_ns) };
	err = avfs_fsio_mkfs_progress(d, &o, &sb, &pg, why, sizeof(why));
	avfs_progress_clear(&bar);
	if (err) {
		fprintf(stderr, "mkfs.avfs: %s: %s\n", t.path, why[0] ? why : strerror(-err));
		goto out;
	}
	ret = 0;
	if (quiet)
		goto out;
	if (json)
		print_json(t.path, &sb, profile ? m.source : "named");
	else
		print_text(t.path, &sb, profile, profile_file, &m);
out:
	if (d)
		avfs_disk_close(d);
	if (ret)
		undo(&t);
	if (t.lock >= 0)
		close(t.lock);
	return ret;
}

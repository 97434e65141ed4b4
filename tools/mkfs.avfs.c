/*
 * mkfs.avfs — format a block device or an image file with the AVFS file system (SPEC §10).
 * An image file is created or extended to --size. Prints the geometry (or JSON). Formatting
 * itself is the core's avfs_fs_format, written through the io_uring backend. The service-time
 * model recorded is a named model's, or with --profile one measured by disk/profile.c (read-only,
 * through the backend --backend names) or loaded from `avfs-admin profile --out FILE`.
 * Exit status: 0 formatted, 1 failed (nothing usable was written), 2 usage error.
 */
#include "config.h"
#include "disk.h"
#include "fs.h"
#include "fsio.h"
#include "jsonout.h"
#include "profile.h"
#include "units.h"
#include "zrr.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkfs.avfs [options] DEVICE_OR_IMAGE\n"
		"  --block-size SIZE   data block size, a power of two from 64K to 4G (default 4M)\n"
		"  --zones N           ZRR zone count (default: at most 32 zones of >= 16 GiB)\n"
		"  --size BYTES        image size (creates or extends an image file; K/M/G/T)\n"
		"  --seed S            seed of the first ZRR zone (default 1)\n"
		"  --inodes N          inode count (default: 2 per data block, at least 4096)\n"
		"  --journal-blocks N  journal size in 4 KiB blocks\n"
		"  --alloc zrr-run|zrr|contig  allocation policy: ZRR in runs of 16 MiB (default),\n"
		"                      papers/001's ZRR one block per zone, or contig (first-fit\n"
		"                      baseline, not for use)\n"
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
		"  -q, --quiet         print nothing on success\n"
		"--profile and --disk-model exclude each other.\n");
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

static void progress(void *arg, const char *step, unsigned done, unsigned total)
{
	(void)arg;
	fprintf(stderr, "\rmkfs.avfs: profiling: %-38s %3u%%", step,
		(unsigned)((uint64_t)done * 100 / total));
	fflush(stderr);
}

/* Measure path with a quick read-only profile (the steps the model needs: the rate across the
 * disk, random reads, the mechanics) through backend b. 0, or 1 with the reason printed. */
static int measure(const char *path, enum avfs_backend b, bool show, struct svc *m)
{
	struct avfs_profile_opts po = {
		.steps = AVFS_PROFILE_ZONES | AVFS_PROFILE_RANDOM | AVFS_PROFILE_MECH,
		.quick = true, .seed = 1, .progress = show ? progress : NULL,
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
	if (show)
		fprintf(stderr, "\r%-70s\r", "");
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
	json_object_object_add(o, "alloc", json_object_new_string(avfs_alloc_policy_name(sb->alloc_policy)));
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
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct avfs_mkfs_opts o = { .seed = 1, .alloc_policy = AVFS_ALLOC_ZRR_RUN };
	uint64_t size = 0, v;
	bool json = false, quiet = false, profile = false, backend_given = false;
	enum avfs_backend backend = AVFS_BACKEND_AUTO;
	const char *profile_file = NULL;
	struct avfs_disk *d = NULL;
	struct svc m = { 0 };
	struct avfs_mkfs_measured measured;
	struct avfs_super sb;
	char alloc_desc[64];
	uint32_t first_zone;
	struct stat st;
	char why[256] = "";
	const char *path;
	int c, err;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (avfs_parse_size(optarg, &v) || v == 0 || (v & (v - 1)) || v < (1u << 16) ||
			    v > (1ull << 32)) {
				fprintf(stderr, "mkfs.avfs: --block-size '%s': a power of two from 64K "
					"to 4G\n", optarg);
				return 2;
			}
			o.block_shift = (uint32_t)__builtin_ctzll(v);
			break;
		case 'z':
			if (avfs_parse_size(optarg, &v) || v == 0 || v > AVFS_ZONES_MAX) {
				fprintf(stderr, "mkfs.avfs: --zones '%s': 1 to %u\n", optarg,
					(unsigned)AVFS_ZONES_MAX);
				return 2;
			}
			o.zones = (uint32_t)v;
			break;
		case 's':
			if (avfs_parse_size(optarg, &size) || !size) {
				fprintf(stderr, "mkfs.avfs: --size '%s': not a size\n", optarg);
				return 2;
			}
			break;
		case 'S':
			if (avfs_parse_size(optarg, &o.seed)) {
				fprintf(stderr, "mkfs.avfs: --seed '%s': not a number\n", optarg);
				return 2;
			}
			break;
		case 'i':
			if (avfs_parse_size(optarg, &o.inodes) || !o.inodes) {
				fprintf(stderr, "mkfs.avfs: --inodes '%s': not a count\n", optarg);
				return 2;
			}
			break;
		case 'J':
			if (avfs_parse_size(optarg, &o.journal_blocks) || !o.journal_blocks) {
				fprintf(stderr, "mkfs.avfs: --journal-blocks '%s': not a count\n", optarg);
				return 2;
			}
			break;
		case 'a':
			if (avfs_alloc_policy_parse(optarg) < 0) {
				fprintf(stderr, "mkfs.avfs: --alloc '%s': zrr-run, zrr or contig\n",
					optarg);
				return 2;
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
				return 2;
			}
			backend_given = true;
			break;
		case 'j': json = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("mkfs.avfs %s\n", AVFS_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	/* --profile takes its FILE as the next word: the one before DEVICE_OR_IMAGE */
	if (profile && !profile_file && optind + 2 == argc)
		profile_file = argv[optind++];
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	path = argv[optind];
	if (profile && o.disk_model) {
		fprintf(stderr, "mkfs.avfs: --profile and --disk-model exclude each other: the model "
			"recorded is either measured or named\n");
		return 2;
	}
	if (backend_given && (!profile || profile_file)) {
		fprintf(stderr, "mkfs.avfs: --backend says how --profile measures the device: give "
			"it with --profile (without FILE)\n");
		return 2;
	}
	/* a profile file is read and checked before anything is written, even before an image
	 * is created or extended (to the larger of its size and --size) */
	if (profile_file && load_profile(profile_file, &m))
		return 1;
	if (profile_file && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    check_lmax(profile_file, &m, path, size > (uint64_t)st.st_size ? size :
		       (uint64_t)st.st_size))
		return 1;
	if (profile_file && stat(path, &st) && errno == ENOENT && size &&
	    check_lmax(profile_file, &m, path, size))
		return 1;
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
		/* a device: --size may only restrict the format to its start */
	} else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "mkfs.avfs: %s: not a block device or regular file\n", path);
		return 1;
	} else {
		int fd;

		if (!size && (errno == ENOENT || st.st_size == 0)) {
			fprintf(stderr, "mkfs.avfs: %s: no such image: give --size to create it\n", path);
			return 2;
		}
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "mkfs.avfs: %s: %s\n", path, strerror(errno));
			return 1;
		}
		if (size && fstat(fd, &st) == 0 && (uint64_t)st.st_size < size && ftruncate(fd, (off_t)size)) {
			fprintf(stderr, "mkfs.avfs: %s: cannot extend to %" PRIu64 " bytes: %s\n", path,
				size, strerror(errno));
			close(fd);
			return 1;
		}
		close(fd);
	}
	if (profile && !profile_file && measure(path, backend, isatty(2) && !quiet, &m))
		return 1;
	err = avfs_uring_open(path, 0, 0, &d);
	if (err) {
		fprintf(stderr, "mkfs.avfs: cannot open %s: %s\n", path, strerror(-err));
		return 1;
	}
	if (profile && check_lmax(profile_file ? profile_file : path, &m, path, d->info.size)) {
		avfs_disk_close(d);
		return 1;
	}
	o.size = size ? size : d->info.size;
	if (profile)
		o.measured = &measured;
	measured = (struct avfs_mkfs_measured){ .rate_max = (uint64_t)llround(m.dmax),
						 .rate_min = (uint64_t)llround(m.dmin),
						 .seek_avg_ns = (uint64_t)llround(m.tk_ns),
						 .rotation_ns = (uint64_t)llround(m.tr_ns) };
	err = avfs_fsio_mkfs(d, &o, &sb, why, sizeof(why));
	avfs_disk_close(d);
	if (err) {
		fprintf(stderr, "mkfs.avfs: %s: %s\n", path, why[0] ? why : strerror(-err));
		return 1;
	}
	if (quiet)
		return 0;
	{
		/* the zone the first file goes to: the one after last_zone, in the policy's order */
		struct avfs_alloc za = { .nzones = sb.nzones };

		first_zone = sb.alloc_policy == AVFS_ALLOC_ZRR_RUN ?
			     avfs_alloc_next_zone(&za, sb.last_zone) : (sb.last_zone + 1) % sb.nzones;
		if (sb.alloc_policy == AVFS_ALLOC_ZRR_RUN)
			snprintf(alloc_desc, sizeof(alloc_desc), "Zone-Round-Robin in runs of %u",
				 sb.alloc_run);
		else
			snprintf(alloc_desc, sizeof(alloc_desc), "%s", sb.alloc_policy ?
				 "contiguous first-fit baseline" : "Zone-Round-Robin");
	}
	if (json) {
		print_json(path, &sb, profile ? m.source : "named");
		return 0;
	}
	printf("mkfs.avfs: formatted %s (%.2f GB)\n", path, (double)sb.dev_size / 1e9);
	printf("  data blocks      %" PRIu64 " x %" PRIu64 " KiB = %.2f GB, from byte %" PRIu64 "\n",
	       sb.data_blocks, (uint64_t)(1ull << sb.block_shift) >> 10,
	       (double)(sb.data_blocks << sb.block_shift) / 1e9, sb.data_off);
	printf("  zones            %u of about %" PRIu64 " blocks (%s), first zone %u\n", sb.nzones,
	       sb.zone_blocks, alloc_desc, first_zone);
	printf("  inodes           %" PRIu64 "\n", sb.ninodes);
	printf("  metadata         %" PRIu64 " blocks of 4 KiB (journal %" PRIu64 "), backup at byte %"
	       PRIu64 "\n", sb.meta_blocks, sb.journal_blocks, sb.backup_off);
	if (!profile)
		printf("  disk model       %s\n", sb.disk_model);
	else if (profile_file)
		printf("  disk model       %s, from %s\n", sb.disk_model, profile_file);
	else
		printf("  disk model       %s: measured now (a quick read-only profile through %s)\n",
		       sb.disk_model, m.backend);
	printf("  service time     %.2f MB/s at LBA 0 to %.2f MB/s at the end, mean %s %.3f ms\n",
	       (double)sb.rate_max / 1e6, (double)sb.rate_min / 1e6,
	       sb.rotation_ns ? "seek" : "access", (double)sb.seek_avg_ns / 1e6);
	if (sb.rotation_ns)
		printf("  rotation         %.3f ms (%.0f rpm)\n", (double)sb.rotation_ns / 1e6,
		       60e9 / (double)sb.rotation_ns);
	else
		printf("  rotation         none measured\n");
	return 0;
}

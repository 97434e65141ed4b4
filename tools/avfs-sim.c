/*
 * avfs-sim — the virtual-time simulator. This first form drives the simulated disk alone:
 * `avfs-sim disk --disk MODEL --probe` measures the model from outside, through the backend
 * interface and virtual time only, as a profiler would measure a real drive.
 * Workload simulation (file system + traffic mixer) is not part of this build yet.
 */
#include "config.h"
#include "disk.h"
#include "hddmodel.h"
#include "simdisk.h"
#include "simengine.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB 1e6
#define NS_PER_MS 1e6

struct probe {
	struct avfs_disk *d;
	struct avfs_sim_engine *eng;
	struct avfs_hdd *hdd;
	uint8_t *buf;
	uint64_t rng;
};

static uint64_t rnd(uint64_t *x)	/* splitmix64 */
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void usage(FILE *f)
{
	const char *const *m = avfs_hdd_model_names();

	fprintf(f,
		"usage: avfs-sim disk --disk MODEL --probe [--seed N] [--json]\n"
		"\n"
		"  disk --probe   measure the simulated disk from outside: rotational latency,\n"
		"                 random 4 KiB read time, seek times (1 cylinder, 1/3 and full\n"
		"                 stroke, mean), sequential rate at 8 points across the LBA range\n"
		"  --disk MODEL   one of:");
	for (; *m; m++)
		fprintf(f, " %s", *m);
	fprintf(f, " (default avfs-250g)\n"
		"  --seed N       the model's seed (jitter, error recovery) and the probe's\n"
		"  --json         machine-readable output\n"
		"\n"
		"Workload simulation (--workload NrMw ...) needs the file system and the traffic\n"
		"mixer; this build does not have them yet.\n");
}

/* One request at virtual now, to completion: the service time in ns (or -errno). */
static int64_t svc(struct probe *p, enum avfs_disk_op op, uint64_t lba, uint32_t len)
{
	struct avfs_disk_req rq = { .op = op, .lba = lba, .len = len, .buf = p->buf,
				    .buf_index = -1 };
	uint64_t t0 = avfs_sim_now(p->eng);
	int64_t res = avfs_disk_io_sync(p->d, &rq);

	if (res < 0)
		return res;
	return (int64_t)(avfs_sim_now(p->eng) - t0);
}

static void think(struct probe *p, uint64_t max_ns)
{
	avfs_sim_run_until(p->eng, avfs_sim_now(p->eng) + rnd(&p->rng) % max_ns);
}

/* A random 4 KiB-aligned sector on head 0 of cylinder c. */
static uint64_t on_cyl(struct probe *p, uint32_t c)
{
	uint64_t first = avfs_hdd_cyl_first_sector(p->hdd, c);
	uint64_t room = avfs_hdd_spt_at(p->hdd, first) - 8;
	uint64_t nsect = p->d->info.size / 512;

	if (first + room + 8 > nsect)	/* the last cylinder may be partly used */
		room = nsect - 8 - first;
	return first + (room >= 8 ? (rnd(&p->rng) % (room / 8)) * 8 : 0);
}

struct seekfig { double track, third, full, mean; };

struct result {
	double rot_lat, rotation, random4k, base;
	struct seekfig seek;
	double rate[8], rate_off[8];
	double outer, inner;
	unsigned samples;
	double vsec;
};

#define CHECK(x) do { int64_t r_ = (x); if (r_ < 0) return (int)r_; } while (0)

/* min service of a 4 KiB write to a random sector of cylinder c1 + d after one on c1:
 * with a random pause between them the rotational wait is uniform, so the minimum over
 * many samples leaves overhead + seek + transfer (papers/003 §3.4, Diskbench's method) */
static int seek_at(struct probe *p, uint32_t d, unsigned n, double base, double *out)
{
	uint32_t ncyl = avfs_hdd_cylinders(p->hdd);
	double mn = INFINITY;

	for (unsigned i = 0; i < n; i++) {
		uint32_t c1 = d >= ncyl - 1 ? 0 : (uint32_t)(rnd(&p->rng) % (ncyl - d));
		int64_t t;

		CHECK(svc(p, AVFS_DISK_WRITE, on_cyl(p, c1), 4096));
		think(p, 1000 * NS_PER_MS);
		t = svc(p, AVFS_DISK_WRITE, on_cyl(p, c1 + d), 4096);
		CHECK(t);
		mn = fmin(mn, (double)t);
	}
	*out = (mn - base) / NS_PER_MS;
	return 0;
}

static int run_probe(struct probe *p, struct result *r)
{
	const unsigned n_rot = 4000, n_rand = 20000, n_seek = 2000;
	uint64_t nsect = p->d->info.size / 512;
	bool hdd = p->d->info.rotational;
	double sum = 0, mn = INFINITY;
	int64_t t;

	/* rotational latency: 4 KiB writes on the first track after random pauses */
	for (unsigned i = 0; i < n_rot; i++) {
		think(p, 1000 * NS_PER_MS);
		t = svc(p, AVFS_DISK_WRITE, (rnd(&p->rng) % 32) * 8, 4096);
		CHECK(t);
		sum += (double)t;
		mn = fmin(mn, (double)t);
	}
	r->base = mn;	/* overhead + 4 KiB transfer, no seek, (almost) no rotation */
	r->rot_lat = (sum / n_rot - mn) / NS_PER_MS;
	/* rotation period: the same sector written twice back to back waits a full turn */
	CHECK(svc(p, AVFS_DISK_WRITE, 64, 4096));
	t = svc(p, AVFS_DISK_WRITE, 64, 4096);
	CHECK(t);
	r->rotation = hdd ? ((double)t - mn) / NS_PER_MS + (mn - 0) / NS_PER_MS : 0;
	if (hdd)	/* the second write waited T_r minus the command overhead it overlapped */
		r->rotation = (double)t / NS_PER_MS;
	r->samples = n_rot + 2;

	/* random 4 KiB reads, queue depth 1 */
	sum = 0;
	for (unsigned i = 0; i < n_rand; i++) {
		t = svc(p, AVFS_DISK_READ, (rnd(&p->rng) % (nsect / 8)) * 8, 4096);
		CHECK(t);
		sum += (double)t;
	}
	r->random4k = sum / n_rand / NS_PER_MS;
	r->samples += n_rand;

	if (hdd) {
		uint32_t ncyl = avfs_hdd_cylinders(p->hdd);

		CHECK(seek_at(p, 1, n_seek, mn, &r->seek.track));
		CHECK(seek_at(p, ncyl / 3, n_seek, mn, &r->seek.third));
		CHECK(seek_at(p, ncyl - 1, n_seek, mn, &r->seek.full));
		/* mean seek over random LBA pairs: what random reads spend beyond rotation,
		 * overhead and transfer */
		r->seek.mean = r->random4k - r->rot_lat - mn / NS_PER_MS;
		r->samples += 3 * 2 * n_seek;
	}

	/* sequential rate at 8 points across the LBA range: 64 MiB in 1 MiB reads; the first
	 * read (seek + rotation) is left out of the rate */
	for (int i = 0; i < 8; i++) {
		const uint32_t io = 1 << 20, n = 64;
		uint64_t span = (uint64_t)n * io / 512;
		uint64_t start = i == 7 ? nsect - span : (uint64_t)((double)(nsect - span) * i / 7);
		uint64_t t0 = 0;

		start &= ~7ull;
		for (uint32_t k = 0; k < n; k++) {
			CHECK(svc(p, AVFS_DISK_READ, start + (uint64_t)k * io / 512, io));
			if (k == 0)
				t0 = avfs_sim_now(p->eng);
		}
		r->rate[i] = (double)(n - 1) * io / ((double)(avfs_sim_now(p->eng) - t0) / 1e9) / MB;
		r->rate_off[i] = (double)start * 512 / 1e9;
		r->samples += n;
	}
	r->outer = r->rate[0];
	r->inner = r->rate[7];
	r->vsec = (double)avfs_sim_now(p->eng) / 1e9;
	return 0;
}

static void print_text(const char *model, struct probe *p, const struct result *r)
{
	printf("avfs-sim disk probe: model %s (%.1f GB, %u cylinders, %s)\n", model,
	       (double)p->d->info.size / 1e9, avfs_hdd_cylinders(p->hdd),
	       p->d->info.rotational ? "rotational" : "non-rotational");
	printf("  measured from outside with %u requests in %.1f s of virtual time\n",
	       r->samples, r->vsec);
	printf("  rotation period          %8.3f ms\n", r->rotation);
	printf("  mean rotational latency  %8.3f ms\n", r->rot_lat);
	printf("  random 4 KiB read        %8.3f ms (mean, queue depth 1)\n", r->random4k);
	if (p->d->info.rotational) {
		printf("  seek, 1 cylinder         %8.3f ms\n", r->seek.track);
		printf("  seek, 1/3 stroke         %8.3f ms\n", r->seek.third);
		printf("  seek, full stroke        %8.3f ms\n", r->seek.full);
		printf("  seek, mean (random LBAs) %8.3f ms\n", r->seek.mean);
	}
	printf("  sequential read rate (1 MiB requests):\n");
	for (int i = 0; i < 8; i++)
		printf("    at %8.2f GB  %7.2f MB/s\n", r->rate_off[i], r->rate[i]);
	printf("  outer %.2f MB/s, inner %.2f MB/s\n", r->outer, r->inner);
}

static void print_json(const char *model, struct probe *p, const struct result *r)
{
	printf("{\"disk\": \"%s\", \"capacity_bytes\": %" PRIu64 ", \"cylinders\": %u, "
	       "\"rotational\": %s, \"samples\": %u, \"virtual_s\": %.3f,\n",
	       model, p->d->info.size, avfs_hdd_cylinders(p->hdd),
	       p->d->info.rotational ? "true" : "false", r->samples, r->vsec);
	printf(" \"rotation_ms\": %.4f, \"rotational_latency_ms\": %.4f, \"random_4k_ms\": %.4f,\n",
	       r->rotation, r->rot_lat, r->random4k);
	printf(" \"seek_ms\": {\"track\": %.4f, \"third\": %.4f, \"full\": %.4f, \"mean\": %.4f},\n",
	       r->seek.track, r->seek.third, r->seek.full, r->seek.mean);
	printf(" \"outer_rate_mbs\": %.3f, \"inner_rate_mbs\": %.3f,\n", r->outer, r->inner);
	printf(" \"rate_mbs\": [");
	for (int i = 0; i < 8; i++)
		printf("%s{\"offset_gb\": %.3f, \"mbs\": %.3f}", i ? ", " : "", r->rate_off[i],
		       r->rate[i]);
	printf("]}\n");
}

static int cmd_disk(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "disk", required_argument, NULL, 'd' },
		{ "probe", no_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *model = "avfs-250g";
	bool probe = false, json = false;
	uint64_t seed = 1;
	struct probe p = { 0 };
	struct result r = { 0 };
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': model = optarg; break;
		case 'p': probe = true; break;
		case 'j': json = true; break;
		case 's': {
			char *end;

			errno = 0;
			seed = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "avfs-sim: --seed: not a number: '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !probe) {
		fprintf(stderr, "avfs-sim: disk: say --probe (the only disk action)\n");
		usage(stderr);
		return 2;
	}
	err = avfs_sim_engine_new(&p.eng);
	if (!err)
		err = avfs_simdisk_open_model(p.eng, model, seed, AVFS_SIMDISK_NODATA, &p.d);
	if (err == -ENOENT) {
		fprintf(stderr, "avfs-sim: unknown disk model '%s' (see --help)\n", model);
		avfs_sim_engine_free(p.eng);
		return 2;
	}
	if (err) {
		fprintf(stderr, "avfs-sim: cannot open the simulated disk: %s\n", strerror(-err));
		avfs_sim_engine_free(p.eng);
		return 1;
	}
	p.hdd = avfs_simdisk_model(p.d);
	p.rng = seed ^ 0x70be5eedull;
	p.buf = avfs_disk_alloc_buf(p.d, 1 << 20);
	err = p.buf ? run_probe(&p, &r) : -ENOMEM;
	if (!err) {
		if (json)
			print_json(model, &p, &r);
		else
			print_text(model, &p, &r);
	} else {
		fprintf(stderr, "avfs-sim: probe failed: %s\n", strerror(-err));
	}
	free(p.buf);
	avfs_disk_close(p.d);
	avfs_sim_engine_free(p.eng);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "disk"))
		return cmd_disk(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "--version")) {
		printf("avfs-sim %s\n", AVFS_VERSION);
		return 0;
	}
	fprintf(stderr, "avfs-sim: %s\n", argc < 2 ? "no command given" :
		"workload simulation needs the file system and the traffic mixer, "
		"which this build does not have yet");
	usage(stderr);
	return 2;
}

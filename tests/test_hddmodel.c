/*
 * test_hddmodel.c — the HDD mechanical model against the figures it is pinned to (SPEC §11):
 * seek curve, rotation, zone rates, read-ahead, write cache, SEEK, ssd, determinism by seed,
 * and refusal of impossible parameters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hddmodel.h"

static struct avfs_hdd *model(const char *name, uint64_t seed)
{
	struct avfs_hdd_params p;
	struct avfs_hdd *h;

	assert_int_equal(avfs_hdd_params_lookup(name, &p), 0);
	p.seed = seed;
	assert_int_equal(avfs_hdd_new(&p, &h), 0);
	return h;
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 17;
}

static void assert_within(double got, double want, double frac)
{
	if (fabs(got - want) > frac * fabs(want))
		fail_msg("got %.4f, want %.4f within %.1f%%", got, want, frac * 100);
}

/* The seek curve never decreases with distance and meets its model's track-to-track,
 * mean (over random LBA pairs) and full-stroke figures within 5%, for every HDD model. */
static void test_hddmodel_seek_curve(void **state)
{
	(void)state;
	for (const char *const *n = avfs_hdd_model_names(); *n; n++) {
		struct avfs_hdd *h = model(*n, 1);
		const struct avfs_hdd_params *p = avfs_hdd_params(h);
		uint32_t ncyl = avfs_hdd_cylinders(h);
		double prev = 0, sum = 0;
		uint64_t x = 99;

		if (p->ssd) {
			avfs_hdd_free(h);
			continue;
		}
		for (uint32_t d = 0; d < ncyl; d++) {
			double t = avfs_hdd_seek_ms(h, d);

			assert_true(t >= prev);
			prev = t;
		}
		assert_within(avfs_hdd_seek_ms(h, 1), p->seek_track_ms, 0.05);
		assert_within(avfs_hdd_seek_ms(h, ncyl - 1), p->seek_full_ms, 0.05);
		for (int i = 0; i < 100000; i++) {
			uint32_t a = avfs_hdd_cyl_of(h, lcg(&x) % avfs_hdd_sectors(h));
			uint32_t b = avfs_hdd_cyl_of(h, lcg(&x) % avfs_hdd_sectors(h));

			sum += avfs_hdd_seek_ms(h, a > b ? a - b : b - a);
		}
		assert_within(sum / 100000, p->seek_mean_ms, 0.05);
		avfs_hdd_free(h);
	}
}

/* The avfs-250g curve hits SPEC §11's figures: 0.8 / 8.5 / 17 ms. */
static void test_hddmodel_avfs250g_figures(void **state)
{
	struct avfs_hdd *h = model("avfs-250g", 1);

	(void)state;
	assert_within(avfs_hdd_seek_ms(h, 1), 0.8, 0.05);
	assert_within(avfs_hdd_seek_ms(h, avfs_hdd_cylinders(h) - 1), 17.0, 0.05);
	assert_within(avfs_hdd_rotation_ms(h), 8.3333, 0.001);
	assert_int_equal(avfs_hdd_sectors(h), 250000000000ull / 512);
	avfs_hdd_free(h);
}

/* Mean rotational latency over many random requests at random times is T_r / 2 within 3%. */
static void test_hddmodel_rotational_latency(void **state)
{
	(void)state;
	for (const char *const *n = avfs_hdd_model_names(); *n; n++) {
		struct avfs_hdd *h = model(*n, 1);
		struct avfs_hdd_result r;
		uint64_t x = 5, t = 0;
		double sum = 0;
		const int N = 20000;

		if (avfs_hdd_params(h)->ssd) {
			avfs_hdd_free(h);
			continue;
		}
		for (int i = 0; i < N; i++) {
			t += lcg(&x) % 30000000;
			assert_int_equal(avfs_hdd_service(h, t, AVFS_HDD_WRITE,
							  lcg(&x) % (avfs_hdd_sectors(h) - 8), 8,
							  false, &r), 0);
			sum += r.rot;
			t = r.end;
		}
		assert_within(sum / N / 1e6, avfs_hdd_rotation_ms(h) / 2, 0.03);
		avfs_hdd_free(h);
	}
}

/* Reading a zone sequentially goes at that zone's configured rate within 2%, in every zone
 * of every HDD model (read-ahead keeps the head streaming between queue-depth-1 requests). */
static void test_hddmodel_zone_rates(void **state)
{
	(void)state;
	for (const char *const *n = avfs_hdd_model_names(); *n; n++) {
		struct avfs_hdd *h = model(*n, 1);

		for (unsigned z = 0; z < avfs_hdd_nzones(h); z++) {
			struct avfs_hdd_result r;
			uint64_t s = avfs_hdd_zone_first_sector(h, z), t = 0, t0 = 0;
			const uint32_t io = 2048, k = 24;	/* 24 MiB in 1 MiB requests */

			for (uint32_t i = 0; i < k; i++) {
				assert_int_equal(avfs_hdd_service(h, t, AVFS_HDD_READ, s + i * io,
								  io, false, &r), 0);
				if (i == 0)
					t0 = r.end;
				else
					assert_true(r.cache_hit);
				t = r.end;
			}
			assert_within((k - 1) * io * 512.0 / ((t - t0) / 1e9),
				      avfs_hdd_zone_rate(h, z), 0.02);
		}
		avfs_hdd_free(h);
	}
}

/* The outer zone is 70 MB/s and the inner 38 MB/s on avfs-250g, and rates fall inward. */
static void test_hddmodel_avfs250g_zones(void **state)
{
	struct avfs_hdd *h = model("avfs-250g", 1);
	unsigned nz = avfs_hdd_nzones(h);

	(void)state;
	assert_int_equal(nz, 16);
	assert_within(avfs_hdd_zone_rate(h, 0), 70e6, 0.001);
	assert_within(avfs_hdd_zone_rate(h, nz - 1), 38e6, 0.001);
	for (unsigned z = 1; z < nz; z++) {
		assert_true(avfs_hdd_zone_rate(h, z) < avfs_hdd_zone_rate(h, z - 1));
		assert_true(avfs_hdd_zone_first_sector(h, z) > avfs_hdd_zone_first_sector(h, z - 1));
		assert_true(avfs_hdd_spt_at(h, avfs_hdd_zone_first_sector(h, z)) <
			    avfs_hdd_spt_at(h, avfs_hdd_zone_first_sector(h, z - 1)));
	}
	avfs_hdd_free(h);
}

/* A sequential read right after a read is served from the read-ahead cache (no seek, no
 * rotational wait); after a pause it is wholly in the cache and takes only bus time; a
 * write over the cached range makes the next read go to the medium again. */
static void test_hddmodel_read_ahead(void **state)
{
	struct avfs_hdd *h = model("avfs-250g", 1);
	struct avfs_hdd_result a, b, c, d;
	uint64_t L = 123456789;

	(void)state;
	assert_int_equal(avfs_hdd_service(h, 0, AVFS_HDD_READ, L, 256, false, &a), 0);
	assert_false(a.cache_hit);
	assert_int_equal(avfs_hdd_service(h, a.end, AVFS_HDD_READ, L + 256, 256, false, &b), 0);
	assert_true(b.cache_hit);
	assert_true(b.seek == 0 && b.rot == 0);
	assert_true(b.end - b.start < a.end - a.start);
	/* 50 ms later the read-ahead has gone far beyond: a pure cache hit */
	assert_int_equal(avfs_hdd_service(h, b.end + 50000000, AVFS_HDD_READ, L + 512, 256,
					  false, &c), 0);
	assert_true(c.cache_hit);
	assert_true(c.end - c.start < 1000000);	/* 128 KiB at bus speed + overhead < 1 ms */
	assert_int_equal(avfs_hdd_service(h, c.end, AVFS_HDD_WRITE, L + 768, 8, false, &d), 0);
	assert_int_equal(avfs_hdd_service(h, d.end, AVFS_HDD_READ, L + 768, 8, false, &d), 0);
	assert_false(d.cache_hit);
	avfs_hdd_free(h);
}

/* Write cache off (the default): a write completes when it is on the medium. On: it
 * completes after the bus transfer while the drive stays busy; FUA waits for the medium. */
static void test_hddmodel_write_cache(void **state)
{
	struct avfs_hdd_params p;
	struct avfs_hdd *h;
	struct avfs_hdd_result r, f;

	(void)state;
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	assert_false(p.write_cache);
	assert_int_equal(avfs_hdd_new(&p, &h), 0);
	assert_int_equal(avfs_hdd_service(h, 0, AVFS_HDD_WRITE, 1 << 28, 128, false, &r), 0);
	assert_int_equal(r.end, r.busy_until);
	avfs_hdd_free(h);

	p.write_cache = true;
	assert_int_equal(avfs_hdd_new(&p, &h), 0);
	assert_int_equal(avfs_hdd_service(h, 0, AVFS_HDD_WRITE, 1 << 28, 128, false, &r), 0);
	assert_true(r.end < r.busy_until);
	assert_true(r.end - r.start < 1000000);
	/* the next command (a flush) waits for the write-back */
	assert_int_equal(avfs_hdd_service(h, r.end, AVFS_HDD_FLUSH, 0, 0, false, &f), 0);
	assert_true(f.start >= r.busy_until);
	assert_int_equal(avfs_hdd_service(h, f.end, AVFS_HDD_WRITE, 1 << 20, 128, true, &r), 0);
	assert_int_equal(r.end, r.busy_until);
	avfs_hdd_free(h);
}

/* SEEK moves the head: the seek is paid by the SEEK command, not by the read after it. */
static void test_hddmodel_seek_command(void **state)
{
	struct avfs_hdd *h = model("avfs-250g", 1);
	struct avfs_hdd_result s, r;
	uint64_t far = avfs_hdd_cyl_first_sector(h, 90000);

	(void)state;
	assert_int_equal(avfs_hdd_service(h, 0, AVFS_HDD_SEEK, far, 0, false, &s), 0);
	assert_int_equal(s.to_cyl, 90000);
	assert_within(s.seek / 1e6, avfs_hdd_seek_ms(h, 90000), 1e-9);
	assert_int_equal(avfs_hdd_service(h, s.end, AVFS_HDD_READ, far + 16, 8, false, &r), 0);
	assert_true(r.seek == 0);
	assert_int_equal(r.seek_cyl, 0);
	assert_int_equal(avfs_hdd_service(h, r.end, AVFS_HDD_SEEK, avfs_hdd_sectors(h), 0,
					  false, &s), -EINVAL);
	avfs_hdd_free(h);
}

/* The mean random 4 KiB read on avfs-250g takes about 12.8 ms (SPEC §11): 11..15 ms. */
static void test_hddmodel_random_read(void **state)
{
	struct avfs_hdd *h = model("avfs-250g", 1);
	struct avfs_hdd_result r;
	uint64_t x = 11, t = 0;
	double sum = 0;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		assert_int_equal(avfs_hdd_service(h, t, AVFS_HDD_READ,
						  (lcg(&x) % (avfs_hdd_sectors(h) / 8)) * 8, 8, false,
						  &r), 0);
		sum += (double)(r.end - r.start);
		t = r.end;
	}
	sum /= 20000 * 1e6;
	assert_true(sum > 11 && sum < 15);
	assert_within(sum, 12.8, 0.03);
	avfs_hdd_free(h);
}

static uint64_t run_hash(uint64_t seed)
{
	struct avfs_hdd_params p;
	struct avfs_hdd *h;
	struct avfs_hdd_result r;
	uint64_t x = 777, t = 0, hash = 0xcbf29ce484222325ull;

	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	p.seed = seed;
	p.jitter = 0.1;
	p.err_prob = 0.01;
	assert_int_equal(avfs_hdd_new(&p, &h), 0);
	for (int i = 0; i < 2000; i++) {
		assert_int_equal(avfs_hdd_service(h, t, (i & 3) ? AVFS_HDD_READ : AVFS_HDD_WRITE,
						  lcg(&x) % (avfs_hdd_sectors(h) - 64), 64, false,
						  &r), 0);
		hash = (hash ^ r.end) * 0x100000001b3ull;
		hash = (hash ^ r.recovered) * 0x100000001b3ull;
		t = r.end + (lcg(&x) % 1000000);
	}
	avfs_hdd_free(h);
	return hash;
}

/* With jitter and error recovery on, the same seed gives the same trace and another seed
 * a different one. */
static void test_hddmodel_deterministic_seed(void **state)
{
	(void)state;
	assert_true(run_hash(1) == run_hash(1));
	assert_true(run_hash(2) == run_hash(2));
	assert_true(run_hash(1) != run_hash(2));
}

/* Rare error recovery makes a few requests slow by err_ms, at about the asked rate. */
static void test_hddmodel_error_recovery(void **state)
{
	struct avfs_hdd_params p;
	struct avfs_hdd *h;
	struct avfs_hdd_result r;
	uint64_t x = 3, t = 0;
	int slow = 0;

	(void)state;
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	p.err_prob = 0.01;
	p.seed = 9;
	assert_int_equal(avfs_hdd_new(&p, &h), 0);
	for (int i = 0; i < 10000; i++) {
		assert_int_equal(avfs_hdd_service(h, t, AVFS_HDD_READ,
						  lcg(&x) % (avfs_hdd_sectors(h) - 8), 8, false,
						  &r), 0);
		if (r.recovered) {
			slow++;
			assert_true(r.end - r.start > p.err_ms * 1e6);
		}
		t = r.end;
	}
	assert_true(slow > 60 && slow < 140);
	avfs_hdd_free(h);
}

/* The ssd model has no mechanics: service = overhead + latency + size / rate. */
static void test_hddmodel_ssd(void **state)
{
	struct avfs_hdd *h = model("ssd", 1);
	const struct avfs_hdd_params *p = avfs_hdd_params(h);
	struct avfs_hdd_result a, b;
	double want = (p->overhead_ms + p->ssd_read_ms) * 1e6 + 1048576 / p->ssd_rate * 1e9;

	(void)state;
	assert_int_equal(avfs_hdd_service(h, 0, AVFS_HDD_READ, 0, 2048, false, &a), 0);
	assert_int_equal(avfs_hdd_service(h, a.end, AVFS_HDD_READ, avfs_hdd_sectors(h) - 2048,
					  2048, false, &b), 0);
	assert_within((double)(a.end - a.start), want, 0.001);
	assert_int_equal(a.end - a.start, b.end - b.start);	/* position does not matter */
	assert_true(b.seek == 0 && b.rot == 0);
	avfs_hdd_free(h);
}

/* Unknown names and impossible parameters are refused; requests beyond the end too. */
static void test_hddmodel_bad_input(void **state)
{
	struct avfs_hdd_params p;
	struct avfs_hdd *h;
	struct avfs_hdd_result r;

	(void)state;
	assert_int_equal(avfs_hdd_params_lookup("floppy", &p), -ENOENT);
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	p.seek_mean_ms = 20;	/* mean above full stroke */
	assert_int_equal(avfs_hdd_new(&p, &h), -EINVAL);
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	p.rpm = 0;
	assert_int_equal(avfs_hdd_new(&p, &h), -EINVAL);
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	p.jitter = 1.5;
	assert_int_equal(avfs_hdd_new(&p, &h), -EINVAL);
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	assert_int_equal(avfs_hdd_new(&p, &h), 0);
	assert_int_equal(avfs_hdd_service(h, 0, AVFS_HDD_READ, avfs_hdd_sectors(h) - 4, 8, false,
					  &r), -EINVAL);
	assert_int_equal(avfs_hdd_service(h, 0, AVFS_HDD_READ, 0, 0, false, &r), -EINVAL);
	avfs_hdd_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hddmodel_avfs250g_figures),
		cmocka_unit_test(test_hddmodel_avfs250g_zones),
		cmocka_unit_test(test_hddmodel_bad_input),
		cmocka_unit_test(test_hddmodel_deterministic_seed),
		cmocka_unit_test(test_hddmodel_error_recovery),
		cmocka_unit_test(test_hddmodel_random_read),
		cmocka_unit_test(test_hddmodel_read_ahead),
		cmocka_unit_test(test_hddmodel_rotational_latency),
		cmocka_unit_test(test_hddmodel_seek_command),
		cmocka_unit_test(test_hddmodel_seek_curve),
		cmocka_unit_test(test_hddmodel_ssd),
		cmocka_unit_test(test_hddmodel_write_cache),
		cmocka_unit_test(test_hddmodel_zone_rates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_rotpred.c — the rotational position predictor (daemon/rotpred.c): its arithmetic on a
 * disk of one rate, and its accuracy against the mechanical HDD model that the simulator and
 * hddemu use (disk/hddmodel.c), whose completions it is fed as avfsd feeds it real ones. */
#include "hddmodel.h"
#include "rotpred.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <setjmp.h>	/* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define MS 1000000.0

/* one rate: a track is exactly rate · T_r bytes */
static const struct avfs_rotpred_params flat = {
	.tr_ns = 8 * MS, .track_ns = 1 * MS, .full_ns = 15 * MS, .overhead_ns = 0,
	.dmax = 50e6, .dmin = 50e6, .lmax = 100ull << 30,
};
#define TRACK_BYTES 400000ull	/* 50e6 B/s · 8 ms */

/* Proves: impossible parameters are refused, and nothing is predicted before a completion. */
static void test_rotpred_refuses(void **state)
{
	struct avfs_rotpred r;
	struct avfs_rotpred_params p = flat;
	int64_t s, ro, h;
	uint64_t mid;

	(void)state;
	p.tr_ns = 0;
	assert_int_equal(avfs_rotpred_init(&r, &p), -EINVAL);
	p = flat, p.dmin = 2 * p.dmax;
	assert_int_equal(avfs_rotpred_init(&r, &p), -EINVAL);
	p = flat, p.full_ns = 0.5 * MS;
	assert_int_equal(avfs_rotpred_init(&r, &p), -EINVAL);
	p = flat, p.lmax = 0;
	assert_int_equal(avfs_rotpred_init(&r, &p), -EINVAL);
	assert_int_equal(avfs_rotpred_init(&r, &flat), 0);
	assert_int_equal(avfs_rotpred_predict(&r, 0, 4096, &s, &ro, &h, &mid), -EAGAIN);
	avfs_rotpred_observe(&r, 1000, 0, false);	/* a SEEK: the phase is still unknown */
	assert_int_equal(avfs_rotpred_predict(&r, 0, 4096, &s, &ro, &h, &mid), -EAGAIN);
	avfs_rotpred_observe(&r, 1000, 0, true);
	assert_int_equal(avfs_rotpred_predict(&r, 0, flat.lmax, &s, &ro, &h, &mid), -EINVAL);
}

/* Proves: the angle is the position within the track; after a completion at byte e the wait
 * for a byte a quarter track further on the same track is a quarter turn minus the time the
 * platter turned meanwhile, and the seek, half seek and midpoint follow the curve. */
static void test_rotpred_flat_disk(void **state)
{
	struct avfs_rotpred r;
	int64_t s, ro, h;
	uint64_t mid, base = 1000 * TRACK_BYTES;

	(void)state;
	assert_int_equal(avfs_rotpred_init(&r, &flat), 0);
	assert_true(fabs(avfs_rotpred_angle(&r, base + TRACK_BYTES / 4) - 0.25) < 1e-6);
	assert_true(fabs(avfs_rotpred_angle(&r, base + 3 * TRACK_BYTES / 4) - 0.75) < 1e-6);
	avfs_rotpred_observe(&r, 5 * 1000000000ll, base, true);
	/* asked at once: a quarter turn, 2 ms (the seek over 100 kB is track + a little) */
	assert_int_equal(avfs_rotpred_predict(&r, 5 * 1000000000ll, base + TRACK_BYTES / 4, &s,
					      &ro, &h, &mid), 0);
	assert_true(s > 1 * MS && s < 1.1 * MS);
	/* the seek used up s of the quarter turn: what is left */
	assert_true(llabs(ro - (int64_t)(2 * MS - s)) < 1000);
	assert_int_equal(mid, base + TRACK_BYTES / 8);
	assert_true(h < s && h > 1 * MS);
	/* asked 1 ms later, the platter has turned an eighth more: the seek (over 1 ms) now
	 * lands after the sector, which comes round again a turn later */
	assert_int_equal(avfs_rotpred_predict(&r, 5 * 1000000000ll + 1000000, base + TRACK_BYTES / 4,
					      &s, &ro, &h, &mid), 0);
	assert_true(llabs(ro - (int64_t)(9 * MS - s)) < 1000);
	/* the byte the head is over: no seek, no wait */
	assert_int_equal(avfs_rotpred_predict(&r, 5 * 1000000000ll, base, &s, &ro, &h, &mid), 0);
	assert_int_equal(s + ro, 0);
	/* a full stroke: the seek predicted, the wait only half a turn (too far for the angles) */
	assert_int_equal(avfs_rotpred_predict(&r, 5 * 1000000000ll, flat.lmax - 4096, &s, &ro, &h,
					      &mid), AVFS_PRED_ROT_MEAN);
	assert_true(s > 14.9 * MS && s <= 15 * MS);
	assert_int_equal(ro, 4 * MS);
	assert_true(h > 10 * MS && h < s);
}

/* Proves, and prints: fed the completions of the HDD model (avfs-250g) for reads a short way
 * from the last one (within 1 MiB: the neighbourhood a C-SCAN sweep works in), the predicted
 * rotational wait is closer to the model's own than a guess of half a turn is. */
static void test_rotpred_against_hdd_model(void **state)
{
	struct avfs_hdd_params hp;
	struct avfs_hdd *hdd;
	struct avfs_rotpred r;
	struct avfs_rotpred_params rp;
	struct avfs_hdd_result res;
	uint64_t now = 1000000000ull, sector = 100000000ull;
	double err = 0, guess = 0;
	unsigned n = 0, seed = 7;

	(void)state;
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &hp), 0);
	hp.read_ahead = false;	/* every read goes to the platter */
	assert_int_equal(avfs_hdd_new(&hp, &hdd), 0);
	rp = (struct avfs_rotpred_params){
		.tr_ns = 60e9 / hp.rpm, .track_ns = hp.seek_track_ms * MS,
		.full_ns = hp.seek_full_ms * MS, .overhead_ns = hp.overhead_ms * MS,
		.dmax = hp.rate_outer, .dmin = hp.rate_inner, .lmax = hp.capacity,
	};
	assert_int_equal(avfs_rotpred_init(&r, &rp), 0);
	for (unsigned i = 0; i < 2000; i++) {
		int64_t s, ro, h;
		uint64_t mid, next;

		seed = seed * 1103515245u + 12345u;
		next = sector + ((seed >> 8) % 2048) - 1024;	/* ±512 KiB */
		if (r.known && !avfs_rotpred_predict(&r, (int64_t)now, next * 512, &s, &ro, &h,
						     &mid) && (s || ro)) {
			assert_int_equal(avfs_hdd_service(hdd, now, AVFS_HDD_READ, next, 8, false,
							  &res), 0);
			err += fabs((double)ro - res.rot);
			guess += fabs(rp.tr_ns / 2 - res.rot);
			n++;
		} else {
			assert_int_equal(avfs_hdd_service(hdd, now, AVFS_HDD_READ, next, 8, false,
							  &res), 0);
		}
		avfs_rotpred_observe(&r, (int64_t)res.end, (next + 8) * 512, true);
		now = res.end + (seed % 3) * 1000000ull;
		sector = next;
	}
	printf("rotpred vs avfs-250g, %u reads within 512 KiB: mean |error| of the rotational "
	       "wait %.3f ms, half-turn guess %.3f ms (T_r %.3f ms)\n", n, err / n / MS,
	       guess / n / MS, rp.tr_ns / MS);
	assert_true(n > 1000);
	assert_true(err < guess);
	avfs_hdd_free(hdd);
}

/* Proves, and prints: with the model's own mechanics (avfs_rotpred_named, as avfsd
 * --disk-model uses them), reads anywhere on the disk are predicted as the model serves them,
 * zones, skew and seek curve included. The linear model, no better than a guess that far away
 * (zone steps and skew are not in it), says so: AVFS_PRED_ROT_MEAN, half a turn, no JIT. */
static void test_rotpred_named_model_far(void **state)
{
	struct avfs_hdd_params hp;
	struct avfs_hdd *hdd, *geom;
	struct avfs_rotpred named, linear;
	struct avfs_rotpred_params rp, lp;
	struct avfs_svc_model m;
	struct avfs_hdd_result res;
	uint64_t now = 1000000000ull, seed = 11;
	double err_named = 0, err_linear = 0, guess = 0, err_seek = 0;
	unsigned n = 0, mean_only = 0;

	(void)state;
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &hp), 0);
	hp.read_ahead = false;
	assert_int_equal(avfs_hdd_new(&hp, &hdd), 0);
	assert_int_equal(avfs_rotpred_named("avfs-250g", hp.capacity, &m, &rp, &geom), 0);
	assert_int_equal(avfs_rotpred_named("no-such-disk", hp.capacity, &m, &lp, &geom), -ENOENT);
	assert_int_equal(avfs_rotpred_named("ssd", hp.capacity, &m, &lp, &geom), -ENOENT);
	assert_int_equal(avfs_rotpred_init(&named, &rp), 0);
	avfs_rotpred_params_from_model(&m, &lp);
	lp.track_ns = rp.track_ns, lp.full_ns = rp.full_ns, lp.overhead_ns = rp.overhead_ns;
	assert_int_equal(avfs_rotpred_init(&linear, &lp), 0);
	for (unsigned i = 0; i < 1000; i++) {
		int64_t s, ro, h, s2, ro2;
		uint64_t mid, sector;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		sector = (seed >> 11) % (hp.capacity / 512 - 8);
		if (i && !avfs_rotpred_predict(&named, (int64_t)now, sector * 512, &s, &ro, &h, &mid) &&
		    avfs_rotpred_predict(&linear, (int64_t)now, sector * 512, &s2, &ro2, &h, &mid) >= 0) {
			assert_int_equal(avfs_hdd_service(hdd, now, AVFS_HDD_READ, sector, 8, false,
							  &res), 0);
			err_named += fabs((double)ro - res.rot);
			err_linear += fabs((double)ro2 - res.rot);
			mean_only += ro2 == (int64_t)(rp.tr_ns / 2);
			err_seek += fabs((double)s - res.seek);
			guess += fabs(rp.tr_ns / 2 - res.rot);
			n++;
		} else {
			assert_int_equal(avfs_hdd_service(hdd, now, AVFS_HDD_READ, sector, 8, false,
							  &res), 0);
		}
		avfs_rotpred_observe(&named, (int64_t)res.end, (sector + 8) * 512, true);
		avfs_rotpred_observe(&linear, (int64_t)res.end, (sector + 8) * 512, true);
		now = res.end + (seed % 5) * 1000000ull;
	}
	printf("rotpred vs avfs-250g, %u reads anywhere on the disk: mean |error| of the rotational "
	       "wait %.3f ms with the model's mechanics (seek %.3f ms); linear: %u of them only "
	       "half a turn (error %.3f ms); half-turn guess %.3f ms\n", n, err_named / n / MS,
	       err_seek / n / MS, mean_only, err_linear / n / MS, guess / n / MS);
	assert_true(n > 900);
	assert_true(mean_only > 0.99 * n);
	assert_true(err_named < 0.05 * guess);
	avfs_hdd_free(geom);
	avfs_hdd_free(hdd);
}

/* One JIT run against the avfs-250g model with a transport: commands reach the drive d_in
 * after they are issued and their completions are seen d_out after they end (as through an
 * emulator). The caller times each command as the mixer does, JIT offset 1 ms; learn: tell the
 * predictor of each issue. The share of JIT'd commands that lost a turn over the last 1000. */
static double jit_losses(bool learn, double *slip_ms)
{
	const int64_t d_in = 800000, d_out = 600000, offset = 1000000;
	struct avfs_hdd_params hp;
	struct avfs_hdd *hdd, *geom;
	struct avfs_rotpred r;
	struct avfs_rotpred_params rp;
	struct avfs_svc_model m;
	struct avfs_hdd_result res;
	uint64_t seed = 5, sector = 1000000;
	int64_t t = 1000000000;
	unsigned jitted = 0, lost = 0;

	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &hp), 0);
	hp.read_ahead = false;
	assert_int_equal(avfs_hdd_new(&hp, &hdd), 0);
	assert_int_equal(avfs_rotpred_named("avfs-250g", hp.capacity, &m, &rp, &geom), 0);
	assert_int_equal(avfs_rotpred_init(&r, &rp), 0);
	for (unsigned i = 0; i < 3000; i++) {
		int64_t s = 0, ro = 0, h, at = t;
		uint64_t mid;
		bool jit = false;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		sector = (sector + (seed >> 20) % 200000) % (hp.capacity / 512 - 8);
		if (!avfs_rotpred_predict(&r, t, sector * 512, &s, &ro, &h, &mid) && ro > offset) {
			at = t + ro - offset;	/* the mixer's JIT wait */
			jit = true;
		}
		if (learn)
			avfs_rotpred_issued(&r, at, sector * 512, 4096);
		assert_int_equal(avfs_hdd_service(hdd, (uint64_t)(at + d_in), AVFS_HDD_READ, sector,
						  8, false, &res), 0);
		if (jit && i >= 2000) {
			jitted++;
			lost += res.rot > rp.tr_ns / 2;
		}
		t = (int64_t)res.end + d_out;
		avfs_rotpred_observe(&r, t, (sector + 8) * 512, true);
		t += (int64_t)(seed % 3) * 1000000;
	}
	*slip_ms = r.slip_ns / MS;
	avfs_hdd_free(geom);
	avfs_hdd_free(hdd);
	assert_true(jitted > 500);
	return (double)lost / jitted;
}

/* Proves, and prints: through a transport of 1.4 ms against a 1 ms JIT offset, nearly every
 * JIT'd command loses a turn unless the predictor learns the slip from the turns lost; then
 * few do. */
static void test_rotpred_learns_transport(void **state)
{
	double slip_fixed, slip_learned;
	double fixed = jit_losses(false, &slip_fixed), learned = jit_losses(true, &slip_learned);

	(void)state;
	printf("rotpred, JIT through a 0.8 + 0.6 ms transport with a 1 ms offset: %.0f %% of JIT'd "
	       "commands lose a turn without learning, %.0f %% with it (slip learned %.2f ms)\n",
	       100 * fixed, 100 * learned, slip_learned);
	assert_true(fixed > 0.5);
	assert_true(learned < 0.15);
	assert_true(slip_learned > 0.2 && slip_learned < 1.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotpred_refuses),
		cmocka_unit_test(test_rotpred_flat_disk),
		cmocka_unit_test(test_rotpred_against_hdd_model),
		cmocka_unit_test(test_rotpred_named_model_far),
		cmocka_unit_test(test_rotpred_learns_transport),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

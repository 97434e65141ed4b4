/*
 * test_admit.c — services and admission control (sched/admit.c, sched/sweep.c) against
 * hand-computed numbers: the translation of a service into disk-time utilization, the round
 * (sweep) model and its verdicts, Fahrrad's test it replaced, what a refusal says is left,
 * quotas, removal, the bandwidth class's token bucket and ABISS deadlines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <string.h>

#include "admit.h"

#define MS 1e6
#define MIB (1u << 20)

static void assert_near(double got, double want, double eps)
{
	if (fabs(got - want) > eps)
		fail_msg("got %.9g, want %.9g", got, want);
}

/* avfs-250g as SPEC §11 pins it: T_r 8.333 ms, T_k 8.5 ms, 70..38 MB/s; 4 MiB blocks; the
 * sweep test with the mechanics derived from that alone (track T_k/5, full stroke 2 T_k,
 * 200 µs a command, rates linear in the LBA) */
static struct avfs_admit_conf sweep_250g(void)
{
	struct avfs_svc_model m = { .tr_ns = 60e9 / 7200, .tk_ns = 8.5e6, .dmax = 70e6,
				    .dmin = 38e6, .lmax = 250000000000ull };
	struct avfs_admit_conf c;

	avfs_admit_conf_default(&c, &m, 4 * MIB);
	return c;
}

/* the same disk under Fahrrad's test, the one the sweep test replaced */
static struct avfs_admit_conf conf_250g(void)
{
	struct avfs_admit_conf c = sweep_250g();

	c.test = AVFS_ADMIT_FAHRRAD;
	return c;
}

/* The sweep model's own configuration for that disk (what admission builds from it): ZRR, the
 * mixer's margin (500 ms) and best-effort age (2 s), K 10, one request a command */
static struct avfs_sweep_conf sweep_conf_250g(void)
{
	struct avfs_admit_conf c = sweep_250g();
	struct avfs_sweep_conf sc = { 0 };

	sc.model = c.model;
	sc.block_size = c.block_size;
	sc.zrr = true;
	sc.margin_ns = 500e6;
	sc.be_age_ns = 2e9;
	sc.k = 10;
	assert_int_equal(avfs_sweep_conf_check(&sc), 0);
	return sc;
}

/* An ATSC HD stream (19.39 Mbit/s = 2,423,750 B/s) with a 4 MiB buffer and 512 KiB reads:
 *   p = (4 MiB - 512 KiB) / r = 3,670,016 / 2,423,750 = 1.514189 s
 *   one block boundary at most in 3.5 MiB, plus one: 2 seeks of 8.5 + 4.1667 ms
 *   e = 25.3333 ms + 3,670,016 B / 38 MB/s (96.5794 ms) = 121.9127 ms,  u = 0.0805135
 *   WCRT = 17 + 8.3333 + 524,288 / 38e6 (13.7971) = 39.1304 ms, S = 17 + 8.3333 = 25.3333 ms
 *   u' = u + WCRT / p + 2 S / p = 0.0805135 + 0.0258424 + 0.0334612 = 0.1398172 (isolation),
 *   u + WCRT / p = 0.1063560 (without) */
static void test_admit_cost_by_hand(void **state)
{
	struct avfs_admit_conf c = conf_250g();
	struct avfs_service_req r = { .rate = 2423750, .buffer = 4 * MIB, .io = 512 << 10 };
	struct avfs_service_cost k;
	char why[160];

	(void)state;
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), 0);
	assert_near(k.period_ns / 1e9, 1.5141892, 1e-6);
	assert_near(k.budget_ns / MS, 121.912702, 1e-5);
	assert_near(k.u, 0.08051352, 1e-7);
	assert_near(k.wcrt_ns / MS, 39.130386, 1e-5);
	assert_near(k.u_padded, 0.13981724, 1e-7);
	c.isolation = false;
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), 0);
	assert_near(k.u_padded, 0.10635599, 1e-7);

	/* a file whose blocks are no slower than 54 MB/s: transfer 67.9633 ms, u = 0.0616129 */
	r.d_slow = 54e6;
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), 0);
	assert_near(k.budget_ns / MS, 25.333333 + 3670016 / 54e3, 1e-5);
	assert_near(k.u, (25.333333e-3 + 3670016 / 54e6) / 1.5141892, 1e-6);

	/* 31 MiB a period crosses 8 block boundaries: 9 seeks (114 ms) + 855.4 ms transfer */
	r = (struct avfs_service_req){ .rate = 4 * MIB, .buffer = 32 * MIB, .io = MIB };
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), 0);
	assert_near(k.period_ns / 1e9, 7.75, 1e-9);
	assert_near(k.budget_ns / MS, 9 * 12.6666667 + 31 * 1048576 / 38e3, 1e-4);

	/* requests the translation refuses, each with a reason */
	r = (struct avfs_service_req){ .rate = 0, .buffer = 4 * MIB, .io = 512 << 10 };
	why[0] = 0;
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), -EINVAL);
	assert_true(why[0]);
	r.rate = 1000000;
	r.io = 1000;
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), -EINVAL);
	r.io = 4 * MIB;
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), -EINVAL);
	r.io = 0;	/* the configuration's default, 512 KiB */
	assert_int_equal(avfs_service_cost(&c, &r, &k, why, sizeof(why)), 0);
	assert_near(k.period_ns / 1e9, (4.0 * MIB - 524288) / 1e6, 1e-9);
}

/* One stream alone: load = u' + blocking / p, the blocking a 1 MiB best-effort command
 * (17 + 8.3333 + 27.5941 = 52.9274 ms): 0.1398172 + 0.0349543 = 0.1747716. Then fill the disk
 * with such streams until -EBUSY: what it says is left is a rate that is admitted, one more
 * byte/s is not. */
static void test_admit_busy_and_left(void **state)
{
	struct avfs_admit_conf c = conf_250g();
	struct avfs_service_req r = { .rate = 2423750, .buffer = 4 * MIB, .io = 512 << 10,
				      .uid = 1000 };
	struct avfs_admit_left left;
	struct avfs_admit *a;
	char why[200];
	int64_t id, last = 0;
	unsigned n = 0;

	(void)state;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_near(avfs_admit_load(a), 0, 0);
	id = avfs_admit_add(a, &r, &left, why, sizeof(why));
	assert_true(id > 0);
	assert_near(avfs_admit_load(a), 0.17477155, 1e-7);
	avfs_admit_left(a, NULL, &left);
	assert_near(left.util, 1 - 0.02 - 0.17477155, 1e-7);
	for (;;) {
		id = avfs_admit_add(a, &r, &left, why, sizeof(why));
		if (id < 0)
			break;
		assert_true(id > last);
		last = id;
		n++;
	}
	/* u' 0.1398 each plus 0.0350 once: six fit in 0.98 (0.8738), a seventh makes 1.0136 */
	assert_int_equal(id, -EBUSY);
	assert_int_equal(n + 1, 6);
	assert_int_equal(avfs_admit_count(a), 6);
	assert_true(strstr(why, "disk") != NULL);
	assert_true(avfs_admit_load(a) <= 0.98);
	assert_near(left.util, 0.98 - avfs_admit_load(a), 1e-9);
	assert_true(left.rate > 0 && left.rate < r.rate);
	assert_int_equal(left.quota_rate, UINT64_MAX);
	assert_int_equal(left.quota_streams, UINT32_MAX);

	r.rate = left.rate + 1;
	assert_int_equal(avfs_admit_add(a, &r, &left, why, sizeof(why)), -EBUSY);
	r.rate = left.rate;
	id = avfs_admit_add(a, &r, &left, why, sizeof(why));
	assert_true(id > 0);
	assert_true(avfs_admit_load(a) <= 0.98);
	assert_int_equal(avfs_admit_remove(a, (uint64_t)id), 0);
	avfs_admit_destroy(a);
}

/* The round (sweep) model by hand, one ATSC HD stream (2,423,750 B/s, 4 MiB buffer, 512 KiB
 * reads) on the derived mechanics (track 1.7 ms, full stroke 17 ms, 200 µs a command; rates
 * linear 70..38 MB/s: E[1/d] = ln(70/38) / 32e6 = 1 / 52.38 MB/s, Var[1/d] = 1.1477e-17):
 *   W = 17 + 8.3333 + 1 MiB / 38 MB/s (27.5941) = 52.9274 ms (a 1 MiB best-effort command)
 *   p = 1.5141892 s, T = (p − W) / 2 = 730.6309 ms ≥ m: the hold gathers T_g = p − m =
 *   1.0141892 s
 *   V = min(4.6229, 1/T_g + r/B = 0.986009 + 0.577867) = 1.563876 positionings/s
 *   seek = 0.017/T_g + V·0.0017 + 0.0153·Σ√/T_g with n = V·T_g = 1.5860665 places a round,
 *   spread (ZRR): Σ√ = n·Γ(n+1)Γ(3/2)/Γ(n+3/2) = 0.9170923 (evenly spaced: √n = 1.2593913)
 *   = 0.0332560; rotation V·T_r/2 = 0.0065162
 *   transfer r·E[1/d] = 0.0462716; commands 4.6229 · 200 µs = 0.0009246; u = 0.0869683
 *   σ² = r·B·Var + V·T_r²/12 = 1.25725e-4; margin 10 σ² / 0.5 s = 0.0025145
 *   e_BE / T_g = (17 + 8.3333 − 8.5 − 4.1667) ms / T_g = 0.0124895; need 0.1019722
 *   limit 1 − max(0.02, 52.9274 ms / 2 s) = 0.9735363
 * Each more stream adds its own share and seeks of the shared sweep: 14 need 0.9156, the
 * 15th 0.977: refused, saying the rounds and the share. */
static void test_admit_sweep_by_hand(void **state)
{
	struct avfs_admit_conf c = sweep_250g();
	struct avfs_service_req r = { .rate = 2423750, .buffer = 4 * MIB, .io = 512 << 10 };
	struct avfs_sweep_result k, kr;
	struct avfs_admit_left left;
	struct avfs_admit *a;
	char why[200];
	unsigned n = 0;

	(void)state;
	assert_int_equal(c.coalesce, 4 * MIB);	/* the mixer's default */
	c.coalesce = 0;		/* one request a command first */
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_int_equal(avfs_admit_sweep(a, &r, &k), 0);
	assert_int_equal(k.verdict, AVFS_SWEEP_OK);
	assert_near(k.wcrt_ns / MS, 52.927439, 1e-5);
	assert_near(k.round_ns / MS, 730.6309, 1e-3);
	/* T ≥ m: the hold gathers rounds of p − m = 1.014189 s, and a round is one return of a
	 * full stroke, the visits (one a round and one a block) a track and their share of
	 * the stroke each, half a turn each, the transfer at the linear model's mean rate, and
	 * a best-effort overrun of 17 + 8.333 − 8.5 − 4.167 ms once such a round */
	assert_near(k.gather_ns / MS, 1014.1892, 1e-3);
	assert_near(k.visits, 1 / 1.0141892 + 2423750.0 / (4 * MIB), 1e-6);
	assert_near(k.visits, 1.563876, 1e-6);
	assert_near(k.seek, 0.0332560, 1e-7);
	assert_near(k.rot, 0.0065162, 1e-7);
	assert_near(k.xfer, 0.0462716, 1e-7);
	assert_near(k.cmds, 0.0009246, 1e-7);
	assert_near(k.turns, 0, 0);
	assert_near(k.util, 0.0869683, 1e-7);
	assert_near(k.margin, 0.0025145, 1e-7);
	assert_near(k.be, 0.0124895, 1e-7);
	assert_near(k.need, 0.1019722, 1e-7);
	assert_near(k.limit, 0.9735363, 1e-7);
	assert_near(avfs_admit_load(a), 0, 0);
	assert_near(avfs_admit_limit(a), 0.9735363, 1e-7);
	while (avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0)
		n++;
	assert_int_equal(n, 14);
	assert_near(avfs_admit_load(a), 0.9156, 1e-4);
	assert_true(strstr(why, "rounds of 731 ms need 97.7 %, 97.4 % is free") != NULL);
	assert_near(left.util, 0.9735363 - avfs_admit_load(a), 1e-6);
	/* the same stream fits at a lower rate (and not one byte/s above it), and not at all with
	 * any buffer: the round is the other streams' */
	assert_true(left.rate > 0 && left.rate < r.rate);
	assert_int_equal(left.buffer, 0);
	r.rate = left.rate + 1;
	assert_int_equal(avfs_admit_add(a, &r, &left, why, sizeof(why)), -EBUSY);
	r.rate = left.rate;
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	assert_true(avfs_admit_load(a) <= avfs_admit_limit(a));
	avfs_admit_destroy(a);

	/* coalescing up to 4 MiB: a visit's requests take one command more than their bytes / C
	 * at most, 1.563876 + 4.622936 / 8 a second, each 0.2 ms of overhead; W, the round and
	 * the rest stay (a coalesced command is part of its round) */
	c = sweep_250g();
	r.rate = 2423750;
	n = 0;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_int_equal(avfs_admit_sweep(a, &r, &k), 0);
	assert_near(k.wcrt_ns / MS, 52.927439, 1e-5);
	assert_near(k.visits, 1.563876, 1e-6);
	assert_near(k.commands, 1.563876 + 2423750.0 / (512 << 10) / 8, 1e-6);
	assert_near(k.cmds, k.commands * 0.0002, 1e-9);
	assert_near(k.util, 0.0869683 - 0.0009246 + k.cmds, 1e-7);
	while (avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0)
		n++;
	assert_int_equal(n, 15);	/* one more than one request a command */
	avfs_admit_destroy(a);

	/* up to 8 MiB: 16 requests a command, half the commands beyond the visits; 0.46 ms a
	 * second less a stream is not a stream more */
	c = sweep_250g();
	c.coalesce = 8 * MIB;
	r.rate = 2423750;
	n = 0;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_int_equal(avfs_admit_sweep(a, &r, &k), 0);
	assert_near(k.commands, 1.563876 + 2423750.0 / (512 << 10) / 16, 1e-6);
	assert_near(k.util, 0.0869683 - 0.0009246 + k.cmds, 1e-7);
	while (avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0)
		n++;
	assert_int_equal(n, 15);
	avfs_admit_destroy(a);

	/* ZRR in runs of 4 blocks (16 MiB): a stream enters another zone every run, not every
	 * block; the zone mix's variance stays charged per block (sweep.h) */
	c = sweep_250g();
	c.run = 4;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_int_equal(avfs_admit_sweep(a, &r, &kr), 0);
	assert_near(kr.visits, 1 / (kr.gather_ns / 1e9) + 2423750.0 / (16 * MIB), 1e-9);
	assert_near(kr.visits, k.visits - 2423750.0 / (4 * MIB) + 2423750.0 / (16 * MIB), 1e-9);
	assert_true(kr.need < k.need);
	assert_near(kr.margin, k.margin - (k.visits - kr.visits) * (60.0 / 7200) * (60.0 / 7200) /
		    12 * 10 / 0.5, 1e-9);
	avfs_admit_destroy(a);

	/* Fahrrad's test takes 6 of them (test_admit_busy_and_left) */
	c = conf_250g();
	r.rate = 2423750;
	n = 0;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	while (avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0)
		n++;
	assert_int_equal(n, 6);
	avfs_admit_destroy(a);
}

/* A stream whose short period costs more than the disk has left is refused with the buffer that
 * would take it; a period no longer than the longest command is refused for that; writes pay
 * a turn a request; a removed stream gives its share back. */
static void test_admit_sweep_refusals(void **state)
{
	struct avfs_admit_conf c = sweep_250g();
	struct avfs_service_req slow = { .rate = 1000000, .buffer = 32 * MIB, .io = MIB };
	struct avfs_service_req fast = { .rate = 7000000, .buffer = MIB + (512 << 10),
					 .io = 512 << 10 };
	struct avfs_sweep_result k, kw;
	struct avfs_admit_left left;
	struct avfs_admit *a;
	char why[200];
	int64_t id;
	double load;

	(void)state;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	for (int i = 0; i < 12; i++)
		assert_true(avfs_admit_add(a, &slow, &left, why, sizeof(why)) > 0);
	load = avfs_admit_load(a);
	/* p = 1 MiB / 7 MB/s = 150 ms < m: each of its requests at once and alone, 13.4 a
	 * second of a full stroke and a turn, beside the others' own rounds of 16.2 s */
	assert_int_equal(avfs_admit_add(a, &fast, &left, why, sizeof(why)), -EBUSY);
	assert_true(strstr(why, "rounds of 16226 ms") != NULL);
	assert_true(strstr(why, "fits with a") != NULL);
	assert_true(left.buffer > fast.buffer);
	fast.buffer = left.buffer - 1;
	assert_int_equal(avfs_admit_add(a, &fast, &left, why, sizeof(why)), -EBUSY);
	fast.buffer++;
	id = avfs_admit_add(a, &fast, &left, why, sizeof(why));
	assert_true(id > 0);
	assert_int_equal(avfs_admit_remove(a, (uint64_t)id), 0);
	assert_near(avfs_admit_load(a), load, 1e-12);

	/* 600 KiB beyond a 512 KiB request at 20 MB/s: 31 ms, less than W (52.9 ms) */
	fast = (struct avfs_service_req){ .rate = 20000000, .buffer = (512 + 600) << 10,
					  .io = 512 << 10 };
	assert_int_equal(avfs_admit_add(a, &fast, &left, why, sizeof(why)), -EBUSY);
	assert_true(strstr(why, "no longer than the longest command (53 ms)") != NULL);
	assert_int_equal(avfs_admit_sweep(a, &fast, &k), 0);
	assert_int_equal(k.verdict, AVFS_SWEEP_SHORT);
	fast.buffer = 100;	/* not a service at all */
	assert_int_equal(avfs_admit_sweep(a, &fast, &k), -EINVAL);
	avfs_admit_destroy(a);

	/* a recording: each of its 256 KiB write commands but the first of a round waits a turn;
	 * one request a command, then coalescing up to 4 MiB (16 requests a command) */
	for (int co = 0; co < 2; co++) {
		double rps = 4000000.0 / (256 << 10);

		c.coalesce = co ? 4 * MIB : 0;
		assert_int_equal(avfs_admit_create(&a, &c), 0);
		slow = (struct avfs_service_req){ .rate = 4000000, .buffer = 16 * MIB,
						  .io = 256 << 10 };
		assert_int_equal(avfs_admit_sweep(a, &slow, &k), 0);
		slow.write = true;
		assert_int_equal(avfs_admit_sweep(a, &slow, &kw), 0);
		assert_near(k.turns, 0, 0);
		assert_near(kw.commands, co ? kw.visits + rps / 16 : rps, 1e-9);
		assert_near(kw.turns, (kw.commands - kw.visits) * 60.0 / 7200, 1e-9);
		assert_near(kw.util - k.util, kw.turns, 1e-12);
		avfs_admit_destroy(a);
	}
}

/* The mechanics of a named model (its seek curve and zones) and what the file's layout says:
 * faster zones than the linear model admit more; a file known to lie in the inner zones, or
 * a file system that does not spread files (contiguous allocation), fewer. */
static void test_admit_sweep_layout(void **state)
{
	struct avfs_admit_conf c = sweep_250g();
	struct avfs_service_req r = { .rate = 2423750, .buffer = 4 * MIB, .io = 512 << 10 };
	struct avfs_sweep_disk d;
	struct avfs_admit *a;
	unsigned n[4];

	(void)state;
	assert_int_equal(avfs_sweep_disk_named(&d, "no-such-disk", 0), -ENOENT);
	assert_int_equal(avfs_sweep_disk_named(&d, "ssd", 0), -ENOENT);
	assert_int_equal(avfs_sweep_disk_named(&d, "avfs-250g", 0), 0);
	assert_int_equal(d.nbands, 16);
	assert_near(d.track_ns / MS, 0.8, 1e-9);
	assert_near(d.full_ns / MS, 17.0, 0.01);
	assert_near(d.overhead_ns / MS, 0.1, 1e-9);
	assert_near(d.band_start[0], 0, 0);
	assert_near(d.band_rate[0], 70e6, 1);
	assert_near(d.band_rate[15], 38e6, 1);
	for (unsigned z = 1; z < d.nbands; z++)
		assert_true(d.band_start[z] > d.band_start[z - 1] &&
			    d.band_rate[z] < d.band_rate[z - 1]);
	/* its outer 100 GB: fewer bands, all of the faster ones */
	assert_int_equal(avfs_sweep_disk_named(&d, "avfs-250g", 100000000000ull), 0);
	assert_true(d.nbands < 16 && d.band_rate[d.nbands - 1] > 50e6);

	for (int v = 0; v < 4; v++) {
		struct avfs_service_req x = r;

		c = sweep_250g();
		if (v == 1)
			assert_int_equal(avfs_sweep_disk_named(&c.disk, "avfs-250g", 0), 0);
		if (v == 2)	/* a file known to lie in the innermost zone */
			x.d_mean = x.d_slow = x.d_fast = 38e6;
		if (v == 3)
			c.zrr = false;
		assert_int_equal(avfs_admit_create(&a, &c), 0);
		n[v] = 0;
		while (avfs_admit_add(a, &x, NULL, NULL, 0) > 0)
			n[v]++;
		avfs_admit_destroy(a);
	}
	assert_int_equal(n[0], 15);
	assert_int_equal(n[1], 15);	/* (the zones are faster than linear in the LBA: less
					 * transfer time, not one stream more here) */
	assert_true(n[2] < n[0] && n[2] >= 10);
	assert_int_equal(n[3], n[2]);	/* not ZRR: the slowest zone, as for the inner file */
	/* ZRR over too few zones (a small disk: one zone) keeps a file in one place too */
	c = sweep_250g();
	c.zones = 1;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	n[3] = 0;
	while (avfs_admit_add(a, &r, NULL, NULL, 0) > 0)
		n[3]++;
	avfs_admit_destroy(a);
	assert_int_equal(n[3], n[2]);
}

/* The seeks of a round: n positionings whose places are independent and uniform over the
 * stroke (ZRR, no layout known) cost Σ √gap = n Γ(n+1) Γ(3/2) / Γ(n+3/2) strokes' worth of the
 * concave curve in expectation — checked against a sampled sweep — where n evenly spaced ones
 * (the bound, kept for a known layout, files not spread, or rounds shorter than the margin)
 * cost √n; the sweep model's seek share is the one or the other accordingly. */
static void test_admit_sweep_seek_spread(void **state)
{
	struct avfs_service_req r = { .rate = 2423750, .buffer = 4 * MIB, .io = 512 << 10 };
	struct avfs_sweep_result k[3];
	uint64_t x = 42;
	double sum = 0;
	enum { N = 5, TRIALS = 200000 };

	(void)state;
	assert_near(avfs_sweep_seek_sum(0, true), 0, 0);
	assert_near(avfs_sweep_seek_sum(1, true), 2.0 / 3, 1e-12);
	assert_near(avfs_sweep_seek_sum(2, true), 16.0 / 15, 1e-12);
	assert_near(avfs_sweep_seek_sum(7, false), sqrt(7), 1e-12);
	for (double n = 0.25; n < 1000; n *= 1.7)
		assert_true(avfs_sweep_seek_sum(n, true) < avfs_sweep_seek_sum(n, false));
	assert_near(avfs_sweep_seek_sum(1e4, true) / 100, sqrt(M_PI) / 2, 1e-4);
	/* a sweep from one end over N uniform places: the sum of √ of the gaps it crosses */
	for (int t = 0; t < TRIALS; t++) {
		double p[N], last = 0;

		for (int i = 0; i < N; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			p[i] = (double)(x >> 11) / 9007199254740992.0;
		}
		for (int i = 1; i < N; i++)	/* insertion sort */
			for (int j = i; j > 0 && p[j] < p[j - 1]; j--) {
				double tmp = p[j];

				p[j] = p[j - 1];
				p[j - 1] = tmp;
			}
		for (int i = 0; i < N; i++) {
			sum += sqrt(p[i] - last);
			last = p[i];
		}
	}
	assert_near(sum / TRIALS, avfs_sweep_seek_sum(N, true), 0.003);

	/* the model: ZRR with unknown layouts takes the expectation; a known layout, or no
	 * ZRR, the bound (everything else equal: the same rounds and positionings) */
	for (int v = 0; v < 3; v++) {
		struct avfs_sweep_conf sc = sweep_conf_250g();
		struct avfs_sweep_stream st = { .rate = (double)r.rate, .buffer = (double)r.buffer,
						.io = (double)r.io };

		sc.zrr = v != 2;
		if (v == 1)	/* known to lie at the disk's mean rate */
			st.d_mean = 1 / (log(70.0 / 38) / 32e6);
		assert_int_equal(avfs_sweep_conf_check(&sc), 0);
		avfs_sweep_eval(&sc, &st, 1, &k[v]);
		assert_int_equal(k[v].verdict, AVFS_SWEEP_OK);
	}
	{
		double t = k[0].gather_ns / 1e9, n = k[0].visits * t, full = 0.017, track = 0.0017;

		assert_near(k[1].gather_ns, k[0].gather_ns, 0);
		assert_near(k[1].visits, k[0].visits, 0);
		assert_near(k[0].seek, full / t + k[0].visits * track +
			    (full - track) * avfs_sweep_seek_sum(n, true) / t, 1e-12);
		assert_near(k[1].seek, full / t + k[1].visits * track +
			    (full - track) * sqrt(n) / t, 1e-12);
		assert_near(k[2].seek, k[1].seek, 1e-12);
		assert_true(k[0].seek < k[1].seek);
	}
	/* rounds shorter than the margin (a 2 MiB buffer: p = 0.649 s, T = 0.298 s < 0.5 s) are
	 * not gathered by the hold: the bound, with ZRR too */
	{
		struct avfs_sweep_conf sc = sweep_conf_250g();
		struct avfs_sweep_stream st = { .rate = (double)r.rate, .buffer = 2.0 * MIB,
						.io = (double)r.io };
		struct avfs_sweep_result q;
		double t, n;

		avfs_sweep_eval(&sc, &st, 1, &q);
		t = q.round_ns / 1e9;
		n = q.visits * t;
		assert_true(t < 0.5);
		assert_near(q.seek, 0.017 / t + q.visits * 0.0017 + 0.0153 * sqrt(n) / t, 1e-12);
		assert_near(q.gather_ns, q.round_ns, 0);
		sc.margin_ns = 250e6;	/* a shorter margin: gathered, the expectation, and
					 * rounds of p − m = 0.399 s */
		avfs_sweep_eval(&sc, &st, 1, &q);
		assert_near(q.round_ns / 1e9, t, 1e-12);
		t = q.gather_ns / 1e9;
		assert_near(t, (2.0 * MIB - (512 << 10)) / 2423750.0 - 0.25, 1e-9);
		n = q.visits * t;
		assert_near(q.seek, 0.017 / t + q.visits * 0.0017 +
			    0.0153 * avfs_sweep_seek_sum(n, true) / t, 1e-12);
	}
}

/* One HD stream with `first` MiB of buffer (4: p 1.514 s), n − 1 with 16 MiB (p 6.706 s),
 * 512 KiB requests; isolation on, best-effort commands of 1 MiB. */
static void short_long_set(struct avfs_sweep_stream *st, int n, struct avfs_sweep_conf *sc,
			   double first)
{
	for (int i = 0; i < n; i++)
		st[i] = (struct avfs_sweep_stream){ .rate = 2423750,
						    .buffer = (i ? 16.0 : first) * MIB,
						    .io = 512 << 10 };
	sc->be_isolation = true;
	sc->cmd_max = 1 << 20;
}

/* A stream whose own round is shorter than the others' is detoured to: the sweep takes the
 * round that needs least — here (a 3.5 MiB buffer: p 1.298 s) the long-period streams' own,
 * with the short-period one visited out of the sweep's order at its own round, two expected
 * positionings each (from anywhere on the stroke and back) — where the mixer gathers rounds
 * (T ≥ m); below m see test_admit_sweep_by_request. Streams of one period are never detoured
 * to: they are visited once a round the hold gathers, p − m. */
static void test_admit_sweep_detours(void **state)
{
	enum { N = 9 };
	struct avfs_sweep_stream st[N];
	struct avfs_sweep_conf sc = sweep_conf_250g();
	struct avfs_sweep_result k, g;
	double w, t0, tb, sw, full = 0.017, track = 0.0017, tr = 60.0 / 7200, r = 2423750;

	(void)state;
	short_long_set(st, N, &sc, 3.5);
	avfs_sweep_eval(&sc, st, N, &k);
	assert_int_equal(k.verdict, AVFS_SWEEP_OK);
	w = k.wcrt_ns / 1e9;
	t0 = ((3.5 * MIB - (512 << 10)) / r - w) / 2;
	tb = ((16.0 * MIB - (512 << 10)) / r - w) / 2;
	assert_near(k.round_ns / 1e9, tb, 1e-9);
	assert_near(k.detours, 1 / t0 + r / (4.0 * MIB), 1e-9);	/* the first one's visits */
	sw = (N - 1) * (1 / tb + r / (4.0 * MIB));
	assert_near(k.visits, sw + 2 * k.detours, 1e-9);
	/* each detour two seeks between uniform places (E √|U − V| = 8/15 of the curve's √
	 * term) and two half turns */
	assert_near(k.seek, full / tb + sw * track +
		    (full - track) * avfs_sweep_seek_sum(sw * tb, true) / tb +
		    2 * k.detours * (track + (full - track) * 8 / 15), 1e-12);
	assert_near(k.rot, (sw + 2 * k.detours) * tr / 2, 1e-12);
	/* a best-effort overrun once a batch: the hold's, p − m of the short one (the hold is
	 * over its requests too) */
	assert_near(k.be, (0.017 + tr - 0.0085 - tr / 2) / ((3.5 * MIB - (512 << 10)) / r - 0.5),
		    1e-9);

	/* the margin above the set's round: no detours (test_admit_sweep_by_request) */
	sc.margin_ns = 800e6;
	avfs_sweep_eval(&sc, st, N, &g);
	assert_near(g.detours, 0, 0);
	/* all of them with 4 MiB: one period, no detour; the rounds the hold gathers, p − m */
	sc.margin_ns = 500e6;
	short_long_set(st, N, &sc, 4.0);
	for (int i = 1; i < N; i++)
		st[i].buffer = 4.0 * MIB;
	avfs_sweep_eval(&sc, st, N, &g);
	assert_near(g.detours, 0, 0);
	assert_near(g.round_ns / 1e9, ((4.0 * MIB - (512 << 10)) / r - w) / 2, 1e-9);
	assert_near(g.gather_ns / 1e9, (4.0 * MIB - (512 << 10)) / r - 0.5, 1e-9);
	assert_near(g.visits, N * (1 / (g.gather_ns / 1e9) + r / (4.0 * MIB)), 1e-9);
}

/* Below the margin the mixer serves a stream whose own round is shorter than m request by
 * request, and the others in rounds of their own (loaded, the disk runs batches back to back,
 * whatever the hold's gap). The short one's requests, when due only after m, join the batch
 * under way and are visited in its sweep at their own round; when due within m of their
 * arrival, each goes at once and alone, one positioning of a full stroke and a full turn. */
static void test_admit_sweep_by_request(void **state)
{
	enum { N = 9 };
	struct avfs_sweep_stream st[N];
	struct avfs_sweep_conf sc = sweep_conf_250g();
	struct avfs_sweep_result k, one;
	double w, t0, tl, sw, v0, a = (512 << 10) / 2423750.0, r = 2423750, l = 4.0 * MIB;
	double full = 0.017, track = 0.0017, tr = 60.0 / 7200;

	(void)state;
	/* joins: the short one's own round 0.74 s; m = 800 ms: T < m; the others' own round */
	short_long_set(st, N, &sc, 4.0);
	sc.margin_ns = 800e6;
	avfs_sweep_eval(&sc, st, N, &k);
	assert_int_equal(k.verdict, AVFS_SWEEP_OK);
	w = k.wcrt_ns / 1e9;
	t0 = ((4.0 * MIB - (512 << 10)) / r - w) / 2;
	tl = ((16.0 * MIB - (512 << 10)) / r - w) / 2;
	assert_true(t0 < 0.8 && tl > 0.8);
	assert_near(k.round_ns / 1e9, tl, 1e-9);
	assert_near(k.gather_ns, k.round_ns, 0);
	assert_near(k.detours, 0, 0);
	assert_near(k.urgent, 0, 0);
	v0 = 1 / t0 + r / l;	/* the short one, within the sweep at its own round */
	sw = (N - 1) * (1 / tl + r / l) + v0;
	assert_near(k.visits, sw, 1e-9);
	assert_near(k.seek, full / tl + sw * track +
		    (full - track) * avfs_sweep_seek_sum(sw * tl, true) / tl, 1e-12);
	assert_near(k.rot, sw * tr / 2, 1e-12);
	assert_near(k.be, (0.017 + tr - 0.0085 - tr / 2) / t0, 1e-9);	/* the shortest round's */
	/* the same streams without the short one: the same rounds */
	avfs_sweep_eval(&sc, st + 1, N - 1, &one);
	assert_near(one.round_ns / 1e9, tl, 1e-9);

	/* urgent: the short one with 1 MiB of buffer, p = a = 0.216 s < m = 500 ms, beside four
	 * of the others: each of its requests at once */
	sc.margin_ns = 500e6;
	st[0].buffer = 1.0 * MIB;
	avfs_sweep_eval(&sc, st, 5, &k);
	assert_int_equal(k.verdict, AVFS_SWEEP_OK);
	assert_near(k.round_ns / 1e9, tl, 1e-9);
	assert_near(k.urgent, r / (512 << 10), 1e-9);	/* every request */
	assert_near(k.detours, 0, 0);
	sw = 4 * fmin(r / (512 << 10), 1 / tl + r / l);
	assert_near(k.visits, sw + k.urgent, 1e-9);
	assert_near(k.seek, full / tl + sw * track +
		    (full - track) * avfs_sweep_seek_sum(sw * tl, true) / tl + k.urgent * full,
		    1e-12);
	assert_near(k.rot, sw * tr / 2 + k.urgent * tr, 1e-12);
	assert_near(k.commands, 5 * r / (512 << 10), 1e-9);	/* no coalescing here */
	assert_near(k.be, (0.017 + tr - 0.0085 - tr / 2) / ((a - w) / 2), 1e-9);
	(void)a;
}

/* A device without mechanics (the ssd model: T_r = T_k = 0, 500 MB/s) costs transfer and
 * commands only; a configuration without a model refuses, saying so. */
static void test_admit_sweep_no_mechanics(void **state)
{
	struct avfs_svc_model ssd = { .dmax = 500e6, .dmin = 500e6, .lmax = 250000000000ull };
	struct avfs_service_req r = { .rate = 2423750, .buffer = 4 * MIB, .io = 512 << 10 };
	struct avfs_admit_conf c;
	struct avfs_sweep_result k;
	struct avfs_admit *a;
	char why[200];

	(void)state;
	avfs_admit_conf_default(&c, &ssd, 4 * MIB);
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_int_equal(avfs_admit_sweep(a, &r, &k), 0);
	assert_int_equal(k.verdict, AVFS_SWEEP_OK);
	assert_near(k.seek + k.rot + k.turns, 0, 0);
	assert_near(k.xfer, 2423750 / 500e6, 1e-12);
	assert_near(k.wcrt_ns / MS, (double)MIB / 500e3, 1e-9);
	for (int i = 0; i < 40; i++)
		assert_true(avfs_admit_add(a, &r, NULL, why, sizeof(why)) > 0);
	avfs_admit_destroy(a);

	ssd.dmin = 0;
	avfs_admit_conf_default(&c, &ssd, 4 * MIB);
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_int_equal(avfs_admit_add(a, &r, NULL, why, sizeof(why)), -EINVAL);
	assert_true(strstr(why, "no disk model") != NULL);
	avfs_admit_destroy(a);
}

/* Per-user quotas: streams and rate, the any-uid default, a user's own quota beside it. */
static void test_admit_quota(void **state)
{
	struct avfs_admit_conf c = conf_250g();
	struct avfs_service_req r = { .rate = 250000, .buffer = 16 * MIB, .io = 512 << 10,
				      .uid = 1000 };
	struct avfs_admit_left left;
	struct avfs_admit *a;
	char why[200];

	(void)state;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	assert_int_equal(avfs_admit_set_quota(a, 1000, 0, 2), 0);
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	assert_int_equal(avfs_admit_add(a, &r, &left, why, sizeof(why)), -EDQUOT);
	assert_int_equal(left.quota_streams, 0);
	assert_true(strstr(why, "1000") != NULL);
	assert_int_equal(avfs_admit_count(a), 2);

	/* every other user: 600,000 B/s and unlimited streams */
	assert_int_equal(avfs_admit_set_quota(a, AVFS_ADMIT_ANY_UID, 600000, 0), 0);
	r.uid = 2000;
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	assert_int_equal(avfs_admit_add(a, &r, &left, why, sizeof(why)), -EDQUOT);
	assert_int_equal(left.quota_rate, 100000);
	assert_int_equal(left.quota_streams, UINT32_MAX);
	assert_int_equal(left.rate, 100000);	/* the disk has more; the quota says 100,000 */
	r.rate = 100000;
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	/* each user is counted apart, and uid 1000 keeps its own quota (no rate limit) */
	r = (struct avfs_service_req){ .rate = 250000, .buffer = 16 * MIB, .io = 512 << 10,
				       .uid = 3000 };
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	r.uid = 1000;
	assert_int_equal(avfs_admit_add(a, &r, &left, why, sizeof(why)), -EDQUOT);
	/* raising a quota takes effect at once */
	assert_int_equal(avfs_admit_set_quota(a, 1000, 0, 3), 0);
	assert_true(avfs_admit_add(a, &r, &left, why, sizeof(why)) > 0);
	assert_int_equal(avfs_admit_count(a), 7);
	avfs_admit_destroy(a);
}

/* Removing a stream gives its share back; ids are not reused; the list keeps its order. */
static void test_admit_remove(void **state)
{
	struct avfs_admit_conf c = conf_250g();
	struct avfs_service_req r1 = { .rate = 2423750, .buffer = 4 * MIB, .io = 512 << 10 };
	struct avfs_service_req r2 = { .rate = 1000000, .buffer = 8 * MIB, .io = MIB,
				       .write = true };
	struct avfs_admit_left left;
	struct avfs_admit *a;
	char why[200];
	int64_t id1, id2, id3;
	double load1;

	(void)state;
	assert_int_equal(avfs_admit_create(&a, &c), 0);
	id1 = avfs_admit_add(a, &r1, &left, why, sizeof(why));
	load1 = avfs_admit_load(a);
	id2 = avfs_admit_add(a, &r2, &left, why, sizeof(why));
	assert_true(id1 > 0 && id2 > id1);
	assert_true(avfs_admit_load(a) > load1);
	assert_ptr_equal(avfs_admit_at(a, 0), avfs_admit_find(a, (uint64_t)id1));
	assert_true(avfs_admit_at(a, 1)->req.write);
	assert_null(avfs_admit_at(a, 2));

	assert_int_equal(avfs_admit_remove(a, (uint64_t)id1), 0);
	assert_int_equal(avfs_admit_remove(a, (uint64_t)id1), -ENOENT);
	assert_null(avfs_admit_find(a, (uint64_t)id1));
	assert_int_equal(avfs_admit_count(a), 1);
	assert_int_equal(avfs_admit_at(a, 0)->id, (uint64_t)id2);
	id3 = avfs_admit_add(a, &r1, &left, why, sizeof(why));
	assert_true(id3 > id2);
	assert_int_equal(avfs_admit_remove(a, (uint64_t)id2), 0);
	assert_near(avfs_admit_load(a), load1, 1e-12);
	assert_int_equal(avfs_admit_remove(a, (uint64_t)id3), 0);
	assert_near(avfs_admit_load(a), 0, 0);
	avfs_admit_destroy(a);
}

/* The token bucket: full at the start, real-time within it, best effort above it with the
 * debt bounded at half a bucket, refilled at the rate up to its size. */
/* avfsd's way above the rate: best effort uncharged, so the bucket keeps refilling and a
 * greedy stream's next request within the rate is real-time again */
static void test_admit_bucket_take(void **state)
{
	struct avfs_bucket b;
	int rt = 0;

	(void)state;
	avfs_bucket_init(&b, 1e6, 2e6, 0);	/* 1 MB/s, 2 MB bucket, full */
	assert_true(avfs_bucket_take(&b, 1000000, 0));
	assert_true(avfs_bucket_take(&b, 1000000, 0));
	assert_false(avfs_bucket_take(&b, 1000000, 0));	/* empty: best effort */
	assert_true(b.tokens >= 0);			/* and no debt */
	/* greedy: a 100 KB request every 10 ms (10 MB/s) for 10 s: 1 MB/s of it is real-time */
	for (int64_t t = 10000000; t <= 10000000000ll; t += 10000000)
		rt += avfs_bucket_take(&b, 100000, t);
	assert_in_range(rt, 99, 101);	/* 10 s x 1 MB/s / 100 KB */
}

static void test_admit_bucket(void **state)
{
	struct avfs_bucket b;
	const int64_t s = 1000000000;

	(void)state;
	avfs_bucket_init(&b, 1e6, 4e6, 0);
	assert_true(avfs_bucket_charge(&b, 1000000, 0));
	assert_true(avfs_bucket_charge(&b, 3000000, 0));
	assert_near(b.tokens, 0, 0);
	assert_false(avfs_bucket_charge(&b, 1, 0));
	assert_near(b.tokens, -1, 0);
	/* a greedy stream: the debt stops at -size / 2 */
	assert_false(avfs_bucket_charge(&b, 10000000, 0));
	assert_near(b.tokens, -2e6, 0);
	assert_false(avfs_bucket_charge(&b, 1000000, 0));
	assert_near(b.tokens, -2e6, 0);
	/* 2.5 s of refill: +2.5 MB, so 0.5 MB are there */
	assert_true(avfs_bucket_charge(&b, 500000, 5 * s / 2));
	assert_near(b.tokens, 0, 1e-6);
	assert_false(avfs_bucket_charge(&b, 1, 5 * s / 2));
	assert_near(b.tokens, -1, 1e-6);
	/* time does not run backwards */
	assert_false(avfs_bucket_charge(&b, 1, 2 * s));
	assert_near(b.tokens, -2, 1e-6);
	/* a long pause fills it to its size, no more */
	assert_true(avfs_bucket_charge(&b, 4000000, 100 * s));
	assert_false(avfs_bucket_charge(&b, 1, 100 * s));
}

/* ABISS: a request issued at now for len bytes is due when the rest of the buffer drains. */
static void test_admit_deadline(void **state)
{
	struct avfs_service_req r = { .rate = 1000000, .buffer = 4000000 };
	const int64_t now = 5000000000;

	(void)state;
	assert_int_equal(avfs_service_deadline(&r, 1000000, now), now + 3000000000);
	assert_int_equal(avfs_service_deadline(&r, 4000000, now), now);
	assert_int_equal(avfs_service_deadline(&r, 8000000, now), now);
	r.rate = 2423750;
	r.buffer = 4 * MIB;
	assert_int_equal(avfs_service_deadline(&r, 512 << 10, 0), 1514189169);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admit_bucket),
		cmocka_unit_test(test_admit_bucket_take),
		cmocka_unit_test(test_admit_busy_and_left),
		cmocka_unit_test(test_admit_cost_by_hand),
		cmocka_unit_test(test_admit_deadline),
		cmocka_unit_test(test_admit_quota),
		cmocka_unit_test(test_admit_remove),
		cmocka_unit_test(test_admit_sweep_by_hand),
		cmocka_unit_test(test_admit_sweep_detours),
		cmocka_unit_test(test_admit_sweep_by_request),
		cmocka_unit_test(test_admit_sweep_layout),
		cmocka_unit_test(test_admit_sweep_no_mechanics),
		cmocka_unit_test(test_admit_sweep_refusals),
		cmocka_unit_test(test_admit_sweep_seek_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

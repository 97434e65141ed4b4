/* test_metrics.c — the QoS metrics counted one way for avfsd and avfs-sim (engine/metrics.c):
 * margin histograms and their quantiles, utilization as a union of busy intervals, seek
 * distances per request, E(T_wait). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

#define MS 1000000ll
#define NS 1000000000ll

/* Margins: a quantile lands within the 2.2 % of its bin; misses, failures, best effort apart. */
static void test_metrics_qos_quantiles(void **state)
{
	struct avfs_qos *q = calloc(1, sizeof(*q));
	const int64_t d = 10 * NS;

	(void)state;
	assert_non_null(q);
	assert_true(avfs_qos_margin_quantile(q, 0.5) == 0);
	for (int i = 0; i < 89; i++)
		avfs_qos_add(q, d, d - 1024 * 1000, 4096, 0);	/* 1.024 ms early */
	for (int i = 0; i < 10; i++)
		avfs_qos_add(q, d, d - NS, 4096, 0);	/* 1 s early */
	avfs_qos_add(q, d, d + 5 * MS, 4096, 0);	/* 5 ms late: a miss */
	avfs_qos_add(q, 0, d, 8192, 0);		/* best effort: no margin */
	avfs_qos_add(q, 0, d, 8192, -EIO);	/* failed best effort: no bytes */
	assert_int_equal(q->requests, 100);
	assert_int_equal(q->misses, 1);
	assert_int_equal(q->failed, 0);
	assert_int_equal(q->be_requests, 2);
	assert_int_equal(q->bytes, 100 * 4096 + 8192);
	assert_int_equal(q->rt_bytes, 100 * 4096);
	assert_int_equal(q->margin_min_ns, -5 * MS);
	/* the 1st of 100 is the late one: its value, within its bin */
	assert_true(fabs(avfs_qos_margin_quantile(q, 0.0) + 5 * MS) <= 0.023 * 5 * MS);
	assert_true(fabs(avfs_qos_margin_quantile(q, 0.02) - 1024000) <= 0.023 * 1024000);
	assert_true(fabs(avfs_qos_margin_quantile(q, 0.5) - 1024000) <= 0.023 * 1024000);
	assert_true(fabs(avfs_qos_margin_quantile(q, 0.95) - 1e9) <= 0.023 * 1e9);
	/* a request that failed with time to spare is a miss, and counts as minus forever */
	avfs_qos_add(q, d, d - MS, 4096, -ETIME);
	assert_int_equal(q->misses, 2);
	assert_int_equal(q->failed, 1);
	assert_true(isinf(avfs_qos_margin_quantile(q, 0.0)));
	assert_false(isinf(avfs_qos_margin_quantile(q, 0.02)));
	free(q);
}

/* A quantile of many distinct margins is what a sorted array says, within a bin's width. */
static void test_metrics_qos_against_sorted(void **state)
{
	struct avfs_qos *q = calloc(1, sizeof(*q));
	enum { N = 10000 };
	static double v[N];
	uint64_t x = 12345;

	(void)state;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = 400 * MS + (double)(x >> 40) / (1 << 24) * 800 * MS;	/* 0.4 .. 1.2 s */
		avfs_qos_add(q, NS, NS - (int64_t)v[i], 1, 0);
	}
	for (int i = 1; i < N; i++)	/* insertion sort would do; a simple one */
		for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
			double t = v[k];

			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	for (double p = 0.001; p < 1; p *= 3) {
		double want = v[(size_t)floor(p * (N - 1))], got = avfs_qos_margin_quantile(q, p);

		assert_true(fabs(got - want) <= 0.023 * want);
	}
	free(q);
}

/* Utilization is the union of the intervals with a command on the device: two commands in
 * flight at once count once. E(T_wait) = ½ ΣT_i² / elapsed. */
static void test_metrics_busy_union(void **state)
{
	struct avfs_metrics *m = calloc(1, sizeof(*m));
	struct avfs_metrics_summary s;

	(void)state;
	avfs_metrics_reset(m, 0);
	avfs_metrics_cmd_start(m, 0, 4096, true, true, 10 * MS);	/* [10, 30) */
	avfs_metrics_cmd_start(m, 8192, 4096, true, true, 20 * MS);	/* [20, 40) */
	avfs_metrics_cmd_end(m, 10 * MS, 30 * MS);
	avfs_metrics_cmd_end(m, 20 * MS, 40 * MS);
	avfs_metrics_cmd_start(m, 0, 4096, true, true, 60 * MS);	/* open at the end */
	avfs_metrics_summary(m, 100 * MS, &s);
	assert_true(fabs(s.utilization - 0.7) < 1e-9);	/* 30 + 40 of 100 ms */
	assert_int_equal(s.commands, 2);
	assert_true(fabs(s.e_twait_ms - 0.5 * 2 * 20.0 * 20.0 / 100) < 1e-9);
	free(m);
}

/* Seek distances are counted per request (a request's first command), in the coarse classes
 * and for quantiles; a reset keeps the head where it is. */
static void test_metrics_seeks(void **state)
{
	struct avfs_metrics *m = calloc(1, sizeof(*m));
	struct avfs_metrics_summary s;
	const uint64_t GB = 1000000000ull;

	(void)state;
	avfs_metrics_reset(m, 0);
	avfs_metrics_cmd_start(m, 0, 1 << 20, true, true, 0);	/* from 0: no seek */
	avfs_metrics_cmd_end(m, 0, 1);
	avfs_metrics_cmd_start(m, 1 << 20, 1 << 20, true, true, 1);	/* sequential */
	avfs_metrics_cmd_end(m, 1, 2);
	avfs_metrics_cmd_start(m, 30 * GB, 65536, true, true, 2);	/* ~30 GB */
	avfs_metrics_cmd_end(m, 2, 3);
	avfs_metrics_cmd_start(m, 30 * GB + 65536, 65536, false, true, 3);	/* a chunk: no */
	avfs_metrics_cmd_end(m, 3, 4);
	avfs_metrics_cmd_start(m, 2 * GB, 4096, true, true, 4);	/* ~28 GB back */
	avfs_metrics_cmd_end(m, 4, 5);
	avfs_metrics_summary(m, 10, &s);
	assert_int_equal(m->seeks, 4);
	assert_int_equal(s.seek_class[0], 2);
	assert_int_equal(s.seek_class[4], 2);	/* <50 GB */
	assert_true(fabs(s.seek_frac_below_5 - 0.5) < 1e-9);
	assert_true(s.seek_p90_gb > 27 && s.seek_p90_gb < 31);
	avfs_metrics_reset(m, 10);
	assert_int_equal(m->head, 2 * GB + 4096);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_busy_union),
		cmocka_unit_test(test_metrics_qos_against_sorted),
		cmocka_unit_test(test_metrics_qos_quantiles),
		cmocka_unit_test(test_metrics_seeks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_simengine.c — the virtual-time engine: events run in time order with a stable
 * tie-break, the clock moves only when the engine runs, cancel removes exactly one event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "simengine.h"

struct log {
	int ids[64];
	uint64_t at[64];
	int n;
	struct avfs_sim_engine *e;
};

struct tag {
	struct log *log;
	int id;
};

static void note(void *arg, uint64_t now)
{
	struct tag *t = arg;

	t->log->at[t->log->n] = now;
	t->log->ids[t->log->n++] = t->id;
}

/* Events run in time order; equal times run in the order they were scheduled. */
static void test_simengine_order_and_ties(void **state)
{
	struct avfs_sim_engine *e;
	struct log log = { 0 };
	struct tag tags[6];
	const uint64_t when[6] = { 50, 10, 30, 10, 50, 10 };

	(void)state;
	assert_int_equal(avfs_sim_engine_new(&e), 0);
	for (int i = 0; i < 6; i++) {
		tags[i] = (struct tag){ &log, i };
		assert_non_null(avfs_sim_at(e, when[i], note, &tags[i]));
	}
	assert_int_equal(avfs_sim_pending(e), 6);
	while (avfs_sim_step(e))
		;
	assert_int_equal(log.n, 6);
	const int expect[6] = { 1, 3, 5, 2, 0, 4 };
	for (int i = 0; i < 6; i++) {
		assert_int_equal(log.ids[i], expect[i]);
		assert_int_equal(log.at[i], when[expect[i]]);
	}
	assert_int_equal(avfs_sim_now(e), 50);
	avfs_sim_engine_free(e);
}

/* The clock only moves when the engine runs; run_until stops at its bound and lands on it. */
static void test_simengine_run_until(void **state)
{
	struct avfs_sim_engine *e;
	struct log log = { 0 };
	struct tag a = { &log, 1 }, b = { &log, 2 };

	(void)state;
	assert_int_equal(avfs_sim_engine_new(&e), 0);
	assert_int_equal(avfs_sim_now(e), 0);
	avfs_sim_at(e, 100, note, &a);
	avfs_sim_at(e, 300, note, &b);
	assert_int_equal(avfs_sim_now(e), 0);
	assert_int_equal(avfs_sim_next(e), 100);
	assert_int_equal(avfs_sim_run_until(e, 200), 1);
	assert_int_equal(avfs_sim_now(e), 200);
	assert_int_equal(log.n, 1);
	assert_int_equal(avfs_sim_run_until(e, 300), 1);
	assert_int_equal(avfs_sim_now(e), 300);
	assert_int_equal(avfs_sim_next(e), UINT64_MAX);
	avfs_sim_engine_free(e);
}

/* Scheduling in the past is refused; cancel removes that event only. */
static void test_simengine_cancel_and_past(void **state)
{
	struct avfs_sim_engine *e;
	struct log log = { 0 };
	struct tag t[5];
	struct avfs_sim_event *ev[5];

	(void)state;
	assert_int_equal(avfs_sim_engine_new(&e), 0);
	for (int i = 0; i < 5; i++) {
		t[i] = (struct tag){ &log, i };
		ev[i] = avfs_sim_at(e, 10 * (i + 1), note, &t[i]);
	}
	assert_int_equal(avfs_sim_cancel(e, ev[2]), 0);
	assert_int_equal(avfs_sim_cancel(e, ev[0]), 0);
	assert_int_equal(avfs_sim_cancel(e, NULL), -EINVAL);
	avfs_sim_run_until(e, 25);
	errno = 0;
	assert_null(avfs_sim_at(e, 5, note, &t[0]));
	assert_int_equal(errno, EINVAL);
	while (avfs_sim_step(e))
		;
	assert_int_equal(log.n, 3);
	assert_int_equal(log.ids[0], 1);
	assert_int_equal(log.ids[1], 3);
	assert_int_equal(log.ids[2], 4);
	avfs_sim_engine_free(e);
}

struct chain {
	struct avfs_sim_engine *e;
	int left;
	uint64_t last;
};

static void tick(void *arg, uint64_t now)
{
	struct chain *c = arg;

	assert_true(now >= c->last);
	c->last = now;
	if (--c->left > 0)
		avfs_sim_at(c->e, now + 7, tick, c);
}

/* A callback may schedule further events; many events keep heap order (random times). */
static void test_simengine_chain_and_heap(void **state)
{
	struct avfs_sim_engine *e;
	struct chain c;
	struct log log = { 0 };
	struct tag tg = { &log, 0 };
	uint64_t x = 1, prev = 0;

	(void)state;
	assert_int_equal(avfs_sim_engine_new(&e), 0);
	c = (struct chain){ e, 100, 0 };
	avfs_sim_at(e, 0, tick, &c);
	while (avfs_sim_step(e))
		;
	assert_int_equal(c.left, 0);
	assert_int_equal(avfs_sim_now(e), 99 * 7);
	for (int i = 0; i < 10000; i++) {
		x = x * 6364136223846793005ull + 1;
		avfs_sim_at(e, avfs_sim_now(e) + (x >> 44), note, &tg);
		log.n = 0;
	}
	while (avfs_sim_next(e) != UINT64_MAX) {
		uint64_t t = avfs_sim_next(e);

		assert_true(t >= prev);
		prev = t;
		avfs_sim_step(e);
		log.n = 0;
	}
	avfs_sim_engine_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simengine_order_and_ties),
		cmocka_unit_test(test_simengine_run_until),
		cmocka_unit_test(test_simengine_cancel_and_past),
		cmocka_unit_test(test_simengine_chain_and_heap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_sched_base.c — the baseline policies of daemon/sched_base.c through their ops tables
 * (not the avfs_sched wrapper): fifo order, mq-deadline's batches, read preference, write
 * starvation and FIFO expiry in cscan, edf and scan-edf order, and for every policy: no WAIT
 * or FAIL ever, pending() counts, a random 10,000-request stress and O(log n) decisions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iosched.h"

#define MS INT64_C(1000000)
#define MB UINT64_C(1048576)
#define BLK 4096

static const struct avfs_sched_ops *const policies[] = {
	&avfs_sched_fifo, &avfs_sched_cscan, &avfs_sched_edf, &avfs_sched_scan_edf,
};
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

static uint64_t rng_state;

static uint64_t rnd(void)	/* xorshift64*: reproducible runs */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static void *open_conf(const struct avfs_sched_ops *ops, const struct avfs_sched_conf *conf)
{
	void *ctx = NULL;

	assert_int_equal(ops->init(&ctx, conf), 0);
	assert_non_null(ctx);
	return ctx;
}

static void *open_default(const struct avfs_sched_ops *ops)
{
	struct avfs_sched_conf conf;

	avfs_sched_conf_default(&conf);
	return open_conf(ops, &conf);
}

/* Fill io as avfs_sched_submit would and hand it to the policy. */
static void put_io(const struct avfs_sched_ops *ops, void *ctx, struct avfs_io *io, uint64_t id,
		   uint64_t off, uint64_t len, bool write, bool fua, int64_t deadline, int64_t now)
{
	memset(io, 0, sizeof(*io));
	io->id = id;
	io->off = io->orig_off = off;
	io->len = io->orig_len = len;
	io->write = write;
	io->fua = fua;
	io->deadline = deadline;
	io->arrival = now;
	assert_int_equal(ops->submit(ctx, io, now), 0);
}

/* A 4 KiB request. */
static void put(const struct avfs_sched_ops *ops, void *ctx, struct avfs_io *io, uint64_t id,
		uint64_t off, bool write, int64_t deadline, int64_t now)
{
	put_io(ops, ctx, io, id, off, BLK, write, false, deadline, now);
}

/* next(), checked: only DISPATCH of a whole request or IDLE. The dispatched io, or NULL. */
static struct avfs_io *issue(const struct avfs_sched_ops *ops, void *ctx, int64_t now,
			     struct avfs_sched_cmd *cmd)
{
	memset(cmd, 0xa5, sizeof(*cmd));
	ops->next(ctx, now, cmd);
	assert_true(cmd->kind == AVFS_SCHED_DISPATCH || cmd->kind == AVFS_SCHED_IDLE);
	if (cmd->kind == AVFS_SCHED_IDLE)
		return NULL;
	assert_non_null(cmd->io);
	assert_int_equal(cmd->off, cmd->io->off);
	assert_int_equal(cmd->len, cmd->io->len);
	assert_int_equal(cmd->write, cmd->io->write);
	assert_int_equal(cmd->fua, cmd->io->fua);
	assert_false(cmd->seek);
	return cmd->io;
}

/* Issue and complete one request: its id, or -1 when the policy is idle. */
static int64_t step(const struct avfs_sched_ops *ops, void *ctx, int64_t now)
{
	struct avfs_sched_cmd cmd;
	struct avfs_io *io = issue(ops, ctx, now, &cmd);

	if (!io)
		return -1;
	assert_true(ops->done(ctx, &cmd, now, (int)io->len));
	return (int64_t)io->id;
}

/* Drain everything at `now`; the ids in dispatch order as a string, e.g. "r1 r2 w3". */
static void drain(const struct avfs_sched_ops *ops, void *ctx, int64_t now,
		  const struct avfs_io *ios, char *out, size_t outlen)
{
	int64_t id;
	size_t n = 0;

	out[0] = '\0';
	while ((id = step(ops, ctx, now)) >= 0) {
		n += (size_t)snprintf(out + n, outlen - n, "%s%c%lld", n ? " " : "",
				      ios[id].write ? 'w' : 'r', (long long)id);
		assert_true(n < outlen);
	}
	assert_int_equal(ops->pending(ctx), 0);
}

/* fifo dispatches in arrival order, whatever the offsets, directions and deadlines. */
static void test_sched_base_fifo_order(void **state)
{
	static const uint64_t offs[] = { 900, 5, 300, 5, 0, 77 };
	struct avfs_io ios[6];
	char got[128];
	void *ctx = open_default(&avfs_sched_fifo);

	(void)state;
	for (uint64_t i = 0; i < 6; i++)
		put(&avfs_sched_fifo, ctx, &ios[i], i, offs[i] * MB, i % 2,
		    i % 3 ? (int64_t)(9 - i) * MS : 0, 0);
	drain(&avfs_sched_fifo, ctx, 0, ios, got, sizeof(got));
	assert_string_equal(got, "r0 w1 r2 w3 r4 w5");
	avfs_sched_fifo.destroy(ctx);
}

/* cscan: a read batch goes up in sector order ignoring RT deadlines; when nothing is left at
 * or after the last position it restarts from the FIFO head (mq-deadline), not the lowest LBA. */
static void test_sched_base_cscan_sorted_batch(void **state)
{
	static const uint64_t offs[] = { 7, 2, 9, 0, 4, 1, 8, 3, 6, 5 };
	static const uint64_t offs2[] = { 30, 10, 70, 90 };
	struct avfs_io ios[18];
	char got[128];
	const struct avfs_sched_ops *ops = &avfs_sched_cscan;
	void *ctx = open_default(ops);

	(void)state;
	/* deadlines in the reverse of LBA order: the kernel's view ignores them */
	for (uint64_t i = 0; i < 10; i++)
		put(ops, ctx, &ios[i], i, offs[i] * MB, false, (int64_t)(100 - offs[i]) * MS, 0);
	drain(ops, ctx, 0, ios, got, sizeof(got));
	assert_string_equal(got, "r3 r5 r1 r7 r4 r9 r8 r0 r6 r2");

	/* head after 50 MB: 70 and 90 first, then the FIFO head (30, older than 10), then 10 */
	put(ops, ctx, &ios[10], 10, 50 * MB, false, 0, 0);
	assert_int_equal(step(ops, ctx, 0), 10);
	for (uint64_t i = 0; i < 4; i++)
		put(ops, ctx, &ios[11 + i], 11 + i, offs2[i] * MB, false, 0, 0);
	drain(ops, ctx, 0, ios, got, sizeof(got));
	assert_string_equal(got, "r13 r14 r11 r12");

	/* the position is the END of the last request: one starting inside it waits for the
	 * restart (the kernel keeps the start sector; this differs only for overlaps) */
	put_io(ops, ctx, &ios[15], 15, 148 * MB, 2 * MB, false, false, 0, 0);
	assert_int_equal(step(ops, ctx, 0), 15);
	put(ops, ctx, &ios[16], 16, 149 * MB, false, 0, 0);
	put(ops, ctx, &ios[17], 17, 151 * MB, false, 0, 0);
	drain(ops, ctx, 0, ios, got, sizeof(got));
	assert_string_equal(got, "r17 r16");
	ops->destroy(ctx);
}

/* cscan: a new batch takes reads even when older writes wait (writes_starved not reached);
 * the very first dispatch continues a write batch, as dd_init_sched() sets last_dir WRITE. */
static void test_sched_base_cscan_read_preference(void **state)
{
	struct avfs_io ios[8];
	char got[128];
	const struct avfs_sched_ops *ops = &avfs_sched_cscan;
	void *ctx = open_default(ops);

	(void)state;
	put(ops, ctx, &ios[7], 7, 200 * MB, false, 0, 0);
	put(ops, ctx, &ios[0], 0, 100 * MB, true, 0, 0);
	assert_int_equal(step(ops, ctx, 0), 0);		/* write batch, ends past all below */
	for (uint64_t i = 1; i <= 3; i++)
		put(ops, ctx, &ios[i], i, (i - 1) * MB, true, 0, 0);
	for (uint64_t i = 4; i <= 6; i++)
		put(ops, ctx, &ios[i], i, (6 + i) * MB, false, 0, 0);
	drain(ops, ctx, MS, ios, got, sizeof(got));
	assert_string_equal(got, "r4 r5 r6 r7 w1 w2 w3");
	ops->destroy(ctx);
}

/* cscan: with fifo_batch 1 (one request per batch), writes get a batch after writes_starved
 * read batches: the kernel's `starved++ >= writes_starved`, for 0, 1 and 2. */
static void test_sched_base_cscan_writes_starved(void **state)
{
	static const struct {
		unsigned writes_starved;
		const char *order;
	} cases[] = {
		{ 0, "w7 w8 w9 r1 r2 r3 r4 r5 r6" },
		{ 1, "r1 w7 r2 w8 r3 w9 r4 r5 r6" },
		{ 2, "r1 r2 w7 r3 r4 w8 r5 r6 w9" },
	};
	const struct avfs_sched_ops *ops = &avfs_sched_cscan;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct avfs_sched_conf conf;
		struct avfs_io ios[10];
		char got[128];
		void *ctx;

		avfs_sched_conf_default(&conf);
		conf.fifo_batch = 1;
		conf.writes_starved = cases[c].writes_starved;
		ctx = open_conf(ops, &conf);
		put(ops, ctx, &ios[0], 0, 0, false, 0, 0);
		assert_int_equal(step(ops, ctx, 0), 0);	/* a read batch with no write waiting */
		for (uint64_t i = 1; i <= 6; i++)
			put(ops, ctx, &ios[i], i, i * MB, false, 0, 0);
		for (uint64_t i = 7; i <= 9; i++)
			put(ops, ctx, &ios[i], i, i * MB, true, 0, 0);
		drain(ops, ctx, 0, ios, got, sizeof(got));
		assert_string_equal(got, cases[c].order);
		ops->destroy(ctx);
	}
}

/* cscan: at a new batch an expired FIFO head goes before the next request in sector order;
 * unexpired, the batch carries on from the last position and the old one waits. */
static void test_sched_base_cscan_expired_fifo_first(void **state)
{
	static const struct {
		int64_t now;
		const char *order;
	} cases[] = {
		{ 450 * MS, "r2 r3 r1" },	/* r1 expires at 500 ms: not yet */
		{ 500 * MS, "r1 r2 r3" },	/* expired at fifo_time (deadline_check_fifo) */
		{ 600 * MS, "r1 r2 r3" },
	};
	const struct avfs_sched_ops *ops = &avfs_sched_cscan;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct avfs_sched_conf conf;
		struct avfs_io ios[4];
		char got[64];
		void *ctx;

		avfs_sched_conf_default(&conf);
		conf.fifo_batch = 1;	/* every request starts a batch, where expiry is checked */
		ctx = open_conf(ops, &conf);
		put(ops, ctx, &ios[0], 0, 50 * MB, false, 0, 0);
		assert_int_equal(step(ops, ctx, 0), 0);		/* head now past 50 MB */
		put(ops, ctx, &ios[1], 1, 0, false, 0, 0);		/* below the head, old */
		put(ops, ctx, &ios[2], 2, 60 * MB, false, 0, 400 * MS);
		put(ops, ctx, &ios[3], 3, 70 * MB, false, 0, 400 * MS);
		drain(ops, ctx, cases[c].now, ios, got, sizeof(got));
		assert_string_equal(got, cases[c].order);
		ops->destroy(ctx);
	}
}

/* cscan: a batch holds at most fifo_batch requests (writes_starved 0: writes win the next
 * batch start), for fifo_batch 1, 4 and 16. */
static void test_sched_base_cscan_batch_limit(void **state)
{
	static const unsigned batches[] = { 1, 4, 16 };
	const struct avfs_sched_ops *ops = &avfs_sched_cscan;

	(void)state;
	for (size_t c = 0; c < sizeof(batches) / sizeof(batches[0]); c++) {
		struct avfs_sched_conf conf;
		struct avfs_io ios[22];
		int64_t order[22];
		void *ctx;

		avfs_sched_conf_default(&conf);
		conf.fifo_batch = batches[c];
		conf.writes_starved = 0;
		ctx = open_conf(ops, &conf);
		for (uint64_t i = 0; i < 20; i++)
			put(ops, ctx, &ios[i], i, i * MB, false, 0, 0);
		order[0] = step(ops, ctx, 0);		/* the batch starts with no write waiting */
		put(ops, ctx, &ios[20], 20, 100 * MB, true, 0, 0);
		put(ops, ctx, &ios[21], 21, 101 * MB, true, 0, 0);
		for (size_t i = 1; i < 22; i++)
			order[i] = step(ops, ctx, 0);
		assert_int_equal(step(ops, ctx, 0), -1);
		for (size_t i = 0; i < 22; i++) {
			if (i < batches[c])
				assert_int_equal(order[i], (int64_t)i);		/* the read batch */
			else if (i < batches[c] + 2u)
				assert_int_equal(order[i], (int64_t)(20 + i - batches[c]));
			else
				assert_int_equal(order[i], (int64_t)(i - 2));	/* the rest */
		}
		ops->destroy(ctx);
	}
}

/* edf: by deadline (ties in arrival order), late requests still issued, best effort after
 * every RT request in arrival order. */
static void test_sched_base_edf_order(void **state)
{
	static const int64_t dl[] = { 0, 300, 100, 0, 200, 100, -50, 0, 1 };
	struct avfs_io ios[9];
	char got[128];
	const struct avfs_sched_ops *ops = &avfs_sched_edf;
	void *ctx = open_default(ops);

	(void)state;
	for (uint64_t i = 0; i < 9; i++)
		put(ops, ctx, &ios[i], i, (9 - i) * MB, false, dl[i] ? 1000 * MS + dl[i] * MS : 0,
		    1000 * MS);
	/* deadline 950 ms (r6) and 1001 ms (r8) have passed at 1100 ms: issued, not failed */
	drain(ops, ctx, 1100 * MS, ios, got, sizeof(got));
	assert_string_equal(got, "r6 r8 r2 r5 r4 r1 r0 r3 r7");
	ops->destroy(ctx);
}

/* scan-edf: deadlines rounded up to the 100 ms quantum form groups served in LBA order from
 * the head; an exact multiple stays in its own quantum, one ns more moves to the next. */
static void test_sched_base_scan_edf_quantum(void **state)
{
	static const struct {
		int64_t deadline;
		uint64_t off_mb;
	} rq[] = {
		{ 1010 * MS, 300 },	/* quantum 1.1 s */
		{ 1050 * MS, 100 },	/* 1.1 s */
		{ 1090 * MS, 200 },	/* 1.1 s */
		{ 1000 * MS, 900 },	/* exactly 1.0 s: quantum 1.0 s, first */
		{ 1000 * MS + 1, 50 },	/* 1.1 s */
		{ 1150 * MS, 0 },	/* 1.2 s */
		{ 0, 10 },		/* best effort: last */
	};
	struct avfs_io ios[7];
	char got[128];
	const struct avfs_sched_ops *ops = &avfs_sched_scan_edf;
	void *ctx = open_default(ops);

	(void)state;
	for (uint64_t i = 0; i < 7; i++)
		put(ops, ctx, &ios[i], i, rq[i].off_mb * MB, false, rq[i].deadline, 0);
	/* after r3 at 900 MB the 1.1 s group wraps to its lowest LBA and goes up */
	drain(ops, ctx, 0, ios, got, sizeof(got));
	assert_string_equal(got, "r3 r4 r1 r2 r0 r5 r6");
	ops->destroy(ctx);
}

/* scan-edf: within one quantum, C-SCAN from the end of the last dispatched request; best
 * effort (one group) after RT, also in C-SCAN order. */
static void test_sched_base_scan_edf_lba_within_quantum(void **state)
{
	static const uint64_t offs[] = { 100, 300, 200, 150, 149 };
	struct avfs_io ios[9];
	char got[128];
	const struct avfs_sched_ops *ops = &avfs_sched_scan_edf;
	void *ctx = open_default(ops);

	(void)state;
	put_io(ops, ctx, &ios[0], 0, 148 * MB, 2 * MB, false, false, 0, 0);
	assert_int_equal(step(ops, ctx, 0), 0);		/* head at its end, 150 MB */
	for (uint64_t i = 0; i < 4; i++)
		put(ops, ctx, &ios[1 + i], 1 + i, offs[i] * MB, i % 2, (int64_t)(510 + i) * MS, 0);
	put(ops, ctx, &ios[5], 5, 160 * MB, false, 0, 0);
	put(ops, ctx, &ios[6], 6, 0, false, 0, 0);
	put(ops, ctx, &ios[7], 7, 400 * MB, true, 0, 0);
	put(ops, ctx, &ios[8], 8, offs[4] * MB, false, 514 * MS, 0);
	/* RT: 150 (at the head), 200, 300, wrap to 100, 149 (inside the last request: after
	 * the wrap); BE from 149 MB + 4K: 160, 400, wrap, 0 */
	drain(ops, ctx, 0, ios, got, sizeof(got));
	assert_string_equal(got, "w4 r3 w2 r1 r8 r5 w7 r6");
	ops->destroy(ctx);
}

/* Every policy: no WAIT and no FAIL, even for requests long past their deadline, expired
 * FIFOs and a clock that jumps; DISPATCH while anything is queued, IDLE only when empty. */
static void test_sched_base_never_wait_or_fail(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOLICIES; p++) {
		const struct avfs_sched_ops *ops = policies[p];
		struct avfs_sched_cmd cmd;
		struct avfs_io ios[64];
		void *ctx = open_default(ops);
		int64_t now = 10 * 1000 * MS;

		rng_state = 0x1234 + p;
		for (uint64_t i = 0; i < 64; i++) {
			int64_t dl = (i % 4 == 0) ? 0 : now - (int64_t)(rnd() % 5000) * MS;

			put(ops, ctx, &ios[i], i, (rnd() % 1000) * MB, rnd() % 2, dl, now);
		}
		for (uint64_t i = 0; i < 64; i++) {
			now += (int64_t)(rnd() % 3) * 1000 * MS;	/* everything expires */
			assert_non_null(issue(ops, ctx, now, &cmd));
			assert_true(ops->done(ctx, &cmd, now, i % 5 ? (int)cmd.len : -EIO));
		}
		assert_null(issue(ops, ctx, now, &cmd));
		assert_int_equal(cmd.kind, AVFS_SCHED_IDLE);
		assert_int_equal(ops->pending(ctx), 0);
		ops->destroy(ctx);
	}
}

/* Every policy: pending() counts requests from submit to done(), in flight included; a
 * failed transfer (res < 0) completes the request too. */
static void test_sched_base_pending_counts(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOLICIES; p++) {
		const struct avfs_sched_ops *ops = policies[p];
		struct avfs_sched_cmd c1, c2;
		struct avfs_io ios[3];
		void *ctx = open_default(ops);

		assert_int_equal(ops->pending(ctx), 0);
		for (uint64_t i = 0; i < 3; i++) {
			put(ops, ctx, &ios[i], i, i * MB, false, (int64_t)(i + 1) * 100 * MS, 0);
			assert_int_equal(ops->pending(ctx), i + 1);
		}
		assert_non_null(issue(ops, ctx, 0, &c1));
		assert_non_null(issue(ops, ctx, 0, &c2));	/* two in flight (depth > 1) */
		assert_int_equal(ops->pending(ctx), 3);
		assert_true(ops->done(ctx, &c2, 0, -EIO));
		assert_int_equal(ops->pending(ctx), 2);
		assert_true(ops->done(ctx, &c1, 0, BLK));
		assert_int_equal(ops->pending(ctx), 1);
		assert_int_equal(step(ops, ctx, 0), 2);
		assert_int_equal(ops->pending(ctx), 0);
		ops->destroy(ctx);
	}
}

/* Every policy: a request that cannot be one command (empty, or over 4 GiB) is refused with
 * -EINVAL and nothing is kept. */
static void test_sched_base_rejects_unissuable(void **state)
{
	(void)state;
	for (size_t p = 0; p < NPOLICIES; p++) {
		const struct avfs_sched_ops *ops = policies[p];
		struct avfs_sched_cmd cmd;
		struct avfs_io io = { .id = 1, .len = 0 };
		void *ctx = open_default(ops);

		assert_int_equal(ops->submit(ctx, &io, 0), -EINVAL);
		io.len = UINT64_C(1) << 32;
		assert_int_equal(ops->submit(ctx, &io, 0), -EINVAL);
		assert_int_equal(ops->pending(ctx), 0);
		assert_null(issue(ops, ctx, 0, &cmd));
		ops->destroy(ctx);
	}
}

/* Every policy: 10,000 requests with random submit / next / done interleaving, up to four in
 * flight completing out of order: each is dispatched once, whole, and completes once. */
static void test_sched_base_stress_each_completes_once(void **state)
{
	enum { N = 10000, DEPTH = 4 };

	(void)state;
	for (size_t p = 0; p < NPOLICIES; p++) {
		const struct avfs_sched_ops *ops = policies[p];
		struct avfs_io *ios = calloc(N, sizeof(*ios));
		unsigned char *dispatched = calloc(N, 1), *completed = calloc(N, 1);
		struct avfs_sched_cmd fly[DEPTH];
		size_t nsub = 0, ndone = 0, nfly = 0, iter = 0;
		void *ctx = open_default(ops);
		int64_t now = 0;

		assert_non_null(ios);
		assert_non_null(dispatched);
		assert_non_null(completed);
		rng_state = 0x9e3779b97f4a7c15ULL + p;
		while (ndone < N) {
			unsigned what = (unsigned)(rnd() % 3);

			assert_true(++iter < 100u * N);
			now += (int64_t)(rnd() % 1000) * 1000;
			if (what == 0 && nsub < N) {
				bool write = rnd() % 4 == 0;
				int64_t dl = 0;	/* best effort */

				if (rnd() % 3) {	/* RT, some already late */
					dl = now - 100 * MS + (int64_t)(rnd() % 2000) * MS;
					dl = dl ? dl : 1;
				}
				put_io(ops, ctx, &ios[nsub], nsub, (rnd() % 1000000) * BLK,
				       BLK * (1 + rnd() % 256), write, write && rnd() % 2, dl, now);
				nsub++;
			} else if (what == 1 && nfly < DEPTH) {
				struct avfs_io *io = issue(ops, ctx, now, &fly[nfly]);

				if (!io) {
					/* idle: everything not done is in flight */
					assert_int_equal(nsub - ndone, nfly);
					continue;
				}
				assert_int_equal(dispatched[io->id]++, 0);
				nfly++;
			} else if (what == 2 && nfly > 0) {
				size_t k = rnd() % nfly;
				struct avfs_io *io = fly[k].io;
				int res = rnd() % 10 ? (int)io->len : -EIO;

				assert_true(ops->done(ctx, &fly[k], now, res));
				assert_int_equal(completed[io->id]++, 0);
				fly[k] = fly[--nfly];
				ndone++;
			}
			assert_int_equal(ops->pending(ctx), nsub - ndone);
		}
		for (size_t i = 0; i < N; i++) {
			assert_int_equal(dispatched[i], 1);
			assert_int_equal(completed[i], 1);
		}
		assert_int_equal(step(ops, ctx, now), -1);
		ops->destroy(ctx);
		free(completed);
		free(dispatched);
		free(ios);
	}
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every policy: with 20,000 requests pending, submitting them and scheduling all of them
 * takes well under a second (a linear scan per decision would need ~2e8 steps). */
static void test_sched_base_20000_pending_fast(void **state)
{
	enum { N = 20000 };

	(void)state;
	for (size_t p = 0; p < NPOLICIES; p++) {
		const struct avfs_sched_ops *ops = policies[p];
		struct avfs_io *ios = calloc(N, sizeof(*ios));
		void *ctx = open_default(ops);
		double t0, dt;
		size_t n = 0;

		assert_non_null(ios);
		rng_state = 42 + p;
		t0 = seconds();
		for (size_t i = 0; i < N; i++)
			put(ops, ctx, &ios[i], i, (rnd() % 1000000) * BLK, rnd() % 4 == 0,
			    rnd() % 5 ? 1 + (int64_t)(rnd() % 10000) * MS : 0, 0);
		assert_int_equal(ops->pending(ctx), N);
		while (step(ops, ctx, 0) >= 0)
			n++;
		dt = seconds() - t0;
		assert_int_equal(n, N);
		print_message("%-8s 20000 submits + 20000 decisions: %.1f ms\n", ops->name,
			      dt * 1e3);
		assert_true(dt < 0.5);
		ops->destroy(ctx);
		free(ios);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sched_base_fifo_order),
		cmocka_unit_test(test_sched_base_cscan_sorted_batch),
		cmocka_unit_test(test_sched_base_cscan_read_preference),
		cmocka_unit_test(test_sched_base_cscan_writes_starved),
		cmocka_unit_test(test_sched_base_cscan_expired_fifo_first),
		cmocka_unit_test(test_sched_base_cscan_batch_limit),
		cmocka_unit_test(test_sched_base_edf_order),
		cmocka_unit_test(test_sched_base_scan_edf_quantum),
		cmocka_unit_test(test_sched_base_scan_edf_lba_within_quantum),
		cmocka_unit_test(test_sched_base_never_wait_or_fail),
		cmocka_unit_test(test_sched_base_pending_counts),
		cmocka_unit_test(test_sched_base_rejects_unissuable),
		cmocka_unit_test(test_sched_base_stress_each_completes_once),
		cmocka_unit_test(test_sched_base_20000_pending_fast),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

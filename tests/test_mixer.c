/*
 * test_mixer.c — the traffic mixer against hand-computed examples (T_S, H, every window and
 * its boundaries), the -ETIME rule, BE under hold and ageing, chunking with FUA on the last
 * chunk, JIT slack and seek splitting with a fake predictor, order = satf (the nearest in
 * positioning time, never at a margin's cost) with a fake disk, the non-rotational mode, the
 * settings table, O(log n) decisions, and whole simulated runs (no misses, determinism).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iosched.h"
#include "simrun.h"

#define MS 1000000ll
#define GB 1000000000ull

double avfs_tm_hold_time(void *ctx);

static struct avfs_sched mk(const struct avfs_sched_conf *c)
{
	struct avfs_sched s;

	assert_int_equal(avfs_sched_init(&s, &avfs_sched_tm, c), 0);
	return s;
}

static struct avfs_io rt(uint64_t off, uint32_t len, int64_t dl)
{
	return (struct avfs_io){ .off = off, .len = len, .deadline = dl };
}

static void assert_near(double got, double want, double eps)
{
	if (fabs(got - want) > eps)
		fail_msg("got %.6f, want %.6f", got, want);
}

/* T_S by hand (papers/001 eq. (1), avfs-250g): at LBA 0 a random 512 KiB read costs
 * 8.5 + 4.1667 + 524288 / 70 MB/s = 20.157 ms; sequential, the transfer only; half-way in,
 * the rate is 54 MB/s. */
static void test_mixer_service_time(void **state)
{
	struct avfs_sched_conf c;

	(void)state;
	avfs_sched_conf_default(&c);
	assert_near(avfs_svc_time(&c.model, 0, 524288, false) / 1e6, 8.5 + 60000.0 / 7200 / 2 +
		    524288 / 70e6 * 1e3, 1e-6);
	assert_near(avfs_svc_time(&c.model, 0, 524288, true) / 1e6, 524288 / 70e6 * 1e3, 1e-6);
	assert_near(avfs_svc_time(&c.model, 125 * GB, 524288, true) / 1e6, 524288 / 54e6 * 1e3, 1e-6);
	assert_near(avfs_svc_time(&c.model, 250 * GB, 1000000, true) / 1e6, 1000000 / 38e6 * 1e3, 1e-6);
}

/* H by hand (papers/001 eqs. (2), (3)): two held requests in LBA order; the later one in
 * LBA order has the earlier deadline, so H = its deadline − m − both service times; a third,
 * sequential to the first, costs no seek. */
static void test_mixer_hold_time(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_io a = rt(4096, 524288, 3000 * MS), b = rt(10 * GB, 524288, 1500 * MS);
	struct avfs_io d = rt(4096 + 524288, 524288, 5000 * MS);
	double ta, tb, td;

	(void)state;
	avfs_sched_conf_default(&c);
	s = mk(&c);
	ta = avfs_svc_time(&c.model, a.off, a.len, false);
	tb = avfs_svc_time(&c.model, b.off, b.len, false);
	td = avfs_svc_time(&c.model, d.off, d.len, true);
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	assert_near(avfs_tm_hold_time(s.ctx), 3000 * MS - 500 * MS - ta, 1);
	assert_int_equal(avfs_sched_submit(&s, &b, 0), 0);
	assert_near(avfs_tm_hold_time(s.ctx), fmin(3000 * MS - 500 * MS - ta,
						   1500 * MS - 500 * MS - ta - tb), 1);
	assert_int_equal(avfs_sched_submit(&s, &d, 0), 0);	/* between a and b, sequential to a */
	assert_near(avfs_tm_hold_time(s.ctx), 1500 * MS - 500 * MS - ta - td - tb, 1);
	avfs_sched_destroy(&s);
}

/* While H is in the future and no BE is waiting, the mixer holds: WAIT until H exactly. */
static void test_mixer_holds_until_h(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_io a = rt(4096, 524288, 2000 * MS);
	struct avfs_sched_cmd cmd;
	double h;

	(void)state;
	avfs_sched_conf_default(&c);
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	h = avfs_tm_hold_time(s.ctx);
	avfs_sched_next(&s, 0, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_WAIT);
	assert_int_equal(cmd.at, (int64_t)ceil(h));
	avfs_sched_next(&s, (int64_t)ceil(h) - 1, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_WAIT);
	avfs_sched_next(&s, (int64_t)ceil(h), &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &a);
	assert_true(avfs_sched_done(&s, &cmd, (int64_t)ceil(h) + 20 * MS, (int)cmd.len));
	avfs_sched_destroy(&s);
}

/* Which request goes first once the batch runs, with t = 10 s, e = 100 ms, m = 500 ms and
 * the earliest deadline t_d at and around each boundary. */
static struct avfs_io *first_of(int64_t td, struct avfs_io *v)
{
	static struct avfs_sched s;
	struct avfs_sched_conf c;
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;

	avfs_sched_conf_default(&c);
	/* papers/001's windows over a batch (the default) */
	s = mk(&c);
	/* a: far in LBA order, earliest deadline; b: first in LBA order, late deadline;
	 * c: after a in LBA order, inside t_d + m; d: before a, outside t_d + m */
	v[0] = rt(100 * GB, 65536, t + td);
	v[1] = rt(1 * GB, 65536, t + td + 5000 * MS);
	v[2] = rt(150 * GB, 65536, t + td + 400 * MS);
	v[3] = rt(50 * GB, 65536, t + td + 600 * MS);
	for (int i = 0; i < 4; i++)
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	avfs_sched_next(&s, t, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	avfs_sched_destroy(&s);
	return cmd.io;
}

/* EDF window: t_d <= t + e (boundary included) runs the earliest deadline first. Reduced
 * C-SCAN: t + e < t_d <= t + m (boundary included) runs, in LBA order, only requests with
 * T_D < t_d + m (d is skipped though it comes before a). Normal C-SCAN beyond: LBA order from
 * e_0 (b). */
static void test_mixer_windows(void **state)
{
	struct avfs_io v[4];

	(void)state;
	assert_ptr_equal(first_of(50 * MS, v), &v[0]);		/* EDF */
	assert_ptr_equal(first_of(100 * MS, v), &v[0]);		/* t_d = t + e: still EDF */
	assert_ptr_equal(first_of(100 * MS + 1, v), &v[0]);	/* reduced: a is first in LBA */
	assert_ptr_equal(first_of(500 * MS, v), &v[0]);		/* t_d = t + m: still reduced */
	assert_ptr_equal(first_of(500 * MS + 1, v), &v[1]);	/* normal C-SCAN: e_0 */
}

/* Overload: when the request due first cannot be met any more (less is left than its own
 * modelled service time: a at 100 GB, 64 KiB, about 13.8 ms), the windows that serve by
 * deadline stand aside and the batch goes on in C-SCAN order from e_0 (b first), its command
 * carrying b's follower although that one is due long after the EDF window; at 20 ms a can
 * still be met and goes first (EDF). On the old mixer a went first in both. */
static void test_mixer_overload_goes_in_order(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_sched_counters k;
	const int64_t t = 10000 * MS;
	struct avfs_io v[4], b2;

	(void)state;
	assert_ptr_equal(first_of(20 * MS, v), &v[0]);
	avfs_sched_conf_default(&c);
	s = mk(&c);
	v[0] = rt(100 * GB, 65536, t + 10 * MS);
	v[1] = rt(1 * GB, 65536, t + 5000 * MS);
	v[2] = rt(150 * GB, 65536, t + 400 * MS);
	v[3] = rt(50 * GB, 65536, t + 600 * MS);
	b2 = rt(1 * GB + 65536, 65536, t + 6000 * MS);
	for (int i = 0; i < 4; i++)
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	assert_int_equal(avfs_sched_submit(&s, &b2, 0), 0);
	avfs_sched_next(&s, t, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &v[1]);
	assert_int_equal(cmd.len, 2 * 65536);	/* b and its follower, one command */
	avfs_sched_counters(&s, &k);
	assert_int_equal(k.overload, 1);
	assert_true(avfs_sched_done(&s, &cmd, t + 15 * MS, (int)cmd.len));
	avfs_sched_next(&s, t + 15 * MS, &cmd);	/* a's deadline has passed: failed, not run */
	assert_int_equal(cmd.kind, AVFS_SCHED_FAIL);
	assert_ptr_equal(cmd.io, &v[0]);
	avfs_sched_destroy(&s);
}

/* recover: for that long after a missed deadline an urgent request does not jump the batch
 * (the batch goes on in its C-SCAN order, coalescing, as in an overload); once it has passed,
 * or with recover = 0, or in the sweep (whose detours serve short periods), the EDF window
 * takes the urgent request first. */
static unsigned recover_first(int64_t recover_ns, int64_t after, bool sweep,
			      const struct avfs_io **first)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_sched_counters k;
	struct avfs_io lost = rt(100 * GB, 65536, 600 * MS);
	static struct avfs_io b, u;
	int64_t now = 700 * MS;

	avfs_sched_conf_default(&c);
	assert_int_equal(c.recover_ns, 5000 * MS);	/* the default */
	c.recover_ns = recover_ns;
	c.sweep = sweep;
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &lost, 0), 0);
	avfs_sched_next(&s, now, &cmd);	/* too late: missed */
	assert_int_equal(cmd.kind, AVFS_SCHED_FAIL);
	now += after;
	b = rt(1 * GB, 65536, now + 5000 * MS);
	u = rt(150 * GB, 65536, now + 60 * MS);	/* urgent, and it can be met */
	assert_int_equal(avfs_sched_submit(&s, &b, now), 0);
	assert_int_equal(avfs_sched_submit(&s, &u, now), 0);
	avfs_sched_next(&s, now, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	*first = cmd.io;
	avfs_sched_counters(&s, &k);
	avfs_sched_destroy(&s);
	return (unsigned)k.overload;
}

static void test_mixer_recover(void **state)
{
	const struct avfs_io *first;

	(void)state;
	assert_int_equal(recover_first(5000 * MS, 10 * MS, false, &first), 1);
	assert_int_equal(first->off, 1 * GB);	/* C-SCAN order: the urgent one waits */
	assert_int_equal(recover_first(0, 10 * MS, false, &first), 0);
	assert_int_equal(first->off, 150 * GB);	/* the EDF window */
	assert_int_equal(recover_first(5000 * MS, 5000 * MS, false, &first), 0);
	assert_int_equal(first->off, 150 * GB);	/* recovered: the EDF window again */
	assert_int_equal(recover_first(5000 * MS, 10 * MS, true, &first), 0);
	assert_int_equal(first->off, 150 * GB);	/* the sweep's EDF detour */
}

/* In the reduced window the subset is served in LBA order: a, then c; d (T_D >= t_d + m)
 * and b wait; when the subset is done the rest follows in C-SCAN order. */
static void test_mixer_reduced_window_order(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;
	struct avfs_io v[4];
	struct avfs_io *order[4];

	(void)state;
	avfs_sched_conf_default(&c);
	s = mk(&c);
	v[0] = rt(100 * GB, 65536, t + 300 * MS);
	v[1] = rt(1 * GB, 65536, t + 5000 * MS);
	v[2] = rt(150 * GB, 65536, t + 700 * MS);
	v[3] = rt(50 * GB, 65536, t + 900 * MS);
	for (int i = 0; i < 4; i++)
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	for (int i = 0; i < 4; i++) {
		avfs_sched_next(&s, t + i, &cmd);
		assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
		order[i] = cmd.io;
		assert_true(avfs_sched_done(&s, &cmd, t + i, (int)cmd.len));
	}
	assert_ptr_equal(order[0], &v[0]);
	assert_ptr_equal(order[1], &v[2]);
	assert_ptr_equal(order[2], &v[1]);	/* C-SCAN wraps to the start of the batch */
	assert_ptr_equal(order[3], &v[3]);
	avfs_sched_destroy(&s);
}

/* A request already past its deadline is refused at submit; one whose deadline passes while
 * it is held is failed with -ETIME by the RT scheduler and never dispatched. */
static void test_mixer_etime_never_issued(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io late = rt(4096, 4096, 5 * MS), held = rt(8192, 4096, 600 * MS);

	(void)state;
	avfs_sched_conf_default(&c);
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &late, 10 * MS), -ETIME);
	assert_int_equal(s.ops->pending(s.ctx), 0);
	assert_int_equal(avfs_sched_submit(&s, &held, 0), 0);
	avfs_sched_next(&s, 700 * MS, &cmd);	/* the caller was busy: now it is too late */
	assert_int_equal(cmd.kind, AVFS_SCHED_FAIL);
	assert_ptr_equal(cmd.io, &held);
	assert_int_equal(cmd.err, -ETIME);
	assert_int_equal(s.inflight, 0);
	avfs_sched_next(&s, 700 * MS, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_IDLE);
	avfs_sched_destroy(&s);
}

/* BE under hold (papers/001 §3.3.3): a BE request runs while RT requests are held only if
 * H >= t + T_S(R'); a BE request too long for the slack activates the RT scheduler instead
 * (hold = batch), or waits with the RT requests until H (hold = sweep). */
static void be_under_hold(bool sweep)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io r1 = rt(4096, 524288, 1000 * MS);
	struct avfs_io small = { .off = 2 * GB, .len = 65536 };
	struct avfs_io huge = { .off = 3 * GB, .len = 1u << 30 };
	double h;
	int64_t at = 2 * MS;

	avfs_sched_conf_default(&c);
	c.sweep = sweep;
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &r1, 0), 0);
	assert_int_equal(avfs_sched_submit(&s, &small, 0), 0);
	h = avfs_tm_hold_time(s.ctx);
	assert_true(h >= avfs_svc_time(&c.model, small.off, small.len, false));
	avfs_sched_next(&s, 0, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &small);
	assert_true(avfs_sched_done(&s, &cmd, 1 * MS, (int)cmd.len));
	assert_int_equal(avfs_sched_submit(&s, &huge, 1 * MS), 0);	/* 1 GiB: ~16 s of T_S */
	avfs_sched_next(&s, 2 * MS, &cmd);
	if (sweep) {		/* the sweep holds until H, the BE request with it */
		h = avfs_tm_hold_time(s.ctx);
		assert_int_equal(cmd.kind, AVFS_SCHED_WAIT);
		assert_int_equal(cmd.at, (int64_t)ceil(h));
		at = cmd.at;
		avfs_sched_next(&s, at, &cmd);
	}
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &r1);		/* the RT scheduler was activated */
	assert_true(avfs_sched_done(&s, &cmd, at + 30 * MS, (int)cmd.len));
	avfs_sched_next(&s, at + 30 * MS, &cmd);
	assert_ptr_equal(cmd.io, &huge);	/* no RT left: BE at once */
	avfs_sched_destroy(&s);
}

static void test_mixer_be_under_hold(void **state)
{
	(void)state;
	be_under_hold(false);
	be_under_hold(true);
}

/* Coalescing: a stream's adjacent requests go as one command (io->more chains them, in disk
 * order), done() completes them all, and the counter says how many rode along; a request in
 * the other direction, one that is not adjacent, and one past the size bound stay apart;
 * coalesce = 0 sends one request a command. */
static void test_mixer_coalesce(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_sched_counters k;
	const int64_t t = 10000 * MS;
	struct avfs_io v[8];

	(void)state;
	for (int off = 0; off < 2; off++) {
		avfs_sched_conf_default(&c);
		c.coalesce = off ? 0 : 1u << 20;	/* 1 MiB: two 512 KiB requests */
		s = mk(&c);
		for (int i = 0; i < 3; i++)	/* a run of three, submitted out of order */
			v[i] = rt(GB + (uint64_t)(2 - i) * 524288, 524288, t + 2000 * MS + i);
		v[3] = rt(GB + 3 * 524288, 524288, t + 2000 * MS);	/* the third: a write */
		v[3].write = true;
		v[4] = rt(GB + 5 * 524288, 524288, t + 2000 * MS);	/* a gap before it */
		for (int i = 0; i < 5; i++)
			assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
		/* at H the batch runs, in LBA order */
		avfs_sched_next(&s, (int64_t)ceil(avfs_tm_hold_time(s.ctx)), &cmd);
		assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
		assert_ptr_equal(cmd.io, &v[2]);
		assert_int_equal(cmd.off, GB);
		if (off) {
			assert_int_equal(cmd.len, 524288);
			assert_null(v[2].more);
		} else {
			assert_int_equal(cmd.len, 1u << 20);	/* v[2] + v[1]; v[0] past the bound */
			assert_ptr_equal(v[2].more, &v[1]);
			assert_null(v[1].more);
		}
		assert_true(avfs_sched_done(&s, &cmd, t + 30 * MS, (int)cmd.len));
		assert_int_equal(s.ops->pending(s.ctx), off ? 4 : 3);
		avfs_sched_counters(&s, &k);
		assert_int_equal(k.coalesced, off ? 0 : 1);
		for (int n = 0; s.ops->pending(s.ctx); n++) {	/* the rest, one each */
			avfs_sched_next(&s, t + (n + 1) * 30 * MS, &cmd);
			assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
			assert_null(cmd.io->more);
			assert_true(avfs_sched_done(&s, &cmd, t + (n + 2) * 30 * MS, (int)cmd.len));
		}
		avfs_sched_destroy(&s);
	}
}

/* The length of the first command over a stream's 4 client requests of 512 KiB and 8 more
 * behind them on the disk, read ahead or not, all due in 2 s (at H: the batch in order). */
static uint32_t ahead_len(const struct avfs_sched_conf *c, bool ahead)
{
	struct avfs_sched s = mk(c);
	struct avfs_sched_cmd cmd;
	struct avfs_io v[12];

	for (int i = 0; i < 12; i++) {
		v[i] = rt(GB + (uint64_t)i * 524288, 524288, 2000 * MS + i);
		v[i].prefetch = ahead && i >= 4;
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	}
	avfs_sched_next(&s, (int64_t)ceil(avfs_tm_hold_time(s.ctx)), &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &v[0]);
	avfs_sched_destroy(&s);
	return cmd.len;
}

/* coalesce-ahead: a command goes on past `coalesce` (4 MiB) up to coalesce-ahead (8 MiB) while
 * what it carries next is read ahead; a client's own requests stop at `coalesce`; chunking
 * bounds every command, read-ahead or not. */
static void test_mixer_coalesce_ahead(void **state)
{
	struct avfs_sched_conf c;

	(void)state;
	avfs_sched_conf_default(&c);
	assert_int_equal(ahead_len(&c, false), 4u << 20);
	assert_int_equal(ahead_len(&c, true), 6u << 20);	/* all 12: 6 MiB, within m/4 */
	c.coalesce_ahead = 5u << 20;
	assert_int_equal(ahead_len(&c, true), 5u << 20);
	c.coalesce_ahead = 0;
	assert_int_equal(ahead_len(&c, true), 4u << 20);
	avfs_sched_conf_default(&c);
	c.chunk = 1u << 20;
	assert_int_equal(ahead_len(&c, true), 1u << 20);
}

/* Coalescing stays within the window that picked the request: in the EDF window only the
 * followers that are urgent too ride along, and never past the first request's own deadline
 * less e; a failed command fails every request it carried. */
static void test_mixer_coalesce_bounds(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;
	struct avfs_io v[3];

	(void)state;
	avfs_sched_conf_default(&c);
	s = mk(&c);
	v[0] = rt(GB, 524288, t + 50 * MS);			/* urgent */
	v[1] = rt(GB + 524288, 524288, t + 60 * MS);		/* urgent too */
	v[2] = rt(GB + 2 * 524288, 524288, t + 900 * MS);	/* not urgent */
	for (int i = 0; i < 3; i++)
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	avfs_sched_next(&s, t, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &v[0]);
	/* v[1] is urgent, but the command would end after v[0]'s deadline less e: alone */
	assert_int_equal(cmd.len, 524288);
	assert_true(avfs_sched_done(&s, &cmd, t + 10 * MS, -EIO));	/* fails: v[0] only */
	assert_int_equal(s.ops->pending(s.ctx), 2);
	avfs_sched_destroy(&s);

	/* with e small, v[0] may carry v[1] (urgent) but not v[2]; the failure takes both */
	c.urgent_ns = 5 * MS;
	c.margin_ns = 100 * MS;
	s = mk(&c);
	v[0] = rt(GB, 524288, t + 4 * MS + 1000 * MS);
	v[1] = rt(GB + 524288, 524288, t + 5 * MS + 1000 * MS);
	v[2] = rt(GB + 2 * 524288, 524288, t + 900 * MS + 1000 * MS);
	for (int i = 0; i < 3; i++)
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	avfs_sched_next(&s, t + 1000 * MS, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &v[0]);
	assert_int_equal(cmd.len, 524288);	/* own deadline less e leaves no room */
	avfs_sched_destroy(&s);
}

/* The bytes of the command the reduced window starts with a (due in 300 ms) under c, when f
 * follows it on the disk (due in 2 s: its stream's next; read ahead or not) and o, elsewhere,
 * is due in o_ms: with a's command and f's transfer o would keep less than e/2 + its own
 * service time unless it is due late enough. */
static uint32_t reduced_pick_len(const struct avfs_sched_conf *c, bool piece, int64_t o_ms)
{
	struct avfs_sched s = mk(c);
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;
	struct avfs_io a, f, o;

	a = rt(100 * GB, 524288, t + 300 * MS);
	f = rt(100 * GB + 524288, 524288, t + 2000 * MS);
	f.prefetch = piece;
	o = rt(150 * GB, 524288, t + o_ms * MS);
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	assert_int_equal(avfs_sched_submit(&s, &f, 0), 0);
	assert_int_equal(avfs_sched_submit(&s, &o, 0), 0);
	avfs_sched_next(&s, t, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &a);
	assert_true(avfs_sched_done(&s, &cmd, t + 30 * MS, (int)cmd.len));
	avfs_sched_destroy(&s);
	return cmd.len;
}

/* reduced-carry = on: in the reduced C-SCAN window a command carries what follows its
 * request on the disk whatever that is due — a stream's next buffer due long after t_d + m —
 * as long as the request due first that it does not carry (o, far away) can spare the time;
 * when o cannot (due right after it), the follower stays. Off (the default) the window never
 * takes a follower due at or after t_d + m (one read ahead aside: test_mixer_prefetch_carry). */
static void test_mixer_reduced_window_carries(void **state);

/* o's deadline (ms after the pick) at which o can spare a's command alone but not a's with f:
 * e/2 + o's own service time + midway between the two commands' (o's 150 GB, a's 100 GB, as
 * reduced_pick_len places them). Sets e = 60 ms so that o is not yet in the EDF window. */
static int64_t tight_ms(struct avfs_sched_conf *c)
{
	double a = avfs_svc_time(&c->model, 100 * GB, 524288, false);
	double af = avfs_svc_time(&c->model, 100 * GB, 2 * 524288, false);
	double o = avfs_svc_time(&c->model, 150 * GB, 524288, false);
	int64_t ms;

	c->urgent_ns = 60 * MS;
	ms = (int64_t)llround((30 * MS + o + (a + af) / 2) / MS);
	assert_true(ms * MS > c->urgent_ns && ms * MS < c->margin_ns);
	return ms;
}

static void test_mixer_reduced_window_carries(void **state)
{
	struct avfs_sched_conf c;

	(void)state;
	avfs_sched_conf_default(&c);
	assert_false(c.reduced_carry);
	assert_int_equal(reduced_pick_len(&c, false, 400), 524288);
	c.reduced_carry = true;
	assert_int_equal(reduced_pick_len(&c, false, 400), 2 * 524288);
	assert_int_equal(reduced_pick_len(&c, false, tight_ms(&c)), 524288);
}

/* prefetch-carry (on by default): in the reduced window (and the EDF one) a command carries a
 * follower that is read ahead (io->prefetch: nobody waits for it yet) whatever it is due, as
 * long as the request due first that it does not carry can spare the time (o due in 400 ms,
 * not just after e/2 and the two commands) — and only such a follower: a client's own later
 * request stays, as with reduced-carry off. */
static void test_mixer_prefetch_carry(void **state)
{
	struct avfs_sched_conf c;

	(void)state;
	avfs_sched_conf_default(&c);
	assert_true(c.prefetch_carry);
	assert_int_equal(reduced_pick_len(&c, true, 400), 2 * 524288);
	assert_int_equal(reduced_pick_len(&c, false, 400), 524288);
	assert_int_equal(reduced_pick_len(&c, true, tight_ms(&c)), 524288);
	c.prefetch_carry = false;
	assert_int_equal(reduced_pick_len(&c, true, 400), 524288);
}

/* Which request the reduced window serves first when a round stream's k requests of 512 KiB at
 * 199 GB are all due at t + d_ms and a 4 MiB request at 75 GB, first in C-SCAN order, is due
 * 200 ms after them. */
static struct avfs_io *ties_first(const struct avfs_sched_conf *c, unsigned k, int64_t d_ms,
				  struct avfs_io *o, struct avfs_io *b)
{
	struct avfs_sched s = mk(c);
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;

	for (unsigned i = 0; i < k; i++) {
		o[i] = rt(199 * GB + i * 524288ull, 524288, t + d_ms * MS);
		assert_int_equal(avfs_sched_submit(&s, &o[i], 0), 0);
	}
	*b = rt(75 * GB, 4u << 20, t + (d_ms + 200) * MS);
	assert_int_equal(avfs_sched_submit(&s, b, 0), 0);
	avfs_sched_next(&s, t, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	avfs_sched_destroy(&s);
	return cmd.io;
}

/* The reduced window serves in C-SCAN order only while what it serves first leaves the request
 * due first — and those due with it, as a round's requests are — e/2 more than their service:
 * else they go first. So one request at 199 GB lets the 4 MiB command at 75 GB go before it,
 * eight due at the same time do not (their service counted, the adjacent ones without a
 * positioning); due late enough, the eight let it go too. */
static void test_mixer_reduced_window_gives_way(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_io o[8], b;
	double big, one, eight = 0;
	int64_t d;

	(void)state;
	avfs_sched_conf_default(&c);
	big = avfs_svc_time(&c.model, 75 * GB, 4u << 20, false);
	one = avfs_svc_time(&c.model, 199 * GB, 524288, false);
	for (unsigned i = 0; i < 8; i++)
		eight += avfs_svc_time(&c.model, 199 * GB + i * 524288ull, 524288, i > 0);
	d = (int64_t)llround((c.urgent_ns / 2 + big + (one + eight) / 2) / MS);
	assert_true(d * MS > c.urgent_ns && d * MS < c.margin_ns);	/* the reduced window */
	assert_ptr_equal(ties_first(&c, 1, d, o, &b), &b);
	assert_ptr_equal(ties_first(&c, 8, d, o, &b), &o[0]);
	assert_ptr_equal(ties_first(&c, 8, d + 60, o, &b), &b);
}

/* A sweep (hold = sweep, coalescing up to `coalesce` if not 0) that has started with a: a is
 * submitted at 0 and dispatched at t, its command in *cmd. */
static struct avfs_sched sweep_from(struct avfs_sched_conf *c, uint32_t coalesce,
				    struct avfs_io *a, int64_t t, struct avfs_sched_cmd *cmd)
{
	struct avfs_sched s;

	avfs_sched_conf_default(c);
	c->sweep = true;
	if (coalesce)
		c->coalesce = coalesce;
	s = mk(c);
	assert_int_equal(avfs_sched_submit(&s, a, 0), 0);
	avfs_sched_next(&s, t, cmd);		/* due: the sweep starts with a */
	assert_int_equal(cmd->kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd->io, a);
	return s;
}

/* From now on the mixer dispatches want[0..n) in that order (waiting where it holds), each
 * command done `step` after it went. */
static void serve_in_order(struct avfs_sched *s, struct avfs_io **want, int n, int64_t now,
			   int64_t step)
{
	struct avfs_sched_cmd cmd;

	for (int i = 0; i < n; i++) {
		avfs_sched_next(s, now, &cmd);
		if (cmd.kind == AVFS_SCHED_WAIT) {	/* held until H */
			assert_int_equal(cmd.at, (int64_t)ceil(avfs_tm_hold_time(s->ctx)));
			now = cmd.at;
			avfs_sched_next(s, now, &cmd);
		}
		assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
		assert_ptr_equal(cmd.io, want[i]);
		now += step;
		assert_true(avfs_sched_done(s, &cmd, now, (int)cmd.len));
	}
}

/* The sweep (hold = sweep): a request ahead of the head joins the turn it is in, one behind
 * it waits for the next turn, and one that starts where a whole coalescing size ended also
 * waits for the next turn (a stream asking as fast as it is served does not keep the head);
 * the hold time is taken over the sweep's order from the head. */
static void test_mixer_sweep(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;
	struct avfs_io a = rt(10 * GB, 1u << 20, t + 520 * MS);
	struct avfs_io ahead = rt(20 * GB, 65536, t + 5000 * MS);
	struct avfs_io behind = rt(5 * GB, 65536, t + 1600 * MS);
	struct avfs_io cont = rt(10 * GB + (1u << 20), 65536, t + 5000 * MS);
	struct avfs_io far = rt(30 * GB, 65536, t + 5000 * MS);
	struct avfs_io *want[4] = { &ahead, &far, &behind, &cont };

	(void)state;
	s = sweep_from(&c, 1u << 20, &a, t, &cmd);
	assert_int_equal(avfs_sched_submit(&s, &ahead, t + 1 * MS), 0);
	assert_int_equal(avfs_sched_submit(&s, &behind, t + 1 * MS), 0);
	assert_true(avfs_sched_done(&s, &cmd, t + 20 * MS, (int)cmd.len));
	/* a's 1 MiB was the coalescing size: its continuation goes to the next turn */
	assert_int_equal(avfs_sched_submit(&s, &cont, t + 20 * MS), 0);
	assert_int_equal(avfs_sched_submit(&s, &far, t + 20 * MS), 0);
	/* H over the order ahead, far, behind, cont: behind's prefix holds all before it */
	assert_near(avfs_tm_hold_time(s.ctx), (double)(t + 1600 * MS) - 500 * MS -
		    avfs_svc_time(&c.model, ahead.off, ahead.len, false) -
		    avfs_svc_time(&c.model, far.off, far.len, false) -
		    avfs_svc_time(&c.model, behind.off, behind.len, false), 1);
	/* ahead, far (this turn), then the next turn from the start of the disk: behind, cont */
	serve_in_order(&s, want, 4, t + 20 * MS, 10 * MS);
	avfs_sched_destroy(&s);
}

/* The sweep's turn, once H came, runs to its end (it does not hold again after each command:
 * that kept every request at the edge of its margin, and Fahrrad's four greedy streams
 * missed tens of thousands of deadlines); between turns it holds again. */
static void test_mixer_sweep_turn_runs(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;
	struct avfs_io a = rt(10 * GB, 1u << 20, t + 520 * MS);
	struct avfs_io b = rt(20 * GB, 65536, t + 5000 * MS);
	struct avfs_io n = rt(5 * GB, 65536, t + 5000 * MS);

	(void)state;
	s = sweep_from(&c, 0, &a, t, &cmd);
	assert_int_equal(avfs_sched_submit(&s, &b, t), 0);	/* ahead: this turn */
	assert_true(avfs_sched_done(&s, &cmd, t + 20 * MS, (int)cmd.len));
	assert_true(avfs_tm_hold_time(s.ctx) > (double)(t + 4000 * MS));	/* b could wait... */
	avfs_sched_next(&s, t + 20 * MS, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);	/* ...but its turn runs on */
	assert_ptr_equal(cmd.io, &b);
	assert_int_equal(avfs_sched_submit(&s, &n, t + 21 * MS), 0);	/* behind: next turn */
	assert_true(avfs_sched_done(&s, &cmd, t + 30 * MS, (int)cmd.len));
	avfs_sched_next(&s, t + 30 * MS, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_WAIT);	/* a new turn: held until H */
	assert_int_equal(cmd.at, (int64_t)ceil(avfs_tm_hold_time(s.ctx)));
	avfs_sched_destroy(&s);
}

/* A request ahead of the head joins the turn under way only if every request keeps half the
 * margin after it (H >= now - m/2), or if it is due before one of the turn (papers/001's rule
 * for a batch); else it waits for the next turn. Before this rule a turn took whatever
 * greedy streams sent ahead of the head, and the requests at its far end missed. */
static void test_mixer_sweep_join(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	const int64_t t = 10000 * MS;
	struct avfs_io a = rt(10 * GB, 1u << 20, t + 520 * MS);
	struct avfs_io far, big = rt(20 * GB, 8u << 20, t + 5000 * MS), early;
	struct avfs_io *want[3] = { &early, &far, &big };
	double ts_far;

	(void)state;
	s = sweep_from(&c, 0, &a, t, &cmd);
	/* far keeps m/2 + 50 ms alone; big ahead of it (~150 ms) would leave it less */
	ts_far = avfs_svc_time(&c.model, 30 * GB, 65536, false);
	far = rt(30 * GB, 65536, t + 1 * MS + 300 * MS + (int64_t)ts_far);
	assert_int_equal(avfs_sched_submit(&s, &far, t + 1 * MS), 0);
	assert_true(avfs_tm_hold_time(s.ctx) >= (double)(t + 1 * MS) - 250 * MS);
	assert_int_equal(avfs_sched_submit(&s, &big, t + 1 * MS), 0);
	assert_true(avfs_tm_hold_time(s.ctx) >= (double)(t + 1 * MS) - 250 * MS);	/* not in */
	/* early, 4 MiB, would also leave far less than m/2, but is due before it: it joins */
	early = rt(25 * GB, 4u << 20, far.deadline - 5 * MS);
	assert_int_equal(avfs_sched_submit(&s, &early, t + 2 * MS), 0);
	assert_true(avfs_tm_hold_time(s.ctx) < (double)(t + 2 * MS) - 250 * MS);
	assert_true(avfs_sched_done(&s, &cmd, t + 20 * MS, (int)cmd.len));
	serve_in_order(&s, want, 3, t + 20 * MS, 20 * MS);
	avfs_sched_destroy(&s);
}

/* BE order is C-SCAN from the end of the last executed request, and a request older than the
 * age bound goes first: nothing starves. */
static void test_mixer_be_cscan_and_ageing(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io a = { .off = 5 * GB, .len = 4096 }, b = { .off = 6 * GB, .len = 4096 },
		       old = { .off = 1 * GB, .len = 4096 }, x = { .off = 7 * GB, .len = 4096 };

	(void)state;
	avfs_sched_conf_default(&c);
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &old, 0), 0);
	avfs_sched_next(&s, 0, &cmd);
	assert_ptr_equal(cmd.io, &old);
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	assert_int_equal(avfs_sched_submit(&s, &b, 0), 0);
	assert_true(avfs_sched_done(&s, &cmd, 1 * MS, 4096));
	avfs_sched_next(&s, 1 * MS, &cmd);
	assert_ptr_equal(cmd.io, &a);		/* C-SCAN from 1 GB: 5 GB next */
	/* something behind the head arrives, then ages past the bound */
	old = (struct avfs_io){ .off = 1 * GB, .len = 4096 };
	assert_int_equal(avfs_sched_submit(&s, &old, 1 * MS), 0);
	assert_true(avfs_sched_done(&s, &cmd, 2 * MS, 4096));
	assert_int_equal(avfs_sched_submit(&s, &x, 2 * MS), 0);
	avfs_sched_next(&s, 3 * MS, &cmd);
	assert_ptr_equal(cmd.io, &b);		/* young: C-SCAN order */
	assert_true(avfs_sched_done(&s, &cmd, 4 * MS, 4096));
	avfs_sched_next(&s, 3000 * MS, &cmd);
	assert_ptr_equal(cmd.io, &old);		/* 3 s old > 2 s bound: before x */
	avfs_sched_destroy(&s);
}

/* Best effort between flows: a greedy flow whose next request always lies just ahead of the
 * head (a sequential reader's read-ahead) gets the disk in turn with another flow's request
 * behind the head, not until that one ages; commits (AVFS_IO_FLOW_META) go first; within a
 * flow, C-SCAN from its own last end. */
static void test_mixer_be_flows_in_turn(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io g[4], v = { .off = 1 * GB, .len = 65536, .flow = 2 },
		       v2 = { .off = 1 * GB + 65536, .len = 65536, .flow = 2 },
		       m = { .off = 3 * GB, .len = 4096, .flow = AVFS_IO_FLOW_META };
	int64_t now = 0;

	(void)state;
	avfs_sched_conf_default(&c);
	c.coalesce = 0;
	s = mk(&c);
	for (int i = 0; i < 4; i++)
		g[i] = (struct avfs_io){ .off = 5 * GB + (uint64_t)i * (2 << 20), .len = 2 << 20,
					 .flow = 1 };
	assert_int_equal(avfs_sched_submit(&s, &g[0], now), 0);
	avfs_sched_next(&s, now, &cmd);
	assert_ptr_equal(cmd.io, &g[0]);
	/* the other client's request arrives behind the head, then the reader's next window */
	assert_int_equal(avfs_sched_submit(&s, &v, now), 0);
	assert_int_equal(avfs_sched_submit(&s, &g[1], now), 0);
	now += 20 * MS;
	assert_true(avfs_sched_done(&s, &cmd, now, 2 << 20));
	avfs_sched_next(&s, now, &cmd);
	assert_ptr_equal(cmd.io, &v);		/* its turn: not after the 2 s bound */
	assert_int_equal(avfs_sched_submit(&s, &v2, now), 0);
	now += 10 * MS;
	assert_true(avfs_sched_done(&s, &cmd, now, 65536));
	avfs_sched_next(&s, now, &cmd);
	assert_ptr_equal(cmd.io, &g[1]);	/* the reader's turn again, though v2 follows v */
	assert_int_equal(avfs_sched_submit(&s, &g[2], now), 0);
	assert_int_equal(avfs_sched_submit(&s, &m, now), 0);
	now += 20 * MS;
	assert_true(avfs_sched_done(&s, &cmd, now, 2 << 20));
	avfs_sched_next(&s, now, &cmd);
	assert_ptr_equal(cmd.io, &m);		/* a commit's write before both */
	now += 10 * MS;
	assert_true(avfs_sched_done(&s, &cmd, now, 4096));
	avfs_sched_next(&s, now, &cmd);
	assert_ptr_equal(cmd.io, &v2);		/* served longest ago: flow 2 */
	now += 10 * MS;
	assert_true(avfs_sched_done(&s, &cmd, now, 65536));
	avfs_sched_next(&s, now, &cmd);
	assert_ptr_equal(cmd.io, &g[2]);
	now += 20 * MS;
	assert_true(avfs_sched_done(&s, &cmd, now, 2 << 20));
	/* one flow alone: C-SCAN from the head as before */
	assert_int_equal(avfs_sched_submit(&s, &g[3], now), 0);
	avfs_sched_next(&s, now, &cmd);
	assert_ptr_equal(cmd.io, &g[3]);
	assert_true(avfs_sched_done(&s, &cmd, now + 20 * MS, 2 << 20));
	avfs_sched_next(&s, now + 20 * MS, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_IDLE);
	avfs_sched_destroy(&s);
}

/* The best-effort floor: RT requests whose hold time is always due (an overload) would keep
 * a BE request out for ever; past the age bound it goes first, one every age bound. */
static void test_mixer_be_floor_under_overload(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io be = { .off = 100 * GB, .len = 4096 }, be2 = { .off = 101 * GB, .len = 4096 };
	struct avfs_io r[800];
	int64_t now = 0, be_at = -1, be2_at = -1;
	int k = 0;

	(void)state;
	avfs_sched_conf_default(&c);
	s = mk(&c);
	/* every 10 ms a 512 KiB RT request due 20 ms later: always urgent, never idle; the two
	 * BE requests come once the overload is on */
	for (int i = 0; i < 800 && (be_at < 0 || be2_at < 0); i++) {
		if (i == 10) {
			assert_int_equal(avfs_sched_submit(&s, &be, now), 0);
			assert_int_equal(avfs_sched_submit(&s, &be2, now), 0);
		}
		r[k] = rt((uint64_t)(k % 50) * 4 * GB, 524288, now + 20 * MS);
		if (avfs_sched_submit(&s, &r[k], now) == 0)
			k++;
		avfs_sched_next(&s, now, &cmd);
		if (cmd.kind == AVFS_SCHED_DISPATCH) {
			if (cmd.io == &be)
				be_at = now;
			if (cmd.io == &be2)
				be2_at = now;
			avfs_sched_done(&s, &cmd, now + 10 * MS, (int)cmd.len);
		}
		now += 10 * MS;
	}
	print_message("BE arrived at 100 ms, issued at %lld ms and %lld ms\n",
		      (long long)(be_at / MS), (long long)(be2_at / MS));
	/* the first waits out its age bound (2 s), the next one a second bound after it */
	assert_true(be_at > 2100 * MS && be_at <= 2200 * MS);
	assert_true(be2_at >= be_at + 2000 * MS && be2_at <= be_at + 2100 * MS);
	while (avfs_sched_next(&s, now, &cmd), cmd.kind == AVFS_SCHED_DISPATCH ||
	       cmd.kind == AVFS_SCHED_FAIL) {
		if (cmd.kind == AVFS_SCHED_DISPATCH)
			avfs_sched_done(&s, &cmd, now, (int)cmd.len);
		now += MS;
	}
	avfs_sched_destroy(&s);
}

/* Chunking (papers/003 §3.1): a 1 MiB write goes out in 256 KiB commands, FUA only on the
 * last; between two chunks an urgent RT request runs, then the rest resumes. */
static void test_mixer_chunking(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io w = { .off = 2 * GB, .len = 1 << 20, .write = true, .fua = true };
	struct avfs_io urgent = rt(100 * GB, 4096, 150 * MS);
	int chunks = 0, fua = 0;
	bool urgent_between = false;
	int64_t t = 0;

	(void)state;
	avfs_sched_conf_default(&c);
	assert_int_equal(avfs_sched_conf_set(&c, "chunk", "256K", NULL, 0), 0);
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &w, 0), 0);
	for (;;) {
		avfs_sched_next(&s, t, &cmd);
		if (cmd.kind == AVFS_SCHED_IDLE)
			break;
		assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
		if (cmd.io == &w) {
			assert_int_equal(cmd.len, 256 << 10);
			assert_int_equal(cmd.off, 2 * GB + (uint64_t)chunks * (256 << 10));
			fua += cmd.fua;
			assert_int_equal(cmd.fua, chunks == 3);
			chunks++;
		} else {
			assert_ptr_equal(cmd.io, &urgent);
			urgent_between = chunks == 1;
		}
		t += 5 * MS;
		avfs_sched_done(&s, &cmd, t, (int)cmd.len);
		if (chunks == 1 && !urgent.arrival)
			assert_int_equal(avfs_sched_submit(&s, &urgent, t), 0);
	}
	assert_int_equal(chunks, 4);
	assert_int_equal(fua, 1);
	assert_true(urgent_between);
	assert_int_equal(w.len, 0);
	{
		struct avfs_sched_counters k;

		avfs_sched_counters(&s, &k);
		assert_int_equal(k.chunks, 4);	/* the urgent request was whole */
		assert_int_equal(k.jit_waits + k.seek_splits, 0);
	}
	avfs_sched_destroy(&s);
}

/* A fake disk for JIT and splitting: a fixed rotational wait, a long seek. */
static int fake_pred(void *ctx, int64_t now, uint64_t off, int64_t *seek, int64_t *rot,
		     int64_t *half, uint64_t *mid)
{
	(void)ctx, (void)now;
	*seek = 14 * MS;
	*half = 9 * MS;		/* papers/003 §1: two 9 ms sub-seeks replace a 14 ms seek */
	*rot = 7 * MS;
	*mid = off / 2;
	return 0;
}

/* JIT seek: the command waits out the rotational slack (minus the offset) — a WAIT, during
 * which an urgent request is served first — and then goes. Seek splitting: a long seek with
 * enough slack is preceded by a SEEK to the middle. */
static void test_mixer_jit_and_split(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io a = { .off = 200 * GB, .len = 65536 };
	struct avfs_io u = rt(10 * GB, 4096, 60 * MS);

	(void)state;
	avfs_sched_conf_default(&c);
	c.pred = (struct avfs_sched_predictor){ .predict = fake_pred };
	c.jit = true;
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	avfs_sched_next(&s, 0, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_WAIT);
	assert_int_equal(cmd.at, 7 * MS - c.jit_offset_ns);
	assert_int_equal(avfs_sched_submit(&s, &u, 1 * MS), 0);	/* during the slack */
	avfs_sched_next(&s, 1 * MS, &cmd);
	/* the urgent one is in the EDF window: it is chosen; JIT may delay it too */
	while (cmd.kind == AVFS_SCHED_WAIT)
		avfs_sched_next(&s, cmd.at, &cmd);
	assert_ptr_equal(cmd.io, &u);
	avfs_sched_done(&s, &cmd, 10 * MS, (int)cmd.len);
	avfs_sched_next(&s, 10 * MS, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_WAIT);
	avfs_sched_next(&s, cmd.at, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_ptr_equal(cmd.io, &a);
	{
		struct avfs_sched_counters k;

		/* a's slack was waited twice (before and after u), u's once, asked again
		 * and again during the slack without counting twice */
		avfs_sched_counters(&s, &k);
		assert_int_equal(k.jit_waits, 3);
		assert_int_equal(k.jit_wait_ns, 3 * (7 * MS - c.jit_offset_ns));
		assert_int_equal(k.seek_splits, 0);
	}
	avfs_sched_destroy(&s);

	c.jit = false;
	assert_int_equal(avfs_sched_conf_set(&c, "split", "100G", NULL, 0), 0);
	s = mk(&c);
	a = (struct avfs_io){ .off = 200 * GB, .len = 65536 };
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	avfs_sched_next(&s, 0, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_true(cmd.seek);			/* 7 ms of slack hide 2 x 9 − 14 = 4 ms */
	assert_int_equal(cmd.off, 100 * GB);
	assert_false(avfs_sched_done(&s, &cmd, 9 * MS, 0));
	avfs_sched_next(&s, 9 * MS, &cmd);
	assert_false(cmd.seek);
	assert_ptr_equal(cmd.io, &a);
	{
		struct avfs_sched_counters k;

		avfs_sched_counters(&s, &k);
		assert_int_equal(k.seek_splits, 1);
		assert_int_equal(k.jit_waits + k.chunks, 0);
	}
	avfs_sched_destroy(&s);
}

/* Like fake_pred, but the rotational wait is only an expectation (a predictor too far from
 * where it knows the platter's angle). */
static int fake_pred_mean(void *ctx, int64_t now, uint64_t off, int64_t *seek, int64_t *rot,
			  int64_t *half, uint64_t *mid)
{
	fake_pred(ctx, now, off, seek, rot, half, mid);
	return AVFS_PRED_ROT_MEAN;
}

/* AVFS_PRED_ROT_MEAN: no JIT wait on a guessed rotational delay, but the split decision
 * may use it. */
static void test_mixer_pred_rot_mean(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd;
	struct avfs_io a = { .off = 200 * GB, .len = 65536 };
	struct avfs_sched_counters k;

	(void)state;
	avfs_sched_conf_default(&c);
	c.pred = (struct avfs_sched_predictor){ .predict = fake_pred_mean };
	c.jit = true;
	s = mk(&c);
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	avfs_sched_next(&s, 0, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);	/* at once: no wait */
	assert_ptr_equal(cmd.io, &a);
	avfs_sched_counters(&s, &k);
	assert_int_equal(k.jit_waits, 0);
	avfs_sched_destroy(&s);

	assert_int_equal(avfs_sched_conf_set(&c, "split", "100G", NULL, 0), 0);
	s = mk(&c);
	a = (struct avfs_io){ .off = 200 * GB, .len = 65536 };
	assert_int_equal(avfs_sched_submit(&s, &a, 0), 0);
	avfs_sched_next(&s, 0, &cmd);
	assert_int_equal(cmd.kind, AVFS_SCHED_DISPATCH);
	assert_true(cmd.seek);			/* the expected 7 ms still hide the 4 ms */
	avfs_sched_destroy(&s);
}

/* Non-rotational devices (SPEC §5.6): no holding, EDF for RT before BE, several commands in
 * flight up to the depth. */
static void test_mixer_non_rotational(void **state)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_sched_cmd cmd[4];
	struct avfs_io v[4] = { rt(4096, 4096, 900 * MS), rt(8192, 4096, 300 * MS),
				{ .off = 12288, .len = 4096 }, rt(16384, 4096, 600 * MS) };

	(void)state;
	avfs_sched_conf_default(&c);
	c.rotational = false;
	c.depth = 3;
	s = mk(&c);
	for (int i = 0; i < 4; i++)
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	for (int i = 0; i < 3; i++) {
		avfs_sched_next(&s, 0, &cmd[i]);
		assert_int_equal(cmd[i].kind, AVFS_SCHED_DISPATCH);
	}
	assert_ptr_equal(cmd[0].io, &v[1]);
	assert_ptr_equal(cmd[1].io, &v[3]);
	assert_ptr_equal(cmd[2].io, &v[0]);
	avfs_sched_next(&s, 0, &cmd[3]);
	assert_int_equal(cmd[3].kind, AVFS_SCHED_IDLE);	/* depth reached */
	avfs_sched_done(&s, &cmd[1], 1 * MS, 4096);
	avfs_sched_next(&s, 1 * MS, &cmd[3]);
	assert_ptr_equal(cmd[3].io, &v[2]);
	avfs_sched_destroy(&s);
}

/* Every setting has a name, a default and a range check; e must stay below m. */
static void test_mixer_settings(void **state)
{
	struct avfs_sched_conf c;
	size_t n;
	const struct avfs_sched_setting_info *info = avfs_sched_settings(&n);
	char why[128];

	(void)state;
	avfs_sched_conf_default(&c);
	assert_true(n >= 10);
	for (size_t i = 0; i < n; i++)
		assert_true(info[i].name && info[i].unit && info[i].range && info[i].help);
	assert_int_equal(c.margin_ns, 500 * MS);
	assert_int_equal(c.urgent_ns, 100 * MS);
	assert_int_equal(c.be_age_ns, 2000 * MS);
	assert_false(c.sweep);	/* hold = batch (docs/DESIGN.md: the sweep breaks Fahrrad's four) */
	assert_int_equal(c.coalesce, 4u << 20);
	assert_int_equal(c.coalesce_ahead, 8u << 20);
	assert_int_equal(avfs_sched_conf_set(&c, "hold", "sweep", why, sizeof(why)), 0);
	assert_true(c.sweep);
	assert_int_equal(avfs_sched_conf_set(&c, "hold", "lazy", why, sizeof(why)), -ERANGE);
	assert_int_equal(avfs_sched_conf_set(&c, "margin", "250ms", why, sizeof(why)), 0);
	assert_int_equal(c.margin_ns, 250 * MS);
	assert_int_equal(avfs_sched_conf_set(&c, "margin", "2h", why, sizeof(why)), -EINVAL);
	assert_int_equal(avfs_sched_conf_set(&c, "margin", "61s", why, sizeof(why)), -ERANGE);
	assert_int_equal(avfs_sched_conf_set(&c, "chunk", "1000", why, sizeof(why)), -ERANGE);
	assert_int_equal(avfs_sched_conf_set(&c, "colour", "blue", why, sizeof(why)), -ENOENT);
	/* split: 0 (off) or from 1 MiB up */
	assert_int_equal(avfs_sched_conf_set(&c, "split", "512K", why, sizeof(why)), -ERANGE);
	assert_int_equal(avfs_sched_conf_set(&c, "split", "1M", why, sizeof(why)), 0);
	assert_int_equal(c.split_bytes, 1 << 20);
	assert_int_equal(avfs_sched_conf_set(&c, "split", "0", why, sizeof(why)), 0);
	assert_int_equal(c.split_bytes, 0);
	assert_int_equal(avfs_sched_conf_set(&c, "urgent", "300ms", why, sizeof(why)), 0);
	assert_int_equal(avfs_sched_conf_check(&c, why, sizeof(why)), -EINVAL);	/* e >= m */
	c.urgent_ns = 100 * MS;
	c.jit = true;
	assert_int_equal(avfs_sched_conf_check(&c, why, sizeof(why)), -EINVAL);	/* no predictor */
	c.jit = false;
	/* order: lba (the default) or satf, which needs a predictor; its window 2..64 */
	assert_false(c.satf);
	assert_int_equal(c.satf_window, 4);
	assert_int_equal(avfs_sched_conf_set(&c, "order", "nearest", why, sizeof(why)), -ERANGE);
	assert_false(c.satf);
	assert_int_equal(avfs_sched_conf_set(&c, "satf-window", "1", why, sizeof(why)), -ERANGE);
	assert_int_equal(avfs_sched_conf_set(&c, "satf-window", "65", why, sizeof(why)), -ERANGE);
	assert_int_equal(c.satf_window, 4);
	assert_int_equal(avfs_sched_conf_set(&c, "satf-window", "16", why, sizeof(why)), 0);
	assert_int_equal(c.satf_window, 16);
	assert_int_equal(avfs_sched_conf_set(&c, "order", "satf", why, sizeof(why)), 0);
	assert_true(c.satf);
	assert_int_equal(avfs_sched_conf_check(&c, why, sizeof(why)), -EINVAL);	/* no predictor */
	assert_non_null(strstr(why, "satf"));
	assert_int_equal(avfs_sched_conf_set(&c, "order", "lba", why, sizeof(why)), 0);
	assert_false(c.satf);
}

/* A fake disk for order = satf: the positioning time (seek + rotational wait) of each
 * request, fixed per offset (table) or drawn from the head's place and the target's (hashed),
 * never more than the service-time model's tk + tr/2; a command then takes that plus the
 * model's transfer time, so the disk is never slower than the mixer's model. */
struct satf_disk {
	uint64_t head;
	unsigned n;
	uint64_t off[8];
	int64_t pos[8];
	bool hashed;
	unsigned asked;
};

static int64_t satf_pos(const struct satf_disk *d, uint64_t off)
{
	const struct avfs_svc_model m = { .tr_ns = 60e9 / 7200, .tk_ns = 8.5e6 };
	uint64_t z = (off ^ (d->head * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;

	if (off == d->head)
		return 0;
	if (d->hashed)
		return (int64_t)((double)((z ^ (z >> 29)) % 1000) / 1000 * (m.tk_ns + m.tr_ns / 2));
	for (unsigned i = 0; i < d->n; i++)
		if (d->off[i] == off)
			return d->pos[i];
	return (int64_t)(m.tk_ns + m.tr_ns / 2);
}

static int satf_predict(void *ctx, int64_t now, uint64_t off, int64_t *seek, int64_t *rot,
			int64_t *half, uint64_t *mid)
{
	struct satf_disk *d = ctx;
	int64_t p = satf_pos(d, off);

	(void)now;
	d->asked++;
	*seek = p / 3;
	*rot = p - p / 3;
	*half = p / 4;
	*mid = off;
	return 0;
}

/* Carry out what the mixer says on the fake disk until nothing is left; each request's
 * completion time in done_at (by id; INT64_MAX if it was failed) and when its own last byte
 * was transferred in own_end (earlier than done_at when its command carried more after it).
 * The last time. */
static int64_t satf_drive(struct avfs_sched *s, struct satf_disk *d, int64_t now,
			  int64_t *done_at, int64_t *own_end, struct avfs_io **order,
			  unsigned *norder)
{
	const struct avfs_svc_model *m = &s->conf.model;
	struct avfs_sched_cmd cmd;

	for (;;) {
		avfs_sched_next(s, now, &cmd);
		if (cmd.kind == AVFS_SCHED_IDLE)
			return now;
		if (cmd.kind == AVFS_SCHED_WAIT) {
			now = cmd.at > now ? cmd.at : now + 1;
			continue;
		}
		if (cmd.kind == AVFS_SCHED_FAIL) {
			done_at[cmd.io->id] = INT64_MAX;
			continue;
		}
		now += satf_pos(d, cmd.off);
		for (struct avfs_io *x = cmd.io; x; x = x->more) {
			now += (int64_t)avfs_svc_time(m, x->off, x->more || x != cmd.io ? x->len
										    : cmd.len, true);
			if (own_end)
				own_end[x->id] = now;
		}
		d->head = cmd.off + cmd.len;
		if (order)
			order[(*norder)++] = cmd.io;
		for (struct avfs_io *x = cmd.io->more; x; x = x->more)
			done_at[x->id] = now;
		if (avfs_sched_done(s, &cmd, now, (int)cmd.len))
			done_at[cmd.io->id] = now;
	}
}

/* The fake disk's d->n requests (512 KiB each, due dl[i], in v) as one batch through a mixer
 * with c, the head at 0: the order of their commands in order[], their count; the counters
 * in *k. */
static unsigned satf_batch(const struct avfs_sched_conf *c, struct satf_disk *d,
			   const int64_t *dl, struct avfs_io *v, struct avfs_io **order,
			   int64_t *done_at, struct avfs_sched_counters *k)
{
	struct avfs_sched s = mk(c);
	unsigned n = 0;

	d->head = 0;
	d->asked = 0;
	for (unsigned i = 0; i < d->n; i++) {
		v[i] = rt(d->off[i], 524288, dl[i]);
		v[i].id = i;
		assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
	}
	satf_drive(&s, d, 0, done_at, NULL, order, &n);
	avfs_sched_counters(&s, k);
	avfs_sched_destroy(&s);
	return n;
}

/* order = satf picks, of the batch's next requests in LBA order, the one the head reaches
 * first, and the cursor stays behind what it jumped: with positioning times 12, 3 and 8 ms
 * for A < B < C, the batch goes B, C, A (LBA order: A, B, C). A request whose margin the jump
 * would eat goes first: with A due just after its own service time and m, the batch starts
 * with A. */
static void test_mixer_satf_nearest(void **state)
{
	struct avfs_sched_conf c;
	struct satf_disk d = { .n = 3, .off = { 10 * GB, 20 * GB, 30 * GB },
			       .pos = { 12 * MS, 3 * MS, 8 * MS } };
	int64_t far[3] = { 10000 * MS, 10000 * MS, 10000 * MS }, done_at[3];
	int64_t tight[3] = { 0, 10000 * MS, 10000 * MS }, stream[3];
	struct avfs_io v[3], *order[3];
	struct avfs_sched_counters k;

	(void)state;
	avfs_sched_conf_default(&c);
	c.pred = (struct avfs_sched_predictor){ .ctx = &d, .predict = satf_predict };
	c.satf = true;
	/* one request a command: a jump is charged its own service time (with coalescing, all
	 * that a command may carry: 4 MiB here, more than the batch's slack) */
	c.coalesce = 0;
	assert_int_equal(satf_batch(&c, &d, far, v, order, done_at, &k), 3);
	assert_ptr_equal(order[0], &v[1]);
	assert_ptr_equal(order[1], &v[2]);
	assert_ptr_equal(order[2], &v[0]);
	assert_int_equal(k.satf_picks, 2);
	assert_true(d.asked >= 5);

	/* order = lba on the same disk: A, B, C, no prediction asked */
	c.satf = false;
	assert_int_equal(satf_batch(&c, &d, far, v, order, done_at, &k), 3);
	assert_ptr_equal(order[0], &v[0]);
	assert_ptr_equal(order[1], &v[1]);
	assert_ptr_equal(order[2], &v[2]);
	assert_int_equal(d.asked, 0);
	assert_int_equal(k.satf_picks, 0);

	/* A due 1 ms after its margin and its own service time: B's command would eat it */
	c.satf = true;
	tight[0] = c.margin_ns + (int64_t)avfs_svc_time(&c.model, d.off[0], 524288, false) + 1 * MS;
	assert_int_equal(satf_batch(&c, &d, tight, v, order, done_at, &k), 3);
	assert_ptr_equal(order[0], &v[0]);
	assert_true(done_at[0] <= v[0].deadline - c.margin_ns);
	/* then the nearer of B (3 ms) and C (8 ms) */
	assert_ptr_equal(order[1], &v[1]);

	/* a stream's second buffer, right behind its first, is no candidate of its own although
	 * the head would reach it first (1 ms against 12): it goes with (here: just after) the
	 * first, which needs no positioning then (C, 13 ms away, due first, lets the batch go
	 * while the stream has time to spare) */
	d = (struct satf_disk){ .n = 3, .off = { 10 * GB, 10 * GB + 524288, 30 * GB },
				.pos = { 12 * MS, 1 * MS, 13 * MS } };
	stream[0] = stream[1] = 20000 * MS;
	stream[2] = 10000 * MS;
	assert_int_equal(satf_batch(&c, &d, stream, v, order, done_at, &k), 3);
	assert_ptr_equal(order[0], &v[0]);
	assert_ptr_equal(order[1], &v[1]);
}

/* order = satf never costs a request the margin C-SCAN order would have kept: random batches
 * whose every request keeps its margin m in LBA order by the service-time model (the tightest
 * exactly), some of them streams of adjacent buffers, on a disk never slower than the model:
 * with satf every request is served by its deadline less m (its own bytes; the command that
 * carries it completes by its deadline less e), as with lba, and satf does reorder. */
static void test_mixer_satf_keeps_margins(void **state)
{
	enum { N = 14 };
	uint64_t x = 7;
	unsigned picks = 0;

	(void)state;
	for (unsigned trial = 0; trial < 200; trial++) {
		for (int satf = 0; satf < 2; satf++) {
			struct avfs_sched_conf c;
			struct avfs_sched s;
			struct satf_disk d = { .hashed = true };
			struct avfs_io v[N];
			uint64_t off[N];
			int64_t done_at[N], own_end[N], slack, pre = 0;
			struct avfs_sched_counters k;
			uint64_t y = x;

			avfs_sched_conf_default(&c);
			c.pred = (struct avfs_sched_predictor){ .ctx = &d, .predict = satf_predict };
			c.satf = satf;
			c.satf_window = 2 + trial % 12;
			s = mk(&c);
			/* offsets in LBA order; every third request continues the one before */
			for (unsigned i = 0; i < N; i++) {
				y = y * 6364136223846793005ull + 1442695040888963407ull;
				off[i] = i % 3 == 2 ? off[i - 1] + 524288
						    : (i ? off[i - 1] + 524288 : 0) +
						      (y >> 20) % (15 * GB) / 4096 * 4096 + 4096;
			}
			d.head = (y >> 7) % (200 * GB);
			for (unsigned i = 0; i < N; i++) {
				bool seq = i && off[i - 1] + 524288 == off[i];

				y = y * 6364136223846793005ull + 1442695040888963407ull;
				pre += (int64_t)ceil(avfs_svc_time(&c.model, off[i], 524288, seq));
				slack = i == N / 2 ? 0 : (int64_t)((y >> 33) % (60 * MS));
				v[i] = rt(off[i], 524288, pre + c.margin_ns + slack + 1);
				v[i].id = i;
				assert_int_equal(avfs_sched_submit(&s, &v[i], 0), 0);
			}
			satf_drive(&s, &d, 0, done_at, own_end, NULL, NULL);
			for (unsigned i = 0; i < N; i++) {
				if (own_end[i] > v[i].deadline - c.margin_ns)
					fail_msg("trial %u, %s: request %u served at %.3f ms, due "
						 "%.3f ms less m", trial, satf ? "satf" : "lba", i,
						 (double)own_end[i] / 1e6,
						 (double)(v[i].deadline - c.margin_ns) / 1e6);
				/* a command that carries more ends before its first's deadline
				 * less e */
				assert_true(done_at[i] <= v[i].deadline - c.urgent_ns);
			}
			avfs_sched_counters(&s, &k);
			if (!satf)
				assert_int_equal(k.satf_picks, 0);
			picks += (unsigned)k.satf_picks;
			avfs_sched_destroy(&s);
		}
		x = x * 2862933555777941757ull + 3037000493ull;
	}
	assert_true(picks > 100);	/* it did reorder */
}

static double decision_cost(unsigned n)
{
	struct avfs_sched_conf c;
	struct avfs_sched s;
	struct avfs_io *v = calloc(n + 2000, sizeof(*v));
	struct avfs_sched_cmd cmd;
	struct timespec a, b;
	uint64_t x = 42;
	int64_t t = 0;

	avfs_sched_conf_default(&c);
	s = mk(&c);
	for (unsigned i = 0; i < n + 2000; i++) {
		x = x * 6364136223846793005ull + 1;
		v[i] = rt((x >> 24) % (200 * GB) / 4096 * 4096, 65536,
			  100000 * MS + (int64_t)((x >> 40) % 1000) * MS);
	}
	for (unsigned i = 0; i < n; i++)
		avfs_sched_submit(&s, &v[i], 0);
	/* the first decision moves the held set into a batch (each request once): not timed */
	avfs_sched_next(&s, t, &cmd);
	if (cmd.kind == AVFS_SCHED_DISPATCH)
		avfs_sched_done(&s, &cmd, t, (int)cmd.len);
	/* each step: one arrival, one decision, one completion, with n requests held */
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned i = n; i < n + 2000; i++) {
		avfs_sched_submit(&s, &v[i], t);
		avfs_sched_next(&s, t, &cmd);
		if (cmd.kind == AVFS_SCHED_WAIT)
			t = cmd.at;
		avfs_sched_next(&s, t, &cmd);
		if (cmd.kind == AVFS_SCHED_DISPATCH)
			avfs_sched_done(&s, &cmd, t, (int)cmd.len);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	avfs_sched_destroy(&s);
	free(v);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 2000 / 1000;
}

/* Decisions stay cheap with thousands of held requests and grow like log n, not n: the cost
 * per step at 16,000 pending is far below 16x the cost at 1,000 (printed). Each the least of
 * five runs, taken in turn: a run that the host preempted (CI's shared cores) only gets
 * slower, so the least is the decision's own cost. */
static void test_mixer_decision_is_log_n(void **state)
{
	double small = 0, big = 0;

	(void)state;
	decision_cost(1000);	/* warm up */
	for (int i = 0; i < 5; i++) {
		double s = decision_cost(1000), b = decision_cost(16000);

		small = !i || s < small ? s : small;
		big = !i || b < big ? b : big;
	}
	printf("mixer step (arrival + decision + completion): %.2f us at 1,000 pending, "
	       "%.2f us at 16,000\n", small, big);
	assert_true(big < small * 4);
}

static void run(const char *policy, const char *workload, double dur, uint64_t seed,
		struct avfs_simrun_result *r)
{
	struct avfs_simrun_opts o;
	char why[256];

	avfs_simrun_defaults(&o);
	o.policy = policy;
	sscanf(workload, "%ur%uw", &o.nread, &o.nwrite);
	o.duration_s = dur;
	o.seed = seed;
	if (avfs_simrun(&o, r, why, sizeof(why)))
		fail_msg("simrun: %s", why);
}

/* With jitter off and a workload the model says fits (4r2w at about 40% utilization), no RT
 * request misses, for many seeds. */
static void test_mixer_no_miss_when_it_fits(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct avfs_simrun_result r;

		run("tm", "4r2w", 120, seed, &r);
		assert_true(r.rt_requests > 3000);
		assert_int_equal(r.deadline_misses, 0);
		assert_true(r.margin_min_ms > 0);
	}
}

/* The same seed gives the same run (every figure but the wall clock); another seed differs. */
static void test_mixer_deterministic(void **state)
{
	struct avfs_simrun_result a, b, c;

	(void)state;
	run("tm", "6r2w", 60, 7, &a);
	run("tm", "6r2w", 60, 7, &b);
	run("tm", "6r2w", 60, 8, &c);
	assert_int_equal(a.rt_requests, b.rt_requests);
	assert_true(a.disk_utilization == b.disk_utilization);
	assert_true(a.margin_min_ms == b.margin_min_ms && a.margin_p50_ms == b.margin_p50_ms);
	assert_true(a.seek_frac_below_5 == b.seek_frac_below_5);
	assert_true(a.disk_utilization != c.disk_utilization || a.margin_p50_ms != c.margin_p50_ms);
}

/* The mixer does less work than the mq-deadline-like baseline on the same run (8r0w, 5 min):
 * lower utilization and far shorter seeks. */
static void test_mixer_beats_cscan(void **state)
{
	struct avfs_simrun_result tm, cs;

	(void)state;
	run("tm", "8r0w", 300, 1, &tm);
	run("cscan", "8r0w", 300, 1, &cs);
	printf("8r0w, 300 s: tm utilization %.1f %%, %.1f %% seeks < 5 GB; cscan %.1f %%, %.1f %%\n",
	       tm.disk_utilization * 100, tm.seek_frac_below_5 * 100, cs.disk_utilization * 100,
	       cs.seek_frac_below_5 * 100);
	assert_int_equal(tm.deadline_misses, 0);
	assert_true(tm.disk_utilization < cs.disk_utilization);
	assert_true(tm.seek_frac_below_5 > cs.seek_frac_below_5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixer_be_cscan_and_ageing),
		cmocka_unit_test(test_mixer_be_flows_in_turn),
		cmocka_unit_test(test_mixer_be_floor_under_overload),
		cmocka_unit_test(test_mixer_be_under_hold),
		cmocka_unit_test(test_mixer_beats_cscan),
		cmocka_unit_test(test_mixer_chunking),
		cmocka_unit_test(test_mixer_coalesce),
		cmocka_unit_test(test_mixer_coalesce_bounds),
		cmocka_unit_test(test_mixer_decision_is_log_n),
		cmocka_unit_test(test_mixer_deterministic),
		cmocka_unit_test(test_mixer_etime_never_issued),
		cmocka_unit_test(test_mixer_hold_time),
		cmocka_unit_test(test_mixer_holds_until_h),
		cmocka_unit_test(test_mixer_jit_and_split),
		cmocka_unit_test(test_mixer_pred_rot_mean),
		cmocka_unit_test(test_mixer_no_miss_when_it_fits),
		cmocka_unit_test(test_mixer_non_rotational),
		cmocka_unit_test(test_mixer_reduced_window_order),
		cmocka_unit_test(test_mixer_satf_keeps_margins),
		cmocka_unit_test(test_mixer_satf_nearest),
		cmocka_unit_test(test_mixer_service_time),
		cmocka_unit_test(test_mixer_settings),
		cmocka_unit_test(test_mixer_sweep),
		cmocka_unit_test(test_mixer_sweep_join),
		cmocka_unit_test(test_mixer_sweep_turn_runs),
		cmocka_unit_test(test_mixer_overload_goes_in_order),
		cmocka_unit_test(test_mixer_recover),
		cmocka_unit_test(test_mixer_reduced_window_carries),
		cmocka_unit_test(test_mixer_prefetch_carry),
		cmocka_unit_test(test_mixer_reduced_window_gives_way),
		cmocka_unit_test(test_mixer_coalesce_ahead),
		cmocka_unit_test(test_mixer_windows),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

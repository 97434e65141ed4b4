/*
 * test_readahead.c — fuse/readahead.c: kept ranges answer reads inside them; reads that arrive
 * for a range still being read wait on it and get their bytes (or the error) when it lands;
 * a change to the file while a range is read answers those waiters but keeps nothing for
 * later reads; busy ranges are never evicted; what counts as sequential.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "iobuf.h"
#include "readahead.h"

#define MIB (1u << 20)

struct answer {
	struct avfs_ra_wait w;	/* first */
	int calls, err;
	size_t n;
	uint8_t first;		/* data[0] */
};

static void answer(struct avfs_ra_wait *w, const uint8_t *data, size_t n, int err)
{
	struct answer *a = (struct answer *)w;

	a->calls++;
	a->err = err;
	a->n = n;
	a->first = n ? data[0] : 0;
}

/* a slot's buffer with byte i = i % 251 */
static uint8_t *filled(struct avfs_iobuf_pool *p, size_t len)
{
	uint8_t *b = avfs_iobuf_get(p, len);

	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i % 251);
	return b;
}

static void test_readahead_waiters_then_hits(void **state)
{
	struct avfs_iobuf_pool p = { 0 };
	struct avfs_ra ra = { .bufs = &p };
	struct answer a = { .w = { .off = 0, .len = MIB } }, b = { .w = { .off = MIB, .len = MIB } };
	struct answer past = { .w = { .off = 2 * MIB - 10, .len = 10 } };
	struct avfs_ra_slot *s, *h;

	(void)state;
	assert_true(avfs_ra_sequential(&ra, 7, 0));
	assert_false(avfs_ra_sequential(&ra, 7, MIB));
	s = avfs_ra_start(&ra, 7, 0, 2 * MIB, filled(&p, 2 * MIB), 2 * MIB, false);
	assert_non_null(s);
	assert_true(avfs_ra_has(&ra, 7, 0));
	assert_true(avfs_ra_sequential(&ra, 7, 2 * MIB));	/* continues the one under way */
	assert_null(avfs_ra_hit(&ra, 7, 0, 4096));		/* not there yet */
	assert_true(avfs_ra_wait(&ra, 7, 0, MIB, &a.w));
	assert_true(avfs_ra_wait(&ra, 7, MIB, MIB, &b.w));
	assert_true(avfs_ra_wait(&ra, 7, past.w.off, past.w.len, &past.w));
	assert_false(avfs_ra_wait(&ra, 8, 0, MIB, &a.w));	/* another file */
	/* the file turned out shorter: 2 MiB - 4 bytes read */
	avfs_ra_done(&ra, s, 2 * MIB - 4, answer);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.n, MIB);
	assert_int_equal(a.first, 0);
	assert_int_equal(b.n, MIB - 4);	/* up to what was read */
	assert_int_equal(b.first, MIB % 251);
	assert_int_equal(past.n, 6);
	assert_int_equal(past.err, 0);
	h = avfs_ra_hit(&ra, 7, 4096, 8192);
	assert_non_null(h);
	assert_int_equal(h->buf[4096], 4096 % 251);
	assert_null(avfs_ra_hit(&ra, 7, 2 * MIB - 8, 8));	/* past what was read */
	avfs_ra_invalidate(&ra, 7);
	assert_null(avfs_ra_hit(&ra, 7, 4096, 8192));
	assert_false(avfs_ra_has(&ra, 7, 0));
	avfs_ra_drain(&ra);
	avfs_iobuf_drain(&p);
}

static void test_readahead_change_while_read(void **state)
{
	struct avfs_iobuf_pool p = { 0 };
	struct avfs_ra ra = { .bufs = &p };
	struct answer before = { .w = { .off = 0, .len = 4096 } }, after = before;
	struct avfs_ra_slot *s;

	(void)state;
	s = avfs_ra_start(&ra, 3, 0, MIB, filled(&p, MIB), MIB, false);
	assert_true(avfs_ra_wait(&ra, 3, 0, 4096, &before.w));
	avfs_ra_invalidate(&ra, 3);	/* a write to the file while the range is read */
	assert_false(avfs_ra_wait(&ra, 3, 0, 4096, &after.w));	/* a later read goes alone */
	assert_false(avfs_ra_has(&ra, 3, 0));
	assert_false(avfs_ra_sequential(&ra, 3, MIB));
	avfs_ra_done(&ra, s, MIB, answer);
	assert_int_equal(before.calls, 1);	/* came before the write: answered */
	assert_int_equal(before.n, 4096);
	assert_null(avfs_ra_hit(&ra, 3, 0, 4096));	/* but nothing kept */
	avfs_iobuf_drain(&p);
}

static void test_readahead_error_answers_all(void **state)
{
	struct avfs_iobuf_pool p = { 0 };
	struct avfs_ra ra = { .bufs = &p };
	struct answer a = { .w = { .off = 8192, .len = 4096 } };
	struct avfs_ra_slot *s;

	(void)state;
	s = avfs_ra_start(&ra, 5, 0, MIB, filled(&p, MIB), MIB, false);
	assert_true(avfs_ra_wait(&ra, 5, 8192, 4096, &a.w));
	avfs_ra_done(&ra, s, -EIO, answer);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.err, -EIO);
	assert_null(avfs_ra_hit(&ra, 5, 8192, 4096));
	assert_false(avfs_ra_has(&ra, 5, 0));
	avfs_iobuf_drain(&p);
}

static void test_readahead_busy_never_evicted(void **state)
{
	struct avfs_iobuf_pool p = { 0 };
	struct avfs_ra ra = { .bufs = &p };
	struct avfs_ra_slot *s[AVFS_RA_BE_SLOTS];
	uint8_t *extra;

	(void)state;
	for (int i = 0; i < AVFS_RA_BE_SLOTS; i++) {
		s[i] = avfs_ra_start(&ra, 1, (uint64_t)i * MIB, MIB, filled(&p, MIB), MIB, false);
		assert_non_null(s[i]);
	}
	extra = filled(&p, MIB);
	assert_null(avfs_ra_start(&ra, 2, 0, MIB, extra, MIB, false));	/* all busy: the caller's */
	avfs_ra_done(&ra, s[3], MIB, answer);	/* the only idle one, so it goes */
	assert_ptr_equal(avfs_ra_start(&ra, 2, 0, MIB, extra, MIB, false), s[3]);
	assert_null(avfs_ra_hit(&ra, 1, 3 * MIB, 1));
	for (int i = 0; i < AVFS_RA_BE_SLOTS; i++)
		if (i != 3)
			avfs_ra_done(&ra, s[i], -EIO, answer);
	avfs_ra_invalidate(&ra, 2);	/* busy: stale, freed when it lands */
	avfs_ra_done(&ra, s[3], MIB, answer);
	for (int i = 0; i < AVFS_RA_SLOTS; i++)
		assert_null(ra.s[i].buf);
	avfs_iobuf_drain(&p);
}

/* A reserved reader's playout windows (pinned) stay while a greedy reader's ranges come and go:
 * those take at most AVFS_RA_BE_SLOTS slots and evict only each other; a pinned one is evicted
 * only by another pinned one. */
static void test_readahead_pinned_kept(void **state)
{
	struct avfs_iobuf_pool p = { 0 };
	struct avfs_ra ra = { .bufs = &p };
	struct avfs_ra_slot *pin[2], *s;
	uint8_t *extra;
	int pinned = 0;

	(void)state;
	for (int i = 0; i < 2; i++) {
		pin[i] = avfs_ra_start(&ra, 9, (uint64_t)i * MIB, MIB, filled(&p, MIB), MIB, true);
		assert_non_null(pin[i]);
		avfs_ra_done(&ra, pin[i], MIB, answer);
	}
	for (int i = 0; i < 3 * AVFS_RA_SLOTS; i++) {	/* the greedy reader: windows in a row */
		s = avfs_ra_start(&ra, 1, (uint64_t)i * MIB, MIB, filled(&p, MIB), MIB, false);
		assert_non_null(s);
		avfs_ra_done(&ra, s, MIB, answer);
	}
	assert_non_null(avfs_ra_hit(&ra, 9, 0, MIB));
	assert_non_null(avfs_ra_hit(&ra, 9, MIB, MIB));
	for (int i = 0; i < AVFS_RA_SLOTS; i++)
		pinned += ra.s[i].buf && ra.s[i].pinned;
	assert_int_equal(pinned, 2);
	/* the greedy reader kept at most its share */
	for (int i = 0, plain = 0; i <= AVFS_RA_SLOTS; i++) {
		if (i == AVFS_RA_SLOTS) {
			assert_int_equal(plain, AVFS_RA_BE_SLOTS);
			break;
		}
		plain += ra.s[i].buf && !ra.s[i].pinned;
	}
	/* every slot pinned or busy: a range not pinned gets none, a pinned one the oldest */
	for (int i = 0; i < AVFS_RA_SLOTS; i++)
		if (ra.s[i].buf && !ra.s[i].pinned)
			ra.s[i].busy = true;
	extra = filled(&p, MIB);
	assert_null(avfs_ra_start(&ra, 1, 99 * MIB, MIB, extra, MIB, false));
	avfs_iobuf_put(&p, extra, MIB);
	s = avfs_ra_start(&ra, 9, 2 * MIB, MIB, filled(&p, MIB), MIB, true);
	assert_non_null(s);
	for (int i = 0; i < AVFS_RA_SLOTS; i++)
		ra.s[i].busy = false;
	avfs_ra_unpin(&ra, 9);	/* closed: its windows go first now */
	pinned = 0;
	for (int i = 0; i < AVFS_RA_SLOTS; i++)
		pinned += ra.s[i].buf && ra.s[i].pinned;
	assert_int_equal(pinned, 0);
	avfs_ra_drain(&ra);
	avfs_iobuf_drain(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readahead_waiters_then_hits),
		cmocka_unit_test(test_readahead_pinned_kept),
		cmocka_unit_test(test_readahead_change_while_read),
		cmocka_unit_test(test_readahead_error_answers_all),
		cmocka_unit_test(test_readahead_busy_never_evicted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

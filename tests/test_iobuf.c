/*
 * test_iobuf.c — fuse/iobuf.c: large buffers lie inside one huge page and are reused, small
 * ones are plain; and (root, THP not "never") a 1 MiB + 4 KiB write buffer is physically
 * contiguous, so that the block layer does not cut a 1 MiB FUSE write at max_segments (the
 * parity gap: every picture's second 512 KiB command on hddemu's loop device cost a rotation).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iobuf.h"

#define PAGE 4096u

static void test_iobuf_large_in_one_huge_page(void **state)
{
	static const size_t lens[] = { AVFS_IOBUF_MIN, 1u << 20, (1u << 20) + PAGE, AVFS_IOBUF_HUGE };
	struct avfs_iobuf_pool p = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t *b = avfs_iobuf_get(&p, lens[i]);

		assert_non_null(b);
		assert_int_equal((uintptr_t)b % AVFS_IOBUF_HUGE, 0);
		memset(b, 0xa5, lens[i]);	/* all of it is ours */
		avfs_iobuf_put(&p, b, lens[i]);
	}
	avfs_iobuf_drain(&p);
	assert_int_equal(p.nfree, 0);
}

static void test_iobuf_reused_and_bounded(void **state)
{
	struct avfs_iobuf_pool p = { 0 };
	void *b[AVFS_IOBUF_KEEP + 2], *again;

	(void)state;
	for (unsigned i = 0; i < AVFS_IOBUF_KEEP + 2; i++)
		assert_non_null(b[i] = avfs_iobuf_get(&p, 1u << 20));
	for (unsigned i = 0; i < AVFS_IOBUF_KEEP + 2; i++)
		avfs_iobuf_put(&p, b[i], 1u << 20);
	assert_int_equal(p.nfree, AVFS_IOBUF_KEEP);	/* the rest freed */
	again = avfs_iobuf_get(&p, 300000);
	assert_ptr_equal(again, b[AVFS_IOBUF_KEEP - 1]);	/* the last kept, reused */
	avfs_iobuf_put(&p, again, 300000);
	avfs_iobuf_put(&p, NULL, 1u << 20);
	assert_int_equal(p.nfree, AVFS_IOBUF_KEEP);
	avfs_iobuf_drain(&p);
}

static void test_iobuf_small_and_huge_plain(void **state)
{
	static const size_t lens[] = { 0, 1, PAGE, AVFS_IOBUF_MIN - PAGE, AVFS_IOBUF_HUGE + PAGE };
	struct avfs_iobuf_pool p = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t *b = avfs_iobuf_get(&p, lens[i]);

		assert_non_null(b);
		assert_int_equal((uintptr_t)b % PAGE, 0);
		memset(b, 0x5a, lens[i] ? lens[i] : PAGE);
		avfs_iobuf_put(&p, b, lens[i]);
		assert_int_equal(p.nfree, 0);	/* not pooled: freed */
	}
}

/* The physical frame of the page at v (/proc/self/pagemap: root only); 0 when not known. */
static uint64_t pfn_of(int fd, const void *v)
{
	uint64_t e;

	if (pread(fd, &e, sizeof(e), (off_t)((uintptr_t)v / PAGE * sizeof(e))) != sizeof(e))
		return 0;
	return (e >> 63) & 1 ? e & ((1ull << 55) - 1) : 0;
}

static void test_iobuf_physically_contiguous(void **state)
{
	const size_t len = (1u << 20) + PAGE;	/* a 1 MiB FUSE write one page in */
	struct avfs_iobuf_pool p = { 0 };
	char thp[128] = "";
	uint8_t *b;
	FILE *f;
	int fd;

	(void)state;
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (!fgets(thp, sizeof(thp), f))
			thp[0] = 0;
		fclose(f);
	}
	if (!thp[0] || strstr(thp, "[never]")) {
		print_message("skipped: no transparent huge pages here\n");
		skip();
	}
	fd = open("/proc/self/pagemap", O_RDONLY);
	assert_true(fd >= 0);
	b = avfs_iobuf_get(&p, len);
	assert_non_null(b);
	memset(b, 1, len);	/* fault it in */
	if (!pfn_of(fd, b)) {
		close(fd);
		avfs_iobuf_put(&p, b, len);
		avfs_iobuf_drain(&p);
		print_message("skipped: page frame numbers need root\n");
		skip();
	}
	for (size_t o = PAGE; o < len; o += PAGE)
		assert_int_equal(pfn_of(fd, b + o), pfn_of(fd, b) + o / PAGE);
	close(fd);
	avfs_iobuf_put(&p, b, len);
	avfs_iobuf_drain(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iobuf_large_in_one_huge_page),
		cmocka_unit_test(test_iobuf_reused_and_bounded),
		cmocka_unit_test(test_iobuf_small_and_huge_plain),
		cmocka_unit_test(test_iobuf_physically_contiguous),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

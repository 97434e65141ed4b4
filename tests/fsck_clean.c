/*
 * fsck_clean.c — the check every file system test ends with: fsck (read-only) finds no
 * error. Findings are printed, so that a failure says what was wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "fsck.h"
#include "fsck_clean.h"

void assert_fsck_clean(struct avfs_fs *fs)
{
	struct avfs_fsck_report rep;

	assert_int_equal(avfs_fsck_check(fs, 0, &rep), 0);
	for (size_t i = 0; i < rep.nfindings; i++)
		fprintf(stderr, "fsck: %s\n", rep.findings[i]);
	assert_int_equal(rep.errors, 0);
	avfs_fsck_report_free(&rep);
}

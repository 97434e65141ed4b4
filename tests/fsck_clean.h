/* fsck_clean.h — for the C tests of the file system: fsck finds nothing wrong. */
#ifndef AVFS_FSCK_CLEAN_H
#define AVFS_FSCK_CLEAN_H

struct avfs_fs;

/* Check fs read-only; print every finding to stderr, and fail the test on any error. */
void assert_fsck_clean(struct avfs_fs *fs);

#endif

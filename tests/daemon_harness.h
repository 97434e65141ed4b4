/*
 * daemon_harness.h — an avfsd under test, for the C tests that drive it through a real FUSE mount
 * (test_daemon_avio, test_daemon_integrity): a scratch directory with an image, a mount point, a
 * socket and the daemon's log; starting, unmounting, killing and waiting for the daemon; running
 * the tools with a timeout; fsck of the image; the checks and their counts.
 */
#ifndef AVFS_DAEMON_HARNESS_H
#define AVFS_DAEMON_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* From the environment (AVFSD, MKFS, FSCK: the built binaries). */
extern const char *avfsd_bin, *mkfs_bin, *fsck_bin;
/* The scratch directory and what is in it: img (the image), mnt, sock, log_path. */
extern char work_dir[64], img[96], mnt[96], sock[96], log_path[96];
/* The running avfsd, or -1. */
extern pid_t daemon_pid;
/* Start avfsd with --allow-other (for tests that act as another uid). */
extern bool daemon_allow_other;
/* Start avfsd with --config this file (NULL: none). */
extern const char *daemon_config;

/* Read the environment, check for root and /dev/fuse, make /var/tmp/avfs-NAME-XXXXXX with the
 * paths above and the mount point, ignore SIGPIPE. 0 ready, 77 skip (said why on stdout), 1
 * failure (said why). */
int harness_setup(const char *name);
/* mkfs.avfs --size 2G --block-size 1M on img: true on success. */
bool harness_mkfs(void);

/* "ok text" or "FAIL text" on stdout, flushed, and counted. The counts are in shared memory
 * (harness_setup maps them), so that checks made in a test's child processes count too. */
void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "  text" on stdout, flushed. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The path of name on the mount into p[len]. */
void path_of(char *p, size_t len, const char *name);
/* Run argv (PATH searched) with output to the log; its exit status, or -1 (signal, timeout:
 * then killed). */
int run(int timeout_s, const char *const argv[]);
bool is_mounted(void);
/* The daemon's exit status (128 + signal) once it is gone within timeout_s, else -1. */
int daemon_wait(int timeout_s);
/* Still running? A death is noted once. */
bool daemon_alive(void);
/* Start avfsd on img at mnt and wait (10 s) for the mount. */
bool daemon_start(void);
/* fusermount3 -u; the daemon must exit 0. */
bool daemon_stop(void);
/* kill -9, then detach the dead connection's mount. */
bool daemon_kill9(void);
/* fsck.avfs -n on img: clean? */
bool fsck_clean(void);
/* Stop whatever runs, unmount, remove the directory (kept with AVFS_KEEP set). */
void cleanup(void);
/* The daemon's log on stdout. */
void dump_log(void);
/* The end of a test: the daemon's log if a check failed, cleanup(), "N passed, M failed".
 * The exit code: 0, or 1 when a check failed. */
int harness_finish(void);

#endif

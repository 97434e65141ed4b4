/* test_uring.c — the io_uring backend: block-device geometry, open errors, fixed buffers, poll fd, short transfers, injected and vanishing device errors, depth limit. */
#include "disk.h"

#include "spawn_capture.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>	/* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define MIB (1ull << 20)
#define FAULT_SIZE (16 * MIB)
#define FAULT_BAD_OFF (1 * MIB)
#define FAULT_BAD_LEN (64 * 1024)
#define MOUNT_TIMEOUT_MS 10000

/* Everything a test may leave behind; teardown undoes whatever is set, in reverse. */
struct fixture {
	char dir[PATH_MAX];	/* private temp directory */
	char image[PATH_MAX + 16];	/* image file, "" if none */
	char loopdev[64];	/* attached loop device, "" if none */
	char mnt[PATH_MAX + 16];	/* faultfs mount dir, "" if none */
	pid_t fuse_pid;		/* faultfs daemon, 0 if none */
	struct avfs_disk *d;
	void *buf[2];
	struct iovec iov[2];	/* registered buffers: must outlive the registration */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/avfs-uring-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

/* Wait up to ms for pid to exit. Its wait status, or -1 if it is still running. */
static int wait_exit(pid_t pid, int ms)
{
	int status;

	for (int i = 0; i < ms; i += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10 * 1000);
	}
	return -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char out[256];

	avfs_disk_close(f->d);	/* waits for in-flight I/O, so buffers can go after it */
	free(f->buf[0]);
	free(f->buf[1]);
	if (f->mnt[0]) {
		umount2(f->mnt, MNT_DETACH);	/* umount -l: works on a dead daemon too */
		if (f->fuse_pid > 0 && wait_exit(f->fuse_pid, 5000) < 0) {
			kill(f->fuse_pid, SIGKILL);
			waitpid(f->fuse_pid, NULL, 0);
		}
		rmdir(f->mnt);
	}
	if (f->loopdev[0])
		spawn_capture((char *const[]){ "losetup", "-d", f->loopdev, NULL }, out, sizeof(out));
	if (f->image[0])
		unlink(f->image);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A sparse image file of size bytes in the fixture's directory. */
static void make_image(struct fixture *f, uint64_t size)
{
	int fd;

	snprintf(f->image, sizeof(f->image), "%s/image", f->dir);
	fd = open(f->image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static void fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 9));
}

static int64_t io(struct avfs_disk *d, enum avfs_disk_op op, uint64_t off, uint32_t len,
		  void *buf, int buf_index, uint32_t flags)
{
	struct avfs_disk_req req = {
		.op = op, .flags = flags, .lba = off / d->info.lbs, .len = len,
		.buf = buf, .buf_index = buf_index, .cookie = off,
	};

	return avfs_disk_io_sync(d, &req);
}

/* Submit one request and return its completion, checking that submit itself accepted it. */
static int64_t submit_and_complete(struct avfs_disk *d, enum avfs_disk_op op, uint64_t off,
				   uint32_t len, void *buf)
{
	struct avfs_disk_req req = {
		.op = op, .lba = off / d->info.lbs, .len = len, .buf = buf,
		.buf_index = -1, .cookie = 42,
	};
	struct avfs_disk_cqe cqe;
	int n;

	assert_int_equal(avfs_disk_submit(d, &req), 0);
	while ((n = avfs_disk_reap(d, &cqe, 1)) == 0)
		assert_int_equal(avfs_disk_wait(d), 0);
	assert_int_equal(n, 1);
	assert_int_equal(cqe.cookie, 42);
	return cqe.res;
}

/* Proves: a block device's geometry comes from its ioctls (size, logical block size),
 * it is flagged as a block device, and data written through it reads back. */
static void test_uring_blockdev_geometry(void **state)
{
	struct fixture *f = *state;
	char out[512];
	int st, fd, ssz = 0;
	const uint32_t len = 256 * 1024;

	if (access("/dev/loop-control", F_OK)) {
		fprintf(stderr, "skip: no /dev/loop-control, loop devices unavailable\n");
		skip();
	}
	make_image(f, 64 * MIB);
	st = spawn_capture((char *const[]){ "losetup", "--find", "--show", "--direct-io=on",
				  f->image, NULL }, out, sizeof(out));
	if (st != 0 && (st == 127 || strcasestr(out, "no such device"))) {
		fprintf(stderr, "skip: losetup unavailable: %s\n", out);
		skip();
	}
	assert_int_equal(st, 0);
	out[strcspn(out, "\n")] = '\0';
	assert_true(strncmp(out, "/dev/loop", 9) == 0);
	assert_true(strlen(out) < sizeof(f->loopdev));
	memcpy(f->loopdev, out, strlen(out) + 1);

	assert_int_equal(avfs_uring_open(f->loopdev, 0, 8, &f->d), 0);
	fd = open(f->loopdev, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ioctl(fd, BLKSSZGET, &ssz), 0);
	close(fd);
	assert_int_equal(f->d->info.size, 64 * MIB);
	assert_int_equal(f->d->info.lbs, (uint32_t)ssz);
	assert_true(f->d->info.pbs >= f->d->info.lbs);
	assert_true(f->d->info.mem_align > 0);
	assert_true(f->d->info.is_blockdev);
	assert_false(f->d->info.has_seek);
	assert_string_equal(f->d->info.model, "uring");

	f->buf[0] = avfs_disk_alloc_buf(f->d, len);
	f->buf[1] = avfs_disk_alloc_buf(f->d, len);
	assert_non_null(f->buf[0]);
	assert_non_null(f->buf[1]);
	fill(f->buf[0], len, 1);
	assert_int_equal(io(f->d, AVFS_DISK_WRITE, 3 * MIB, len, f->buf[0], -1, 0), len);
	/* FUA write and flush go through RWF_DSYNC and fsync: both must complete cleanly */
	assert_int_equal(io(f->d, AVFS_DISK_WRITE, 63 * MIB, len, f->buf[0], -1, AVFS_DISK_FUA),
			 len);
	assert_int_equal(io(f->d, AVFS_DISK_FLUSH, 0, 0, NULL, -1, 0), 0);
	assert_int_equal(io(f->d, AVFS_DISK_READ, 3 * MIB, len, f->buf[1], -1, 0), len);
	assert_memory_equal(f->buf[0], f->buf[1], len);
	memset(f->buf[1], 0, len);
	assert_int_equal(io(f->d, AVFS_DISK_READ, 63 * MIB, len, f->buf[1], -1, 0), len);
	assert_memory_equal(f->buf[0], f->buf[1], len);
	/* the last block is addressable, one past it is not */
	assert_int_equal(io(f->d, AVFS_DISK_READ, 64 * MIB - ssz, (uint32_t)ssz, f->buf[1], -1, 0),
			 ssz);
	assert_int_equal(io(f->d, AVFS_DISK_READ, 64 * MIB, (uint32_t)ssz, f->buf[1], -1, 0),
			 -EINVAL);
}

/* Proves: files that are not disks are refused with a precise errno. A directory is
 * -EINVAL (not -EISDIR) in both open modes, like every other non-disk file. */
static void test_uring_open_errors(void **state)
{
	struct fixture *f = *state;
	struct avfs_disk *d = NULL;
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/does-not-exist", f->dir);
	assert_int_equal(avfs_uring_open(path, 0, 0, &d), -ENOENT);
	assert_int_equal(avfs_uring_open(f->dir, 0, 0, &d), -EINVAL);
	assert_int_equal(avfs_uring_open(f->dir, AVFS_URING_RDONLY, 0, &d), -EINVAL);
	make_image(f, 0);
	assert_int_equal(avfs_uring_open(f->image, 0, 0, &d), -EINVAL);
	assert_int_equal(avfs_uring_open("/dev/null", 0, 0, &d), -EINVAL);
	assert_int_equal(avfs_uring_open("/dev/null", AVFS_URING_RDONLY, 0, &d), -EINVAL);
	assert_null(d);
}

/* Proves: fixed-buffer I/O moves data (write from buffer 0, read into buffer 1), and a
 * request whose buffer lies outside the named registered buffer is refused at submit. */
static void test_uring_registered_buffers(void **state)
{
	struct fixture *f = *state;
	const uint32_t len = 64 * 1024;
	struct avfs_disk_req req = { .op = AVFS_DISK_READ, .len = len, .buf_index = 1 };

	make_image(f, 4 * MIB);
	assert_int_equal(avfs_uring_open(f->image, 0, 0, &f->d), 0);
	assert_false(f->d->info.is_blockdev);
	assert_int_equal(f->d->info.size, 4 * MIB);
	for (int i = 0; i < 2; i++) {
		f->buf[i] = avfs_disk_alloc_buf(f->d, len);
		assert_non_null(f->buf[i]);
		f->iov[i] = (struct iovec){ .iov_base = f->buf[i], .iov_len = len };
	}
	assert_int_equal(avfs_disk_register_buffers(f->d, f->iov, 2), 0);
	/* registering again replaces the table rather than failing with -EBUSY */
	assert_int_equal(avfs_disk_register_buffers(f->d, f->iov, 2), 0);

	fill(f->buf[0], len, 2);
	memset(f->buf[1], 0, len);
	assert_int_equal(io(f->d, AVFS_DISK_WRITE, 1 * MIB, len, f->buf[0], 0, 0), len);
	assert_int_equal(io(f->d, AVFS_DISK_READ, 1 * MIB, len, f->buf[1], 1, 0), len);
	assert_memory_equal(f->buf[0], f->buf[1], len);
	/* a part of a registered buffer is fine */
	assert_int_equal(io(f->d, AVFS_DISK_READ, 1 * MIB, 4096, (char *)f->buf[1] + 8192, 1, 0),
			 4096);

	req.buf = f->buf[0];	/* registered, but as index 0, not 1 */
	assert_int_equal(avfs_disk_submit(f->d, &req), -EINVAL);
	req.buf = (char *)f->buf[1] + 4096;	/* starts inside, runs past the end */
	assert_int_equal(avfs_disk_submit(f->d, &req), -EINVAL);
	req.buf = f->buf[1];
	req.buf_index = 2;	/* no such buffer */
	assert_int_equal(avfs_disk_submit(f->d, &req), -EINVAL);
	assert_int_equal(avfs_disk_inflight(f->d), 0);
}

/* Proves: poll_fd is not readable while idle (nor after a refused write to a read-only
 * disk), becomes readable once a submitted request completes, and reap then returns it. */
static void test_uring_poll_fd(void **state)
{
	struct fixture *f = *state;
	const uint32_t len = 4096;
	struct avfs_disk_req req = {
		.op = AVFS_DISK_READ, .lba = 8, .len = len, .buf_index = -1, .cookie = 7,
	};
	struct avfs_disk_cqe cqe;
	struct pollfd pfd;

	make_image(f, 1 * MIB);
	assert_int_equal(avfs_uring_open(f->image, AVFS_URING_RDONLY, 0, &f->d), 0);
	f->buf[0] = avfs_disk_alloc_buf(f->d, len);
	assert_non_null(f->buf[0]);
	pfd = (struct pollfd){ .fd = avfs_disk_poll_fd(f->d), .events = POLLIN };
	assert_true(pfd.fd >= 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);

	req.buf = f->buf[0];
	req.op = AVFS_DISK_WRITE;	/* opened read-only: refused up front, nothing queued */
	assert_int_equal(avfs_disk_submit(f->d, &req), -EBADF);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	req.op = AVFS_DISK_READ;
	assert_int_equal(avfs_disk_submit(f->d, &req), 0);
	assert_int_equal(avfs_disk_inflight(f->d), 1);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_true(pfd.revents & POLLIN);
	assert_int_equal(avfs_disk_reap(f->d, &cqe, 1), 1);
	assert_int_equal(cqe.cookie, 7);
	assert_int_equal(cqe.res, len);
	assert_int_equal(avfs_disk_inflight(f->d), 0);
	assert_int_equal(avfs_disk_wait(f->d), -EAGAIN);
}

/* Proves: a transfer that comes back short (the image shrank under an open disk, so the
 * read hits EOF) is reported as -EIO, never as a partial success. */
static void test_uring_short_transfer(void **state)
{
	struct fixture *f = *state;
	const uint32_t len = 8192;

	make_image(f, 1 * MIB);
	assert_int_equal(avfs_uring_open(f->image, 0, 0, &f->d), 0);
	f->buf[0] = avfs_disk_alloc_buf(f->d, len);
	assert_non_null(f->buf[0]);
	assert_int_equal(truncate(f->image, 1 * MIB - 4096), 0);
	/* half of it before the new EOF: 4096 bytes come back, not 8192 */
	assert_int_equal(io(f->d, AVFS_DISK_READ, 1 * MIB - len, len, f->buf[0], -1, 0), -EIO);
	/* wholly past EOF: the kernel returns 0 bytes */
	assert_int_equal(io(f->d, AVFS_DISK_READ, 1 * MIB - 4096, 4096, f->buf[0], -1, 0), -EIO);
	assert_int_equal(io(f->d, AVFS_DISK_READ, 0, len, f->buf[0], -1, 0), len);
}

/* Start faultfs on f->dir/mnt (extra arguments end with NULL) and wait until its /disk
 * shows up. Skips the test when FUSE or the binary is missing. */
static void start_faultfs(struct fixture *f, ...)
{
	const char *bin = getenv("FAULTFS");
	char *argv[16], disk[PATH_MAX + 32];
	struct stat st;
	va_list ap;
	int argc = 0, status;

	if (access("/dev/fuse", R_OK | W_OK)) {
		fprintf(stderr, "skip: /dev/fuse unavailable: %s\n", strerror(errno));
		skip();
	}
	if (!bin || access(bin, X_OK)) {
		fprintf(stderr, "skip: FAULTFS not set to the faultfs binary\n");
		skip();
	}
	snprintf(f->mnt, sizeof(f->mnt), "%s/mnt", f->dir);
	assert_int_equal(mkdir(f->mnt, 0700), 0);
	argv[argc++] = (char *)bin;
	va_start(ap, f);
	for (char *a; (a = va_arg(ap, char *)) && argc < 14;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc++] = f->mnt;
	argv[argc] = NULL;
	assert_int_equal(posix_spawn(&f->fuse_pid, bin, NULL, NULL, argv, environ), 0);

	snprintf(disk, sizeof(disk), "%s/disk", f->mnt);
	for (int ms = 0; stat(disk, &st); ms += 10) {
		if (waitpid(f->fuse_pid, &status, WNOHANG) == f->fuse_pid) {
			f->fuse_pid = 0;
			fail_msg("faultfs exited before mounting (status %#x)", status);
		}
		if (ms >= MOUNT_TIMEOUT_MS)
			fail_msg("faultfs did not mount within %d ms", MOUNT_TIMEOUT_MS);
		usleep(10 * 1000);
	}
}

/* Proves: an I/O error from the device arrives as a completion with res == -EIO, for
 * reads and writes, while submit accepts the request; good blocks still work; and
 * faultfs exits cleanly (status 0) when unmounted. */
static void test_uring_device_error(void **state)
{
	struct fixture *f = *state;
	const uint32_t len = 64 * 1024;
	char disk[PATH_MAX + 32], size[32], off[32], blen[32];
	int status;

	snprintf(size, sizeof(size), "%llu", FAULT_SIZE);
	snprintf(off, sizeof(off), "%llu", FAULT_BAD_OFF);
	snprintf(blen, sizeof(blen), "%llu", (unsigned long long)FAULT_BAD_LEN);
	start_faultfs(f, "--size", size, "--bad-offset", off, "--bad-len", blen, NULL);
	snprintf(disk, sizeof(disk), "%s/disk", f->mnt);
	assert_int_equal(avfs_uring_open(disk, 0, 0, &f->d), 0);
	assert_int_equal(f->d->info.size, FAULT_SIZE);
	assert_false(f->d->info.is_blockdev);
	f->buf[0] = avfs_disk_alloc_buf(f->d, len);
	f->buf[1] = avfs_disk_alloc_buf(f->d, len);
	assert_non_null(f->buf[0]);
	assert_non_null(f->buf[1]);

	fill(f->buf[0], len, 3);
	assert_int_equal(submit_and_complete(f->d, AVFS_DISK_WRITE, 0, len, f->buf[0]), len);
	assert_int_equal(submit_and_complete(f->d, AVFS_DISK_READ, 0, len, f->buf[1]), len);
	assert_memory_equal(f->buf[0], f->buf[1], len);

	assert_int_equal(submit_and_complete(f->d, AVFS_DISK_READ, FAULT_BAD_OFF, len, f->buf[1]),
			 -EIO);
	assert_int_equal(submit_and_complete(f->d, AVFS_DISK_WRITE, FAULT_BAD_OFF, len, f->buf[0]),
			 -EIO);
	/* a request straddling the edge of the bad range fails as a whole */
	assert_int_equal(submit_and_complete(f->d, AVFS_DISK_READ, FAULT_BAD_OFF - 4096, 8192,
					     f->buf[1]), -EIO);
	/* just past the bad range is good again */
	assert_int_equal(submit_and_complete(f->d, AVFS_DISK_READ, FAULT_BAD_OFF + FAULT_BAD_LEN,
					     len, f->buf[1]), len);
	assert_int_equal(avfs_disk_inflight(f->d), 0);

	avfs_disk_close(f->d);
	f->d = NULL;
	assert_int_equal(umount2(f->mnt, MNT_DETACH), 0);
	status = wait_exit(f->fuse_pid, 5000);
	assert_int_not_equal(status, -1);
	f->fuse_pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Proves: when the device goes away under an open disk (its FUSE daemon killed), later
 * requests are still accepted and complete with a negative errno, and close is clean. */
static void test_uring_device_disappears(void **state)
{
	struct fixture *f = *state;
	const uint32_t len = 64 * 1024;
	char disk[PATH_MAX + 32];
	int64_t res;

	start_faultfs(f, "--size", "16777216", NULL);
	snprintf(disk, sizeof(disk), "%s/disk", f->mnt);
	assert_int_equal(avfs_uring_open(disk, 0, 0, &f->d), 0);
	f->buf[0] = avfs_disk_alloc_buf(f->d, len);
	assert_non_null(f->buf[0]);
	fill(f->buf[0], len, 4);
	assert_int_equal(submit_and_complete(f->d, AVFS_DISK_WRITE, 0, len, f->buf[0]), len);

	assert_int_equal(kill(f->fuse_pid, SIGKILL), 0);
	assert_int_equal(waitpid(f->fuse_pid, NULL, 0), f->fuse_pid);
	f->fuse_pid = 0;

	res = submit_and_complete(f->d, AVFS_DISK_READ, 0, len, f->buf[0]);
	assert_true(res == -ENOTCONN || res == -EIO || res == -ENODEV);
	res = submit_and_complete(f->d, AVFS_DISK_WRITE, 0, len, f->buf[0]);
	assert_true(res == -ENOTCONN || res == -EIO || res == -ENODEV);
	res = io(f->d, AVFS_DISK_FLUSH, 0, 0, NULL, -1, 0);
	assert_true(res <= 0);	/* fsync on a dead FUSE connection may or may not be sent */
	assert_int_equal(avfs_disk_inflight(f->d), 0);
	avfs_disk_close(f->d);
	f->d = NULL;
}

/* Proves: with depth 4, a fifth request in flight is refused with -EBUSY without
 * disturbing the four, and the slot becomes usable again once they are reaped. */
static void test_uring_depth_limit(void **state)
{
	struct fixture *f = *state;
	const unsigned depth = 4;
	struct avfs_disk_req req = { .op = AVFS_DISK_READ, .len = 4096, .buf_index = -1 };
	struct avfs_disk_cqe cqes[8];
	unsigned seen = 0, reaped = 0;

	make_image(f, 1 * MIB);
	assert_int_equal(avfs_uring_open(f->image, 0, depth, &f->d), 0);
	f->buf[0] = avfs_disk_alloc_buf(f->d, 8 * 4096);
	assert_non_null(f->buf[0]);

	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < depth; i++) {
			req.lba = i * 8;
			req.buf = (char *)f->buf[0] + i * 4096;
			req.cookie = 100 + i;
			assert_int_equal(avfs_disk_submit(f->d, &req), 0);
		}
		req.buf = (char *)f->buf[0] + depth * 4096;
		req.cookie = 200;
		assert_int_equal(avfs_disk_submit(f->d, &req), -EBUSY);
		assert_int_equal(avfs_disk_inflight(f->d), depth);

		for (reaped = 0, seen = 0; reaped < depth;) {
			int n = avfs_disk_reap(f->d, cqes, 8);

			assert_true(n >= 0);
			for (int i = 0; i < n; i++) {
				assert_int_equal(cqes[i].res, 4096);
				assert_in_range(cqes[i].cookie, 100, 100 + depth - 1);
				seen |= 1u << (cqes[i].cookie - 100);
			}
			reaped += (unsigned)n;
			if (!n)
				assert_int_equal(avfs_disk_wait(f->d), 0);
		}
		assert_int_equal(seen, (1u << depth) - 1);	/* each exactly once */
		assert_int_equal(avfs_disk_inflight(f->d), 0);
	}
	assert_int_equal(io(f->d, AVFS_DISK_READ, 0, 4096, f->buf[0], -1, 0), 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_uring_blockdev_geometry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uring_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uring_registered_buffers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uring_poll_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uring_short_transfer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uring_device_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uring_device_disappears, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uring_depth_limit, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

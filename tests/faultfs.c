/*
 * faultfs.c — a test FUSE file system serving one in-memory file /disk whose bytes in
 * [--bad-offset, --bad-offset + --bad-len) fail with EIO, to inject device errors
 * under the io_uring backend. The faults can change while it runs: a line written to /ctl
 * sets them — "read OFF LEN", "write OFF LEN" (reads or writes touching the range fail, the
 * other way works), "rw OFF LEN" (both), "none". Runs in the foreground, single-threaded, and
 * exits when unmounted. It keeps nothing across mounts and simulates no timing.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fuse.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FAULTFS_DEFAULT_SIZE (64ull << 20)

static const char disk_path[] = "/disk";
static const char ctl_path[] = "/ctl";

static struct {
	char *data;		/* the disk content, size bytes */
	uint64_t size;
	uint64_t bad_off;	/* failing range of reads; bad_len 0 = none */
	uint64_t bad_len;
	uint64_t wbad_off;	/* ... of writes */
	uint64_t wbad_len;
} fs;

/* Whether [off, off + len) touches the failing range [boff, boff + blen). */
static bool hits(uint64_t boff, uint64_t blen, uint64_t off, uint64_t len)
{
	return blen && len && off < boff + blen && boff < off + len;
}

static int faultfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (!strcmp(path, ctl_path)) {
		st->st_mode = S_IFREG | 0200;
		st->st_nlink = 1;
		return 0;
	}
	if (strcmp(path, disk_path))
		return -ENOENT;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_size = (off_t)fs.size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)(fs.size / 512);
	return 0;
}

static int faultfs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			   struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, disk_path + 1, NULL, 0, 0);
	fill(buf, ctl_path + 1, NULL, 0, 0);
	return 0;
}

static int faultfs_open(const char *path, struct fuse_file_info *fi)
{
	if (!strcmp(path, ctl_path)) {
		fi->direct_io = 1;
		return 0;
	}
	if (strcmp(path, disk_path))
		return -ENOENT;
	/* bypass the page cache: every read and write must reach us, or an injected
	 * error would hide behind cached pages */
	fi->direct_io = 1;
	return 0;
}

static int faultfs_read(const char *path, char *buf, size_t len, off_t off,
			struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	if (off < 0)
		return -EINVAL;
	if ((uint64_t)off >= fs.size)
		return 0;
	if (len > fs.size - (uint64_t)off)
		len = fs.size - (uint64_t)off;
	if (hits(fs.bad_off, fs.bad_len, (uint64_t)off, len))
		return -EIO;
	memcpy(buf, fs.data + off, len);
	return (int)len;
}

static int parse_u64(const char *s, uint64_t *v);

/* A line written to /ctl: "read|write|rw OFF LEN" or "none". */
static int set_faults(const char *buf, size_t len)
{
	char line[128], op[8], a[32], b[32];
	uint64_t off = 0, n = 0;

	if (len >= sizeof(line))
		return -EINVAL;
	memcpy(line, buf, len);
	line[len] = 0;
	if (sscanf(line, "%7s %31s %31s", op, a, b) == 1 && !strcmp(op, "none")) {
		fs.bad_len = fs.wbad_len = 0;
		return 0;
	}
	if (sscanf(line, "%7s %31s %31s", op, a, b) != 3 || parse_u64(a, &off) ||
	    parse_u64(b, &n) || off + n < off)
		return -EINVAL;
	if (strcmp(op, "read") && strcmp(op, "write") && strcmp(op, "rw"))
		return -EINVAL;
	fs.bad_off = off;
	fs.bad_len = strcmp(op, "write") ? n : 0;
	fs.wbad_off = off;
	fs.wbad_len = strcmp(op, "read") ? n : 0;
	return 0;
}

static int faultfs_write(const char *path, const char *buf, size_t len, off_t off,
			 struct fuse_file_info *fi)
{
	(void)fi;
	if (!strcmp(path, ctl_path)) {
		int err = set_faults(buf, len);

		if (!err)
			fprintf(stderr, "faultfs: reads fail in [%" PRIu64 ", +%" PRIu64 "), writes in "
				"[%" PRIu64 ", +%" PRIu64 ")\n", fs.bad_off, fs.bad_len, fs.wbad_off,
				fs.wbad_len);
		return err ? err : (int)len;
	}
	if (off < 0)
		return -EINVAL;
	/* the file is a fixed-size disk: it never grows */
	if ((uint64_t)off >= fs.size || len > fs.size - (uint64_t)off)
		return -ENOSPC;
	if (hits(fs.wbad_off, fs.wbad_len, (uint64_t)off, len))
		return -EIO;
	memcpy(fs.data + off, buf, len);
	return (int)len;
}

static int faultfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	if (!strcmp(path, ctl_path))
		return 0;	/* echo > ctl truncates first */
	if (strcmp(path, disk_path))
		return -ENOENT;
	return (uint64_t)size == fs.size ? 0 : -EPERM;	/* O_TRUNC-free: the size is fixed */
}

static int faultfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return 0;	/* memory is as durable as this disk gets */
}

static const struct fuse_operations faultfs_ops = {
	.getattr = faultfs_getattr,
	.readdir = faultfs_readdir,
	.open = faultfs_open,
	.read = faultfs_read,
	.write = faultfs_write,
	.truncate = faultfs_truncate,
	.fsync = faultfs_fsync,
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || s[0] == '-' ? -EINVAL : 0;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--size BYTES] [--bad-offset O --bad-len L] [FUSE options] "
		"MOUNTDIR\n", prog);
}

int main(int argc, char **argv)
{
	char **fargv;
	int fargc = 0, ret = 1;
	bool have_off = false, have_len = false;

	fs.size = FAULTFS_DEFAULT_SIZE;
	/* our options out, everything else (mount dir, -o ...) passed to fuse_main */
	fargv = calloc((size_t)argc + 3, sizeof(*fargv));
	if (!fargv)
		return 1;
	fargv[fargc++] = argv[0];
	fargv[fargc++] = "-f";	/* the test owns our pid: no daemonising */
	fargv[fargc++] = "-s";	/* fs has no lock */
	for (int i = 1; i < argc; i++) {
		uint64_t *dst = NULL;

		if (!strcmp(argv[i], "--size"))
			dst = &fs.size;
		else if (!strcmp(argv[i], "--bad-offset"))
			dst = &fs.bad_off;
		else if (!strcmp(argv[i], "--bad-len"))
			dst = &fs.bad_len;
		have_off |= dst == &fs.bad_off;
		have_len |= dst == &fs.bad_len;
		if (!dst) {
			fargv[fargc++] = argv[i];
			continue;
		}
		if (i + 1 >= argc || parse_u64(argv[++i], dst)) {
			usage(argv[0]);
			goto out;
		}
	}
	fs.wbad_off = fs.bad_off;	/* the command line's range fails both ways */
	fs.wbad_len = fs.bad_len;
	if (have_off != have_len || !fs.size || fs.size > SIZE_MAX ||
	    fs.bad_off + fs.bad_len < fs.bad_off) {
		usage(argv[0]);
		goto out;
	}
	fs.data = calloc(1, (size_t)fs.size);
	if (!fs.data) {
		fprintf(stderr, "faultfs: cannot allocate %" PRIu64 " bytes\n", fs.size);
		goto out;
	}
	ret = fuse_main(fargc, fargv, &faultfs_ops, NULL);
out:
	free(fs.data);
	free(fargv);
	return ret;
}

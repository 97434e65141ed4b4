/*
 * lock.c — the device lock (lock.h): flock on the node or file, O_EXCL on a block device, and
 * the loop devices an image backs, read from sysfs. Who holds an flock cannot be asked, so the
 * message names the holders there can be (an avfsd serving it, a mkfs.avfs or fsck.avfs -y).
 */
#include "lock.h"

#include "why.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The loop device whose backing file is st's, into dev ("" if none). */
static void loop_of(const struct stat *st, char *dev, size_t len)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;

	*dev = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[300], back[4096];
		struct stat b;
		FILE *f;
		size_t n;

		if (strncmp(e->d_name, "loop", 4))
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", e->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;	/* not attached */
		n = fread(back, 1, sizeof(back) - 1, f);
		fclose(f);
		back[n] = 0;
		back[strcspn(back, "\n")] = 0;
		if (!stat(back, &b) && b.st_dev == st->st_dev && b.st_ino == st->st_ino) {
			snprintf(dev, len, "/dev/%s", e->d_name);
			break;
		}
	}
	closedir(d);
}

/* flock fd: 0, or -EBUSY / -errno with why. */
static int take_flock(int fd, const char *path, char *why, size_t whylen)
{
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return 0;
	if (errno == EWOULDBLOCK) {
		avfs_why(why, whylen, "%s is in use: an avfsd serves it, or a mkfs.avfs or fsck.avfs "
			 "-y runs on it (unmount it first; `findmnt -t fuse.avfs` shows the mounts)",
			 path);
		return -EBUSY;
	}
	avfs_why(why, whylen, "cannot lock %s: %s", path, strerror(errno));
	return -errno;
}

int avfs_disk_lock(const char *path, char *why, size_t whylen)
{
	char loop[300];
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		avfs_why(why, whylen, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	/* the flock first: when an avfsd holds the device, say so, not the kernel's claim */
	err = take_flock(fd, path, why, whylen);
	if (err)
		goto fail;
	if (S_ISBLK(st.st_mode)) {
		/* the kernel's claim: refused while mounted, a partition of it is, or a holder
		 * (device mapper, RAID) has it; held for as long as the descriptor is open. The
		 * flock moves to that descriptor (two descriptors of one process would conflict). */
		int x;

		flock(fd, LOCK_UN);
		x = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (x < 0 && errno == EBUSY) {
			avfs_why(why, whylen, "%s is in use by the system (mounted, a partition of it "
				 "mounted, or held by device mapper or RAID): unmount it first", path);
			err = -EBUSY;
			goto fail;
		}
		if (x < 0) {
			err = -errno;
			avfs_why(why, whylen, "cannot open %s exclusively: %s", path, strerror(errno));
			goto fail;
		}
		close(fd);
		fd = x;
		err = take_flock(fd, path, why, whylen);
		if (err)
			goto fail;
	} else if (S_ISREG(st.st_mode)) {
		loop_of(&st, loop, sizeof(loop));
		if (*loop) {
			avfs_why(why, whylen, "%s is attached to %s: whatever uses %s could write it "
				 "(losetup -d %s first)", path, loop, loop, loop);
			err = -EBUSY;
			goto fail;
		}
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return err;
}

int avfs_disk_in_use(const char *path, char *why, size_t whylen)
{
	int fd = avfs_disk_lock(path, why, whylen);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/*
 * sysfs.c — one number from one sysfs file, for the hardware backends (sysfs_i.h). Nothing
 * else: the paths and what the numbers mean are the backends'.
 */
#include "sysfs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int64_t disk_sysfs_u64(const char *path)
{
	char buf[32] = "";
	unsigned long long v;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	if (sscanf(buf, "%llu", &v) != 1 || v > INT64_MAX)
		return -EIO;
	return (int64_t)v;
}

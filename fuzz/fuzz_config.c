/*
 * fuzz_config.c — libFuzzer target: avfsd's --config file parser (daemon/settings.c), the
 * input as the file's bytes, then each line again as a --set NAME=VALUE.
 */
#include "settings.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct avfsd_config c;
	char why[512], line[600];
	size_t at = 0;

	if (fd < 0) {
		fd = memfd_create("fuzz_config", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	avfsd_config_default(&c);
	avfsd_config_file(&c, path, why, sizeof(why));
	avfsd_config_default(&c);
	while (at < size) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t n = nl ? (size_t)(nl - data - at) : size - at;

		snprintf(line, sizeof(line), "%.*s", (int)(n < 599 ? n : 599), (const char *)data + at);
		avfsd_config_set(&c, line, why, sizeof(why));
		at += n + 1;
	}
	return 0;
}

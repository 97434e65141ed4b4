/*
 * cfgreserve.h — the config file's reservations (settings.h struct avfsd_reserve), admitted
 * when avfsd starts as detached ones of root: each found by its path from the file system's
 * root, on a file or a directory. One that no longer fits (the disk or the path changed) is
 * left out with a log line saying why; the daemon starts all the same. It parses nothing
 * (settings.c does) and serves nothing.
 */
#ifndef AVFSD_CFGRESERVE_H
#define AVFSD_CFGRESERVE_H

#include <stdint.h>

#include "settings.h"

struct avfs_engine;
struct avfs_fs;

/* Admit c's reservations; cfg names the config file in the log lines. The number admitted. */
unsigned avfsd_cfg_reserve(struct avfs_engine *e, struct avfs_fs *fs,
			   const struct avfsd_config *c, const char *cfg, int64_t now);

#endif

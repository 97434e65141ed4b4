/*
 * settings.h — avfsd's settings: --set NAME=VALUE and the --config file (docs/ADMIN.md): the
 * engine's and the scheduler's settings (NAME=VALUE, the names avfs-sim --help lists) and the
 * admission settings and per-user quotas (be-floor, isolation, io, quota). It parses and
 * checks; it applies nothing to a running daemon.
 */
#ifndef AVFSD_SETTINGS_H
#define AVFSD_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define AVFSD_QUOTAS 64

struct avfsd_quota {
	uint32_t uid;		/* AVFS_ADMIT_ANY_UID: everyone without one of their own */
	uint64_t rate;		/* bytes/s, 0: unlimited */
	uint32_t streams;	/* 0: unlimited */
};

struct avfsd_config {
	struct avfs_engine_conf ec;	/* the settings land here */
	bool depth_set;		/* "depth" was given */
	int atime;		/* the mount's access-time rule: "atime" relatime (default),
				 * strictatime, noatime (enum avfs_atime) */
	int close;		/* "close": sync (default), durable, async (enum avfs_fuse_close:
				 * what a close(2) on the mount waits for) */
	struct avfsd_quota q[AVFSD_QUOTAS];
	unsigned nq;
};

/* Engine defaults, no quota. */
void avfsd_config_default(struct avfsd_config *c);
/* One NAME=VALUE setting. 0, or -EINVAL / -ERANGE / -ENOENT with why. */
int avfsd_config_set(struct avfsd_config *c, const char *nv, char *why, size_t whylen);
/* The file at path, one setting a line, # comments. 0, or -errno with why naming the line. */
int avfsd_config_file(struct avfsd_config *c, const char *path, char *why, size_t whylen);

#endif

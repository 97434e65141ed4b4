/*
 * settings.h — avfsd's settings: --set NAME=VALUE and the --config file (docs/ADMIN.md): the
 * engine's and the scheduler's settings (NAME=VALUE, the names avfs-sim --help lists) and the
 * admission settings and per-user quotas (be-floor, isolation, io, quota), the limits on
 * clients (clients-per-uid, client-memory, server-memory, detached-quota, admin-group); the
 * reservations to admit at start (reserve: cfgreserve.c admits them); and
 * the mount options of -o (an fstab line's, through mount.avfs), which map to avfsd's flags or
 * go to FUSE. It parses and checks; it applies nothing to a running daemon.
 */
#ifndef AVFSD_SETTINGS_H
#define AVFSD_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk.h"
#include "engine.h"
#include "clientlim.h"

#define AVFSD_QUOTAS 64
#define AVFSD_RESERVATIONS 64

/* A reservation of the config file ("reserve PATH rate=R buffer=B read|write [uid=U] [io=S]"),
 * admitted when avfsd starts (cfgreserve.c): as avfs-admin reserve PATH, detached, root's. */
struct avfsd_reserve {
	char path[256];		/* from the file system's root: "/cam1" is MOUNTPOINT/cam1 */
	uint64_t rate, buffer;
	uint32_t io;		/* 0: the default */
	bool write;
	bool uid_only;		/* uid=U: the I/O of uid U only */
	uint32_t uid;
	unsigned line;		/* of the config file, for the log */
};

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
	struct avfsd_reserve rsv[AVFSD_RESERVATIONS];
	unsigned nrsv;
	struct avfs_server_limits lim;	/* clients-per-uid, client-memory, server-memory,
					 * detached-quota, admin-group */
};

/* What the command line and -o say about the mount (strings borrowed from argv or from the
 * -o text, which must outlive this). */
struct avfsd_mount_opts {
	const char *socket, *config, *disk_model;
	enum avfs_backend backend;
	int allow_other;	/* 1, 0, or -1: the default (on when root mounts) */
	bool ro;		/* read-only: nothing written, writes fail with EROFS */
	bool sloppy;		/* unknown -o options are warned about, not refused */
	bool verbose;
	bool noacl;		/* -o noacl: no POSIX ACLs (the kernel checks the modes alone) */
	char fuse[512];		/* generic mount options for FUSE ("nosuid,noatime") */
	int atime;		/* -o noatime, strictatime, relatime (atime): enum avfs_atime, which
				 * avfsd applies itself (the kernel leaves a FUSE file's atime to
				 * it); -1: not said (--set atime=, else relatime) */
};

/*
 * One -o list, comma-separated, into m: avfsd's own options (allow_other, noallow_other,
 * default_permissions (always on), ro, rw, acl, noacl, socket=PATH, config=FILE, backend=NAME,
 * disk_model=NAME, verbose), the generic ones FUSE takes (nosuid, nodev, noexec, noatime, ...)
 * and the ones mount(8) and systemd keep for themselves (defaults, auto, noauto, nofail, user,
 * _netdev, x-*), which are ignored. opts is cut into pieces in place. 0, or -EINVAL with why
 * (an unknown option, unless m->sloppy: then a warning in why and 0).
 */
int avfsd_mount_options(struct avfsd_mount_opts *m, char *opts, char *why, size_t whylen);

/* Engine defaults, no quota, the server's default limits. */
void avfsd_config_default(struct avfsd_config *c);
/* One NAME=VALUE setting. 0, or -EINVAL / -ERANGE / -ENOENT with why. */
int avfsd_config_set(struct avfsd_config *c, const char *nv, char *why, size_t whylen);
/* The file at path, one setting a line, # comments. 0, or -errno with why naming the line. */
int avfsd_config_file(struct avfsd_config *c, const char *path, char *why, size_t whylen);

#endif

/*
 * admin.h — the JSON documents avfs-admin reads (docs/ADMIN.md): `status` (the daemon, the
 * admission load, the disk and how it is driven), `streams` (every reservation with its QoS),
 * `stats` (the engine's QoS metrics, the mixer's counters, the model). Built with json-c from
 * what the engine and the caller's view say; no I/O.
 */
#ifndef AVFSD_ADMIN_H
#define AVFSD_ADMIN_H

#include <stddef.h>
#include <stdint.h>

struct avfs_engine;
struct avfs_disk;
struct avfs_rotpred;
struct avfs_retain_stats;

struct avfsd_admin_view {
	const char *device, *mountpoint, *socket;
	int64_t since;		/* the daemon started (the uptime's origin) */
	const struct avfs_disk *disk;
	const struct avfs_rotpred *rotpred;	/* the JIT predictor, NULL: none */
	const struct avfs_retain_stats *retain;	/* the space rules' counters, NULL: none */
};

#define AVFSD_ADMIN_ALL UINT32_MAX	/* viewer: root or the admin group, who see everything */

/* The document of an admin command ("status", "streams", "stats": cmd[0..len), not
 * terminated), malloc'ed; NULL with *err = -EINVAL (unknown command) or -ENOMEM. Reservations
 * of uids other than viewer are listed without their pid and inode (AVFSD_ADMIN_ALL: all in
 * full). */
char *avfsd_admin_json(const struct avfsd_admin_view *v, struct avfs_engine *e, size_t clients,
		       const char *cmd, size_t len, int64_t now, uint32_t viewer, int *err);

#endif

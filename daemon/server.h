/*
 * server.h — avfsd's client protocol server (proto/proto.h): libavio clients and avfs-admin on
 * a Unix socket. It accepts connections, frames and checks messages through one table of
 * {type, size, handler}, opens files by path with the peer's credentials (uid, gid and its
 * supplementary groups; by inode for root), bounds what each client and all of them together
 * may make it hold, hands I/O, reservations and cancels to the engine, answers admin queries
 * (daemon/admin.c) and streams the request trace. It does not schedule, map files or touch the
 * device, and never stats or closes on its own thread a descriptor a client sent (closer.h).
 */
#ifndef AVFSD_SERVER_H
#define AVFSD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "clientlim.h"

struct avfs_loop;
struct avfs_server;
struct avfsd_admin_view;

struct avfs_server_conf {
	const char *path;	/* the socket */
	uint64_t mnt_dev;	/* st_dev of the mount: OPEN names files by it */
	const char *mountpoint;	/* OPEN_PATH's paths start with it; NULL: none accepted */
	const struct avfs_server_limits *lim;	/* NULL: the defaults */
	/* a libavio write reached ino: caches of it (FUSE read-ahead) must go; NULL: none */
	void (*wrote)(void *ctx, uint64_t ino);
	void *wrote_ctx;
	/* what avfs-admin status and stats show besides the engine's (filled by the caller;
	 * its clients count is the server's) */
	const struct avfsd_admin_view *view;
};

/* Listen on c->path (a stale socket of a dead daemon is replaced: the device lock says none
 * runs). 0, or -errno with why. */
int avfs_server_new(struct avfs_server **out, struct avfs_loop *l, struct avfs_engine *e,
		    struct avfs_fs *fs, const struct avfs_server_conf *c, char *why, size_t whylen);
/* Close every connection and the socket (unlinked). Requests of clients still in the engine
 * must be done first (the engine idle). */
void avfs_server_free(struct avfs_server *s);

/* One device request completed: a line for the tracing clients (engine ops.trace). */
void avfs_server_trace(struct avfs_server *s, const struct avfs_trace_rec *r, int64_t now);
/* Time passed: clients that read none of their replies for 3 s while they hold more than the
 * throttle, and clients that left a message half-sent for 5 s, are dropped; traces end.
 * Returns when it wants to be called again (0: no particular time). */
int64_t avfs_server_tick(struct avfs_server *s, int64_t now);
/* Connected clients. */
size_t avfs_server_clients(const struct avfs_server *s);
const char *avfs_server_path(const struct avfs_server *s);

#endif

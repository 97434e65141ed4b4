/*
 * clientlim.h — what clients of avfsd's socket may make it hold or do: connections per uid,
 * memory per client and in all, the quota of detached reservations, the admin group. The
 * numbers and their defaults only; the server (server.c) applies them, the settings
 * (settings.c) read them from --config.
 */
#ifndef AVFSD_CLIENTLIM_H
#define AVFSD_CLIENTLIM_H

#include <stdint.h>

#define AVFS_SERVER_NO_GID UINT32_MAX

/* What clients may make the daemon hold or do (avfsd.8: the --config lines of the same names). */
struct avfs_server_limits {
	uint32_t clients_per_uid;	/* connections of one uid other than root (64); the last
					 * 32 of the 1,024 slots are root's alone */
	uint64_t client_mem;		/* bytes of messages, replies and copies one client may
					 * make the daemon hold (256 MiB) */
	uint64_t server_mem;		/* all clients together (512 MiB) */
	uint32_t detached_streams;	/* detached reservations of one uid other than root (2) */
	double detached_share;		/* their disk time together, 0..1 (0.25) */
	uint32_t admin_gid;		/* its members see every reservation's pid and inode, as root
					 * does (AVFS_SERVER_NO_GID: none) */
};

void avfs_server_limits_default(struct avfs_server_limits *l);

#endif

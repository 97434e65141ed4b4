/*
 * clientlim.c — the default limits on avfsd's clients (clientlim.h).
 */
#include "clientlim.h"

void avfs_server_limits_default(struct avfs_server_limits *l)
{
	*l = (struct avfs_server_limits){ .clients_per_uid = 64, .client_mem = 256ull << 20,
					  .server_mem = 512ull << 20, .detached_streams = 2,
					  .detached_share = 0.25, .admin_gid = AVFS_SERVER_NO_GID };
}

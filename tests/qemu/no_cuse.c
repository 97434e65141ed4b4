/* no_cuse.c — cuse_lowlevel_init for the static guest avfsd.
 *
 * libfuse3's low level answers a CUSE_INIT through cuse_lowlevel_init, and that member of the
 * static archive pulls in the high-level API (through fuse_daemonize and fuse_get_session) with
 * its module loader, which calls dlopen: glibc's linker warning for dlopen in a static program
 * came from there, in every build. avfsd mounts a FUSE file system and never opens /dev/cuse, so
 * the kernel never sends it CUSE_INIT; this definition is taken instead of the archive's and
 * none of that is linked. Reached anyway, it says so and stops the program. Only the guest
 * programs link this file.
 */
#include <stdio.h>
#include <stdlib.h>

struct fuse_req;

void cuse_lowlevel_init(struct fuse_req *req, unsigned long nodeid, const void *inarg);

void cuse_lowlevel_init(struct fuse_req *req, unsigned long nodeid, const void *inarg)
{
	(void)req;
	(void)nodeid;
	(void)inarg;
	fputs("avfsd: a CUSE_INIT reached a FUSE file system: the static guest build has no CUSE\n",
	      stderr);
	abort();
}

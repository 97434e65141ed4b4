/*
 * inval.h — tells the kernel of names the daemon removed behind its back (retention's
 * deletions, fuse/retain.c), so that no cached entry keeps naming a freed inode number that a
 * new file may take. The kernel's notification waits for the directory's lock, which a request
 * the loop has not read yet may hold (a create in that directory): so the notices go from a
 * thread of their own, never from the loop (libfuse: fuse_lowlevel_notify_delete). Not for
 * changes made through the mount: the kernel knows those.
 */
#ifndef AVFS_INVAL_H
#define AVFS_INVAL_H

#include <stdint.h>

struct fuse_session;
struct avfs_inval;

/* A notifier for se's mount: 0, -ENOMEM, -errno of pthread_create. */
int avfs_inval_new(struct avfs_inval **out, struct fuse_session *se);
/* Queue the notice that name in parent (child's) is gone; dropped when out of memory (the
 * kernel's entry then times out, as for any change behind its back). */
void avfs_inval_push(struct avfs_inval *q, uint64_t parent, uint64_t child, const char *name);
/* Send what is queued, stop the thread, free (before the session goes). */
void avfs_inval_free(struct avfs_inval *q);

#endif

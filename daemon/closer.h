/*
 * closer.h — closes descriptors that clients sent avfsd, on a thread of its own. Closing a
 * descriptor of a file on avfsd's own FUSE mount sends the kernel's FLUSH to avfsd's loop, which
 * would wait for itself; closed here, the loop stays free to answer it. It closes and nothing
 * else: it never looks at what the descriptors are, and its thread takes no signals.
 */
#ifndef AVFSD_CLOSER_H
#define AVFSD_CLOSER_H

struct avfsd_closer;

/* Start the thread. 0 or -errno. */
int avfsd_closer_new(struct avfsd_closer **out);
/* Hand fd over: it is closed soon, off the caller's thread. Never blocks on the descriptor
 * (with no memory to queue it, it is closed here: the last resort). */
void avfsd_closer_close(struct avfsd_closer *k, int fd);
/* Descriptors handed over and not closed yet. */
unsigned avfsd_closer_pending(struct avfsd_closer *k);
/* Close what is queued and end the thread. A close still blocked after 5 s (on a mount whose
 * loop no longer runs) is left to the process's end, with the closer's memory. */
void avfsd_closer_free(struct avfsd_closer *k);

#endif

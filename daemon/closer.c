/*
 * closer.c — a thread that closes the descriptors handed to it (closer.h), from a queue under a
 * mutex. It does not inspect the descriptors or decide which to close.
 */
#include "closer.h"
#include "thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct avfsd_closer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* signalled when fds are queued or the end is asked */
	int *fds;		/* queued, protected by lock */
	unsigned n, cap;
	unsigned busy;		/* taken off the queue, being closed (protected by lock) */
	bool end;
};

static void *closer_main(void *arg)
{
	struct avfsd_closer *k = arg;

	pthread_mutex_lock(&k->lock);
	for (;;) {
		while (!k->n && !k->end)
			pthread_cond_wait(&k->cond, &k->lock);
		if (!k->n)
			break;
		int fd = k->fds[--k->n];

		k->busy++;
		pthread_mutex_unlock(&k->lock);
		close(fd);	/* may wait for the loop's own mount: not the loop's thread */
		pthread_mutex_lock(&k->lock);
		k->busy--;
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

int avfsd_closer_new(struct avfsd_closer **out)
{
	struct avfsd_closer *k = calloc(1, sizeof(*k));
	int err;

	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	/* the thread takes no signal: the daemon's (SIGTERM, SIGINT, SIGHUP) go to its
	 * signalfd, which only sees them while every thread blocks them */
	err = avfs_thread_start_nosig(&k->thread, closer_main, k);
	if (err) {
		pthread_cond_destroy(&k->cond);
		pthread_mutex_destroy(&k->lock);
		free(k);
		return err;
	}
	*out = k;
	return 0;
}

void avfsd_closer_close(struct avfsd_closer *k, int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&k->lock);
	if (k->n == k->cap) {
		unsigned cap = k->cap ? 2 * k->cap : 64;
		int *f = realloc(k->fds, cap * sizeof(*f));

		if (!f) {
			pthread_mutex_unlock(&k->lock);
			close(fd);
			return;
		}
		k->fds = f;
		k->cap = cap;
	}
	k->fds[k->n++] = fd;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
}

unsigned avfsd_closer_pending(struct avfsd_closer *k)
{
	unsigned n;

	pthread_mutex_lock(&k->lock);
	n = k->n + k->busy;
	pthread_mutex_unlock(&k->lock);
	return n;
}

void avfsd_closer_free(struct avfsd_closer *k)
{
	if (!k)
		return;
	struct timespec until;

	pthread_mutex_lock(&k->lock);
	k->end = true;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
	/* a close that still waits for a mount nobody serves any more (the daemon is going):
	 * left behind, the process ends anyway */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	if (pthread_timedjoin_np(k->thread, NULL, &until))
		return;
	pthread_cond_destroy(&k->cond);
	pthread_mutex_destroy(&k->lock);
	free(k->fds);
	free(k);
}

/*
 * inval.c — the kernel told of names removed behind its back (inval.h), from a thread of its
 * own: a FIFO of notices under a mutex, drained by fuse_lowlevel_notify_delete.
 */
#include "inval.h"
#include "thread.h"

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct notice {
	struct notice *next;
	uint64_t parent, child;
	char name[];
};

struct avfs_inval {
	struct fuse_session *se;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct notice *head, **tail;	/* protected by lock */
	bool stop;			/* protected by lock */
};

static void *run(void *arg)
{
	struct avfs_inval *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct notice *n = q->head;

		if (!n && q->stop)
			break;
		if (!n) {
			pthread_cond_wait(&q->cond, &q->lock);
			continue;
		}
		q->head = n->next;
		if (!q->head)
			q->tail = &q->head;
		pthread_mutex_unlock(&q->lock);
		/* -ENOENT: the kernel had no entry cached; nothing else to do either way */
		fuse_lowlevel_notify_delete(q->se, n->parent, n->child, n->name, strlen(n->name));
		free(n);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int avfs_inval_new(struct avfs_inval **out, struct fuse_session *se)
{
	struct avfs_inval *q = calloc(1, sizeof(*q));
	int err;

	if (!q)
		return -ENOMEM;
	q->se = se;
	q->tail = &q->head;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	/* the thread takes no signal: the daemon's loop reads them from a signalfd, and a
	 * SIGTERM delivered here would take the default action (the whole process) */
	err = avfs_thread_start_nosig(&q->thread, run, q);
	if (err) {
		pthread_cond_destroy(&q->cond);
		pthread_mutex_destroy(&q->lock);
		free(q);
		return err;
	}
	*out = q;
	return 0;
}

void avfs_inval_push(struct avfs_inval *q, uint64_t parent, uint64_t child, const char *name)
{
	size_t len = strlen(name);
	struct notice *n = malloc(sizeof(*n) + len + 1);

	if (!n)
		return;
	n->next = NULL;
	n->parent = parent;
	n->child = child;
	memcpy(n->name, name, len + 1);
	pthread_mutex_lock(&q->lock);
	*q->tail = n;
	q->tail = &n->next;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

void avfs_inval_free(struct avfs_inval *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/*
 * thread.c — the helper threads of thread.h: a new thread inherits its creator's signal
 * mask, so the mask is full for the moment of pthread_create and restored after it.
 */
#include "thread.h"

#include <signal.h>

int avfs_thread_start_nosig(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

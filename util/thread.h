/*
 * thread.h — starting a helper thread that takes no signal. The daemons read their signals in
 * one place (avfsd from a signalfd, hddemu in its session loop and a sigwait thread), which
 * only works while every other thread blocks them: a SIGTERM delivered to a helper would take
 * the default action for the whole process. A library of its own beside clock.c: the
 * sans-I/O cores start no threads and never link it.
 */
#ifndef AVFS_THREAD_H
#define AVFS_THREAD_H

#include <pthread.h>

/* pthread_create of fn(arg) with every signal blocked in the new thread; the caller's own
 * mask is as before. 0, or -errno (pthread_create's). */
int avfs_thread_start_nosig(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif

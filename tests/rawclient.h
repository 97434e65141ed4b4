/*
 * rawclient.h — the daemon tests' hand-spoken protocol (proto/proto.h) on the harness's socket
 * (daemon_harness.h), and helpers they share: a scenario in a child process, one libavio
 * request from start to end. Blocking, small messages, one connection at a time; no state.
 */
#ifndef AVFS_TEST_RAWCLIENT_H
#define AVFS_TEST_RAWCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* run fn in a child process within timeout_s; true when it exited 0 */
bool in_child(const char *what, int timeout_s, int (*fn)(void *), void *arg);
/* drop to uid (its own gid, and extra as the one supplementary group when not 0): true if
 * done */
bool become(uid_t uid, gid_t extra);
/* start and wait for one libavio request; its aio_ret, or the start's error */
ssize_t avio_sync(int fd, int op, void *buf, uint64_t off, size_t len, int64_t deadline);

/* a connection to the harness's socket, or -1 */
int raw_connect(void);
/* one message: header, m (len bytes), data (dlen bytes); true if sent whole */
bool raw_send(int s, uint16_t type, uint64_t tag, const void *m, size_t len,
	      const void *data, size_t dlen);
/* one message with fd as SCM_RIGHTS */
bool raw_send_fd(int s, uint16_t type, uint64_t tag, const void *m, size_t len, int fd);
/* receive one reply (header + payload into buf), waiting at most ms */
bool raw_recv(int s, struct avfs_msg_hdr *h, void *buf, size_t cap, int ms);
/* send, then the reply of that tag (others skipped) into reply; true if it came, of type */
bool raw_call(int s, uint16_t type, uint64_t tag, const void *m, size_t len, const void *data,
	      size_t dlen, void *reply, size_t cap, int ms);
/* the daemon closed s: EOF (after any replies) within ms */
bool raw_closed(int s, int ms);
/* true once the peer has closed s, seen by poll alone: no byte of s is read */
bool hung_up(int s, int ms);
/* HELLO, answered with 0 */
bool raw_hello(int s);
/* OPEN_PATH of path (absolute) as (dev, ino); the handle, or -1 (*open_res: its res, 1
 * when there was no reply) */
int raw_open_path(int s, const char *path, uint64_t dev, uint64_t ino, uint32_t access,
		  int32_t *open_res);
/* HELLO and OPEN of the file name on the mount (by inode as root, else OPEN_PATH); the
 * handle, or -1 (*open_res: its res) */
int raw_hello_open(int s, const char *name, uint32_t access, int32_t *open_res);

#endif

/*
 * client.h — the client side of proto.h, written once for libavio and avfs-admin: finding a
 * mount's socket, connecting with HELLO, framing and sending messages (a descriptor may ride
 * along as SCM_RIGHTS), and receiving replies through a parser that validates every header
 * and fixed reply struct. Two ways to receive: avfs_proto_rx_next(), non-blocking and
 * incremental, for a caller that has many requests in flight (libavio); avfs_proto_call(),
 * one blocking round trip at a time (avfs-admin).
 *
 * Not here: what a reply means (tags, requests, completions), connection policy (which socket,
 * retries, when a connection is lost) and locking. The calls keep no state but what the
 * caller passes in; a socket shared by threads needs the caller's lock around them.
 * Every call returns 0 (or a non-negative value) on success and -errno on failure; a
 * timeout_ms below 0 waits without limit.
 * Not installed: libavio.so links it in and exports none of it.
 */
#ifndef AVFS_PROTO_CLIENT_H
#define AVFS_PROTO_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "proto.h"

#define AVFS_PROTO_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)	/* with the NUL */
#define AVFS_PROTO_REPLY_MS 10000	/* a daemon silent this long in a round trip is stuck */
#define AVFS_PROTO_HELLO_TAG 0		/* the tag avfs_proto_connect() gives HELLO */
#define AVFS_PROTO_RXBUF (64u << 10)

/* ---- the socket ---- */

/*
 * avfs_proto_socket_fd() / avfs_proto_socket_file() - the socket path that the AVFS mount
 * holding fd (or the path file) names in its extended attribute AVFS_XATTR_SOCKET, into
 * path (size bytes, NUL-terminated). Returns 0, or -ENODATA / -ENOTSUP (not a file of an AVFS
 * mount), -ERANGE (the value does not fit), or fgetxattr's/getxattr's -errno.
 */
int avfs_proto_socket_fd(int fd, char *path, size_t size);
int avfs_proto_socket_file(const char *file, char *path, size_t size);

struct avfs_proto_rx;

/*
 * avfs_proto_connect() - connect to the daemon's socket at path and say HELLO (tag
 * AVFS_PROTO_HELLO_TAG), waiting at most timeout_ms for the answer; rx is reset and receives
 * it. *hello gets the daemon's answer (its limits). Returns the connected socket (blocking,
 * close-on-exec; the caller closes it), or -ENAMETOOLONG (path too long for a Unix socket),
 * connect's -errno (-ENOENT, -ECONNREFUSED, -EACCES...), -EPROTO (the daemon refused the
 * version, or its answer is malformed), -ETIMEDOUT, -ENOTCONN (it hung up), -ENOMEM.
 */
int avfs_proto_connect(const char *path, struct avfs_proto_rx *rx,
		       struct avfs_msg_hello_reply *hello, int timeout_ms);

/* ---- sending ---- */

/* one message on its way out; fields private: avfs_proto_tx_send() moves them */
struct avfs_proto_tx {
	struct avfs_msg_hdr hdr;
	struct iovec iov[3];	/* header, fixed struct, data */
	unsigned int next;	/* the first iov not sent whole */
	int fd;			/* goes with the first byte sent; -1: none, or gone */
	size_t left;		/* bytes not sent yet (public: progress for a stall timer) */
};

/*
 * avfs_proto_tx_init() - frame a message: type and tag in the header, then the fixed struct
 * msg (len bytes), then data (dlen bytes, may be NULL with dlen 0), with fd >= 0 passed as
 * SCM_RIGHTS. msg and data are not copied: they must stay put until the message is sent.
 * Returns 0, or -EMSGSIZE (len + dlen above AVFS_PROTO_MAX_PAYLOAD).
 */
int avfs_proto_tx_init(struct avfs_proto_tx *tx, uint16_t type, uint64_t tag, const void *msg,
		       size_t len, const volatile void *data, size_t dlen, int fd);

/*
 * avfs_proto_tx_send() - send as much of tx as the socket takes, never blocking. Returns 0
 * when the message is sent whole, -EAGAIN when the socket is full (tx->left bytes remain:
 * poll for POLLOUT and call again), or sendmsg's -errno (-EPIPE, -ECONNRESET: the daemon is
 * gone).
 */
int avfs_proto_tx_send(int sock, struct avfs_proto_tx *tx);

/*
 * avfs_proto_send() - frame and send one message (see avfs_proto_tx_init), blocking while
 * the socket is full, at most timeout_ms at a time without progress. Returns 0, -EMSGSIZE,
 * -ETIMEDOUT, or sendmsg's -errno. Fine for a caller that reads no replies meanwhile (small
 * messages, one round trip at a time); libavio drives avfs_proto_tx_send() itself.
 */
int avfs_proto_send(int sock, uint16_t type, uint64_t tag, const void *msg, size_t len,
		    int fd, int timeout_ms);

/* ---- receiving ---- */

/* the fixed struct at the head of a reply's payload, by type */
union avfs_proto_reply {
	struct avfs_msg_hello_reply hello;
	struct avfs_msg_open_reply open;
	struct avfs_msg_io_reply io;
	struct avfs_msg_cancel_reply cancel;
	struct avfs_msg_shm_reply shm;
	struct avfs_msg_reserve_reply reserve;
	struct avfs_msg_release_reply release;
	struct avfs_msg_stats_reply stats;
	struct avfs_msg_admin_reply admin;
	struct avfs_msg_trace_reply trace;
	struct avfs_msg_place_reply place;
};

/* what avfs_proto_rx_next() found */
#define AVFS_PROTO_RX_FIXED 1	/* a reply's header and fixed struct are in */
#define AVFS_PROTO_RX_DONE 2	/* the whole reply is in */

/*
 * The receive state of one connection: one reply at a time, read through a buffer (or
 * straight into the caller's memory, see dst). Only the fields marked public may be read.
 */
struct avfs_proto_rx {
	/* public, valid from AVFS_PROTO_RX_FIXED until the next call after AVFS_PROTO_RX_DONE */
	struct avfs_msg_hdr hdr;	/* checked: magic, a reply, length within limits */
	uint16_t type;			/* hdr.type without AVFS_MSG_REPLY */
	union avfs_proto_reply fixed;	/* the type's fixed struct (zeroed past its size) */
	size_t rest;			/* payload bytes after the fixed struct */
	/* the caller's, set at AVFS_PROTO_RX_FIXED: where the rest bytes go; NULL (as left by
	 * avfs_proto_rx_next): skipped. Bytes not yet buffered go straight from the socket. */
	void *dst;
	/* private */
	int phase;
	size_t need, have;		/* bytes of the current phase */
	size_t start, end;		/* unparsed bytes in buf */
	uint8_t buf[AVFS_PROTO_RXBUF];
};

/* avfs_proto_rx_init() - the state of a fresh connection (or after a parse error) */
void avfs_proto_rx_init(struct avfs_proto_rx *rx);

/*
 * avfs_proto_reply_size() - the size of type's fixed reply struct; 0 for a type this version
 * does not know (a reply of it is received whole as rest, for later versions to add types).
 */
size_t avfs_proto_reply_size(uint16_t type);

/*
 * avfs_proto_rx_next() - parse what rx holds and read sock (never blocking) until the
 * current reply reaches its next step. Returns AVFS_PROTO_RX_FIXED (rx->hdr, type, fixed
 * and rest are set: set rx->dst now to receive the rest, then call again), AVFS_PROTO_RX_DONE
 * (the reply is whole), -EAGAIN (the socket has nothing more now: poll for POLLIN), -EPROTO
 * (a malformed reply: the stream cannot be trusted past it; rx must be re-initialized),
 * -ENOTCONN (the daemon closed the connection), or recv's -errno.
 */
int avfs_proto_rx_next(int sock, struct avfs_proto_rx *rx);

/*
 * avfs_proto_wait() - block until the reply of type to tag is whole, skipping replies to
 * other tags; a daemon silent for timeout_ms gives -ETIMEDOUT. The first flen bytes of its
 * fixed struct go to *fixed (flen at most avfs_proto_reply_size(type)). With rest non-NULL,
 * *rest gets the payload after the fixed struct, malloc'd and NUL-terminated, and *rest_len
 * its size (the caller frees it); with rest NULL it is skipped.
 * Returns 0, -EINVAL (flen too large), -EPROTO (a malformed reply, or one of another type to
 * tag), -ETIMEDOUT, -ENOTCONN (the daemon hung up), -ENOMEM, or recv's -errno.
 */
int avfs_proto_wait(int sock, struct avfs_proto_rx *rx, uint16_t type, uint64_t tag,
		    void *fixed, size_t flen, void **rest, size_t *rest_len, int timeout_ms);

/*
 * avfs_proto_call() - one blocking round trip: avfs_proto_send() of msg (with fd as
 * SCM_RIGHTS if >= 0), then avfs_proto_wait() for its reply's fixed struct into reply (rlen
 * bytes; any rest is skipped). Returns 0 or the -errno of either step.
 */
int avfs_proto_call(int sock, struct avfs_proto_rx *rx, uint16_t type, uint64_t tag,
		    const void *msg, size_t len, int fd, void *reply, size_t rlen, int timeout_ms);

#endif

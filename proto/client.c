/*
 * client.c — the client side of proto.h (client.h): socket lookup, connect + HELLO, framing
 * and sending with SCM_RIGHTS, the reply parser and the blocking round trip. It keeps no
 * state of its own and takes no lock; what replies mean is for libavio and avfs-admin.
 */
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <unistd.h>

enum rx_phase {
	RX_HDR,		/* reading struct avfs_msg_hdr */
	RX_FIXED,	/* reading the reply's fixed struct */
	RX_REST,	/* reading the rest: into rx->dst, or skipping it */
};

/* ---- the socket ---- */

/* n bytes of an xattr value read into path: NUL-terminate it (it may or may not carry one) */
static int socket_value(ssize_t n, char *path)
{
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENODATA;
	path[n] = '\0';
	return 0;
}

int avfs_proto_socket_fd(int fd, char *path, size_t size)
{
	if (size < 2)
		return -ERANGE;
	return socket_value(fgetxattr(fd, AVFS_XATTR_SOCKET, path, size - 1), path);
}

int avfs_proto_socket_file(const char *file, char *path, size_t size)
{
	if (size < 2)
		return -ERANGE;
	return socket_value(getxattr(file, AVFS_XATTR_SOCKET, path, size - 1), path);
}

/*
 * The error of a sendmsg() or recv() that returned n: 0 when it moved bytes, -ENOTCONN when
 * the peer closed (n == 0), -EAGAIN when the socket is full or empty, -EINTR (try again), or
 * the call's other -errno.
 */
static int io_err(ssize_t n)
{
	if (n > 0)
		return 0;
	if (n == 0)
		return -ENOTCONN;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* waits until sock polls for events (or fails); timeout_ms < 0: no limit */
static int wait_for(int sock, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = sock, .events = events };
	int n = poll(&pfd, 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n ? 0 : -ETIMEDOUT;
}

int avfs_proto_connect(const char *path, struct avfs_proto_rx *rx,
		       struct avfs_msg_hello_reply *hello, int timeout_ms)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct avfs_msg_hello m = { .version = AVFS_PROTO_VERSION };
	size_t len = strlen(path);
	int s, err;

	if (len >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, len + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* a blocking connect: a non-blocking one fails with EAGAIN on a full backlog */
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		goto out_close;
	}
	avfs_proto_rx_init(rx);
	err = avfs_proto_call(s, rx, AVFS_MSG_HELLO, AVFS_PROTO_HELLO_TAG, &m, sizeof(m), -1,
			      hello, sizeof(*hello), timeout_ms);
	if (!err && (hello->res < 0 || hello->version != AVFS_PROTO_VERSION))
		err = -EPROTO;
	if (err)
		goto out_close;
	return s;

out_close:
	close(s);
	return err;
}

/* ---- sending ---- */

int avfs_proto_tx_init(struct avfs_proto_tx *tx, uint16_t type, uint64_t tag, const void *msg,
		       size_t len, const volatile void *data, size_t dlen, int fd)
{
	if (len > AVFS_PROTO_MAX_PAYLOAD || dlen > AVFS_PROTO_MAX_PAYLOAD - len)
		return -EMSGSIZE;
	tx->hdr = (struct avfs_msg_hdr){
		.magic = AVFS_PROTO_MAGIC,
		.type = type,
		.len = (uint32_t)(len + dlen),
		.tag = tag,
	};
	tx->iov[0] = (struct iovec){ &tx->hdr, sizeof(tx->hdr) };
	tx->iov[1] = (struct iovec){ (void *)(uintptr_t)msg, len };
	tx->iov[2] = (struct iovec){ (void *)(uintptr_t)data, dlen };
	tx->next = 0;
	tx->fd = fd;
	tx->left = sizeof(tx->hdr) + len + dlen;
	return 0;
}

int avfs_proto_tx_send(int sock, struct avfs_proto_tx *tx)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	int err;

	while (tx->left) {
		struct msghdr mh = { .msg_iov = tx->iov + tx->next, .msg_iovlen = 3 - tx->next };
		ssize_t n;

		if (tx->fd >= 0) {
			struct cmsghdr *cmsg;

			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.buf;
			mh.msg_controllen = sizeof(cm.buf);
			cmsg = CMSG_FIRSTHDR(&mh);
			cmsg->cmsg_level = SOL_SOCKET;
			cmsg->cmsg_type = SCM_RIGHTS;
			cmsg->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cmsg), &tx->fd, sizeof(int));
		}
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		err = io_err(n);
		if (err == -EINTR)
			continue;
		if (err)
			return err;
		tx->fd = -1;	/* the descriptor rode with the first byte */
		tx->left -= (size_t)n;
		while (tx->next < 3 && (size_t)n >= tx->iov[tx->next].iov_len)
			n -= (ssize_t)tx->iov[tx->next++].iov_len;
		if (tx->next < 3) {
			tx->iov[tx->next].iov_base = (uint8_t *)tx->iov[tx->next].iov_base + n;
			tx->iov[tx->next].iov_len -= (size_t)n;
		}
	}
	return 0;
}

int avfs_proto_send(int sock, uint16_t type, uint64_t tag, const void *msg, size_t len,
		    int fd, int timeout_ms)
{
	struct avfs_proto_tx tx;
	int err = avfs_proto_tx_init(&tx, type, tag, msg, len, NULL, 0, fd);

	while (!err && (err = avfs_proto_tx_send(sock, &tx)) == -EAGAIN)
		err = wait_for(sock, POLLOUT, timeout_ms);
	return err;
}

/* ---- receiving ---- */

size_t avfs_proto_reply_size(uint16_t type)
{
	switch (type) {
	case AVFS_MSG_HELLO: return sizeof(struct avfs_msg_hello_reply);
	case AVFS_MSG_OPEN:
	case AVFS_MSG_OPEN_PATH: return sizeof(struct avfs_msg_open_reply);
	case AVFS_MSG_IO: return sizeof(struct avfs_msg_io_reply);
	case AVFS_MSG_CANCEL: return sizeof(struct avfs_msg_cancel_reply);
	case AVFS_MSG_SHM: return sizeof(struct avfs_msg_shm_reply);
	case AVFS_MSG_RESERVE: return sizeof(struct avfs_msg_reserve_reply);
	case AVFS_MSG_RELEASE: return sizeof(struct avfs_msg_release_reply);
	case AVFS_MSG_STATS: return sizeof(struct avfs_msg_stats_reply);
	case AVFS_MSG_ADMIN: return sizeof(struct avfs_msg_admin_reply);
	case AVFS_MSG_TRACE: return sizeof(struct avfs_msg_trace_reply);
	case AVFS_MSG_PLACE: return sizeof(struct avfs_msg_place_reply);
	default: return 0;
	}
}

/* the largest payload a reply of type may carry: text replies are longer than any I/O */
static size_t reply_limit(uint16_t type)
{
	return type == AVFS_MSG_ADMIN || type == AVFS_MSG_TRACE ? AVFS_PROTO_MAX_TEXT :
	       AVFS_PROTO_MAX_PAYLOAD;
}

static void rx_phase(struct avfs_proto_rx *rx, enum rx_phase phase, size_t need)
{
	rx->phase = phase;
	rx->need = need;
	rx->have = 0;
}

void avfs_proto_rx_init(struct avfs_proto_rx *rx)
{
	rx->dst = NULL;
	rx->start = rx->end = 0;
	rx_phase(rx, RX_HDR, sizeof(rx->hdr));
}

/* the current phase has all its bytes: enter the next; an event to report, 0 or -EPROTO */
static int rx_step(struct avfs_proto_rx *rx)
{
	size_t fixed;

	switch (rx->phase) {
	case RX_HDR:
		rx->type = (uint16_t)(rx->hdr.type & ~AVFS_MSG_REPLY);
		fixed = avfs_proto_reply_size(rx->type);
		if (rx->hdr.magic != AVFS_PROTO_MAGIC || !(rx->hdr.type & AVFS_MSG_REPLY) ||
		    rx->hdr.len > reply_limit(rx->type) || rx->hdr.len < fixed)
			return -EPROTO;
		memset(&rx->fixed, 0, sizeof(rx->fixed));
		rx_phase(rx, RX_FIXED, fixed);
		return 0;
	case RX_FIXED:
		rx->rest = rx->hdr.len - rx->need;
		rx->dst = NULL;
		rx_phase(rx, RX_REST, rx->rest);
		return AVFS_PROTO_RX_FIXED;
	default:
		rx_phase(rx, RX_HDR, sizeof(rx->hdr));
		return AVFS_PROTO_RX_DONE;
	}
}

/* where the bytes of the current phase go; NULL: skipped */
static uint8_t *rx_target(struct avfs_proto_rx *rx)
{
	switch (rx->phase) {
	case RX_HDR: return (uint8_t *)&rx->hdr;
	case RX_FIXED: return (uint8_t *)&rx->fixed;
	default: return rx->dst;
	}
}

int avfs_proto_rx_next(int sock, struct avfs_proto_rx *rx)
{
	for (;;) {
		uint8_t *to;
		size_t take;
		ssize_t n;
		int ev;

		while (rx->have == rx->need) {	/* ends: a header always needs bytes */
			ev = rx_step(rx);
			if (ev)
				return ev;
		}
		to = rx_target(rx);
		if (rx->start < rx->end) {
			take = rx->end - rx->start;
			if (take > rx->need - rx->have)
				take = rx->need - rx->have;
			if (to)
				memcpy(to + rx->have, rx->buf + rx->start, take);
			rx->start += take;
			rx->have += take;
			continue;
		}
		/* nothing buffered: the rest of a reply goes straight to its destination */
		rx->start = rx->end = 0;
		if (rx->phase == RX_REST && to)
			n = recv(sock, to + rx->have, rx->need - rx->have, MSG_DONTWAIT);
		else
			n = recv(sock, rx->buf, sizeof(rx->buf), MSG_DONTWAIT);
		ev = io_err(n);
		if (ev == -EINTR)
			continue;
		if (ev)
			return ev;
		if (rx->phase == RX_REST && to)
			rx->have += (size_t)n;
		else
			rx->end = (size_t)n;
	}
}

int avfs_proto_wait(int sock, struct avfs_proto_rx *rx, uint16_t type, uint64_t tag,
		    void *fixed, size_t flen, void **rest, size_t *rest_len, int timeout_ms)
{
	uint8_t *buf = NULL;
	bool ours = false;
	int ev;

	if (flen > avfs_proto_reply_size(type))
		return -EINVAL;
	for (;;) {
		ev = avfs_proto_rx_next(sock, rx);
		if (ev == -EAGAIN) {
			ev = wait_for(sock, POLLIN, timeout_ms);
			if (ev)
				goto fail;
			continue;
		}
		if (ev < 0)
			goto fail;
		if (ev == AVFS_PROTO_RX_DONE) {
			if (ours)	/* one reply at a time: the one whose head was ours */
				break;
			continue;
		}
		if (rx->hdr.tag != tag)
			continue;	/* another tag's reply: skipped */
		if (rx->type != type) {
			ev = -EPROTO;
			goto fail;
		}
		ours = true;
		memcpy(fixed, &rx->fixed, flen);
		if (rest) {
			buf = malloc(rx->rest + 1);
			if (!buf) {
				ev = -ENOMEM;
				goto fail;
			}
			rx->dst = buf;
		}
	}
	if (rest) {
		buf[rx->rest] = '\0';
		*rest = buf;
		*rest_len = rx->rest;
	}
	return 0;

fail:
	if (buf && rx->dst == buf)
		rx->dst = NULL;	/* the rest of the reply, if read later, is skipped */
	free(buf);
	return ev;
}

int avfs_proto_call(int sock, struct avfs_proto_rx *rx, uint16_t type, uint64_t tag,
		    const void *msg, size_t len, int fd, void *reply, size_t rlen, int timeout_ms)
{
	int err = avfs_proto_send(sock, type, tag, msg, len, fd, timeout_ms);

	if (!err)
		err = avfs_proto_wait(sock, rx, type, tag, reply, rlen, NULL, NULL, timeout_ms);
	return err;
}

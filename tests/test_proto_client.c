/* test_proto_client.c — the client side of the wire protocol (proto/client.c) without a
 * daemon: the socket's extended attribute, framing and partial sends with a descriptor, the
 * reply parser fed byte by byte and in bulk, malformed replies, and the blocking round trip
 * against a socketpair or a listening thread (HELLO accepted, refused, hung up). */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <setjmp.h>	/* cmocka needs these three first */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static char tmpdir[64];

/* a reply as the daemon frames it, written whole to s */
static void put_reply(int s, uint16_t type, uint64_t tag, const void *m, size_t len,
		      const void *data, size_t dlen)
{
	struct avfs_msg_hdr h = { .magic = AVFS_PROTO_MAGIC, .type = type | AVFS_MSG_REPLY,
				  .len = (uint32_t)(len + dlen), .tag = tag };

	assert_int_equal(write(s, &h, sizeof(h)), sizeof(h));
	if (len)
		assert_int_equal(write(s, m, len), (ssize_t)len);
	if (dlen)
		assert_int_equal(write(s, data, dlen), (ssize_t)dlen);
}

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

/* Proves: the socket path comes from the xattr with or without its NUL; absent, too long. */
static void test_proto_client_socket_xattr(void **state)
{
	char file[128], path[AVFS_PROTO_PATH_MAX];
	int fd, err;

	(void)state;
	snprintf(file, sizeof(file), "%s/file", tmpdir);
	fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	err = avfs_proto_socket_fd(fd, path, sizeof(path));
	assert_true(err == -ENODATA || err == -ENOTSUP);
	assert_int_equal(avfs_proto_socket_fd(-1, path, sizeof(path)), -EBADF);
	if (fsetxattr(fd, AVFS_XATTR_SOCKET, "/run/avfs/a.sock", 16, 0)) {
		printf("# no user xattrs on %s (%s): the rest of this test skipped\n", tmpdir,
		       strerror(errno));
		goto out;
	}
	assert_int_equal(avfs_proto_socket_fd(fd, path, sizeof(path)), 0);
	assert_string_equal(path, "/run/avfs/a.sock");
	assert_int_equal(fsetxattr(fd, AVFS_XATTR_SOCKET, "/run/b.sock", 12, 0), 0);	/* + NUL */
	assert_int_equal(avfs_proto_socket_file(file, path, sizeof(path)), 0);
	assert_string_equal(path, "/run/b.sock");
	assert_int_equal(avfs_proto_socket_file(file, path, 8), -ERANGE);
	assert_int_equal(avfs_proto_socket_file(file, path, 1), -ERANGE);
out:
	close(fd);
	unlink(file);
}

/* reads one message from s (blocking), catching a descriptor passed with it */
static size_t take_msg(int s, uint8_t *buf, size_t cap, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { buf, cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(s, &mh, MSG_DONTWAIT);

	if (n < 0)
		return 0;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			assert_int_equal(*fd, -1);	/* once only */
			memcpy(fd, CMSG_DATA(c), sizeof(int));
		}
	return (size_t)n;
}

/*
 * Proves: a message larger than the socket's buffer goes out in pieces (-EAGAIN in between,
 * tx.left counting down), framed as header + fixed struct + data, with the descriptor
 * delivered once, with its first byte; oversized messages are refused.
 */
static void test_proto_client_tx_partial_fd(void **state)
{
	const size_t dlen = 1 << 20, total = sizeof(struct avfs_msg_hdr) + 8 + dlen;
	struct avfs_msg_shm m = { .size = 12345 };
	struct avfs_proto_tx tx;
	struct avfs_msg_hdr h;
	uint8_t *data = malloc(dlen), *got = malloc(total);
	int sv[2], p[2], fd = -1, small = 4096, err, partial = 0;
	struct stat a, b;
	size_t have = 0;

	(void)state;
	pair(sv);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	for (size_t i = 0; i < dlen; i++)
		data[i] = (uint8_t)(i * 7);
	assert_int_equal(avfs_proto_tx_init(&tx, AVFS_MSG_SHM, 99, &m, sizeof(m), data, dlen,
					    p[0]), 0);
	while ((err = avfs_proto_tx_send(sv[0], &tx)) == -EAGAIN) {
		assert_true(tx.left > 0 && tx.left < total);
		partial++;
		have += take_msg(sv[1], got + have, total - have, &fd);
	}
	assert_int_equal(err, 0);
	assert_int_equal(tx.left, 0);
	assert_true(partial > 0);
	while (have < total) {
		size_t n = take_msg(sv[1], got + have, total - have, &fd);

		assert_true(n > 0);
		have += n;
	}
	memcpy(&h, got, sizeof(h));
	assert_int_equal(h.magic, AVFS_PROTO_MAGIC);
	assert_int_equal(h.type, AVFS_MSG_SHM);
	assert_int_equal(h.len, sizeof(m) + dlen);
	assert_int_equal(h.tag, 99);
	assert_memory_equal(got + sizeof(h), &m, sizeof(m));
	assert_memory_equal(got + sizeof(h) + sizeof(m), data, dlen);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(p[0], &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(avfs_proto_tx_init(&tx, AVFS_MSG_IO, 1, &m, sizeof(m), data,
					    AVFS_PROTO_MAX_PAYLOAD, -1), -EMSGSIZE);
	close(fd);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	free(data);
	free(got);
}

/* three replies: an inline read (data to its buffer), one of an unknown type (skipped), STATS */
static void write_three(int s, const uint8_t *data, size_t dlen)
{
	struct avfs_msg_io_reply io = { .res = (int64_t)dlen };
	struct avfs_msg_stats_reply st = { .requests = 3, .misses = 1, .margin_min_ns = -5 };
	uint8_t junk[100];

	memset(junk, 0xee, sizeof(junk));
	put_reply(s, AVFS_MSG_IO, 1, &io, sizeof(io), data, dlen);
	put_reply(s, 0x7f, 2, NULL, 0, junk, sizeof(junk));
	put_reply(s, AVFS_MSG_STATS, 3, &st, sizeof(st), NULL, 0);
}

/*
 * Runs the three replies through rx: in bulk (all buffered at once) or one byte at a time
 * (every phase split, the read's data received straight into its buffer).
 */
static void parse_three(int bytewise)
{
	const size_t dlen = 3 * 4096;
	struct avfs_proto_rx *rx = malloc(sizeof(*rx));
	uint8_t *data = malloc(dlen), *dst = calloc(1, dlen), *stream;
	int sv[2], tx[2], ev, events[6], nev = 0, eagain = 0;
	size_t len, off = 0;

	pair(sv);
	pair(tx);
	for (size_t i = 0; i < dlen; i++)
		data[i] = (uint8_t)(i % 251);
	/* the whole byte stream, from a second pair, so that it can be fed in any pieces */
	write_three(tx[0], data, dlen);
	close(tx[0]);
	stream = malloc(dlen + 1024);
	len = 0;
	for (ssize_t n; (n = read(tx[1], stream + len, dlen + 1024 - len)) > 0;)
		len += (size_t)n;
	close(tx[1]);
	if (!bytewise) {
		assert_int_equal(write(sv[1], stream, len), (ssize_t)len);
		off = len;
	}
	avfs_proto_rx_init(rx);
	while (nev < 6) {
		ev = avfs_proto_rx_next(sv[0], rx);
		if (ev == -EAGAIN) {
			assert_true(bytewise && off < len);
			assert_int_equal(write(sv[1], stream + off++, 1), 1);
			eagain++;
			continue;
		}
		events[nev++] = ev;
		if (ev != AVFS_PROTO_RX_FIXED)
			continue;
		switch (rx->hdr.tag) {
		case 1:
			assert_int_equal(rx->type, AVFS_MSG_IO);
			assert_int_equal(rx->fixed.io.res, (int64_t)dlen);
			assert_int_equal(rx->rest, dlen);
			rx->dst = dst;
			break;
		case 2:
			assert_int_equal(rx->type, 0x7f);
			assert_int_equal(rx->rest, 100);
			break;
		case 3:
			assert_int_equal(rx->type, AVFS_MSG_STATS);
			assert_int_equal(rx->fixed.stats.requests, 3);
			assert_int_equal(rx->fixed.stats.misses, 1);
			assert_int_equal(rx->fixed.stats.margin_min_ns, -5);
			assert_int_equal(rx->rest, 0);
			break;
		default:
			fail_msg("tag %llu", (unsigned long long)rx->hdr.tag);
		}
	}
	for (int i = 0; i < 6; i++)
		assert_int_equal(events[i], i % 2 ? AVFS_PROTO_RX_DONE : AVFS_PROTO_RX_FIXED);
	assert_memory_equal(dst, data, dlen);
	assert_int_equal(off, len);
	assert_int_equal(avfs_proto_rx_next(sv[0], rx), -EAGAIN);
	if (bytewise)
		assert_true(eagain > 3 * (int)sizeof(struct avfs_msg_hdr));
	close(sv[1]);
	assert_int_equal(avfs_proto_rx_next(sv[0], rx), -ENOTCONN);
	close(sv[0]);
	free(stream);
	free(data);
	free(dst);
	free(rx);
}

/* Proves: replies parse the same in bulk and split at every byte; unknown types are skipped. */
static void test_proto_client_rx_pieces(void **state)
{
	(void)state;
	parse_three(0);
	parse_three(1);
}

/* one reply header (and len bytes of zeros) through a fresh parser: its first event */
static int parse_one(const struct avfs_msg_hdr *h)
{
	struct avfs_proto_rx *rx = malloc(sizeof(*rx));
	uint8_t zeros[64] = { 0 };
	int sv[2], ev;

	pair(sv);
	assert_int_equal(write(sv[1], h, sizeof(*h)), sizeof(*h));
	assert_int_equal(write(sv[1], zeros, sizeof(zeros)), sizeof(zeros));
	avfs_proto_rx_init(rx);
	ev = avfs_proto_rx_next(sv[0], rx);
	close(sv[0]);
	close(sv[1]);
	free(rx);
	return ev;
}

/* Proves: a bad magic, a request, a short or oversized reply are -EPROTO; text may be longer. */
static void test_proto_client_rx_malformed(void **state)
{
	struct avfs_msg_hdr ok = { .magic = AVFS_PROTO_MAGIC, .type = AVFS_MSG_IO | AVFS_MSG_REPLY,
				   .len = sizeof(struct avfs_msg_io_reply), .tag = 1 };
	struct avfs_msg_hdr h;

	(void)state;
	assert_int_equal(parse_one(&ok), AVFS_PROTO_RX_FIXED);
	h = ok;
	h.magic ^= 1;
	assert_int_equal(parse_one(&h), -EPROTO);
	h = ok;
	h.type = AVFS_MSG_IO;	/* not a reply */
	assert_int_equal(parse_one(&h), -EPROTO);
	h = ok;
	h.len = sizeof(struct avfs_msg_io_reply) - 1;	/* shorter than its fixed struct */
	assert_int_equal(parse_one(&h), -EPROTO);
	h = ok;
	h.len = AVFS_PROTO_MAX_PAYLOAD + 1;
	assert_int_equal(parse_one(&h), -EPROTO);
	h.type = AVFS_MSG_ADMIN | AVFS_MSG_REPLY;	/* JSON may exceed an I/O's payload */
	assert_int_equal(parse_one(&h), AVFS_PROTO_RX_FIXED);
	h.len = AVFS_PROTO_MAX_TEXT + 1;
	assert_int_equal(parse_one(&h), -EPROTO);
}

/*
 * Proves: the blocking wait skips other tags' replies, returns the fixed struct and the rest
 * NUL-terminated, and fails with -ETIMEDOUT (silence), -EPROTO (another type to the tag),
 * -EINVAL (a fixed struct larger than the type's) and -ENOTCONN (hung up).
 */
static void test_proto_client_wait(void **state)
{
	static const char json[] = "{\"clients\": 1}";
	struct avfs_proto_rx *rx = malloc(sizeof(*rx));
	struct avfs_msg_admin_reply ar = { .res = 0 }, got;
	struct avfs_msg_release_reply rr = { .res = -ENOENT }, rgot;
	struct avfs_msg_io_reply io = { .res = 4096 };
	uint8_t data[4096] = { 0 };
	void *rest = NULL;
	size_t rest_len = 0;
	int sv[2];

	(void)state;
	pair(sv);
	avfs_proto_rx_init(rx);
	put_reply(sv[1], AVFS_MSG_IO, 5, &io, sizeof(io), data, sizeof(data));	/* not ours */
	put_reply(sv[1], AVFS_MSG_ADMIN, 6, &ar, sizeof(ar), json, strlen(json));
	assert_int_equal(avfs_proto_wait(sv[0], rx, AVFS_MSG_ADMIN, 6, &got, sizeof(got), &rest,
					 &rest_len, 1000), 0);
	assert_int_equal(got.res, 0);
	assert_int_equal(rest_len, strlen(json));
	assert_string_equal(rest, json);
	free(rest);

	put_reply(sv[1], AVFS_MSG_RELEASE, 7, &rr, sizeof(rr), NULL, 0);
	assert_int_equal(avfs_proto_call(sv[0], rx, AVFS_MSG_RELEASE, 7, &rr, sizeof(rr), -1, &rgot,
					 sizeof(rgot), 1000), 0);
	assert_int_equal(rgot.res, -ENOENT);
	assert_int_equal(avfs_proto_wait(sv[0], rx, AVFS_MSG_RELEASE, 8, &rgot, sizeof(rgot), NULL,
					 NULL, 50), -ETIMEDOUT);
	assert_int_equal(avfs_proto_wait(sv[0], rx, AVFS_MSG_RELEASE, 8, &rgot, sizeof(rgot) + 1,
					 NULL, NULL, 50), -EINVAL);
	put_reply(sv[1], AVFS_MSG_ADMIN, 8, &ar, sizeof(ar), NULL, 0);
	assert_int_equal(avfs_proto_wait(sv[0], rx, AVFS_MSG_RELEASE, 8, &rgot, sizeof(rgot), NULL,
					 NULL, 1000), -EPROTO);
	avfs_proto_rx_init(rx);
	while (recv(sv[1], data, sizeof(data), MSG_DONTWAIT) > 0)
		;	/* the request sent above: unread, it would make the close a reset */
	close(sv[1]);
	assert_int_equal(avfs_proto_wait(sv[0], rx, AVFS_MSG_RELEASE, 9, &rgot, sizeof(rgot), NULL,
					 NULL, 1000), -ENOTCONN);
	close(sv[0]);
	free(rx);
}

/* ---- a listening daemon of one HELLO ---- */

enum hello_mode { HELLO_OK, HELLO_REFUSE, HELLO_HANG_UP };

struct listener {
	int lsock;
	enum hello_mode mode;
	struct avfs_msg_hdr got;
	pthread_t tid;
};

static void *listener_main(void *arg)
{
	struct listener *l = arg;
	struct avfs_msg_hello m;
	struct avfs_msg_hello_reply r = { .version = AVFS_PROTO_VERSION, .max_io = 1 << 20,
					  .queue = 32 };
	int c = accept(l->lsock, NULL, NULL);

	if (c < 0)
		return NULL;
	if (read(c, &l->got, sizeof(l->got)) == sizeof(l->got) &&
	    read(c, &m, sizeof(m)) == sizeof(m) && l->mode != HELLO_HANG_UP) {
		if (l->mode == HELLO_REFUSE || m.version != AVFS_PROTO_VERSION)
			r.res = -EPROTONOSUPPORT;
		put_reply(c, AVFS_MSG_HELLO, l->got.tag, &r, sizeof(r), NULL, 0);
	}
	close(c);
	return NULL;
}

/* connect to a fresh listener in mode: avfs_proto_connect's result */
static int connect_mode(enum hello_mode mode, struct avfs_msg_hello_reply *hello,
			struct avfs_msg_hdr *sent)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct avfs_proto_rx *rx = malloc(sizeof(*rx));
	struct listener l = { .mode = mode };
	int s;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/avfsd.sock", tmpdir);
	l.lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(l.lsock, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(l.lsock, 1), 0);
	assert_int_equal(pthread_create(&l.tid, NULL, listener_main, &l), 0);
	s = avfs_proto_connect(sun.sun_path, rx, hello, 2000);
	pthread_join(l.tid, NULL);
	close(l.lsock);
	unlink(sun.sun_path);
	*sent = l.got;
	free(rx);
	return s;
}

/* Proves: connect says HELLO and returns the socket; refusals and failures are -errno. */
static void test_proto_client_connect(void **state)
{
	struct avfs_proto_rx *rx = malloc(sizeof(*rx));
	char path[256];
	struct avfs_msg_hello_reply hello;
	struct avfs_msg_hdr sent;
	int s;

	(void)state;
	s = connect_mode(HELLO_OK, &hello, &sent);
	assert_true(s >= 0);
	assert_int_equal(sent.magic, AVFS_PROTO_MAGIC);
	assert_int_equal(sent.type, AVFS_MSG_HELLO);
	assert_int_equal(sent.len, sizeof(struct avfs_msg_hello));
	assert_int_equal(sent.tag, AVFS_PROTO_HELLO_TAG);
	assert_int_equal(hello.res, 0);
	assert_int_equal(hello.max_io, 1 << 20);
	assert_int_equal(hello.queue, 32);
	close(s);
	assert_int_equal(connect_mode(HELLO_REFUSE, &hello, &sent), -EPROTO);
	assert_int_equal(connect_mode(HELLO_HANG_UP, &hello, &sent), -ENOTCONN);

	snprintf(path, sizeof(path), "%s/nobody.sock", tmpdir);
	assert_int_equal(avfs_proto_connect(path, rx, &hello, 100), -ENOENT);
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(avfs_proto_connect(path, rx, &hello, 100), -ENAMETOOLONG);
	free(rx);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_proto_client.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proto_client_socket_xattr),
		cmocka_unit_test(test_proto_client_tx_partial_fd),
		cmocka_unit_test(test_proto_client_rx_pieces),
		cmocka_unit_test(test_proto_client_rx_malformed),
		cmocka_unit_test(test_proto_client_wait),
		cmocka_unit_test(test_proto_client_connect),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * rawclient.c — the protocol spoken by hand, for the daemon tests that must send what libavio
 * never would (test_daemon_avio, test_daemon_hostile), and the helpers they share: a scenario
 * in a child process, one libavio request start to end. See rawclient.h.
 */
#include "rawclient.h"

#include <grp.h>

#include <avio.h>
#include "clock.h"
#include "daemon_harness.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* run fn in a child process within timeout_s; true when it exited 0 */
bool become(uid_t uid, gid_t extra)
{
	gid_t g = extra;

	return !setgroups(extra ? 1 : 0, &g) && !setresgid(uid, uid, uid) &&
	       !setresuid(uid, uid, uid);
}

bool in_child(const char *what, int timeout_s, int (*fn)(void *), void *arg)
{
	pid_t pid;
	int st = 0, i;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	for (i = 0; i < timeout_s * 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		usleep(10000);
	}
	if (i == timeout_s * 100) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		note("%s: still running after %d s, killed", what, timeout_s);
		return false;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		note("%s: child %s %d", what, WIFSIGNALED(st) ? "killed by signal" : "exit status",
		     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		return false;
	}
	return true;
}

/* start and wait for one request; its aio_ret, or the start's error */
ssize_t avio_sync(int fd, int op, void *buf, uint64_t off, size_t len, int64_t deadline)
{
	avfs_asyncio_t a = { .aio_fildes = fd, .aio_offset = (off_t)off, .aio_buf = buf,
			     .aio_nbytes = len, .aio_deadline = deadline };
	int err = avfs_asyncio_start(&a, op);

	if (err)
		return err;
	err = avfs_asyncio_check(&a, AVFS_WAIT);
	return err ? err : a.aio_ret;
}

int raw_connect(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
	if (s >= 0 && connect(s, (struct sockaddr *)&sun, sizeof(sun))) {
		close(s);
		return -1;
	}
	return s;
}

bool raw_send(int s, uint16_t type, uint64_t tag, const void *m, size_t len,
		     const void *data, size_t dlen)
{
	struct avfs_msg_hdr h = { .magic = AVFS_PROTO_MAGIC, .type = type,
				  .len = (uint32_t)(len + dlen), .tag = tag };
	struct iovec iov[3] = { { &h, sizeof(h) }, { (void *)m, len }, { (void *)data, dlen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
	size_t want = sizeof(h) + len + dlen;
	ssize_t n = sendmsg(s, &mh, MSG_NOSIGNAL);

	return n == (ssize_t)want;	/* small messages on a fresh socket go in one piece */
}

/* receive one reply (header + payload into buf), waiting at most ms */
bool raw_recv(int s, struct avfs_msg_hdr *h, void *buf, size_t cap, int ms)
{
	size_t have = 0, want = sizeof(*h);
	uint8_t *p = (uint8_t *)h;
	int64_t until = avfs_clock_ns() + (int64_t)ms * 1000000;

	for (int part = 0; part < 2; part++) {
		while (have < want) {
			struct pollfd pfd = { .fd = s, .events = POLLIN };
			ssize_t n;

			if (poll(&pfd, 1, (int)((until - avfs_clock_ns()) / 1000000) + 1) != 1)
				return false;
			n = recv(s, p + have, want - have, 0);
			if (n <= 0)
				return false;
			have += (size_t)n;
		}
		if (part == 0) {
			if (h->magic != AVFS_PROTO_MAGIC || h->len > cap)
				return false;
			p = buf;
			have = 0;
			want = h->len;
		}
	}
	return true;
}

/* the daemon closed s: EOF (after any replies) within ms */
bool raw_closed(int s, int ms)
{
	static uint8_t sink[1 << 16];	/* per process */
	int64_t until = avfs_clock_ns() + (int64_t)ms * 1000000;

	while (avfs_clock_ns() < until) {
		struct pollfd pfd = { .fd = s, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 100) != 1)
			continue;
		n = recv(s, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

/* true once the peer has closed s, seen by poll alone: no byte of s is read */
bool hung_up(int s, int ms)
{
	struct pollfd pfd = { .fd = s, .events = POLLRDHUP };

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

int raw_open_path(int s, const char *path, uint64_t dev, uint64_t ino, uint32_t access,
		  int32_t *open_res)
{
	struct avfs_msg_open_path om = { .dev = dev, .ino = ino, .access = access };
	uint8_t buf[64];

	*open_res = 1;
	if (!raw_call(s, AVFS_MSG_OPEN_PATH, 2, &om, sizeof(om), path, strlen(path), buf,
		      sizeof(buf), 5000))
		return -1;
	memcpy(open_res, buf, sizeof(*open_res));
	return *open_res ? -1 : (int)((struct avfs_msg_open_reply *)buf)->handle;
}

int raw_hello_open(int s, const char *name, uint32_t access, int32_t *open_res)
{
	struct stat st;
	char p[256];

	path_of(p, sizeof(p), name);
	*open_res = 1;
	if (stat(p, &st) || !raw_hello(s))
		return -1;
	if (!geteuid()) {	/* root: by inode, the way only root may */
		struct avfs_msg_open om = { .dev = st.st_dev, .ino = st.st_ino, .access = access };
		uint8_t buf[64];

		if (!raw_call(s, AVFS_MSG_OPEN, 2, &om, sizeof(om), NULL, 0, buf, sizeof(buf), 5000))
			return -1;
		memcpy(open_res, buf, sizeof(*open_res));
		return *open_res ? -1 : (int)((struct avfs_msg_open_reply *)buf)->handle;
	}
	return raw_open_path(s, p, st.st_dev, st.st_ino, access, open_res);
}

bool raw_send_fd(int s, uint16_t type, uint64_t tag, const void *m, size_t len, int fd)
{
	struct avfs_msg_hdr h = { .magic = AVFS_PROTO_MAGIC, .type = type, .len = (uint32_t)len,
				  .tag = tag };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)m, len } };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)(sizeof(h) + len);
}

bool raw_hello(int s)
{
	struct avfs_msg_hello hello = { .version = AVFS_PROTO_VERSION };
	struct avfs_msg_hdr h;
	uint8_t buf[64];

	return raw_send(s, AVFS_MSG_HELLO, 1, &hello, sizeof(hello), NULL, 0) &&
	       raw_recv(s, &h, buf, sizeof(buf), 5000) &&
	       h.type == (AVFS_MSG_HELLO | AVFS_MSG_REPLY) &&
	       ((struct avfs_msg_hello_reply *)buf)->res == 0;
}

bool raw_call(int s, uint16_t type, uint64_t tag, const void *m, size_t len, const void *data,
	      size_t dlen, void *reply, size_t cap, int ms)
{
	struct avfs_msg_hdr h;

	if (!raw_send(s, type, tag, m, len, data, dlen))
		return false;
	do {
		if (!raw_recv(s, &h, reply, cap, ms))
			return false;
	} while (h.tag != tag);
	return h.type == (type | AVFS_MSG_REPLY);
}

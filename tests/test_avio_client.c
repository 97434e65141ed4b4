/*
 * test_avio_client.c — libavio without avfsd: argument and descriptor errors, deadlines past,
 * no daemon, the buffer allocator; then the protocol against a fake daemon thread in this
 * process (inline and shared-memory data, threads, cancel, the queue bound, daemon death).
 * Tests run in order: the connection is per process, and the last test kills it.
 */
#include <avio.h>
#include "clock.h"
#include "pattern.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#define IO 4096
#define HOLD_OFF (UINT64_C(1) << 30)	/* the fake daemon answers these only on cancel */

static char tmpdir[64];
static char file_path[128];

static int open_file(int flags)
{
	int fd = open(file_path, flags | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

/* ---- daemon-less ---- */

static void test_avio_client_einval(void **state)
{
	static uint8_t buf[2 * IO];
	avfs_asyncio_t aio = { 0 };
	int fd = open_file(O_RDWR);

	(void)state;
	assert_int_equal(avfs_asyncio_start(NULL, AVFS_READ), -EINVAL);
	aio = (avfs_asyncio_t){ .aio_fildes = fd, .aio_buf = buf, .aio_nbytes = IO };
	assert_int_equal(avfs_asyncio_start(&aio, 7), -EINVAL);
	aio.aio_offset = 512;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EINVAL);
	aio.aio_offset = -IO;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EINVAL);
	aio.aio_offset = 0;
	aio.aio_nbytes = 0;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EINVAL);
	aio.aio_nbytes = 100;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_WRITE), -EINVAL);
	aio.aio_nbytes = AVFS_PROTO_MAX_IO + IO;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EINVAL);
	aio.aio_nbytes = IO;
	aio.aio_buf = NULL;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EINVAL);
	aio.aio_buf = buf;
	aio.aio_deadline = -1;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EINVAL);
	close(fd);
}

static void test_avio_client_ebadf(void **state)
{
	static uint8_t buf[IO];
	avfs_asyncio_t aio = { .aio_buf = buf, .aio_nbytes = IO };
	int fd, dfd;

	(void)state;
	unsetenv("AVFS_SOCKET");
	aio.aio_fildes = -1;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EBADF);
	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	aio.aio_fildes = dfd;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EBADF);
	close(dfd);
	fd = open_file(O_RDONLY);
	aio.aio_fildes = fd;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_WRITE), -EBADF);	/* not open for it */
	/* a regular file elsewhere: no user.avfs.socket attribute */
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -EBADF);
	assert_int_equal(avfs_asyncio_check(&aio, AVFS_NOWAIT), -EINVAL);	/* not started */
	close(fd);
}

static void test_avio_client_etime(void **state)
{
	static uint8_t buf[IO];
	avfs_asyncio_t aio = { .aio_buf = buf, .aio_nbytes = IO, .aio_deadline = 1 };
	int fd = open_file(O_RDWR);

	(void)state;
	/* even with no daemon anywhere: refused before connecting */
	setenv("AVFS_SOCKET", "/nonexistent/avfs.sock", 1);
	aio.aio_fildes = fd;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -ETIME);
	aio.aio_deadline = avfs_clock_ns() - 1000000;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_WRITE), -ETIME);
	aio.aio_deadline = avfs_clock_ns();
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -ETIME);
	close(fd);
}

static void test_avio_client_enotconn(void **state)
{
	static uint8_t buf[IO];
	avfs_asyncio_t aio = { .aio_buf = buf, .aio_nbytes = IO };
	char path[160];
	int fd = open_file(O_RDWR), s;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	(void)state;
	aio.aio_fildes = fd;
	assert_int_equal(avfs_completion_fd(), -ENOTCONN);
	setenv("AVFS_SOCKET", "/nonexistent/avfs.sock", 1);
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -ENOTCONN);
	/* a socket file nobody listens on */
	snprintf(path, sizeof(path), "%s/dead.sock", tmpdir);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sun.sun_path, path);
	assert_int_equal(bind(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(s);
	setenv("AVFS_SOCKET", path, 1);
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), -ENOTCONN);
	assert_int_equal(avfs_asyncio_check(&aio, AVFS_WAIT), -EINVAL);
	assert_int_equal(avfs_completion_fd(), -ENOTCONN);
	unlink(path);
	close(fd);
}

static void test_avio_client_not_started(void **state)
{
	avfs_asyncio_t aio = { 0 };
	avfs_asyncio_t *list[2] = { NULL, &aio };

	(void)state;
	assert_int_equal(avfs_asyncio_check(NULL, AVFS_WAIT), -EINVAL);
	assert_int_equal(avfs_asyncio_check(&aio, AVFS_WAIT), -EINVAL);
	assert_int_equal(avfs_asyncio_check(&aio, 9), -EINVAL);
	assert_int_equal(avfs_asyncio_cancel(&aio), -EINVAL);
	assert_int_equal(avfs_asyncio_cancel(NULL), -EINVAL);
	assert_int_equal(avfs_asyncio_poll(list, 2, 0), -EINVAL);
	assert_int_equal(avfs_asyncio_poll(NULL, 1, 0), -EINVAL);
	assert_int_equal(avfs_asyncio_poll(list, -1, 0), -EINVAL);
	assert_int_equal(avfs_asyncio_poll(list, 1, 100), 0);	/* NULL entries only */
	assert_int_equal(avfs_asyncio_poll(NULL, 0, 100), 0);
}

static void test_avio_client_buf_alloc(void **state)
{
	void *a, *b, *big[4], *c;
	int i;

	(void)state;
	errno = 0;
	assert_null(avfs_buf_alloc(0));
	assert_int_equal(errno, EINVAL);
	a = avfs_buf_alloc(1);
	b = avfs_buf_alloc(IO + 1);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal((uintptr_t)a % IO, 0);
	assert_int_equal((uintptr_t)b % IO, 0);
	assert_true((uint8_t *)b >= (uint8_t *)a + IO || (uint8_t *)a >= (uint8_t *)b + 2 * IO);
	memset(a, 1, IO);
	memset(b, 2, 2 * IO);
	avfs_buf_free(a);
	avfs_buf_free(b);
	avfs_buf_free(NULL);
	/* the 64 MiB region: four 16 MiB buffers fill it, a fifth fails, a freed one returns */
	for (i = 0; i < 4; i++) {
		big[i] = avfs_buf_alloc(16 << 20);
		assert_non_null(big[i]);
	}
	errno = 0;
	assert_null(avfs_buf_alloc(IO));
	assert_int_equal(errno, ENOMEM);
	avfs_buf_free(big[2]);
	c = avfs_buf_alloc(16 << 20);
	assert_ptr_equal(c, big[2]);
	avfs_buf_free((uint8_t *)c + IO);	/* not a buffer's start: ignored */
	assert_null(avfs_buf_alloc(IO));
	for (i = 0; i < 4; i++)
		avfs_buf_free(big[i]);
}

/* reservations refuse bad arguments before any connection: -EINVAL, -EBADF */
static void test_avio_client_reserve_bad_args(void **state)
{
	struct avfs_service svc = { .rate = 1 << 20, .buffer = 4 << 20, .direction = AVFS_READ };
	struct avfs_service bad = svc;
	struct avfs_stream_stats st;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(avfs_reserve(0, NULL), -EINVAL);
	bad.direction = 7;
	assert_int_equal(avfs_reserve(0, &bad), -EINVAL);
	bad = svc;
	bad.rate = 0;
	assert_int_equal(avfs_reserve(0, &bad), -EINVAL);
	assert_int_equal(avfs_reserve_io(0, &svc, 4097), -EINVAL);	/* no multiple of 4 KiB */
	assert_int_equal(avfs_reserve_io(0, &svc, 4 << 20), -EINVAL);	/* not below the buffer */
	assert_int_equal(avfs_reserve_io(-1, &svc, 256 << 10), -EBADF);
	assert_int_equal(avfs_reserve(-1, &svc), -EBADF);
	assert_int_equal(avfs_reserve(p[0], &svc), -EBADF);	/* not a regular file */
	assert_int_equal(avfs_release(-1), -EBADF);
	assert_int_equal(avfs_stream_stats(-1, &st), -EBADF);
	assert_int_equal(avfs_stream_stats(0, NULL), -EINVAL);
	close(p[0]);
	close(p[1]);
}

/* ---- a fake daemon: answers proto.h from a thread of this process ---- */

struct fake {
	int lsock, client, ctl[2], rxfd;
	pthread_t tid;
	char path[108];
	uint8_t *shm;
	size_t shm_size;
	uint64_t held[512];
	int nheld;
	unsigned opens, shms;
};

static struct fake fake;

/* reads n bytes (blocking), catching a descriptor passed with them */
static int fake_read(struct fake *f, void *p, size_t n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;

	while (n) {
		struct iovec iov = { p, n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
		struct cmsghdr *c;
		ssize_t r = recvmsg(f->client, &mh, 0);

		if (r <= 0)
			return -1;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				memcpy(&f->rxfd, CMSG_DATA(c), sizeof(int));
		p = (uint8_t *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

static int fake_reply(struct fake *f, uint16_t type, uint64_t tag, const void *m, size_t len,
		      const void *data, size_t dlen)
{
	struct avfs_msg_hdr h = { .magic = AVFS_PROTO_MAGIC, .type = type | AVFS_MSG_REPLY,
				  .len = (uint32_t)(len + dlen), .tag = tag };
	struct iovec iov[3] = { { &h, sizeof(h) }, { (void *)m, len }, { (void *)data, dlen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
	size_t total = sizeof(h) + len + dlen;

	/* small replies in these tests: one sendmsg moves them whole on a stream socket */
	return sendmsg(f->client, &mh, MSG_NOSIGNAL) == (ssize_t)total ? 0 : -1;
}

static int fake_io(struct fake *f, uint64_t tag, const struct avfs_msg_io *io, uint8_t *data)
{
	struct avfs_msg_io_reply r = { .res = (int64_t)io->nbytes };
	uint8_t *buf = io->where == AVFS_IO_SHM ? f->shm + io->shm_off : NULL;
	int err;

	if (io->offset >= HOLD_OFF) {
		f->held[f->nheld++] = tag;
		return 0;
	}
	if (io->op == AVFS_IO_READ) {
		if (buf) {
			pattern_fill(buf, io->offset, io->nbytes, 0);
			return fake_reply(f, AVFS_MSG_IO, tag, &r, sizeof(r), NULL, 0);
		}
		buf = malloc(io->nbytes);
		pattern_fill(buf, io->offset, io->nbytes, 0);
		err = fake_reply(f, AVFS_MSG_IO, tag, &r, sizeof(r), buf, io->nbytes);
		free(buf);
		return err;
	}
	if (pattern_bad(buf ? buf : data, io->offset, io->nbytes, 0) >= 0)
		r.res = -EIO;
	return fake_reply(f, AVFS_MSG_IO, tag, &r, sizeof(r), NULL, 0);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	struct avfs_msg_hdr h;
	uint8_t *p = NULL;
	int i;

	f->client = accept(f->lsock, NULL, NULL);
	for (;;) {
		struct pollfd pfd[2] = { { f->client, POLLIN, 0 }, { f->ctl[0], POLLIN, 0 } };

		free(p);
		p = NULL;
		poll(pfd, 2, -1);
		if (pfd[1].revents)
			break;	/* the daemon dies */
		if (fake_read(f, &h, sizeof(h)))
			break;
		assert_int_equal(h.magic, AVFS_PROTO_MAGIC);
		p = malloc(h.len + 1);
		if (fake_read(f, p, h.len))
			break;
		switch (h.type) {
		case AVFS_MSG_HELLO: {
			struct avfs_msg_hello_reply r = { 0, AVFS_PROTO_VERSION, AVFS_PROTO_MAX_IO,
							  AVFS_PROTO_QUEUE };
			fake_reply(f, h.type, h.tag, &r, sizeof(r), NULL, 0);
			break;
		}
		case AVFS_MSG_OPEN_PATH:	/* libavio names the file by its path */
			assert_true(h.len > sizeof(struct avfs_msg_open_path) &&
				    p[sizeof(struct avfs_msg_open_path)] == '/');
			/* fall through */
		case AVFS_MSG_OPEN: {
			struct avfs_msg_open_reply r = { 0, 7 };

			f->opens++;
			fake_reply(f, h.type, h.tag, &r, sizeof(r), NULL, 0);
			break;
		}
		case AVFS_MSG_SHM: {
			struct avfs_msg_shm m;
			struct avfs_msg_shm_reply r = { 0, 0 };

			memcpy(&m, p, sizeof(m));
			/* sealed at its size, as avfsd requires */
			assert_int_equal(fcntl(f->rxfd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW),
					 F_SEAL_SHRINK | F_SEAL_GROW);
			f->shm_size = m.size;
			f->shm = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, f->rxfd, 0);
			assert_true(f->shm != MAP_FAILED);
			f->shms++;
			fake_reply(f, h.type, h.tag, &r, sizeof(r), NULL, 0);
			break;
		}
		case AVFS_MSG_IO: {
			struct avfs_msg_io io;

			memcpy(&io, p, sizeof(io));
			fake_io(f, h.tag, &io, p + sizeof(io));
			break;
		}
		case AVFS_MSG_CANCEL: {
			struct avfs_msg_cancel m;
			struct avfs_msg_cancel_reply r = { AVFS_CANCEL_GONE, 0 };
			struct avfs_msg_io_reply ior = { -ECANCELED };

			memcpy(&m, p, sizeof(m));
			for (i = 0; i < f->nheld && f->held[i] != m.target; i++)
				;
			if (i < f->nheld) {
				f->held[i] = f->held[--f->nheld];
				r.res = AVFS_CANCEL_DONE;
			}
			fake_reply(f, h.type, h.tag, &r, sizeof(r), NULL, 0);
			if (r.res == AVFS_CANCEL_DONE)	/* its own reply comes after */
				fake_reply(f, AVFS_MSG_IO, m.target, &ior, sizeof(ior), NULL, 0);
			break;
		}
		default:
			fail_msg("fake daemon: message type %u", h.type);
		}
	}
	free(p);
	close(f->client);
	return NULL;
}

static void fake_start(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	snprintf(fake.path, sizeof(fake.path), "%s/avfsd.sock", tmpdir);
	strcpy(sun.sun_path, fake.path);
	fake.lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(fake.lsock, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fake.lsock, 4), 0);
	assert_int_equal(pipe(fake.ctl), 0);
	assert_int_equal(pthread_create(&fake.tid, NULL, fake_main, &fake), 0);
	setenv("AVFS_SOCKET", fake.path, 1);
}

static void fake_kill(void)
{
	assert_int_equal(write(fake.ctl[1], "x", 1), 1);
	pthread_join(fake.tid, NULL);
	close(fake.lsock);
	close(fake.ctl[0]);
	close(fake.ctl[1]);
	if (fake.shm)
		munmap(fake.shm, fake.shm_size);
	unlink(fake.path);
}

static void rw_one(int fd, void *buf, uint64_t off, size_t n, int op)
{
	avfs_asyncio_t aio = { .aio_fildes = fd, .aio_offset = (off_t)off, .aio_buf = buf,
			       .aio_nbytes = n, .aio_deadline = avfs_clock_ns() + 5000000000 };

	if (op == AVFS_WRITE)
		pattern_fill(buf, off, n, 0);
	else
		memset(buf, 0, n);
	assert_int_equal(avfs_asyncio_start(&aio, op), 0);
	assert_int_equal(avfs_asyncio_check(&aio, AVFS_WAIT), 0);
	assert_int_equal(aio.aio_ret, (ssize_t)n);
	assert_int_equal(avfs_asyncio_check(&aio, AVFS_NOWAIT), 0);	/* stays complete */
	assert_int_equal(avfs_asyncio_cancel(&aio), AVFS_ALLDONE);
	if (op == AVFS_READ)
		assert_int_equal(pattern_bad(buf, off, n, 0), -1);
}

static void test_avio_client_fake_rw(void **state)
{
	uint8_t *plain = aligned_alloc(IO, 64 * IO);
	uint8_t *shared = avfs_buf_alloc(64 * IO);
	int fd = open_file(O_RDWR);

	(void)state;
	fake_start();
	rw_one(fd, plain, 0, IO, AVFS_READ);
	assert_true(avfs_completion_fd() >= 0);
	rw_one(fd, plain + 1, 8 * IO, 64 * IO - IO, AVFS_READ);	/* any buffer alignment */
	rw_one(fd, plain, 3 * IO, 64 * IO, AVFS_WRITE);
	assert_int_equal(fake.shms, 0);
	rw_one(fd, shared, 5 * IO, 64 * IO, AVFS_READ);
	rw_one(fd, shared, 6 * IO, 16 * IO, AVFS_WRITE);
	assert_int_equal(fake.shms, 1);	/* sent once */
	assert_int_equal(fake.opens, 1);	/* one handle per (dev, ino, access) */
	close(fd);
	fd = open_file(O_RDONLY);
	rw_one(fd, plain, 0, IO, AVFS_READ);
	assert_int_equal(fake.opens, 2);
	close(fd);
	free(plain);
	avfs_buf_free(shared);
}

#define THREADS 4
#define PER_THREAD 300

static void *reader_thread(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	int fd = open_file(O_RDWR), i, bad = 0;
	uint8_t *buf = aligned_alloc(IO, 4 * IO);
	avfs_asyncio_t a[2];

	/* two in flight per thread, waited for out of order: one thread's wait completes another's */
	for (i = 0; i < PER_THREAD; i++) {
		uint64_t off = ((t * PER_THREAD + (uint64_t)i) % 1000) * IO;
		avfs_asyncio_t *list[2] = { &a[0], &a[1] };

		memset(a, 0, sizeof(a));
		a[0] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)off,
					 .aio_buf = buf, .aio_nbytes = 2 * IO };
		a[1] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_offset = (off_t)(off + IO),
					 .aio_buf = buf + 2 * IO, .aio_nbytes = 2 * IO };
		if (avfs_asyncio_start(&a[0], AVFS_READ) || avfs_asyncio_start(&a[1], AVFS_READ)) {
			bad++;
			break;
		}
		if (i % 2) {
			if (avfs_asyncio_poll(list, 2, -1) < 1 ||
			    avfs_asyncio_check(&a[0], AVFS_WAIT) ||
			    avfs_asyncio_check(&a[1], AVFS_WAIT))
				bad++;
		} else {
			avfs_asyncio_check(&a[1], AVFS_WAIT);
			avfs_asyncio_check(&a[0], AVFS_WAIT);
		}
		if (a[0].aio_ret != 2 * IO || a[1].aio_ret != 2 * IO ||
		    pattern_bad(buf, off, 2 * IO, 0) >= 0 ||
		    pattern_bad(buf + 2 * IO, off + IO, 2 * IO, 0) >= 0)
			bad++;
	}
	free(buf);
	close(fd);
	return (void *)(uintptr_t)bad;
}

static void test_avio_client_fake_threads(void **state)
{
	pthread_t tid[THREADS];
	void *bad;
	uintptr_t t;

	(void)state;
	for (t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&tid[t], NULL, reader_thread, (void *)t), 0);
	for (t = 0; t < THREADS; t++) {
		pthread_join(tid[t], &bad);
		assert_ptr_equal(bad, NULL);
	}
}

static void test_avio_client_fake_cancel_queue(void **state)
{
	static avfs_asyncio_t aio[AVFS_PROTO_QUEUE + 1];
	static uint8_t buf[IO];
	avfs_asyncio_t *list[1] = { &aio[0] };
	int fd = open_file(O_RDWR), i;
	int64_t t;

	(void)state;
	for (i = 0; i <= (int)AVFS_PROTO_QUEUE; i++)
		aio[i] = (avfs_asyncio_t){ .aio_fildes = fd, .aio_buf = buf, .aio_nbytes = IO,
					   .aio_offset = (off_t)(HOLD_OFF + (uint64_t)i * IO) };
	for (i = 0; i < (int)AVFS_PROTO_QUEUE; i++)
		assert_int_equal(avfs_asyncio_start(&aio[i], AVFS_READ), 0);
	assert_int_equal(avfs_asyncio_start(&aio[AVFS_PROTO_QUEUE], AVFS_READ), -EAGAIN);
	assert_int_equal(avfs_asyncio_start(&aio[0], AVFS_READ), -EBUSY);
	assert_int_equal(avfs_asyncio_check(&aio[0], AVFS_NOWAIT), -EINPROGRESS);
	assert_int_equal(aio[0].aio_ret, -EINPROGRESS);
	t = avfs_clock_ns();
	assert_int_equal(avfs_asyncio_poll(list, 1, 50), 0);
	assert_true(avfs_clock_ns() - t >= 50000000);
	for (i = 0; i < (int)AVFS_PROTO_QUEUE; i++) {
		assert_int_equal(avfs_asyncio_cancel(&aio[i]), AVFS_CANCELED);
		assert_int_equal(avfs_asyncio_check(&aio[i], AVFS_NOWAIT), 0);
		assert_int_equal(aio[i].aio_ret, -ECANCELED);
	}
	/*
	 * Every slot is free again once the daemon's -ECANCELED replies are read; the last one
	 * may still be on its way (-EAGAIN until then).
	 */
	for (i = 0; i < (int)AVFS_PROTO_QUEUE; i++) {
		int err, tries = 0;

		while ((err = avfs_asyncio_start(&aio[i], AVFS_READ)) == -EAGAIN && tries++ < 1000)
			usleep(1000);
		assert_int_equal(err, 0);
	}
	for (i = 0; i < (int)AVFS_PROTO_QUEUE; i++)
		assert_int_equal(avfs_asyncio_cancel(&aio[i]), AVFS_CANCELED);
	close(fd);
}

static void *killer(void *arg)
{
	(void)arg;
	usleep(100000);
	fake_kill();
	return NULL;
}

static void test_avio_client_fake_death(void **state)
{
	static uint8_t buf[IO];
	avfs_asyncio_t aio = { .aio_buf = buf, .aio_nbytes = IO, .aio_offset = (off_t)HOLD_OFF };
	avfs_asyncio_t again;
	int fd = open_file(O_RDWR);
	pthread_t tid;
	int64_t t;

	(void)state;
	aio.aio_fildes = fd;
	again = aio;
	assert_int_equal(avfs_asyncio_start(&aio, AVFS_READ), 0);
	assert_int_equal(pthread_create(&tid, NULL, killer, NULL), 0);
	t = avfs_clock_ns();
	assert_int_equal(avfs_asyncio_check(&aio, AVFS_WAIT), 0);
	assert_int_equal(aio.aio_ret, -ENOTCONN);
	assert_true(avfs_clock_ns() - t < 2000000000);	/* promptly */
	pthread_join(tid, NULL);
	assert_int_equal(avfs_asyncio_start(&again, AVFS_READ), -ENOTCONN);
	assert_int_equal(avfs_completion_fd(), -ENOTCONN);
	close(fd);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/avio-test.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(file_path, sizeof(file_path), "%s/file", tmpdir);
	fd = open(file_path, O_RDWR | O_CREAT, 0644);
	if (fd < 0 || ftruncate(fd, 1 << 20))
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	char path[160];

	(void)state;
	unlink(file_path);
	snprintf(path, sizeof(path), "%s/avfsd.sock", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_avio_client_einval),
		cmocka_unit_test(test_avio_client_ebadf),
		cmocka_unit_test(test_avio_client_etime),
		cmocka_unit_test(test_avio_client_enotconn),
		cmocka_unit_test(test_avio_client_not_started),
		cmocka_unit_test(test_avio_client_buf_alloc),
		cmocka_unit_test(test_avio_client_reserve_bad_args),
		cmocka_unit_test(test_avio_client_fake_rw),
		cmocka_unit_test(test_avio_client_fake_threads),
		cmocka_unit_test(test_avio_client_fake_cancel_queue),
		cmocka_unit_test(test_avio_client_fake_death),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

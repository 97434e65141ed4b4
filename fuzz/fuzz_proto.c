/*
 * fuzz_proto.c — libFuzzer target: avfsd's protocol server (daemon/server.c) as a client on its
 * socket meets it. Once: a 64 MiB memory disk formatted and mounted with one file, the engine
 * over it, the event loop and the server on a socket of its own. Each input: a connection
 * sends the input's bytes (messages, framed or not); the loop runs (device completions handed
 * back as avfsd does), the replies read and thrown away, until nothing moves; then it closes
 * its side and the loop runs until the server has let go of it. No descriptors are sent (SHM's memfd is not fuzzed).
 */
#include "engine.h"
#include "fsio.h"
#include "log.h"
#include "loop.h"
#include "memdisk.h"
#include "admin.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MNT_DEV 0x1234ull	/* the mount's st_dev as the server is told it: OPEN names it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct {
	struct avfs_disk *d;
	struct avfs_fsio *io;
	struct avfs_engine *e;
	struct avfs_loop *l;
	struct avfs_server *s;
	struct avfsd_admin_view view;
	char path[108];
	int64_t now;
} g;

static int ops_submit(void *ctx, const struct avfs_disk_req *r)
{
	(void)ctx;
	return avfs_disk_submit(g.d, r);
}

static void ops_arm(void *ctx, int64_t at)
{
	(void)ctx;
	(void)at;
}

static void reap(void)
{
	struct avfs_disk_cqe c[16];
	int n;

	while ((n = avfs_disk_reap(g.d, c, 16)) > 0)
		for (int i = 0; i < n; i++)
			avfs_engine_complete(g.e, c[i].cookie, c[i].res, g.now);
}

static int64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cleanup(void)
{
	unlink(g.path);
}

static void setup(void)
{
	struct avfs_mkfs_opts mo = { .block_shift = 16, .zones = 4, .seed = 9 };
	struct avfs_engine_ops ops = { .submit = ops_submit, .arm = ops_arm };
	struct avfs_engine_conf ec;
	struct avfs_server_conf sc = { .mnt_dev = MNT_DEV, .view = &g.view,
				       .mountpoint = "/fuzz" };	/* OPEN_PATH's paths */
	static uint8_t buf[1 << 18];
	char why[256];
	uint64_t ino;

	avfsd_log_level(-1);	/* dropped clients are the point: no line each */
	if (avfs_memdisk_open(64u << 20, 512, &g.d) || avfs_fsio_mkfs(g.d, &mo, NULL, why,
								     sizeof(why)) ||
	    avfs_fsio_mount(g.d, 0, &g.io, NULL, why, sizeof(why)))
		abort();
	/* inode 2: a file with data, inode 3: a directory */
	if (avfs_fs_mknod(g.io->fs, AVFS_ROOT_INO, "f", 0100644, 0, 0, 0, &ino) ||
	    avfs_fsio_write(g.io, ino, 0, buf, sizeof(buf)) != (int64_t)sizeof(buf) ||
	    avfs_fs_mkdir(g.io->fs, AVFS_ROOT_INO, "d", 0755, 0, 0, 0, &ino) ||
	    avfs_fsio_sync(g.io))
		abort();
	avfs_engine_conf_default(&ec);
	ec.commit_period_ns = 0;
	g.now = mono();
	if (avfs_engine_new(&g.e, &ec, g.io->fs, g.d->info.size, &ops, g.now, why, sizeof(why)) ||
	    avfs_loop_new(&g.l, 64))
		abort();
	snprintf(g.path, sizeof(g.path), "/tmp/avfs-fuzz-proto.%d.sock", (int)getpid());
	sc.path = g.path;
	g.view = (struct avfsd_admin_view){ .device = "memdisk", .mountpoint = "/fuzz",
					    .socket = g.path, .since = g.now, .disk = g.d };
	if (avfs_server_new(&g.s, g.l, g.e, g.io->fs, &sc, why, sizeof(why))) {
		fprintf(stderr, "fuzz_proto: %s\n", why);
		abort();
	}
	atexit(cleanup);
}

/* One loop iteration (what is ready now), the device's completions, the engine's tick. */
static void step(void)
{
	int64_t t = avfs_loop_run_once(g.l, mono() + 1000);

	if (t > 0)
		g.now = t;
	reap();
	avfs_engine_tick(g.e, g.now);
	avfs_server_tick(g.s, g.now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t sent = 0;
	uint8_t junk[65536];
	int fd, idle = 0;
	bool open = true;

	if (!g.s)
		setup();
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		abort();
	memcpy(sa.sun_path, g.path, strlen(g.path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		abort();
	/* send, read and run until the server is done with us */
	for (int round = 0; round < 2000 && (open || idle < 20); round++) {
		ssize_t n;
		bool moved = false;

		if (sent < size) {
			n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n, moved = true;
			else if (n < 0 && errno != EAGAIN)
				sent = size;	/* dropped */
		}
		/* half-closed only once the server is done with what was sent: it drops a
		 * client at end of file without handling what it had buffered */
		if (sent < size && idle >= 20)
			sent = size;	/* it stopped reading: give the rest up */
		if (sent == size && open && idle >= 5) {
			shutdown(fd, SHUT_WR);
			open = false;
			idle = 0;
		}
		while ((n = recv(fd, junk, sizeof(junk), 0)) > 0)
			moved = true;
		if (n == 0 || (n < 0 && errno != EAGAIN))
			break;	/* the server closed it */
		step();
		idle = moved || !avfs_engine_idle(g.e) ? 0 : idle + 1;
	}
	close(fd);
	/* the server sees the close; requests still in the engine complete */
	for (int i = 0; i < 50 && (avfs_server_clients(g.s) || !avfs_engine_idle(g.e)); i++)
		step();
	return 0;
}

/*
 * mkseeds_proto.c — the seed corpus of fuzz_proto: conversations a libavio client and
 * avfs-admin hold with avfsd (proto/proto.h), one file each. Usage: mkseeds_proto DIR.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t buf[65536];
static size_t n;
static uint64_t tag;

static void msg(uint16_t type, const void *pl, uint32_t len)
{
	struct avfs_msg_hdr h = { .magic = AVFS_PROTO_MAGIC, .type = type, .len = len, .tag = ++tag };

	memcpy(buf + n, &h, sizeof(h));
	memcpy(buf + n + sizeof(h), pl, len);
	n += sizeof(h) + len;
}

static void hello(void)
{
	struct avfs_msg_hello m = { .version = AVFS_PROTO_VERSION };

	n = 0;
	tag = 0;
	msg(AVFS_MSG_HELLO, &m, sizeof(m));
}

static void open_f(uint32_t access)
{
	struct avfs_msg_open m = { .dev = 0x1234, .ino = 2, .access = access };

	msg(AVFS_MSG_OPEN, &m, sizeof(m));
}

static void save(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct avfs_msg_io io = { .handle = 0, .op = AVFS_IO_READ, .nbytes = 4096 };
	struct avfs_msg_reserve rs = { .handle = 0, .rate = 1 << 20, .buffer = 4 << 20 };
	struct avfs_msg_stats st = { .handle = 0 };
	struct avfs_msg_cancel cn = { .target = 3 };
	struct avfs_msg_release rl = { .handle = 0 };
	struct avfs_msg_close cl = { .handle = 0 };
	struct avfs_msg_trace tr = { .duration_ns = 1000000 };
	uint8_t wr[sizeof(io) + 4096];

	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds_proto DIR\n");
		return 2;
	}
	hello();
	save(argv[1], "hello");
	hello();
	open_f(AVFS_OPEN_READ);
	msg(AVFS_MSG_IO, &io, sizeof(io));
	io.offset = 8192;
	io.deadline = 1;
	msg(AVFS_MSG_IO, &io, sizeof(io));
	msg(AVFS_MSG_CANCEL, &cn, sizeof(cn));
	msg(AVFS_MSG_CLOSE, &cl, sizeof(cl));
	save(argv[1], "read");
	hello();
	open_f(AVFS_OPEN_READ | AVFS_OPEN_WRITE);
	io.op = AVFS_IO_WRITE;
	io.offset = 1 << 20;
	io.deadline = 0;
	memcpy(wr, &io, sizeof(io));
	memset(wr + sizeof(io), 0x77, 4096);
	msg(AVFS_MSG_IO, wr, sizeof(wr));
	save(argv[1], "write");
	hello();
	open_f(AVFS_OPEN_READ);
	msg(AVFS_MSG_RESERVE, &rs, sizeof(rs));
	msg(AVFS_MSG_STATS, &st, sizeof(st));
	msg(AVFS_MSG_RELEASE, &rl, sizeof(rl));
	save(argv[1], "reserve");
	hello();
	msg(AVFS_MSG_ADMIN, "status", 6);
	msg(AVFS_MSG_ADMIN, "streams", 7);
	msg(AVFS_MSG_ADMIN, "stats", 5);
	save(argv[1], "admin");
	hello();
	msg(AVFS_MSG_TRACE, &tr, sizeof(tr));
	save(argv[1], "trace");
	hello();
	{	/* the file by its path, /fuzz being the mount point the target gives the server */
		struct {
			struct avfs_msg_open_path m;
			char p[8];
		} op = { { .dev = 0x1234, .ino = 2, .access = AVFS_OPEN_READ }, "/fuzz/f" };

		msg(AVFS_MSG_OPEN_PATH, &op, sizeof(op.m) + 7);
	}
	io.op = AVFS_IO_READ;
	msg(AVFS_MSG_IO, &io, sizeof(io));
	save(argv[1], "open_path");
	hello();
	open_f(AVFS_OPEN_READ);
	{	/* where the file lies, from its start and past its end */
		struct avfs_msg_place pl = { .handle = 0 };

		msg(AVFS_MSG_PLACE, &pl, sizeof(pl));
		pl.offset = 1ull << 40;
		msg(AVFS_MSG_PLACE, &pl, sizeof(pl));
	}
	save(argv[1], "place");
	return 0;
}

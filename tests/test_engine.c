/*
 * test_engine.c — the sans-I/O engine (engine/) driven by a fake device whose commands the
 * test completes by hand: dispatch slots, FUA, coalesced commands, ordered commits, data plans,
 * deadlines, cancel, the bandwidth class, the trace and the metrics, bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "fsck_clean.h"
#include "fsio.h"
#include "memdisk.h"

#define MS 1000000ll
#define NS 1000000000ll
#define T0 (10 * NS)		/* the tests' start: deadlines and the fs's times are > 0 */
#define DEV (64ull << 20)	/* the device */
#define BS (64u << 10)		/* fs tests: the data block, 16 pages */
#define PG AVFS_PAGE
#define KB 1024u
#define POISON 0xee		/* fs tests: the data region before anything is written there */
#define MAXCMD 1024

/* ---- the fake device: commands recorded in submission order, completed by the test ---- */

/* The data moves when the test completes a command (not at submit): the bytes a read gets
 * and a write leaves are then those of that moment, as on a real device, and timing and
 * content are under the same control. In fs tests the bytes are the memdisk's own
 * (avfs_memdisk_data), so that mkfs, mount, fsck and unmount through fsio see what the
 * engine did. */
struct cmd {
	struct avfs_disk_req r;
	bool done;
};

struct dev {
	struct avfs_engine *e;
	struct cmd c[MAXCMD];
	size_t n;
	uint8_t *data;		/* the disk's bytes, NULL: transfers move nothing */
	int refuse;		/* submit's answer when not 0 (nothing issued) */
	int64_t armed;		/* the last time given to ops.arm */
	struct avfs_trace_rec tr[MAXCMD];
	size_t ntr;
	uint64_t commits;	/* the n of the last ops.committed */
	int commit_err;
	size_t ncommitted;	/* calls of ops.committed */
};

static bool transfer(const struct avfs_disk_req *r)
{
	return r->op == AVFS_DISK_READ || r->op == AVFS_DISK_WRITE;
}

static int dev_submit(void *ctx, const struct avfs_disk_req *r)
{
	struct dev *d = ctx;

	if (d->refuse)
		return d->refuse;
	assert_true(d->n < MAXCMD);
	/* what every backend checks: whole blocks inside the device, an aligned buffer */
	if (transfer(r)) {
		assert_true(r->len && r->len % 512 == 0);
		assert_true(r->lba * 512 + r->len <= DEV);
		if (r->iovcnt) {	/* a vectored one: aligned pieces adding up to len */
			uint64_t sum = 0;

			assert_null(r->buf);
			for (unsigned i = 0; i < r->iovcnt; i++) {
				assert_int_equal((uintptr_t)r->iov[i].iov_base % 512, 0);
				sum += r->iov[i].iov_len;
			}
			assert_int_equal(sum, r->len);
		} else {
			assert_non_null(r->buf);
			assert_int_equal((uintptr_t)r->buf % 512, 0);
		}
	}
	/* a cookie names one command on the device at a time */
	for (size_t i = 0; i < d->n; i++)
		if (!d->c[i].done)
			assert_true(d->c[i].r.cookie != r->cookie);
	d->c[d->n++] = (struct cmd){ .r = *r };
	return 0;
}

static void dev_arm(void *ctx, int64_t at)
{
	((struct dev *)ctx)->armed = at;
}

static void dev_trace(void *ctx, const struct avfs_trace_rec *r)
{
	struct dev *d = ctx;

	assert_true(d->ntr < MAXCMD);
	d->tr[d->ntr++] = *r;
}

static void dev_committed(void *ctx, uint64_t n, int err)
{
	struct dev *d = ctx;

	d->commits = n;
	d->commit_err = err;
	d->ncommitted++;
}

static void dev_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "engine log %d: %s\n", level, msg);
}

/* ---- the environment: an engine over the fake device, with or without a file system ---- */

struct env {
	struct dev d;
	struct avfs_engine *e;
	struct avfs_disk *disk;	/* fs tests: the memdisk under the file system */
	struct avfs_fsio *io;
	struct avfs_fs *fs;
	uint64_t f;		/* fs tests: a regular file, empty at the start */
	uint64_t data_off, data_end;	/* fs tests: the data region's device bytes */
	uint64_t journal_off, journal_end;	/* ... and the journal's */
	uint8_t *buf;		/* 8 MiB, page aligned: raw requests' memory */
	int64_t now;
};

static struct avfs_engine_conf conf(bool rotational, unsigned depth, uint32_t chunk)
{
	struct avfs_engine_conf c;

	avfs_engine_conf_default(&c);
	c.sched.rotational = rotational;
	c.sched.depth = depth;
	c.sched.chunk = chunk;
	c.commit_period_ns = 0;		/* commits only when a test asks */
	c.commit_dirty = 1u << 20;
	return c;
}

static void engine_start(struct env *v, const struct avfs_engine_conf *c)
{
	const struct avfs_engine_ops ops = { .ctx = &v->d, .submit = dev_submit, .arm = dev_arm,
					     .trace = dev_trace, .committed = dev_committed,
					     .log = dev_log };
	char why[256] = "";
	int err = avfs_engine_new(&v->e, c, v->fs, DEV, &ops, v->now, why, sizeof(why));

	if (err)
		fprintf(stderr, "avfs_engine_new: %s\n", why);
	assert_int_equal(err, 0);
	v->d.e = v->e;
}

/* fs: a formatted 64 MiB memdisk with 64 KiB blocks whose data region is POISON, mounted,
 * with an empty file. */
static struct env *env_new(const struct avfs_engine_conf *c, bool fs)
{
	struct env *v = calloc(1, sizeof(*v));

	assert_non_null(v);
	assert_int_equal(posix_memalign((void **)&v->buf, 4096, 8u << 20), 0);
	memset(v->buf, 0, 8u << 20);
	v->now = T0;
	if (fs) {
		struct avfs_mkfs_opts mo = { .block_shift = 16, .zones = 4, .seed = 9 };
		struct avfs_super sb;
		char why[256];

		assert_int_equal(avfs_memdisk_open(DEV, 512, &v->disk), 0);
		assert_int_equal(avfs_fsio_mkfs(v->disk, &mo, &sb, why, sizeof(why)), 0);
		memset(avfs_memdisk_data(v->disk) + sb.data_off, POISON, sb.data_blocks * BS);
		assert_int_equal(avfs_fsio_mount(v->disk, 0, &v->io, NULL, why, sizeof(why)), 0);
		v->fs = v->io->fs;
		v->data_off = sb.data_off;
		v->data_end = sb.data_off + sb.data_blocks * BS;
		v->journal_off = sb.journal_start * AVFS_MBLOCK;
		v->journal_end = (sb.journal_start + sb.journal_blocks) * AVFS_MBLOCK;
		v->d.data = avfs_memdisk_data(v->disk);
		assert_int_equal(avfs_fs_mknod(v->fs, AVFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0,
					       v->now, &v->f), 0);
	}
	engine_start(v, c);
	return v;
}

/* The engine must be idle; an fs must pass fsck and unmount. */
static void env_free(struct env *v)
{
	assert_true(avfs_engine_idle(v->e));
	avfs_engine_free(v->e);
	if (v->io) {
		assert_fsck_clean(v->fs);
		assert_int_equal(avfs_fsio_unmount(v->io), 0);
		avfs_disk_close(v->disk);
	}
	free(v->buf);
	free(v);
}

/* ---- driving it ---- */

static size_t inflight(const struct env *v)
{
	size_t k = 0;

	for (size_t i = 0; i < v->d.n; i++)
		k += !v->d.c[i].done;
	return k;
}

/* The first command at or after index from with op, not yet complete; -1: none. */
static long find(const struct env *v, enum avfs_disk_op op, size_t from)
{
	for (size_t i = from; i < v->d.n; i++)
		if (v->d.c[i].r.op == op && !v->d.c[i].done)
			return (long)i;
	return -1;
}

/* The first command at or after index from with op, complete or not; -1: none. */
static long first(const struct env *v, enum avfs_disk_op op, size_t from)
{
	for (size_t i = from; i < v->d.n; i++)
		if (v->d.c[i].r.op == op)
			return (long)i;
	return -1;
}

static long oldest(const struct env *v)
{
	for (size_t i = 0; i < v->d.n; i++)
		if (!v->d.c[i].done)
			return (long)i;
	return -1;
}

/* Command i completes at `at` (its data moves now) with res (its length: pass -1). */
static void complete_res(struct env *v, long i, int64_t at, int64_t res)
{
	struct cmd *c;

	assert_true(i >= 0 && (size_t)i < v->d.n);
	c = &v->d.c[i];
	assert_false(c->done);
	c->done = true;
	if (res == -1)
		res = transfer(&c->r) ? c->r.len : 0;
	if (res >= 0 && v->d.data && transfer(&c->r)) {
		uint8_t *disk = v->d.data + c->r.lba * 512;
		struct iovec one = { .iov_base = c->r.buf, .iov_len = c->r.len };
		const struct iovec *p = c->r.iovcnt ? c->r.iov : &one;

		for (unsigned k = 0; k < (c->r.iovcnt ? c->r.iovcnt : 1); disk += p[k++].iov_len) {
			if (c->r.op == AVFS_DISK_READ)
				memcpy(p[k].iov_base, disk, p[k].iov_len);
			else
				memcpy(disk, p[k].iov_base, p[k].iov_len);
		}
	}
	if (at > v->now)
		v->now = at;
	avfs_engine_complete(v->e, c->r.cookie, res, at);
}

static void complete(struct env *v, long i, int64_t at)
{
	complete_res(v, i, at, -1);
}

/* Complete every command but keep_a and keep_b (-1: none), oldest first, 1 ms apart, and
 * those they bring, until only those two are left on the device. */
static void complete_others(struct env *v, long keep_a, long keep_b)
{
	for (int guard = 0; guard < 10000; guard++) {
		long j = -1;

		for (size_t i = 0; i < v->d.n && j < 0; i++)
			if (!v->d.c[i].done && (long)i != keep_a && (long)i != keep_b)
				j = (long)i;
		if (j < 0)
			return;
		complete(v, j, v->now + MS);
	}
	fail_msg("the device never emptied");
}

/* Complete the oldest command 1 ms after the last event, and tick when the engine asks,
 * until it is idle. */
static void drain(struct env *v)
{
	for (int guard = 0; guard < 100000; guard++) {
		long i = oldest(v);
		int64_t w;

		if (i >= 0) {
			complete(v, i, v->now + MS);
			continue;
		}
		w = avfs_engine_wake(v->e);
		if (avfs_engine_idle(v->e) || !w)
			break;
		if (w > v->now)
			v->now = w;
		avfs_engine_tick(v->e, v->now);
	}
	assert_true(avfs_engine_idle(v->e));
}

/* A front end's request, and what its done() saw. */
struct req {
	struct avfs_fio f;	/* first: done() gets it back */
	int ndone;
	int64_t res, at;
	bool free_at_done;	/* a front end that lets go of it in done(), as avfsd does */
	int64_t *res_out;	/* ... and keeps only its result here */
};

static void req_done(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct req *r = (struct req *)f;

	r->ndone++;
	r->res = res;
	r->at = now;
	if (r->res_out)
		*r->res_out = res;
	if (r->free_at_done)
		free(r);
}

static struct avfs_fio *fio(struct req *r, uint64_t ino, bool write, uint64_t off, uint64_t len,
			    uint8_t *buf)
{
	memset(r, 0, sizeof(*r));
	r->res = 1;	/* no done() yet */
	r->f = (struct avfs_fio){ .ino = ino, .off = off, .len = len, .write = write, .buf = buf,
				  .cap = len, .label = -1, .cls = AVFS_TRACE_BE, .done = req_done };
	return &r->f;
}

/* A raw request on v->buf (at the same offset in the buffer as on the device, mod 4 MiB). */
static struct avfs_fio *raw(struct env *v, struct req *r, bool write, uint64_t off, uint64_t len)
{
	return fio(r, 0, write, off, len, v->buf + off % (4u << 20));
}

static int io(struct env *v, struct avfs_fio *f)
{
	return avfs_engine_io(v->e, f, v->now);
}

/* Device byte offset of command i. */
static uint64_t cmd_off(const struct env *v, long i)
{
	return v->d.c[i].r.lba * 512;
}

/* fs tests: command i transfers file data (not metadata: the journal, the homes, the backup
 * region at the end of the device). */
static bool is_data(const struct env *v, long i)
{
	return cmd_off(v, i) >= v->data_off && cmd_off(v, i) < v->data_end;
}

/* fs tests: the file's bytes as the tests write them (never 0) */
static uint8_t pat(uint64_t x, unsigned seed)
{
	return (uint8_t)((x * 31 + (x >> 12) + seed) | 1);
}

static uint8_t *pattern(uint64_t at, size_t len, unsigned seed, size_t misalign)
{
	uint8_t *p = malloc(len + misalign);

	assert_non_null(p);
	for (size_t i = 0; i < len; i++)
		p[misalign + i] = pat(at + i, seed);
	return p;
}

/* Write [off, off + len) of the file with pattern seed from a buffer misaligned by one byte,
 * and complete everything. */
static void file_write(struct env *v, uint64_t off, uint64_t len, unsigned seed)
{
	uint8_t *p = pattern(off, len, seed, 1);
	struct req w;

	assert_int_equal(io(v, fio(&w, v->f, true, off, len, p + 1)), 0);
	drain(v);
	assert_int_equal(w.ndone, 1);
	assert_int_equal(w.res, (int64_t)len);
	free(p);
}

/* Issue 18: a write that finds no free data block while blocks freed by a deletion wait for
 * their commit gets that commit and the blocks, not ENOSPC; with nothing being freed it still
 * gets ENOSPC at once. */
static void test_engine_nospc_waits_for_freed_blocks(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, true);
	uint8_t *p = pattern(0, BS, 3, 0);
	struct avfs_statfs sf;
	struct req w;
	uint64_t g;

	(void)state;
	avfs_fs_statfs(v->fs, &sf);
	assert_int_equal(avfs_fs_fallocate(v->fs, v->f, 0, sf.bfree * BS, false, v->now), 0);
	assert_int_equal(avfs_fs_mknod(v->fs, AVFS_ROOT_INO, "g", S_IFREG | 0644, 0, 0, v->now, &g),
			 0);
	avfs_engine_commit(v->e, v->now);
	drain(v);
	assert_int_equal(io(v, fio(&w, g, true, 0, BS, p)), 0);
	drain(v);
	assert_int_equal(w.res, -ENOSPC);	/* full, nothing being freed */
	assert_int_equal(avfs_fs_unlink(v->fs, AVFS_ROOT_INO, "f", v->now), 0);
	assert_true(avfs_fs_data_freeing(v->fs) > 0);
	assert_int_equal(io(v, fio(&w, g, true, 0, BS, p)), 0);
	assert_int_equal(w.ndone, 0);		/* waits for the commit of the unlink */
	drain(v);
	assert_int_equal(w.ndone, 1);
	assert_int_equal(w.res, (int64_t)BS);
	assert_int_equal(avfs_fs_data_freeing(v->fs), 0);
	avfs_engine_commit(v->e, v->now);
	drain(v);
	free(p);
	env_free(v);
}

/* ---- 1. dispatch ---- */

/* A rotating disk has one command at a time: a second request waits for the first. */
static void test_engine_rotational_one_in_flight(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	struct req a, b;

	(void)state;
	assert_int_equal(io(v, raw(v, &a, false, 0, 64 * KB)), 0);
	assert_int_equal(io(v, raw(v, &b, false, 1u << 20, 64 * KB)), 0);
	assert_int_equal(v->d.n, 1);
	assert_int_equal(v->d.c[0].r.op, AVFS_DISK_READ);
	assert_int_equal(cmd_off(v, 0), 0);
	assert_int_equal(v->d.c[0].r.len, 64 * KB);
	complete(v, 0, v->now + 5 * MS);
	assert_int_equal(a.ndone, 1);
	assert_int_equal(a.res, 64 * KB);
	assert_int_equal(b.ndone, 0);
	assert_int_equal(v->d.n, 2);
	assert_int_equal(cmd_off(v, 1), 1u << 20);
	complete(v, 1, v->now + 5 * MS);
	assert_int_equal(b.ndone, 1);
	assert_int_equal(b.res, 64 * KB);
	env_free(v);
}

/* A non-rotational device of depth 4 takes four commands at once; a fifth waits for a slot. */
static void test_engine_nonrot_depth_in_flight(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);
	struct env *v = env_new(&c, false);
	struct req r[6];

	(void)state;
	for (int i = 0; i < 6; i++)
		assert_int_equal(io(v, raw(v, &r[i], false, (uint64_t)i << 20, 64 * KB)), 0);
	assert_int_equal(v->d.n, 4);
	assert_int_equal(inflight(v), 4);
	assert_int_equal(cmd_off(v, 2), 2u << 20);
	complete(v, 2, v->now + MS);
	assert_int_equal(r[2].ndone, 1);
	assert_int_equal(v->d.n, 5);
	assert_int_equal(inflight(v), 4);
	assert_int_equal(cmd_off(v, 4), 4u << 20);
	drain(v);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(r[i].ndone, 1);
		assert_int_equal(r[i].res, 64 * KB);
	}
	assert_int_equal(v->d.n, 6);
	env_free(v);
}

/* A FLUSH takes a slot like any command: three reads and a commit's FLUSH fill a device of
 * depth 4, and a fourth read goes only when the FLUSH completes. */
static void test_engine_flush_takes_a_slot(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);
	struct env *v = env_new(&c, true);
	struct req r[4];
	long fl, rd;
	size_t n;

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(io(v, raw(v, &r[i], false, DEV - ((uint64_t)(i + 1) << 20),
					   64 * KB)), 0);
	assert_int_equal(inflight(v), 3);
	avfs_engine_commit(v->e, v->now);	/* the file env_new made: a transaction */
	/* the plan's writes before its FLUSH, one at a time beside the reads */
	while ((fl = find(v, AVFS_DISK_FLUSH, 0)) < 0) {
		long w = find(v, AVFS_DISK_WRITE, 0);

		assert_true(w >= 0);
		assert_int_equal(inflight(v), 4);
		complete(v, w, v->now + MS);
	}
	assert_int_equal(inflight(v), 4);
	n = v->d.n;
	assert_int_equal(io(v, raw(v, &r[3], false, 0, 64 * KB)), 0);
	assert_int_equal(v->d.n, n);
	complete(v, fl, v->now + MS);
	rd = find(v, AVFS_DISK_READ, n);
	assert_true(rd >= 0);
	assert_int_equal(cmd_off(v, rd), 0);
	assert_int_equal(inflight(v), 4);
	drain(v);
	for (int i = 0; i < 4; i++)
		assert_int_equal(r[i].res, 64 * KB);
	assert_int_equal(v->d.commits, 1);
	assert_int_equal(v->d.commit_err, 0);
	env_free(v);
}

/* ---- 2. FUA ---- */

/* A chunked data write (chunks of 64 KiB, rotating) carries FUA on its last chunk only; a
 * write of one chunk and a chunked read carry none. */
static void test_engine_fua_last_chunk_only(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 64 * KB);
	struct env *v = env_new(&c, false);
	struct req w, w1, r;

	(void)state;
	assert_int_equal(io(v, raw(v, &w, true, 1u << 20, 256 * KB)), 0);
	for (long i = 0; i < 4; i++) {
		assert_int_equal(v->d.n, i + 1);
		assert_int_equal(v->d.c[i].r.op, AVFS_DISK_WRITE);
		assert_int_equal(cmd_off(v, i), (1u << 20) + i * 64 * KB);
		assert_int_equal(v->d.c[i].r.len, 64 * KB);
		assert_ptr_equal(v->d.c[i].r.buf, w.f.buf + i * 64 * KB);
		assert_int_equal(v->d.c[i].r.flags, i == 3 ? AVFS_DISK_FUA : 0);
		complete(v, i, v->now + MS);
	}
	assert_int_equal(w.res, 256 * KB);
	assert_int_equal(io(v, raw(v, &w1, true, 2u << 20, 64 * KB)), 0);
	assert_int_equal(v->d.n, 5);
	assert_int_equal(v->d.c[4].r.op, AVFS_DISK_WRITE);
	assert_int_equal(v->d.c[4].r.flags, 0);
	complete(v, 4, v->now + MS);
	assert_int_equal(w1.res, 64 * KB);
	assert_int_equal(io(v, raw(v, &r, false, 1u << 20, 256 * KB)), 0);
	for (long i = 5; i < 9; i++) {
		assert_int_equal(v->d.n, i + 1);
		assert_int_equal(v->d.c[i].r.op, AVFS_DISK_READ);
		assert_int_equal(v->d.c[i].r.flags, 0);
		complete(v, i, v->now + MS);
	}
	assert_int_equal(r.res, 256 * KB);
	env_free(v);
}

/* ---- 3. ordered commits ---- */

/* The plan's FLUSH waits for the data write of the generation it commits, not for one planned
 * after the commit began; the transaction (its descriptors, images and commit record: one FUA
 * write, the lazy checkpoint's) follows the FLUSH; committed() says n = 1 once that write is
 * done, with the later write still on the device and no home write sent. */
static void test_engine_commit_flush_after_data(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);
	struct env *v = env_new(&c, true);
	struct req w1, w2;
	long i1, i2, fl, rec;
	unsigned under_way;	/* commits queued or running */
	uint8_t *p = NULL;

	(void)state;
	assert_int_equal(posix_memalign((void **)&p, 4096, 2 * BS), 0);
	for (size_t i = 0; i < 2 * BS; i++)
		p[i] = pat(i, 1);
	assert_int_equal(io(v, fio(&w1, v->f, true, 0, BS, p)), 0);
	assert_int_equal(v->d.n, 1);
	i1 = 0;
	assert_int_equal(v->d.c[i1].r.op, AVFS_DISK_WRITE);
	assert_true(is_data(v, i1));
	assert_ptr_equal(v->d.c[i1].r.buf, p);	/* whole pages, an aligned buffer: no bounce */

	avfs_engine_commit(v->e, v->now);
	assert_int_equal(avfs_engine_commits(v->e, &under_way), 0);
	assert_true(under_way);
	/* nothing of the plan goes before its FLUSH, and that waits for the data write ... */
	assert_int_equal(v->d.n, 1);
	assert_int_equal(v->d.ncommitted, 0);
	/* ... not for a data write of the next transaction */
	assert_int_equal(io(v, fio(&w2, v->f, true, BS, BS, p + BS)), 0);
	i2 = (long)v->d.n - 1;
	assert_int_equal(v->d.c[i2].r.op, AVFS_DISK_WRITE);
	assert_true(is_data(v, i2));
	assert_int_equal(first(v, AVFS_DISK_FLUSH, 0), -1);
	/* the committed generation's data complete: now the FLUSH, and nothing else */
	complete(v, i1, v->now + MS);
	assert_int_equal(w1.res, BS);
	fl = first(v, AVFS_DISK_FLUSH, 0);
	assert_int_equal(fl, i2 + 1);
	assert_int_equal(v->d.n, (size_t)fl + 1);
	/* the transaction waits for the FLUSH: one write into the journal, FUA */
	complete(v, fl, v->now + MS);
	rec = fl + 1;
	assert_int_equal(v->d.n, (size_t)rec + 1);
	assert_int_equal(v->d.c[rec].r.op, AVFS_DISK_WRITE);
	assert_int_equal(v->d.c[rec].r.flags, AVFS_DISK_FUA);
	assert_false(is_data(v, rec));
	assert_int_equal(v->d.ncommitted, 0);
	/* that write done, the commit is: no home write sent (the checkpoint comes later) */
	complete(v, rec, v->now + MS);
	assert_int_equal(v->d.n, (size_t)rec + 1);
	assert_int_equal(v->d.ncommitted, 1);
	assert_int_equal(v->d.commits, 1);
	assert_int_equal(v->d.commit_err, 0);
	assert_int_equal(avfs_engine_commits(v->e, &under_way), 1);
	assert_false(under_way);
	assert_int_equal(w2.ndone, 0);
	complete(v, i2, v->now + MS);
	assert_int_equal(w2.res, BS);
	drain(v);
	free(p);
	env_free(v);
}

/* What a commit made durable is on the disk: after a crash (the engine and the mount gone,
 * nothing more written) a remount finds the file's size and bytes. */
static void test_engine_commit_survives_crash(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, true);
	static uint8_t got[13000];
	struct avfs_stat st;
	char why[256];

	(void)state;
	file_write(v, 3000, 10000, 2);
	avfs_engine_commit(v->e, v->now);
	drain(v);
	assert_int_equal(v->d.commits, 1);
	assert_int_equal(v->d.commit_err, 0);
	avfs_engine_free(v->e);
	avfs_fsio_abandon(v->io);
	assert_int_equal(avfs_fsio_mount(v->disk, 0, &v->io, NULL, why, sizeof(why)), 0);
	v->fs = v->io->fs;
	assert_int_equal(avfs_fs_getattr(v->fs, v->f, &st), 0);
	assert_int_equal(st.size, 13000);
	assert_int_equal(avfs_fsio_read(v->io, v->f, 0, got, sizeof(got)), sizeof(got));
	for (size_t i = 0; i < sizeof(got); i++)
		if (got[i] != (i < 3000 ? 0 : pat(i, 2)))
			fail_msg("byte %zu is %#x", i, got[i]);
	engine_start(v, &c);
	env_free(v);
}

/* fs tests: command i writes into the journal (its log or its superblocks). */
static bool in_journal(const struct env *v, long i)
{
	return cmd_off(v, i) >= v->journal_off && cmd_off(v, i) < v->journal_end;
}

/* The lazy checkpoint (fs.h): a commit writes only the journal, the homes wait; a checkpoint
 * writes them home and to the backup region (the superblock's home copy with FUA before its
 * backup), one at a time, and a commit's write goes before its write still waiting (with one
 * best-effort command per be_age under a saturating real-time load, a commit behind the
 * checkpoint would take a floor period more per write). Its last write moves the journal's
 * tail (FUA): a crash then replays only the commit that came after it. */
static void test_engine_checkpoint_after_commits(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, true);
	struct avfs_mount_report rep;
	long w1, fl, jw, sb_home = -1, sb_backup = -1;
	uint64_t g, bsuper = avfs_fs_backup_super_off(DEV);
	struct avfs_stat st;
	size_t n0;
	char why[256];

	(void)state;
	file_write(v, 0, 10000, 3);
	avfs_engine_commit(v->e, v->now);
	drain(v);
	assert_int_equal(v->d.commits, 1);
	/* the commit: its data, a FLUSH, the journal; nothing home */
	for (size_t i = 0; i < v->d.n; i++)
		if (v->d.c[i].r.op == AVFS_DISK_WRITE && !is_data(v, (long)i))
			assert_true(in_journal(v, (long)i));
	assert_int_equal(avfs_engine_checkpoints(v->e), 0);

	/* the checkpoint's first write on the device (depth 1); a commit comes meanwhile */
	n0 = v->d.n;
	avfs_engine_checkpoint(v->e, v->now);
	assert_int_equal(v->d.n, n0 + 1);
	w1 = (long)n0;
	assert_int_equal(v->d.c[w1].r.op, AVFS_DISK_WRITE);
	assert_false(is_data(v, w1) || in_journal(v, w1));
	assert_int_equal(avfs_fs_mknod(v->fs, AVFS_ROOT_INO, "g", S_IFREG | 0644, 0, 0, v->now,
				       &g), 0);
	avfs_engine_commit(v->e, v->now);
	assert_int_equal(v->d.n, n0 + 1);	/* its FLUSH waits for the slot */
	complete(v, w1, v->now + MS);
	fl = w1 + 1;
	assert_int_equal(v->d.c[fl].r.op, AVFS_DISK_FLUSH);
	assert_int_equal(v->d.n, (size_t)fl + 1);	/* the checkpoint's next write waits */
	complete(v, fl, v->now + MS);
	/* the commit's journal write goes first */
	jw = fl + 1;
	assert_true(v->d.n > (size_t)jw);
	assert_int_equal(v->d.c[jw].r.op, AVFS_DISK_WRITE);
	assert_true(in_journal(v, jw));
	assert_int_equal(v->d.c[jw].r.flags, AVFS_DISK_FUA);
	complete(v, jw, v->now + MS);
	assert_int_equal(v->d.commits, 2);
	drain(v);
	assert_int_equal(avfs_engine_checkpoints(v->e), 1);
	for (size_t i = n0; i < v->d.n; i++) {
		if (v->d.c[i].r.op == AVFS_DISK_WRITE && cmd_off(v, (long)i) == 0)
			sb_home = (long)i;
		if (v->d.c[i].r.op == AVFS_DISK_WRITE && cmd_off(v, (long)i) == bsuper)
			sb_backup = (long)i;
	}
	assert_true(sb_home >= 0 && sb_backup > sb_home);
	assert_int_equal(v->d.c[sb_home].r.flags, AVFS_DISK_FUA);
	/* the tail moved: its journal superblock, the last write, FUA */
	assert_true(in_journal(v, (long)v->d.n - 1));
	assert_int_equal(v->d.c[v->d.n - 1].r.flags, AVFS_DISK_FUA);

	/* a crash: the second commit replays, the first is home */
	avfs_engine_free(v->e);
	avfs_fsio_abandon(v->io);
	assert_int_equal(avfs_fsio_mount(v->disk, 0, &v->io, &rep, why, sizeof(why)), 0);
	v->fs = v->io->fs;
	assert_int_equal(rep.replayed_txn, 1);
	assert_int_equal(avfs_fs_getattr(v->fs, v->f, &st), 0);
	assert_int_equal(st.size, 10000);
	assert_int_equal(avfs_fs_lookup(v->fs, AVFS_ROOT_INO, "g", &g), 0);
	engine_start(v, &c);
	env_free(v);
}

/* A commit's transaction write cut into semi-preemptible chunks carries FUA on its last chunk
 * only (mixer.c, papers/003): a FLUSH follows it, and the commit is done only after that. */
static void test_engine_commit_chunked_flush(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 4096);
	struct env *v = env_new(&c, true);
	size_t nflush = 0, njournal = 0;
	uint64_t g;

	(void)state;
	for (int k = 0; k < 8; k++) {
		char name[8];

		snprintf(name, sizeof(name), "g%d", k);
		assert_int_equal(avfs_fs_mknod(v->fs, AVFS_ROOT_INO, name, S_IFREG | 0644, 0, 0,
					       v->now, &g), 0);
	}
	avfs_engine_commit(v->e, v->now);
	for (int guard = 0; guard < 1000; guard++) {
		long i = oldest(v);

		if (i < 0)
			break;
		if (v->d.c[i].r.op == AVFS_DISK_FLUSH && ++nflush == 2) {
			/* after the chunks, the last of them FUA: not done yet */
			assert_true(i > 0 && in_journal(v, i - 1));
			assert_int_equal(v->d.c[i - 1].r.flags, AVFS_DISK_FUA);
			assert_int_equal(v->d.ncommitted, 0);
		}
		if (v->d.c[i].r.op == AVFS_DISK_WRITE && in_journal(v, i) && ++njournal > 1 &&
		    nflush == 1)
			assert_int_equal(v->d.c[i - 1].r.flags, 0);	/* an earlier chunk: no FUA */
		complete(v, i, v->now + MS);
	}
	assert_int_equal(nflush, 2);
	assert_true(njournal > 1);
	assert_int_equal(v->d.commits, 1);
	drain(v);
	env_free(v);
}

/* A data write still waiting for its read-modify-write read holds the commit's FLUSH too: the
 * FLUSH comes only once the read, then the write, are complete. */
static void test_engine_commit_waits_for_rmw_write(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);
	struct env *v = env_new(&c, true);
	uint8_t *p = pattern(1000, 100, 9, 1);
	struct req w;
	long rd, wr;
	size_t n0;

	(void)state;
	file_write(v, 0, PG, 8);
	n0 = v->d.n;
	assert_int_equal(io(v, fio(&w, v->f, true, 1000, 100, p + 1)), 0);
	rd = (long)n0;
	assert_int_equal(v->d.n, n0 + 1);
	assert_int_equal(v->d.c[rd].r.op, AVFS_DISK_READ);
	avfs_engine_commit(v->e, v->now);
	complete_others(v, rd, -1);
	assert_int_equal(first(v, AVFS_DISK_FLUSH, n0), -1);
	complete(v, rd, v->now + MS);
	wr = (long)v->d.n - 1;
	assert_int_equal(v->d.c[wr].r.op, AVFS_DISK_WRITE);
	assert_int_equal(v->d.c[wr].r.lba, v->d.c[rd].r.lba);
	assert_int_equal(first(v, AVFS_DISK_FLUSH, n0), -1);
	complete(v, wr, v->now + MS);
	assert_int_equal(w.res, 100);
	assert_int_equal(first(v, AVFS_DISK_FLUSH, n0), wr + 1);
	drain(v);
	assert_int_equal(v->d.commits, 1);
	free(p);
	env_free(v);
}

/* A write that leaves more metadata dirty than commit_dirty starts a commit at once, and that
 * commit's FLUSH still waits for the write's own data. */
static void test_engine_commit_when_dirty_waits_for_its_write(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);
	struct env *v;
	unsigned under_way;	/* commits queued or running */
	struct req w;

	(void)state;
	c.commit_dirty = 1;
	v = env_new(&c, true);
	memset(v->buf, 0x33, BS);
	assert_int_equal(io(v, fio(&w, v->f, true, 0, BS, v->buf)), 0);
	assert_true(is_data(v, 0));
	assert_int_equal(avfs_engine_commits(v->e, &under_way), 0);
	assert_true(under_way);
	complete_others(v, 0, -1);
	assert_int_equal(first(v, AVFS_DISK_FLUSH, 0), -1);
	complete(v, 0, v->now + MS);
	assert_true(first(v, AVFS_DISK_FLUSH, 0) > 0);
	drain(v);
	assert_int_equal(v->d.commits, 1);
	env_free(v);
}

/* With a commit period the engine arms a tick for it, commits a changed file system there (not
 * a nanosecond before), and arms the next one. */
static void test_engine_commit_periodic(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v;
	unsigned under_way;	/* commits queued or running */

	(void)state;
	c.commit_period_ns = 5 * NS;
	v = env_new(&c, true);	/* its file: a change to commit */
	assert_int_equal(avfs_engine_wake(v->e), T0 + 5 * NS);
	assert_int_equal(v->d.armed, T0 + 5 * NS);
	avfs_engine_tick(v->e, T0 + 5 * NS - 1);
	assert_int_equal(v->d.n, 0);
	v->now = T0 + 5 * NS;
	avfs_engine_tick(v->e, v->now);
	assert_true(v->d.n > 0);
	avfs_engine_commits(v->e, &under_way);
	assert_true(under_way);
	drain(v);
	assert_int_equal(v->d.commits, 1);
	assert_int_equal(avfs_engine_wake(v->e), T0 + 10 * NS);
	assert_int_equal(v->d.armed, T0 + 10 * NS);
	env_free(v);
}

/* commit-wait: a commit waiting for a real-time data write held to a deadline a minute away has
 * it due commit-wait after the commit began (the engine arms a tick for that, and the write then
 * goes by its new deadline); with commit-wait 0 it keeps its deadline and the commit waits for
 * it. When the write reached the device, after the commit began. */
static int64_t commit_data_write_at(int64_t wait_ns)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v;
	struct req w;
	int64_t start;
	long i;

	c.commit_wait_ns = wait_ns;
	v = env_new(&c, true);
	memset(v->buf, 0x44, BS);
	fio(&w, v->f, true, 0, BS, v->buf)->deadline = v->now + 60 * NS;
	assert_int_equal(io(v, &w.f), 0);
	assert_int_equal(inflight(v), 0);	/* held for its deadline */
	start = v->now;
	avfs_engine_commit(v->e, v->now);
	if (wait_ns)
		assert_int_equal(avfs_engine_wake(v->e), start + wait_ns);
	for (int guard = 0; guard < 1000; guard++) {
		int64_t at;

		for (i = 0; i < (long)v->d.n; i++)
			if (!v->d.c[i].done && is_data(v, i))
				break;
		if (i < (long)v->d.n)
			break;	/* the data write is out */
		assert_int_equal(first(v, AVFS_DISK_FLUSH, 0), -1);	/* ordered: not before it */
		if ((i = oldest(v)) >= 0) {
			complete(v, i, v->now + MS);
			continue;
		}
		at = avfs_engine_wake(v->e);
		assert_true(at > v->now);
		v->now = at;
		avfs_engine_tick(v->e, v->now);
	}
	start = v->now - start;
	drain(v);
	assert_int_equal(v->d.commits, 1);
	assert_int_equal(w.ndone, 1);
	env_free(v);
	return start;
}

static void test_engine_commit_wait_pulls_data(void **state)
{
	struct avfs_engine_conf c;
	int64_t at;

	(void)state;
	avfs_engine_conf_default(&c);
	assert_int_equal(c.commit_wait_ns, 10 * NS);	/* the default */
	at = commit_data_write_at(10 * NS);
	assert_true(at >= 10 * NS && at < 20 * NS);	/* due by 20 s, the hold lets it wait */
	at = commit_data_write_at(0);
	assert_true(at >= 55 * NS && at < 60 * NS);	/* held to its own deadline */
}

/* A FLUSH that fails fails its commit: committed() reports the error, the plan stops (no
 * commit record), the count stays 0; a remount finds the file system as it was committed last
 * (without the new file). */
static void test_engine_commit_flush_error(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, true);
	unsigned under_way;	/* commits queued or running */
	uint64_t ino;
	char why[256];
	long fl;

	(void)state;
	avfs_engine_commit(v->e, v->now);
	while ((fl = find(v, AVFS_DISK_FLUSH, 0)) < 0) {
		assert_true(oldest(v) >= 0);
		complete(v, oldest(v), v->now + MS);
	}
	complete_res(v, fl, v->now + MS, -EIO);
	assert_int_equal(v->d.ncommitted, 1);
	assert_int_equal(v->d.commit_err, -EIO);
	assert_int_equal(avfs_engine_commits(v->e, &under_way), 0);
	assert_false(under_way);
	assert_int_equal(v->d.n, (size_t)fl + 1);	/* nothing after the FLUSH */
	assert_true(avfs_fs_rdonly(v->fs));
	assert_true(avfs_engine_idle(v->e));
	avfs_engine_free(v->e);
	avfs_fsio_abandon(v->io);
	assert_int_equal(avfs_fsio_mount(v->disk, 0, &v->io, NULL, why, sizeof(why)), 0);
	v->fs = v->io->fs;
	assert_int_equal(avfs_fs_lookup(v->fs, AVFS_ROOT_INO, "f", &ino), -ENOENT);
	engine_start(v, &c);
	env_free(v);
}

/* ---- 4. data plans ---- */

/* A write from an unaligned buffer at off 1000 reads back from another unaligned range; pages
 * never written and holes read as zeros without a command (the disk there is POISON); a read
 * is clamped at the size, and one past it returns 0 before avfs_engine_io returns. */
static void test_engine_file_unaligned_roundtrip(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, true);
	const uint64_t far = 3 * BS + 10, size = far + 100;
	uint8_t *b = malloc(4 * BS + 3);
	struct req r;
	size_t n;

	(void)state;
	assert_non_null(b);
	file_write(v, 1000, 5000, 3);
	memset(b, 0x55, 4 * BS + 3);
	assert_int_equal(io(v, fio(&r, v->f, false, 900, 6000, b + 3)), 0);
	drain(v);
	assert_int_equal(r.res, 5100);
	for (uint64_t i = 0; i < 5100; i++)
		if (b[3 + i] != (i < 100 ? 0 : pat(900 + i, 3)))
			fail_msg("byte %llu is %#x", (unsigned long long)(900 + i), b[3 + i]);

	/* blocks 1 and 2 a hole, block 3 written from its byte 10 */
	file_write(v, far, 100, 3);
	n = v->d.n;
	memset(b, 0x55, 4 * BS + 3);
	assert_int_equal(io(v, fio(&r, v->f, false, 5000, 4 * BS, b + 3)), 0);
	drain(v);
	assert_int_equal(r.res, size - 5000);
	for (uint64_t i = 0; i < size - 5000; i++) {
		uint64_t x = 5000 + i;

		if (b[3 + i] != (x < 6000 || x >= far ? pat(x, 3) : 0))
			fail_msg("byte %llu is %#x", (unsigned long long)x, b[3 + i]);
	}
	assert_int_equal(v->d.n - n, 2);	/* block 0's page 1, block 3's page 0 */

	assert_int_equal(io(v, fio(&r, v->f, false, size - 10, 100, b + 3)), 0);
	drain(v);
	assert_int_equal(r.res, 10);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(b[3 + i], pat(size - 10 + i, 3));
	n = v->d.n;
	assert_int_equal(io(v, fio(&r, v->f, false, size + 5, 100, b + 3)), 0);
	assert_int_equal(r.ndone, 1);
	assert_int_equal(r.res, 0);
	assert_int_equal(v->d.n, n);
	free(b);
	env_free(v);
}

/* A write inside an initialized page reads the page first, then writes it whole (read-modify-
 * write): the bytes around it stay. A read into an aligned buffer goes straight into it. */
static void test_engine_file_partial_page_rmw(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, true);
	uint8_t *p = pattern(2000, 100, 5, 1);
	struct req w, r;
	size_t n;

	(void)state;
	file_write(v, 0, 3 * PG, 4);
	n = v->d.n;
	assert_int_equal(io(v, fio(&w, v->f, true, 2000, 100, p + 1)), 0);
	assert_int_equal(v->d.n, n + 1);
	assert_int_equal(v->d.c[n].r.op, AVFS_DISK_READ);
	assert_int_equal(v->d.c[n].r.len, PG);
	assert_true(is_data(v, (long)n));
	complete(v, (long)n, v->now + MS);
	assert_int_equal(v->d.n, n + 2);
	assert_int_equal(v->d.c[n + 1].r.op, AVFS_DISK_WRITE);
	assert_int_equal(v->d.c[n + 1].r.lba, v->d.c[n].r.lba);
	assert_int_equal(v->d.c[n + 1].r.len, PG);
	complete(v, (long)n + 1, v->now + MS);
	assert_int_equal(w.res, 100);

	memset(v->buf, 0, 3 * PG);
	assert_int_equal(io(v, fio(&r, v->f, false, 0, 3 * PG, v->buf)), 0);
	assert_ptr_equal(v->d.c[v->d.n - 1].r.buf, v->buf);
	drain(v);
	assert_int_equal(r.res, 3 * PG);
	for (uint64_t i = 0; i < 3 * PG; i++)
		if (v->buf[i] != pat(i, i >= 2000 && i < 2100 ? 5 : 4))
			fail_msg("byte %llu is %#x", (unsigned long long)i, v->buf[i]);
	free(p);
	env_free(v);
}

/* Two small writes into one page at once, on a device with commands in flight together: the
 * second write's read-modify-write reads the page only after the first write is on it, so
 * neither's bytes are lost (found by the engine's tests: both reads went at once, the second
 * came back before the first write landed, and its write put the old bytes back). */
static void test_engine_two_writes_one_page(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);
	struct env *v = env_new(&c, true);
	uint8_t *p = pattern(1000, 100, 6, 1), *q = pattern(1200, 100, 7, 1);
	struct req w1, w2, r;

	(void)state;
	file_write(v, 0, 2 * PG, 4);
	assert_int_equal(io(v, fio(&w1, v->f, true, 1000, 100, p + 1)), 0);
	assert_int_equal(io(v, fio(&w2, v->f, true, 1200, 100, q + 1)), 0);
	/* both reads go at once on this device; each completes before the write after it */
	drain(v);
	assert_int_equal(w1.res, 100);
	assert_int_equal(w2.res, 100);
	memset(v->buf, 0, 2 * PG);
	assert_int_equal(io(v, fio(&r, v->f, false, 0, 2 * PG, v->buf)), 0);
	drain(v);
	for (uint64_t i = 0; i < 2 * PG; i++)
		if (v->buf[i] != pat(i, i >= 1000 && i < 1100 ? 6 : i >= 1200 && i < 1300 ? 7 : 4))
			fail_msg("byte %llu is %#x", (unsigned long long)i, v->buf[i]);
	free(p);
	free(q);
	env_free(v);
}

/* Issue 18 (test_daemon_avio's 32 clients x 8 requests in flight: a client's poll got nothing
 * for 20 s): a small file promoted by a write while both earlier writes of its extent are
 * still on the device, more writes and a read of it all queued behind. The move's pages wait
 * for every earlier write of them, not only the last; they go as one read and one write (one
 * of each a page made a promoted 256 KiB file 128 device commands, most of a loaded disk's
 * time); the read waits for the move's write as well as for the last write of its range;
 * every request completes once and the bytes read back are those written. */
static void test_engine_small_promoted_in_flight(void **state)
{
	struct avfs_engine_conf c = conf(false, 8, 0);
	struct env *v = env_new(&c, true);
	const uint64_t n = 8 * KB, len = 6 * n;	/* small files: up to BS / 4 = 16 KiB */
	uint8_t *p = pattern(0, len, 5, 0);
	struct req w[6], r;
	uint64_t src;
	long a;

	(void)state;
	assert_int_equal(io(v, fio(&w[0], v->f, true, 0, n, p)), 0);
	assert_int_equal(io(v, fio(&w[1], v->f, true, n, n, p + n)), 0);
	/* the small file's extent: two writes on the device, the second grew it in place */
	assert_int_equal(v->d.n, 2);
	src = cmd_off(v, 0);
	assert_int_equal(cmd_off(v, 1), src + n);
	/* w[2] promotes it; its pages wait for both writes of the extent */
	for (int i = 2; i < 6; i++)
		assert_int_equal(io(v, fio(&w[i], v->f, true, (uint64_t)i * n, n, p + i * n)), 0);
	assert_int_equal(io(v, fio(&r, v->f, false, 0, len, v->buf)), 0);
	assert_int_equal(find(v, AVFS_DISK_READ, 0), -1);
	complete(v, 1, v->now + MS);
	assert_int_equal(find(v, AVFS_DISK_READ, 0), -1);	/* the earlier one is still there */
	complete(v, 0, v->now + MS);
	a = find(v, AVFS_DISK_READ, 0);
	assert_true(a >= 0);
	assert_int_equal(cmd_off(v, a), src);
	assert_int_equal(v->d.c[a].r.len, 2 * n);	/* all its pages in one read */
	drain(v);
	for (size_t i = 0, reads = 0; i < v->d.n; i++) {
		uint64_t o = cmd_off(v, i);

		if (o < src + 2 * n && src < o + v->d.c[i].r.len)
			assert_true(i < 2 || (v->d.c[i].r.op == AVFS_DISK_READ && ++reads == 1));
		/* the move's write: its 4 pages at once */
		assert_false(v->d.c[i].r.op == AVFS_DISK_WRITE && is_data(v, (long)i) &&
			     v->d.c[i].r.len < n);
	}
	for (int i = 0; i < 6; i++) {
		assert_int_equal(w[i].ndone, 1);
		assert_int_equal(w[i].res, (int64_t)n);
	}
	assert_int_equal(r.ndone, 1);
	assert_int_equal(r.res, (int64_t)len);
	for (uint64_t i = 0; i < len; i++)
		if (v->buf[i] != p[i])
			fail_msg("byte %llu is %#x, not %#x", (unsigned long long)i, v->buf[i], p[i]);
	free(p);
	env_free(v);
}

/* A zero_tail request before a file grows zeroes the stale bytes past its size in the last
 * page on the disk (the rest of the page kept), so that the grown file reads zeros there. */
static void test_engine_zero_tail_before_growing(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, true);
	struct avfs_stat st = { .size = 3000 };
	uint64_t dev;
	uint32_t keep;
	struct req z, r;
	uint8_t *disk;

	(void)state;
	file_write(v, 0, 5000, 6);
	assert_int_equal(avfs_fs_setattr(v->fs, v->f, AVFS_SET_SIZE, &st, v->now), 0);
	assert_int_equal(avfs_fs_tail_page(v->fs, v->f, 3000, &dev, &keep), 0);
	assert_int_equal(keep, 3000);
	disk = v->d.data + dev;
	assert_int_equal(disk[3000], pat(3000, 6));	/* stale, past the size */

	memset(&z, 0, sizeof(z));
	z.f = (struct avfs_fio){ .ino = v->f, .off = 3000, .write = true, .zero_tail = true,
				 .label = -1, .cls = AVFS_TRACE_BE, .done = req_done };
	assert_int_equal(io(v, &z.f), 0);
	drain(v);
	assert_int_equal(z.ndone, 1);
	assert_int_equal(z.res, 0);
	/* (a small file moved to a whole block on the way: its page is there now) */
	assert_int_equal(avfs_fs_tail_page(v->fs, v->f, 3000, &dev, &keep), 0);
	disk = v->d.data + dev;
	for (unsigned i = 0; i < PG; i++)
		if (disk[i] != (i < 3000 ? pat(i, 6) : 0))
			fail_msg("page byte %u is %#x", i, disk[i]);

	st.size = 8000;
	assert_int_equal(avfs_fs_setattr(v->fs, v->f, AVFS_SET_SIZE, &st, v->now), 0);
	memset(v->buf, 0x55, 8000);
	assert_int_equal(io(v, fio(&r, v->f, false, 0, 8000, v->buf)), 0);
	drain(v);
	assert_int_equal(r.res, 8000);
	for (unsigned i = 0; i < 8000; i++)
		if (v->buf[i] != (i < 3000 ? pat(i, 6) : 0))
			fail_msg("byte %u is %#x", i, v->buf[i]);
	env_free(v);
}

/* ---- 5. deadlines ---- */

/* Coalescing: RT requests that follow each other on the disk go as one command when the
 * batch runs — over the requests' own buffers as pieces when they are apart in memory (reads
 * land in each, writes come from each), as one buffer when they follow each other there too —
 * and each request completes with its own bytes; the seek metrics count them as requests. */
static void test_engine_coalesced_command(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	uint8_t *disk = calloc(1, DEV), *bufs[3];
	const uint64_t at = 1u << 20, n = 64 * KB;
	struct req r[3];
	long i;

	(void)state;
	v->d.data = disk;
	for (uint64_t k = 0; k < 3 * n; k++)
		disk[at + k] = pat(k, 5);
	/* reads into three buffers apart in memory, the second submitted first */
	for (int k = 0; k < 3; k++) {
		bufs[k] = v->buf + (uint64_t)(2 - k) * (1u << 20);	/* 2 MiB, 1 MiB, 0 */
		fio(&r[k], 0, false, at + (uint64_t)k * n, n, bufs[k])->deadline = v->now + 2 * NS;
	}
	assert_int_equal(io(v, &r[1].f), 0);
	assert_int_equal(io(v, &r[0].f), 0);
	assert_int_equal(io(v, &r[2].f), 0);
	assert_int_equal(v->d.n, 0);		/* held */
	v->now = v->d.armed;
	avfs_engine_tick(v->e, v->now);
	assert_int_equal(inflight(v), 1);
	i = oldest(v);
	assert_int_equal(cmd_off(v, i), at);
	assert_int_equal(v->d.c[i].r.len, 3 * n);
	assert_int_equal(v->d.c[i].r.iovcnt, 3);
	complete(v, i, v->now + 10 * MS);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(r[k].ndone, 1);
		assert_int_equal(r[k].res, (int64_t)n);
		for (uint64_t b = 0; b < n; b++)
			assert_int_equal(bufs[k][b], pat((uint64_t)k * n + b, 5));
	}
	assert_int_equal(avfs_engine_metrics(v->e)->seeks, 3);	/* three requests, one seek */

	/* writes from one buffer in order: one command, one buffer */
	for (int k = 0; k < 2; k++) {
		memset(v->buf + (uint64_t)k * n, 0x40 + k, n);
		fio(&r[k], 0, true, 2 * at + (uint64_t)k * n, n, v->buf + (uint64_t)k * n)->deadline =
			v->now + 2 * NS;
		assert_int_equal(io(v, &r[k].f), 0);
	}
	v->now = v->d.armed;
	avfs_engine_tick(v->e, v->now);
	i = oldest(v);
	assert_int_equal(v->d.c[i].r.len, 2 * n);
	assert_int_equal(v->d.c[i].r.iovcnt, 0);
	assert_ptr_equal(v->d.c[i].r.buf, v->buf);
	complete(v, i, v->now + 10 * MS);
	assert_int_equal(r[0].ndone + r[1].ndone, 2);
	assert_int_equal(disk[2 * at], 0x40);
	assert_int_equal(disk[2 * at + 2 * n - 1], 0x41);
	drain(v);
	env_free(v);
	free(disk);
}

/* A request whose deadline has passed is refused with -ETIME: done() does not run, nothing is
 * issued, metrics.etime counts it. */
static void test_engine_deadline_passed_refused(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	struct req r;

	(void)state;
	raw(v, &r, false, 0, 64 * KB)->deadline = v->now;
	assert_int_equal(io(v, &r.f), -ETIME);
	raw(v, &r, false, 0, 64 * KB)->deadline = v->now - MS;
	assert_int_equal(io(v, &r.f), -ETIME);
	assert_int_equal(r.ndone, 0);
	assert_int_equal(v->d.n, 0);
	assert_int_equal(avfs_engine_metrics(v->e)->etime, 2);
	assert_int_equal(avfs_engine_metrics(v->e)->rt.requests, 0);
	env_free(v);
}

/* An RT request completed after its deadline counts as a miss, one completed before it not;
 * both return their bytes and the deadline they were scheduled with. */
static void test_engine_late_completion_is_a_miss(void **state)
{
	struct avfs_engine_conf c = conf(false, 2, 0);
	struct env *v = env_new(&c, false);
	struct avfs_metrics_summary s;
	const struct avfs_metrics *m;
	struct req a, b;

	(void)state;
	raw(v, &a, false, 0, 64 * KB)->deadline = T0 + 50 * MS;
	raw(v, &b, false, 1u << 20, 64 * KB)->deadline = T0 + 50 * MS;
	assert_int_equal(io(v, &a.f), 0);
	assert_int_equal(io(v, &b.f), 0);
	assert_int_equal(v->d.n, 2);
	complete(v, 0, T0 + 10 * MS);
	complete(v, 1, T0 + 60 * MS);
	assert_int_equal(a.res, 64 * KB);
	assert_int_equal(b.res, 64 * KB);
	assert_int_equal(a.f.sched_deadline, T0 + 50 * MS);
	assert_int_equal(b.f.sched_deadline, T0 + 50 * MS);
	m = avfs_engine_metrics(v->e);
	assert_int_equal(m->rt.requests, 2);
	assert_int_equal(m->rt.misses, 1);
	assert_int_equal(m->rt.failed, 0);
	assert_int_equal(m->etime, 0);
	avfs_metrics_summary(m, v->now, &s);
	assert_true(s.p0 == 0.5);
	assert_true(s.margin_min_ms == -10.0);
	env_free(v);
}

/* An RT request whose deadline passes while it waits for the device fails with -ETIME without
 * reaching it: etime and the failed RT requests count it, the trace shows it. */
static void test_engine_deadline_passes_in_queue(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	const struct avfs_metrics *m;
	struct req a, b;

	(void)state;
	assert_int_equal(io(v, raw(v, &a, false, 0, 64 * KB)), 0);
	raw(v, &b, false, 1u << 20, 64 * KB)->deadline = T0 + 20 * MS;
	assert_int_equal(io(v, &b.f), 0);
	assert_int_equal(v->d.n, 1);
	complete(v, 0, T0 + 30 * MS);
	assert_int_equal(b.ndone, 1);
	assert_int_equal(b.res, -ETIME);
	assert_int_equal(v->d.n, 1);
	m = avfs_engine_metrics(v->e);
	assert_int_equal(m->etime, 1);
	assert_int_equal(m->rt.requests, 1);
	assert_int_equal(m->rt.failed, 1);
	assert_int_equal(v->d.ntr, 2);
	assert_int_equal(v->d.tr[1].cls, AVFS_TRACE_RT);
	assert_int_equal(v->d.tr[1].result, -ETIME);
	env_free(v);
}

/* A real-time request the mixer holds (until its hold time, papers/001) goes when the tick
 * comes at the time the engine armed, not a nanosecond before. */
static void test_engine_hold_timer_armed(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	struct req r;
	int64_t w;

	(void)state;
	raw(v, &r, false, 0, 64 * KB)->deadline = T0 + 2 * NS;
	assert_int_equal(io(v, &r.f), 0);
	assert_int_equal(v->d.n, 0);
	w = avfs_engine_wake(v->e);
	assert_true(w > v->now && w < T0 + 2 * NS);
	assert_int_equal(v->d.armed, w);
	avfs_engine_tick(v->e, w - 1);
	assert_int_equal(v->d.n, 0);
	avfs_engine_tick(v->e, w);
	v->now = w;
	assert_int_equal(v->d.n, 1);
	complete(v, 0, w + 10 * MS);
	assert_int_equal(r.res, 64 * KB);
	assert_int_equal(avfs_engine_metrics(v->e)->rt.misses, 0);
	env_free(v);
}

/* ---- 6. cancel ---- */

/* A queued raw read is withdrawn: done() with -ECANCELED at once, no command ever; one on the
 * device gives -EBUSY and completes; a canceled one is not known any more. */
static void test_engine_cancel_queued_read(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	struct req a, b;

	(void)state;
	assert_int_equal(io(v, raw(v, &a, false, 0, 64 * KB)), 0);
	assert_int_equal(io(v, raw(v, &b, false, 1u << 20, 64 * KB)), 0);
	assert_int_equal(avfs_engine_cancel(v->e, &b.f, v->now), 0);
	assert_int_equal(b.ndone, 1);
	assert_int_equal(b.res, -ECANCELED);
	assert_int_equal(avfs_engine_cancel(v->e, &a.f, v->now), -EBUSY);
	assert_int_equal(a.ndone, 0);
	assert_int_equal(avfs_engine_cancel(v->e, &b.f, v->now), -ENOENT);
	assert_int_equal(b.ndone, 1);
	complete(v, 0, v->now + MS);
	assert_int_equal(a.res, 64 * KB);
	assert_int_equal(v->d.n, 1);
	assert_true(avfs_engine_idle(v->e));
	assert_int_equal(avfs_engine_metrics(v->e)->be_requests, 1);
	assert_int_equal(avfs_engine_wake(v->e), 0);
	env_free(v);
}

/* A write already planned cannot be withdrawn (its blocks are mapped): -EBUSY, and it
 * completes. */
static void test_engine_cancel_planned_write_busy(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, true);
	struct req a, w;

	(void)state;
	assert_int_equal(io(v, raw(v, &a, false, DEV - (1u << 20), 64 * KB)), 0);
	memset(v->buf, 0x11, BS);
	assert_int_equal(io(v, fio(&w, v->f, true, 0, BS, v->buf)), 0);
	assert_int_equal(v->d.n, 1);
	assert_int_equal(avfs_engine_cancel(v->e, &w.f, v->now), -EBUSY);
	assert_int_equal(w.ndone, 0);
	drain(v);
	assert_int_equal(w.ndone, 1);
	assert_int_equal(w.res, BS);
	assert_int_equal(v->d.n, 2);
	env_free(v);
}

/* A request whose done() has run is the front end's again: cancel says -ENOENT and runs no
 * done() a second time; the engine still goes idle. */
static void test_engine_cancel_after_done(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	struct req a;

	(void)state;
	assert_int_equal(io(v, raw(v, &a, false, 0, 64 * KB)), 0);
	complete(v, 0, v->now + MS);
	assert_int_equal(a.ndone, 1);
	assert_int_equal(avfs_engine_cancel(v->e, &a.f, v->now), -ENOENT);
	assert_int_equal(a.ndone, 1);
	assert_int_equal(a.res, 64 * KB);
	assert_true(avfs_engine_idle(v->e));
	env_free(v);
}

/* ---- 7. the bandwidth class ---- */

static const struct avfs_service_req stream_svc = { .rate = 1000000, .buffer = 1000000 };

/* A stream of 1 MB/s with a 1 MB buffer, its bucket full now; no admission test. */
static uint64_t reserve(struct env *v)
{
	char why[160] = "";
	int64_t id = avfs_engine_reserve(v->e, &stream_svc, 0, NULL, AVFS_RESERVE_UNCHECKED, v->now,
					 NULL, why, sizeof(why));

	if (id <= 0)
		fprintf(stderr, "reserve: %s\n", why);
	assert_true(id > 0);
	return (uint64_t)id;
}

/* Four raw reads of 256 KiB on the stream: three within its bucket, the fourth above it
 * (213,568 bytes of tokens are left for it). */
static void stream_reqs(struct env *v, uint64_t id, struct req r[4])
{
	for (int i = 0; i < 4; i++) {
		raw(v, &r[i], false, (uint64_t)(i + 8) << 20, 256 * KB)->stream = id;
		assert_int_equal(io(v, &r[i].f), 0);
	}
}

/* A best-effort read of another client, on the device until the test completes it. */
static void be_busy(struct env *v, struct req *b)
{
	assert_int_equal(io(v, raw(v, b, false, 40u << 20, 64 * KB)), 0);
	assert_int_equal(v->d.n, 1);
}

/* issue 16: which detached reservation covers a request — one on the file first, else one on
 * the directory it was found in; a uid-limited one only that uid's; never another direction, a
 * client's own (owned) one, or a directory's for a file found elsewhere. */
static void test_engine_stream_cover(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct avfs_service_req w = stream_svc;
	int64_t file, dir, only;
	int owner;

	(void)state;
	w.write = true;
	file = avfs_engine_reserve(v->e, &w, 10, NULL, AVFS_RESERVE_UNCHECKED, v->now, NULL, NULL,
				   0);
	dir = avfs_engine_reserve(v->e, &w, 20, NULL, AVFS_RESERVE_UNCHECKED | AVFS_RESERVE_DIR,
				  v->now, NULL, NULL, 0);
	only = avfs_engine_reserve(v->e, &w, 30, NULL, AVFS_RESERVE_UNCHECKED | AVFS_RESERVE_DIR,
				   v->now, NULL, NULL, 0);
	assert_true(file > 0 && dir > 0 && only > 0);
	assert_int_equal(avfs_engine_reserve(v->e, &w, 40, &owner, AVFS_RESERVE_UNCHECKED |
					     AVFS_RESERVE_DIR, v->now, NULL, NULL, 0) > 0, 1);
	avfs_engine_stream(v->e, (uint64_t)only)->uid_only = true;
	avfs_engine_stream(v->e, (uint64_t)only)->cover_uid = 1000;
	assert_int_equal(avfs_engine_stream_cover(v->e, 10, 20, 0, true), file);
	assert_int_equal(avfs_engine_stream_cover(v->e, 11, 20, 0, true), dir);
	assert_int_equal(avfs_engine_stream_cover(v->e, 11, 0, 0, true), 0);
	assert_int_equal(avfs_engine_stream_cover(v->e, 20, 0, 0, true), 0);
	assert_int_equal(avfs_engine_stream_cover(v->e, 11, 20, 0, false), 0);
	assert_int_equal(avfs_engine_stream_cover(v->e, 12, 30, 0, true), 0);
	assert_int_equal(avfs_engine_stream_cover(v->e, 12, 30, 1000, true), only);
	assert_int_equal(avfs_engine_stream_cover(v->e, 12, 40, 0, true), 0);
	env_free(v);
}

/* issue 16: reservations whose buffers are the daemon's memory are admitted only while their
 * buffers fit in conf.wb_max (-ENOBUFS, nothing admitted); others are not counted. */
static void test_engine_buffered_reservations_bounded(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct avfs_service_req r = stream_svc;
	struct env *v;
	char why[160] = "";

	(void)state;
	c.wb_max = 3u << 20;
	v = env_new(&c, false);
	r.buffer = 2u << 20;
	assert_true(avfs_engine_reserve(v->e, &r, 1, NULL, AVFS_RESERVE_UNCHECKED |
					AVFS_RESERVE_BUFFERED, v->now, NULL, why, sizeof(why)) > 0);
	assert_int_equal(avfs_engine_reserve(v->e, &r, 2, NULL, AVFS_RESERVE_UNCHECKED |
					     AVFS_RESERVE_BUFFERED, v->now, NULL, why,
					     sizeof(why)), -ENOBUFS);
	assert_non_null(strstr(why, "buffer memory: 2.0 MiB asked, 1.0 MiB of 3.0 left"));
	assert_int_equal(avfs_engine_stream_count(v->e), 1);
	assert_true(avfs_engine_reserve(v->e, &r, 2, NULL, AVFS_RESERVE_UNCHECKED, v->now, NULL,
					why, sizeof(why)) > 0);	/* a client's buffer */
	env_free(v);
}


/* Two held 256 KiB writes a and b of the file's first pages, then a read of its first page:
 * the read is not sent while the writes are on the device, and once all are done it has the
 * bytes they wrote (byte). */
static void held_then_read(struct env *v, struct req *a, struct req *b, uint8_t byte)
{
	struct req rd;

	fio(&rd, v->f, false, 0, 4096, v->buf + 4 * BS);
	assert_int_equal(io(v, &rd.f), 0);
	assert_int_equal(find(v, AVFS_DISK_READ, 0), -1);	/* (the writes are on the device) */
	drain(v);
	assert_int_equal(a->res, 256 * KB);
	assert_int_equal(b->res, 256 * KB);
	assert_int_equal(rd.res, 4096);
	assert_int_equal(v->buf[4 * BS], byte);
}
/* issue 16: write-behind. A reserved writer's planned file write may be answered at once while
 * the stream's held memory stays within its buffer; the next one that would pass it waits (it
 * is counted); a read of the same pages waits for the held write; done() still runs for
 * each, and then nothing is held. A write of no reservation is not held with
 * write-behind-be 0; a parked one never. */
static void test_engine_wb_hold_bounded(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);	/* several commands at once */
	struct env *v;
	struct avfs_service_req w = { .rate = 1000000, .buffer = 600 * KB, .write = true };
	struct req a, b, x;
	struct avfs_estream *s;
	int64_t id;

	(void)state;
	c.wb_be_max = 0;
	v = env_new(&c, true);
	id = avfs_engine_reserve(v->e, &w, v->f, NULL, AVFS_RESERVE_UNCHECKED, v->now, NULL,
				 NULL, 0);
	assert_true(id > 0);
	s = avfs_engine_stream(v->e, (uint64_t)id);
	memset(v->buf, 0x5a, 2 * BS);
	fio(&x, v->f, true, 0, 256 * KB, v->buf);	/* no reservation, no write-behind-be */
	assert_int_equal(io(v, &x.f), 0);
	assert_false(avfs_engine_wb_hold(v->e, &x.f, 256 * KB));
	drain(v);
	fio(&a, v->f, true, 0, 256 * KB, v->buf)->stream = (uint64_t)id;
	assert_int_equal(io(v, &a.f), 0);
	assert_true(avfs_engine_wb_hold(v->e, &a.f, 256 * KB));
	assert_false(avfs_engine_wb_hold(v->e, &a.f, 256 * KB));	/* once */
	fio(&b, v->f, true, 256 * KB, 256 * KB, v->buf + 256 * KB)->stream = (uint64_t)id;
	assert_int_equal(io(v, &b.f), 0);
	assert_false(avfs_engine_wb_hold(v->e, &b.f, 512 * KB));	/* 256 + 512 > 600 KiB */
	assert_int_equal(s->wb_bytes, 256 * KB);
	assert_int_equal(s->wb_waits, 1);
	assert_int_equal(avfs_engine_wb_total(v->e), 256 * KB);
	/* a read of the held write's pages is not sent before the write is complete */
	held_then_read(v, &a, &b, 0x5a);
	assert_int_equal(s->wb_bytes, 0);
	assert_int_equal(s->wb_peak, 256 * KB);
	assert_int_equal(avfs_engine_wb_total(v->e), 0);
	env_free(v);
}

/* issue 18: best-effort write-behind. A planned write of no reservation may be answered at
 * once while the best-effort writes' held memory stays within write-behind-be and no other
 * flow has a request in the engine; one that would pass the bound waits; a read of the same
 * pages waits for the held write; done() still runs for each, and then nothing is held. A
 * reservation's accounting is not touched. */
static void test_engine_wb_hold_be_bounded(void **state)
{
	struct avfs_engine_conf c = conf(false, 4, 0);
	struct env *v;
	struct req a, b, o, x;

	(void)state;
	c.wb_be_max = 600 * KB;
	v = env_new(&c, true);
	memset(v->buf, 0x6b, 2 * BS);
	/* another flow's request in the engine: the device has work, no early answer */
	fio(&o, v->f, true, 3 * BS, 4096, v->buf + 3 * BS)->flow = 99;
	assert_int_equal(io(v, &o.f), 0);
	fio(&x, v->f, true, 0, 64 * KB, v->buf);
	assert_int_equal(io(v, &x.f), 0);
	assert_false(avfs_engine_wb_hold(v->e, &x.f, 64 * KB));
	drain(v);
	assert_int_equal(x.res, 64 * KB);
	fio(&a, v->f, true, 0, 256 * KB, v->buf);
	assert_int_equal(io(v, &a.f), 0);
	assert_true(avfs_engine_wb_hold(v->e, &a.f, 256 * KB));
	assert_false(avfs_engine_wb_hold(v->e, &a.f, 256 * KB));	/* once */
	fio(&b, v->f, true, 256 * KB, 256 * KB, v->buf + 256 * KB);
	assert_int_equal(io(v, &b.f), 0);
	assert_false(avfs_engine_wb_hold(v->e, &b.f, 512 * KB));	/* 256 + 512 > 600 KiB */
	assert_int_equal(avfs_engine_wb_be_total(v->e), 256 * KB);
	assert_int_equal(avfs_engine_wb_total(v->e), 0);
	held_then_read(v, &a, &b, 0x6b);
	assert_int_equal(avfs_engine_wb_be_total(v->e), 0);
	env_free(v);
}

/* Requests within the bucket go real time, due when the rest of the buffer drains at the
 * rate. */
static void test_engine_bw_within_bucket_real_time(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req r[3];
	uint64_t id;

	(void)state;
	id = reserve(v);
	for (int i = 0; i < 3; i++) {
		raw(v, &r[i], false, (uint64_t)(i + 8) << 20, 256 * KB)->stream = id;
		assert_int_equal(io(v, &r[i].f), 0);
	}
	assert_int_equal(avfs_engine_parked(v->e), 0);
	drain(v);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(r[i].res, 256 * KB);
		assert_int_equal(r[i].f.sched_deadline,
				 avfs_service_deadline(&stream_svc, 256 * KB, T0));
	}
	assert_int_equal(avfs_engine_metrics(v->e)->rt.requests, 3);
	assert_int_equal(avfs_engine_stream(v->e, id)->qos.requests, 3);
	env_free(v);
}

/* Above its bucket a request is parked while another client's best-effort request is pending;
 * once none is, it goes as spare best effort (no deadline, not counted as pending). */
static void test_engine_bw_parked_while_be_pending(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req b, r[4];
	uint64_t id;

	(void)state;
	id = reserve(v);
	be_busy(v, &b);
	stream_reqs(v, id, r);
	assert_int_equal(avfs_engine_parked(v->e), 1);
	assert_int_equal(avfs_engine_be_pending(v->e), 1);
	assert_true(avfs_engine_wake(v->e) > v->now);	/* its tokens' time */
	assert_int_equal(v->d.n, 1);
	complete(v, 0, v->now + MS);
	assert_int_equal(avfs_engine_parked(v->e), 0);
	assert_int_equal(avfs_engine_be_pending(v->e), 0);
	drain(v);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r[i].res, 256 * KB);
		assert_true(i < 3 ? r[i].f.sched_deadline != 0 : r[i].f.sched_deadline == 0);
	}
	assert_int_equal(avfs_engine_stream(v->e, id)->qos.requests, 3);
	assert_int_equal(avfs_engine_stream(v->e, id)->qos.be_requests, 1);
	env_free(v);
}

/* With no best-effort request pending a request above the bucket goes at once as spare best
 * effort. */
static void test_engine_bw_spare_when_disk_free(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req r[4];
	uint64_t id;

	(void)state;
	id = reserve(v);
	stream_reqs(v, id, r);
	assert_int_equal(avfs_engine_parked(v->e), 0);
	assert_int_equal(avfs_engine_be_pending(v->e), 0);
	drain(v);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r[i].res, 256 * KB);
		assert_true(i < 3 ? r[i].f.sched_deadline != 0 : r[i].f.sched_deadline == 0);
	}
	env_free(v);
}

/* A parked request goes real time when its tokens come: at the time avfs_engine_wake() gives
 * (and ops.arm was told), not a nanosecond before. */
static void test_engine_bw_tokens_promote_parked(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req b, r[4];
	uint64_t id;
	int64_t w;

	(void)state;
	id = reserve(v);
	be_busy(v, &b);
	stream_reqs(v, id, r);
	assert_int_equal(avfs_engine_parked(v->e), 1);
	w = avfs_engine_wake(v->e);
	assert_true(w > v->now);
	assert_int_equal(v->d.armed, w);
	avfs_engine_tick(v->e, w - 1);
	assert_int_equal(avfs_engine_parked(v->e), 1);
	avfs_engine_tick(v->e, w);
	v->now = w;
	assert_int_equal(avfs_engine_parked(v->e), 0);
	drain(v);
	assert_int_equal(b.f.sched_deadline, 0);
	assert_int_equal(r[3].res, 256 * KB);
	assert_int_equal(r[3].f.sched_deadline, avfs_service_deadline(&stream_svc, 256 * KB, w));
	env_free(v);
}

/* A spare request stays best effort when its stream's tokens come later: it is not sent
 * again as real time (promotion cost Fahrrad's four streams 6 misses in avfs-sim isolation;
 * engine/bwclass.c), and no tick is wanted for it. */
static void test_engine_bw_spare_stays_spare(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req r[4];
	uint64_t id;

	(void)state;
	id = reserve(v);
	stream_reqs(v, id, r);	/* r[0] on the device, r[3] queued as spare */
	assert_int_equal(avfs_engine_parked(v->e), 0);
	v->now += 10 * NS;	/* the bucket refills meanwhile */
	avfs_engine_tick(v->e, v->now);
	drain(v);
	assert_int_equal(r[3].res, 256 * KB);
	assert_int_equal(r[3].f.sched_deadline, 0);
	assert_int_equal(avfs_engine_stream(v->e, id)->qos.requests, 3);
	assert_int_equal(avfs_engine_stream(v->e, id)->qos.be_requests, 1);
	env_free(v);
}

/* A spare request carries no deadline: its client's own one having passed by the time the disk
 * serves it is no miss and no -ETIME (it is time nobody else asked for). */
static void test_engine_bw_spare_past_client_deadline(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req r[3], late;
	uint64_t id;

	(void)state;
	id = reserve(v);
	for (int i = 0; i < 3; i++) {
		raw(v, &r[i], false, (uint64_t)(i + 8) << 20, 256 * KB)->stream = id;
		assert_int_equal(io(v, &r[i].f), 0);
	}
	raw(v, &late, false, 11u << 20, 256 * KB)->stream = id;
	late.f.deadline = T0 + 30 * MS;
	assert_int_equal(io(v, &late.f), 0);	/* above the bucket: spare */
	v->now = T0 + 100 * MS;
	drain(v);
	assert_int_equal(late.res, 256 * KB);
	assert_int_equal(late.f.sched_deadline, 0);
	assert_int_equal(avfs_engine_metrics(v->e)->etime, 0);
	assert_int_equal(avfs_engine_metrics(v->e)->rt.misses, 0);
	env_free(v);
}

/* When the one best-effort request pending is canceled nobody else asks for the disk: the
 * engine wants a tick at once, and in it a parked request goes as spare best effort (not only
 * when its tokens come). */
static void test_engine_bw_parked_goes_spare_when_be_canceled(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req b, r[4];
	uint64_t id;

	(void)state;
	id = reserve(v);
	raw(v, &r[0], false, 8u << 20, 256 * KB)->stream = id;
	assert_int_equal(io(v, &r[0].f), 0);	/* real time, on the device */
	assert_int_equal(io(v, raw(v, &b, false, 40u << 20, 64 * KB)), 0);
	for (int i = 1; i < 4; i++) {
		raw(v, &r[i], false, (uint64_t)(i + 8) << 20, 256 * KB)->stream = id;
		assert_int_equal(io(v, &r[i].f), 0);
	}
	assert_int_equal(avfs_engine_parked(v->e), 1);
	assert_int_equal(avfs_engine_cancel(v->e, &b.f, v->now), 0);
	assert_int_equal(b.res, -ECANCELED);
	assert_int_equal(avfs_engine_be_pending(v->e), 0);
	assert_int_equal(avfs_engine_wake(v->e), v->now);
	assert_int_equal(v->d.armed, v->now);
	avfs_engine_tick(v->e, v->now);
	assert_int_equal(avfs_engine_parked(v->e), 0);
	drain(v);
	assert_int_equal(r[3].res, 256 * KB);
	assert_int_equal(r[3].f.sched_deadline, 0);
	env_free(v);
}

/* Releasing a stream sends its parked requests on as best effort; its requests already queued
 * complete as they were scheduled; nothing is left to wake for. */
static void test_engine_bw_release_sends_parked_be(void **state)
{
	struct avfs_engine_conf c = conf(false, 1, 0);
	struct env *v = env_new(&c, false);
	struct req b, r[4];
	uint64_t id;

	(void)state;
	id = reserve(v);
	be_busy(v, &b);
	stream_reqs(v, id, r);
	assert_int_equal(avfs_engine_parked(v->e), 1);
	assert_int_equal(avfs_engine_release(v->e, id, v->now), 0);
	assert_int_equal(avfs_engine_parked(v->e), 0);
	assert_null(avfs_engine_stream(v->e, id));
	assert_int_equal(avfs_engine_release(v->e, id, v->now), -ENOENT);
	assert_int_equal(avfs_engine_wake(v->e), 0);
	assert_int_equal(v->d.armed, 0);
	drain(v);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r[i].res, 256 * KB);
		assert_true(i < 3 ? r[i].f.sched_deadline != 0 : r[i].f.sched_deadline == 0);
	}
	env_free(v);
}

/* ---- 8. trace and metrics ---- */

/* The trace has one record per device request when it completes (a chunked one once, with its
 * commands' time), classed rt, be, hp or meta (a commit's writes). */
static void test_engine_trace_classes(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 64 * KB);
	struct env *v = env_new(&c, true);
	struct req rt, be, hp, w;
	size_t ncls[AVFS_TRACE_NCLASS] = { 0 }, cmds = 0, meta = 0;

	(void)state;
	raw(v, &rt, false, DEV - (1u << 20), 64 * KB)->deadline = T0 + 300 * MS;
	rt.f.label = 7;
	assert_int_equal(io(v, &rt.f), 0);
	assert_int_equal(io(v, raw(v, &be, false, DEV - (2u << 20), 256 * KB)), 0);
	raw(v, &hp, false, DEV - (3u << 20), 64 * KB)->cls = AVFS_TRACE_HP;
	assert_int_equal(io(v, &hp.f), 0);
	memset(v->buf + (4u << 20), 0x22, BS);
	assert_int_equal(io(v, fio(&w, v->f, true, 0, BS, v->buf + (4u << 20))), 0);
	avfs_engine_commit(v->e, v->now);
	drain(v);
	assert_int_equal(v->d.commits, 1);
	for (size_t i = 0; i < v->d.n; i++) {
		cmds += v->d.c[i].r.op != AVFS_DISK_FLUSH;
		meta += v->d.c[i].r.op == AVFS_DISK_WRITE && !is_data(v, (long)i);
	}
	assert_int_equal(v->d.ntr, cmds - 3);	/* the chunked read: 4 commands, 1 request */
	for (size_t i = 0; i < v->d.ntr; i++) {
		const struct avfs_trace_rec *t = &v->d.tr[i];

		ncls[t->cls]++;
		assert_int_equal(t->result, 0);
		if (t->cls == AVFS_TRACE_RT) {
			assert_int_equal(t->stream, 7);
			assert_int_equal(t->deadline_ns, T0 + 300 * MS);
			assert_int_equal(t->offset, DEV - (1u << 20));
			assert_int_equal(t->service_ns, MS);
		} else if (t->cls == AVFS_TRACE_BE && !t->write) {
			assert_int_equal(t->offset, DEV - (2u << 20));
			assert_int_equal(t->length, 256 * KB);
			assert_int_equal(t->service_ns, 4 * MS);
		}
	}
	assert_int_equal(ncls[AVFS_TRACE_RT], 1);
	assert_int_equal(ncls[AVFS_TRACE_BE], 2);
	assert_int_equal(ncls[AVFS_TRACE_HP], 1);
	assert_int_equal(ncls[AVFS_TRACE_META], meta);
	assert_true(meta >= 1);	/* at least the transaction: journal and commit record */
	env_free(v);
}

/* Utilization is the union of the intervals with a command on the device, and the commands are
 * the completions the test made: 10 + 10 ms alone, then two overlapping 15 ms, in 60 ms. */
static void test_engine_metrics_utilization_and_commands(void **state)
{
	struct avfs_engine_conf c = conf(false, 2, 0);
	struct env *v = env_new(&c, false);
	struct avfs_metrics_summary s;
	struct req r[4];

	(void)state;
	assert_int_equal(io(v, raw(v, &r[0], false, 0, 64 * KB)), 0);
	complete(v, 0, T0 + 10 * MS);
	v->now = T0 + 20 * MS;
	assert_int_equal(io(v, raw(v, &r[1], false, 1u << 20, 64 * KB)), 0);
	complete(v, 1, T0 + 30 * MS);
	v->now = T0 + 40 * MS;
	assert_int_equal(io(v, raw(v, &r[2], false, 2u << 20, 64 * KB)), 0);
	v->now = T0 + 45 * MS;
	assert_int_equal(io(v, raw(v, &r[3], false, 3u << 20, 64 * KB)), 0);
	assert_int_equal(inflight(v), 2);
	complete(v, 2, T0 + 50 * MS);
	complete(v, 3, T0 + 55 * MS);
	avfs_metrics_summary(avfs_engine_metrics(v->e), T0 + 60 * MS, &s);
	assert_int_equal(s.commands, 4);
	assert_true(s.utilization > 35.0 / 60 - 1e-9 && s.utilization < 35.0 / 60 + 1e-9);
	assert_int_equal(s.be_requests, 4);
	assert_int_equal(s.be_bytes, 4 * 64 * KB);
	/* papers/003 eq. (2): ½ Σ T_i² / 60 ms, with T_i 10 ms each */
	assert_true(s.e_twait_ms > 10.0 / 3 - 1e-9 && s.e_twait_ms < 10.0 / 3 + 1e-9);
	env_free(v);
}

/* ---- 9. bad input ---- */

/* Refused, with nothing issued and no done(): len 0, a raw range past the device or not
 * aligned, a buffer smaller than len, no buffer, a file without a file system, an unknown
 * stream. */
static void test_engine_bad_input_refused(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	struct req r;

	(void)state;
	assert_int_equal(io(v, raw(v, &r, false, 0, 0)), -EINVAL);
	assert_int_equal(io(v, raw(v, &r, false, DEV - 64 * KB, 128 * KB)), -EINVAL);
	assert_int_equal(io(v, raw(v, &r, false, DEV, 512)), -EINVAL);
	assert_int_equal(io(v, raw(v, &r, false, 100, 64 * KB)), -EINVAL);
	assert_int_equal(io(v, raw(v, &r, false, 0, 1000)), -EINVAL);
	assert_int_equal(io(v, fio(&r, 0, false, 0, 64 * KB, v->buf + 512)), -EINVAL);
	raw(v, &r, false, 0, 64 * KB)->cap = 64 * KB - 1;
	assert_int_equal(io(v, &r.f), -EINVAL);
	assert_int_equal(io(v, fio(&r, 0, false, 0, 64 * KB, NULL)), -EINVAL);
	assert_int_equal(io(v, fio(&r, 2, false, 0, 100, v->buf)), -EINVAL);
	raw(v, &r, false, 0, 64 * KB)->done = NULL;
	assert_int_equal(io(v, &r.f), -EINVAL);
	raw(v, &r, false, 0, 64 * KB)->stream = 99;
	assert_int_equal(io(v, &r.f), -ENOENT);
	assert_int_equal(r.ndone, 0);
	assert_int_equal(v->d.n, 0);
	assert_true(avfs_engine_idle(v->e));
	assert_int_equal(avfs_engine_metrics(v->e)->etime, 0);
	env_free(v);
}

/* A command the device refuses fails its request with the device's error (done() runs,
 * nothing is on the device); the next one goes. */
static void test_engine_submit_refused_fails_request(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v = env_new(&c, false);
	struct req a, b;

	(void)state;
	v->d.refuse = -EIO;
	assert_int_equal(io(v, raw(v, &a, false, 0, 64 * KB)), 0);
	assert_int_equal(a.ndone, 1);
	assert_int_equal(a.res, -EIO);
	assert_int_equal(v->d.n, 0);
	v->d.refuse = 0;
	assert_int_equal(io(v, raw(v, &b, false, 0, 64 * KB)), 0);
	assert_int_equal(v->d.n, 1);
	drain(v);
	assert_int_equal(b.res, 64 * KB);
	env_free(v);
}

/* ---- freeing ---- */


/* ---- read-ahead of deadline streams (rahead.c) ---- */

#define RA_IO (64 * KB)
#define RA_PACE (100 * MS)	/* the test stream's deadlines: one read every 100 ms */

/* The k-th read (64 KiB, in order from `from`) of a deadline stream that began at t0, into
 * the place of v->buf's upper half that its file bytes name. */
static int ra_get(struct env *v, struct req *r, uint64_t from, unsigned k, int64_t t0)
{
	struct avfs_fio *f = fio(r, v->f, false, from + (uint64_t)k * RA_IO, RA_IO,
				 v->buf + (4u << 20) + from + (uint64_t)k * RA_IO);

	f->deadline = t0 + NS + (int64_t)k * RA_PACE;
	return io(v, f);
}

/* The bytes read into the k-th read's place are the file's, written with seed. */
static void ra_check(struct env *v, uint64_t from, unsigned k, unsigned seed)
{
	const uint8_t *b = v->buf + (4u << 20) + from + (uint64_t)k * RA_IO;

	for (uint64_t i = 0; i < RA_IO; i++)
		if (b[i] != pat(from + (uint64_t)k * RA_IO + i, seed))
			fail_msg("read %u byte %llu is %#x", k, (unsigned long long)i, b[i]);
}

static struct avfs_engine_ra_counts ra_counts_of(struct env *v)
{
	struct avfs_engine_ra_counts k;

	avfs_engine_ra_counts(v->e, &k);
	return k;
}

/* An engine reading 4 pieces ahead over a file of len bytes written with seed. */
static struct env *ra_env(uint64_t len, unsigned seed)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v;

	c.ra_bytes = 4 * RA_IO;
	v = env_new(&c, true);
	file_write(v, 0, len, seed);
	return v;
}

/* A stream's first two reads (from `from`, begun at t0): the second one starts read-ahead. */
static void ra_begin(struct env *v, struct req r[2], uint64_t from, int64_t t0)
{
	uint64_t before = ra_counts_of(v).fetches;

	assert_int_equal(ra_get(v, &r[0], from, 0, t0), 0);
	assert_int_equal(ra_counts_of(v).fetches, before);	/* one read: no pace yet */
	assert_int_equal(ra_get(v, &r[1], from, 1, t0), 0);
	assert_int_equal(ra_counts_of(v).fetches, before + 4);	/* the stream's reads [2, 6) */
}

/* A deadline stream's second read in order starts read-ahead: pieces of its request size up to
 * read-ahead bytes past it, due at the pace its deadlines set; its next reads are answered
 * from them at once, with the file's bytes; a best-effort reader gets none; a write of the
 * file drops them, and the read after it sees the new bytes. */
static void test_engine_ra_deadline_stream(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v;
	struct avfs_engine_ra_counts k0;
	struct req r[8], b[2];
	int64_t t0;

	(void)state;
	c.ra_bytes = 4 * RA_IO;
	v = env_new(&c, true);
	file_write(v, 0, 16 * RA_IO, 5);
	assert_int_equal(io(v, fio(&b[0], v->f, false, 0, RA_IO, v->buf)), 0);	/* best effort */
	assert_int_equal(io(v, fio(&b[1], v->f, false, RA_IO, RA_IO, v->buf + RA_IO)), 0);
	drain(v);
	assert_int_equal(ra_counts_of(v).fetches, 0);

	t0 = v->now;
	ra_begin(v, r, 0, t0);
	drain(v);
	for (unsigned k = 0; k < 2; k++) {
		assert_int_equal(r[k].res, RA_IO);
		ra_check(v, 0, k, 5);
	}
	for (unsigned k = 2; k < 5; k++) {
		assert_int_equal(ra_get(v, &r[k], 0, k, t0), 0);
		assert_int_equal(r[k].ndone, 1);	/* at once, from memory */
		assert_int_equal(r[k].res, RA_IO);
		assert_int_equal(r[k].f.sched_deadline, r[k].f.deadline);
		ra_check(v, 0, k, 5);
		assert_int_equal(ra_counts_of(v).fetches, 4 + k - 1);	/* one more piece ahead */
		drain(v);
	}
	assert_int_equal(ra_counts_of(v).served, 3);
	/* the file changes where pieces are: they go; the next read reads the new bytes */
	file_write(v, 5 * RA_IO, 2 * RA_IO, 7);
	assert_true(ra_counts_of(v).dropped >= 3);
	assert_int_equal(ra_get(v, &r[5], 0, 5, t0), 0);
	assert_int_equal(r[5].ndone, 0);	/* from the disk */
	drain(v);
	assert_int_equal(r[5].res, RA_IO);
	ra_check(v, 0, 5, 7);
	/* a driver that stops: what is read ahead goes, and nothing more is read ahead */
	k0 = ra_counts_of(v);
	assert_int_equal(ra_get(v, &r[6], 0, 6, t0), 0);	/* (5 began a new run) */
	assert_int_equal(ra_counts_of(v).fetches, k0.fetches + 4);
	avfs_engine_ra_stop(v->e, v->now);
	assert_int_equal(ra_counts_of(v).dropped, k0.dropped + 4);
	drain(v);
	assert_int_equal(r[6].res, RA_IO);
	ra_check(v, 0, 6, 7);
	assert_int_equal(ra_get(v, &r[7], 0, 7, t0), 0);
	drain(v);
	assert_int_equal(r[7].res, RA_IO);
	assert_int_equal(ra_counts_of(v).fetches, k0.fetches + 4);
	env_free(v);
}

/* The engine's settings by name: read-ahead's three (sizes and a time, 0 meaning off); a bad
 * value is refused with why and changes nothing; others go to the scheduler's. */
static void test_engine_conf_settings(void **state)
{
	struct avfs_engine_conf c;
	char why[160];

	(void)state;
	avfs_engine_conf_default(&c);
	assert_int_equal(c.ra_bytes, 8u << 20);
	assert_int_equal(c.ra_start, 5u << 19);
	assert_int_equal(c.ra_ramp_ns, 30 * NS);
	assert_int_equal(avfs_engine_conf_set(&c, "read-ahead-start", "1M", why, sizeof(why)), 0);
	assert_int_equal(c.ra_start, 1u << 20);
	assert_int_equal(avfs_engine_conf_set(&c, "read-ahead-ramp", "0", why, sizeof(why)), 0);
	assert_int_equal(c.ra_ramp_ns, 0);
	assert_int_equal(avfs_engine_conf_set(&c, "read-ahead-ramp", "90s", why, sizeof(why)), 0);
	assert_int_equal(c.ra_ramp_ns, 90 * NS);
	why[0] = 0;
	assert_int_equal(avfs_engine_conf_set(&c, "read-ahead-ramp", "soon", why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "read-ahead-ramp"));
	assert_int_equal(c.ra_ramp_ns, 90 * NS);
	assert_int_equal(avfs_engine_conf_set(&c, "read-ahead-start", "65M", why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(c.ra_start, 1u << 20);
	assert_int_equal(avfs_engine_conf_set(&c, "coalesce-ahead", "6M", why, sizeof(why)), 0);
	assert_int_equal(c.sched.coalesce_ahead, 6u << 20);
	assert_int_equal(avfs_engine_conf_set(&c, "read-ahead-stop", "1", why, sizeof(why)),
			 -ENOENT);
}

/* Read-ahead starts small: a run of reads in order begins with read-ahead-start ahead, which
 * grows linearly to read-ahead over read-ahead-ramp (as of the client's reads), whole pieces;
 * a run that begins again (a seek) starts small again; ramp 0 reads all of it at once. */
static void test_engine_ra_starts_small(void **state)
{
	struct avfs_engine_conf c = conf(true, 1, 0);
	struct env *v;
	struct req r[8], z[2];
	int64_t t0;

	(void)state;
	c.ra_bytes = 8 * RA_IO;
	c.ra_start = 2 * RA_IO;
	c.ra_ramp_ns = 10 * RA_PACE;
	v = env_new(&c, true);
	file_write(v, 0, 32 * RA_IO, 4);
	t0 = v->now;
	assert_int_equal(ra_get(v, &r[0], 0, 0, t0), 0);
	assert_int_equal(ra_get(v, &r[1], 0, 1, t0), 0);
	assert_int_equal(ra_counts_of(v).fetches, 2);	/* 2 pieces ahead: reads [2, 4) */
	drain(v);
	/* half the ramp later: 2 + (8 - 2) / 2 = 5 pieces ahead of read 3's end: [4, 9) */
	v->now = t0 + 5 * RA_PACE;
	assert_int_equal(ra_get(v, &r[2], 0, 2, t0), 0);
	assert_int_equal(ra_get(v, &r[3], 0, 3, t0), 0);
	assert_int_equal(r[2].ndone + r[3].ndone, 2);	/* from memory */
	assert_int_equal(ra_counts_of(v).fetches, 2 + 5);
	drain(v);
	/* past the ramp: the whole read-ahead, 8 pieces past read 4: up to 13 */
	v->now = t0 + 11 * RA_PACE;
	assert_int_equal(ra_get(v, &r[4], 0, 4, t0), 0);
	assert_int_equal(ra_counts_of(v).fetches, 2 + 5 + 4);
	drain(v);
	for (unsigned k = 0; k < 5; k++) {
		assert_int_equal(r[k].res, RA_IO);
		ra_check(v, 0, k, 4);
	}
	/* a reader elsewhere begins its own run: small again */
	assert_int_equal(ra_get(v, &z[0], 20 * RA_IO, 0, v->now), 0);
	assert_int_equal(ra_get(v, &z[1], 20 * RA_IO, 1, v->now), 0);
	assert_int_equal(ra_counts_of(v).fetches, 2 + 5 + 4 + 2);
	drain(v);
	env_free(v);

	/* no ramp: all of it at once */
	c.ra_ramp_ns = 0;
	v = env_new(&c, true);
	file_write(v, 0, 16 * RA_IO, 4);
	t0 = v->now;
	assert_int_equal(ra_get(v, &r[0], 0, 0, t0), 0);
	assert_int_equal(ra_get(v, &r[1], 0, 1, t0), 0);
	assert_int_equal(ra_counts_of(v).fetches, 8);
	drain(v);
	env_free(v);
}

/* A read whose piece is still on its way waits for it (and hurries it to its own deadline)
 * and gets its bytes when it lands; one canceled meanwhile waits no more; two readers of one
 * file at two places each have their own pieces. */
static void test_engine_ra_waits_cancel_two_readers(void **state)
{
	struct env *v = ra_env(16 * RA_IO, 3);
	struct req a[6], z[4];
	int64_t t0 = v->now;
	size_t k;

	(void)state;
	ra_begin(v, a, 0, t0);
	/* reads 2 and 3 come while their pieces are still held; read 2 is due 50 ms before its
	 * piece (the pace guessed later): the piece goes with read 2's deadline */
	fio(&a[2], v->f, false, 2 * RA_IO, RA_IO, v->buf + (4u << 20) + 2 * RA_IO)->deadline =
		t0 + NS + 2 * RA_PACE - 50 * MS;
	assert_int_equal(io(v, &a[2].f), 0);
	assert_int_equal(ra_get(v, &a[3], 0, 3, t0), 0);
	assert_int_equal(a[2].ndone + a[3].ndone, 0);
	assert_int_equal(avfs_engine_cancel(v->e, &a[3].f, v->now), 0);
	assert_int_equal(a[3].res, -ECANCELED);
	assert_int_equal(avfs_engine_cancel(v->e, &a[3].f, v->now), -ENOENT);
	/* another reader of the same file, further on: its own window */
	ra_begin(v, z, 8 * RA_IO, t0);
	assert_int_equal(ra_counts_of(v).fetches, 4 + 2 + 4);
	drain(v);
	for (k = 0; k < 3; k++) {
		assert_int_equal(a[k].res, RA_IO);
		ra_check(v, 0, (unsigned)k, 3);
	}
	assert_int_equal(a[3].ndone, 1);	/* canceled once, never answered again */
	for (k = 0; k < v->d.ntr && v->d.tr[k].deadline_ns != a[2].f.deadline; k++)
		;
	assert_true(k < v->d.ntr);	/* the piece went with read 2's deadline */
	assert_int_equal(ra_get(v, &z[2], 8 * RA_IO, 2, t0), 0);
	assert_int_equal(z[2].ndone, 1);
	ra_check(v, 8 * RA_IO, 2, 3);
	assert_int_equal(ra_get(v, &a[4], 0, 4, t0), 0);
	assert_int_equal(a[4].ndone, 1);
	ra_check(v, 0, 4, 3);
	drain(v);
	env_free(v);
}

/* A change that does not go through the engine (a truncate and a grow through the fs core)
 * is seen: the pieces read before it are not served; the read gets the zeros the file holds
 * now. */
static void test_engine_ra_file_changed_behind(void **state)
{
	struct avfs_stat st = { .size = RA_IO };
	struct env *v = ra_env(8 * RA_IO, 4);
	struct req r[3];
	int64_t t0 = v->now;

	(void)state;
	ra_begin(v, r, 0, t0);
	drain(v);
	v->now += MS;
	assert_int_equal(avfs_fs_setattr(v->fs, v->f, AVFS_SET_SIZE, &st, v->now), 0);
	st.size = 8 * RA_IO;
	v->now += MS;
	assert_int_equal(avfs_fs_setattr(v->fs, v->f, AVFS_SET_SIZE, &st, v->now), 0);
	assert_int_equal(ra_get(v, &r[2], 0, 2, t0), 0);
	drain(v);
	assert_int_equal(r[2].res, RA_IO);
	for (uint64_t i = 0; i < RA_IO; i++)
		if (v->buf[(4u << 20) + 2 * RA_IO + i])
			fail_msg("byte %llu is %#x, not 0", (unsigned long long)i,
				 v->buf[(4u << 20) + 2 * RA_IO + i]);
	assert_int_equal(ra_counts_of(v).served, 0);
	env_free(v);
}

/* Freeing the engine with requests in every state (queued, on the device, a write waiting for
 * its read-modify-write read, parked, a commit's write out) forgets them (no done()) and frees
 * what the engine allocated for them (LeakSanitizer checks at exit). */
static void test_engine_free_forgets_held_requests(void **state)
{
	struct avfs_engine_conf c = conf(false, 2, 0);
	struct env *v = env_new(&c, true);
	struct req a, b, w, r[4];
	uint8_t *p = pattern(1000, 100, 10, 1);
	uint64_t id;

	(void)state;
	file_write(v, 0, PG, 10);
	avfs_engine_commit(v->e, v->now);
	assert_int_equal(inflight(v), 1);	/* the commit's first write */
	assert_int_equal(io(v, fio(&w, v->f, true, 1000, 100, p + 1)), 0);	/* its read out */
	assert_int_equal(inflight(v), 2);
	assert_int_equal(io(v, raw(v, &a, false, DEV - (1u << 20), 64 * KB)), 0);
	assert_int_equal(io(v, raw(v, &b, false, DEV - (2u << 20), 64 * KB)), 0);
	id = reserve(v);
	stream_reqs(v, id, r);
	assert_int_equal(avfs_engine_parked(v->e), 1);
	avfs_engine_free(v->e);
	assert_int_equal(w.ndone + a.ndone + b.ndone + r[0].ndone + r[3].ndone, 0);
	avfs_fsio_abandon(v->io);	/* a commit was under way: nothing more to write */
	avfs_disk_close(v->disk);
	free(v->buf);
	free(v);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_rotational_one_in_flight),
		cmocka_unit_test(test_engine_nospc_waits_for_freed_blocks),
		cmocka_unit_test(test_engine_nonrot_depth_in_flight),
		cmocka_unit_test(test_engine_flush_takes_a_slot),
		cmocka_unit_test(test_engine_fua_last_chunk_only),
		cmocka_unit_test(test_engine_commit_flush_after_data),
		cmocka_unit_test(test_engine_checkpoint_after_commits),
		cmocka_unit_test(test_engine_commit_chunked_flush),
		cmocka_unit_test(test_engine_commit_survives_crash),
		cmocka_unit_test(test_engine_commit_waits_for_rmw_write),
		cmocka_unit_test(test_engine_commit_when_dirty_waits_for_its_write),
		cmocka_unit_test(test_engine_commit_periodic),
		cmocka_unit_test(test_engine_commit_wait_pulls_data),
		cmocka_unit_test(test_engine_commit_flush_error),
		cmocka_unit_test(test_engine_file_unaligned_roundtrip),
		cmocka_unit_test(test_engine_file_partial_page_rmw),
		cmocka_unit_test(test_engine_two_writes_one_page),
		cmocka_unit_test(test_engine_small_promoted_in_flight),
		cmocka_unit_test(test_engine_zero_tail_before_growing),
		cmocka_unit_test(test_engine_coalesced_command),
		cmocka_unit_test(test_engine_deadline_passed_refused),
		cmocka_unit_test(test_engine_late_completion_is_a_miss),
		cmocka_unit_test(test_engine_deadline_passes_in_queue),
		cmocka_unit_test(test_engine_hold_timer_armed),
		cmocka_unit_test(test_engine_cancel_queued_read),
		cmocka_unit_test(test_engine_cancel_planned_write_busy),
		cmocka_unit_test(test_engine_cancel_after_done),
		cmocka_unit_test(test_engine_bw_within_bucket_real_time),
		cmocka_unit_test(test_engine_bw_parked_while_be_pending),
		cmocka_unit_test(test_engine_bw_spare_when_disk_free),
		cmocka_unit_test(test_engine_bw_tokens_promote_parked),
		cmocka_unit_test(test_engine_bw_spare_stays_spare),
		cmocka_unit_test(test_engine_bw_spare_past_client_deadline),
		cmocka_unit_test(test_engine_bw_parked_goes_spare_when_be_canceled),
		cmocka_unit_test(test_engine_bw_release_sends_parked_be),
		cmocka_unit_test(test_engine_trace_classes),
		cmocka_unit_test(test_engine_metrics_utilization_and_commands),
		cmocka_unit_test(test_engine_bad_input_refused),
		cmocka_unit_test(test_engine_submit_refused_fails_request),
		cmocka_unit_test(test_engine_free_forgets_held_requests),
		cmocka_unit_test(test_engine_stream_cover),
		cmocka_unit_test(test_engine_buffered_reservations_bounded),
		cmocka_unit_test(test_engine_wb_hold_bounded),
		cmocka_unit_test(test_engine_wb_hold_be_bounded),
		cmocka_unit_test(test_engine_ra_deadline_stream),
		cmocka_unit_test(test_engine_ra_starts_small),
		cmocka_unit_test(test_engine_conf_settings),
		cmocka_unit_test(test_engine_ra_waits_cancel_two_readers),
		cmocka_unit_test(test_engine_ra_file_changed_behind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

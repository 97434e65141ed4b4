/*
 * test_disk.c — one set of behaviour tests run against every disk backend (io_uring on a
 * temporary image, the simulated disk), plus what only the simulated disk promises:
 * virtual time advances exactly by the model's service times, content is sparse, SEEK works.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk.h"
#include "diskio.h"
#include "hddmodel.h"
#include "simdisk.h"
#include "simengine.h"

#define IMAGE_SIZE (64u << 20)

struct fixture {
	const struct backend *be;
	struct avfs_disk *d;
	struct avfs_sim_engine *eng;
	char path[64];
};

struct backend {
	const char *name;
	int (*open)(struct fixture *f);
};

static int open_uring(struct fixture *f)
{
	int fd;

	snprintf(f->path, sizeof(f->path), "/var/tmp/avfs-test-disk-XXXXXX");
	fd = mkstemp(f->path);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, IMAGE_SIZE)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return avfs_uring_open(f->path, 0, 16, &f->d);
}

static int open_sim(struct fixture *f)
{
	int err = avfs_sim_engine_new(&f->eng);

	if (err)
		return err;
	return avfs_simdisk_open_model(f->eng, "avfs-250g", 1, AVFS_SIMDISK_TRACE, &f->d);
}

/* The simulated disk taken as one that cannot scatter: disk.c's bounce buffer serves vectored
 * requests instead. */
static int open_sim_bounced(struct fixture *f)
{
	int err = open_sim(f);

	if (!err)
		f->d->vectored = false;
	return err;
}

static const struct backend backends[] = {
	{ "uring", open_uring },
	{ "sim", open_sim },
	{ "sim-bounced", open_sim_bounced },
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int err;

	f->be = *state;
	err = f->be->open(f);
	if (err) {
		fprintf(stderr, "cannot open backend %s: %s\n", f->be->name, strerror(-err));
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	avfs_disk_close(f->d);
	avfs_sim_engine_free(f->eng);
	if (f->path[0])
		unlink(f->path);
	free(f);
	return 0;
}

/* Written data reads back identically, for several sizes and offsets (start, middle, end). */
static void test_disk_write_read_back(void **state)
{
	struct fixture *f = *state;
	struct avfs_disk *d = f->d;
	const uint32_t lbs = d->info.lbs;
	const uint32_t sizes[] = { lbs, 4096, 65536, 1 << 20 };
	uint8_t *w = avfs_disk_alloc_buf(d, 1 << 20), *r = avfs_disk_alloc_buf(d, 1 << 20);

	for (unsigned i = 0; i < 4; i++) {
		uint32_t len = sizes[i];
		uint64_t last = d->info.size / lbs - len / lbs;
		uint64_t lbas[] = { 0, 7 * (4096 / lbs) + 1, last / 2, last };

		for (unsigned j = 0; j < 4; j++) {
			seed_fill(w, len, i * 16 + j + 1);
			assert_int_equal(disk_io(d, AVFS_DISK_WRITE, lbas[j], len, w, 0), len);
			memset(r, 0xee, len);
			assert_int_equal(disk_io(d, AVFS_DISK_READ, lbas[j], len, r, 0), len);
			assert_memory_equal(w, r, len);
		}
	}
	free(w);
	free(r);
}

/* A vectored write (pieces from three separate buffers) reads back whole, and a whole write
 * reads back into pieces; a vectored request with the cookie of a bounced one in between
 * keeps its own data. */
static void test_disk_vectored(void **state)
{
	struct fixture *f = *state;
	struct avfs_disk *d = f->d;
	const uint32_t lens[3] = { 4096, 65536, 8192 }, len = 4096 + 65536 + 8192;
	uint8_t *p[3], *w = avfs_disk_alloc_buf(d, len), *r = avfs_disk_alloc_buf(d, len);
	struct iovec v[3];
	struct avfs_disk_req q = { .op = AVFS_DISK_WRITE, .lba = 4096 / d->info.lbs * 33,
				   .len = len, .buf_index = -1, .iov = v, .iovcnt = 3 };
	struct avfs_disk_cqe c;

	for (unsigned i = 0, at = 0; i < 3; at += lens[i++]) {
		p[i] = avfs_disk_alloc_buf(d, lens[i]);
		seed_fill(p[i], lens[i], 40 + i);
		memcpy(w + at, p[i], lens[i]);
		v[i] = (struct iovec){ .iov_base = p[i], .iov_len = lens[i] };
	}
	assert_int_equal(avfs_disk_io_sync(d, &q), len);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, q.lba, len, r, 0), len);
	assert_memory_equal(w, r, len);

	/* the other way: whole data written, read into the pieces */
	seed_fill(w, len, 77);
	assert_int_equal(disk_io(d, AVFS_DISK_WRITE, q.lba, len, w, 0), len);
	for (unsigned i = 0; i < 3; i++)
		memset(p[i], 0xee, lens[i]);
	q.op = AVFS_DISK_READ;
	assert_int_equal(avfs_disk_io_sync(d, &q), len);
	for (unsigned i = 0, at = 0; i < 3; at += lens[i++])
		assert_memory_equal(p[i], w + at, lens[i]);

	/* two in flight at once, distinct cookies: each completion fills its own pieces */
	q.cookie = 1;
	assert_int_equal(avfs_disk_submit(d, &q), 0);
	q.cookie = 2;
	q.lba += len / d->info.lbs;
	q.iovcnt = 1;
	q.len = lens[0];
	v[0].iov_base = r;
	memset(r, 0xee, lens[0]);
	assert_int_equal(avfs_disk_submit(d, &q), 0);
	for (int got = 0; got < 2;) {
		int n = avfs_disk_reap(d, &c, 1);

		if (n == 1) {
			assert_true(c.cookie == 1 || c.cookie == 2);
			assert_int_equal(c.res, c.cookie == 1 ? len : lens[0]);
			got++;
		} else {
			assert_int_equal(avfs_disk_wait(d), 0);
		}
	}
	assert_memory_equal(p[0], w, lens[0]);
	for (uint32_t i = 0; i < lens[0]; i++)	/* never written there: zeros */
		assert_int_equal(r[i], 0);
	for (unsigned i = 0; i < 3; i++)
		free(p[i]);
	free(w);
	free(r);
}

/* Blocks never written read as zeros. */
static void test_disk_unwritten_reads_zero(void **state)
{
	struct fixture *f = *state;
	uint8_t *r = avfs_disk_alloc_buf(f->d, 65536), *z = calloc(1, 65536);

	memset(r, 0x5a, 65536);
	assert_int_equal(disk_io(f->d, AVFS_DISK_READ, 1024, 65536, r, 0), 65536);
	assert_memory_equal(r, z, 65536);
	free(r);
	free(z);
}

/* FLUSH completes with 0, and a FUA write is readable afterwards. */
static void test_disk_flush_and_fua(void **state)
{
	struct fixture *f = *state;
	uint8_t *w = avfs_disk_alloc_buf(f->d, 8192), *r = avfs_disk_alloc_buf(f->d, 8192);
	struct avfs_disk_req fl = { .op = AVFS_DISK_FLUSH, .buf_index = -1, .cookie = 9 };

	seed_fill(w, 8192, 77);
	assert_int_equal(disk_io(f->d, AVFS_DISK_WRITE, 64, 8192, w, AVFS_DISK_FUA), 8192);
	assert_int_equal(avfs_disk_io_sync(f->d, &fl), 0);
	assert_int_equal(disk_io(f->d, AVFS_DISK_READ, 64, 8192, r, 0), 8192);
	assert_memory_equal(w, r, 8192);
	free(w);
	free(r);
}

/* Bad requests are refused at submit with -EINVAL and nothing is queued. */
static void test_disk_bad_requests(void **state)
{
	struct fixture *f = *state;
	struct avfs_disk *d = f->d;
	uint32_t lbs = d->info.lbs;
	uint64_t nblk = d->info.size / lbs;
	uint8_t *b = avfs_disk_alloc_buf(d, 1 << 20);
	struct avfs_disk_req ok = { .op = AVFS_DISK_READ, .lba = 0, .len = 4096, .buf = b,
				    .buf_index = -1 };
	struct avfs_disk_req r;

	r = ok, r.buf = b + 1;			/* unaligned buffer */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.len = 100;			/* length not a block multiple */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.len = 0;			/* empty */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.lba = nblk;			/* starts at the end */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.lba = nblk - 1;		/* straddles the end */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.lba = UINT64_MAX - 1;		/* would overflow */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.len = AVFS_DISK_MAX_IO + lbs;	/* huge */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.flags = 0x80;			/* unknown flag */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.buf = NULL;
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.op = 42;
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	r = ok, r.buf_index = 3;		/* nothing registered */
	assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	{
		struct iovec v[2] = { { b, 4096 }, { b + 8192, 4096 } };

		r = ok, r.buf = NULL, r.iov = v, r.iovcnt = 2, r.len = 8192;
		assert_int_equal(avfs_disk_check(d, &r), 0);
		r.buf = b;			/* both a buffer and pieces */
		assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
		r.buf = NULL, r.len = 4096;	/* pieces do not add up to len */
		assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
		r.len = 8192, v[1].iov_base = b + 1;	/* an unaligned piece */
		assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
		v[1].iov_base = b + 8192, v[1].iov_len = 100;	/* a piece not whole blocks */
		r.len = 4196;
		assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
		v[1].iov_len = 4096, r.len = 8192, r.iovcnt = AVFS_DISK_MAX_IOV + 1;	/* too many */
		assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
		r.iovcnt = 0;			/* iov without a count */
		assert_int_equal(avfs_disk_submit(d, &r), -EINVAL);
	}
	r = ok, r.op = AVFS_DISK_SEEK;
	assert_int_equal(avfs_disk_submit(d, &r), d->info.has_seek ? 0 : -EOPNOTSUPP);
	if (d->info.has_seek) {
		struct avfs_disk_cqe c;

		assert_int_equal(avfs_disk_wait(d), 0);
		assert_int_equal(avfs_disk_reap(d, &c, 1), 1);
	}
	assert_int_equal(avfs_disk_inflight(d), 0);
	assert_int_equal(avfs_disk_wait(d), -EAGAIN);	/* nothing in flight */
	free(b);
}

/* Several requests in flight at once all complete, each with its own cookie. */
static void test_disk_many_in_flight(void **state)
{
	struct fixture *f = *state;
	struct avfs_disk *d = f->d;
	uint8_t *b = avfs_disk_alloc_buf(d, 8 * 65536);
	struct avfs_disk_cqe c[8];
	unsigned seen = 0, got = 0;

	for (unsigned i = 0; i < 8; i++) {
		struct avfs_disk_req r = { .op = AVFS_DISK_WRITE, .lba = 4096 + i * 2048,
					   .len = 65536, .buf = b + i * 65536, .buf_index = -1,
					   .cookie = 100 + i };

		seed_fill(b + i * 65536, 65536, i);
		assert_int_equal(avfs_disk_submit(d, &r), 0);
	}
	assert_int_equal(avfs_disk_inflight(d), 8);
	while (got < 8) {
		int n;

		assert_int_equal(avfs_disk_wait(d), 0);
		n = avfs_disk_reap(d, c, 8);
		assert_true(n >= 1);
		for (int i = 0; i < n; i++) {
			assert_int_equal(c[i].res, 65536);
			assert_true(c[i].cookie >= 100 && c[i].cookie < 108);
			seen |= 1u << (c[i].cookie - 100);
		}
		got += (unsigned)n;
	}
	assert_int_equal(seen, 0xff);
	assert_int_equal(avfs_disk_inflight(d), 0);
	free(b);
}

/* The device describes itself sensibly. */
static void test_disk_info(void **state)
{
	struct fixture *f = *state;
	const struct avfs_disk_info *in = &f->d->info;

	assert_true(in->size > 0 && in->size % in->lbs == 0);
	assert_true(in->lbs >= 512 && (in->lbs & (in->lbs - 1)) == 0);
	assert_true(in->pbs >= in->lbs);
	assert_true(in->mem_align >= 1);
	assert_true(in->model[0]);
}

/* Virtual time advances exactly by the model's service times: a twin model fed the same
 * commands at the same times predicts every completion to the nanosecond. */
static void test_simdisk_time_is_model_time(void **state)
{
	struct avfs_sim_engine *eng;
	struct avfs_disk *d;
	struct avfs_hdd_params p;
	struct avfs_hdd *twin;
	uint8_t *b;
	uint64_t x = 42;

	(void)state;
	assert_int_equal(avfs_sim_engine_new(&eng), 0);
	assert_int_equal(avfs_simdisk_open_model(eng, "avfs-250g", 7, 0, &d), 0);
	assert_int_equal(avfs_hdd_params_lookup("avfs-250g", &p), 0);
	p.seed = 7;
	assert_int_equal(avfs_hdd_new(&p, &twin), 0);
	b = avfs_disk_alloc_buf(d, 1 << 20);
	for (int i = 0; i < 500; i++) {
		struct avfs_hdd_result r;
		uint64_t lba, t0;
		uint32_t len;
		bool wr;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		lba = (x >> 20) % (d->info.size / 512 - 2048);
		len = (uint32_t)(1 + (x >> 8) % 256) * 512;
		wr = (x >> 4) & 1;
		avfs_sim_run_until(eng, avfs_sim_now(eng) + (x >> 40) % 20000000);
		t0 = avfs_sim_now(eng);
		assert_int_equal(avfs_hdd_service(twin, t0, wr ? AVFS_HDD_WRITE : AVFS_HDD_READ,
						  lba, len / 512, false, &r), 0);
		assert_int_equal(disk_io(d, wr ? AVFS_DISK_WRITE : AVFS_DISK_READ, lba, len, b, 0),
				 len);
		assert_int_equal(avfs_sim_now(eng), r.end);
		assert_true(r.end > t0);
	}
	free(b);
	avfs_hdd_free(twin);
	avfs_disk_close(d);
	avfs_sim_engine_free(eng);
}

/* Content is sparse: a 250 GB disk holds only what was written, and writing zeros over
 * a page gives its memory back. */
static void test_simdisk_sparse(void **state)
{
	struct avfs_sim_engine *eng;
	struct avfs_disk *d;
	uint8_t *b;

	(void)state;
	assert_int_equal(avfs_sim_engine_new(&eng), 0);
	assert_int_equal(avfs_simdisk_open_model(eng, "avfs-250g", 1, 0, &d), 0);
	assert_true(d->info.size == 250000000000ull);
	b = avfs_disk_alloc_buf(d, 65536);
	seed_fill(b, 65536, 3);
	assert_int_equal(disk_io(d, AVFS_DISK_WRITE, (d->info.size / 4096) * 8 - 128, 65536, b, 0), 65536);
	assert_int_equal(avfs_simdisk_pages(d), 16);
	memset(b, 0, 65536);
	assert_int_equal(disk_io(d, AVFS_DISK_WRITE, (d->info.size / 4096) * 8 - 128, 65536, b, 0), 65536);
	assert_int_equal(avfs_simdisk_pages(d), 0);
	free(b);
	avfs_disk_close(d);
	avfs_sim_engine_free(eng);
}

/* SEEK is honoured: after seeking to a far cylinder, a read there needs no seek, and the
 * trace records submit <= start < end, LBA, length and seek distance of every request. */
static void test_simdisk_seek_and_trace(void **state)
{
	struct avfs_sim_engine *eng;
	struct avfs_disk *d;
	struct avfs_disk_req sk = { .op = AVFS_DISK_SEEK, .buf_index = -1 };
	const struct avfs_simdisk_rec *t;
	struct avfs_hdd *h;
	uint8_t *b;
	size_t n;

	(void)state;
	assert_int_equal(avfs_sim_engine_new(&eng), 0);
	assert_int_equal(avfs_simdisk_open_model(eng, "avfs-250g", 1, AVFS_SIMDISK_TRACE, &d), 0);
	h = avfs_simdisk_model(d);
	b = avfs_disk_alloc_buf(d, 4096);
	sk.lba = avfs_hdd_cyl_first_sector(h, 100000);
	assert_int_equal(avfs_disk_io_sync(d, &sk), 0);
	assert_int_equal(disk_io(d, AVFS_DISK_READ, sk.lba + 8, 4096, b, 0), 4096);
	t = avfs_simdisk_trace(d, &n);
	assert_int_equal(n, 2);
	assert_int_equal(t[0].op, AVFS_DISK_SEEK);
	assert_int_equal(t[0].seek_cyl, 100000);
	assert_true(t[0].seek_ns > 10e6);	/* a long seek, about 14 ms */
	assert_int_equal(t[1].seek_cyl, 0);
	assert_true(t[1].seek_ns == 0);
	assert_int_equal(t[1].lba, sk.lba + 8);
	assert_int_equal(t[1].len, 4096);
	for (size_t i = 0; i < n; i++)
		assert_true(t[i].submit <= t[i].start && t[i].start < t[i].end);
	free(b);
	avfs_disk_close(d);
	avfs_sim_engine_free(eng);
}

#define FOR_BACKEND(fn, be) \
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)(be))
#define BACKEND_TESTS(be) \
	FOR_BACKEND(test_disk_write_read_back, be), \
	FOR_BACKEND(test_disk_vectored, be), \
	FOR_BACKEND(test_disk_unwritten_reads_zero, be), \
	FOR_BACKEND(test_disk_flush_and_fua, be), \
	FOR_BACKEND(test_disk_bad_requests, be), \
	FOR_BACKEND(test_disk_many_in_flight, be), \
	FOR_BACKEND(test_disk_info, be)

int main(void)
{
	const struct CMUnitTest uring[] = { BACKEND_TESTS(&backends[0]) };
	const struct CMUnitTest sim[] = {
		BACKEND_TESTS(&backends[1]),
		cmocka_unit_test(test_simdisk_time_is_model_time),
		cmocka_unit_test(test_simdisk_sparse),
		cmocka_unit_test(test_simdisk_seek_and_trace),
	};
	const struct CMUnitTest bounced[] = { BACKEND_TESTS(&backends[2]) };
	int fails = 0;

	fails += _cmocka_run_group_tests("disk/uring", uring, sizeof(uring) / sizeof(uring[0]),
					 NULL, NULL);
	fails += _cmocka_run_group_tests("disk/sim-bounced", bounced,
					 sizeof(bounced) / sizeof(bounced[0]), NULL, NULL);
	fails += _cmocka_run_group_tests("disk/sim", sim, sizeof(sim) / sizeof(sim[0]), NULL,
					 NULL);
	return fails ? 1 : 0;
}

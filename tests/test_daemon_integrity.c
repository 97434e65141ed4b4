/*
 * test_daemon_integrity.c — data integrity through a real avfsd mount (SPEC §9, §14): random
 * writes, reads and truncates against an in-memory reference, across clean unmounts and
 * remounts; then kill -9 of the daemon after fsync (quiet and under load): the next mount
 * replays, fsync'ed data is intact, nothing shows data it never had, fsck.avfs -n is clean.
 * Not the POSIX surface (test_daemon_posix.sh) nor libavio (test_daemon_avio.c).
 * env: AVFSD, MKFS, FSCK (the built binaries); AVFS_SEED (optional). Exit 77 without root/FUSE.
 */
#include "daemon_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1u << 20)
#define PAGE 4096u

/* ---- random numbers (xorshift64*, seeded: a failure can be replayed with AVFS_SEED) ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void rnd_fill(uint8_t *p, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t v = rnd();

		memcpy(p + i, &v, 8);
	}
	for (; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* ---- files against references ---- */

struct ref {
	const char *name;
	uint8_t *data;		/* what the file holds */
	size_t size, cap;
};

/* the whole file equals ref; prints the first difference */
static bool same_file(const char *name, const uint8_t *want, size_t size)
{
	char p[256];
	uint8_t *got = malloc(size + 1);
	size_t have = 0;
	struct stat st;
	bool ok = false;
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_RDONLY);
	if (fd < 0 || !got) {
		note("%s: open: %s", name, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) || (size_t)st.st_size != size) {
		note("%s: size %lld, want %zu", name, (long long)st.st_size, size);
		goto out;
	}
	while (have < size + 1) {
		ssize_t n = read(fd, got + have, size + 1 - have);

		if (n < 0) {
			note("%s: read at %zu: %s", name, have, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	if (have != size) {
		note("%s: read %zu bytes, want %zu", name, have, size);
		goto out;
	}
	for (size_t i = 0; i < size; i++)
		if (got[i] != want[i]) {
			note("%s: first difference at byte %zu (got %02x, want %02x)", name, i,
			     got[i], want[i]);
			goto out;
		}
	ok = true;
out:
	if (fd >= 0)
		close(fd);
	free(got);
	return ok;
}

static bool write_all(int fd, const uint8_t *p, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);

		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return true;
}

/*
 * ops random operations on the files: writes (also past the end, leaving holes), reads
 * checked against the reference, truncates, fsyncs. false at the first disagreement.
 */
static bool random_ops(struct ref *refs, int nrefs, int ops)
{
	uint8_t *buf = malloc(2 * MiB), *got = malloc(2 * MiB);
	int fds[8];
	bool ok = false;
	int i;

	for (i = 0; i < nrefs; i++) {
		char p[256];

		path_of(p, sizeof(p), refs[i].name);
		fds[i] = open(p, O_RDWR | O_CREAT, 0644);
		if (fds[i] < 0) {
			note("open %s: %s", p, strerror(errno));
			return false;
		}
	}
	for (int op = 0; op < ops; op++) {
		struct ref *r = &refs[rnd() % (uint64_t)nrefs];
		int fd = fds[r - refs];
		unsigned kind = (unsigned)(rnd() % 100);
		/* sizes spread over 1 B .. 1 MiB, skewed small; sometimes page aligned */
		size_t len = 1 + (size_t)(rnd() % (1u << (rnd() % 21)));
		size_t off = (size_t)(rnd() % (r->cap - len));

		if (rnd() % 4 == 0) {
			off &= ~(size_t)(PAGE - 1);
			len = (len + PAGE - 1) & ~(size_t)(PAGE - 1);
		}
		if (kind < 55) {
			rnd_fill(buf, len);
			if (!write_all(fd, buf, len, (off_t)off)) {
				note("op %d: pwrite %s %zu@%zu: %s", op, r->name, len, off, strerror(errno));
				goto out;
			}
			if (off > r->size)
				memset(r->data + r->size, 0, off - r->size);
			memcpy(r->data + off, buf, len);
			if (off + len > r->size)
				r->size = off + len;
		} else if (kind < 93) {
			ssize_t n = pread(fd, got, len, (off_t)off);
			size_t want = off >= r->size ? 0 : r->size - off < len ? r->size - off : len;

			if (n < 0 || (size_t)n != want) {
				note("op %d: pread %s %zu@%zu: %zd, want %zu", op, r->name, len, off, n,
				     want);
				goto out;
			}
			if (memcmp(got, r->data + off, want)) {
				size_t j = 0;

				while (got[j] == r->data[off + j])
					j++;
				note("op %d: pread %s %zu@%zu differs at file byte %zu", op, r->name, len,
				     off, off + j);
				goto out;
			}
		} else if (kind < 98) {
			size_t to = (size_t)(rnd() % r->cap);

			if (ftruncate(fd, (off_t)to)) {
				note("op %d: ftruncate %s %zu: %s", op, r->name, to, strerror(errno));
				goto out;
			}
			if (to > r->size)
				memset(r->data + r->size, 0, to - r->size);
			r->size = to;
		} else if (kind & 1 ? fsync(fd) : fdatasync(fd)) {
			note("op %d: fsync %s: %s", op, r->name, strerror(errno));
			goto out;
		}
	}
	ok = true;
out:
	for (i = 0; i < nrefs; i++)
		close(fds[i]);
	free(buf);
	free(got);
	return ok;
}

static bool all_same(struct ref *refs, int n)
{
	bool ok = true;

	for (int i = 0; i < n; i++)
		ok &= same_file(refs[i].name, refs[i].data, refs[i].size);
	return ok;
}

static void test_integrity_random_remount(void)
{
	struct ref refs[3] = {
		{ .name = "r0", .cap = 24 * MiB }, { .name = "r1", .cap = 8 * MiB },
		{ .name = "r2", .cap = 3 * MiB },
	};
	bool ok;

	for (int i = 0; i < 3; i++)
		refs[i].data = calloc(1, refs[i].cap);
	for (int round = 0; round < 3; round++) {
		ok = random_ops(refs, 3, 2000);
		check(ok, "random writes/reads/truncates, round %d", round);
		check(all_same(refs, 3), "files equal their references before unmount, round %d",
		      round);
		check(daemon_stop(), "clean unmount, round %d", round);
		check(fsck_clean(), "fsck.avfs -n clean after round %d", round);
		if (!daemon_start()) {
			check(false, "remount after round %d", round);
			break;
		}
		check(all_same(refs, 3), "files equal their references after remount, round %d",
		      round);
	}
	for (int i = 0; i < 3; i++)
		free(refs[i].data);
}

/* a file of size bytes written from data, then fsync'ed */
static bool put_file(const char *name, const uint8_t *data, size_t size, bool sync)
{
	char p[256];
	int fd;
	bool ok;

	path_of(p, sizeof(p), name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return false;
	ok = write_all(fd, data, size, 0) && (!sync || !fsync(fd));
	return !close(fd) && ok;
}

static long long file_size(const char *name)
{
	char p[256];
	struct stat st;

	path_of(p, sizeof(p), name);
	return stat(p, &st) ? -1 : (long long)st.st_size;
}

/* every page of name is the page of a or of b (b NULL: zeros) at the same offset */
static bool pages_from(const char *name, const uint8_t *a, const uint8_t *b, size_t max)
{
	static const uint8_t zero[PAGE];
	char p[256];
	uint8_t *got = malloc(max);
	struct stat st;
	ssize_t n = -1;
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_RDONLY);
	if (fd < 0) {
		free(got);
		return errno == ENOENT && !b;	/* an unsynced new file may be gone */
	}
	if (!fstat(fd, &st) && (size_t)st.st_size <= max)
		n = pread(fd, got, max, 0);
	close(fd);
	if (n != st.st_size) {
		note("%s: size %lld, read %zd, at most %zu", name, (long long)st.st_size, n, max);
		free(got);
		return false;
	}
	for (size_t o = 0; o < (size_t)n; o += PAGE) {
		size_t l = (size_t)n - o < PAGE ? (size_t)n - o : PAGE;

		if (memcmp(got + o, a + o, l) && memcmp(got + o, b ? b + o : zero, l)) {
			note("%s: page at %zu is neither old nor new data", name, o);
			free(got);
			return false;
		}
	}
	free(got);
	return true;
}

static void test_integrity_kill9_quiet(void)
{
	size_t asz = 16 * MiB + 1234, bsz = 4 * MiB, csz = 8 * MiB;
	uint8_t *a = malloc(asz), *b = malloc(bsz), *b2 = malloc(bsz), *c = malloc(csz);
	char p[256];
	int fd;

	rnd_fill(a, asz);
	rnd_fill(b, bsz);
	rnd_fill(c, csz);
	memcpy(b2, b, bsz);
	rnd_fill(b2 + 3 * MiB / 2, MiB);	/* overwritten later, not synced */
	path_of(p, sizeof(p), "crash");
	mkdir(p, 0755);
	check(put_file("crash/a", a, asz, true), "write and fsync crash/a");
	check(put_file("crash/b", b, bsz, true), "write and fsync crash/b");
	/* unsynced: an overwrite in b, a new file c */
	path_of(p, sizeof(p), "crash/b");
	fd = open(p, O_WRONLY);
	check(fd >= 0 && write_all(fd, b2 + 3 * MiB / 2, MiB, 3 * MiB / 2) && !close(fd),
	      "overwrite 1 MiB of crash/b without fsync");
	check(put_file("crash/c", c, csz, false), "write crash/c without fsync");

	check(daemon_kill9(), "kill -9 avfsd, mount detached");
	check(fsck_clean(), "fsck.avfs -n on the crashed image (journal replayed in memory)");
	if (!daemon_start()) {
		check(false, "remount after kill -9");
		goto out;
	}
	check(true, "remount after kill -9 (replay)");
	check(same_file("crash/a", a, asz), "fsync'ed crash/a intact");
	check(file_size("crash/b") == (long long)bsz && pages_from("crash/b", b, b2, bsz),
	      "crash/b: its size, each page old or new data");
	check(pages_from("crash/c", c, NULL, csz), "crash/c: absent, or each page its data or zeros");
	check(daemon_stop(), "clean unmount after recovery");
	check(fsck_clean(), "fsck.avfs -n clean after recovery");
	check(daemon_start(), "mount again");
	check(same_file("crash/a", a, asz), "crash/a intact after a second mount");
out:
	free(a);
	free(b);
	free(b2);
	free(c);
}

#define CHUNK (256u * 1024)
#define NCHUNKS 256u

static void chunk_fill(uint8_t *p, unsigned i)
{
	for (size_t j = 0; j < CHUNK; j += 8) {
		uint64_t v = ((uint64_t)i << 32) ^ (j * 0x9e3779b97f4a7c15ull) ^ 0xa5a5a5a5ull;

		memcpy(p + j, &v, 8);
	}
}

/*
 * A writer appends 256 KiB chunks to a file, fsync after each, and publishes how many are
 * durable; the daemon is killed in the middle. Every published chunk must be back.
 */
static void test_integrity_kill9_under_load(void)
{
	volatile unsigned *durable = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint8_t *want = malloc(CHUNK), *got = malloc(CHUNK);
	unsigned n, i;
	char p[256];
	pid_t w;
	int fd, st;

	*durable = 0;
	path_of(p, sizeof(p), "load");
	w = fork();
	if (w == 0) {
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		for (i = 0; fd >= 0 && i < NCHUNKS; i++) {
			chunk_fill(want, i);
			if (!write_all(fd, want, CHUNK, (off_t)i * CHUNK) || fsync(fd))
				_exit(0);	/* the daemon is gone */
			*durable = i + 1;
		}
		_exit(0);
	}
	for (i = 0; i < 500 && *durable < 24; i++)
		usleep(10000);
	check(*durable >= 24, "writer made %u chunks durable before the kill", *durable);
	check(daemon_kill9(), "kill -9 avfsd under load");
	waitpid(w, &st, 0);
	n = *durable;
	check(fsck_clean(), "fsck.avfs -n on the crashed image");
	if (!daemon_start()) {
		check(false, "remount after kill -9 under load");
		goto out;
	}
	fd = open(p, O_RDONLY);
	bool ok = fd >= 0;
	struct stat sb;

	if (ok && !fstat(fd, &sb) && (uint64_t)sb.st_size < (uint64_t)n * CHUNK) {
		note("load: size %lld, %u chunks were durable", (long long)sb.st_size, n);
		ok = false;
	}
	for (i = 0; ok && i < n; i++) {
		chunk_fill(want, i);
		if (pread(fd, got, CHUNK, (off_t)i * CHUNK) != CHUNK || memcmp(got, want, CHUNK)) {
			note("load: durable chunk %u lost or damaged", i);
			ok = false;
		}
	}
	/* later chunks: their data or zeros, nothing else */
	for (; ok && i < NCHUNKS; i++) {
		ssize_t r = pread(fd, got, CHUNK, (off_t)i * CHUNK);

		if (r <= 0)
			break;
		chunk_fill(want, i);
		for (size_t o = 0; o < (size_t)r; o += PAGE) {
			size_t l = (size_t)r - o < PAGE ? (size_t)r - o : PAGE;
			static const uint8_t zero[PAGE];

			if (memcmp(got + o, want + o, l) && memcmp(got + o, zero, l)) {
				note("load: chunk %u page %zu has data never written there", i, o);
				ok = false;
				break;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	check(ok, "all %u fsync'ed chunks intact after replay; no foreign data", n);
	check(daemon_stop(), "clean unmount after recovery under load");
	check(fsck_clean(), "fsck.avfs -n clean after recovery under load");
out:
	free(want);
	free(got);
	munmap((void *)durable, PAGE);
}

int main(void)
{
	const char *seed = getenv("AVFS_SEED");
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = harness_setup("integrity");
	if (rc)
		return rc;
	rng_state = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
	if (!rng_state)
		rng_state = 1;
	printf("seed %llu (AVFS_SEED replays it)\n", (unsigned long long)rng_state);

	check(harness_mkfs(), "mkfs.avfs --size 2G --block-size 1M");
	if (!daemon_start()) {
		check(false, "avfsd mounts the image");
		goto out;
	}
	test_integrity_random_remount();
	if (daemon_pid > 0)
		test_integrity_kill9_quiet();
	if (daemon_pid > 0)
		test_integrity_kill9_under_load();
out:
	return harness_finish();
}

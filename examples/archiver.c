/*
 * archiver.c — write a ustar archive of directory trees, reading the files in the order of
 * their blocks on the disk (papers/004 ch. 4: reading many files in disk order from user
 * space): it walks the trees, asks avfsd where each file's first block lies (avfs_placement),
 * and reads the files through the mount in that order, so the disk sweeps once instead of
 * seeking back and forth between files placed in another order than their names. Files not on
 * an AVFS mount (or not placed) come first, in name order. `tar -tvf` lists what it writes and
 * `tar -xf` extracts it. It archives regular files, directories and symbolic links (no device
 * nodes, fifos or sockets, no hard-link detection, no extended attributes).
 */
#include <avio.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AVFS_VERSION	/* the build gives it; a copy built elsewhere has none */
#define AVFS_VERSION "unknown"
#endif

#define BLOCK 512
#define READ_SIZE (1u << 20)

struct item {
	char *path;		/* as walked: the archive's name (relative when the tree is) */
	struct stat st;
	uint64_t key;		/* device offset of the first block; 0: unknown (first) */
	char *link;		/* symlink target */
};

static struct item *items;
static size_t nitems, capitems;
static bool by_name;		/* --order name: the order of the names (for comparison) */
static int failures;
static uint64_t placed, unplaced;

static int add(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	struct item *it;

	(void)ftw;
	if (flag == FTW_NS || flag == FTW_DNR) {
		fprintf(stderr, "archiver: %s: cannot read it, left out\n", path);
		failures++;
		return 0;
	}
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode)) {
		fprintf(stderr, "archiver: %s: not a file, directory or link, left out\n", path);
		return 0;
	}
	if (nitems == capitems) {
		size_t cap = capitems ? 2 * capitems : 1024;

		if (!(it = realloc(items, cap * sizeof(*it))))
			return -1;
		items = it;
		capitems = cap;
	}
	it = &items[nitems];
	*it = (struct item){ .path = strdup(path), .st = *st };
	if (!it->path)
		return -1;
	if (S_ISLNK(st->st_mode)) {
		char buf[4096];
		ssize_t n = readlink(path, buf, sizeof(buf) - 1);

		if (n < 0) {
			fprintf(stderr, "archiver: %s: %s, left out\n", path, strerror(errno));
			free(it->path);
			failures++;
			return 0;
		}
		buf[n] = 0;
		if (!(it->link = strdup(buf)))
			return -1;
	}
	nitems++;
	return 0;
}

/* The first block's place on the device (0: not known). */
static uint64_t place_of(const char *path)
{
	struct avfs_extent e;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int n;

	if (fd < 0)
		return 0;
	n = avfs_placement(fd, 0, &e, 1);
	close(fd);
	if (n == 1) {
		placed++;
		return e.dev_off;
	}
	unplaced++;
	return 0;
}

/* Directories and links first (parents before their contents), then files by their place. */
static int order(const void *x, const void *y)
{
	const struct item *a = x, *b = y;
	bool fa = S_ISREG(a->st.st_mode), fb = S_ISREG(b->st.st_mode);

	if (fa != fb)
		return fa ? 1 : -1;
	if (fa && !by_name && a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return strcmp(a->path, b->path);
}

/* A number field: len - 1 octal digits and a NUL, or, when it does not fit (a file of 8 GiB
 * or more), GNU tar's base-256 form (the first byte's top bit set, big-endian), which GNU and
 * BSD tar read. */
static void octal(char *field, size_t len, uint64_t v)
{
	if (len - 1 < 22 && v >> (3 * (len - 1))) {
		memset(field, 0, len);
		field[0] = (char)0x80;
		for (size_t i = len - 1; i > 0 && v; i--, v >>= 8)
			field[i] = (char)(v & 0xff);
		return;
	}
	field[len - 1] = 0;
	for (size_t i = len - 1; i-- > 0; v >>= 3)
		field[i] = (char)('0' + (v & 7));
}

/* The ustar name of path: into name (100) and prefix (155); false when it does not fit. */
static bool split_name(const char *path, bool dir, char *name, char *prefix)
{
	char full[512];
	size_t n;
	char *slash;

	while (path[0] == '/')
		path++;	/* as tar: members are relative */
	n = (size_t)snprintf(full, sizeof(full), "%s%s", path, dir ? "/" : "");
	if (n >= sizeof(full))
		return false;
	if (n <= 100) {
		memcpy(name, full, n);
		return true;
	}
	/* split at a slash: prefix at most 155, name at most 100 */
	for (slash = strchr(full, '/'); slash; slash = strchr(slash + 1, '/')) {
		size_t p = (size_t)(slash - full);

		if (p <= 155 && n - p - 1 <= 100 && n - p - 1 > 0) {
			memcpy(prefix, full, p);
			memcpy(name, slash + 1, n - p - 1);
			return true;
		}
	}
	return false;
}

static int header(FILE *out, const struct item *it, uint64_t size)
{
	unsigned char h[BLOCK] = { 0 };
	unsigned sum = 0;
	char type = S_ISDIR(it->st.st_mode) ? '5' : S_ISLNK(it->st.st_mode) ? '2' : '0';

	if (!split_name(it->path, type == '5', (char *)h, (char *)h + 345)) {
		fprintf(stderr, "archiver: %s: the name is too long for ustar, left out\n",
			it->path);
		return 1;
	}
	if (it->link && strlen(it->link) > 100) {
		fprintf(stderr, "archiver: %s: the link target is too long for ustar, left out\n",
			it->path);
		return 1;
	}
	octal((char *)h + 100, 8, it->st.st_mode & 07777);
	octal((char *)h + 108, 8, it->st.st_uid);
	octal((char *)h + 116, 8, it->st.st_gid);
	octal((char *)h + 124, 12, size);
	octal((char *)h + 136, 12, (uint64_t)(it->st.st_mtime > 0 ? it->st.st_mtime : 0));
	memset(h + 148, ' ', 8);
	h[156] = (unsigned char)type;
	if (it->link)
		memcpy(h + 157, it->link, strlen(it->link));
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	for (size_t i = 0; i < BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	return fwrite(h, 1, BLOCK, out) == BLOCK ? 0 : -1;
}

/* A regular file's header and data; its size as it is when read (a file that shrinks is
 * padded with zeros, as GNU tar does, and reported). */
static int file(FILE *out, const struct item *it, char *buf)
{
	uint64_t size = (uint64_t)it->st.st_size, done = 0;
	int fd = open(it->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int r;

	if (fd < 0) {
		fprintf(stderr, "archiver: %s: %s, left out\n", it->path, strerror(errno));
		failures++;
		return 0;
	}
	r = header(out, it, size);
	while (!r && done < size) {
		size_t want = size - done < READ_SIZE ? (size_t)(size - done) : READ_SIZE;
		ssize_t n = read(fd, buf, want);

		if (n <= 0) {
			fprintf(stderr, "archiver: %s: %s; padded with zeros\n", it->path,
				n ? strerror(errno) : "it shrank while read");
			failures++;
			memset(buf, 0, want);
			n = (ssize_t)want;
		}
		if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
			r = -1;
		done += (uint64_t)n;
	}
	if (!r && size % BLOCK) {
		memset(buf, 0, BLOCK);
		if (fwrite(buf, 1, BLOCK - size % BLOCK, out) != BLOCK - size % BLOCK)
			r = -1;
	}
	close(fd);
	if (r > 0)
		failures++;
	return r < 0 ? -1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: archiver [--order disk|name] [-f ARCHIVE] [-v] DIR...\n"
		"  a ustar archive of the trees DIR... on ARCHIVE (default: standard output), the\n"
		"  files read in the order of their blocks on an AVFS disk (--order name: of their\n"
		"  names); -v: how many files were placed, on standard error\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "order", required_argument, NULL, 'o' },
		{ "file", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	const char *path = NULL;
	bool verbose = false;
	FILE *out = stdout;
	char *buf;
	int c;

	while ((c = getopt_long(argc, argv, "f:v", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (strcmp(optarg, "disk") && strcmp(optarg, "name")) {
				fprintf(stderr, "archiver: --order is disk or name, not '%s'\n", optarg);
				return 2;
			}
			by_name = !strcmp(optarg, "name");
			break;
		case 'f': path = optarg; break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("archiver %s\n", AVFS_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (nftw(argv[i], add, 64, FTW_PHYS)) {
			fprintf(stderr, "archiver: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
	for (size_t i = 0; !by_name && i < nitems; i++)
		if (S_ISREG(items[i].st.st_mode))
			items[i].key = place_of(items[i].path);
	qsort(items, nitems, sizeof(*items), order);
	if (path && !(out = fopen(path, "we"))) {
		fprintf(stderr, "archiver: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (!(buf = malloc(READ_SIZE)))
		return 1;
	for (size_t i = 0; i < nitems; i++) {
		int r = S_ISREG(items[i].st.st_mode) ? file(out, &items[i], buf) :
			header(out, &items[i], 0);

		if (r > 0)
			failures++;
		if (r < 0) {
			fprintf(stderr, "archiver: cannot write the archive: %s\n", strerror(errno));
			return 1;
		}
	}
	memset(buf, 0, 2 * BLOCK);
	if (fwrite(buf, 1, 2 * BLOCK, out) != 2 * BLOCK || fflush(out) ||
	    (path && fclose(out))) {
		fprintf(stderr, "archiver: cannot write the archive: %s\n", strerror(errno));
		return 1;
	}
	if (verbose)
		fprintf(stderr, "archiver: %zu entries, %llu files placed, %llu not\n", nitems,
			(unsigned long long)placed, (unsigned long long)unplaced);
	for (size_t i = 0; i < nitems; i++)
		free(items[i].path), free(items[i].link);
	free(items);
	free(buf);
	return failures ? 1 : 0;
}

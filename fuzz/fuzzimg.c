/*
 * fuzzimg.c — the image coding, resealing and tree walk the image fuzz targets share
 * (fuzzimg.h). Test code only.
 */
#include "fuzzimg.h"

#include "crc32c.h"
#include "format.h"

#include <stdlib.h>
#include <string.h>

#define MB AVFS_MBLOCK
#define NBLK (FUZZ_DEV_SIZE / MB)

unsigned fuzz_img_decode(const uint8_t *data, size_t size, uint8_t *dev)
{
	unsigned flags = size ? data[0] : 0;
	size_t at = 1;

	memset(dev, 0, FUZZ_DEV_SIZE);
	while (at + 3 <= size) {
		unsigned blk = data[at];
		size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;

		at += 3;
		if (len > MB)
			len = MB;
		if (len > size - at)
			len = size - at;
		memcpy(dev + (size_t)blk * MB, data + at, len);
		at += len;
	}
	return flags;
}

size_t fuzz_img_encode(unsigned flags, const uint8_t *dev, uint8_t *out, size_t cap)
{
	size_t n = 0;

	if (cap < 1)
		return 0;
	out[n++] = (uint8_t)flags;
	for (unsigned b = 0; b < NBLK; b++) {
		const uint8_t *p = dev + (size_t)b * MB;
		size_t len = MB;

		while (len && !p[len - 1])
			len--;
		if (!len)
			continue;
		if (n + 3 + len > cap)
			return 0;
		out[n++] = (uint8_t)b;
		out[n++] = (uint8_t)len;
		out[n++] = (uint8_t)(len >> 8);
		memcpy(out + n, p, len);
		n += len;
	}
	return n;
}

void fuzz_img_seal(uint8_t *img)
{
	struct avfs_mhdr *h = (struct avfs_mhdr *)img;

	h->crc = 0;
	h->crc = avfs_crc32c(0, img, MB);
}

void fuzz_img_reseal(uint8_t *dev)
{
	const struct avfs_super *sb = (const struct avfs_super *)dev;
	uint64_t js = 1, jb = 0;

	if (sb->hdr.magic == AVFS_MAGIC && sb->journal_start >= 1 && sb->journal_start < NBLK &&
	    sb->journal_blocks > 2 && sb->journal_blocks <= NBLK - sb->journal_start) {
		js = sb->journal_start;
		jb = sb->journal_blocks;
	}
	for (unsigned b = 0; b < NBLK; b++) {
		uint8_t *p = dev + (size_t)b * MB;

		if (((struct avfs_mhdr *)p)->magic == AVFS_MAGIC &&
		    ((struct avfs_mhdr *)p)->type != AVFS_MT_JCOMMIT)
			fuzz_img_seal(p);
	}
	/* commit records last: their data CRC covers the sealed blocks before them */
	for (uint64_t i = 2; i < jb; i++) {
		uint8_t *p = dev + (js + i) * MB;
		struct avfs_jcommit *c = (struct avfs_jcommit *)p;
		uint64_t log = jb - 2, pos = i - 2;
		uint32_t crc = 0;

		if (c->hdr.magic != AVFS_MAGIC || c->hdr.type != AVFS_MT_JCOMMIT)
			continue;
		if (c->nblocks < log)
			for (uint64_t k = c->nblocks; k > 0; k--)
				crc = avfs_crc32c(crc, dev + (js + 2 + (pos + log - k) % log) * MB, MB);
		c->data_crc = crc;
		fuzz_img_seal(p);
	}
}

struct walk {
	struct avfs_fsio *io;
	unsigned names;
	uint64_t dirs[64];
	unsigned ndirs;
};

static int on_name(void *arg, const char *name, uint64_t ino, uint32_t type, uint64_t next)
{
	struct walk *w = arg;
	struct avfs_stat st;
	char buf[4096];
	uint64_t found;

	(void)type;
	(void)next;
	if (++w->names > 2000)
		return 1;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	avfs_fs_lookup(w->io->fs, w->dirs[w->ndirs - 1], name, &found);
	if (avfs_fs_getattr(w->io->fs, ino, &st))
		return 0;
	if ((st.mode & 0170000) == 0120000)
		avfs_fs_readlink(w->io->fs, ino, buf, sizeof(buf));
	else if ((st.mode & 0170000) == 0100000)
		avfs_fsio_read(w->io, ino, 0, buf, sizeof(buf));
	else if ((st.mode & 0170000) == 0040000 && w->ndirs < 8 && w->ndirs < 64) {
		w->dirs[w->ndirs++] = ino;
		avfs_fs_readdir(w->io->fs, ino, 0, on_name, w);
		w->ndirs--;
	}
	return 0;
}

void fuzz_walk(struct avfs_fsio *io)
{
	struct walk w = { .io = io, .dirs = { AVFS_ROOT_INO }, .ndirs = 1 };

	avfs_fs_readdir(io->fs, AVFS_ROOT_INO, 0, on_name, &w);
}

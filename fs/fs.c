/*
 * fs.c — format geometry, the metadata block cache, transactions and the redo journal,
 * and the sans-I/O steps of mount (superblock check, replay, load, finish). Produces plans;
 * performs no I/O. Inodes, directories and block maps are in inode.c.
 */
#include "fs_i.h"

#include "crc32c.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BITS AVFS_BITS_PER_BLOCK

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

void fs_why(struct avfs_fs *fs, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fs->why, sizeof(fs->why), fmt, ap);
	va_end(ap);
}

static void why_to(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void why_to(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

const char *avfs_fs_why(const struct avfs_fs *fs)
{
	return fs->why;
}

struct avfs_super *fs_sb(struct avfs_fs *fs)
{
	return (struct avfs_super *)fs->blocks[0];
}

const struct avfs_super *avfs_fs_super(const struct avfs_fs *fs)
{
	return fs->blocks && fs->blocks[0] ? (const struct avfs_super *)fs->blocks[0] : &fs->sb;
}

uint64_t avfs_fs_block_size(const struct avfs_fs *fs)
{
	return 1ull << fs->sb.block_shift;
}

bool avfs_fs_rdonly(const struct avfs_fs *fs)
{
	return (fs->flags & AVFS_MOUNT_RDONLY) || fs->broken;
}

const uint8_t *avfs_fs_block(const struct avfs_fs *fs, uint64_t m)
{
	return m < fs->nmeta ? fs->blocks[m] : NULL;
}

uint32_t avfs_fs_zone_of_dev(const struct avfs_fs *fs, uint64_t dev_off)
{
	if (dev_off < fs->sb.data_off)
		return UINT32_MAX;
	return avfs_alloc_zone_of(&fs->alloc, (dev_off - fs->sb.data_off) >> fs->sb.block_shift);
}

/* ---- geometry ---- */

/* Service-time parameters of the named models (SPEC §5.2, §11), for the superblock. */
static void model_params(struct avfs_super *sb, const char *name)
{
	static const struct {
		const char *name;
		uint64_t rmax, rmin, seek, rot;
	} t[] = {
		{ "avfs-250g", 70000000, 38000000, 8500000, 8333333 },
		{ "barracuda-500g", 105000000, 55000000, 8500000, 8333333 },
		{ "st318437", 41700000, 24300000, 5800000, 8333333 },
		{ "travelstar-20g", 15000000, 8000000, 12000000, 14285714 },
		{ "ssd", 500000000, 500000000, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!strcmp(t[i].name, name)) {
			snprintf(sb->disk_model, sizeof(sb->disk_model), "%s", name);
			sb->rate_max = t[i].rmax;
			sb->rate_min = t[i].rmin;
			sb->seek_avg_ns = t[i].seek;
			sb->rotation_ns = t[i].rot;
			return;
		}
	}
}

int avfs_fs_geometry(const struct avfs_mkfs_opts *o, struct avfs_super *sb, char *why,
		     size_t whylen)
{
	uint32_t shift = o->block_shift ? o->block_shift : AVFS_BLOCK_DEFAULT_SHIFT;
	uint64_t dev = o->size & ~(uint64_t)(AVFS_MBLOCK - 1);
	uint64_t bs, est, ninodes, jb, dyn, meta = 0, data_blocks = 0, data_off = 0, backup_off = 0;
	uint64_t mbm = 1, dbm, ibm, itb, align;
	struct avfs_bitmap tmp;
	struct avfs_alloc a;
	int nz;

	memset(sb, 0, sizeof(*sb));
	if (shift < AVFS_BLOCK_MIN_SHIFT || shift > AVFS_BLOCK_MAX_SHIFT) {
		why_to(why, whylen, "block size must be a power of two from 64 KiB to 4 GiB");
		return -EINVAL;
	}
	if (o->alloc_policy > AVFS_ALLOC_CONTIG) {
		why_to(why, whylen, "unknown allocation policy %u", o->alloc_policy);
		return -EINVAL;
	}
	bs = 1ull << shift;
	est = dev / bs;
	ninodes = o->inodes ? o->inodes : est * 2;
	if (!o->inodes && ninodes < 4096)
		ninodes = 4096;
	if (!o->inodes && ninodes > (1u << 22))
		ninodes = 1u << 22;
	if (ninodes < 16 || ninodes > UINT32_MAX - 1) {
		why_to(why, whylen, "inode count %llu out of range (16 .. 4294967294)",
		       (unsigned long long)ninodes);
		return -EINVAL;
	}
	jb = o->journal_blocks;
	if (!jb) {
		jb = dev / AVFS_MBLOCK / 256;
		jb = jb < 256 ? 256 : jb > 16384 ? 16384 : jb;
	}
	if (jb < 64 || jb > (1u << 20)) {
		why_to(why, whylen, "journal of %llu blocks out of range (64 .. 1048576)",
		       (unsigned long long)jb);
		return -EINVAL;
	}
	dyn = o->dyn_blocks ? o->dyn_blocks : est / AVFS_MAP_PER_BLOCK * 2 + ninodes / 8 + 256;
	if (dyn < 16 || dyn > (1ull << 31)) {
		why_to(why, whylen, "dynamic metadata of %llu blocks out of range",
		       (unsigned long long)dyn);
		return -EINVAL;
	}
	align = bs < (1u << 20) ? bs : (1u << 20);
	ibm = div_up(ninodes, BITS);
	itb = div_up(ninodes, AVFS_INODES_PER_BLOCK);
	dbm = div_up(est ? est : 1, BITS);
	for (int it = 0; it < 6; it++) {	/* the sizes feed each other: iterate to a fixpoint */
		meta = 1 + jb + mbm + dbm + ibm + itb + dyn;
		mbm = div_up(meta, BITS);
		meta = 1 + jb + mbm + dbm + ibm + itb + dyn;
		data_off = div_up(meta * AVFS_MBLOCK, align) * align;
		if (dev < (meta - jb) * AVFS_MBLOCK) {
			data_blocks = 0;
			break;
		}
		backup_off = dev - (meta - jb) * AVFS_MBLOCK;
		data_blocks = backup_off > data_off ? (backup_off - data_off) / bs : 0;
		dbm = div_up(data_blocks ? data_blocks : 1, BITS);
	}
	if (meta > UINT32_MAX) {
		why_to(why, whylen, "metadata region too large");
		return -EINVAL;
	}
	if (data_blocks < 1) {
		why_to(why, whylen,
		       "device of %llu bytes is too small: metadata needs %llu KiB, and at least one "
		       "%llu KiB data block must fit", (unsigned long long)o->size,
		       (unsigned long long)(2 * meta - jb) * 4, (unsigned long long)bs >> 10);
		return -ENOSPC;
	}
	if (data_blocks > UINT32_MAX - 1) {
		why_to(why, whylen, "too many data blocks (%llu): choose a larger block size",
		       (unsigned long long)data_blocks);
		return -EINVAL;
	}
	nz = avfs_alloc_zone_count(data_blocks, bs, o->zones);
	if (nz < 0) {
		why_to(why, whylen, "cannot make %u zones of %llu data blocks (at most %u, and no "
		       "more than the data blocks)", o->zones, (unsigned long long)data_blocks,
		       (unsigned)AVFS_ZONES_MAX);
		return -EINVAL;
	}
	if (avfs_bitmap_init(&tmp, data_blocks))
		return -ENOMEM;
	avfs_alloc_init(&a, (enum avfs_alloc_policy)o->alloc_policy, &tmp, (uint32_t)nz, 0);
	sb->zone_blocks = a.zone_blocks;
	avfs_bitmap_free(&tmp);

	sb->version = AVFS_FORMAT_VERSION;
	sb->mblock_size = AVFS_MBLOCK;
	sb->dev_size = dev;
	sb->block_shift = shift;
	sb->nzones = (uint32_t)nz;
	sb->meta_blocks = meta;
	sb->journal_start = 1;
	sb->journal_blocks = jb;
	sb->mbitmap_start = 1 + jb;
	sb->mbitmap_blocks = mbm;
	sb->dbitmap_start = sb->mbitmap_start + mbm;
	sb->dbitmap_blocks = dbm;
	sb->ibitmap_start = sb->dbitmap_start + dbm;
	sb->ibitmap_blocks = ibm;
	sb->itable_start = sb->ibitmap_start + ibm;
	sb->itable_blocks = itb;
	sb->dyn_start = sb->itable_start + itb;
	sb->ninodes = ninodes;
	sb->data_off = data_off;
	sb->data_blocks = data_blocks;
	sb->backup_off = backup_off;
	sb->seed = o->seed;
	sb->alloc_policy = o->alloc_policy;
	sb->root_ino = AVFS_ROOT_INO;
	sb->mkfs_time_ns = (uint64_t)o->now_ns;
	if (o->measured) {
		snprintf(sb->disk_model, sizeof(sb->disk_model), "profiled");
		sb->rate_max = o->measured->rate_max;
		sb->rate_min = o->measured->rate_min;
		sb->seek_avg_ns = o->measured->seek_avg_ns;
		sb->rotation_ns = o->measured->rotation_ns;
	} else {
		model_params(sb, o->disk_model ? o->disk_model : "avfs-250g");
	}
	if (!sb->disk_model[0]) {
		why_to(why, whylen, "unknown disk model '%s'", o->disk_model);
		return -EINVAL;
	}
	sb->last_zone = avfs_alloc_initial_last_zone((uint32_t)nz, o->seed);
	sb->free_data = data_blocks;
	sb->free_inodes = ninodes - 1;
	sb->free_meta = dyn;
	sb->generation = 1;
	/* the UUID: from the seed and the format time, so two formats of one device differ */
	{
		uint64_t x = o->seed ^ (uint64_t)o->now_ns * 0x9e3779b97f4a7c15ull ^ dev;

		for (int i = 0; i < 16; i++) {
			x ^= x >> 33;
			x *= 0xff51afd7ed558ccdull;
			x ^= x >> 29;
			sb->hdr.uuid[i] = (uint8_t)(x >> 24);
		}
	}
	return 0;
}

uint64_t avfs_fs_backup_super_off(uint64_t dev_size)
{
	return (dev_size & ~(uint64_t)(AVFS_MBLOCK - 1)) - AVFS_MBLOCK;
}

uint64_t avfs_fs_backup_off(const struct avfs_super *sb, uint64_t m)
{
	if (m == 0)
		return avfs_fs_backup_super_off(sb->dev_size);
	if (m < sb->journal_start + sb->journal_blocks)
		return UINT64_MAX;	/* the journal has no backup */
	return sb->backup_off + (m - sb->journal_blocks - 1) * AVFS_MBLOCK;
}

/* ---- plans ---- */

void avfs_plan_free(struct avfs_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nbufs; i++)
		free(p->bufs[i]);
	free(p->bufs);
	free(p->ops);
	free(p->freed);
	free(p);
}

static int plan_add(struct avfs_plan *p, struct avfs_plan_op op)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct avfs_plan_op *o = realloc(p->ops, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		p->ops = o;
		p->cap = cap;
	}
	p->ops[p->n++] = op;
	return 0;
}

static int plan_own(struct avfs_plan *p, uint8_t *buf)
{
	if (p->nbufs == p->capbufs) {
		size_t cap = p->capbufs ? 2 * p->capbufs : 16;
		uint8_t **b = realloc(p->bufs, cap * sizeof(*b));

		if (!b)
			return -ENOMEM;
		p->bufs = b;
		p->capbufs = cap;
	}
	p->bufs[p->nbufs++] = buf;
	return 0;
}

static uint8_t *plan_buf(struct avfs_plan *p, size_t len)
{
	uint8_t *b = NULL;

	if (posix_memalign((void **)&b, 4096, len ? len : 4096))
		return NULL;
	if (plan_own(p, b)) {
		free(b);
		return NULL;
	}
	return b;
}

int fs_plan_write(struct avfs_plan *p, uint64_t off, const uint8_t *img, uint32_t len, bool fua,
		  bool copy)
{
	const uint8_t *src = img;

	if (copy) {
		uint8_t *b = plan_buf(p, len);

		if (!b)
			return -ENOMEM;
		memcpy(b, img, len);
		src = b;
	}
	return plan_add(p, (struct avfs_plan_op){ .kind = AVFS_PLAN_WRITE, .fua = fua, .off = off,
						 .len = len, .buf = src });
}

int fs_plan_flush(struct avfs_plan *p)
{
	if (p->n && p->ops[p->n - 1].kind == AVFS_PLAN_FLUSH)
		return 0;
	return plan_add(p, (struct avfs_plan_op){ .kind = AVFS_PLAN_FLUSH });
}

static struct avfs_plan *plan_new(void)
{
	return calloc(1, sizeof(struct avfs_plan));
}

/* ---- blocks ---- */

void fs_hdr_init(struct avfs_fs *fs, uint8_t *img, uint64_t m, uint32_t type)
{
	struct avfs_mhdr *h = (struct avfs_mhdr *)img;

	memset(h, 0, sizeof(*h));
	h->magic = AVFS_MAGIC;
	memcpy(h->uuid, fs->sb.hdr.uuid, 16);
	h->blockno = m;
	h->type = type;
}

void fs_seal(struct avfs_fs *fs, uint8_t *img)
{
	struct avfs_mhdr *h = (struct avfs_mhdr *)img;

	(void)fs;
	h->crc = 0;
	h->crc = avfs_crc32c(0, img, AVFS_MBLOCK);
}

static int verify_img(const uint8_t *uuid, uint64_t m, const uint8_t *img, uint32_t type)
{
	const struct avfs_mhdr *h = (const struct avfs_mhdr *)img;
	uint8_t tmp[AVFS_MBLOCK];
	uint32_t crc;

	if (h->magic != AVFS_MAGIC || h->blockno != m || (uuid && memcmp(h->uuid, uuid, 16)))
		return -EUCLEAN;
	if (type && h->type != type)
		return -EUCLEAN;
	memcpy(tmp, img, AVFS_MBLOCK);
	((struct avfs_mhdr *)tmp)->crc = 0;
	crc = avfs_crc32c(0, tmp, AVFS_MBLOCK);
	return crc == h->crc ? 0 : -EUCLEAN;
}

int avfs_fs_verify_block(const struct avfs_fs *fs, uint64_t m, const uint8_t *img, uint32_t type)
{
	return verify_img(fs->sb.hdr.uuid, m, img, type);
}

uint8_t *fs_blk(struct avfs_fs *fs, uint64_t m)
{
	return m < fs->nmeta ? fs->blocks[m] : NULL;
}

void fs_dirty(struct avfs_fs *fs, uint64_t m)
{
	if (avfs_bitmap_test(&fs->txnmark, m))
		return;
	if (fs->ntxn == fs->captxn) {
		size_t cap = fs->captxn ? 2 * fs->captxn : 256;
		uint64_t *t = realloc(fs->txn, cap * sizeof(*t));

		if (!t)
			abort();	/* cannot record a change already made in memory */
		fs->txn = t;
		fs->captxn = cap;
	}
	avfs_bitmap_set(&fs->txnmark, m);
	fs->txn[fs->ntxn++] = m;
}

/* Set or clear one bit in the on-disk bitmap that starts at metadata block `start`. */
void fs_set_bit(struct avfs_fs *fs, uint64_t start, uint64_t bit, bool on)
{
	uint64_t m = start + bit / BITS, i = bit % BITS;
	uint8_t *p = fs->blocks[m] + sizeof(struct avfs_mhdr);

	if (on)
		p[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		p[i / 8] &= (uint8_t)~(1u << (i % 8));
	fs_dirty(fs, m);
}

int fs_meta_alloc(struct avfs_fs *fs, uint32_t type, uint64_t *out)
{
	uint64_t m = avfs_bitmap_find_zero(&fs->mmap, fs->mhint, fs->nmeta);
	uint8_t *img;

	if (m == UINT64_MAX)
		m = avfs_bitmap_find_zero(&fs->mmap, fs->sb.dyn_start, fs->mhint);
	if (m == UINT64_MAX)
		return -ENOSPC;
	if (!fs->blocks[m] && posix_memalign((void **)&fs->blocks[m], 64, AVFS_MBLOCK))
		return -ENOMEM;
	img = fs->blocks[m];
	memset(img, 0, AVFS_MBLOCK);
	fs_hdr_init(fs, img, m, type);
	avfs_bitmap_set(&fs->mmap, m);
	fs_set_bit(fs, fs->sb.mbitmap_start, m, true);
	fs_sb(fs)->free_meta--;
	fs_dirty(fs, 0);
	fs_dirty(fs, m);
	fs->mhint = m + 1;
	*out = m;
	return 0;
}

void fs_meta_free(struct avfs_fs *fs, uint64_t m)
{
	if (m < fs->sb.dyn_start || m >= fs->nmeta || !avfs_bitmap_test(&fs->mmap, m))
		return;
	/* The block is only ever written again through the journal, and replay applies
	 * transactions in order, so a later reuse always overwrites this version: no revoke
	 * record is needed (metadata and data blocks never share a region). */
	avfs_bitmap_clear(&fs->mmap, m);
	fs_set_bit(fs, fs->sb.mbitmap_start, m, false);
	fs_sb(fs)->free_meta++;
	fs_dirty(fs, 0);
	if (m < fs->mhint)
		fs->mhint = m;
}

/* ---- open / close ---- */

int avfs_fs_open(const struct avfs_super *sb, unsigned flags, struct avfs_fs **out)
{
	struct avfs_fs *fs = calloc(1, sizeof(*fs));
	int err = -ENOMEM;

	if (!fs)
		return -ENOMEM;
	fs->sb = *sb;
	fs->flags = flags;
	fs->nmeta = sb->meta_blocks;
	fs->blocks = calloc(fs->nmeta, sizeof(*fs->blocks));
	fs->dix = calloc(sb->ninodes + 1, sizeof(*fs->dix));
	/* large arrays come from mmap: untouched pages of an idle inode range cost nothing */
	fs->opens = calloc(sb->ninodes + 1, sizeof(*fs->opens));
	if (!fs->blocks || !fs->dix || !fs->opens)
		goto fail;
	if (avfs_bitmap_init(&fs->mmap, fs->nmeta) || avfs_bitmap_init(&fs->dmap, sb->data_blocks) ||
	    avfs_bitmap_init(&fs->imap, sb->ninodes) || avfs_bitmap_init(&fs->txnmark, fs->nmeta) ||
	    avfs_bitmap_init(&fs->replayed, fs->nmeta) ||
	    avfs_bitmap_init(&fs->rewrite_p, fs->nmeta) ||
	    avfs_bitmap_init(&fs->rewrite_b, fs->nmeta))
		goto fail;
	fs->log_start = sb->journal_start + 2;
	fs->log_blocks = sb->journal_blocks - 2;
	fs->next_seq = 1;
	fs->tail_seq = 1;
	fs->mhint = sb->dyn_start;
	*out = fs;
	return 0;
fail:
	avfs_fs_close(fs);
	return err;
}

void avfs_fs_close(struct avfs_fs *fs)
{
	if (!fs)
		return;
	if (fs->blocks)
		for (uint64_t m = 0; m < fs->nmeta; m++)
			free(fs->blocks[m]);
	if (fs->dix)
		for (uint64_t i = 0; i <= fs->sb.ninodes; i++)
			dirindex_free(fs->dix[i]);
	free(fs->dix);
	free(fs->opens);
	free(fs->blocks);
	avfs_bitmap_free(&fs->mmap);
	avfs_bitmap_free(&fs->dmap);
	avfs_bitmap_free(&fs->imap);
	avfs_bitmap_free(&fs->txnmark);
	avfs_bitmap_free(&fs->replayed);
	avfs_bitmap_free(&fs->rewrite_p);
	avfs_bitmap_free(&fs->rewrite_b);
	free(fs->pfree);
	free(fs->txn);
	free(fs);
}

/* ---- superblock ---- */

int avfs_fs_check_super(const uint8_t *img, uint64_t dev_size, struct avfs_super *out, char *why,
			size_t whylen)
{
	const struct avfs_super *s = (const struct avfs_super *)img;
	uint64_t bs, meta;

	if (s->hdr.magic != AVFS_MAGIC) {
		why_to(why, whylen, "no AVFS superblock (bad magic)");
		return -EINVAL;
	}
	if (verify_img(NULL, 0, img, AVFS_MT_SUPER)) {
		why_to(why, whylen, "superblock checksum or header is wrong");
		return -EUCLEAN;
	}
	if (s->version != AVFS_FORMAT_VERSION) {
		why_to(why, whylen, "unsupported format version %u (this build reads %u)",
		       s->version, AVFS_FORMAT_VERSION);
		return -EINVAL;
	}
	if (s->mblock_size != AVFS_MBLOCK || s->block_shift < AVFS_BLOCK_MIN_SHIFT ||
	    s->block_shift > AVFS_BLOCK_MAX_SHIFT) {
		why_to(why, whylen, "superblock: impossible block size (2^%u)", s->block_shift);
		return -EUCLEAN;
	}
	bs = 1ull << s->block_shift;
	meta = s->meta_blocks;
	if (s->dev_size > dev_size) {
		why_to(why, whylen, "device is %llu bytes but the file system needs %llu: truncated?",
		       (unsigned long long)dev_size, (unsigned long long)s->dev_size);
		return -EUCLEAN;
	}
	/* every region in order, inside the device, with room for what it holds */
	if (s->journal_start != 1 || s->journal_blocks < 64 ||
	    s->mbitmap_start != 1 + s->journal_blocks ||
	    s->dbitmap_start != s->mbitmap_start + s->mbitmap_blocks ||
	    s->ibitmap_start != s->dbitmap_start + s->dbitmap_blocks ||
	    s->itable_start != s->ibitmap_start + s->ibitmap_blocks ||
	    s->dyn_start != s->itable_start + s->itable_blocks || s->dyn_start >= meta ||
	    meta > UINT32_MAX || s->mbitmap_blocks * BITS < meta ||
	    s->dbitmap_blocks * BITS < s->data_blocks || s->ibitmap_blocks * BITS < s->ninodes ||
	    s->itable_blocks * AVFS_INODES_PER_BLOCK < s->ninodes || s->ninodes < 1 ||
	    s->ninodes > UINT32_MAX - 1 || s->data_blocks < 1 || s->data_blocks > UINT32_MAX - 1 ||
	    s->data_off < meta * AVFS_MBLOCK || s->data_off > s->dev_size ||
	    s->data_blocks > (s->dev_size - s->data_off) / bs ||
	    s->data_off + s->data_blocks * bs > s->backup_off ||
	    s->backup_off + (meta - s->journal_blocks) * AVFS_MBLOCK != s->dev_size ||
	    s->nzones < 1 || s->nzones > AVFS_ZONES_MAX || s->nzones > s->data_blocks ||
	    s->zone_blocks != s->data_blocks / s->nzones ||
	    s->last_zone >= s->nzones || s->root_ino != AVFS_ROOT_INO ||
	    s->alloc_policy > AVFS_ALLOC_CONTIG) {
		why_to(why, whylen, "superblock geometry is inconsistent");
		return -EUCLEAN;
	}
	if (out)
		*out = *s;
	return 0;
}

/* ---- journal ---- */

static uint64_t log_home(const struct avfs_fs *fs, uint64_t pos)
{
	return fs->log_start + pos % fs->log_blocks;
}

static int pick_jsuper(struct avfs_fs *fs, const uint8_t *a, const uint8_t *b,
		       const struct avfs_jsuper **out)
{
	const struct avfs_jsuper *ja = (const void *)a, *jb = (const void *)b;
	bool va = a && !verify_img(fs->sb.hdr.uuid, fs->sb.journal_start, a, AVFS_MT_JSUPER) &&
		  ja->log_blocks == fs->log_blocks && ja->tail_pos < fs->log_blocks;
	bool vb = b && !verify_img(fs->sb.hdr.uuid, fs->sb.journal_start + 1, b, AVFS_MT_JSUPER) &&
		  jb->log_blocks == fs->log_blocks && jb->tail_pos < fs->log_blocks;

	if (!va && !vb) {
		fs_why(fs, "both journal superblocks are damaged");
		return -EUCLEAN;
	}
	*out = va && (!vb || ja->epoch >= jb->epoch) ? ja : jb;
	return 0;
}

int avfs_fs_replay(struct avfs_fs *fs, const uint8_t *jsa, const uint8_t *jsb, const uint8_t *log,
		   uint64_t *ntxn, uint64_t *nblocks)
{
	const struct avfs_jsuper *js;
	uint64_t pos, seq, scanned = 0;
	int err = pick_jsuper(fs, jsa, jsb, &js);

	*ntxn = *nblocks = 0;
	if (err)
		return err;
	fs->jepoch = js->epoch;
	pos = js->tail_pos;
	seq = js->tail_seq;
	fs->tail = pos;
	fs->tail_seq = seq;
	for (;;) {
		uint64_t p = pos, count = 0, first = pos;
		uint32_t crc = 0;
		bool ok = false;
		const struct avfs_jcommit *c;

		/* one transaction: descriptor groups, then a commit whose CRC covers them */
		while (count < fs->log_blocks) {
			const uint8_t *d = log + (p % fs->log_blocks) * AVFS_MBLOCK;
			const struct avfs_jdesc *jd = (const void *)d;

			if (verify_img(fs->sb.hdr.uuid, log_home(fs, p), d, AVFS_MT_JDESC) ||
			    jd->hdr.seq != seq || jd->count > AVFS_JDESC_MAX ||
			    count + 1 + jd->count + 1 > fs->log_blocks)
				break;
			crc = avfs_crc32c(crc, d, AVFS_MBLOCK);
			for (uint32_t i = 0; i < jd->count; i++)
				crc = avfs_crc32c(crc, log + ((p + 1 + i) % fs->log_blocks) * AVFS_MBLOCK,
						  AVFS_MBLOCK);
			count += 1 + jd->count;
			p += 1 + jd->count;
			if (jd->last) {
				ok = true;
				break;
			}
		}
		if (!ok)
			break;
		c = (const void *)(log + (p % fs->log_blocks) * AVFS_MBLOCK);
		if (verify_img(fs->sb.hdr.uuid, log_home(fs, p), (const uint8_t *)c,
			       AVFS_MT_JCOMMIT) || c->hdr.seq != seq || c->nblocks != count ||
		    c->data_crc != crc || scanned + count + 1 > fs->log_blocks)
			break;
		/* committed: apply its images in order */
		for (uint64_t q = first; q < p;) {
			const struct avfs_jdesc *jd =
				(const void *)(log + (q % fs->log_blocks) * AVFS_MBLOCK);

			for (uint32_t i = 0; i < jd->count; i++) {
				const uint8_t *img = log + ((q + 1 + i) % fs->log_blocks) * AVFS_MBLOCK;
				uint64_t home = jd->home[i];

				if (home >= fs->nmeta || (home >= fs->sb.journal_start &&
							  home < fs->sb.dyn_start &&
							  home < fs->sb.journal_start +
									 fs->sb.journal_blocks) ||
				    verify_img(fs->sb.hdr.uuid, home, img, 0))
					continue;	/* cannot be: the CRC matched; never write the journal */
				if (!fs->blocks[home] &&
				    posix_memalign((void **)&fs->blocks[home], 64, AVFS_MBLOCK))
					return -ENOMEM;
				memcpy(fs->blocks[home], img, AVFS_MBLOCK);
				avfs_bitmap_set(&fs->replayed, home);
				(*nblocks)++;
			}
			q += 1 + jd->count;
		}
		(*ntxn)++;
		scanned += count + 1;
		pos = (p + 1) % fs->log_blocks;
		seq++;
	}
	fs->head = pos;
	fs->used = scanned;
	/* skip the sequence number a torn transaction may have used, so its remains can never
	 * pass for the next transaction */
	fs->next_seq = seq + 1;
	return 0;
}

bool avfs_fs_replayed(const struct avfs_fs *fs, uint64_t m)
{
	return m < fs->nmeta && avfs_bitmap_test(&fs->replayed, m);
}

int avfs_fs_load(struct avfs_fs *fs, uint64_t m, const uint8_t *img)
{
	if (m >= fs->nmeta)
		return -EINVAL;
	if (avfs_bitmap_test(&fs->replayed, m))
		return 0;	/* the journal's copy is newer */
	if (!fs->blocks[m] && posix_memalign((void **)&fs->blocks[m], 64, AVFS_MBLOCK))
		return -ENOMEM;
	memcpy(fs->blocks[m], img, AVFS_MBLOCK);
	return 0;
}

bool avfs_fs_block_live(const struct avfs_fs *fs, uint64_t m)
{
	const uint8_t *bm;
	uint64_t i;

	if (m >= fs->nmeta)
		return false;
	if (m >= fs->sb.journal_start && m < fs->sb.journal_start + fs->sb.journal_blocks)
		return false;
	if (m < fs->sb.dyn_start)
		return true;
	bm = fs->blocks[fs->sb.mbitmap_start + m / BITS];
	if (!bm)
		return false;
	i = m % BITS;
	return bm[sizeof(struct avfs_mhdr) + i / 8] >> (i % 8) & 1;
}

static int load_bitmap(struct avfs_fs *fs, struct avfs_bitmap *b, uint64_t start, uint64_t n)
{
	for (uint64_t k = 0; k * BITS < n; k++) {
		uint64_t cnt = n - k * BITS < BITS ? n - k * BITS : BITS;
		const uint8_t *img = fs->blocks[start + k];

		if (!img || avfs_bitmap_load(b, k * BITS, cnt, img + sizeof(struct avfs_mhdr)))
			return -EUCLEAN;	/* missing, or bits set beyond the end */
	}
	return 0;
}

int avfs_fs_mount_finish(struct avfs_fs *fs, char *why, size_t whylen)
{
	struct avfs_super *sb = fs_sb(fs);

	if (!sb || verify_img(fs->sb.hdr.uuid, 0, fs->blocks[0], AVFS_MT_SUPER)) {
		why_to(why, whylen, "superblock missing after load");
		return -EUCLEAN;
	}
	/* the journaled superblock image carries the dynamic fields; geometry must agree */
	if (sb->meta_blocks != fs->sb.meta_blocks || sb->data_blocks != fs->sb.data_blocks ||
	    sb->ninodes != fs->sb.ninodes || sb->last_zone >= fs->sb.nzones) {
		why_to(why, whylen, "journaled superblock disagrees with the geometry");
		return -EUCLEAN;
	}
	for (uint64_t m = 0; m < fs->sb.dyn_start; m++) {
		if (m >= fs->sb.journal_start && m < fs->sb.journal_start + fs->sb.journal_blocks)
			continue;
		if (!fs->blocks[m]) {
			why_to(why, whylen, "metadata block %llu was not loaded",
			       (unsigned long long)m);
			return -EUCLEAN;
		}
	}
	if (load_bitmap(fs, &fs->mmap, sb->mbitmap_start, fs->nmeta) ||
	    load_bitmap(fs, &fs->dmap, sb->dbitmap_start, sb->data_blocks) ||
	    load_bitmap(fs, &fs->imap, sb->ibitmap_start, sb->ninodes)) {
		why_to(why, whylen, "a bitmap block is missing");
		return -EUCLEAN;
	}
	for (uint64_t m = 0; m < fs->sb.dyn_start; m++) {
		if (!avfs_bitmap_test(&fs->mmap, m)) {
			why_to(why, whylen, "metadata bitmap does not reserve static block %llu",
			       (unsigned long long)m);
			return -EUCLEAN;
		}
	}
	for (uint64_t m = fs->sb.dyn_start; m < fs->nmeta; m++) {
		if (avfs_bitmap_test(&fs->mmap, m) && !fs->blocks[m]) {
			why_to(why, whylen, "live metadata block %llu was not loaded",
			       (unsigned long long)m);
			return -EUCLEAN;
		}
	}
	if (!avfs_bitmap_test(&fs->imap, 0)) {
		why_to(why, whylen, "the root inode is not allocated");
		return -EUCLEAN;
	}
	if (avfs_alloc_init(&fs->alloc, (enum avfs_alloc_policy)fs->sb.alloc_policy, &fs->dmap,
			    fs->sb.nzones, sb->last_zone)) {
		why_to(why, whylen, "allocator refused the geometry");
		return -EUCLEAN;
	}
	return 0;
}

int avfs_fs_mark_rewrite(struct avfs_fs *fs, uint64_t m, bool primary, bool backup)
{
	if (m >= fs->nmeta)
		return -EINVAL;
	if (primary)
		avfs_bitmap_set(&fs->rewrite_p, m);
	if (backup)
		avfs_bitmap_set(&fs->rewrite_b, m);
	return 0;
}

static int plan_jsuper(struct avfs_fs *fs, struct avfs_plan *p, uint64_t tail, uint64_t seq)
{
	uint8_t *img = plan_buf(p, AVFS_MBLOCK);
	struct avfs_jsuper *js = (void *)img;
	uint64_t m;

	if (!img)
		return -ENOMEM;
	fs->jepoch++;
	m = fs->sb.journal_start + (fs->jepoch & 1);
	memset(img, 0, AVFS_MBLOCK);
	fs_hdr_init(fs, img, m, AVFS_MT_JSUPER);
	js->epoch = fs->jepoch;
	js->tail_pos = tail;
	js->tail_seq = seq;
	js->log_blocks = fs->log_blocks;
	fs_seal(fs, img);
	return fs_plan_write(p, m * AVFS_MBLOCK, img, AVFS_MBLOCK, false, false);
}

/* Write sealed copies of the listed blocks home and to the backup region, coalescing runs
 * of consecutive blocks into one write each. ms must be sorted. */
static int plan_homes(struct avfs_fs *fs, struct avfs_plan *p, const uint64_t *ms, size_t n,
		      const struct avfs_bitmap *want_p, const struct avfs_bitmap *want_b)
{
	for (int pass = 0; pass < 2; pass++) {
		size_t i = 0;

		while (i < n) {
			size_t j = i;
			uint8_t *buf;
			uint64_t off;

			if ((pass == 0 && want_p && !avfs_bitmap_test(want_p, ms[i])) ||
			    (pass == 1 && want_b && !avfs_bitmap_test(want_b, ms[i])) ||
			    (pass == 1 && avfs_fs_backup_off(&fs->sb, ms[i]) == UINT64_MAX)) {
				i++;
				continue;
			}
			while (j + 1 < n && ms[j + 1] == ms[j] + 1 && j + 1 - i < 256 &&
			       !(want_p && pass == 0 && !avfs_bitmap_test(want_p, ms[j + 1])) &&
			       !(want_b && pass == 1 && !avfs_bitmap_test(want_b, ms[j + 1])) &&
			       ms[j + 1] != 1 && ms[i] != 0)
				j++;
			buf = plan_buf(p, (j - i + 1) * AVFS_MBLOCK);
			if (!buf)
				return -ENOMEM;
			for (size_t k = i; k <= j; k++)
				memcpy(buf + (k - i) * AVFS_MBLOCK, fs->blocks[ms[k]], AVFS_MBLOCK);
			off = pass == 0 ? ms[i] * AVFS_MBLOCK : avfs_fs_backup_off(&fs->sb, ms[i]);
			if (fs_plan_write(p, off, buf, (uint32_t)((j - i + 1) * AVFS_MBLOCK), false,
					  false))
				return -ENOMEM;
			i = j + 1;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int avfs_fs_recovery_plan(struct avfs_fs *fs, struct avfs_plan **out)
{
	struct avfs_plan *p;
	uint64_t *ms = NULL;
	size_t n = 0;
	struct avfs_bitmap want_p, want_b;
	int err = -ENOMEM;

	*out = NULL;
	if (avfs_fs_rdonly(fs))
		return -EROFS;
	p = plan_new();
	ms = malloc(fs->nmeta * sizeof(*ms));
	if (!p || !ms || avfs_bitmap_init(&want_p, fs->nmeta) ||
	    avfs_bitmap_init(&want_b, fs->nmeta))
		goto out;
	for (uint64_t m = 0; m < fs->nmeta; m++) {
		bool rp = avfs_bitmap_test(&fs->replayed, m) || avfs_bitmap_test(&fs->rewrite_p, m);
		bool rb = avfs_bitmap_test(&fs->replayed, m) || avfs_bitmap_test(&fs->rewrite_b, m);

		if (!fs->blocks[m] || !(rp || rb))
			continue;
		if (rp)
			avfs_bitmap_set(&want_p, m);
		if (rb)
			avfs_bitmap_set(&want_b, m);
		ms[n++] = m;
	}
	err = plan_homes(fs, p, ms, n, &want_p, &want_b);
	if (err)
		goto out;
	/* once the homes are durable, the journal can start afresh after the replayed part */
	if (fs_plan_flush(p) || plan_jsuper(fs, p, fs->head, fs->next_seq) || fs_plan_flush(p))
		goto out;
	fs->tail = fs->head;
	fs->tail_seq = fs->next_seq;
	fs->used = 0;
	for (uint64_t m = 0; m < fs->nmeta; m++) {
		if (avfs_bitmap_test(&fs->rewrite_p, m))
			avfs_bitmap_clear(&fs->rewrite_p, m);
		if (avfs_bitmap_test(&fs->rewrite_b, m))
			avfs_bitmap_clear(&fs->rewrite_b, m);
		if (avfs_bitmap_test(&fs->replayed, m))
			avfs_bitmap_clear(&fs->replayed, m);
	}
	*out = p;
	p = NULL;
	err = 0;
out:
	avfs_bitmap_free(&want_p);
	avfs_bitmap_free(&want_b);
	free(ms);
	avfs_plan_free(p);
	return err;
}

/* ---- format ---- */

int avfs_fs_format(const struct avfs_super *geo, int64_t now_ns, struct avfs_fs **out,
		   struct avfs_plan **plan)
{
	struct avfs_fs *fs;
	struct avfs_plan *p;
	struct avfs_dinode *root;
	uint64_t *ms;
	uint8_t *zero;
	int err = avfs_fs_open(geo, 0, &fs);

	if (err)
		return err;
	p = plan_new();
	ms = malloc(geo->dyn_start * sizeof(*ms));
	err = -ENOMEM;
	if (!p || !ms)
		goto fail;
	for (uint64_t m = 0; m < geo->dyn_start; m++) {
		uint32_t type;

		if (m >= geo->journal_start && m < geo->journal_start + geo->journal_blocks)
			continue;
		type = m == 0 ? AVFS_MT_SUPER : m < geo->itable_start ? AVFS_MT_BITMAP : AVFS_MT_INODES;
		if (posix_memalign((void **)&fs->blocks[m], 64, AVFS_MBLOCK))
			goto fail;
		memset(fs->blocks[m], 0, AVFS_MBLOCK);
		fs_hdr_init(fs, fs->blocks[m], m, type);
	}
	memcpy(fs->blocks[0], geo, sizeof(*geo));
	fs_hdr_init(fs, fs->blocks[0], 0, AVFS_MT_SUPER);
	for (uint64_t m = 0; m < geo->dyn_start; m++) {
		avfs_bitmap_set(&fs->mmap, m);
		fs_set_bit(fs, geo->mbitmap_start, m, true);
	}
	avfs_bitmap_set(&fs->imap, 0);
	fs_set_bit(fs, geo->ibitmap_start, 0, true);
	root = (struct avfs_dinode *)(fs->blocks[geo->itable_start] + sizeof(struct avfs_mhdr));
	root->mode = S_IFDIR | 0755;
	root->nlink = 2;
	root->parent = AVFS_ROOT_INO;
	root->atime_ns = root->mtime_ns = root->ctime_ns = root->btime_ns = now_ns;
	root->generation = 1;
	fs_sb(fs)->generation = 2;
	if (avfs_alloc_init(&fs->alloc, (enum avfs_alloc_policy)geo->alloc_policy, &fs->dmap,
			    geo->nzones, geo->last_zone))
		goto fail;
	/* the format's writes are not journaled: forget the dirty list it built */
	for (size_t i = 0; i < fs->ntxn; i++)
		avfs_bitmap_clear(&fs->txnmark, fs->txn[i]);
	fs->ntxn = 0;

	/* 1. invalidate any old superblock first, so a crash mid-format leaves no valid file
	 *    system pointing at half-written metadata */
	zero = plan_buf(p, AVFS_MBLOCK);
	if (!zero)
		goto fail;
	memset(zero, 0, AVFS_MBLOCK);
	if (fs_plan_write(p, 0, zero, AVFS_MBLOCK, false, false) ||
	    fs_plan_write(p, avfs_fs_backup_super_off(geo->dev_size), zero, AVFS_MBLOCK, false,
			  false) ||
	    fs_plan_flush(p))
		goto fail;
	/* 2. bitmaps and inode table, home and backup; the journal's anchors; a zeroed first
	 *    log block so that no stale transaction can follow the tail */
	{
		size_t n = 0;

		for (uint64_t m = geo->mbitmap_start; m < geo->dyn_start; m++) {
			fs_seal(fs, fs->blocks[m]);
			ms[n++] = m;
		}
		if (plan_homes(fs, p, ms, n, NULL, NULL))
			goto fail;
	}
	fs->jepoch = 0;
	if (plan_jsuper(fs, p, 0, 1) || plan_jsuper(fs, p, 0, 1) ||
	    fs_plan_write(p, fs->log_start * AVFS_MBLOCK, zero, AVFS_MBLOCK, false, false) ||
	    fs_plan_flush(p))
		goto fail;
	/* 3. the superblock last: only now is this a file system */
	fs_seal(fs, fs->blocks[0]);
	ms[0] = 0;
	if (plan_homes(fs, p, ms, 1, NULL, NULL) || fs_plan_flush(p))
		goto fail;
	fs->sb = *(struct avfs_super *)fs->blocks[0];
	fs->head = fs->tail = 0;
	fs->used = 0;
	fs->next_seq = fs->tail_seq = 1;
	free(ms);
	(void)now_ns;
	*out = fs;
	*plan = p;
	return 0;
fail:
	free(ms);
	avfs_plan_free(p);
	avfs_fs_close(fs);
	return err;
}

/* ---- commit ---- */

size_t avfs_fs_dirty_blocks(const struct avfs_fs *fs)
{
	return fs->ntxn;
}

int avfs_fs_journal_reset(struct avfs_fs *fs, struct avfs_plan **out)
{
	struct avfs_plan *p;

	*out = NULL;
	if (avfs_fs_rdonly(fs))
		return -EROFS;
	p = plan_new();
	if (!p || fs_plan_flush(p) || plan_jsuper(fs, p, fs->head, fs->next_seq) ||
	    fs_plan_flush(p)) {
		avfs_plan_free(p);
		return -ENOMEM;
	}
	fs->tail = fs->head;
	fs->tail_seq = fs->next_seq;
	fs->used = 0;
	*out = p;
	return 0;
}

int avfs_fs_commit(struct avfs_fs *fs, int64_t now_ns, struct avfs_plan **out)
{
	struct avfs_super *sb;
	struct avfs_plan *p;
	uint64_t n, ndesc, total, seq;
	uint8_t *jbuf;
	uint32_t crc = 0;
	int err = -ENOMEM;

	*out = NULL;
	if (avfs_fs_rdonly(fs))
		return fs->ntxn ? -EROFS : 0;
	if (!fs->ntxn && !fs->npfree)
		return 0;
	sb = fs_sb(fs);
	sb->last_zone = fs->alloc.last_zone;
	sb->commit_seq = fs->next_seq;
	fs_dirty(fs, 0);
	n = fs->ntxn;
	ndesc = (n + AVFS_JDESC_MAX - 1) / AVFS_JDESC_MAX;
	total = ndesc + n + 1;
	if (total > fs->log_blocks) {
		fs_why(fs, "transaction of %llu blocks does not fit the journal",
		       (unsigned long long)total);
		return -E2BIG;
	}
	p = plan_new();
	if (!p)
		return -ENOMEM;
	if (fs->used + total > fs->log_blocks) {
		/* the checkpoints of earlier transactions were written right after their commit;
		 * once they are durable the whole log is free again */
		if (fs_plan_flush(p) || plan_jsuper(fs, p, fs->head, fs->next_seq) ||
		    fs_plan_flush(p))
			goto fail;
		fs->tail = fs->head;
		fs->tail_seq = fs->next_seq;
		fs->used = 0;
	}
	seq = fs->next_seq;
	qsort(fs->txn, n, sizeof(*fs->txn), cmp_u64);
	jbuf = plan_buf(p, total * AVFS_MBLOCK);
	if (!jbuf)
		goto fail;
	{
		uint64_t k = 0, at = 0;

		for (uint64_t d = 0; d < ndesc; d++) {
			uint8_t *db = jbuf + at * AVFS_MBLOCK;
			struct avfs_jdesc *jd = (void *)db;
			uint64_t cnt = n - k < AVFS_JDESC_MAX ? n - k : AVFS_JDESC_MAX;

			memset(db, 0, AVFS_MBLOCK);
			fs_hdr_init(fs, db, log_home(fs, fs->head + at), AVFS_MT_JDESC);
			jd->hdr.seq = seq;
			jd->count = (uint32_t)cnt;
			jd->last = d + 1 == ndesc;
			for (uint64_t i = 0; i < cnt; i++) {
				uint64_t m = fs->txn[k + i];

				jd->home[i] = m;
				fs_seal(fs, fs->blocks[m]);
				memcpy(jbuf + (at + 1 + i) * AVFS_MBLOCK, fs->blocks[m], AVFS_MBLOCK);
			}
			fs_seal(fs, db);
			crc = avfs_crc32c(crc, db, (1 + cnt) * AVFS_MBLOCK);
			at += 1 + cnt;
			k += cnt;
		}
		{
			uint8_t *cb = jbuf + at * AVFS_MBLOCK;
			struct avfs_jcommit *c = (void *)cb;

			memset(cb, 0, AVFS_MBLOCK);
			fs_hdr_init(fs, cb, log_home(fs, fs->head + at), AVFS_MT_JCOMMIT);
			c->hdr.seq = seq;
			c->nblocks = at;
			c->data_crc = crc;
			c->commit_time_ns = (uint64_t)now_ns;
			fs_seal(fs, cb);
		}
	}
	/* descriptors and images (wrapping at the end of the log), a flush that also makes the
	 * transaction's data durable (ordered mode), then the commit record with FUA */
	{
		uint64_t first = fs->head % fs->log_blocks, body = total - 1;
		uint64_t run1 = fs->log_blocks - first < body ? fs->log_blocks - first : body;
		uint64_t cpos = (fs->head + body) % fs->log_blocks;

		if (fs_plan_write(p, (fs->log_start + first) * AVFS_MBLOCK, jbuf,
				  (uint32_t)(run1 * AVFS_MBLOCK), false, false))
			goto fail;
		if (body > run1 && fs_plan_write(p, fs->log_start * AVFS_MBLOCK,
						 jbuf + run1 * AVFS_MBLOCK,
						 (uint32_t)((body - run1) * AVFS_MBLOCK), false, false))
			goto fail;
		if (fs_plan_flush(p) ||
		    fs_plan_write(p, (fs->log_start + cpos) * AVFS_MBLOCK,
				  jbuf + body * AVFS_MBLOCK, AVFS_MBLOCK, true, false))
			goto fail;
	}
	/* checkpoint: the committed images to their homes and the backup region */
	err = plan_homes(fs, p, fs->txn, n, NULL, NULL);
	if (err)
		goto fail;
	fs->head = (fs->head + total) % fs->log_blocks;
	fs->used += total;
	fs->next_seq++;
	for (size_t i = 0; i < n; i++)
		avfs_bitmap_clear(&fs->txnmark, fs->txn[i]);
	fs->ntxn = 0;
	p->freed = fs->pfree;
	p->nfreed = fs->npfree;
	fs->pfree = NULL;
	fs->npfree = fs->cappfree = 0;
	*out = p;
	return 0;
fail:
	avfs_plan_free(p);
	return err;
}

void avfs_fs_plan_done(struct avfs_fs *fs, struct avfs_plan *p, int err)
{
	if (!p)
		return;
	if (err) {
		fs->broken = true;
		fs_why(fs, "a metadata write failed (%d): read-only until remounted", err);
		return;
	}
	/* blocks freed by a transaction can be reused only once it is on disk: before, a crash
	 * would leave the old owner pointing at new data */
	for (size_t i = 0; i < p->nfreed; i++)
		avfs_alloc_free(&fs->alloc, p->freed[i]);
	p->nfreed = 0;
}

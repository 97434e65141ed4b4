/*
 * super.c — the superblock's geometry: the regions of a format computed from mkfs options,
 * the checks of a superblock image read from a device, and where the backup copies live.
 * Arithmetic on struct avfs_super: it builds no image (mkfs.c) and mounts nothing (mount.c).
 */
#include "fs_i.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define BITS AVFS_BITS_PER_BLOCK

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

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
	uint64_t bs, est, ninodes, small, jb, dyn, xat, meta = 0, data_blocks = 0, data_off = 0,
		 backup_off = 0;
	uint64_t mbm = 1, dbm, ibm, itb, align;
	struct avfs_bitmap tmp;
	struct avfs_alloc a;
	int nz;

	memset(sb, 0, sizeof(*sb));
	if (shift < AVFS_BLOCK_MIN_SHIFT || shift > AVFS_BLOCK_MAX_SHIFT) {
		avfs_why(why, whylen, "block size must be a power of two from 64 KiB to 4 GiB");
		return -EINVAL;
	}
	if (o->alloc_policy > AVFS_ALLOC_ZRR_RUN) {
		avfs_why(why, whylen, "unknown allocation policy %u", o->alloc_policy);
		return -EINVAL;
	}
	bs = 1ull << shift;
	est = dev / bs;
	/* two per data block, and for small files (format 3) one per 128 KiB up to 131,072:
	 * 100,000 files fit 16 GB, and a large device keeps the inode table (which the mount
	 * holds in memory) it had */
	small = dev / (128u << 10) < AVFS_SMALL_INODES ? dev / (128u << 10) : AVFS_SMALL_INODES;
	ninodes = o->inodes ? o->inodes : est * 2 > small ? est * 2 : small;
	if (!o->inodes && ninodes < 4096)
		ninodes = 4096;
	if (!o->inodes && ninodes > (1u << 22))
		ninodes = 1u << 22;
	if (ninodes < 16 || ninodes > UINT32_MAX - 1) {
		avfs_why(why, whylen, "inode count %llu out of range (16 .. 4294967294)",
		       (unsigned long long)ninodes);
		return -EINVAL;
	}
	jb = o->journal_blocks;
	if (!jb) {
		jb = dev / AVFS_MBLOCK / 256;
		jb = jb < 256 ? 256 : jb > 16384 ? 16384 : jb;
	}
	if (jb < 64 || jb > (1u << 20)) {
		avfs_why(why, whylen, "journal of %llu blocks out of range (64 .. 1048576)",
		       (unsigned long long)jb);
		return -EINVAL;
	}
	/* block maps, directories and symlinks (an eighth of the inodes), extended attribute
	 * blocks (one per inode that has any, format.h) for half of the inodes, up to 1/256 of
	 * the device (a small image keeps its room for data), and the unit maps of small-file
	 * blocks (one per data block holding small files: a sixteenth of the inodes, at most
	 * every data block; when they run out, new files take whole blocks) */
	xat = ninodes / 2 < dev / AVFS_MBLOCK / 256 ? ninodes / 2 : dev / AVFS_MBLOCK / 256;
	dyn = o->dyn_blocks ? o->dyn_blocks : est / AVFS_MAP_PER_BLOCK * 2 + ninodes / 8 + xat + 256 +
		(shift <= AVFS_SMALL_MAX_SHIFT ? (ninodes / 16 < est ? ninodes / 16 : est) : 0);
	if (dyn < 16 || dyn > (1ull << 31)) {
		avfs_why(why, whylen, "dynamic metadata of %llu blocks out of range",
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
		avfs_why(why, whylen, "metadata region too large");
		return -EINVAL;
	}
	if (data_blocks < 1) {
		avfs_why(why, whylen,
		       "device of %llu bytes is too small: metadata needs %llu KiB, and at least one "
		       "%llu KiB data block must fit", (unsigned long long)o->size,
		       (unsigned long long)(2 * meta - jb) * 4, (unsigned long long)bs >> 10);
		return -ENOSPC;
	}
	if (data_blocks > UINT32_MAX - 1) {
		avfs_why(why, whylen, "too many data blocks (%llu): choose a larger block size",
		       (unsigned long long)data_blocks);
		return -EINVAL;
	}
	nz = avfs_alloc_zone_count(data_blocks, bs, o->zones);
	if (nz < 0) {
		avfs_why(why, whylen, "cannot make %u zones of %llu data blocks (at most %u, and no "
		       "more than the data blocks)", o->zones, (unsigned long long)data_blocks,
		       (unsigned)AVFS_ZONES_MAX);
		return -EINVAL;
	}
	if (avfs_bitmap_init(&tmp, data_blocks))
		return -ENOMEM;
	avfs_alloc_init(&a, (enum avfs_alloc_policy)o->alloc_policy, &tmp, (uint32_t)nz, 0, 1);
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
	if (o->alloc_policy == AVFS_ALLOC_ZRR_RUN || o->alloc_policy == AVFS_ALLOC_CONTIG)
		/* 16 MiB a run by default */
		sb->alloc_run = o->alloc_run ? o->alloc_run :
				AVFS_ALLOC_RUN_BYTES > bs ? (uint32_t)(AVFS_ALLOC_RUN_BYTES / bs) : 1;
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
		avfs_why(why, whylen, "unknown disk model '%s'", o->disk_model);
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

int avfs_fs_check_super(const uint8_t *img, uint64_t dev_size, struct avfs_super *out, char *why,
			size_t whylen)
{
	const struct avfs_super *s = (const struct avfs_super *)img;
	uint64_t bs, meta;

	if (s->hdr.magic != AVFS_MAGIC) {
		avfs_why(why, whylen, "no AVFS superblock (bad magic): not an AVFS file system, or "
			 "not formatted (mkfs.avfs makes one)");
		return -EINVAL;
	}
	if (fs_verify_img(NULL, 0, img, AVFS_MT_SUPER)) {
		avfs_why(why, whylen, "superblock checksum or header is wrong");
		return -EUCLEAN;
	}
	if (s->version < AVFS_FORMAT_VERSION_MIN || s->version > AVFS_FORMAT_VERSION) {
		avfs_why(why, whylen, "image format %u, this build reads %u to %u: %s", s->version,
			 AVFS_FORMAT_VERSION_MIN, AVFS_FORMAT_VERSION,
			 s->version > AVFS_FORMAT_VERSION ? "made or changed by a newer AVFS, use its "
			 "tools" : "not an image this build knows");
		return -EINVAL;
	}
	if (s->mblock_size != AVFS_MBLOCK || s->block_shift < AVFS_BLOCK_MIN_SHIFT ||
	    s->block_shift > AVFS_BLOCK_MAX_SHIFT) {
		avfs_why(why, whylen, "superblock: impossible block size (2^%u)", s->block_shift);
		return -EUCLEAN;
	}
	bs = 1ull << s->block_shift;
	meta = s->meta_blocks;
	if (s->dev_size > dev_size) {
		avfs_why(why, whylen, "device is %llu bytes but the file system needs %llu: truncated?",
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
	    s->alloc_policy > AVFS_ALLOC_ZRR_RUN ||
	    (s->alloc_policy == AVFS_ALLOC_ZRR_RUN && !s->alloc_run)) {
		avfs_why(why, whylen, "superblock geometry is inconsistent");
		return -EUCLEAN;
	}
	if (out)
		*out = *s;
	return 0;
}

bool fs_super_same_geometry(const struct avfs_super *a, const struct avfs_super *b)
{
	/* the version may rise (fs_super_version_ok), nothing else may change */
	size_t from = offsetof(struct avfs_super, mblock_size);
	size_t to = offsetof(struct avfs_super, last_zone);

	return !memcmp((const uint8_t *)a + from, (const uint8_t *)b + from, to - from) &&
	       !memcmp(a->hdr.uuid, b->hdr.uuid, sizeof(a->hdr.uuid));
}

bool fs_super_version_ok(const struct avfs_super *img, const struct avfs_super *home)
{
	return img->version >= home->version && img->version <= AVFS_FORMAT_VERSION;
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

/*
 * journal.c — the redo journal: the running transaction committed as a plan (descriptors,
 * images, flush, FUA commit record, checkpoint home and to the backup region), replay of
 * committed transactions at mount, and the tail. It moves block images, not their meaning.
 */
#include "fs_i.h"

#include "crc32c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t log_home(const struct avfs_fs *fs, uint64_t pos)
{
	return fs->log_start + pos % fs->log_blocks;
}

static int pick_jsuper(struct avfs_fs *fs, const uint8_t *a, const uint8_t *b,
		       const struct avfs_jsuper **out)
{
	const struct avfs_jsuper *ja = (const void *)a, *jb = (const void *)b;
	bool va = a && !fs_verify_img(fs->sb.hdr.uuid, fs->sb.journal_start, a, AVFS_MT_JSUPER) &&
		  ja->log_blocks == fs->log_blocks && ja->tail_pos < fs->log_blocks;
	bool vb = b && !fs_verify_img(fs->sb.hdr.uuid, fs->sb.journal_start + 1, b, AVFS_MT_JSUPER) &&
		  jb->log_blocks == fs->log_blocks && jb->tail_pos < fs->log_blocks;

	if (!va && !vb) {
		fs_why(fs, "both journal superblocks are damaged");
		return -EUCLEAN;
	}
	*out = va && (!vb || ja->epoch >= jb->epoch) ? ja : jb;
	return 0;
}

/* The type a journaled image of home m must have: the superblock, a bitmap and an inode
 * table block are what their region says; a dynamic block is a map, a directory, a symlink
 * or free (0: any of those, checked by the caller). */
static uint32_t home_type(const struct avfs_fs *fs, uint64_t m)
{
	if (m == 0)
		return AVFS_MT_SUPER;
	if (m < fs->sb.itable_start)
		return AVFS_MT_BITMAP;
	if (m < fs->sb.dyn_start)
		return AVFS_MT_INODES;
	return 0;
}

/* Whether a block image from a committed transaction may be applied to home: in the
 * metadata region and not the journal, sealed for that home with this file system's UUID,
 * of the type the home's region holds, and for the superblock, the geometry unchanged (a
 * journaled superblock carries only new dynamic fields). 0, or -EUCLEAN with why. */
static int image_ok(const struct avfs_fs *fs, uint64_t home, const uint8_t *img, char *why,
		    size_t whylen)
{
	const struct avfs_mhdr *h = (const void *)img;
	uint32_t t;

	if (home >= fs->nmeta || (home >= fs->sb.journal_start &&
				  home < fs->sb.journal_start + fs->sb.journal_blocks)) {
		avfs_why(why, whylen, "an image for block %llu, outside the metadata it may change",
			 (unsigned long long)home);
		return -EUCLEAN;
	}
	t = home_type(fs, home);
	if (fs_verify_img(fs->sb.hdr.uuid, home, img, t) ||
	    (!t && h->type != AVFS_MT_MAP && h->type != AVFS_MT_DIR && h->type != AVFS_MT_SYMLINK &&
	     h->type != AVFS_MT_XATTR && h->type != AVFS_MT_SMALL && h->type != AVFS_MT_FREE)) {
		avfs_why(why, whylen, "the image for block %llu is not a sealed %s block",
			 (unsigned long long)home, t == AVFS_MT_SUPER ? "superblock" :
			 t == AVFS_MT_BITMAP ? "bitmap" : t == AVFS_MT_INODES ? "inode table" :
			 "dynamic metadata");
		return -EUCLEAN;
	}
	if (home == 0) {
		const struct avfs_super *s = (const void *)img;

		if (!fs_super_same_geometry(s, &fs->sb) || !fs_super_version_ok(s, &fs->sb) ||
		    s->last_zone >= fs->sb.nzones) {
			avfs_why(why, whylen, "its superblock (block 0) changes the geometry");
			return -EUCLEAN;
		}
	}
	return 0;
}

/* Replay has read the first n log blocks from its start. */
static void reached(const struct avfs_fs *fs, struct avfs_replay *out, uint64_t n)
{
	if (n > fs->log_blocks)
		n = fs->log_blocks;
	if (n > out->reach)
		out->reach = n;
}

/* Replay the committed transactions from log index pos, sequence seq on (apply false: only
 * count them, changing nothing). */
static int replay_from(struct avfs_fs *fs, const uint8_t *log, uint64_t pos, uint64_t seq,
		       bool apply, struct avfs_replay *out)
{
	uint64_t scanned = 0;

	memset(out, 0, sizeof(*out));
	out->tail = pos;
	if (apply) {
		fs->tail = pos;
		fs->tail_seq = seq;
	}
	for (;;) {
		uint64_t p = pos, count = 0, first = pos;
		uint32_t crc = 0;
		bool ok = false;
		const struct avfs_jcommit *c;
		char why[160] = "";

		/* one transaction: descriptor groups, then a commit whose CRC covers them */
		while (count < fs->log_blocks) {
			const uint8_t *d = log + (p % fs->log_blocks) * AVFS_MBLOCK;
			const struct avfs_jdesc *jd = (const void *)d;

			reached(fs, out, scanned + (p - first) + 1);
			if (fs_verify_img(fs->sb.hdr.uuid, log_home(fs, p), d, AVFS_MT_JDESC) ||
			    jd->hdr.seq != seq || jd->count > AVFS_JDESC_MAX ||
			    count + 1 + jd->count + 1 > fs->log_blocks)
				break;
			reached(fs, out, scanned + (p - first) + 1 + jd->count);
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
		reached(fs, out, scanned + (p - first) + 1);
		if (fs_verify_img(fs->sb.hdr.uuid, log_home(fs, p), (const uint8_t *)c,
			       AVFS_MT_JCOMMIT) || c->hdr.seq != seq || c->nblocks != count ||
		    c->data_crc != crc || scanned + count + 1 > fs->log_blocks)
			break;
		/* committed. Every image is checked before any is applied: a transaction that
		 * carries something it could never have written is not half applied */
		for (uint64_t q = first; q < p && !why[0];) {
			const struct avfs_jdesc *jd =
				(const void *)(log + (q % fs->log_blocks) * AVFS_MBLOCK);

			for (uint32_t i = 0; i < jd->count && !why[0]; i++)
				image_ok(fs, jd->home[i],
					 log + ((q + 1 + i) % fs->log_blocks) * AVFS_MBLOCK, why,
					 sizeof(why));
			q += 1 + jd->count;
		}
		if (why[0]) {
			fs_why(fs, "journal transaction %llu (log block %llu): %s",
			       (unsigned long long)seq, (unsigned long long)log_home(fs, first), why);
			out->rejected_seq = seq;
			break;
		}
		for (uint64_t q = first; q < p && apply;) {
			const struct avfs_jdesc *jd =
				(const void *)(log + (q % fs->log_blocks) * AVFS_MBLOCK);

			for (uint32_t i = 0; i < jd->count; i++) {
				const uint8_t *img = log + ((q + 1 + i) % fs->log_blocks) * AVFS_MBLOCK;
				uint64_t home = jd->home[i];

				if (!fs->blocks[home] &&
				    posix_memalign((void **)&fs->blocks[home], 64, AVFS_MBLOCK))
					return -ENOMEM;
				memcpy(fs->blocks[home], img, AVFS_MBLOCK);
				avfs_bitmap_set(&fs->replayed, home);
				out->nblocks++;
			}
			q += 1 + jd->count;
		}
		out->ntxn++;
		scanned += count + 1;
		pos = (p + 1) % fs->log_blocks;
		seq++;
	}
	out->end_seq = seq;
	if (!apply)
		return 0;
	fs->head = pos;
	fs->used = scanned;
	fs->lpos = scanned;	/* (absolute positions start at the tail) */
	/* skip the sequence number a torn transaction may have used, so its remains can never
	 * pass for the next transaction */
	fs->next_seq = seq + 1;
	return 0;
}

int avfs_fs_replay(struct avfs_fs *fs, const uint8_t *jsa, const uint8_t *jsb, const uint8_t *log,
		   struct avfs_replay *out)
{
	const struct avfs_jsuper *js;
	int err;

	memset(out, 0, sizeof(*out));
	err = pick_jsuper(fs, jsa, jsb, &js);
	if (err)
		return err;
	fs->jepoch = js->epoch;
	return replay_from(fs, log, js->tail_pos, js->tail_seq, true, out);
}

/* Does a valid descriptor with sequence seq sit at log index i? */
static bool desc_at(const struct avfs_fs *fs, const uint8_t *log, uint64_t i, uint64_t *seq)
{
	const uint8_t *d = log + (i % fs->log_blocks) * AVFS_MBLOCK;

	if (fs_verify_img(fs->sb.hdr.uuid, log_home(fs, i), d, AVFS_MT_JDESC))
		return false;
	*seq = ((const struct avfs_mhdr *)d)->seq;
	return true;
}

struct cand {
	uint64_t seq, pos;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq ? 1 : x->pos < y->pos ? -1 : x->pos > y->pos;
}

int avfs_fs_replay_scan(struct avfs_fs *fs, const uint8_t *jsa, const uint8_t *jsb,
			const uint8_t *log, struct avfs_replay *out)
{
	uint64_t best = UINT64_MAX, best_seq = 0, best_end = 0, best_n = 0, covered = 0;
	uint64_t min_seq = 0;
	const uint8_t *js[2] = { jsa, jsb };
	struct cand *c = malloc(fs->log_blocks * sizeof(*c));
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	if (!c)
		return -ENOMEM;
	/* a readable anchor's tail: everything before it is home already */
	for (int k = 0; k < 2; k++) {
		const struct avfs_jsuper *j = (const void *)js[k];

		if (js[k] && !fs_verify_img(fs->sb.hdr.uuid, fs->sb.journal_start + (uint64_t)k,
					    js[k], AVFS_MT_JSUPER) && j->tail_seq > min_seq &&
		    j->tail_seq < UINT64_MAX / 2)
			min_seq = j->tail_seq;
	}
	/* the log is a ring of transactions in sequence: replay from the earliest one that is
	 * whole and leads furthest. Descriptors in ascending sequence; one inside a chain
	 * already walked adds nothing, so the dry runs stay linear in the log's size */
	for (uint64_t i = 0; i < fs->log_blocks; i++) {
		uint64_t seq;

		if (desc_at(fs, log, i, &seq) && seq >= min_seq && seq < UINT64_MAX / 2)
			c[n++] = (struct cand){ .seq = seq, .pos = i };
	}
	qsort(c, n, sizeof(*c), cand_cmp);
	for (size_t k = 0; k < n; k++) {
		struct avfs_replay r;

		if (c[k].seq < covered)
			continue;
		replay_from(fs, log, c[k].pos, c[k].seq, false, &r);
		if (!r.ntxn)
			continue;
		covered = r.end_seq;
		if (r.end_seq > best_end || (r.end_seq == best_end && r.ntxn > best_n)) {
			best = c[k].pos;
			best_seq = c[k].seq;
			best_end = r.end_seq;
			best_n = r.ntxn;
		}
	}
	free(c);
	if (best == UINT64_MAX)
		return 0;
	return replay_from(fs, log, best, best_seq, true, out);
}

void avfs_fs_journal_discard(struct avfs_fs *fs, const uint8_t *jsa, const uint8_t *jsb,
			     const uint8_t *log, const uint8_t *bad)
{
	const uint8_t *js[2] = { jsa, jsb };
	uint64_t top = fs->next_seq;

	for (int k = 0; k < 2; k++) {
		const struct avfs_jsuper *j = (const void *)js[k];

		if (!js[k] || fs_verify_img(fs->sb.hdr.uuid, fs->sb.journal_start + (uint64_t)k,
					    js[k], AVFS_MT_JSUPER))
			continue;
		if (j->epoch > fs->jepoch && j->epoch < UINT64_MAX / 2)
			fs->jepoch = j->epoch;
		if (j->tail_seq < UINT64_MAX / 2 && j->tail_seq + 1 > top)
			top = j->tail_seq + 1;
	}
	/* every sequence still in the log must stay below the next transaction's */
	for (uint64_t i = 0; log && i < fs->log_blocks; i++) {
		const uint8_t *b = log + i * AVFS_MBLOCK;
		const struct avfs_mhdr *h = (const void *)b;

		if ((h->type == AVFS_MT_JDESC || h->type == AVFS_MT_JCOMMIT) &&
		    !fs_verify_img(fs->sb.hdr.uuid, log_home(fs, i), b, 0) &&
		    h->seq < UINT64_MAX / 2 && h->seq + 2 > top)
			top = h->seq + 2;
	}
	fs->next_seq = top;
	fs->jsuper_both = true;
	/* the next mount reads the block at the tail first: not an unreadable one */
	for (uint64_t i = 0; bad && i < fs->log_blocks && bad[fs->head]; i++)
		fs->head = (fs->head + 1) % fs->log_blocks;
	fs->tail = fs->head;
	fs->used = 0;
}

bool avfs_fs_replayed(const struct avfs_fs *fs, uint64_t m)
{
	return m < fs->nmeta && avfs_bitmap_test(&fs->replayed, m);
}

uint64_t fs_log_index(const struct avfs_fs *fs, uint64_t x)
{
	return (fs->head + fs->log_blocks - (fs->lpos - x) % fs->log_blocks) % fs->log_blocks;
}

int fs_plan_jsuper(struct avfs_fs *fs, struct avfs_plan *p, uint64_t tail, uint64_t seq)
{
	uint8_t *img = fs_plan_buf(p, AVFS_MBLOCK);
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
int fs_plan_homes(struct avfs_fs *fs, struct avfs_plan *p, const uint64_t *ms, size_t n,
		  const struct avfs_bitmap *want_p, const struct avfs_bitmap *want_b)
{
	return fs_plan_images(fs, p, ms, n, want_p, want_b, fs->blocks);
}

int fs_plan_images(struct avfs_fs *fs, struct avfs_plan *p, const uint64_t *ms, size_t n,
		   const struct avfs_bitmap *want_p, const struct avfs_bitmap *want_b,
		   uint8_t *const *src)
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
			buf = fs_plan_buf(p, (j - i + 1) * AVFS_MBLOCK);
			if (!buf)
				return -ENOMEM;
			for (size_t k = i; k <= j; k++)
				memcpy(buf + (k - i) * AVFS_MBLOCK, src[ms[k]], AVFS_MBLOCK);
			off = pass == 0 ? ms[i] * AVFS_MBLOCK : avfs_fs_backup_off(&fs->sb, ms[i]);
			/* the superblock's home copy with FUA: its backup is written only once it is
			 * durable, so that one power cut never tears both copies (a torn superblock
			 * is unreadable, and without one the journal cannot be found) */
			if (fs_plan_write(p, off, buf, (uint32_t)((j - i + 1) * AVFS_MBLOCK),
					  pass == 0 && ms[i] == 0, false))
				return -ENOMEM;
			i = j + 1;
		}
	}
	return 0;
}

static int bits_of(const struct avfs_bitmap *b, uint64_t **out);

int avfs_fs_journal_reset(struct avfs_fs *fs, struct avfs_plan **out)
{
	struct avfs_plan *p;

	uint64_t *ms = NULL;
	int err;

	*out = NULL;
	if (avfs_fs_rdonly(fs))
		return -EROFS;
	if (fs->ck_out)
		return -EBUSY;
	p = fs_plan_new();
	/* the lazy checkpoint's images not yet home go first (none when it is off) */
	err = !p ? -ENOMEM : bits_of(&fs->ckpt, &ms);
	if (!err)
		err = fs_plan_images(fs, p, ms, fs->ckpt.nset, NULL, NULL, fs->cimg);
	if (err || fs_plan_flush(p) || fs_plan_jsuper(fs, p, fs->head, fs->next_seq) ||
	    fs_plan_flush(p)) {
		avfs_plan_free(p);
		free(ms);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < fs->ckpt.nset; i++) {
		free(fs->cimg[ms[i]]);
		fs->cimg[ms[i]] = NULL;
	}
	for (uint64_t i = 0, k = fs->ckpt.nset; i < k; i++)
		avfs_bitmap_clear(&fs->ckpt, ms[i]);
	free(ms);
	fs->tail = fs->head;
	fs->tail_seq = fs->next_seq;
	fs->used = 0;
	fs->dpos = fs->jtail = fs->lpos;
	fs->dseq = fs->next_seq;
	*out = p;
	return 0;
}

/* The set bits of b, in order, as a new array (NULL and 0 when there are none). */
static int bits_of(const struct avfs_bitmap *b, uint64_t **out)
{
	uint64_t *v = NULL, k = 0;

	if (b->nset && !(v = malloc(b->nset * sizeof(*v))))
		return -ENOMEM;
	for (uint64_t i = avfs_bitmap_find_set(b, 0, b->nbits); i != UINT64_MAX;
	     i = avfs_bitmap_find_set(b, i + 1, b->nbits))
		v[k++] = i;
	*out = v;
	return 0;
}

size_t fs_journal_capacity(uint64_t log_blocks)
{
	uint64_t n = log_blocks > 2 ? log_blocks - 2 : 0;

	while (n && n + (n + AVFS_JDESC_MAX - 1) / AVFS_JDESC_MAX + 1 > log_blocks)
		n--;
	return n;
}

int avfs_fs_commit(struct avfs_fs *fs, int64_t now_ns, struct avfs_plan **out)
{
	struct avfs_super *sb;
	struct avfs_plan *p = NULL;
	uint64_t n, ndesc, total, seq, *ms = NULL, *freed = NULL;
	const uint8_t **img = NULL;
	/* where the journal stands: put back if the plan cannot be made */
	uint64_t tail = fs->tail, tail_seq = fs->tail_seq, used = fs->used, jepoch = fs->jepoch;
	uint8_t *jbuf;
	uint32_t crc = 0;
	int err;

	*out = NULL;
	if (avfs_fs_rdonly(fs))
		return fs->dirty.nset ? -EROFS : 0;
	if (!fs->dirty.nset && !fs->pfree.nset && !fs->nspend)
		return 0;
	sb = fs_sb(fs);
	sb->last_zone = fs->alloc.last_zone;
	sb->commit_seq = fs->next_seq;
	fs_dirty(fs, 0);
	n = fs->dirty.nset;
	ndesc = (n + AVFS_JDESC_MAX - 1) / AVFS_JDESC_MAX;
	total = ndesc + n + 1;
	if (total > fs->log_blocks) {	/* credits keep it from happening */
		fs_why(fs, "transaction of %llu blocks does not fit the journal",
		       (unsigned long long)total);
		return -E2BIG;
	}
	if ((err = bits_of(&fs->dirty, &ms)) || (err = bits_of(&fs->pfree, &freed)))
		goto fail;
	err = -ENOMEM;
	p = fs_plan_new();
	if (!p)
		goto fail;
	if (fs->used + total > fs->log_blocks) {
		/* the checkpoints of earlier transactions were written right after their commit;
		 * once they are durable the whole log is free again. Lazy: the driver runs a
		 * checkpoint of all of them first, which moves the tail here */
		if (fs->lazy)
			p->after_ckpt = true;
		else if (fs_plan_flush(p) || fs_plan_jsuper(fs, p, fs->head, fs->next_seq) ||
			 fs_plan_flush(p))
			goto fail;
		fs->tail = fs->head;
		fs->tail_seq = fs->next_seq;
		fs->used = 0;
	}
	seq = fs->next_seq;
	jbuf = fs_plan_buf(p, total * AVFS_MBLOCK);
	if (!jbuf || (fs->lazy && !(img = malloc(n * sizeof(*img)))))
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
				uint64_t m = ms[k + i];

				jd->home[i] = m;
				fs_seal(fs, fs->blocks[m]);
				memcpy(jbuf + (at + 1 + i) * AVFS_MBLOCK, fs->blocks[m], AVFS_MBLOCK);
				if (img)
					img[k + i] = jbuf + (at + 1 + i) * AVFS_MBLOCK;
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
	if (fs->lazy) {
		/* a FLUSH that makes the transaction's data durable (ordered mode), then the whole
		 * transaction with FUA: replay takes it only if the commit record's CRC over the
		 * descriptors and images holds, so a torn write is no commit (jbd2's async commit,
		 * its data flushed first). The checkpoint comes later (checkpoint.c) */
		uint64_t first = fs->head % fs->log_blocks;
		uint64_t run1 = fs->log_blocks - first < total ? fs->log_blocks - first : total;

		if (fs_plan_flush(p) ||
		    fs_plan_write(p, (fs->log_start + first) * AVFS_MBLOCK, jbuf,
				  (uint32_t)(run1 * AVFS_MBLOCK), true, false) ||
		    (total > run1 && fs_plan_write(p, fs->log_start * AVFS_MBLOCK,
						   jbuf + run1 * AVFS_MBLOCK,
						   (uint32_t)((total - run1) * AVFS_MBLOCK), true,
						   false)))
			goto fail;
	} else {
		/* descriptors and images (wrapping at the end of the log), a flush that also
		 * makes the transaction's data durable (ordered mode), then the commit record with
		 * FUA; then the checkpoint: the committed images home and to the backup region */
		uint64_t first = fs->head % fs->log_blocks, body = total - 1;
		uint64_t run1 = fs->log_blocks - first < body ? fs->log_blocks - first : body;
		uint64_t cpos = (fs->head + body) % fs->log_blocks;

		if (fs_plan_write(p, (fs->log_start + first) * AVFS_MBLOCK, jbuf,
				  (uint32_t)(run1 * AVFS_MBLOCK), false, false) ||
		    (body > run1 && fs_plan_write(p, fs->log_start * AVFS_MBLOCK,
						  jbuf + run1 * AVFS_MBLOCK,
						  (uint32_t)((body - run1) * AVFS_MBLOCK), false,
						  false)) ||
		    fs_plan_flush(p) ||
		    fs_plan_write(p, (fs->log_start + cpos) * AVFS_MBLOCK,
				  jbuf + body * AVFS_MBLOCK, AVFS_MBLOCK, true, false))
			goto fail;
		err = fs_plan_homes(fs, p, ms, n, NULL, NULL);
		if (err)
			goto fail;
	}
	fs->head = (fs->head + total) % fs->log_blocks;
	fs->used += total;
	fs->lpos += total;
	fs->next_seq++;
	p->end_abs = fs->lpos;
	p->end_seq = fs->next_seq;
	for (size_t i = 0; i < n; i++)
		avfs_bitmap_clear(&fs->dirty, ms[i]);
	p->nfreed = fs->pfree.nset;
	for (size_t i = 0; i < p->nfreed; i++)
		avfs_bitmap_clear(&fs->pfree, freed[i]);
	p->freed = freed;
	fs_small_commit(fs, p);
	if (fs->lazy) {
		p->ck_home = ms;
		p->ck_img = img;
		p->nck = n;
	} else {
		free(ms);
	}
	*out = p;
	return 0;
fail:
	fs->tail = tail;
	fs->tail_seq = tail_seq;
	fs->used = used;
	fs->jepoch = jepoch;
	avfs_plan_free(p);
	free(ms);
	free(img);
	free(freed);
	return err;
}

void avfs_fs_plan_done(struct avfs_fs *fs, struct avfs_plan *p, int err)
{
	if (!p)
		return;
	if (err == -ECANCELED && p->moves_tail) {
		/* a checkpoint not run to its end (its driver stopped): what it had to write stays
		 * for the next one; whatever reached the disk was a committed image */
		fs->ck_out = false;
		for (uint64_t m = avfs_bitmap_find_set(&fs->ck_again, 0, fs->nmeta);
		     m != UINT64_MAX; m = avfs_bitmap_find_set(&fs->ck_again, m + 1, fs->nmeta))
			avfs_bitmap_clear(&fs->ck_again, m);
		return;
	}
	if (err) {
		fs->broken = true;
		fs->ck_out = false;
		fs_why(fs, "a metadata write failed (%d): read-only until remounted", err);
		return;
	}
	if (p->moves_tail) {
		/* a checkpoint: its images are home and the journal superblock names its tail */
		fs->ck_out = false;
		for (size_t i = 0; i < p->nck; i++)
			if (!avfs_bitmap_test(&fs->ck_again, p->ck_home[i])) {
				avfs_bitmap_clear(&fs->ckpt, p->ck_home[i]);
				free(fs->cimg[p->ck_home[i]]);
				fs->cimg[p->ck_home[i]] = NULL;
			}
		for (uint64_t m = avfs_bitmap_find_set(&fs->ck_again, 0, fs->nmeta);
		     m != UINT64_MAX; m = avfs_bitmap_find_set(&fs->ck_again, m + 1, fs->nmeta))
			avfs_bitmap_clear(&fs->ck_again, m);
		if (p->tail_abs > fs->jtail)
			fs->jtail = p->tail_abs;
		if (p->tail_abs > fs->lpos - fs->used) {	/* (a wrap may have moved it past) */
			fs->used = fs->lpos - p->tail_abs;
			fs->tail = p->tail_pos;
			fs->tail_seq = p->tail_seq;
		}
		return;
	}
	/* a lazy commit is durable: its images wait for the checkpoint, the latest per block */
	for (size_t i = 0; i < p->nck; i++) {
		uint64_t m = p->ck_home[i];

		if (!fs->cimg[m] && posix_memalign((void **)&fs->cimg[m], 64, AVFS_MBLOCK)) {
			fs->broken = true;	/* cannot be kept: the log may not be reused */
			fs_why(fs, "no memory for a committed image: read-only until remounted");
			return;
		}
		memcpy(fs->cimg[m], p->ck_img[i], AVFS_MBLOCK);
		avfs_bitmap_set(&fs->ckpt, m);
		if (fs->ck_out)
			avfs_bitmap_set(&fs->ck_again, m);
	}
	if (p->nck) {
		fs->dpos = p->end_abs;
		fs->dseq = p->end_seq;
	}
	/* blocks freed by a transaction can be reused only once it is on disk: before, a crash
	 * would leave the old owner pointing at new data; small-file units first (a freed pool
	 * block's data block may be reused right after) */
	fs_small_done(fs, p);
	for (size_t i = 0; i < p->nfreed; i++)
		avfs_alloc_free(&fs->alloc, p->freed[i]);
	p->nfreed = 0;
}

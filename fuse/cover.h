/*
 * cover.h — which directory each regular file the kernel knows was found in, so that a
 * directory's reservation covers FUSE I/O on its files (SPEC §9; the core keeps no parent of a
 * file: a hard-linked file has many). An entry lives while the kernel holds lookups of the
 * inode (FUSE's nlookup: counted up by each entry reply, down by FORGET), and names the last
 * directory the file was looked up, created, linked or renamed in. It decides nothing about
 * reservations (the engine's avfs_engine_stream_cover does).
 */
#ifndef AVFS_FUSE_COVER_H
#define AVFS_FUSE_COVER_H

#include <stddef.h>
#include <stdint.h>

struct avfs_cover_ent;

struct avfs_cover {
	struct avfs_cover_ent **tab;	/* chained by ino */
	size_t nbuckets, n;
};

void avfs_cover_init(struct avfs_cover *c);
void avfs_cover_fini(struct avfs_cover *c);
/* An entry reply for ino found in dir: one more lookup. 0 or -ENOMEM (then the file's
 * directory is unknown: its I/O is covered only by a reservation on the file itself). */
int avfs_cover_seen(struct avfs_cover *c, uint64_t ino, uint64_t dir);
/* ino is in dir now (a rename), lookups unchanged. */
void avfs_cover_moved(struct avfs_cover *c, uint64_t ino, uint64_t dir);
/* FORGET of n lookups. */
void avfs_cover_forget(struct avfs_cover *c, uint64_t ino, uint64_t n);
/* The directory ino was last found in, 0: unknown. */
uint64_t avfs_cover_dir(const struct avfs_cover *c, uint64_t ino);

#endif

/*
 * space.h — per-directory space rules (issue 16 item 3): a quota and retention marks kept in a
 * directory's attributes, applying to its whole subtree; how much space a subtree takes; which
 * files retention deletes (the oldest by mtime, never a protected file — user.avfs.protected —
 * nor an open one, nor one with other links). Sans-I/O over the in-memory core: no clock, no
 * descriptor, and it deletes nothing itself: its driver (fuse/retain.c) unlinks the victims it
 * names, commits, logs and counts. Not the FUSE errno mapping, not the schedule of its runs.
 */
#ifndef AVFS_SPACE_H
#define AVFS_SPACE_H

#include <stddef.h>
#include <stdint.h>

struct avfs_fs;

/* The rules live with the directory (so they survive remounts and travel with backups that keep
 * trusted.* attributes): the quota in bytes as decimal digits ("10737418240"), the retention
 * marks as two whole percentages "HIGH LOW" (1 <= LOW < HIGH <= 100: "90 80"). Percentages are
 * of the directory's quota when it has one, else of the file system's data space. */
#define AVFS_SPACE_QUOTA "trusted.avfs.quota"
#define AVFS_SPACE_RETAIN "trusted.avfs.retain"
/* Any value: retention never deletes the file (settable by its owner with setfattr). */
#define AVFS_SPACE_PROTECTED "user.avfs.protected"

struct avfs_space;

/* What the rules' driver (fuse/retain.c) did, for avfs-admin stats: here, below the daemon's
 * admin document and the driver alike. */
struct avfs_retain_stats {
	uint64_t runs;		/* passes that deleted something */
	uint64_t deleted;	/* files deleted */
	uint64_t deleted_bytes;	/* their allocated bytes */
	uint64_t failed;	/* victims whose unlink failed (logged) */
	uint64_t edquot;	/* operations refused with EDQUOT */
};

/* A rule of a directory, as its attributes say. */
struct avfs_space_rule {
	uint64_t dir;
	uint32_t generation;	/* of dir when read: a reused inode number is not the rule's */
	uint64_t quota;		/* bytes, 0 none */
	unsigned high, low;	/* percent, 0 0: no retention */
};

/* One file retention deletes: the name `name` in directory `dir`. */
struct avfs_space_victim {
	uint64_t ino, dir;
	uint64_t bytes;		/* allocated */
	int64_t mtime_ns;
	uint64_t rule;		/* the directory of the rule that chose it */
	char *path;		/* relative to that directory, for the log (malloc'ed) */
	const char *name;	/* the last component of path */
};

struct avfs_space_plan {
	struct avfs_space_victim *v;
	size_t n, cap;
};

void avfs_space_plan_free(struct avfs_space_plan *p);	/* empties it; reusable */

/* Validate a value for one of the rule attributes (AVFS_SPACE_QUOTA, AVFS_SPACE_RETAIN):
 * 0 (well formed), 1 (name is not a rule attribute), -EINVAL with why. Parses into *r (may be
 * NULL): quota, or high and low. */
int avfs_space_parse(const char *name, const void *value, size_t len,
		     struct avfs_space_rule *r, char *why, size_t whylen);

/* The rules of every directory, found by walking the tree once (mount). 0, -ENOMEM. */
int avfs_space_new(struct avfs_fs *fs, struct avfs_space **out);
void avfs_space_free(struct avfs_space *sp);
/* How many directories carry a rule (0: the checks below cost nothing). */
size_t avfs_space_rules(const struct avfs_space *sp);
/* The rules of dir changed (its rule attributes were set or removed): read them again.
 * 0, -ENOMEM. */
int avfs_space_reload(struct avfs_space *sp, uint64_t dir);
/* A name of ino was seen in directory parent (lookup, create, link, rename): files have no
 * ".." of their own, so this is how a file's write finds the rules above it. The last one
 * seen wins for a file with several links. -ENOMEM (it is then not known: no quota check). */
int avfs_space_note(struct avfs_space *sp, uint64_t ino, uint64_t parent);
/* The directory a name of ino was last seen in (as noted above, or found at avfs_space_new's
 * walk), 0: unknown. What a directory's reservation covers is asked this way too (fuse/). */
uint64_t avfs_space_parent(const struct avfs_space *sp, uint64_t ino);

/* Bytes allocated to the regular files of dir's subtree (st_blocks: what du counts; a file
 * with several links in it counts once per name). 0, -ENOTDIR, -ENOENT, -ENOMEM. */
int avfs_space_usage(struct avfs_fs *fs, uint64_t dir, uint64_t *bytes);
/* Bytes of data blocks a write (or preallocation) of [off, off + len) of ino would newly
 * allocate: its blocks not yet mapped. */
uint64_t avfs_space_need(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len);

/*
 * What must go before `need` more bytes are allocated below ino (a file, or a directory for a
 * create; 0: none, the periodic check of every rule): the victims, into plan (appended), so
 * that every retention rule that applies ends at or below its low mark — a rule with a quota
 * that ino lies under, whose usage + need passes its high mark; a rule without a quota, wherever
 * it is, when the file system's use + need passes its high mark (the oldest files of all such
 * rules first). Returns 0, or -EDQUOT when a quota that ino lies under would be passed even
 * after its victims are gone (plan then holds no victim of that rule), -ENOMEM.
 */
int avfs_space_plan(struct avfs_space *sp, uint64_t ino, uint64_t need,
		    struct avfs_space_plan *plan);

/* The rules, for avfs-admin: up to max into r; returns how many there are. */
size_t avfs_space_list(const struct avfs_space *sp, struct avfs_space_rule *r, size_t max);

#endif

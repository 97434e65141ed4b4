/*
 * cfgreserve.c — the config file's reservations admitted at start (cfgreserve.h): the path
 * walked from the root, then the engine's admission, as avfs-admin reserve would.
 */
#include "cfgreserve.h"

#include "engine.h"
#include "format.h"	/* AVFS_ROOT_INO */
#include "fs.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The inode at path (from the root, '/'-separated). 0 or -errno. */
static int lookup_path(struct avfs_fs *fs, const char *path, uint64_t *ino)
{
	char name[256];
	uint64_t cur = AVFS_ROOT_INO;

	for (const char *p = path;;) {
		size_t n;
		int err;

		p += strspn(p, "/");
		if (!*p)
			break;
		n = strcspn(p, "/");
		if (n >= sizeof(name))
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = 0;
		err = avfs_fs_lookup(fs, cur, name, &cur);
		if (err)
			return err;
		p += n;
	}
	*ino = cur;
	return 0;
}

static int admit_one(struct avfs_engine *e, struct avfs_fs *fs, const struct avfsd_reserve *r,
		     int64_t now, char *why, size_t whylen)
{
	struct avfs_service_req req = { .rate = r->rate, .buffer = r->buffer, .io = r->io,
					.write = r->write, .uid = 0 };
	struct avfs_admit_left left = { 0 };
	struct avfs_estream *st;
	struct avfs_stat a;
	uint64_t ino;
	int64_t id;
	int err = lookup_path(fs, r->path, &ino);

	if (!err)
		err = avfs_fs_getattr(fs, ino, &a);
	if (err) {
		snprintf(why, whylen, "%s", strerror(-err));
		return err;
	}
	if (!S_ISDIR(a.mode) && !S_ISREG(a.mode)) {
		snprintf(why, whylen, "neither a file nor a directory");
		return -EINVAL;
	}
	id = avfs_engine_reserve(e, &req, ino, NULL, AVFS_RESERVE_BUFFERED |
				 (S_ISDIR(a.mode) ? AVFS_RESERVE_DIR : 0), now, &left, why, whylen);
	if (id < 0) {
		size_t n = strlen(why);

		if (id == -EBUSY || id == -EDQUOT)
			snprintf(why + n, whylen - n, "; %.1f %% of disk time left",
				 100 * left.util);
		return (int)id;
	}
	st = avfs_engine_stream(e, (uint64_t)id);
	st->uid_only = r->uid_only;
	st->cover_uid = r->uid;
	snprintf(why, whylen, "reservation %llu", (unsigned long long)id);
	return 0;
}

unsigned avfsd_cfg_reserve(struct avfs_engine *e, struct avfs_fs *fs,
			   const struct avfsd_config *c, const char *cfg, int64_t now)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->nrsv; i++) {
		const struct avfsd_reserve *r = &c->rsv[i];
		char why[160], only[32] = "";

		if (r->uid_only)
			snprintf(only, sizeof(only), ", uid %u only", r->uid);
		if (admit_one(e, fs, r, now, why, sizeof(why))) {
			avfsd_log(AVFSD_WARNING, "%s:%u: reserve %s %s %.3f MB/s, buffer %.2f MiB%s "
				  "no longer fits, left out: %s", cfg, r->line, r->path,
				  r->write ? "write" : "read", (double)r->rate / 1e6,
				  (double)r->buffer / (1 << 20), only, why);
			continue;
		}
		avfsd_log(AVFSD_INFO, "%s:%u: %s: %s %s at %.3f MB/s, buffer %.2f MiB%s", cfg,
			  r->line, why, r->write ? "write" : "read", r->path,
			  (double)r->rate / 1e6, (double)r->buffer / (1 << 20), only);
		n++;
	}
	return n;
}

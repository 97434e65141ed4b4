/*
 * retain.c — the driver of the space rules (retain.h): asks fs/space.c what must go, unlinks
 * it through the engine's commit-and-retry, logs and counts. Deleting a file is metadata
 * only (its data blocks are bits in a bitmap), so a pass costs the loop little, and its
 * commit goes to the disk as best effort: reserved streams do not wait for it.
 */
#include "retain.h"

#include "engine.h"
#include "fs.h"
#include "space.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct avfs_retain {
	struct avfs_engine *e;
	struct avfs_fs *fs;
	struct avfs_space *sp;
	struct avfs_retain_hooks h;
	struct avfs_retain_stats st;
};

int avfs_retain_new(struct avfs_retain **out, struct avfs_engine *e, struct avfs_fs *fs,
		    const struct avfs_retain_hooks *hooks)
{
	struct avfs_retain *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	*r = (struct avfs_retain){ .e = e, .fs = fs, .h = *hooks };
	err = avfs_space_new(fs, &r->sp);
	if (err) {
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

void avfs_retain_free(struct avfs_retain *r)
{
	if (!r)
		return;
	avfs_space_free(r->sp);
	free(r);
}

struct avfs_space *avfs_retain_space(struct avfs_retain *r)
{
	return r->sp;
}

const struct avfs_retain_stats *avfs_retain_stats(const struct avfs_retain *r)
{
	return &r->st;
}

static void say(struct avfs_retain *r, bool warning, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct avfs_retain *r, bool warning, const char *fmt, ...)
{
	char line[600];
	va_list ap;

	if (!r->h.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r->h.log(r->h.log_ctx, warning, line);
}

int avfs_retain_room(struct avfs_retain *r, uint64_t ino, uint64_t need, int64_t now,
		     int64_t wall)
{
	struct avfs_space_plan p = { 0 };
	uint64_t n = 0;
	int err;

	if (!avfs_space_rules(r->sp))
		return 0;
	err = avfs_space_plan(r->sp, ino, need, &p);
	for (size_t i = 0; i < p.n; i++) {
		struct avfs_space_victim *v = &p.v[i];
		uint64_t at;
		int e;

		/* the name still names the victim: nothing ran since the plan was made */
		if (avfs_fs_lookup(r->fs, v->dir, v->name, &at) || at != v->ino)
			continue;
		e = AVFS_ENGINE_FS(r->e, now, avfs_fs_unlink(r->fs, v->dir, v->name, wall));
		if (e) {
			r->st.failed++;
			say(r, true, "retention: cannot delete %s in the directory of inode %llu: %s",
			    v->path, (unsigned long long)v->rule, strerror(-e));
			continue;
		}
		if (r->h.deleted)
			r->h.deleted(r->h.deleted_ctx, v->dir, v->ino, v->name);
		n++;
		r->st.deleted++;
		r->st.deleted_bytes += v->bytes;
		say(r, false, "retention: deleted %s (%llu bytes, the oldest) under the directory of "
		    "inode %llu", v->path, (unsigned long long)v->bytes,
		    (unsigned long long)v->rule);
	}
	avfs_space_plan_free(&p);
	if (n) {
		r->st.runs++;
		avfs_engine_changed(r->e, now);
	}
	if (err == -EDQUOT)
		r->st.edquot++;
	return err;
}

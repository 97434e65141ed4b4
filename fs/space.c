/*
 * space.c — per-directory quotas and retention (space.h): the rules read from directories'
 * attributes, a file's way up to them, a subtree's usage, and the victims retention chooses.
 * Above the core's public calls (it reads the open counts too, to spare open files); memory
 * only. It deletes nothing: fuse/retain.c does, with what this returns.
 */
#include "space.h"

#include "fs_i.h"
#include "units.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct space_parent {		/* ino -> the directory a name of it was last seen in */
	uint64_t ino, parent;	/* ino 0: empty slot */
};

struct avfs_space {
	struct avfs_fs *fs;
	struct avfs_space_rule *rules;
	size_t nrules, caprules;
	struct space_parent *par;	/* open addressing, a power of two */
	size_t npar, cappar;
};

/* ---- parsing ---- */

static int bad(char *why, size_t n, const char *what)
{
	if (why && n)
		snprintf(why, n, "%s", what);
	return -EINVAL;
}

/* "90", "90%": a whole percentage 0..100 at *s, moved past it and any spaces after */
static int percent(const char **s, unsigned *out)
{
	unsigned v = 0;
	int digits = 0;

	while (**s >= '0' && **s <= '9' && digits < 4)
		v = v * 10 + (unsigned)(*(*s)++ - '0'), digits++;
	if (!digits || v > 100)
		return -EINVAL;
	if (**s == '%')
		(*s)++;
	if (**s && **s != ' ')
		return -EINVAL;
	while (**s == ' ')
		(*s)++;
	*out = v;
	return 0;
}

int avfs_space_parse(const char *name, const void *value, size_t len,
		     struct avfs_space_rule *r, char *why, size_t whylen)
{
	struct avfs_space_rule tmp = { 0 };
	char text[64];
	const char *s = text;

	if (!r)
		r = &tmp;
	if (strcmp(name, AVFS_SPACE_QUOTA) && strcmp(name, AVFS_SPACE_RETAIN))
		return 1;
	if (!len || len >= sizeof(text) || memchr(value, 0, len))
		return bad(why, whylen, "a short text is expected (\"10G\", \"90 80\")");
	memcpy(text, value, len);
	text[len] = 0;
	if (!strcmp(name, AVFS_SPACE_QUOTA)) {
		if (avfs_parse_size(text, &r->quota) || !r->quota)
			return bad(why, whylen, "the quota is a size in bytes above 0 (\"10G\", "
				   "\"10737418240\")");
		return 0;
	}
	if (percent(&s, &r->high) || percent(&s, &r->low) || *s)
		return bad(why, whylen, "retention is \"HIGH LOW\", two percentages (\"90 80\")");
	if (!r->low || r->low >= r->high)
		return bad(why, whylen, "retention needs 1 <= LOW < HIGH <= 100");
	return 0;
}

/* ---- the way up: parents of files ---- */

static size_t par_slot(const struct avfs_space *sp, uint64_t ino)
{
	size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (sp->cappar - 1);

	while (sp->par[i].ino && sp->par[i].ino != ino)
		i = (i + 1) & (sp->cappar - 1);
	return i;
}

static int par_grow(struct avfs_space *sp)
{
	size_t cap = sp->cappar ? 2 * sp->cappar : 1024, old = sp->cappar;
	struct space_parent *o = sp->par, *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	sp->par = n;
	sp->cappar = cap;
	for (size_t i = 0; i < old; i++)
		if (o[i].ino)
			sp->par[par_slot(sp, o[i].ino)] = o[i];
	free(o);
	return 0;
}

int avfs_space_note(struct avfs_space *sp, uint64_t ino, uint64_t parent)
{
	size_t i;

	if (!sp || !ino)
		return 0;
	if ((sp->npar + 1) * 4 > sp->cappar * 3 && par_grow(sp))
		return -ENOMEM;
	i = par_slot(sp, ino);
	if (!sp->par[i].ino)
		sp->npar++;
	sp->par[i] = (struct space_parent){ ino, parent };
	return 0;
}

uint64_t avfs_space_parent(const struct avfs_space *sp, uint64_t ino)
{
	if (!sp || !ino || !sp->cappar)
		return 0;
	return sp->par[par_slot(sp, ino)].parent;
}

/* the directory to start the way up from: ino itself if a directory, else where its name was
 * seen; 0 when unknown */
static uint64_t start_dir(struct avfs_space *sp, uint64_t ino)
{
	struct avfs_stat a;

	if (avfs_fs_getattr(sp->fs, ino, &a))
		return 0;
	if (S_ISDIR(a.mode))
		return ino;
	return avfs_space_parent(sp, ino);
}

/* ---- rules ---- */

static struct avfs_space_rule *rule_of(struct avfs_space *sp, uint64_t dir)
{
	for (size_t i = 0; i < sp->nrules; i++)
		if (sp->rules[i].dir == dir)
			return &sp->rules[i];
	return NULL;
}

/* the rule dir's attributes say now (r->dir 0: none, or not a directory) */
static void read_rule(struct avfs_fs *fs, uint64_t dir, struct avfs_space_rule *r)
{
	struct avfs_space_rule q = { 0 }, k = { 0 };
	struct avfs_stat a;
	char v[64];
	int n;

	memset(r, 0, sizeof(*r));
	if (avfs_fs_getattr(fs, dir, &a) || !S_ISDIR(a.mode))
		return;
	n = avfs_fs_getxattr(fs, dir, AVFS_SPACE_QUOTA, v, sizeof(v));
	if (n > 0 && !avfs_space_parse(AVFS_SPACE_QUOTA, v, (size_t)n, &q, NULL, 0))
		r->quota = q.quota;
	n = avfs_fs_getxattr(fs, dir, AVFS_SPACE_RETAIN, v, sizeof(v));
	if (n > 0 && !avfs_space_parse(AVFS_SPACE_RETAIN, v, (size_t)n, &k, NULL, 0)) {
		r->high = k.high;
		r->low = k.low;
	}
	if (r->quota || r->high) {
		r->dir = dir;
		r->generation = a.generation;
	}
}

int avfs_space_reload(struct avfs_space *sp, uint64_t dir)
{
	struct avfs_space_rule r, *old = rule_of(sp, dir);

	read_rule(sp->fs, dir, &r);
	if (old && r.dir) {
		*old = r;
	} else if (old) {
		*old = sp->rules[--sp->nrules];
	} else if (r.dir) {
		if (sp->nrules == sp->caprules) {
			size_t cap = sp->caprules ? 2 * sp->caprules : 8;
			struct avfs_space_rule *n = realloc(sp->rules, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			sp->rules = n;
			sp->caprules = cap;
		}
		sp->rules[sp->nrules++] = r;
	}
	return 0;
}

/* a rule whose directory is gone, or whose inode number now names another one, goes */
static bool rule_live(struct avfs_space *sp, size_t i)
{
	struct avfs_stat a;

	if (!avfs_fs_getattr(sp->fs, sp->rules[i].dir, &a) && S_ISDIR(a.mode) &&
	    a.generation == sp->rules[i].generation)
		return true;
	sp->rules[i] = sp->rules[--sp->nrules];
	return false;
}

size_t avfs_space_rules(const struct avfs_space *sp)
{
	return sp ? sp->nrules : 0;
}

size_t avfs_space_list(const struct avfs_space *sp, struct avfs_space_rule *r, size_t max)
{
	for (size_t i = 0; i < sp->nrules && i < max; i++)
		r[i] = sp->rules[i];
	return sp->nrules;
}

/* ---- walking a subtree ---- */

struct entry {
	char name[AVFS_NAME_MAX + 1];
	uint64_t ino;
	uint32_t type;
};

struct entries {
	struct entry *e;
	size_t n, cap;
	int err;
};

static int collect(void *arg, const char *name, uint64_t ino, uint32_t type, uint64_t next)
{
	struct entries *l = arg;

	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct entry *n = realloc(l->e, cap * sizeof(*n));

		if (!n) {
			l->err = -ENOMEM;
			return 1;
		}
		l->e = n;
		l->cap = cap;
	}
	snprintf(l->e[l->n].name, sizeof(l->e[l->n].name), "%s", name);
	l->e[l->n].ino = ino;
	l->e[l->n++].type = type;
	return 0;
}

/* called for each regular file of the subtree: its directory, path relative to the top */
typedef int (*file_fn)(void *arg, uint64_t dir, const char *path, size_t name_at,
		       const struct avfs_stat *a);

struct pending {
	uint64_t ino;
	char *path;		/* relative, "" for the top */
};

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (a)
		p[a++] = '/';
	memcpy(p + a, name, b + 1);
	return p;
}

static int walk(struct avfs_fs *fs, uint64_t top, file_fn fn, void *arg)
{
	struct pending *st = NULL, cur;
	size_t n = 0, cap = 0;
	struct entries l = { 0 };
	struct avfs_stat a;
	int err;

	if ((err = avfs_fs_getattr(fs, top, &a)))
		return err;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	cur = (struct pending){ top, strdup("") };
	if (!cur.path)
		return -ENOMEM;
	for (;;) {
		l.n = 0;
		err = avfs_fs_readdir(fs, cur.ino, 0, collect, &l);
		if (!err)
			err = l.err;
		for (size_t i = 0; !err && i < l.n; i++) {
			struct entry *e = &l.e[i];
			char *p;

			if (avfs_fs_getattr(fs, e->ino, &a))
				continue;	/* (a name of a freed inode: not ours to judge) */
			if (!S_ISDIR(a.mode) && !S_ISREG(a.mode))
				continue;
			if (!(p = join(cur.path, e->name))) {
				err = -ENOMEM;
				break;
			}
			if (S_ISREG(a.mode)) {
				err = fn(arg, cur.ino, p, strlen(p) - strlen(e->name), &a);
				free(p);
				continue;
			}
			if (n == cap) {
				size_t c = cap ? 2 * cap : 16;
				struct pending *s = realloc(st, c * sizeof(*s));

				if (!s) {
					free(p);
					err = -ENOMEM;
					break;
				}
				st = s;
				cap = c;
			}
			st[n++] = (struct pending){ e->ino, p };
		}
		free(cur.path);
		if (err || !n)
			break;
		cur = st[--n];
	}
	while (n)
		free(st[--n].path);
	free(st);
	free(l.e);
	return err;
}

static int sum(void *arg, uint64_t dir, const char *path, size_t name_at,
	       const struct avfs_stat *a)
{
	(void)dir, (void)path, (void)name_at;
	*(uint64_t *)arg += a->blocks512 * 512;
	return 0;
}

int avfs_space_usage(struct avfs_fs *fs, uint64_t dir, uint64_t *bytes)
{
	*bytes = 0;
	return walk(fs, dir, sum, bytes);
}

uint64_t avfs_space_need(struct avfs_fs *fs, uint64_t ino, uint64_t off, uint64_t len)
{
	uint64_t bs = avfs_fs_block_size(fs), first, last, mapped = 0, end;
	struct avfs_bext ext[64];
	struct avfs_stat a;

	if (!len || avfs_fs_getattr(fs, ino, &a) || off > UINT64_MAX - len)
		return 0;
	first = off / bs;
	last = (off + len - 1) / bs;
	/* the blocks inside the size that are mapped already; past it, none is */
	end = a.size < off + len ? a.size : off + len;
	for (uint64_t at = first * bs; at < end;) {
		int n = avfs_fs_map_read(fs, ino, at, end - at, ext, 64);

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			if (ext[i].dev_off && ext[i].file_off / bs >= first &&
			    ext[i].file_off / bs <= last)
				mapped++;
		at = ext[n - 1].file_off + bs;
	}
	return (last - first + 1 - mapped) * bs;
}

/* ---- victims ---- */

struct gather {
	struct avfs_fs *fs;
	struct avfs_space_plan *out;	/* candidates, appended */
	uint64_t rule;
};

void avfs_space_plan_free(struct avfs_space_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].path);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

static int candidate(void *arg, uint64_t dir, const char *path, size_t name_at,
		     const struct avfs_stat *a)
{
	struct gather *g = arg;
	struct avfs_space_plan *p = g->out;
	struct avfs_space_victim *v;

	/* open (a recorder's current segment: deleting it would free nothing until its close),
	 * other links (deleting this name frees nothing), protected: never */
	if (g->fs->opens[a->ino] || a->nlink != 1 || !a->blocks512 ||
	    avfs_fs_getxattr(g->fs, a->ino, AVFS_SPACE_PROTECTED, NULL, 0) >= 0)
		return 0;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;

		if (!(v = realloc(p->v, cap * sizeof(*v))))
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	v = &p->v[p->n];
	*v = (struct avfs_space_victim){ .ino = a->ino, .dir = dir, .bytes = a->blocks512 * 512,
					 .mtime_ns = a->mtime_ns, .rule = g->rule,
					 .path = strdup(path) };
	if (!v->path)
		return -ENOMEM;
	v->name = v->path + name_at;
	p->n++;
	return 0;
}

static int oldest_first(const void *x, const void *y)
{
	const struct avfs_space_victim *a = x, *b = y;

	if (a->mtime_ns != b->mtime_ns)
		return a->mtime_ns < b->mtime_ns ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/* Move into plan the oldest candidates (sorted, each inode once and not already in plan) until
 * `free` bytes are freed; what is left of cand is freed. Returns the bytes they free. */
static uint64_t take(struct avfs_space_plan *cand, uint64_t free_bytes,
		     struct avfs_space_plan *plan, int *err)
{
	uint64_t got = 0;
	size_t i;

	if (cand->n)
		qsort(cand->v, cand->n, sizeof(*cand->v), oldest_first);
	for (i = 0; i < cand->n && got < free_bytes; i++) {
		struct avfs_space_victim *v = &cand->v[i];
		bool dup = i && cand->v[i - 1].ino == v->ino;

		for (size_t k = 0; !dup && k < plan->n; k++)
			dup = plan->v[k].ino == v->ino;
		if (dup)
			continue;
		if (plan->n == plan->cap) {
			size_t cap = plan->cap ? 2 * plan->cap : 16;
			struct avfs_space_victim *n = realloc(plan->v, cap * sizeof(*n));

			if (!n) {
				*err = -ENOMEM;
				break;
			}
			plan->v = n;
			plan->cap = cap;
		}
		plan->v[plan->n++] = *v;
		v->path = NULL;	/* (now the plan's) */
		got += v->bytes;
	}
	avfs_space_plan_free(cand);
	return got;
}

/* Is rule dir an ancestor of (or) the directory d? */
static bool under(struct avfs_fs *fs, uint64_t d, uint64_t dir)
{
	for (unsigned depth = 0; d && depth < 4096; depth++) {
		uint64_t up;

		if (d == dir)
			return true;
		if (d == AVFS_ROOT_INO || avfs_fs_lookup(fs, d, "..", &up) || up == d)
			return false;
		d = up;
	}
	return false;
}

static uint64_t pct(uint64_t base, unsigned p)
{
	return base / 100 * p + base % 100 * p / 100;
}

int avfs_space_plan(struct avfs_space *sp, uint64_t ino, uint64_t need,
		    struct avfs_space_plan *plan)
{
	struct avfs_statfs st;
	struct avfs_space_plan fsc = { 0 };
	uint64_t d = ino ? start_dir(sp, ino) : 0, used, cap;
	int err = 0;

	if (!sp->nrules)
		return 0;
	avfs_fs_statfs(sp->fs, &st);
	cap = st.blocks * st.block_size;
	used = (st.blocks - st.bfree) * st.block_size;
	for (size_t i = 0; i < sp->nrules && !err;) {
		struct avfs_space_rule r = sp->rules[i];
		struct avfs_space_plan cand = { 0 };
		struct gather g = { sp->fs, &cand, r.dir };
		uint64_t u, want;

		if (!rule_live(sp, i))
			continue;	/* (the last rule moved into slot i) */
		i++;
		if (!r.quota) {
			/* of the file system: every such rule gives candidates, oldest go first */
			if (r.high && used + need > pct(cap, r.high)) {
				g.out = &fsc;
				err = walk(sp->fs, r.dir, candidate, &g);
			}
			continue;
		}
		if (!d || !under(sp->fs, d, r.dir))
			continue;	/* a quota applies below its directory only */
		if ((err = avfs_space_usage(sp->fs, r.dir, &u)))
			break;
		if (r.high && u + need > pct(r.quota, r.high))
			want = u + need - pct(r.quota, r.low);
		else if (u + need > r.quota)
			want = u + need - r.quota;
		else
			continue;
		if (r.high && (err = walk(sp->fs, r.dir, candidate, &g))) {
			avfs_space_plan_free(&cand);
			break;
		}
		{
			size_t before = plan->n;
			uint64_t got = take(&cand, want, plan, &err);

			if (!err && u + need - (got < u + need ? got : u + need) > r.quota) {
				/* even without them it would not fit: nothing of this rule goes */
				while (plan->n > before)
					free(plan->v[--plan->n].path);
				err = -EDQUOT;
			}
		}
	}
	if (!err && fsc.n) {
		uint64_t low = cap, want;

		for (size_t i = 0; i < sp->nrules; i++)
			if (!sp->rules[i].quota && sp->rules[i].high &&
			    pct(cap, sp->rules[i].low) < low)
				low = pct(cap, sp->rules[i].low);
		want = used + need > low ? used + need - low : 0;
		/* victims already chosen for a quota free file system space too */
		for (size_t i = 0; i < plan->n; i++)
			want = want > plan->v[i].bytes ? want - plan->v[i].bytes : 0;
		take(&fsc, want, plan, &err);
	}
	avfs_space_plan_free(&fsc);
	return err;
}

/* ---- the rules at mount ---- */

int avfs_space_new(struct avfs_fs *fs, struct avfs_space **out)
{
	struct avfs_space *sp = calloc(1, sizeof(*sp));
	uint64_t *st = NULL;
	size_t n = 0, cap = 0;
	struct entries l = { 0 };
	int err = 0;

	if (!sp)
		return -ENOMEM;
	sp->fs = fs;
	/* every directory, once: its rules, and its files' parents */
	for (uint64_t d = AVFS_ROOT_INO;;) {
		struct avfs_stat a;

		err = avfs_space_reload(sp, d);
		l.n = 0;
		if (!err)
			err = avfs_fs_readdir(fs, d, 0, collect, &l);
		if (!err)
			err = l.err;
		for (size_t i = 0; !err && i < l.n; i++) {
			if (l.e[i].type != DT_DIR) {
				err = avfs_space_note(sp, l.e[i].ino, d);
				continue;
			}
			if (avfs_fs_getattr(fs, l.e[i].ino, &a) || !S_ISDIR(a.mode))
				continue;
			if (n == cap) {
				size_t c = cap ? 2 * cap : 64;
				uint64_t *s = realloc(st, c * sizeof(*s));

				if (!s) {
					err = -ENOMEM;
					break;
				}
				st = s;
				cap = c;
			}
			st[n++] = l.e[i].ino;
		}
		if (err || !n)
			break;
		d = st[--n];
	}
	free(st);
	free(l.e);
	if (err) {
		avfs_space_free(sp);
		return err;
	}
	*out = sp;
	return 0;
}

void avfs_space_free(struct avfs_space *sp)
{
	if (!sp)
		return;
	free(sp->rules);
	free(sp->par);
	free(sp);
}

/*
 * cover.c — the directory of each regular file the kernel holds lookups of (cover.h): a hash
 * of ino -> {dir, nlookup}, grown by doubling. Nothing here reads the disk.
 */
#include "cover.h"

#include <errno.h>
#include <stdlib.h>

struct avfs_cover_ent {
	uint64_t ino, dir;
	uint64_t nlookup;
	struct avfs_cover_ent *next;
};

static size_t slot(const struct avfs_cover *c, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (c->nbuckets - 1);
}

static struct avfs_cover_ent **find(const struct avfs_cover *c, uint64_t ino)
{
	struct avfs_cover_ent **pp;

	if (!c->nbuckets)
		return NULL;
	for (pp = &c->tab[slot(c, ino)]; *pp; pp = &(*pp)->next)
		if ((*pp)->ino == ino)
			return pp;
	return NULL;
}

void avfs_cover_init(struct avfs_cover *c)
{
	*c = (struct avfs_cover){ 0 };
}

void avfs_cover_fini(struct avfs_cover *c)
{
	for (size_t i = 0; i < c->nbuckets; i++)
		while (c->tab[i]) {
			struct avfs_cover_ent *e = c->tab[i];

			c->tab[i] = e->next;
			free(e);
		}
	free(c->tab);
	*c = (struct avfs_cover){ 0 };
}

static int grow(struct avfs_cover *c)
{
	size_t nb = c->nbuckets ? 2 * c->nbuckets : 256, old = c->nbuckets;
	struct avfs_cover_ent **t = calloc(nb, sizeof(*t)), **ot = c->tab;

	if (!t)
		return -ENOMEM;
	c->tab = t;
	c->nbuckets = nb;
	for (size_t i = 0; i < old; i++)
		while (ot[i]) {
			struct avfs_cover_ent *e = ot[i];

			ot[i] = e->next;
			e->next = t[slot(c, e->ino)];
			t[slot(c, e->ino)] = e;
		}
	free(ot);
	return 0;
}

int avfs_cover_seen(struct avfs_cover *c, uint64_t ino, uint64_t dir)
{
	struct avfs_cover_ent **pp = find(c, ino), *e;

	if (pp) {
		(*pp)->dir = dir;
		(*pp)->nlookup++;
		return 0;
	}
	if (c->n >= c->nbuckets && grow(c))
		return -ENOMEM;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct avfs_cover_ent){ .ino = ino, .dir = dir, .nlookup = 1,
				      .next = c->tab[slot(c, ino)] };
	c->tab[slot(c, ino)] = e;
	c->n++;
	return 0;
}

void avfs_cover_moved(struct avfs_cover *c, uint64_t ino, uint64_t dir)
{
	struct avfs_cover_ent **pp = find(c, ino);

	if (pp)
		(*pp)->dir = dir;
}

void avfs_cover_forget(struct avfs_cover *c, uint64_t ino, uint64_t n)
{
	struct avfs_cover_ent **pp = find(c, ino), *e;

	if (!pp)
		return;
	e = *pp;
	if (e->nlookup > n) {
		e->nlookup -= n;
		return;
	}
	*pp = e->next;
	free(e);
	c->n--;
}

uint64_t avfs_cover_dir(const struct avfs_cover *c, uint64_t ino)
{
	struct avfs_cover_ent **pp = find(c, ino);

	return pp ? (*pp)->dir : 0;
}

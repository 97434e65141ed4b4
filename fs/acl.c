/*
 * acl.c — POSIX ACLs in the form the kernel passes them as extended attributes
 * (system.posix_acl_access / _default: a version word, then entries of tag, permissions and
 * id): checking one, and the kernel's rules that tie an ACL to the mode (posix_acl_equiv_mode,
 * posix_acl_chmod, posix_acl_create). Pure functions on a value: storing it is xattr.c's,
 * enforcing it the kernel's (FUSE_CAP_POSIX_ACL).
 */
#include "fs_i.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ACL_XATTR_VERSION 2u
#define ACL_USER_OBJ 0x01
#define ACL_USER 0x02
#define ACL_GROUP_OBJ 0x04
#define ACL_GROUP 0x08
#define ACL_MASK 0x10
#define ACL_OTHER 0x20

struct acl_ent {		/* posix_acl_xattr_entry, little-endian */
	uint16_t tag, perm;
	uint32_t id;
};

/* Values sit wherever a buffer or an attribute block puts them, not aligned: entries are
 * copied in and out. */
static size_t count(size_t len)
{
	return len < 4 ? 0 : (len - 4) / sizeof(struct acl_ent);
}

static struct acl_ent get(const void *v, size_t i)
{
	struct acl_ent e;

	memcpy(&e, (const uint8_t *)v + 4 + i * sizeof(e), sizeof(e));
	return e;
}

static void put_perm(void *v, size_t i, uint16_t perm)
{
	memcpy((uint8_t *)v + 4 + i * sizeof(struct acl_ent) + offsetof(struct acl_ent, perm),
	       &perm, sizeof(perm));
}

/* posix_acl_valid's order: the owner, named users, the owning group, named groups, the mask
 * (required when there are named entries), others; each permission within rwx. */
int fs_acl_valid(const void *v, size_t len)
{
	uint32_t version;
	size_t n = count(len);
	int state = ACL_USER_OBJ;
	bool needs_mask = false;

	if (!v || len < 4 + sizeof(struct acl_ent) || (len - 4) % sizeof(struct acl_ent))
		return -EINVAL;
	memcpy(&version, v, 4);
	if (version != ACL_XATTR_VERSION)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct acl_ent e = get(v, i);

		if (e.perm & ~7u)
			return -EINVAL;
		switch (e.tag) {
		case ACL_USER_OBJ:
			if (state != ACL_USER_OBJ)
				return -EINVAL;
			state = ACL_USER;
			break;
		case ACL_USER:
			if (state != ACL_USER)
				return -EINVAL;
			needs_mask = true;
			break;
		case ACL_GROUP_OBJ:
			if (state != ACL_USER)
				return -EINVAL;
			state = ACL_GROUP;
			break;
		case ACL_GROUP:
			if (state != ACL_GROUP)
				return -EINVAL;
			needs_mask = true;
			break;
		case ACL_MASK:
			if (state != ACL_GROUP)
				return -EINVAL;
			state = ACL_OTHER;
			break;
		case ACL_OTHER:
			if (state != ACL_OTHER && (state != ACL_GROUP || needs_mask))
				return -EINVAL;
			state = 0;
			break;
		default:
			return -EINVAL;
		}
	}
	return state == 0 ? 0 : -EINVAL;
}

/* posix_acl_equiv_mode: the owner's, the mask's (else the owning group's) and others'
 * permissions become the mode's. */
int fs_acl_mode(const void *v, size_t len, uint32_t *mode)
{
	uint32_t m = 0;
	int extended = 0;

	for (size_t i = 0; i < count(len); i++) {
		struct acl_ent e = get(v, i);

		switch (e.tag) {
		case ACL_USER_OBJ:
			m |= (e.perm & 7u) << 6;
			break;
		case ACL_GROUP_OBJ:
			m |= (e.perm & 7u) << 3;
			break;
		case ACL_OTHER:
			m |= e.perm & 7u;
			break;
		case ACL_MASK:
			m = (m & ~070u) | (e.perm & 7u) << 3;
			extended = 1;
			break;
		default:
			extended = 1;
			break;
		}
	}
	*mode = (*mode & ~0777u) | m;
	return extended;
}

/* posix_acl_chmod_masq */
void fs_acl_chmod(void *v, size_t len, uint32_t mode)
{
	size_t group = SIZE_MAX, mask = SIZE_MAX;

	for (size_t i = 0; i < count(len); i++) {
		struct acl_ent e = get(v, i);

		if (e.tag == ACL_USER_OBJ)
			put_perm(v, i, (uint16_t)((mode >> 6) & 7u));
		else if (e.tag == ACL_OTHER)
			put_perm(v, i, (uint16_t)(mode & 7u));
		else if (e.tag == ACL_GROUP_OBJ)
			group = i;
		else if (e.tag == ACL_MASK)
			mask = i;
	}
	if (mask == SIZE_MAX)
		mask = group;
	if (mask != SIZE_MAX)
		put_perm(v, mask, (uint16_t)((mode >> 3) & 7u));
}

/* posix_acl_create_masq: the default ACL's entries limit the requested mode, and the mode
 * limits the owner's, others' and the mask's (else the owning group's) entries. */
int fs_acl_create(void *v, size_t len, uint32_t *mode)
{
	size_t group = SIZE_MAX, mask = SIZE_MAX;
	uint32_t m = *mode & 0777u;
	int extended = 0;

	for (size_t i = 0; i < count(len); i++) {
		struct acl_ent e = get(v, i);

		switch (e.tag) {
		case ACL_USER_OBJ:
			e.perm &= (uint16_t)((m >> 6) & 7u);
			put_perm(v, i, e.perm);
			m &= (uint32_t)e.perm << 6 | ~0700u;
			break;
		case ACL_OTHER:
			e.perm &= (uint16_t)(m & 7u);
			put_perm(v, i, e.perm);
			m &= e.perm | ~07u;
			break;
		case ACL_GROUP_OBJ:
			group = i;
			break;
		case ACL_MASK:
			mask = i;
			extended = 1;
			break;
		default:
			extended = 1;
			break;
		}
	}
	if (mask == SIZE_MAX)
		mask = group;
	if (mask != SIZE_MAX) {
		uint16_t p = get(v, mask).perm & (uint16_t)((m >> 3) & 7u);

		put_perm(v, mask, p);
		m &= (uint32_t)p << 3 | ~070u;
	}
	*mode = (*mode & ~0777u) | (m & 0777u);
	return extended;
}

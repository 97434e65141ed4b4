/*
 * conn.c — /dev/fuse read and written for libfuse (conn.h): requests pass as they come; the
 * INIT reply asks for FUSE_DIRECT_IO_ALLOW_MMAP when the kernel offered it, which libfuse
 * 3.14 cannot express (fuse_conn_info.want has 32 bits; the flag is bit 36, in flags2). No
 * operation's meaning, no clock; the descriptor is libfuse's.
 */
#include "conn.h"

#include <errno.h>
#include <linux/fuse.h>
#include <string.h>
#include <unistd.h>

/* protocol 7.39 (kernel 6.6); the installed linux/fuse.h may predate it */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)
#endif

ssize_t avfs_fuse_conn_read(struct avfs_fuse_conn *c, int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *h = buf;

	if (n >= (ssize_t)(sizeof(*h) + offsetof(struct fuse_init_in, unused)) &&
	    h->opcode == FUSE_INIT) {
		const struct fuse_init_in *in = (const void *)(h + 1);

		c->init_unique = h->unique;
		c->offered = in->flags;
		if (in->flags & FUSE_INIT_EXT)
			c->offered |= (uint64_t)in->flags2 << 32;
	}
	return n;
}

ssize_t avfs_fuse_conn_writev(struct avfs_fuse_conn *c, int fd, struct iovec *iov, int count)
{
	const struct fuse_out_header *h = iov[0].iov_base;

	/* the INIT reply: header, then fuse_init_out (from protocol 7.23 whole, with flags2) */
	if (c->init_unique && count >= 2 && iov[0].iov_len >= sizeof(*h) &&
	    h->unique == c->init_unique && !h->error &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, unused)) {
		struct fuse_init_out *out = iov[1].iov_base;

		c->init_unique = 0;
		if (c->want_dio_mmap && (c->offered & FUSE_INIT_EXT) &&
		    (c->offered & FUSE_DIRECT_IO_ALLOW_MMAP)) {
			out->flags |= FUSE_INIT_EXT;
			out->flags2 |= (uint32_t)(FUSE_DIRECT_IO_ALLOW_MMAP >> 32);
			c->dio_mmap = true;
		}
	}
	return writev(fd, iov, count);
}

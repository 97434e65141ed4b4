/*
 * conn.h — avfsd's side of /dev/fuse under libfuse (fuse_session_custom_io): it reads the
 * kernel's requests and writes the replies for the session, and in the INIT reply asks the
 * kernel for what libfuse 3.14 cannot name in fuse_conn_info.want: FUSE_DIRECT_IO_ALLOW_MMAP
 * (kernel 6.6; protocol 7.39), which lets a file opened direct-I/O be mapped shared. It does
 * not decide what a request means (fuseops.c) and keeps no state beyond the INIT exchange.
 */
#ifndef AVFS_FUSE_CONN_H
#define AVFS_FUSE_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct avfs_fuse_conn {
	bool want_dio_mmap;	/* ask for FUSE_DIRECT_IO_ALLOW_MMAP when the kernel offers it */
	uint64_t init_unique;	/* the INIT request being answered, 0 when none */
	uint64_t offered;	/* the kernel's INIT flags (flags | flags2 << 32) */
	bool dio_mmap;		/* the INIT reply asked for it: shared mmap of direct-I/O files */
};

/* read(2) of one request from fd into buf, as libfuse's custom io read: the byte count, or -1
 * with errno. An INIT request is noted for the reply. */
ssize_t avfs_fuse_conn_read(struct avfs_fuse_conn *c, int fd, void *buf, size_t len);
/* writev(2) of one reply (iov[0] the fuse_out_header), as libfuse's custom io writev: the
 * INIT reply gets the flags asked for. The byte count, or -1 with errno. */
ssize_t avfs_fuse_conn_writev(struct avfs_fuse_conn *c, int fd, struct iovec *iov, int count);

#endif

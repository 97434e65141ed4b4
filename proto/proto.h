/*
 * proto.h — the wire protocol between libavio and avfsd over a Unix stream socket: fixed-size,
 * little-endian, versioned messages. Shared by both sides; no code. Every message is a header
 * followed by `len` payload bytes; replies carry the request's tag and type | AVFS_MSG_REPLY.
 * The daemon validates every field (a malformed message drops that client, no one else).
 */
#ifndef AVFS_PROTO_H
#define AVFS_PROTO_H

#include <stdint.h>

#define AVFS_PROTO_MAGIC 0x4f495641u	/* "AVIO" */
#define AVFS_PROTO_VERSION 1u
#define AVFS_PROTO_MAX_IO (16u << 20)	/* largest single request */
#define AVFS_PROTO_MAX_PAYLOAD (AVFS_PROTO_MAX_IO + 4096)
#define AVFS_PROTO_MAX_TEXT (AVFS_PROTO_MAX_PAYLOAD + (64u << 20))	/* ADMIN, TRACE replies */
#define AVFS_PROTO_QUEUE 256u		/* requests in flight per client; more: -EAGAIN */
#define AVFS_PROTO_HORIZON_NS (600ll * 1000000000)	/* a deadline further ahead: -ERANGE */
#define AVFS_PROTO_ALIGN 4096u		/* offsets and sizes of libavio I/O */
/* the socket of a mount: readable from any file on it as this extended attribute */
#define AVFS_XATTR_SOCKET "user.avfs.socket"

enum avfs_msg_type {
	AVFS_MSG_HELLO = 1,	/* first message: versions, limits */
	AVFS_MSG_OPEN = 2,	/* a file of the mount, by (st_dev, st_ino): a handle (root only) */
	AVFS_MSG_CLOSE = 3,	/* forget a handle */
	AVFS_MSG_IO = 4,	/* read or write, with a deadline */
	AVFS_MSG_CANCEL = 5,	/* cancel a request by tag */
	AVFS_MSG_SHM = 6,	/* the client's buffer memory: a memfd sent with SCM_RIGHTS */
	AVFS_MSG_RESERVE = 7,	/* a rate + buffer service on a handle (SPEC §7) */
	AVFS_MSG_RELEASE = 8,	/* end a service: of a handle, or by id */
	AVFS_MSG_STATS = 9,	/* the QoS statistics of a handle's service */
	AVFS_MSG_ADMIN = 10,	/* avfs-admin: a command as text; the reply is JSON text */
	AVFS_MSG_TRACE = 11,	/* avfs-admin: stream the request trace for a while */
	AVFS_MSG_OPEN_PATH = 12,	/* a file of the mount by its path: a handle */
	AVFS_MSG_PLACE = 13,	/* where a handle's file lies on the device */
	AVFS_MSG_REPLY = 0x80,	/* or'ed into a reply's type */
};

struct avfs_msg_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t flags;
	uint32_t len;		/* payload bytes after this header */
	uint32_t reserved;
	uint64_t tag;		/* chosen by the client, echoed in the reply */
};

struct avfs_msg_hello {
	uint32_t version;
	uint32_t reserved;
};

struct avfs_msg_hello_reply {
	int32_t res;
	uint32_t version;
	uint32_t max_io;
	uint32_t queue;
};

#define AVFS_OPEN_READ 1u
#define AVFS_OPEN_WRITE 2u
#define AVFS_OPEN_DIR 4u	/* with READ or WRITE: a directory, for RESERVE only (the FUSE I/O
				 * of its files); no I/O on the handle (-EBADF). Without it a
				 * directory is refused (-EINVAL), with it a file (-ENOTDIR). */

struct avfs_msg_open {
	uint64_t dev, ino;	/* fstat() of the client's descriptor on the mount */
	uint32_t access;	/* AVFS_OPEN_READ | AVFS_OPEN_WRITE */
	uint32_t reserved;
};

struct avfs_msg_open_reply {
	int32_t res;		/* 0 or -errno (-EACCES, -ENOENT, -EXDEV: not this mount, -EPERM:
				 * OPEN by inode of a client other than root) */
	uint32_t handle;
};

/* OPEN_PATH: the struct, then the file's absolute path (as readlink of /proc/self/fd/N gives
 * it; at most AVFS_PROTO_PATH_LEN bytes, no NUL). The daemon walks it from its mount point
 * with the client's uid and groups, as the kernel would: search permission on every
 * directory, then the file's own mode for access; the walk must end at (dev, ino). The reply
 * is struct avfs_msg_open_reply (-EACCES, -ENOENT: no such path or another file there now,
 * -EXDEV: not under the mount point). */
#define AVFS_PROTO_PATH_LEN 4096u

struct avfs_msg_open_path {
	uint64_t dev, ino;	/* fstat() of the client's descriptor */
	uint32_t access;	/* AVFS_OPEN_READ | AVFS_OPEN_WRITE */
	uint32_t reserved;
};

struct avfs_msg_close {
	uint32_t handle;
	uint32_t reserved;
};

#define AVFS_IO_READ 0
#define AVFS_IO_WRITE 1
#define AVFS_IO_INLINE 0	/* data follows the message (write) or the reply (read) */
#define AVFS_IO_SHM 1		/* data is in the shared memfd at shm_off */

struct avfs_msg_io {
	uint32_t handle;
	uint8_t op;		/* AVFS_IO_READ / AVFS_IO_WRITE */
	uint8_t where;		/* AVFS_IO_INLINE / AVFS_IO_SHM */
	uint16_t reserved;
	uint64_t offset;	/* multiple of AVFS_PROTO_ALIGN */
	uint64_t nbytes;	/* multiple of AVFS_PROTO_ALIGN, <= AVFS_PROTO_MAX_IO */
	int64_t deadline;	/* CLOCK_MONOTONIC ns; 0 = best effort; at most
				 * AVFS_PROTO_HORIZON_NS ahead, else -ERANGE */
	uint64_t shm_off;	/* AVFS_IO_SHM: where in the memfd */
};

struct avfs_msg_io_reply {
	int64_t res;		/* bytes, or -errno (-ETIME, -ECANCELED, -EIO...) */
};

struct avfs_msg_cancel {
	uint64_t target;	/* the tag of the request to cancel */
};

#define AVFS_CANCEL_DONE 0	/* AIO_CANCELED: it will complete with -ECANCELED */
#define AVFS_CANCEL_BUSY 1	/* AIO_NOTCANCELED: already on the disk */
#define AVFS_CANCEL_GONE 2	/* AIO_ALLDONE: already complete, or unknown */

struct avfs_msg_cancel_reply {
	int32_t res;
	uint32_t reserved;
};

/* SHM: the descriptor must be a memfd sealed against shrinking and growing (F_SEAL_SHRINK |
 * F_SEAL_GROW: a truncation cannot pull the pages from under the daemon), of the client's own
 * uid (root: any). Replacing it while requests use it is refused (-EBUSY). */
struct avfs_msg_shm {
	uint64_t size;		/* of the memfd (sent as SCM_RIGHTS with this message) */
};

struct avfs_msg_shm_reply {
	int32_t res;		/* 0, -EINVAL (no descriptor, not a sealed memfd, a bad size),
				 * -EPERM (another user's), -EBUSY (requests use the one before) */
	uint32_t reserved;
};

/* RESERVE: the service of a handle's file; its requests get deadlines and the bandwidth class.
 * DETACHED: the reservation outlives the connection (avfs-admin reserve) and names no handle
 * of it afterwards; it applies to every client's requests on the file that has none of its
 * own, and ends with RELEASE by id. */
#define AVFS_RESERVE_DETACHED 1u
/* UID: the reservation covers the I/O of processes of `uid` only (DETACHED only). A handle
 * opened with AVFS_OPEN_DIR makes a reservation on the directory: DETACHED only, it covers the
 * FUSE reads or writes of the files in it, present and future (SPEC §9). */
#define AVFS_RESERVE_UID 2u

struct avfs_msg_reserve {
	uint32_t handle;
	uint32_t flags;
	uint64_t rate;		/* bytes/s */
	uint64_t buffer;	/* bytes */
	uint32_t io;		/* request size, 0: the daemon's default */
	uint8_t write;
	uint8_t reserved[3];
	/* from here on optional (a message without it is 32 bytes: no uid) */
	uint32_t uid;		/* AVFS_RESERVE_UID: the one uid it covers */
	uint32_t reserved2;
};
#define AVFS_MSG_RESERVE_V1 32u	/* the size of a RESERVE without uid */
_Static_assert(__builtin_offsetof(struct avfs_msg_reserve, uid) == AVFS_MSG_RESERVE_V1,
	       "RESERVE's optional part starts after the first version's message");

struct avfs_msg_reserve_reply {
	int32_t res;		/* 0, -EBUSY (the disk), -EDQUOT (the user's quota, or the
				 * quota of detached reservations), -EINVAL, -EEXIST */
	uint32_t quota_streams;	/* streams the user may still open (UINT32_MAX: no quota) */
	uint64_t id;		/* the reservation's id */
	uint64_t left_rate;	/* refused: the largest rate of this kind still admitted */
	uint64_t quota_rate;	/* bytes/s the user may still reserve (UINT64_MAX: no quota) */
	uint32_t left_util_ppm;	/* disk time left, parts per million */
	uint32_t reserved;
	char why[96];		/* refused: the reason, NUL-terminated */
};

#define AVFS_RELEASE_BY_ID UINT32_MAX	/* as the handle: release the reservation `id` */

struct avfs_msg_release {
	uint32_t handle;
	uint32_t reserved;
	uint64_t id;
};

struct avfs_msg_release_reply {
	int32_t res;		/* 0, -ENOENT (no such reservation), -EPERM (another user's) */
	uint32_t reserved;
};

struct avfs_msg_stats {
	uint32_t handle;
	uint32_t reserved;
};

struct avfs_msg_stats_reply {
	int32_t res;		/* 0, -ENOENT (the handle has no service) */
	uint32_t reserved;
	uint64_t requests, misses, bytes;
	int64_t margin_min_ns;
};

/* PLACE: the device placement of a handle's file from `offset` on (papers/004 ch. 4: a tool
 * that reads many files reads them in the order of their blocks). The handle must be open for
 * reading, so the checks are OPEN_PATH's (search on every directory, read on the file). The
 * reply's extents are the file's mapped data blocks in file order (holes left out), each run
 * of blocks contiguous on the device merged into one, at most AVFS_PLACE_MAX of them; ask again
 * from the end of the last one for more. */
#define AVFS_PLACE_MAX 16u

struct avfs_msg_place {
	uint32_t handle;
	uint32_t reserved;
	uint64_t offset;	/* in the file */
};

struct avfs_place_ext {
	uint64_t file_off;	/* in the file */
	uint64_t dev_off;	/* byte offset on the device (the image) */
	uint64_t len;		/* bytes: whole data blocks, the last up to the page after the size */
};

struct avfs_msg_place_reply {
	int32_t res;		/* 0, -EBADF (no such handle, or not open for reading), -EINVAL */
	uint32_t count;		/* extents in ext[] */
	uint64_t size;		/* the file's size */
	uint64_t block_size;	/* the file system's data block */
	struct avfs_place_ext ext[AVFS_PLACE_MAX];
};

/* ADMIN: the payload is the command ("status", "streams", "stats"), at most 256 bytes; the
 * reply is struct avfs_msg_admin_reply followed by a JSON document (docs/ADMIN.md). */
struct avfs_msg_admin_reply {
	int32_t res;
	uint32_t reserved;
};

/* TRACE (root only): the daemon answers with TRACE replies of the same tag, each a struct
 * avfs_msg_trace_reply and CSV lines (docs/TRACE.md, the first one starts with the header),
 * until one with done = 1 after duration_ns. */
struct avfs_msg_trace {
	uint64_t duration_ns;	/* 1 ms .. 1 day */
};

struct avfs_msg_trace_reply {
	int32_t res;
	uint32_t done;
};

#endif

/*
 * disk.h — the one asynchronous block-device interface every layer of AVFS uses.
 * A backend (io_uring, simulated, later SG_IO) plugs in through struct avfs_disk_ops.
 * This module validates requests and dispatches to the backend; it does no scheduling.
 */
#ifndef AVFS_DISK_H
#define AVFS_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

enum avfs_disk_op {
	AVFS_DISK_READ = 0,
	AVFS_DISK_WRITE = 1,
	AVFS_DISK_FLUSH = 2,	/* make every completed write durable; lba/len unused */
	AVFS_DISK_SEEK = 3,	/* position the head at lba; only where info.has_seek */
};

#define AVFS_DISK_FUA (1u << 0)	/* write: complete only once the data is on the medium */

/* Largest single request in bytes: io_uring results are 32-bit, and nothing above
 * the disk layer needs more (large data blocks are issued in chunks). */
#define AVFS_DISK_MAX_IO (1u << 30)

struct avfs_disk_info {
	uint64_t size;		/* bytes, a multiple of lbs */
	uint32_t lbs;		/* logical block size: unit of lba, alignment of offsets and lengths */
	uint32_t pbs;		/* physical block size (best alignment for writes) */
	uint32_t mem_align;	/* required alignment of buffers in memory */
	bool rotational;	/* a spinning disk (seek + rotation), as sysfs or the model says */
	bool has_seek;		/* accepts AVFS_DISK_SEEK */
	bool is_blockdev;	/* a block device rather than an image file */
	char model[64];		/* backend / model name, for humans */
};

/* Who the device says it is, where the backend could ask it (SCSI INQUIRY/VPD, NVMe Identify);
 * all "" / 0 / false otherwise (an image file, a block device opened without identification).
 * Strings are NUL-terminated with trailing blanks removed. */
struct avfs_disk_ident {
	char transport[8];	/* "scsi", "nvme", or "" when not identified */
	char backend[8];	/* the backend serving the disk: "uring", "sg", "nvme", "sim"... */
	char vendor[16];	/* SCSI T10 vendor; NVMe PCI vendor id as "0x1b36" */
	char product[48];	/* SCSI product; NVMe model number */
	char serial[72];	/* SCSI VPD 0x80; NVMe serial number */
	char firmware[16];	/* SCSI product revision; NVMe firmware revision */
	char lba_format[48];	/* NVMe: "LBAF 0: 512 B data + 0 B metadata"; SCSI: "" */
	bool wce_known;		/* the volatile write cache state is known ... */
	bool wce;		/* ... and enabled (SCSI caching page WCE, NVMe VWC present) */
	uint32_t max_transfer;	/* bytes one command may carry (VPD B0 / MDTS / queue limits), 0 unknown */
	uint32_t rotation_rate;	/* 0 not reported, 1 non-rotating, else rpm (SCSI VPD B1) */
};

/* Most pieces one vectored request may have (the kernel's UIO_MAXIOV). */
#define AVFS_DISK_MAX_IOV 1024

struct avfs_disk_req {
	enum avfs_disk_op op;
	uint32_t flags;		/* AVFS_DISK_FUA */
	uint64_t lba;		/* in units of info.lbs */
	uint32_t len;		/* bytes, a multiple of info.lbs, 0 < len <= AVFS_DISK_MAX_IO */
	void *buf;		/* info.mem_align aligned; inside registered buffer buf_index if >= 0 */
	int buf_index;		/* registered buffer index, or -1 */
	/* READ/WRITE, instead of buf (then NULL, and buf_index -1): the transfer scattered over
	 * iov[0..iovcnt), in order — each piece info.mem_align aligned and a non-zero multiple of
	 * info.lbs, together len bytes, at most AVFS_DISK_MAX_IOV of them. The array and the
	 * pieces stay valid until the completion. A backend that does not take vectors gets one
	 * bounce buffer instead (disk.c copies, see struct avfs_disk.vectored; it finds the
	 * request again by its cookie, which must then be unique among those in flight). */
	const struct iovec *iov;
	unsigned iovcnt;
	uint64_t cookie;	/* returned untouched in the completion */
};

struct avfs_disk_cqe {
	uint64_t cookie;
	int64_t res;		/* bytes transferred (the whole len), 0 for flush/seek, or -errno */
};

struct avfs_disk_ops {
	const char *name;
	/* Queue one request. 0, or -errno if it cannot be queued (nothing was queued). Never blocks. */
	int (*submit)(void *ctx, const struct avfs_disk_req *req);
	/* Copy up to max ready completions. Count >= 0; never blocks. */
	int (*reap)(void *ctx, struct avfs_disk_cqe *cqes, unsigned max);
	/* Block (real time, or advance virtual time) until at least one completion is ready.
	 * 0, or -errno (-EAGAIN when nothing is in flight). */
	int (*wait)(void *ctx);
	/* Register buffers for zero-copy fixed I/O. 0 or -errno. Optional (NULL = unsupported). */
	int (*register_buffers)(void *ctx, const struct iovec *iov, unsigned n);
	/* A descriptor that polls readable when completions are ready, or -1. Optional. */
	int (*poll_fd)(void *ctx);
	/* Requests submitted and not yet reaped. */
	unsigned (*inflight)(void *ctx);
	void (*close)(void *ctx);
};

struct avfs_disk_bounce;

struct avfs_disk {
	const struct avfs_disk_ops *ops;
	void *ctx;
	struct avfs_disk_info info;
	struct avfs_disk_ident ident;	/* filled by the backend's open or by avfs_disk_open */
	const struct iovec *reg;	/* registered buffers (for validation) */
	unsigned nreg;
	bool vectored;		/* set by the backend: its submit takes req.iov itself */
	/* disk.c's: vectored requests in flight on a backend that is not, each through one
	 * bounce buffer (written: copied in at submit; read: copied out when reaped) */
	struct avfs_disk_bounce *bnc;
	size_t nbnc, capbnc;
};

/* Validate a request against the device: alignment, bounds, size, registered buffer, the
 * pieces of a vectored one. 0 or -EINVAL (-EOPNOTSUPP for SEEK on a device without it). Used
 * by every backend. */
int avfs_disk_check(const struct avfs_disk *d, const struct avfs_disk_req *req);

/* Thin wrappers: check, then call the backend. Same return conventions as the ops. */
int avfs_disk_submit(struct avfs_disk *d, const struct avfs_disk_req *req);
int avfs_disk_reap(struct avfs_disk *d, struct avfs_disk_cqe *cqes, unsigned max);
int avfs_disk_wait(struct avfs_disk *d);
int avfs_disk_register_buffers(struct avfs_disk *d, const struct iovec *iov, unsigned n);
int avfs_disk_poll_fd(struct avfs_disk *d);
unsigned avfs_disk_inflight(struct avfs_disk *d);
void avfs_disk_close(struct avfs_disk *d);

/* Synchronous helper for tools and tests: submit one request, wait for its completion.
 * Requires no other request in flight. Returns the completion result. */
int64_t avfs_disk_io_sync(struct avfs_disk *d, const struct avfs_disk_req *req);

/* A blank-padded ASCII field of a device's identification (SCSI INQUIRY, NVMe Identify: len
 * bytes, maybe not terminated) into dst[n], without its leading and trailing blanks and NULs,
 * cut to fit. For the backends' identification. */
void avfs_copy_trim(char *dst, size_t n, const char *src, size_t len);

/* Allocate a buffer aligned for this device (free with free()). NULL on failure. */
void *avfs_disk_alloc_buf(const struct avfs_disk *d, size_t len);

/* io_uring O_DIRECT backend on an image file or block device (disk/uring.c).
 * flags: AVFS_URING_RDONLY (writes are then refused at submit with -EBADF).
 * depth: ring entries (0 = 64); more requests in flight than that get -EBUSY at submit.
 * Returns 0 and fills *out, or -errno: -ENOENT, -EACCES, and -EINVAL for anything that is
 * not a usable image or block device (a directory, a char device, a fifo, a zero-length
 * file, a file system without O_DIRECT; never -EISDIR).
 * A disk is used from one thread; close waits for requests still in flight. */
#define AVFS_URING_RDONLY (1u << 0)
int avfs_uring_open(const char *path, unsigned flags, unsigned depth, struct avfs_disk **out);

/* Backends by name, for --backend (avfsd, avfs-admin profile, mkfs.avfs). */
enum avfs_backend {
	AVFS_BACKEND_AUTO = 0,	/* see avfs_disk_open */
	AVFS_BACKEND_URING,	/* io_uring, O_DIRECT: image files and any block device */
	AVFS_BACKEND_SG,	/* SCSI commands over SG_IO (disk/sg.h) */
	AVFS_BACKEND_NVME,	/* NVMe commands over io_uring passthrough (disk/nvme.h) */
};
/* "auto", "uring", "sg", "nvme". 0, or -EINVAL. */
int avfs_backend_parse(const char *name, enum avfs_backend *out);
const char *avfs_backend_name(enum avfs_backend b);

#define AVFS_OPEN_RDONLY (1u << 0)	/* writes are refused at submit (-EBADF) */
#define AVFS_OPEN_SEEK (1u << 1)	/* auto: the caller will issue SEEK commands (seek splitting) */

/*
 * Open path with backend b (disk/open.c). AUTO picks SG for a SCSI disk when AVFS_OPEN_SEEK asks
 * for SEEK commands, and io_uring otherwise (NVMe block devices included: the block layer path
 * is the default; NVMe passthrough only when asked by name). Whatever the backend, d->ident is
 * filled where the device can be identified: an io_uring disk on a SCSI disk gets its SCSI
 * identification, on an NVMe namespace its libnvme Identify, and info.rotational follows the
 * device's own word (VPD B1 rotation rate, NVMe: non-rotating) where it gives one.
 * 0 and *out, or -errno with a sentence in why (may be NULL): -ENOTTY (sg on a non-SCSI device,
 * nvme on a non-NVMe one), and the backends' own errors.
 */
int avfs_disk_open(const char *path, enum avfs_backend b, unsigned flags, struct avfs_disk **out,
		   char *why, size_t whylen);

#endif

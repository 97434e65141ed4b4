/*
 * nvme.h — NVMe: identification of a namespace and its controller through libnvme, and a
 * backend that drives the namespace with NVMe READ/WRITE/FLUSH commands through io_uring
 * passthrough on its generic char device (/dev/ngXnY). The NVMe twin of sg.h/scsi.h; no
 * scheduling, chunking policy or retries here.
 */
#ifndef AVFS_NVME_H
#define AVFS_NVME_H

#include "disk.h"

#include <stdbool.h>
#include <stdint.h>

#define AVFS_NVME_RDONLY (1u << 0)	/* open read-only: writes are refused at submit (-EBADF) */
#define AVFS_NVME_QUEUE 64		/* requests submitted and not yet reaped; more get -EBUSY */

/* What Identify Controller and Identify Namespace said. Strings are NUL-terminated with
 * their trailing blanks removed. */
struct avfs_nvme_ident {
	/* controller */
	uint16_t vid;		/* PCI vendor id (0x1b36: QEMU) */
	char model[41];		/* MN */
	char serial[21];	/* SN */
	char firmware[9];	/* FR */
	uint32_t mdts;		/* MDTS in bytes: the most one command may move; 0 = no limit */
	bool vwc;		/* a volatile write cache is present (VWC bit 0) */
	/* namespace */
	uint32_t nsid;
	uint64_t nsze;		/* size in logical blocks (NSZE) */
	uint8_t lbaf;		/* index of the LBA format in use (FLBAS) */
	uint32_t lba_data;	/* its data bytes per logical block (2^LBADS) */
	uint16_t lba_meta;	/* its metadata bytes per logical block (MS) */
};

/*
 * Identify the NVMe namespace at path: a namespace block device (/dev/nvmeXnY, a partition of
 * one) or its generic char device (/dev/ngXnY). Fills *out and returns 0, or -errno:
 *   -ENOENT, -EACCES, -EPERM  from open
 *   -ENOTTY                   not an NVMe namespace: a regular file, a directory, /dev/null,
 *                             an NVMe controller node, a non-NVMe block device (virtio, loop)
 *   -EINVAL                   bad arguments
 *   avfs_nvme_status_errno    the Identify command failed with an NVMe status
 */
int avfs_nvme_identify(const char *path, struct avfs_nvme_ident *out);

/*
 * Open an NVMe namespace as a disk: path is /dev/ngXnY, or /dev/nvmeXnY (its generic char
 * device is used). Identifies it (avfs_nvme_identify) and sets up an io_uring with
 * IORING_SETUP_SQE128|CQE32 for NVMe passthrough (IORING_OP_URING_CMD, NVME_URING_CMD_IO).
 *
 * flags: AVFS_NVME_RDONLY. Returns 0 and fills *out, or -errno:
 *   those of avfs_nvme_identify
 *   -EINVAL        bad arguments, a partition (NVMe LBAs address the whole namespace), an
 *                  empty namespace
 *   -EMEDIUMTYPE   an LBA format this backend cannot drive: metadata bytes per block, or a
 *                  data size that is not a power of two in [512, 64 KiB]
 *   -ENODEV        no generic char device for the namespace (kernel before 5.13)
 *   io_uring_queue_init's errors (-EINVAL: a kernel without SQE128/CQE32, before 5.19)
 *
 * info: size = NSZE blocks, lbs = the format's data size, pbs from the kernel's queue
 * (physical_block_size) or lbs, not rotational, no SEEK, is_blockdev. d->ident: transport
 * and backend "nvme", vendor "0x1b36", product = model, serial, firmware, lba_format
 * "LBAF 0: 512 B data + 0 B metadata", wce_known, wce = VWC, rotation_rate 1, max_transfer =
 * the bytes per command: MDTS, lowered to the kernel's max_hw_sectors_kb where that is less.
 *
 * READ and WRITE become NVMe READ (0x02) / WRITE (0x01) commands; a request larger than
 * max_transfer goes as consecutive commands, one after the other (the next one is issued
 * when the previous completes, from reap or wait), each write with FUA (CDW12 bit 30) when
 * the request asks for it. FLUSH is an NVMe FLUSH (0x00) of the namespace. SEEK is not
 * supported. At most AVFS_NVME_QUEUE requests in flight; more get -EBUSY. poll_fd is the
 * ring's descriptor (it may also wake for a finished part of a split request: reap then
 * returns 0). register_buffers is accepted and only lets disk.c check buf_index (each
 * passthrough command maps its user pages itself).
 * A completion's NVMe status is mapped by avfs_nvme_status_errno; a negative cqe->res (a
 * kernel error) passes through; the first error of each status (or errno) is printed on
 * stderr with its decoded text, once per device.
 *
 * With AVFS_NVME_TRACE set to a value other than "" or "0" in the environment (read at
 * open), each command is printed on stderr as it completes, one line each:
 *   nvme: WRITE nsid 1 slba 0x2aaa nlb 8 fua -> status 0x0000 (ok)
 *   nvme: READ nsid 1 slba 0x80000 nlb 1 -> status 0x4080 (LBA Out of Range: ...; DNR) -EINVAL
 *   nvme: FLUSH nsid 1 -> status 0x0000 (ok)
 * (nlb is the number of blocks, the command's 0-based NLB field + 1), and at open one line
 * "nvme: open PATH: MODEL FIRMWARE serial '...' nsid N, ...".
 *
 * A disk is driven from one thread; close waits for the requests still in flight.
 */
int avfs_nvme_open(const char *path, unsigned flags, struct avfs_disk **out);

/* The identification of a disk opened by avfs_nvme_open. 0, or -EINVAL if d is another
 * backend's disk. */
int avfs_nvme_info(const struct avfs_disk *d, struct avfs_nvme_ident *out);

/*
 * NVMe completion status -> -errno. status is what passthrough returns in cqe->res (and
 * libnvme's ioctl wrappers return): status code in bits 0..7, status code type in 8..10,
 * CRD 11..12, More 13, DNR 14 (0x4080 = DNR + LBA Out of Range). A negative status is a
 * kernel -errno and is returned as it is. The table (CRD, More and DNR do not change it):
 *
 *   SCT SC    status                                   -errno
 *   0   00    Successful Completion                    0
 *   0   01    Invalid Command Opcode                   -EOPNOTSUPP
 *   0   02    Invalid Field in Command                 -EINVAL
 *   0   0b    Invalid Namespace or Format              -EINVAL
 *   0   0d-13 SGL / PRP descriptor and offset errors,  -EINVAL
 *         16
 *   0   15    Operation Denied                         -EACCES
 *   0   1d    Sanitize In Progress                     -EBUSY
 *   0   20    Namespace is Write Protected             -EROFS
 *   0   80    LBA Out of Range                         -EINVAL
 *   0   81    Capacity Exceeded                        -ENOSPC
 *   0   82    Namespace Not Ready                      -EAGAIN
 *   0   83    Reservation Conflict                     -EBADE   (as the SCSI path, scsi.h)
 *   0   84    Format In Progress                       -EBUSY
 *   0   other data transfer error, aborts, internal    -EIO
 *   1   81    Invalid Protection Information           -EILSEQ
 *   1   82    Attempted Write to Read Only Range       -EROFS
 *   1   other command specific                         -EIO
 *   2   86    Access Denied                            -EACCES
 *   2   85    Compare Failure                          -EILSEQ
 *   2   other write fault, unrecovered read error,     -EIO
 *             end-to-end checks, media errors
 *   3, 7, others: path related, vendor specific        -EIO
 */
int avfs_nvme_status_errno(int status);

/* The NVMe specification's text for status (libnvme's nvme_status_to_string: CRD, More and
 * DNR are not part of it), strerror's for a negative one. Never NULL nor "". */
const char *avfs_nvme_status_str(int status);

/* The identification in the backend-neutral form of disk.h (backend left ""; max_transfer is
 * MDTS, 0 for no limit). */
void avfs_nvme_ident_export(const struct avfs_nvme_ident *in, struct avfs_disk_ident *out);

#endif

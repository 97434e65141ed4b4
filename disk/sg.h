/*
 * sg.h — the SG_IO backend: a SCSI disk driven by SCSI commands through libsgutils2
 * (READ(16)/WRITE(16) with FUA, SYNCHRONIZE CACHE(10), SEEK(10) for the sub-seeks of seek splitting).
 * It is a struct avfs_disk like the io_uring one; chunking and JIT timing stay in the mixer.
 */
#ifndef AVFS_SG_H
#define AVFS_SG_H

#include "disk.h"

#include <stdbool.h>
#include <stdint.h>

#define AVFS_SG_RDONLY (1u << 0)	/* open read-only: writes are refused at submit (-EBADF) */
#define AVFS_SG_IDENTIFY (1u << 1)	/* only to identify the disk (read-only, no SEEK probe,
					 * has_seek false): for another backend's open */
#define AVFS_SG_QUEUE 64		/* requests submitted and not yet reaped; more get -EBUSY */
#define AVFS_SG_TIMEOUT_S 30		/* per SCSI command, as the kernel's sd uses */

/* What the device said about itself at open (avfs_sg_info). Strings are NUL-terminated,
 * trailing blanks removed; "" where the device did not say. */
struct avfs_sg_ident {
	char vendor[9];		/* INQUIRY T10 vendor identification */
	char product[17];	/* INQUIRY product identification */
	char revision[5];	/* INQUIRY product revision level */
	char serial[65];	/* VPD 0x80 unit serial number */
	char node[8];		/* how it was opened: "sg", "bsg" or "block" */
	uint64_t capacity;	/* bytes (READ CAPACITY(16), or (10) on devices without it) */
	uint32_t lbs;		/* logical block size */
	uint32_t pbs;		/* physical block size: lbs << LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT */
	uint32_t max_transfer;	/* bytes per command: the least of VPD B0 MAXIMUM TRANSFER LENGTH
				 * and the kernel's queue limits (max_hw_sectors_kb, max_segments);
				 * larger requests are split into several commands */
	uint32_t rotation_rate;	/* VPD B1: 0 not reported, 1 non-rotating, else rpm */
	bool wce;		/* write cache enabled (MODE SENSE caching page) */
	bool wce_known;		/* the caching page could be read */
	bool has_seek;		/* SEEK(10) at LBA 0 answered GOOD at open */
};

/*
 * Open a SCSI disk through its sd block device (/dev/sdX), sg node (/dev/sgN) or bsg node
 * (/dev/bsg/H:C:T:L) and identify it: INQUIRY, VPD 0x00/0x80/0xB0/0xB1, READ CAPACITY(16),
 * MODE SENSE(10) caching page, TEST UNIT READY, and one SEEK(10) at LBA 0 (GOOD: info.has_seek;
 * "invalid opcode": no SEEKs, noted once on stderr).
 *
 * flags: AVFS_SG_RDONLY, AVFS_SG_IDENTIFY. Returns 0 and fills *out, or -errno:
 *   -ENOENT, -EACCES, -EPERM  from open
 *   -ENOTTY                   not a SCSI device: a regular file, a directory, /dev/null,
 *                             a non-SCSI block device, a device-mapper or md volume (even on
 *                             a SCSI disk: SG_IO would reach the whole disk), an NVMe device
 *   -EMEDIUMTYPE              a SCSI device that is not a direct-access disk (peripheral
 *                             type 0) or whose logical block size is not a power of two
 *   -ENXIO                    no logical unit behind the address (peripheral qualifier)
 *   -EINVAL                   bad arguments, a partition (SCSI LBAs address the whole disk),
 *                             a zero capacity
 *   the table of scsi.h       a failed INQUIRY, READ CAPACITY or TEST UNIT READY
 *
 * Commands run on one I/O thread per disk (SG_IO is synchronous; a rotating disk does one
 * command at a time): submit queues (never blocks, -EBUSY beyond AVFS_SG_QUEUE), completions
 * come back through reap and make poll_fd (an eventfd) readable. READ/WRITE larger than
 * max_transfer go as consecutive commands, each with FUA when the request asks for it;
 * FLUSH is SYNCHRONIZE CACHE(10) of the whole medium; SEEK is SEEK(10) (LBAs above 2^32 - 1
 * complete with -EOVERFLOW). A unit attention or an aborted command is reissued once.
 * register_buffers is accepted and only lets disk.c check buf_index (SG_IO maps each
 * command's pages itself: nothing to pin).
 * Errors are decoded as in scsi.h; the first error of each sense key (or of each non-sense
 * kind: status, transport, short transfer) is printed on stderr with its decoded text.
 *
 * With AVFS_SG_TRACE set in the environment (read at open), every command this backend
 * issues through the pass-through object is printed on stderr, one line each:
 *   sg: WRITE(16) 8a 08 00 00 00 00 00 02 aa aa 00 00 00 08 00 00 -> GOOD
 *   sg: READ(16) 88 00 ... -> Illegal Request: Logical block address out of range (-EINVAL)
 * (a command reissued after a unit attention shows twice),
 * and, once identification is done, one line "sg: open PATH: VENDOR PRODUCT REV serial '...'
 * via NODE, ..." (its TEST UNIT READY and SEEK(10) probe are traced; INQUIRY, READ CAPACITY
 * and MODE SENSE go through libsgutils2's sg_ll_* helpers and are not).
 *
 * Like every backend, a disk is driven from one thread; close waits for every queued
 * command to finish (a read must not land in a buffer the caller frees next).
 */
int avfs_sg_open(const char *path, unsigned flags, struct avfs_disk **out);

/* The identification of a disk opened by avfs_sg_open. 0, or -EINVAL if d is another
 * backend's disk. */
int avfs_sg_info(const struct avfs_disk *d, struct avfs_sg_ident *out);

/* The identification in the backend-neutral form of disk.h (backend "sg"). */
void avfs_sg_ident_export(const struct avfs_sg_ident *in, struct avfs_disk_ident *out);

#endif

/*
 * signature.h — what a device or image holds that writing over it would destroy: an AVFS file
 * system (the superblock's magic in the primary or the backup copy: a damaged primary is still
 * somebody's file system) or anything libblkid knows (file systems, swap, LUKS, RAID and LVM
 * members, partition tables). It only reads. For mkfs.avfs and `avfs-admin profile --write`;
 * whether the device is in use is disk/lock.h's question.
 */
#ifndef AVFS_SIGNATURE_H
#define AVFS_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

#include "disk.h"

/*
 * What the first size bytes of fd hold, in words ("an ext4 file system", "a gpt partition
 * table", several joined by " and "), into what: 1 something found, 0 nothing, -errno (what
 * says why).
 */
int avfs_signature_fd(int fd, uint64_t size, char *what, size_t len);

/*
 * The same for a device reached through a backend (an SG or NVMe node, which libblkid cannot
 * read): its first and last MiB, read through d, are what is probed. Signatures elsewhere
 * (none that libblkid checks by default) go unseen.
 */
int avfs_signature_disk(struct avfs_disk *d, char *what, size_t len);

#endif

/*
 * open.c — one way to open a disk by backend name (avfsd --backend, avfs-admin profile,
 * mkfs.avfs): picks the backend for AUTO and fills the identification the io_uring backend
 * cannot get by itself, by asking the device through its own command set.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "disk.h"
#include "nvme.h"
#include "sg.h"
#include "why.h"

static const char *const backend_names[] = {
	[AVFS_BACKEND_AUTO] = "auto",
	[AVFS_BACKEND_URING] = "uring",
	[AVFS_BACKEND_SG] = "sg",
	[AVFS_BACKEND_NVME] = "nvme",
};

int avfs_backend_parse(const char *name, enum avfs_backend *out)
{
	for (unsigned i = 0; i < sizeof(backend_names) / sizeof(backend_names[0]); i++) {
		if (name && !strcmp(name, backend_names[i])) {
			*out = (enum avfs_backend)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *avfs_backend_name(enum avfs_backend b)
{
	return (unsigned)b < sizeof(backend_names) / sizeof(backend_names[0]) ?
	       backend_names[b] : "?";
}

/* A SCSI disk's identification for a disk served by another backend: an identify-only SG open
 * (INQUIRY, VPD pages, READ CAPACITY, MODE SENSE, TEST UNIT READY; no SEEK probe), closed
 * again. False when path is not a SCSI disk or cannot be opened that way. */
static bool scsi_identify(const char *path, struct avfs_disk_ident *id)
{
	struct avfs_disk *s;
	char backend[sizeof(id->backend)];

	if (avfs_sg_open(path, AVFS_SG_IDENTIFY, &s))
		return false;
	memcpy(backend, id->backend, sizeof(backend));
	*id = s->ident;
	memcpy(id->backend, backend, sizeof(backend));
	avfs_disk_close(s);
	return true;
}

/* An NVMe namespace's identification through libnvme, for a disk served by io_uring. */
static bool nvme_identify(const char *path, struct avfs_disk_ident *id)
{
	struct avfs_nvme_ident n;
	char backend[sizeof(id->backend)];

	if (avfs_nvme_identify(path, &n))
		return false;
	memcpy(backend, id->backend, sizeof(backend));
	avfs_nvme_ident_export(&n, id);
	memcpy(id->backend, backend, sizeof(backend));
	return true;
}

static int open_uring(const char *path, unsigned flags, struct avfs_disk **out, char *why,
		      size_t whylen)
{
	struct avfs_disk *d;
	int err = avfs_uring_open(path, flags & AVFS_OPEN_RDONLY ? AVFS_URING_RDONLY : 0, 64, &d);

	if (err) {
		avfs_why(why, whylen, "cannot open %s with io_uring: %s", path, strerror(-err));
		return err;
	}
	/* the device's own word on rotation where it gives one; sysfs says the same for sd */
	if (d->info.is_blockdev && nvme_identify(path, &d->ident))
		d->info.rotational = false;
	else if (d->info.is_blockdev && scsi_identify(path, &d->ident) && d->ident.rotation_rate)
		d->info.rotational = d->ident.rotation_rate != 1;
	*out = d;
	return 0;
}

static int open_nvme(const char *path, unsigned flags, struct avfs_disk **out, char *why,
		     size_t whylen)
{
	int err = avfs_nvme_open(path, flags & AVFS_OPEN_RDONLY ? AVFS_NVME_RDONLY : 0, out);

	if (err == -ENOTTY)
		avfs_why(why, whylen, "%s is not an NVMe namespace: the nvme backend needs one "
			 "(/dev/ngXnY, or /dev/nvmeXnY for its generic node)", path);
	else if (err)
		avfs_why(why, whylen, "cannot open %s with NVMe passthrough: %s", path,
			 strerror(-err));
	return err;
}

static int open_sg(const char *path, unsigned flags, struct avfs_disk **out, char *why,
		   size_t whylen)
{
	int err = avfs_sg_open(path, flags & AVFS_OPEN_RDONLY ? AVFS_SG_RDONLY : 0, out);

	if (err == -ENOTTY)
		avfs_why(why, whylen, "%s is not a SCSI disk: the sg backend needs one (an sd "
			 "block device, its sg or bsg node)", path);
	else if (err)
		avfs_why(why, whylen, "cannot open %s with SG_IO: %s", path, strerror(-err));
	return err;
}

int avfs_disk_open(const char *path, enum avfs_backend b, unsigned flags, struct avfs_disk **out,
		   char *why, size_t whylen)
{
	if (!path || !out) {
		avfs_why(why, whylen, "no device");
		return -EINVAL;
	}
	switch (b) {
	case AVFS_BACKEND_URING:
		return open_uring(path, flags, out, why, whylen);
	case AVFS_BACKEND_SG:
		return open_sg(path, flags, out, why, whylen);
	case AVFS_BACKEND_NVME:
		return open_nvme(path, flags, out, why, whylen);
	case AVFS_BACKEND_AUTO:
		/* SEEK is what only the sg backend gives: take it where the caller wants it and
		 * the device is a SCSI disk; every other case is io_uring's */
		if ((flags & AVFS_OPEN_SEEK) &&
		    !avfs_sg_open(path, flags & AVFS_OPEN_RDONLY ? AVFS_SG_RDONLY : 0, out))
			return 0;
		return open_uring(path, flags, out, why, whylen);
	}
	avfs_why(why, whylen, "unknown backend %d", (int)b);
	return -EINVAL;
}

/*
 * mkfs.avfs — format a block device or an image file with the AVFS file system (SPEC §10).
 * An image file is created or extended to --size. Prints the geometry (or JSON). Formatting
 * itself is the core's avfs_fs_format, written through the io_uring backend.
 * Exit status: 0 formatted, 1 failed (nothing usable was written), 2 usage error.
 */
#include "config.h"
#include "disk.h"
#include "fs.h"
#include "fsio.h"
#include "zrr.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkfs.avfs [options] DEVICE_OR_IMAGE\n"
		"  --block-size SIZE   data block size, a power of two from 64K to 4G (default 4M)\n"
		"  --zones N           ZRR zone count (default: at most 32 zones of >= 16 GiB)\n"
		"  --size BYTES        image size (creates or extends an image file; K/M/G/T)\n"
		"  --seed S            seed of the first ZRR zone (default 1)\n"
		"  --inodes N          inode count (default: 2 per data block, at least 4096)\n"
		"  --journal-blocks N  journal size in 4 KiB blocks\n"
		"  --alloc zrr|contig  allocation policy (contig: first-fit baseline, not for use)\n"
		"  --disk-model NAME   service-time parameters to record (default avfs-250g)\n"
		"  --json              print the geometry as JSON\n"
		"  -q, --quiet         print nothing on success\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "block-size", required_argument, NULL, 'b' },
		{ "zones", required_argument, NULL, 'z' },
		{ "size", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "inodes", required_argument, NULL, 'i' },
		{ "journal-blocks", required_argument, NULL, 'J' },
		{ "alloc", required_argument, NULL, 'a' },
		{ "disk-model", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct avfs_mkfs_opts o = { .seed = 1 };
	uint64_t size = 0, v;
	bool json = false, quiet = false;
	struct avfs_disk *d = NULL;
	struct avfs_super sb;
	struct stat st;
	char why[256] = "";
	const char *path;
	int c, err;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (avfs_parse_size(optarg, &v) || v == 0 || (v & (v - 1)) || v < (1u << 16) ||
			    v > (1ull << 32)) {
				fprintf(stderr, "mkfs.avfs: --block-size '%s': a power of two from 64K "
					"to 4G\n", optarg);
				return 2;
			}
			o.block_shift = (uint32_t)__builtin_ctzll(v);
			break;
		case 'z':
			if (avfs_parse_size(optarg, &v) || v == 0 || v > AVFS_ZONES_MAX) {
				fprintf(stderr, "mkfs.avfs: --zones '%s': 1 to %u\n", optarg,
					(unsigned)AVFS_ZONES_MAX);
				return 2;
			}
			o.zones = (uint32_t)v;
			break;
		case 's':
			if (avfs_parse_size(optarg, &size) || !size) {
				fprintf(stderr, "mkfs.avfs: --size '%s': not a size\n", optarg);
				return 2;
			}
			break;
		case 'S':
			if (avfs_parse_size(optarg, &o.seed)) {
				fprintf(stderr, "mkfs.avfs: --seed '%s': not a number\n", optarg);
				return 2;
			}
			break;
		case 'i':
			if (avfs_parse_size(optarg, &o.inodes) || !o.inodes) {
				fprintf(stderr, "mkfs.avfs: --inodes '%s': not a count\n", optarg);
				return 2;
			}
			break;
		case 'J':
			if (avfs_parse_size(optarg, &o.journal_blocks) || !o.journal_blocks) {
				fprintf(stderr, "mkfs.avfs: --journal-blocks '%s': not a count\n", optarg);
				return 2;
			}
			break;
		case 'a':
			if (!strcmp(optarg, "zrr")) {
				o.alloc_policy = AVFS_ALLOC_ZRR;
			} else if (!strcmp(optarg, "contig")) {
				o.alloc_policy = AVFS_ALLOC_CONTIG;
			} else {
				fprintf(stderr, "mkfs.avfs: --alloc '%s': zrr or contig\n", optarg);
				return 2;
			}
			break;
		case 'm': o.disk_model = optarg; break;
		case 'j': json = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("mkfs.avfs %s\n", AVFS_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	path = argv[optind];
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
		/* a device: --size may only restrict the format to its start */
	} else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "mkfs.avfs: %s: not a block device or regular file\n", path);
		return 1;
	} else {
		int fd;

		if (!size && (errno == ENOENT || st.st_size == 0)) {
			fprintf(stderr, "mkfs.avfs: %s: no such image: give --size to create it\n", path);
			return 2;
		}
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "mkfs.avfs: %s: %s\n", path, strerror(errno));
			return 1;
		}
		if (size && fstat(fd, &st) == 0 && (uint64_t)st.st_size < size && ftruncate(fd, (off_t)size)) {
			fprintf(stderr, "mkfs.avfs: %s: cannot extend to %" PRIu64 " bytes: %s\n", path,
				size, strerror(errno));
			close(fd);
			return 1;
		}
		close(fd);
	}
	err = avfs_uring_open(path, 0, 0, &d);
	if (err) {
		fprintf(stderr, "mkfs.avfs: cannot open %s: %s\n", path, strerror(-err));
		return 1;
	}
	o.size = size ? size : d->info.size;
	err = avfs_fsio_mkfs(d, &o, &sb, why, sizeof(why));
	avfs_disk_close(d);
	if (err) {
		fprintf(stderr, "mkfs.avfs: %s: %s\n", path, why[0] ? why : strerror(-err));
		return 1;
	}
	if (quiet)
		return 0;
	if (json) {
		printf("{\"device\": \"%s\", \"size\": %" PRIu64 ", \"block_size\": %" PRIu64
		       ", \"data_blocks\": %" PRIu64 ", \"zones\": %u, \"zone_blocks\": %" PRIu64
		       ", \"first_zone\": %u, \"inodes\": %" PRIu64 ", \"metadata_blocks\": %" PRIu64
		       ", \"journal_blocks\": %" PRIu64 ", \"data_offset\": %" PRIu64
		       ", \"backup_offset\": %" PRIu64 ", \"alloc\": \"%s\", \"disk_model\": \"%s\"}\n",
		       path, sb.dev_size, (uint64_t)1 << sb.block_shift, sb.data_blocks, sb.nzones,
		       sb.zone_blocks, (sb.last_zone + 1) % sb.nzones, sb.ninodes, sb.meta_blocks,
		       sb.journal_blocks, sb.data_off, sb.backup_off,
		       sb.alloc_policy ? "contig" : "zrr", sb.disk_model);
		return 0;
	}
	printf("mkfs.avfs: formatted %s (%.2f GB)\n", path, (double)sb.dev_size / 1e9);
	printf("  data blocks      %" PRIu64 " x %" PRIu64 " KiB = %.2f GB, from byte %" PRIu64 "\n",
	       sb.data_blocks, (uint64_t)(1ull << sb.block_shift) >> 10,
	       (double)(sb.data_blocks << sb.block_shift) / 1e9, sb.data_off);
	printf("  zones            %u of about %" PRIu64 " blocks (%s), first zone %u\n", sb.nzones,
	       sb.zone_blocks, sb.alloc_policy ? "contiguous first-fit baseline" : "Zone-Round-Robin",
	       (sb.last_zone + 1) % sb.nzones);
	printf("  inodes           %" PRIu64 "\n", sb.ninodes);
	printf("  metadata         %" PRIu64 " blocks of 4 KiB (journal %" PRIu64 "), backup at byte %"
	       PRIu64 "\n", sb.meta_blocks, sb.journal_blocks, sb.backup_off);
	printf("  disk model       %s\n", sb.disk_model);
	return 0;
}

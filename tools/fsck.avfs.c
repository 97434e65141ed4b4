/*
 * fsck.avfs — check (and with -y repair) an AVFS file system on a device or image
 * (SPEC §10, §14). It drives the mount (replay, backup repair) and the core's checker
 * (fs/fsck.c) and turns their findings into text or JSON and an fsck(8) exit code; the
 * checks themselves live in the core. A repair (-y) is refused on a device in use (disk/lock.h:
 * an avfsd serves it, the kernel has it mounted); a check (-n) of one goes on with a warning.
 */
#include "config.h"

#include "disk.h"
#include "fsck.h"
#include "fsio.h"
#include "grow.h"
#include "jsonout.h"
#include "lock.h"
#include "progress.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fsck(8) exit codes: a sum of conditions */
#define EXIT_CLEAN 0
#define EXIT_FIXED 1
#define EXIT_LEFT 4
#define EXIT_OPERATIONAL 8
#define EXIT_USAGE 16

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fsck.avfs [-n|-y|-p|-a] [-f] [--json] DEVICE_OR_IMAGE\n"
		"Check an AVFS file system; with -y, repair it.\n"
		"  -n          check only, write nothing (the default); a journal is replayed in\n"
		"              memory only. On a device in use (an avfsd serves it) it warns: what\n"
		"              a live file system has not committed yet can show as findings\n"
		"  -y          repair: replay the journal, rewrite damaged metadata from the backup\n"
		"              region, fix what the check finds; unreachable inodes are linked\n"
		"              into /lost+found as #INODE. Refused on a device in use\n"
		"  -p, -a      the same as -y (what fsck(8) passes for an automatic repair: every\n"
		"              repair of AVFS is safe without a question)\n"
		"  -f          accepted (fsck(8)'s \"force\"): AVFS is always checked in full\n"
		"  --json      one JSON object on stdout (geometry, counts, findings, exit_code)\n"
		"  -h, --help  this text; -V, --version: the version\n"
		"On a terminal a progress line shows how far it is.\n"
		"Files unlinked while still open when the file system stopped (nlink 0, no name)\n"
		"are expected leftovers, not errors: reported, freed by -y or by the next\n"
		"read-write mount.\n"
		"Exit codes (fsck(8), summed): 0 no errors, 1 errors fixed, 4 errors left\n"
		"uncorrected, 8 operational error (cannot open, not AVFS, cannot mount),\n"
		"16 usage error.\n");
}

/* Findings of the mount and of the checks, in order, as the tool reports them. */
struct lines {
	char **v;
	size_t n, cap;
};

static void add_line(struct lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_line(struct lines *l, const char *fmt, ...)
{
	char **v = avfs_grow(l->v, &l->cap, l->n, sizeof(*v), 32), *s = NULL;
	va_list ap;

	if (!v)
		return;
	l->v = v;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		l->v[l->n++] = s;
	va_end(ap);
}

static void free_lines(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static struct avfs_progress bar;	/* on a terminal */

static void progress(const char *what)
{
	if (*what)
		avfs_progress_show(&bar, what, 0, 0);
	else
		avfs_progress_clear(&bar);
}

static void fsio_progress(void *arg, const char *step, uint64_t done, uint64_t total)
{
	(void)arg;
	avfs_progress_show(&bar, step, done, total);
}

static int commit_cb(void *arg)
{
	return avfs_fsio_sync(arg);
}

static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
	return buf;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct avfs_fsio_progress pg = { .fn = fsio_progress };
	bool repair = false, check_only = false, json = false;
	struct avfs_mount_report mrep = { 0 };
	struct avfs_fsck_report rep = { 0 }, verify = { 0 };
	struct lines lines = { 0 };
	struct avfs_disk *d = NULL;
	struct avfs_fsio *io = NULL;
	const struct avfs_super *sb;
	json_object *doc = NULL;	/* --json: the report, printed at the end */
	uint64_t errors = 0, fixed = 0, left, bs, free_blocks, ninodes;
	const char *path;
	char why[512] = "", hb[16], hf[16];
	unsigned mflags;
	int c, err, code, lock = -1;

	while ((c = getopt_long(argc, argv, "nypafhV", opts, NULL)) != -1) {
		switch (c) {
		case 'n': check_only = true; break;
		case 'y': case 'p': case 'a': repair = true; break;
		case 'f': break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return EXIT_CLEAN;
		case 'V': printf("fsck.avfs %s\n", AVFS_VERSION); return EXIT_CLEAN;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || (check_only && repair)) {
		if (check_only && repair)
			fprintf(stderr, "fsck.avfs: -n and -y exclude each other\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	path = argv[optind];
	avfs_progress_init(&bar, "fsck.avfs", STDERR_FILENO, false);

	/* the lock avfsd holds: a repair needs it, a check goes on without it */
	lock = avfs_disk_lock(path, why, sizeof(why));
	if (lock == -EBUSY && repair) {
		fprintf(stderr, "fsck.avfs: %s: -y refused, nothing written\n", why);
		code = EXIT_OPERATIONAL;
		goto fail;
	}
	if (lock == -EBUSY)
		fprintf(stderr, "fsck.avfs: warning: %s; checking it all the same, read-only: what "
			"it has not committed yet can show as findings\n", why);
	why[0] = 0;

	err = avfs_uring_open(path, repair ? 0 : AVFS_URING_RDONLY, 0, &d);
	if (err) {
		fprintf(stderr, "fsck.avfs: cannot open %s: %s\n", path,
			err == -EINVAL ? "not an image file or block device" : strerror(-err));
		snprintf(why, sizeof(why), "cannot open: %s", strerror(-err));
		code = EXIT_OPERATIONAL;
		goto fail;
	}
	/* -n writes nothing: replay and backup repairs stay in memory */
	mflags = AVFS_MOUNT_FORCE | AVFS_MOUNT_CHECK_BACKUP | AVFS_MOUNT_KEEP_ORPHANS |
		 (repair ? 0 : AVFS_MOUNT_RDONLY);
	progress("mounting");
	err = avfs_fsio_mount_progress(d, mflags, &pg, &io, &mrep, why, sizeof(why));
	if (err) {
		progress("");
		fprintf(stderr, "fsck.avfs: %s: cannot mount: %s\n", path, why);
		code = EXIT_OPERATIONAL;
		goto fail;
	}
	if (mrep.journal_discarded) {
		/* said on stderr too: what the journal held past this point is gone */
		fprintf(stderr, "fsck.avfs: %s: WARNING: the journal cannot be trusted (%s): %llu "
			"committed transaction%s replayed, the rest of the journal %s\n", path,
			mrep.journal_why, (unsigned long long)mrep.replayed_txn,
			mrep.replayed_txn == 1 ? "" : "s",
			repair ? "discarded" : "would be discarded by -y");
		add_line(&lines, "journal: %s; the rest of the journal after %llu transaction%s "
			 "discarded%s", mrep.journal_why, (unsigned long long)mrep.replayed_txn,
			 mrep.replayed_txn == 1 ? "" : "s", repair ? " (fixed)" : "");
		errors++;
		fixed += repair;
	} else if (mrep.journal_unreadable) {
		add_line(&lines, "journal: %llu unreadable block%s outside what replay needed%s",
			 (unsigned long long)mrep.journal_unreadable,
			 mrep.journal_unreadable == 1 ? "" : "s",
			 repair ? " (rewritten by the next transactions)" : "");
	}
	if (mrep.repaired_primary) {
		add_line(&lines, "%llu primary metadata block%s damaged: %s the backup copy%s",
			 (unsigned long long)mrep.repaired_primary,
			 mrep.repaired_primary == 1 ? "" : "s", repair ? "rewritten from" : "good in",
			 repair ? " (fixed)" : "");
		errors += mrep.repaired_primary;
		fixed += repair ? mrep.repaired_primary : 0;
	}
	if (mrep.rewrite_failed) {
		add_line(&lines, "%llu of them could not be rewritten (the device refuses the write): "
			 "the backup copy serves until the device is replaced",
			 (unsigned long long)mrep.rewrite_failed);
		fixed -= repair ? mrep.rewrite_failed : 0;
	}
	if (mrep.repaired_backup) {
		add_line(&lines, "%llu backup metadata cop%s damaged or stale%s",
			 (unsigned long long)mrep.repaired_backup,
			 mrep.repaired_backup == 1 ? "y" : "ies", repair ? " (fixed)" : "");
		errors += mrep.repaired_backup;
		fixed += repair ? mrep.repaired_backup : 0;
	}
	if (mrep.lost_blocks) {
		add_line(&lines, "%llu metadata block%s damaged in both copies: taken as empty%s",
			 (unsigned long long)mrep.lost_blocks, mrep.lost_blocks == 1 ? "" : "s",
			 repair ? " (fixed; what they held is lost)" : "");
		errors += mrep.lost_blocks;
		fixed += repair ? mrep.lost_blocks : 0;
	}

	progress("checking");
	err = avfs_fsck_check_commit(io->fs, repair ? AVFS_FSCK_REPAIR : 0, &rep,
				     repair ? commit_cb : NULL, io);
	if (!err && repair) {
		progress("writing repairs");
		err = avfs_fsio_sync(io);
	}
	if (err) {
		progress("");
		fprintf(stderr, "fsck.avfs: %s: %s failed: %s\n", path,
			repair ? "repair" : "check", strerror(-err));
		snprintf(why, sizeof(why), "%s failed: %s", repair ? "repair" : "check",
			 strerror(-err));
		code = EXIT_OPERATIONAL;
		goto fail;
	}
	for (size_t i = 0; i < rep.nfindings; i++)
		add_line(&lines, "%s", rep.findings[i]);
	errors += rep.errors;
	fixed += rep.fixed;
	left = errors - fixed;
	if (repair) {
		/* what the repair could not mend shows in a second look */
		progress("verifying");
		err = avfs_fsck_check(io->fs, 0, &verify);
		if (!err && verify.errors) {
			for (size_t i = 0; i < verify.nfindings; i++)
				add_line(&lines, "after repair: %s", verify.findings[i]);
			if (verify.errors > left)
				left = verify.errors;
		}
	}
	progress("");

	sb = avfs_fs_super(io->fs);
	bs = avfs_fs_block_size(io->fs);
	free_blocks = sb->data_blocks - rep.data_blocks_used;
	ninodes = sb->ninodes;
	code = (fixed ? EXIT_FIXED : 0) | (left ? EXIT_LEFT : 0);
	if (json) {
		const struct {
			const char *key;
			uint64_t v;
		} num[] = {
			{ "block_size", bs },
			{ "zones", sb->nzones },
			{ "data_blocks", sb->data_blocks },
			{ "free_blocks", free_blocks },
			{ "free_bytes", free_blocks * bs },
			{ "inodes", ninodes },
			{ "inodes_used", rep.inodes },
			{ "free_inodes", ninodes - rep.inodes },
			{ "files", rep.files },
			{ "directories", rep.dirs },
			{ "symlinks", rep.symlinks },
			{ "other", rep.other },
			{ "dir_entries", rep.dir_entries },
			{ "data_blocks_used", rep.data_blocks_used },
			{ "meta_blocks_used", rep.meta_blocks_used },
			{ "journal_replayed", mrep.replayed_txn },
			{ "journal_blocks_replayed", mrep.replayed_blocks },
			{ "repaired_primary", mrep.repaired_primary },
			{ "repaired_backup", mrep.repaired_backup },
			{ "lost_blocks", mrep.lost_blocks },
			{ "journal_unreadable", mrep.journal_unreadable },
			{ "journal_discarded", mrep.journal_discarded },
			{ "orphans", rep.orphans },
			{ "errors", errors },
			{ "fixed", fixed },
			{ "left", left },
		};
		json_object *findings = json_object_new_array();

		doc = json_object_new_object();
		json_object_object_add(doc, "device", json_object_new_string(path));
		json_object_object_add(doc, "mode",
				       json_object_new_string(repair ? "repair" : "check"));
		for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++)
			json_object_object_add(doc, num[i].key, json_object_new_uint64(num[i].v));
		for (size_t i = 0; i < lines.n; i++)
			json_object_array_add(findings, json_object_new_string(lines.v[i]));
		json_object_object_add(doc, "findings", findings);
	} else {
		if (mrep.replayed_txn)
			printf("journal: %llu transaction%s replayed %s\n",
			       (unsigned long long)mrep.replayed_txn, mrep.replayed_txn == 1 ? "" : "s",
			       repair ? "and written home" : "in memory");
		for (size_t i = 0; i < lines.n; i++)
			printf("%s\n", lines.v[i]);
		if (rep.orphans)
			printf("%llu file%s unlinked while open (not an error): %s\n",
			       (unsigned long long)rep.orphans, rep.orphans == 1 ? "" : "s",
			       repair ? "freed" : "the next read-write mount frees them");
		printf("%s: block size %s, %u zones, %llu data blocks, %llu free (%s)\n", path,
		       human(bs, hb, sizeof(hb)), sb->nzones, (unsigned long long)sb->data_blocks,
		       (unsigned long long)free_blocks, human(free_blocks * bs, hf, sizeof(hf)));
		printf("%s: %llu of %llu inodes used: %llu files, %llu directories, %llu symlinks, "
		       "%llu other; %llu names, %llu metadata blocks in maps and directories\n", path,
		       (unsigned long long)rep.inodes, (unsigned long long)ninodes,
		       (unsigned long long)rep.files, (unsigned long long)rep.dirs,
		       (unsigned long long)rep.symlinks, (unsigned long long)rep.other,
		       (unsigned long long)rep.dir_entries, (unsigned long long)rep.meta_blocks_used);
		if (!errors)
			printf("%s: clean\n", path);
		else
			printf("%s: %llu error%s, %llu fixed, %llu left uncorrected%s\n", path,
			       (unsigned long long)errors, errors == 1 ? "" : "s",
			       (unsigned long long)fixed, (unsigned long long)left,
			       !repair && left ? " (run with -y to repair)" : "");
	}
	if (repair) {
		err = avfs_fsio_unmount(io);
		io = NULL;
		if (err) {
			fprintf(stderr, "fsck.avfs: %s: writing the repairs failed: %s\n", path,
				strerror(-err));
			code |= EXIT_OPERATIONAL;
		}
	}
	goto out;
fail:
	if (json) {
		doc = json_object_new_object();
		json_object_object_add(doc, "device", json_object_new_string(path));
		json_object_object_add(doc, "error", json_object_new_string(why));
	}
out:
	if (doc) {	/* last, so that exit_code is the status fsck exits with */
		json_object_object_add(doc, "exit_code", json_object_new_int(code));
		if (avfs_json_print(stdout, doc, false))
			code |= EXIT_OPERATIONAL;
	}
	avfs_fsio_abandon(io);
	avfs_fsck_report_free(&rep);
	avfs_fsck_report_free(&verify);
	free_lines(&lines);
	if (d)
		avfs_disk_close(d);
	if (lock >= 0)
		close(lock);
	return code;
}

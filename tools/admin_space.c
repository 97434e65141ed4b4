/*
 * admin_space.c — avfs-admin quota and retention (docs/ADMIN.md): the per-directory space rules
 * of fs/space.h, set, removed or shown on a directory of an AVFS mount through its attributes
 * (trusted.avfs.quota, trusted.avfs.retain; setxattr(2), so root's alone, as the kernel keeps
 * trusted.*). The values are checked here with the daemon's own parser before they go; the
 * daemon checks them again. It does not enforce anything: avfsd does (fuse/retain.c).
 */
#include "admin.h"

#include "client.h"
#include "space.h"
#include "units.h"

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

/* DIR is a directory of an AVFS mount: 0, or 1 with the reason printed */
static int check_dir(const char *cmd, const char *dir)
{
	char sock[256];
	struct stat st;

	if (stat(dir, &st)) {
		fprintf(stderr, "avfs-admin %s: %s: %s\n", cmd, dir, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "avfs-admin %s: %s is not a directory (rules apply to a directory "
			"and everything below it)\n", cmd, dir);
		return 1;
	}
	if (avfs_proto_socket_file(dir, sock, sizeof(sock))) {
		fprintf(stderr, "avfs-admin %s: %s is not on an AVFS mount\n", cmd, dir);
		return 1;
	}
	return 0;
}

static int set(const char *cmd, const char *dir, const char *name, const char *value)
{
	char why[160];

	if (value && avfs_space_parse(name, value, strlen(value), NULL, why, sizeof(why))) {
		fprintf(stderr, "avfs-admin %s: %s\n", cmd, why);
		return 2;
	}
	if (value ? setxattr(dir, name, value, strlen(value), 0) :
		    removexattr(dir, name) && errno != ENODATA) {
		fprintf(stderr, "avfs-admin %s: %s: %s%s\n", cmd, dir, strerror(errno),
			errno == EPERM ? " (rules are trusted.* attributes: root's alone)" : "");
		return 1;
	}
	return 0;
}

static uint64_t du_bytes;

static int du_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)p, (void)f;
	if (flag == FTW_F && S_ISREG(st->st_mode))
		du_bytes += (uint64_t)st->st_blocks * 512;
	return 0;
}

/* what dir's attribute says, "none" when it has none */
static void show_attr(const char *dir, const char *name, char *v, size_t n)
{
	ssize_t len = getxattr(dir, name, v, n - 1);

	if (len <= 0)
		snprintf(v, n, "none");
	else
		v[len] = 0;
}

static int show(const char *dir)
{
	char q[64], r[64];

	show_attr(dir, AVFS_SPACE_QUOTA, q, sizeof(q));
	show_attr(dir, AVFS_SPACE_RETAIN, r, sizeof(r));
	du_bytes = 0;
	if (nftw(dir, du_one, 32, FTW_PHYS | FTW_MOUNT)) {
		fprintf(stderr, "avfs-admin: %s: cannot walk it: %s\n", dir, strerror(errno));
		return 1;
	}
	printf("%s: quota %s, retention %s (high, low %%), used %llu bytes\n", dir, q, r,
	       (unsigned long long)du_bytes);
	return 0;
}

/* quota DIR [SIZE|none] */
static int cmd_quota(int argc, char **argv)
{
	uint64_t bytes;
	char text[32];
	int err;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: avfs-admin quota DIR [SIZE|none]\n");
		return 2;
	}
	if (check_dir("quota", argv[1]))
		return 1;
	if (argc == 2)
		return show(argv[1]);
	if (!strcmp(argv[2], "none"))
		return set("quota", argv[1], AVFS_SPACE_QUOTA, NULL);
	if (avfs_parse_size(argv[2], &bytes) || !bytes) {
		fprintf(stderr, "avfs-admin quota: '%s' is not a size above 0 (\"10G\", "
			"\"500M\") nor \"none\"\n", argv[2]);
		return 2;
	}
	snprintf(text, sizeof(text), "%llu", (unsigned long long)bytes);
	err = set("quota", argv[1], AVFS_SPACE_QUOTA, text);
	return err ? err : show(argv[1]);
}

/* "90%" or "90": a whole percentage */
static int percent(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (end == s || errno || v > 100 || (*end && strcmp(end, "%")))
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* retention DIR [--high H --low L | --off] */
static int cmd_retention(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "high", required_argument, NULL, 'h' },
		{ "low", required_argument, NULL, 'l' },
		{ "off", no_argument, NULL, 'o' },
		{ 0 }
	};
	unsigned high = 0, low = 0;
	bool off = false, has_h = false, has_l = false;
	char text[32];
	int c, err;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'h' && !percent(optarg, &high))
			has_h = true;
		else if (c == 'l' && !percent(optarg, &low))
			has_l = true;
		else if (c == 'o')
			off = true;
		else
			goto usage;
	}
	if (optind != argc - 1 || (off && (has_h || has_l)) || has_h != has_l)
		goto usage;
	if (check_dir("retention", argv[optind]))
		return 1;
	if (off)
		return set("retention", argv[optind], AVFS_SPACE_RETAIN, NULL);
	if (!has_h)
		return show(argv[optind]);
	snprintf(text, sizeof(text), "%u %u", high, low);
	err = set("retention", argv[optind], AVFS_SPACE_RETAIN, text);
	return err ? err : show(argv[optind]);
usage:
	fprintf(stderr, "usage: avfs-admin retention DIR [--high PERCENT --low PERCENT | --off]\n"
		"  PERCENT: a whole number 1..100 (\"90%%\"), LOW below HIGH\n");
	return 2;
}

int admin_space(int argc, char **argv)
{
	return !strcmp(argv[0], "quota") ? cmd_quota(argc, argv) : cmd_retention(argc, argv);
}

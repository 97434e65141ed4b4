/*
 * avfsd — the AVFS daemon (SPEC §1, §9, §10): mounts a formatted device or image, serves it
 * through FUSE (fuse/) and to libavio clients (server.c), and sends every device request
 * through the engine (engine/). This file sets the parts up, wires the engine to the device
 * and the loop (loop.c) to the descriptors, runs the loop until unmounted or signalled, and
 * takes everything down in order. The work is in the modules; main only connects them.
 * Without --foreground it goes to the background as mount(8) expects of a helper: the parent
 * exits 0 only once the file system is mounted and served (1, with the reason on stderr, if
 * it could not be); then the lines go to the journal or syslog (log.c). Under systemd it says
 * READY=1 and STOPPING=1 (sd_notify).
 */
#include "config.h"
#include "cfgreserve.h"

#include "admin.h"
#include "clock.h"
#include "settings.h"
#include "disk.h"
#include "engine.h"
#include "fs.h"
#include "fsck.h"
#include "fsio.h"
#include "fuseops.h"
#include "hddmodel.h"
#include "lock.h"
#include "log.h"
#include "loop.h"
#include "rotpred.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef AVFSD_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#define NS 1000000000ll
#define LOOK_NS (NS / 2)	/* the loop wakes at least this often (clients, traces) */
#define FLASH_DEPTH 16		/* commands in flight on a non-rotational device (SPEC §5.6) */

struct avfsd {
	const char *dev_path, *mnt_path;
	struct avfsd_config cfg;
	struct avfs_disk *d;
	struct avfs_fsio *io;	/* the mount (its fs is the engine's) */
	struct avfs_engine *e;
	struct avfs_rotpred rotpred;	/* JIT / split on a real disk: the platter's phase */
	struct avfs_hdd *geom;	/* --disk-model's mechanics, for rotpred */
	bool predicting;
	struct avfs_loop *l;
	struct avfs_server *srv;
	struct avfs_fuse *fu;
	struct avfsd_admin_view view;
	int wdisk, wfuse, wsig;
	int sig_fd, lock_fd;
	bool exiting;
	int64_t now;
	int64_t wall_offset;	/* CLOCK_REALTIME - CLOCK_MONOTONIC, for file times */
	int64_t wall_at;	/* when it was last taken */
	int64_t retain_at;	/* the space rules' last periodic check */
};

/* ---- the engine's side: the device ---- */

static int ops_submit(void *ctx, const struct avfs_disk_req *r)
{
	struct avfsd *a = ctx;

	return avfs_disk_submit(a->d, r);
}

static void ops_trace(void *ctx, const struct avfs_trace_rec *r)
{
	struct avfsd *a = ctx;

	if (a->srv)
		avfs_server_trace(a->srv, r, a->now);
}

static void ops_committed(void *ctx, uint64_t n, int err)
{
	struct avfsd *a = ctx;

	if (a->fu)
		avfs_fuse_committed(a->fu, n, err);
}

static void ops_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	avfsd_log(level, "%s", msg);
}

/* Completions of the device, to the engine. */
static void reap(struct avfsd *a, int64_t now)
{
	struct avfs_disk_cqe c[16];
	int n;

	while ((n = avfs_disk_reap(a->d, c, 16)) > 0)
		for (int i = 0; i < n; i++)
			avfs_engine_complete(a->e, c[i].cookie, c[i].res, now);
}

/* ---- the loop's handlers ---- */

static void on_disk(void *ctx, int64_t now)
{
	struct avfsd *a = ctx;

	reap(a, now);
	avfs_loop_arm(a->l, a->wdisk, POLLIN);
}

static int64_t wall(struct avfsd *a, int64_t now)
{
	/* CLOCK_REALTIME for file times, read once a second at most: the loop's clock is the
	 * monotonic one, read once per iteration */
	if (!a->wall_at || now - a->wall_at > NS) {
		a->wall_offset = avfs_clock_realtime_ns() - now;
		a->wall_at = now;
	}
	return now + a->wall_offset;
}

/* The space rules' deletions (fuse/retain.c), one line each. */
static void retain_log(void *ctx, bool warning, const char *line)
{
	(void)ctx;
	avfsd_log(warning ? AVFSD_WARNING : AVFSD_INFO, "%s", line);
}

static void on_fuse(void *ctx, int64_t now)
{
	struct avfsd *a = ctx;
	int err = avfs_fuse_process(a->fu, now, wall(a, now));

	if (err == -ENODEV) {
		if (!a->exiting)
			avfsd_log(AVFSD_INFO, "unmounted: draining and committing");
		a->exiting = true;
		return;
	}
	avfs_loop_arm(a->l, a->wfuse, POLLIN);
}

static void on_signal(void *ctx, int64_t now)
{
	struct avfsd *a = ctx;
	struct signalfd_siginfo si;

	(void)now;
	while (read(a->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		avfsd_log(AVFSD_INFO, "signal %u: draining, committing, unmounting", si.ssi_signo);
		a->exiting = true;
	}
	avfs_loop_arm(a->l, a->wsig, POLLIN);
}

static void wrote(void *ctx, uint64_t ino)
{
	struct avfsd *a = ctx;

	if (a->fu)
		avfs_fuse_invalidate(a->fu, ino);
}

/* ---- set-up ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: avfsd [--foreground] [-o OPTION[,OPTION...]] [--socket PATH] [--config FILE]\n"
		"             [--disk-model NAME] [--backend NAME] [--allow-other] [--verbose]\n"
		"             [--set NAME=VALUE] DEVICE MOUNTPOINT\n"
		"  Mounts an AVFS file system (made by mkfs.avfs) and serves it through FUSE and to\n"
		"  libavio clients. SIGTERM, SIGINT, umount or fusermount3 -u: drain, commit, exit 0.\n"
		"  Without --foreground it returns once the file system is mounted (exit 0) or could\n"
		"  not be (exit 1, the reason on stderr), and logs to the journal or syslog.\n"
		"  -f, --foreground   stay in the foreground, logging to stderr (or the journal\n"
		"                     under a systemd service)\n"
		"  -o OPTIONS         mount options, as in fstab (avfsd(8)): allow_other,\n"
		"                     noallow_other, ro, rw, acl, noacl, socket=PATH, config=FILE,\n"
		"                     backend=NAME, disk_model=NAME, verbose, and nosuid, nodev,\n"
		"                     noexec, noatime...\n"
		"  -s, --sloppy       unknown -o options: a warning, not a failure (mount -s)\n"
		"  --socket PATH      client socket (default /run/avfs/NAME@DEVICE-NUMBERS.sock,\n"
		"                     unique per device; every file's user.avfs.socket names it)\n"
		"  --config FILE      scheduler settings (NAME=VALUE) and admission settings and\n"
		"                     quotas (docs/ADMIN.md), one per line, # comments\n"
		"  --disk-model NAME  service-time parameters of a named model instead of the\n"
		"                     superblock's (avfs-250g, barracuda-500g, st318437, ...)\n"
		"  --set NAME=VALUE   one scheduler or engine setting (avfs-sim --help lists them)\n"
		"  --backend NAME     how to drive the device (docs/ADMIN.md): uring (io_uring,\n"
		"                     O_DIRECT: image files, any block device), sg (SCSI commands\n"
		"                     over SG_IO: READ/WRITE(16) with FUA, SEEK(10) for the\n"
		"                     sub-seeks of split), nvme (NVMe passthrough on /dev/ngXnY),\n"
		"                     or auto (default: sg on a SCSI disk when split is set,\n"
		"                     io_uring otherwise)\n"
		"  --allow-other      let every user reach the mount (the default when root mounts;\n"
		"                     -o noallow_other keeps it to root)\n"
		"  -v, --verbose      debug lines too\n"
		"  -V, --version      the version\n");
}

/* One line on what the device is and how it is driven (the same facts avfs-admin status shows). */
static void log_disk(const struct avfsd *a)
{
	const struct avfs_disk_info *in = &a->d->info;
	const struct avfs_disk_ident *id = &a->d->ident;
	char who[200] = "", limit[48] = "";

	if (*id->transport)
		snprintf(who, sizeof(who), ", %s %s %s %s serial '%s'", id->transport, id->vendor,
			 id->product, id->firmware, id->serial);
	if (id->max_transfer)
		snprintf(limit, sizeof(limit), ", max transfer %u bytes", id->max_transfer);
	avfsd_log(AVFSD_INFO, "disk %s: backend %s%s, %llu bytes, lbs %u, %s%s%s, SEEK %s",
		  a->dev_path, id->backend, who, (unsigned long long)in->size, in->lbs,
		  in->rotational ? "rotational" : "non-rotational",
		  id->wce_known ? (id->wce ? ", write cache on" : ", write cache off") : "", limit,
		  in->has_seek ? "yes" : "no");
}

/* The device number of the mount at path, from /proc/self/mountinfo (the last mount there):
 * never stat() our own mount, it would wait on us. */
static uint64_t mount_dev(const char *path)
{
	char real[4096], line[8192];
	uint64_t dev = 0;
	FILE *f;

	if (!realpath(path, real))
		return 0;
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		char mp[4096];

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) == 3 && !strcmp(mp, real))
			dev = makedev(maj, min);
	}
	fclose(f);
	return dev;
}

/* The scheduler's model of the disk (SPEC §5.2): the superblock's, or a named model's part the
 * device is (its outer part when smaller: an emulated disk, hddemu --size) with its mechanics
 * for the predictor; the mode from the device; the predictor for JIT and split. */
static int engine_conf(struct avfsd *a, const char *model, struct avfs_engine_conf *ec)
{
	const struct avfs_super *sb = avfs_fs_super(a->io->fs);
	struct avfs_rotpred_params named = { 0 };
	struct avfs_sched_conf def;

	avfs_sched_conf_default(&def);
	ec->sched.model = (struct avfs_svc_model){ .tr_ns = (double)sb->rotation_ns,
						   .tk_ns = (double)sb->seek_avg_ns,
						   .dmax = (double)sb->rate_max,
						   .dmin = (double)sb->rate_min,
						   .lmax = a->d->info.size };
	if (model && avfs_rotpred_named(model, a->d->info.size, &ec->sched.model, &named,
					&a->geom)) {
		avfsd_log(AVFSD_ERROR, "--disk-model %s: not a rotating disk model (see avfs-sim "
			  "--help for the names)", model);
		return -EINVAL;
	}
	/* admission's round model: the named model's seek curve and zone rates (without a name,
	 * derived from the service-time model) */
	if (model)
		(void)avfs_sweep_disk_named(&ec->admit.disk, model, a->d->info.size);
	if (ec->sched.model.dmax <= 0 || ec->sched.model.dmin <= 0) {
		ec->sched.model = def.model;
		ec->sched.model.lmax = a->d->info.size;
	}
	ec->sched.rotational = a->d->info.rotational || !a->d->info.is_blockdev;
	if (!ec->sched.rotational && !a->cfg.depth_set)
		ec->sched.depth = FLASH_DEPTH;
	/* papers/003 §3.2: the platter, predicted (JIT, split, order=satf) */
	if (ec->sched.jit || ec->sched.split_bytes || ec->sched.satf) {
		struct avfs_rotpred_params rp = named;

		if (!model)
			avfs_rotpred_params_from_model(&ec->sched.model, &rp);
		if (avfs_rotpred_init(&a->rotpred, &rp)) {
			avfsd_log(AVFSD_ERROR, "jit/split/satf: the disk model has no rotation to "
				  "predict");
			return -EINVAL;
		}
		ec->sched.pred = avfs_rotpred_predictor(&a->rotpred);
		a->predicting = true;
	}
	ec->lbs = a->d->info.lbs;
	return 0;
}

static int quotas(struct avfsd *a)
{
	for (unsigned i = 0; i < a->cfg.nq; i++) {
		int err = avfs_admit_set_quota(avfs_engine_admit(a->e), a->cfg.q[i].uid,
					       a->cfg.q[i].rate, a->cfg.q[i].streams);

		if (err)
			return err;
	}
	return 0;
}

static int watch(struct avfsd *a, int fd, avfs_loop_fn fn, int *id)
{
	*id = avfs_loop_add(a->l, fd, fn, a);
	return *id < 0 ? *id : avfs_loop_arm(a->l, *id, POLLIN);
}

/* The checker's read-only pass over what the mount loaded (fs/fsck.c): avfsd serves no image
 * that fsck.avfs -n would report damaged. 0, or 1 (refused, said). */
static int trusted(struct avfsd *a)
{
	struct avfs_fsck_report r;
	int err = avfs_fsck_check(a->io->fs, 0, &r);

	if (!err && r.errors) {
		avfsd_log(AVFSD_ERROR, "%s is damaged (%llu error%s%s%s): refusing to mount it; run "
			  "fsck.avfs -y %s", a->dev_path, (unsigned long long)r.errors,
			  r.errors == 1 ? "" : "s", r.nfindings ? ", the first: " : "",
			  r.nfindings ? r.findings[0] : "", a->dev_path);
		err = 1;
	} else if (err) {
		avfsd_log(AVFSD_ERROR, "checking %s failed: %s", a->dev_path, strerror(-err));
		err = 1;
	}
	avfs_fsck_report_free(&r);
	return err;
}

/* The default socket: /run/avfs/NAME@MAJ:MIN.sock for a block device (its device number),
 * /run/avfs/NAME@MAJ:MIN:INO.sock for an image (the file system and inode holding it), so that
 * two images of one name in two folders get two sockets. NAME is shortened to fit sun_path. */
static void default_socket(const char *dev, char *buf, size_t len)
{
	const char *base = strrchr(dev, '/');
	char ids[64] = "";
	struct stat st;

	base = base ? base + 1 : dev;
	if (!stat(dev, &st) && S_ISBLK(st.st_mode))
		snprintf(ids, sizeof(ids), "@%u:%u", major(st.st_rdev), minor(st.st_rdev));
	else if (!stat(dev, &st))
		snprintf(ids, sizeof(ids), "@%u:%u:%llu", major(st.st_dev), minor(st.st_dev),
			 (unsigned long long)st.st_ino);
	snprintf(buf, len, "/run/avfs/%.40s%s.sock", base, ids);
}

/* Everything between parsing and the loop. 0, or 1 (a failure, said). */
static int start(struct avfsd *a, const struct avfsd_mount_opts *m, bool allow_other)
{
	const char *model = m->disk_model, *sock = m->socket;
	struct avfs_engine_ops ops = { .ctx = a, .submit = ops_submit, .trace = ops_trace,
				       .committed = ops_committed, .log = ops_log };
	struct avfs_mount_report rep;
	struct avfs_engine_conf ec = a->cfg.ec;
	char why[512] = "", sockbuf[108];
	sigset_t mask;
	int err;

	/* one daemon per device (disk/lock.h: mkfs.avfs and fsck.avfs -y take the same lock),
	 * held while we live */
	a->lock_fd = avfs_disk_lock(a->dev_path, why, sizeof(why));
	if (a->lock_fd < 0) {
		avfsd_log(AVFSD_ERROR, "%s", why);
		return 1;
	}
	err = avfs_disk_open(a->dev_path, m->backend, (ec.sched.split_bytes ? AVFS_OPEN_SEEK : 0) |
			     (m->ro ? AVFS_OPEN_RDONLY : 0), &a->d, why, sizeof(why));
	if (err) {
		avfsd_log(AVFSD_ERROR, "%s", why);
		return 1;
	}
	log_disk(a);
	if (ec.sched.split_bytes && !a->d->info.has_seek) {
		avfsd_log(AVFSD_ERROR, "split needs SEEK commands, which the %s backend does not give "
			  "(--backend sg on a SCSI disk does)", a->d->ident.backend);
		return 1;
	}
	/* orphans are freed only once the check below trusts the image */
	err = avfs_fsio_mount(a->d, (m->ro ? AVFS_MOUNT_RDONLY : 0) | (m->noacl ? AVFS_MOUNT_NOACL : 0) |
			      AVFS_MOUNT_KEEP_ORPHANS, &a->io,
			      &rep, why, sizeof(why));
	if (err) {
		avfsd_log(AVFSD_ERROR, "cannot mount %s: %s", a->dev_path, why);
		return 1;
	}
	if (trusted(a))
		return 1;
	if (!m->ro) {
		int64_t n = avfs_fsio_free_orphans(a->io);

		if (n < 0) {
			avfsd_log(AVFSD_ERROR, "cannot mount %s: freeing orphan inodes failed: %s",
				  a->dev_path, strerror((int)-n));
			return 1;
		}
		rep.orphans_freed = (uint64_t)n;
	}
	avfsd_log(AVFSD_INFO, "mounted %s: journal replayed %llu transactions, %llu blocks repaired "
		  "from the backup region", a->dev_path, (unsigned long long)rep.replayed_txn,
		  (unsigned long long)rep.repaired_primary);
	if (rep.rewrite_failed)
		avfsd_log(AVFSD_WARNING, "%llu metadata block%s unwritable in the primary region: served "
			  "from the backup region", (unsigned long long)rep.rewrite_failed,
			  rep.rewrite_failed == 1 ? "" : "s");
	if (rep.orphans_freed)
		avfsd_log(AVFSD_INFO, "freed %llu orphan inodes (files unlinked while open before the "
			  "last stop)", (unsigned long long)rep.orphans_freed);
	if (engine_conf(a, model, &ec))
		return 1;
	a->now = avfs_clock_ns();
	ec.wall_offset_ns = wall(a, a->now) - a->now;
	err = avfs_engine_new(&a->e, &ec, a->io->fs, a->d->info.size, &ops, a->now, why,
			      sizeof(why));
	if (!err && (err = quotas(a)))
		snprintf(why, sizeof(why), "quotas: %s", strerror(-err));
	if (err) {
		avfsd_log(AVFSD_ERROR, "%s", why);
		return 1;
	}
	avfsd_cfg_reserve(a->e, a->io->fs, &a->cfg, m->config ? m->config : "--set", a->now);
	if (!sock) {
		mkdir("/run/avfs", 0755);	/* where no tmpfiles.d made it */
		default_socket(a->dev_path, sockbuf, sizeof(sockbuf));
		sock = sockbuf;
	}
	err = avfs_loop_new(&a->l, 4 + 2 * 1024);
	if (err) {
		avfsd_log(AVFSD_ERROR, "io_uring setup failed: %s", strerror(-err));
		return 1;
	}
	a->view = (struct avfsd_admin_view){ .device = a->dev_path, .mountpoint = a->mnt_path,
					     .since = a->now, .disk = a->d,
					     .rotpred = a->predicting ? &a->rotpred : NULL };
	{
		struct avfs_server_conf sc = { .path = sock, .wrote = wrote, .wrote_ctx = a,
					       .view = &a->view, .mountpoint = a->mnt_path,
					       .lim = &a->cfg.lim };
		struct avfs_fuse_conf fc = { .mountpoint = a->mnt_path, .allow_other = allow_other,
					     .ro = m->ro, .noacl = m->noacl,
					     .fsname = a->dev_path,
					     .options = m->fuse, .socket = sock,
					     .atime = m->atime >= 0 ? m->atime : a->cfg.atime,
					     .close = a->cfg.close, .log = retain_log };

		err = avfs_fuse_new(&a->fu, a->e, a->io->fs, &fc, why, sizeof(why));
		if (err) {
			avfsd_log(AVFSD_ERROR, "%s", why);
			return 1;
		}
		sc.mnt_dev = mount_dev(a->mnt_path);
		err = avfs_server_new(&a->srv, a->l, a->e, a->io->fs, &sc, why, sizeof(why));
		if (err) {
			avfsd_log(AVFSD_ERROR, "%s", why);
			return 1;
		}
		a->view.socket = avfs_server_path(a->srv);
		a->view.retain = avfs_fuse_retain_stats(a->fu);
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	a->sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (a->sig_fd < 0 || watch(a, avfs_fuse_fd(a->fu), on_fuse, &a->wfuse) ||
	    watch(a, a->sig_fd, on_signal, &a->wsig) ||
	    watch(a, avfs_disk_poll_fd(a->d), on_disk, &a->wdisk)) {
		avfsd_log(AVFSD_ERROR, "cannot watch the daemon's descriptors");
		return 1;
	}
	avfsd_log(AVFSD_INFO, "serving %s on %s%s%s, clients on %s", a->dev_path, a->mnt_path,
		  m->ro ? " read-only" : "", allow_other ? " for every user" : "",
		  avfs_server_path(a->srv));
	return 0;
}

/* The loop: one clock read an iteration (avfs_loop_run_once), handed down. It ends once
 * unmounted or signalled and everything is drained and committed. */
static int run(struct avfsd *a)
{
	int64_t now = a->now;

	for (;;) {
		int64_t until = now + LOOK_NS, t = avfs_engine_wake(a->e),
			s = avfs_server_tick(a->srv, now);
		unsigned queued;

		if (t && t < until)
			until = t;
		if (s && s < until)
			until = s;
		now = avfs_loop_run_once(a->l, until);
		if (now < 0) {
			avfsd_log(AVFSD_ERROR, "event loop: %s", strerror((int)-now));
			return 1;
		}
		a->now = now;
		reap(a, now);	/* completions that raced with the poll */
		avfs_engine_tick(a->e, now);
		if (!a->exiting && now - a->retain_at >= NS) {	/* retention: once a second */
			a->retain_at = now;
			avfs_fuse_retain_tick(a->fu, now, wall(a, now));
		}
		if (!a->exiting)
			continue;
		avfs_engine_ra_stop(a->e, now);	/* (pieces read ahead would keep it waiting) */
		/* drained: the last commit is on disk (none can be after one failed) */
		avfs_engine_commits(a->e, &queued);
		if (avfs_engine_failure(a->e)) {
			if (avfs_engine_idle(a->e))
				return 0;
		} else if (!queued && avfs_fs_dirty_blocks(a->io->fs))
			avfs_engine_commit(a->e, now);
		else if (avfs_engine_idle(a->e))
			return 0;
	}
}

/* Take down what start() set up (after a failed start, or what a clean stop left). */
static void stop(struct avfsd *a)
{
	avfs_server_free(a->srv);
	avfs_fuse_free(a->fu);
	avfs_engine_free(a->e);
	avfs_loop_free(a->l);
	if (a->io)
		avfs_fsio_abandon(a->io);
	avfs_hdd_free(a->geom);
	avfs_disk_close(a->d);
	if (a->sig_fd >= 0)
		close(a->sig_fd);
}

/* What a daemon tells systemd (a no-op where no systemd listens: no $NOTIFY_SOCKET). */
static void notify(const char *state)
{
#ifdef AVFSD_SYSTEMD
	sd_notify(0, state);
#else
	(void)state;
#endif
}

/*
 * Into the background, before any ring exists (rings belong to their creator): the parent
 * waits on a pipe until the child says the mount is served ('R', exit 0) or closes it (the
 * child's exit status). The child gets a session of its own; returns the pipe's write end.
 */
static int background(void)
{
	int p[2], status;
	char c;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		avfsd_log(AVFSD_ERROR, "cannot go to the background: %s", strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		avfsd_log(AVFSD_ERROR, "cannot go to the background: %s", strerror(errno));
		exit(1);
	}
	if (pid) {
		close(p[1]);
		if (read(p[0], &c, 1) == 1 && c == 'R')
			_exit(0);
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
			_exit(WEXITSTATUS(status) ? WEXITSTATUS(status) : 1);
		_exit(1);
	}
	close(p[0]);
	setsid();
	if (chdir("/"))	/* the paths are absolute by now */
		avfsd_log(AVFSD_WARNING, "cannot change to /: %s", strerror(errno));
	return p[1];
}

/* Served: the parent may go, and stderr with it; the log moves to the journal or syslog. */
static void detach(int ready_fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	if (write(ready_fd, "R", 1) != 1)
		avfsd_log(AVFSD_WARNING, "the parent went before the mount was served");
	close(ready_fd);
	avfsd_log_echo(-1);
}

/* The device and mount point as absolute paths (the daemon changes to / in the background),
 * with what is wrong with them said. 0, or the exit status. */
static int paths(struct avfsd *a, const char *dev, const char *mnt, char *rdev, char *rmnt)
{
	struct stat st;

	if (!realpath(dev, rdev) || stat(rdev, &st)) {
		avfsd_log(AVFSD_ERROR, "%s: %s", dev, errno == ENOENT ? "no such device or image "
			  "(mkfs.avfs --size SIZE makes an image)" : strerror(errno));
		return 1;
	}
	if (S_ISREG(st.st_mode) && !st.st_size) {
		avfsd_log(AVFSD_ERROR, "%s is empty (0 bytes), not an AVFS file system: format it "
			  "first (mkfs.avfs --size SIZE %s)", dev, dev);
		return 1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode) && !S_ISCHR(st.st_mode)) {
		avfsd_log(AVFSD_ERROR, "%s is not a block device or image file", dev);
		return 1;
	}
	if (!realpath(mnt, rmnt) || stat(rmnt, &st) || !S_ISDIR(st.st_mode)) {
		avfsd_log(AVFSD_ERROR, "mount point %s is not a directory", mnt);
		return 2;
	}
	a->dev_path = rdev;
	a->mnt_path = rmnt;
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_SOCKET = 256, OPT_CONFIG, OPT_MODEL, OPT_BACKEND, OPT_ALLOW_OTHER, OPT_SET };
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "sloppy", no_argument, NULL, 's' },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "disk-model", required_argument, NULL, OPT_MODEL },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "allow-other", no_argument, NULL, OPT_ALLOW_OTHER },
		{ "verbose", no_argument, NULL, 'v' },
		{ "set", required_argument, NULL, OPT_SET },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct avfsd a = { .sig_fd = -1, .lock_fd = -1 };
	struct avfsd_mount_opts m = { .allow_other = -1, .atime = -1 };
	char *olist[16];	/* the -o lists, parsed after the flags */
	unsigned nolist = 0;
	bool foreground = false, allow_other;
	char why[512], rdev[PATH_MAX], rmnt[PATH_MAX];
	int c, ret, ready_fd = -1;

	/* clients' large buffers (messages, replies, copies of up to 16 MiB) straight from mmap
	 * and back to the system when freed: the daemon's RSS follows what it holds, which the
	 * client limits bound (clientlim.h), not malloc's high-water mark (its threshold would
	 * otherwise rise past 1 MiB after the first such free and keep freed copies in the heap) */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	avfsd_config_default(&a.cfg);
	while ((c = getopt_long(argc, argv, "fo:svhV", opts, NULL)) != -1) {
		switch (c) {
		case 'f': foreground = true; break;
		case 'o':
			if (nolist == sizeof(olist) / sizeof(olist[0])) {
				avfsd_log(AVFSD_ERROR, "-o: more than %u lists: join them with commas",
					  nolist);
				return 2;
			}
			olist[nolist++] = optarg;
			break;
		case 's': m.sloppy = true; break;
		case OPT_SOCKET: m.socket = optarg; break;
		case OPT_CONFIG: m.config = optarg; break;
		case OPT_MODEL: m.disk_model = optarg; break;
		case OPT_BACKEND:
			if (avfs_backend_parse(optarg, &m.backend)) {
				avfsd_log(AVFSD_ERROR, "--backend %s: one of auto, uring, sg, nvme",
					  optarg);
				return 2;
			}
			break;
		case OPT_ALLOW_OTHER: m.allow_other = 1; break;
		case 'v': m.verbose = true; break;
		case OPT_SET:
			if (avfsd_config_set(&a.cfg, optarg, why, sizeof(why))) {
				avfsd_log(AVFSD_ERROR, "%s", why);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("avfsd %s\n", AVFS_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	/* -o after the flags, whatever the order: -s may come after it (mount(8) order) */
	for (unsigned i = 0; i < nolist; i++) {
		/* a copy, cut in place and kept for the process's life (m points into it); argv
		 * stays as it was, for ps */
		static char copy[16][2048];

		if ((size_t)snprintf(copy[i], sizeof(copy[i]), "%s", olist[i]) >= sizeof(copy[i])) {
			avfsd_log(AVFSD_ERROR, "-o: a list longer than %zu bytes", sizeof(copy[i]) - 1);
			return 2;
		}
		if (avfsd_mount_options(&m, copy[i], why, sizeof(why))) {
			avfsd_log(AVFSD_ERROR, "%s", why);
			return 2;
		}
		if (why[0])
			avfsd_log(AVFSD_WARNING, "%s", why);
	}
	if (m.verbose)
		avfsd_log_level(AVFSD_DEBUG);
	if (optind + 2 != argc) {
		avfsd_log(AVFSD_ERROR, "%s", optind + 2 > argc ? "say the DEVICE and the MOUNTPOINT" :
			  "one DEVICE and one MOUNTPOINT only");
		usage(stderr);
		return 2;
	}
	ret = paths(&a, argv[optind], argv[optind + 1], rdev, rmnt);
	if (ret)
		return ret;
	if (m.config && avfsd_config_file(&a.cfg, m.config, why, sizeof(why))) {
		avfsd_log(AVFSD_ERROR, "%s", why);
		return 2;
	}
	/* root's mounts serve every user (the kernel checks each against the modes) */
	allow_other = m.allow_other >= 0 ? m.allow_other : geteuid() == 0;
	if (foreground) {
		avfsd_log_open(false, a.dev_path);
	} else {
		ready_fd = background();
		/* from here on the journal or syslog; errors on stderr too until mounted */
		avfsd_log(AVFSD_DEBUG, "in the background, logging to %s",
			  avfsd_log_open(true, a.dev_path));
		avfsd_log_echo(AVFSD_WARNING);
	}
	ret = start(&a, &m, allow_other);
	if (!ret) {
		char state[600];

		if (ready_fd >= 0)
			detach(ready_fd);
		snprintf(state, sizeof(state), "READY=1\nSTATUS=serving %s on %s", a.dev_path,
			 a.mnt_path);
		notify(state);
		ret = run(&a);
		notify("STOPPING=1");
	}
	if (!ret) {
		/* drained and committed: leave an empty journal and a clean mount */
		avfs_server_free(a.srv);
		a.srv = NULL;
		avfs_fuse_free(a.fu);
		a.fu = NULL;
		if (avfs_engine_failure(a.e)) {
			/* read-only since a commit failed: nothing more is written */
			avfsd_log(AVFSD_ERROR, "stopped read-only (%s): what changed after the last "
				  "commit is lost; the next mount replays the journal (check with "
				  "fsck.avfs -n)", avfs_engine_failure(a.e));
			ret = 1;
		}
		avfs_engine_free(a.e);
		a.e = NULL;
		if (!ret) {
			ret = avfs_fsio_unmount(a.io) ? 1 : 0;
			a.io = NULL;
			if (ret)
				avfsd_log(AVFSD_ERROR, "final commit failed");
			else
				avfsd_log(AVFSD_INFO, "clean shutdown of %s", a.dev_path);
		}
	}
	stop(&a);
	return ret;
}

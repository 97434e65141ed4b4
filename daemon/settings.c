/*
 * settings.c — avfsd's settings parsed and checked: NAME=VALUE lines go to the engine's settings
 * table (avfs_engine_conf_set, then the scheduler's), the admission lines (be-floor,
 * isolation, io, quota) to the admission configuration and the quota list.
 */
#include "settings.h"

#include "fs.h"	/* enum avfs_atime */
#include "fuseops.h"	/* enum avfs_fuse_close */
#include "proto.h"
#include "units.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void avfsd_config_default(struct avfsd_config *c)
{
	memset(c, 0, sizeof(*c));
	avfs_engine_conf_default(&c->ec);
	avfs_server_limits_default(&c->lim);
}

int avfsd_config_set(struct avfsd_config *c, const char *nv, char *why, size_t whylen)
{
	char name[64];
	const char *eq = strchr(nv, '=');
	int err;

	if (!eq || eq == nv || (size_t)(eq - nv) >= sizeof(name)) {
		snprintf(why, whylen, "setting '%s': NAME=VALUE", nv);
		return -EINVAL;
	}
	memcpy(name, nv, (size_t)(eq - nv));
	name[eq - nv] = 0;
	/* the FUSE front end's own: the mount's access-time rule, what a close waits for */
	if (!strcmp(name, "atime")) {
		static const char *const rules[] = { [AVFS_ATIME_RELATIME] = "relatime",
			[AVFS_ATIME_STRICT] = "strictatime", [AVFS_ATIME_NO] = "noatime" };

		for (int i = 0; i < 3; i++)
			if (!strcmp(eq + 1, rules[i])) {
				c->atime = i;
				return 0;
			}
		snprintf(why, whylen, "atime: '%s' is none of relatime, strictatime, noatime", eq + 1);
		return -EINVAL;
	}
	if (!strcmp(name, "close")) {
		static const char *const modes[] = { [AVFS_CLOSE_SYNC] = "sync",
			[AVFS_CLOSE_DURABLE] = "durable", [AVFS_CLOSE_ASYNC] = "async" };

		for (int i = 0; i < 3; i++)
			if (!strcmp(eq + 1, modes[i])) {
				c->close = i;
				return 0;
			}
		snprintf(why, whylen, "close: '%s' is none of sync, durable, async", eq + 1);
		return -EINVAL;
	}
	err = avfs_engine_conf_set(&c->ec, name, eq + 1, why, whylen);
	if (!err)
		c->depth_set |= !strcmp(name, "depth");
	return err;
}

/* A rate (powers of 1000) or, binary, a size (powers of 1024). */
static int number(const char *s, bool binary, uint64_t *out)
{
	double v;
	int err = binary ? avfs_parse_size(s, out) : avfs_parse_rate(s, false, &v);

	if (!err && !binary) {
		if (v > 1e18)
			return -ERANGE;
		*out = (uint64_t)v;
	}
	return err;
}

/* A share: "25%" or "0.25", within 0..1. 0 or -EINVAL. */
static int share(const char *s, double *out)
{
	char *end;
	double f = strtod(s, &end);

	if (end == s)
		return -EINVAL;
	if (*end == '%')
		f /= 100, end++;
	if (*end || !(f >= 0 && f <= 1))
		return -EINVAL;
	*out = f;
	return 0;
}

/* A line about clients (struct avfs_server_limits): 0 (taken, or not one: *taken false), or
 * -EINVAL with why. */
static int client_line(struct avfs_server_limits *l, char **tok, int n, bool *taken, char *why,
		       size_t whylen)
{
	uint64_t v;

	*taken = true;
	if (!strcmp(tok[0], "clients-per-uid") && n == 2) {
		if (avfs_parse_uint(tok[1], &v) || !v || v > 1024 - 32) {
			snprintf(why, whylen, "clients-per-uid: '%s' is not a count from 1 to 992",
				 tok[1]);
			return -EINVAL;
		}
		l->clients_per_uid = (uint32_t)v;
		return 0;
	}
	if ((!strcmp(tok[0], "client-memory") || !strcmp(tok[0], "server-memory")) && n == 2) {
		/* a client must be able to hold a largest message and a largest reply */
		if (number(tok[1], true, &v) || v < (40ull << 20) || v > (1ull << 40)) {
			snprintf(why, whylen, "%s: '%s' is not a size from 40M to 1T", tok[0],
				 tok[1]);
			return -EINVAL;
		}
		*(tok[0][0] == 'c' ? &l->client_mem : &l->server_mem) = v;
		return 0;
	}
	if (!strcmp(tok[0], "detached-quota") && n == 2 && !strcmp(tok[1], "off")) {
		l->detached_streams = UINT32_MAX;
		l->detached_share = 1;
		return 0;
	}
	if (!strcmp(tok[0], "detached-quota") && n >= 2) {
		uint32_t streams = l->detached_streams;
		double sh = l->detached_share;

		for (int i = 1; i < n; i++) {
			if (!strncmp(tok[i], "streams=", 8) && !avfs_parse_uint(tok[i] + 8, &v) &&
			    v < UINT32_MAX) {
				streams = (uint32_t)v;
				continue;
			}
			if (!strncmp(tok[i], "share=", 6) && !share(tok[i] + 6, &sh))
				continue;
			snprintf(why, whylen, "detached-quota: '%s' is neither streams=N nor "
				 "share=PERCENT (or say off)", tok[i]);
			return -EINVAL;
		}
		l->detached_streams = streams;
		l->detached_share = sh;
		return 0;
	}
	if (!strcmp(tok[0], "admin-group") && n == 2) {
		struct group *g = getgrnam(tok[1]);

		if (g) {
			l->admin_gid = g->gr_gid;
		} else if (!avfs_parse_uint(tok[1], &v) && v < AVFS_SERVER_NO_GID) {
			l->admin_gid = (uint32_t)v;
		} else {
			snprintf(why, whylen, "admin-group: '%s' is neither a group nor a gid",
				 tok[1]);
			return -EINVAL;
		}
		return 0;
	}
	*taken = false;
	return 0;
}

/* "reserve PATH rate=R buffer=B read|write [uid=U] [io=S]": checked here, admitted at start
 * (cfgreserve.c). 0 or -EINVAL with why. */
static int reserve_line(struct avfsd_config *c, char **tok, int n, char *why, size_t whylen)
{
	struct avfsd_reserve r = { 0 };
	bool dir_said = false;
	uint64_t v;

	if (n < 5 || tok[1][0] != '/' || strlen(tok[1]) >= sizeof(r.path)) {
		snprintf(why, whylen, "reserve: say 'reserve PATH rate=R buffer=B read|write "
			 "[uid=U] [io=S]', PATH from the file system's root (/cam1)");
		return -EINVAL;
	}
	snprintf(r.path, sizeof(r.path), "%s", tok[1]);
	for (int i = 2; i < n; i++) {
		if (!strncmp(tok[i], "rate=", 5) && !number(tok[i] + 5, false, &v) && v) {
			r.rate = v;
		} else if (!strncmp(tok[i], "buffer=", 7) && !number(tok[i] + 7, true, &v) && v &&
			   v <= (16ull << 30)) {
			r.buffer = v;
		} else if (!strncmp(tok[i], "io=", 3) && !number(tok[i] + 3, true, &v) && v &&
			   v % 4096 == 0 && v <= AVFS_PROTO_MAX_IO) {
			r.io = (uint32_t)v;
		} else if (!strncmp(tok[i], "uid=", 4) && !avfs_parse_uint(tok[i] + 4, &v) &&
			   v < UINT32_MAX) {
			r.uid_only = true;
			r.uid = (uint32_t)v;
		} else if (!dir_said && (!strcmp(tok[i], "read") || !strcmp(tok[i], "write"))) {
			dir_said = true;
			r.write = tok[i][0] == 'w';
		} else {
			snprintf(why, whylen, "reserve %.60s: '%.40s' is none of rate=BYTES/S (> 0), "
				 "buffer=SIZE (up to 16G), read, write, uid=N, io=SIZE", r.path, tok[i]);
			return -EINVAL;
		}
	}
	if (!r.rate || !r.buffer || !dir_said) {
		snprintf(why, whylen, "reserve %.100s: rate=, buffer= and read or write are needed",
			 r.path);
		return -EINVAL;
	}
	if (c->nrsv == AVFSD_RESERVATIONS) {
		snprintf(why, whylen, "reserve: more than %u reservations", c->nrsv);
		return -EINVAL;
	}
	c->rsv[c->nrsv++] = r;
	return 0;
}

/* An admission line: 0 (taken, or not one: *admission false), or -EINVAL with why. */
static int admission_line(struct avfsd_config *c, char *line, bool *admission, char *why,
			  size_t whylen)
{
	struct avfs_admit_conf *ac = &c->ec.admit;
	char *tok[8], *save = NULL;
	int n = 0;
	uint64_t v;

	*admission = false;
	for (char *t = strtok_r(line, " \t", &save); t && n < 8; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	if (!n || strchr(tok[0], '='))
		return 0;	/* empty, or a setting NAME=VALUE */
	*admission = true;
	{
		bool taken;
		int err = client_line(&c->lim, tok, n, &taken, why, whylen);

		if (err || taken)
			return err;
	}
	if (!strcmp(tok[0], "be-floor") && n == 2) {
		char *end;
		double f = strtod(tok[1], &end);

		if (*end == '%')
			f /= 100, end++;
		if (*end || end == tok[1] || f < 0 || f >= 0.9) {
			snprintf(why, whylen, "be-floor: '%s' is not a share from 0 to 90%%", tok[1]);
			return -EINVAL;
		}
		ac->be_floor = f;
		return 0;
	}
	if (!strcmp(tok[0], "isolation") && n == 2 &&
	    (!strcmp(tok[1], "on") || !strcmp(tok[1], "off"))) {
		ac->isolation = !strcmp(tok[1], "on");
		return 0;
	}
	if (!strcmp(tok[0], "admission") && n == 2 &&
	    (!strcmp(tok[1], "sweep") || !strcmp(tok[1], "fahrrad"))) {
		ac->test = strcmp(tok[1], "sweep") ? AVFS_ADMIT_FAHRRAD : AVFS_ADMIT_SWEEP;
		return 0;
	}
	if (!strcmp(tok[0], "io") && n == 2) {
		if (number(tok[1], true, &v) || !v || v % 4096 || v > AVFS_PROTO_MAX_IO) {
			snprintf(why, whylen, "io: '%s' is not a multiple of 4K up to 16M", tok[1]);
			return -EINVAL;
		}
		ac->default_io = (uint32_t)v;
		return 0;
	}
	if (!strcmp(tok[0], "reserve"))
		return reserve_line(c, tok, n, why, whylen);
	if (!strcmp(tok[0], "quota") && n >= 3) {
		uint64_t uid = AVFS_ADMIT_ANY_UID, rate = 0, streams = 0;

		if (strcmp(tok[1], "default") &&
		    (strncmp(tok[1], "uid=", 4) || avfs_parse_uint(tok[1] + 4, &uid) ||
		     uid >= AVFS_ADMIT_ANY_UID)) {
			snprintf(why, whylen, "quota: say 'default' or 'uid=N', not '%s'", tok[1]);
			return -EINVAL;
		}
		for (int i = 2; i < n; i++) {
			if (!strncmp(tok[i], "rate=", 5) && !number(tok[i] + 5, false, &rate))
				continue;
			if (!strncmp(tok[i], "streams=", 8) &&
			    !avfs_parse_uint(tok[i] + 8, &streams) && streams < UINT32_MAX)
				continue;
			snprintf(why, whylen, "quota: '%s' is neither rate=BYTES/S nor streams=N",
				 tok[i]);
			return -EINVAL;
		}
		if (c->nq == AVFSD_QUOTAS) {
			snprintf(why, whylen, "quota: more than %u quotas", c->nq);
			return -EINVAL;
		}
		c->q[c->nq++] = (struct avfsd_quota){ .uid = (uint32_t)uid, .rate = rate,
						      .streams = (uint32_t)streams };
		return 0;
	}
	snprintf(why, whylen, "unknown setting '%s' (admission sweep|fahrrad, be-floor, "
		 "isolation, io, quota, reserve, clients-per-uid, client-memory, server-memory, "
		 "detached-quota, admin-group, or NAME=VALUE)", tok[0]);
	return -EINVAL;
}

int avfsd_config_file(struct avfsd_config *c, const char *path, char *why, size_t whylen)
{
	FILE *f = fopen(path, "r");
	char line[512], msg[200];
	unsigned no = 0;
	int err = 0;

	if (!f) {
		err = -errno;
		snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
		return err;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t"), copy[512];
		bool admission;

		no++;
		s[strcspn(s, "\r\n#")] = 0;
		snprintf(copy, sizeof(copy), "%s", s);
		err = admission_line(c, copy, &admission, msg, sizeof(msg));
		if (!err && c->nrsv && !c->rsv[c->nrsv - 1].line)
			c->rsv[c->nrsv - 1].line = no;	/* a reserve line: where, for the log */
		if (!err && !admission && *s) {
			s[strcspn(s, " \t")] = 0;	/* NAME=VALUE, trailing blanks dropped */
			err = avfsd_config_set(c, s, msg, sizeof(msg));
		}
		if (err)
			snprintf(why, whylen, "%s:%u: %s", path, no, msg);
	}
	fclose(f);
	return err;
}

/* ---- -o: mount options ---- */

/* Passed to FUSE as they are: the kernel's generic mount flags that libfuse knows. */
static const char *const fuse_generic[] = {
	"nosuid", "suid", "nodev", "dev", "noexec", "exec", "noatime", "atime", "nodiratime",
	"diratime", "relatime", "norelatime", "strictatime", "lazytime", "nolazytime", "sync",
	"async", "dirsync", NULL,
};

/* Kept by mount(8), systemd or fstab for themselves; nothing to do here. */
static const char *const ignored[] = {
	"defaults", "auto", "noauto", "nofail", "user", "users", "nouser", "owner", "group",
	"_netdev", "comment", "loop", "nobootwait", "bg", "fg", NULL,
};

static bool listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return true;
	return false;
}

static void add_fuse(struct avfsd_mount_opts *m, const char *opt)
{
	size_t n = strlen(m->fuse);

	snprintf(m->fuse + n, sizeof(m->fuse) - n, "%s%s", n ? "," : "", opt);
}

/* name=value: value, or NULL when opt is not name=... */
static const char *value_of(const char *opt, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(opt, name, n) && opt[n] == '=' ? opt + n + 1 : NULL;
}

static int option(struct avfsd_mount_opts *m, char *opt, char *why, size_t whylen)
{
	const char *v;

	if (!*opt || listed(ignored, opt) || !strncmp(opt, "x-", 2) || value_of(opt, "comment") ||
	    value_of(opt, "uhelper"))
		return 0;
	if (listed(fuse_generic, opt)) {
		add_fuse(m, opt);
		if (!strcmp(opt, "noatime"))
			m->atime = AVFS_ATIME_NO;
		else if (!strcmp(opt, "strictatime"))
			m->atime = AVFS_ATIME_STRICT;
		else if (!strcmp(opt, "relatime") || !strcmp(opt, "atime"))
			m->atime = AVFS_ATIME_RELATIME;
		return 0;
	}
	if (!strcmp(opt, "allow_other") || !strcmp(opt, "noallow_other")) {
		m->allow_other = opt[0] == 'a';
	} else if (!strcmp(opt, "default_permissions")) {
		/* always on: the kernel checks permissions against the modes */
	} else if (!strcmp(opt, "ro") || !strcmp(opt, "rw")) {
		m->ro = opt[1] == 'o';
	} else if (!strcmp(opt, "acl") || !strcmp(opt, "noacl")) {
		m->noacl = opt[0] == 'n';
	} else if (!strcmp(opt, "verbose")) {
		m->verbose = true;
	} else if ((v = value_of(opt, "socket")) && *v) {
		m->socket = v;
	} else if ((v = value_of(opt, "config")) && *v) {
		m->config = v;
	} else if (((v = value_of(opt, "disk_model")) || (v = value_of(opt, "disk-model"))) && *v) {
		m->disk_model = v;
	} else if ((v = value_of(opt, "backend"))) {
		if (avfs_backend_parse(v, &m->backend)) {
			snprintf(why, whylen, "-o backend=%s: one of auto, uring, sg, nvme", v);
			return -EINVAL;
		}
	} else if (m->sloppy) {
		snprintf(why, whylen, "-o %s: not an AVFS mount option, ignored (sloppy)", opt);
	} else {
		snprintf(why, whylen, "-o %s: not an AVFS mount option (allow_other, ro, rw, "
			 "acl, noacl, socket=PATH, config=FILE, backend=NAME, disk_model=NAME, verbose, or a "
			 "generic one: nosuid, nodev, noexec, noatime, ...; see avfsd(8))", opt);
		return -EINVAL;
	}
	return 0;
}

int avfsd_mount_options(struct avfsd_mount_opts *m, char *opts, char *why, size_t whylen)
{
	char *save = NULL;

	if (why && whylen)
		why[0] = 0;
	for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		int err = option(m, o, why, whylen);

		if (err)
			return err;
	}
	return 0;
}

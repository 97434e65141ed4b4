/*
 * sched.c — what every policy shares: the settings table with defaults and range checks,
 * the service-time model of papers/001 eq. (1), the policy registry, and the thin wrapper
 * that enforces the in-flight limit and refuses bad requests. No scheduling decisions here.
 */
#include "iosched.h"

#include "units.h"
#include "why.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ll

void avfs_sched_conf_default(struct avfs_sched_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->margin_ns = 500 * MS;
	c->urgent_ns = 100 * MS;
	c->be_age_ns = 2000 * MS;
	c->jit_offset_ns = 1 * MS;
	c->coalesce = 4u << 20;	/* a 512 KiB x 8 stream's whole buffer (docs/DESIGN.md) */
	/* with its read-ahead (docs/DESIGN.md, "Bigger commands, read-ahead that starts small") */
	c->coalesce_ahead = 8u << 20;
	c->prefetch_carry = true;	/* docs/DESIGN.md, "Read-ahead carried" */
	c->recover_ns = 5000 * MS;	/* docs/DESIGN.md, "Overload: recovering" */
	c->satf_window = 4;	/* as much as 8 or 64 at half the cost of 8 (docs/DESIGN.md) */
	/* avfs-250g (SPEC §11) */
	c->model = (struct avfs_svc_model){ .tr_ns = 60e9 / 7200, .tk_ns = 8.5e6, .dmax = 70e6,
					    .dmin = 38e6, .lmax = 250000000000ull };
	c->rotational = true;
	c->depth = 1;
	c->read_expire_ns = 500 * MS;
	c->write_expire_ns = 5000 * MS;
	c->fifo_batch = 16;
	c->writes_starved = 2;
	c->scan_edf_quantum_ns = 100 * MS;
}

static const struct avfs_sched_setting_info settings[] = {
	{ "margin", "time", "10ms..60s", "m: desired completion margin of RT requests (500ms)" },
	{ "urgent", "time", "1ms..< margin", "e: EDF window for urgent RT requests (100ms)" },
	{ "be-age", "time", "10ms..600s", "best-effort requests older than this go first (2s)" },
	{ "hold", "mode", "batch, sweep", "tm: RT held in papers/001's batches, or over a sweep "
	  "that never stops (batch)" },
	{ "order", "mode", "lba, satf", "tm: a batch in LBA order, or the nearest in positioning "
	  "time of its next satf-window runs, when the others keep m (lba)" },
	{ "satf-window", "count", "2..64", "order=satf: runs of adjacent requests considered a "
	  "decision (4)" },
	{ "coalesce", "bytes", "0 or 4K..64M", "tm: a command carries the adjacent pending "
	  "requests up to this, 0 = off (4M)" },
	{ "coalesce-ahead", "bytes", "0 or 4K..64M", "tm: ... and up to this while it carries "
	  "read-ahead (8M)" },
	{ "reduced-carry", "on/off", "on, off", "tm: in the reduced window a command carries "
	  "its followers whatever they are due, as the others can spare (off)" },
	{ "prefetch-carry", "on/off", "on, off", "tm: a command of the EDF or reduced window "
	  "carries the read-ahead that follows it whatever it is due, as the others can spare "
	  "(on)" },
	{ "recover", "time", "0..60s", "tm, hold=batch: for this long after a missed deadline "
	  "the batch goes on in its order, coalescing, without the EDF and reduced windows (5s; "
	  "0 = only while the request due first cannot be met)" },
	{ "chunk", "bytes", "0 or 4K..16M", "semi-preemptible chunk size, 0 = off (0)" },
	{ "jit", "on/off", "on, off", "just-in-time seek where the rotation is predictable (off)" },
	{ "jit-offset", "time", "0..5ms", "JIT: arrive this much early (1ms)" },
	{ "split", "bytes", "0 or >= 1M", "split seeks longer than this, 0 = off (0)" },
	{ "depth", "count", "1..256", "commands in flight on non-rotational devices (1; avfsd: 16)" },
	{ "read-expire", "time", "1ms..60s", "cscan baseline: read expiry (500ms)" },
	{ "write-expire", "time", "1ms..600s", "cscan baseline: write expiry (5s)" },
	{ "fifo-batch", "count", "1..1024", "cscan baseline: requests per sorted batch (16)" },
	{ "writes-starved", "count", "1..64", "cscan baseline: read batches before a write one (2)" },
	{ "scan-edf-quantum", "time", "1ms..10s", "scan-edf baseline: deadline rounding (100ms)" },
};

const struct avfs_sched_setting_info *avfs_sched_settings(size_t *n)
{
	*n = sizeof(settings) / sizeof(settings[0]);
	return settings;
}

/* A setting of two words: *out = (value is yes), if it is one of them. 0, or -1 (neither). */
static int either(const char *value, const char *yes, const char *no, bool *out)
{
	if (strcmp(value, yes) && strcmp(value, no))
		return -1;
	*out = !strcmp(value, yes);
	return 0;
}

int avfs_sched_conf_set(struct avfs_sched_conf *c, const char *name, const char *value,
			char *why, size_t whylen)
{
	int64_t t = 0;
	uint64_t b = 0;
	bool is_time = false, is_bytes = false;
	int err = 0;

	if (!name || !value)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		if (strcmp(settings[i].name, name))
			continue;
		is_time = !strcmp(settings[i].unit, "time");
		is_bytes = !strcmp(settings[i].unit, "bytes");
		if (is_time)
			err = avfs_parse_time(value, &t);
		else if (is_bytes)
			err = avfs_parse_size(value, &b);
		else if (!strcmp(settings[i].unit, "count"))
			err = avfs_parse_uint(value, &b);
		if (err) {
			avfs_why(why, whylen, "%s: '%s' is not a %s", name, value, settings[i].unit);
			return err;
		}
		goto known;
	}
	avfs_why(why, whylen, "unknown setting '%s'", name);
	return -ENOENT;
known:
#define RANGE(cond) do { if (!(cond)) { \
		avfs_why(why, whylen, "%s: '%s' out of range", name, value); return -ERANGE; } } while (0)
	if (!strcmp(name, "margin")) {
		RANGE(t >= 10 * MS && t <= 60000 * MS);
		c->margin_ns = t;
	} else if (!strcmp(name, "urgent")) {
		RANGE(t >= 1 * MS && t <= 60000 * MS);
		c->urgent_ns = t;
	} else if (!strcmp(name, "be-age")) {
		RANGE(t >= 10 * MS && t <= 600000 * MS);
		c->be_age_ns = t;
	} else if (!strcmp(name, "hold")) {
		RANGE(!either(value, "sweep", "batch", &c->sweep));
	} else if (!strcmp(name, "order")) {
		RANGE(!either(value, "satf", "lba", &c->satf));
	} else if (!strcmp(name, "satf-window")) {
		RANGE(b >= 2 && b <= 64);
		c->satf_window = (unsigned)b;
	} else if (!strcmp(name, "reduced-carry")) {
		RANGE(!either(value, "on", "off", &c->reduced_carry));
	} else if (!strcmp(name, "prefetch-carry")) {
		RANGE(!either(value, "on", "off", &c->prefetch_carry));
	} else if (!strcmp(name, "recover")) {
		RANGE(t >= 0 && t <= 60000 * MS);
		c->recover_ns = t;
	} else if (!strcmp(name, "coalesce")) {
		RANGE(b == 0 || (b >= 4096 && b <= (64u << 20) && b % 4096 == 0));
		c->coalesce = (uint32_t)b;
	} else if (!strcmp(name, "coalesce-ahead")) {
		RANGE(b == 0 || (b >= 4096 && b <= (64u << 20) && b % 4096 == 0));
		c->coalesce_ahead = (uint32_t)b;
	} else if (!strcmp(name, "chunk")) {
		RANGE(b == 0 || (b >= 4096 && b <= (16u << 20) && b % 4096 == 0));
		c->chunk = (uint32_t)b;
	} else if (!strcmp(name, "jit")) {
		RANGE(!either(value, "on", "off", &c->jit));
	} else if (!strcmp(name, "jit-offset")) {
		RANGE(t <= 5 * MS);
		c->jit_offset_ns = t;
	} else if (!strcmp(name, "split")) {
		RANGE(b == 0 || b >= (1ull << 20));
		c->split_bytes = b;
	} else if (!strcmp(name, "depth")) {
		RANGE(b >= 1 && b <= 256);
		c->depth = (unsigned)b;
	} else if (!strcmp(name, "read-expire")) {
		RANGE(t >= 1 * MS && t <= 60000 * MS);
		c->read_expire_ns = t;
	} else if (!strcmp(name, "write-expire")) {
		RANGE(t >= 1 * MS && t <= 600000 * MS);
		c->write_expire_ns = t;
	} else if (!strcmp(name, "fifo-batch")) {
		RANGE(b >= 1 && b <= 1024);
		c->fifo_batch = (unsigned)b;
	} else if (!strcmp(name, "writes-starved")) {
		RANGE(b >= 1 && b <= 64);
		c->writes_starved = (unsigned)b;
	} else if (!strcmp(name, "scan-edf-quantum")) {
		RANGE(t >= 1 * MS && t <= 10000 * MS);
		c->scan_edf_quantum_ns = t;
	}
#undef RANGE
	return 0;
}

int avfs_sched_conf_set_pair(struct avfs_sched_conf *c, const char *pair, char *why,
			     size_t whylen)
{
	char name[64];
	const char *eq = pair ? strchr(pair, '=') : NULL;

	if (!eq || eq == pair || eq - pair >= (long)sizeof(name)) {
		avfs_why(why, whylen, "'%s': say NAME=VALUE", pair ? pair : "");
		return -EINVAL;
	}
	memcpy(name, pair, (size_t)(eq - pair));
	name[eq - pair] = 0;
	return avfs_sched_conf_set(c, name, eq + 1, why, whylen);
}

int avfs_sched_conf_check(const struct avfs_sched_conf *c, char *why, size_t whylen)
{
	if (c->urgent_ns >= c->margin_ns) {
		avfs_why(why, whylen, "urgent (e = %lld ms) must be below margin (m = %lld ms)",
		       (long long)(c->urgent_ns / MS), (long long)(c->margin_ns / MS));
		return -EINVAL;
	}
	if (c->model.dmax <= 0 || c->model.dmin <= 0 || c->model.dmin > c->model.dmax ||
	    !c->model.lmax || c->model.tr_ns < 0 || c->model.tk_ns < 0) {
		avfs_why(why, whylen, "service-time model parameters are impossible");
		return -EINVAL;
	}
	if ((c->jit || c->split_bytes) && !c->pred.predict) {
		avfs_why(why, whylen, "jit and split need a disk that predicts its rotation");
		return -EINVAL;
	}
	if (c->satf && !c->pred.predict) {
		avfs_why(why, whylen, "order=satf needs a disk that predicts its positioning time");
		return -EINVAL;
	}
	if (c->satf && (c->satf_window < 2 || c->satf_window > 64)) {
		avfs_why(why, whylen, "satf-window must be 2..64");
		return -EINVAL;
	}
	if (!c->depth || c->depth > 256) {
		avfs_why(why, whylen, "depth must be 1..256");
		return -EINVAL;
	}
	return 0;
}

double avfs_svc_time(const struct avfs_svc_model *m, uint64_t off, uint64_t len, bool sequential)
{
	double at = m->lmax ? (double)(off > m->lmax ? m->lmax : off) / (double)m->lmax : 0;
	double rate = m->dmax - (m->dmax - m->dmin) * at;

	/* papers/001 eq. (1) */
	return (sequential ? 0 : m->tk_ns + m->tr_ns / 2) + (double)len / rate * 1e9;
}

const struct avfs_sched_ops *avfs_sched_lookup(const char *name)
{
	static const struct avfs_sched_ops *const all[] = {
		&avfs_sched_tm, &avfs_sched_fifo, &avfs_sched_cscan, &avfs_sched_edf,
		&avfs_sched_scan_edf,
	};

	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

int avfs_sched_init(struct avfs_sched *s, const struct avfs_sched_ops *ops,
		    const struct avfs_sched_conf *conf)
{
	int err;

	memset(s, 0, sizeof(*s));
	if (!ops || !conf)
		return -EINVAL;
	err = avfs_sched_conf_check(conf, NULL, 0);
	if (err)
		return err;
	s->ops = ops;
	s->conf = *conf;
	s->max_inflight = conf->rotational ? 1 : conf->depth;
	return ops->init(&s->ctx, &s->conf);
}

void avfs_sched_destroy(struct avfs_sched *s)
{
	if (s->ops && s->ctx)
		s->ops->destroy(s->ctx);
	s->ctx = NULL;
}

int avfs_sched_submit(struct avfs_sched *s, struct avfs_io *io, int64_t now)
{
	if (!io || !io->len || io->len > (1ull << 30) || io->off + io->len > s->conf.model.lmax ||
	    io->off + io->len < io->off)
		return -EINVAL;
	if (io->deadline && io->deadline <= now)
		return -ETIME;	/* already missed: never queued, never issued */
	io->arrival = now;
	io->more = NULL;
	io->orig_off = io->off;
	io->orig_len = io->len;
	return s->ops->submit(s->ctx, io, now);
}

void avfs_sched_next(struct avfs_sched *s, int64_t now, struct avfs_sched_cmd *cmd)
{
	memset(cmd, 0, sizeof(*cmd));
	if (s->inflight >= s->max_inflight) {
		cmd->kind = AVFS_SCHED_IDLE;
		return;
	}
	s->ops->next(s->ctx, now, cmd);
	if (cmd->kind == AVFS_SCHED_DISPATCH)
		s->inflight++;
}

bool avfs_sched_done(struct avfs_sched *s, const struct avfs_sched_cmd *cmd, int64_t now, int res)
{
	if (s->inflight)
		s->inflight--;
	return s->ops->done(s->ctx, cmd, now, res);
}

void avfs_sched_counters(const struct avfs_sched *s, struct avfs_sched_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (s->ops->counters)
		s->ops->counters(s->ctx, out);
}

int avfs_sched_cancel(struct avfs_sched *s, struct avfs_io *io)
{
	if (!s->ops->cancel)
		return -EOPNOTSUPP;
	return s->ops->cancel(s->ctx, io);
}

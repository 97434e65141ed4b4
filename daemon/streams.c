/*
 * streams.c — the daemon side of SPEC §7 and the statistics of SPEC §10: reservations bound
 * to clients (or detached, made by avfs-admin), admission through daemon/admit.c, the
 * bandwidth class applied to each libavio request, per-stream and global QoS, device
 * utilization and seek distances, the request trace, and the JSON avfs-admin reads
 * (docs/ADMIN.md). Part of the event loop's thread; no locking.
 */
#include "config.h"
#include "avfsd_i.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ll
#define TRACE_FLUSH (64u << 10)

static const char *const seek_labels[8] = { "0", "<1", "<5", "<20", "<50", "<100", "<200",
					    ">=200" };

/* ---- the configuration file (docs/ADMIN.md) ---- */

/* "40M" → 40000000 (rates: powers of 1000); sizes with binary = true: powers of 1024 */
static int parse_num(const char *s, bool binary, uint64_t *out)
{
	double v, k = binary ? 1024 : 1000;
	char *end;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K': v *= k; end++; break;
	case 'M': v *= k * k; end++; break;
	case 'G': v *= k * k * k; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > 1e18)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

struct quota_set {
	struct { uint32_t uid, streams; uint64_t rate; } q[64];
	unsigned n;
};

static int config_line(struct quota_set *qs, struct avfs_admit_conf *ac, char *line, char *why,
		       size_t whylen)
{
	char *tok[8], *save = NULL;
	int n = 0;
	uint64_t v;

	for (char *t = strtok_r(line, " \t", &save); t && n < 8; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	if (!n || strchr(tok[0], '='))
		return 0;	/* empty, or a scheduler setting NAME=VALUE (avfsd.c reads those) */
	if (!strcmp(tok[0], "be-floor") && n == 2) {
		char *end;
		double f = strtod(tok[1], &end);

		if (*end == '%')
			f /= 100, end++;
		if (*end || f < 0 || f >= 0.9) {
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
	if (!strcmp(tok[0], "io") && n == 2) {
		if (parse_num(tok[1], true, &v) || !v || v % 4096 || v > AVFS_PROTO_MAX_IO) {
			snprintf(why, whylen, "io: '%s' is not a multiple of 4K up to 16M", tok[1]);
			return -EINVAL;
		}
		ac->default_io = (uint32_t)v;
		return 0;
	}
	if (!strcmp(tok[0], "quota") && n >= 3) {
		uint64_t uid = AVFS_ADMIT_ANY_UID, rate = 0, streams = 0;

		if (strcmp(tok[1], "default") &&
		    (strncmp(tok[1], "uid=", 4) || parse_num(tok[1] + 4, false, &uid) ||
		     uid >= AVFS_ADMIT_ANY_UID)) {
			snprintf(why, whylen, "quota: say 'default' or 'uid=N', not '%s'", tok[1]);
			return -EINVAL;
		}
		for (int i = 2; i < n; i++) {
			if (!strncmp(tok[i], "rate=", 5) && !parse_num(tok[i] + 5, false, &rate))
				continue;
			if (!strncmp(tok[i], "streams=", 8) &&
			    !parse_num(tok[i] + 8, false, &streams) && streams < UINT32_MAX)
				continue;
			snprintf(why, whylen, "quota: '%s' is neither rate=BYTES/S nor streams=N",
				 tok[i]);
			return -EINVAL;
		}
		if (qs->n == sizeof(qs->q) / sizeof(qs->q[0])) {
			snprintf(why, whylen, "quota: more than %u quotas", qs->n);
			return -EINVAL;
		}
		qs->q[qs->n].uid = (uint32_t)uid;
		qs->q[qs->n].rate = rate;
		qs->q[qs->n++].streams = (uint32_t)streams;
		return 0;
	}
	snprintf(why, whylen, "unknown setting '%s' (be-floor, isolation, io, quota)", tok[0]);
	return -EINVAL;
}

int avfsd_streams_init(struct daemon *dm, const char *config, char *why, size_t whylen)
{
	struct avfs_admit_conf ac;
	struct quota_set qs = { .n = 0 };
	char line[512];
	unsigned lineno = 0;
	int err;

	avfs_admit_conf_default(&ac, &dm->sched.conf.model, avfs_fs_block_size(dm->fs));
	ac.chunk = dm->sched.conf.chunk;
	if (config) {
		FILE *f = fopen(config, "r");

		if (!f) {
			err = -errno;
			snprintf(why, whylen, "%s: %s", config, strerror(errno));
			return err;
		}
		while (fgets(line, sizeof(line), f)) {
			char *hash = strchr(line, '#'), msg[200];

			lineno++;
			if (hash)
				*hash = 0;
			line[strcspn(line, "\r\n")] = 0;
			err = config_line(&qs, &ac, line, msg, sizeof(msg));
			if (err) {
				snprintf(why, whylen, "%s:%u: %s", config, lineno, msg);
				fclose(f);
				return err;
			}
		}
		fclose(f);
	}
	err = avfs_admit_create(&dm->admit, &ac);
	for (unsigned i = 0; !err && i < qs.n; i++)
		err = avfs_admit_set_quota(dm->admit, qs.q[i].uid, qs.q[i].rate, qs.q[i].streams);
	dm->slot_at = calloc(dm->nslots ? dm->nslots : 1, sizeof(*dm->slot_at));
	if (err || !dm->slot_at) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	dm->stats_since = avfsd_now();
	return 0;
}

void avfsd_streams_fini(struct daemon *dm)
{
	for (size_t i = 0; i < dm->nstreams; i++)
		free(dm->streams[i]);
	free(dm->streams);
	dm->streams = NULL;
	dm->nstreams = 0;
	avfs_admit_destroy(dm->admit);
	dm->admit = NULL;
	free(dm->slot_at);
	dm->slot_at = NULL;
	free(dm->trace_buf);
	dm->trace_buf = NULL;
}

/* ---- reservations ---- */

static struct dstream *stream_by_id(struct daemon *dm, uint64_t id)
{
	for (size_t i = 0; id && i < dm->nstreams; i++)
		if (dm->streams[i]->id == id)
			return dm->streams[i];
	return NULL;
}

static struct cio *park_pop(struct daemon *dm, struct dstream *s);

static void stream_end(struct daemon *dm, struct dstream *s, const char *why)
{
	avfsd_log(dm, 2, "reservation %llu of uid %u on inode %llu ended: %s; %llu RT requests, "
		  "%llu misses", (unsigned long long)s->id, s->uid, (unsigned long long)s->ino, why,
		  (unsigned long long)s->qos.requests, (unsigned long long)s->qos.misses);
	avfs_admit_remove(dm->admit, s->id);
	while (s->park_head) {	/* no reservation any more: plain best effort */
		struct cio *io = park_pop(dm, s);

		io->stream = 0;
		avfsd_cio_submit(dm, io);
	}
	for (size_t i = 0; i < dm->nstreams; i++) {
		if (dm->streams[i] == s) {
			memmove(&dm->streams[i], &dm->streams[i + 1],
				(dm->nstreams - i - 1) * sizeof(dm->streams[0]));
			dm->nstreams--;
			break;
		}
	}
	free(s);
}

void avfsd_handle_reserve(struct daemon *dm, struct client *c, uint64_t tag,
			  const struct avfs_msg_reserve *m)
{
	struct avfs_msg_reserve_reply rep = { .quota_streams = UINT32_MAX,
					      .quota_rate = UINT64_MAX };
	struct avfs_service_req req = { .rate = m->rate, .buffer = m->buffer, .io = m->io,
					.write = m->write != 0, .uid = c->uid };
	struct avfs_admit_left left = { 0 };
	struct dstream *s = NULL, **v;
	int64_t id;

	if (m->handle >= c->nhandles || m->flags & ~AVFS_RESERVE_DETACHED || m->write > 1) {
		rep.res = -EINVAL;
		snprintf(rep.why, sizeof(rep.why), "bad handle or flags");
	} else if (!(c->handles[m->handle].access & (m->write ? AVFS_OPEN_WRITE : AVFS_OPEN_READ))) {
		rep.res = -EBADF;
		snprintf(rep.why, sizeof(rep.why), "the file is not open for %s",
			 m->write ? "writing" : "reading");
	} else if (c->handles[m->handle].stream) {
		rep.res = -EEXIST;
		snprintf(rep.why, sizeof(rep.why), "the file already has a reservation (%llu)",
			 (unsigned long long)c->handles[m->handle].stream);
	} else if (!(s = calloc(1, sizeof(*s))) ||
		   !(v = dm->nstreams < dm->capstreams ? dm->streams :
			 realloc(dm->streams, (dm->capstreams * 2 + 8) * sizeof(*v)))) {
		rep.res = -ENOMEM;
	} else {
		if (v != dm->streams) {
			dm->streams = v;
			dm->capstreams = dm->capstreams * 2 + 8;
		}
		id = avfs_admit_add(dm->admit, &req, &left, rep.why, sizeof(rep.why));
		if (id < 0) {
			rep.res = (int32_t)id;
			rep.left_rate = left.rate;
			rep.quota_rate = left.quota_rate;
			rep.quota_streams = left.quota_streams;
			rep.left_util_ppm = (uint32_t)(left.util * 1e6);
		} else {
			int64_t now = avfsd_now();

			s->id = (uint64_t)id;
			s->ino = c->handles[m->handle].ino;
			s->owner = m->flags & AVFS_RESERVE_DETACHED ? NULL : c;
			s->uid = c->uid;
			s->pid = c->pid;
			s->req = avfs_admit_find(dm->admit, s->id)->req;
			s->since = now;
			avfs_bucket_init(&s->bucket, (double)req.rate, (double)req.buffer, now);
			dm->streams[dm->nstreams++] = s;
			if (s->owner)
				c->handles[m->handle].stream = s->id;
			rep.id = s->id;
			avfs_admit_left(dm->admit, NULL, &left);
			rep.left_util_ppm = (uint32_t)(left.util * 1e6);
			avfsd_log(dm, 2, "reservation %llu: uid %u pid %u inode %llu, %s %.2f MB/s, "
				  "buffer %.1f MiB%s; load now %.1f %%", (unsigned long long)s->id,
				  c->uid, c->pid, (unsigned long long)s->ino,
				  req.write ? "write" : "read", (double)req.rate / 1e6,
				  (double)req.buffer / (1 << 20), s->owner ? "" : ", detached",
				  100 * avfs_admit_load(dm->admit));
			s = NULL;
		}
	}
	if (rep.res && rep.res != -EINVAL && rep.res != -EBADF && rep.res != -EEXIST)
		avfsd_log(dm, 2, "reservation refused to uid %u pid %u: %s", c->uid, c->pid,
			  rep.why);
	free(s);
	avfsd_client_send(dm, c, AVFS_MSG_RESERVE, tag, &rep, sizeof(rep), NULL, 0);
}

void avfsd_handle_release(struct daemon *dm, struct client *c, uint64_t tag,
			  const struct avfs_msg_release *m)
{
	struct avfs_msg_release_reply rep = { 0 };
	struct dstream *s = NULL;

	if (m->handle == AVFS_RELEASE_BY_ID) {
		s = stream_by_id(dm, m->id);
		if (!s)
			rep.res = -ENOENT;
		else if (c->uid && c->uid != s->uid)
			rep.res = -EPERM;
	} else if (m->handle >= c->nhandles) {
		rep.res = -EINVAL;
	} else if (!(s = stream_by_id(dm, c->handles[m->handle].stream))) {
		rep.res = -ENOENT;
	}
	if (!rep.res) {
		for (uint32_t h = 0; s->owner && h < s->owner->nhandles; h++)
			if (s->owner->handles[h].stream == s->id)
				s->owner->handles[h].stream = 0;
		stream_end(dm, s, m->handle == AVFS_RELEASE_BY_ID ? "released by id" : "released");
	}
	avfsd_client_send(dm, c, AVFS_MSG_RELEASE, tag, &rep, sizeof(rep), NULL, 0);
}

void avfsd_handle_stats(struct daemon *dm, struct client *c, uint64_t tag,
			const struct avfs_msg_stats *m)
{
	struct avfs_msg_stats_reply rep = { 0 };
	struct dstream *s = m->handle < c->nhandles ? stream_by_id(dm, c->handles[m->handle].stream)
						    : NULL;

	if (!s) {
		rep.res = m->handle < c->nhandles ? -ENOENT : -EINVAL;
	} else {
		rep.requests = s->qos.requests;
		rep.misses = s->qos.misses;
		rep.bytes = s->qos.bytes;
		rep.margin_min_ns = s->qos.margin_min_ns;
	}
	avfsd_client_send(dm, c, AVFS_MSG_STATS, tag, &rep, sizeof(rep), NULL, 0);
}

void avfsd_client_streams_end(struct daemon *dm, struct client *c)
{
	for (size_t i = dm->nstreams; i-- > 0;)
		if (dm->streams[i]->owner == c)
			stream_end(dm, dm->streams[i], "its client is gone");
	c->trace_tag = 0;
}

int64_t avfsd_stream_charge(struct daemon *dm, struct client *c, uint32_t h, uint64_t nbytes,
			    int64_t deadline, int64_t now, uint64_t *stream, bool *park)
{
	struct dstream *s = stream_by_id(dm, c->handles[h].stream);

	*park = false;
	if (!s) {	/* a detached reservation on the file, if any */
		for (size_t i = 0; i < dm->nstreams && !s; i++)
			if (!dm->streams[i]->owner && dm->streams[i]->ino == c->handles[h].ino &&
			    (c->handles[h].access & (dm->streams[i]->req.write ? AVFS_OPEN_WRITE
									   : AVFS_OPEN_READ)))
				s = dm->streams[i];
	}
	*stream = s ? s->id : 0;
	if (!s)
		return deadline;
	if (!deadline)
		deadline = avfs_service_deadline(&s->req, nbytes, now);
	/* the bandwidth class (papers/004 §3.1): within its bucket, real-time */
	if (!s->park_head && avfs_bucket_take(&s->bucket, nbytes, now))
		return deadline;
	/* above its rate: a read waits for its tokens, or for time nobody else asks for
	 * (avfsd_streams_tick); a write — whose metadata a commit may already carry — and a
	 * request larger than the whole bucket go as best effort now, uncharged */
	*park = !s->req.write && (double)nbytes <= s->bucket.size;
	return 0;
}

void avfsd_stream_park(struct daemon *dm, struct cio *io)
{
	struct dstream *s = stream_by_id(dm, io->stream);

	if (!s) {	/* cannot happen: charge found it; send it on rather than lose it */
		avfsd_cio_submit(dm, io);
		return;
	}
	io->parked = true;
	io->park_next = NULL;
	*(s->park_tail ? &s->park_tail->park_next : &s->park_head) = io;
	s->park_tail = io;
	dm->nparked++;
}

static struct cio *park_pop(struct daemon *dm, struct dstream *s)
{
	struct cio *io = s->park_head;

	s->park_head = io->park_next;
	if (!s->park_head)
		s->park_tail = NULL;
	io->park_next = NULL;
	io->parked = false;
	dm->nparked--;
	return io;
}

bool avfsd_stream_unpark(struct daemon *dm, struct cio *io)
{
	struct dstream *s = io->parked ? stream_by_id(dm, io->stream) : NULL;

	if (!s)
		return false;
	for (struct cio **pp = &s->park_head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->park_next) {
		if (*pp != io)
			continue;
		*pp = io->park_next;
		if (s->park_tail == io)
			s->park_tail = prev;
		io->park_next = NULL;
		io->parked = false;
		dm->nparked--;
		return true;
	}
	return false;
}

/* let a parked read go: real-time with its deadline, or spare best effort */
static void park_release(struct daemon *dm, struct dstream *s, bool rt, int64_t now)
{
	struct cio *io = park_pop(dm, s);

	io->deadline = !rt ? 0 : io->client_deadline ? io->client_deadline :
		       avfs_service_deadline(&s->req, io->want, now);
	for (struct dreq *q = io->parts; q; q = q->next) {
		q->io.deadline = io->deadline;
		q->spare = !rt;
	}
	avfsd_cio_submit(dm, io);
}

int64_t avfsd_streams_tick(struct daemon *dm, int64_t now)
{
	int64_t next = 0;

	for (size_t i = 0; dm->nparked && i < dm->nstreams; i++) {
		struct dstream *s = dm->streams[i];

		while (s->park_head) {
			struct cio *io = s->park_head;
			int64_t due;

			if (avfs_bucket_take(&s->bucket, io->want, now)) {
				park_release(dm, s, true, now);
				continue;
			}
			if (!dm->be_pending) {	/* work conservation: nobody else waits */
				park_release(dm, s, false, now);
				continue;
			}
			due = now + (int64_t)(((double)io->want - s->bucket.tokens) / s->bucket.rate *
					      1e9) + 1;
			if (!next || due < next)
				next = due;
			break;
		}
	}
	return next;
}

void avfsd_stream_done(struct daemon *dm, const struct cio *io, int64_t now)
{
	struct dstream *s = stream_by_id(dm, io->stream);
	int res = io->canceled ? -ECANCELED : io->res < 0 ? (int)io->res : 0;
	uint64_t bytes = io->res > 0 ? (uint64_t)io->res : 0;

	if (io->canceled)
		return;	/* the client withdrew it: no verdict on the disk */
	if (s)
		avfs_qos_add(&s->qos, io->deadline, now, bytes, res);
	if (io->deadline)
		avfs_qos_add(&dm->qos_all, io->deadline, now, bytes, res);
}

/* ---- device statistics ---- */

void avfsd_cmd_start(struct daemon *dm, unsigned slot, const struct avfs_sched_cmd *cmd,
		     int64_t now)
{
	uint64_t d = cmd->off > dm->head ? cmd->off - dm->head : dm->head - cmd->off;
	double gb = (double)d / 1e9;
	unsigned k = d == 0 ? 0 : gb < 1 ? 1 : gb < 5 ? 2 : gb < 20 ? 3 : gb < 50 ? 4 :
		     gb < 100 ? 5 : gb < 200 ? 6 : 7;
	size_t pending = dm->sched.ops->pending(dm->sched.ctx);

	if (!cmd->seek)
		dm->seek_bins[k]++;
	dm->head = cmd->off + cmd->len;
	if (dm->slot_at)
		dm->slot_at[slot] = now;
	if (dm->busy_n++ == 0)
		dm->busy_from = now;	/* the device was idle until now */
	if (pending > dm->max_pending)
		dm->max_pending = pending;
}

void avfsd_cmd_end(struct daemon *dm, unsigned slot, struct dreq *q, int64_t now)
{
	if (q && dm->slot_at && now > dm->slot_at[slot])
		q->service_ns += now - dm->slot_at[slot];
	/* busy time: the union of the intervals with a command on the device */
	if (dm->busy_n && --dm->busy_n == 0 && now > dm->busy_from)
		dm->busy_ns += now - dm->busy_from;
}

/* ---- the trace ---- */

static bool tracing(struct daemon *dm)
{
	for (size_t i = 0; i < dm->nclients; i++)
		if (dm->clients[i] && !dm->clients[i]->dead && dm->clients[i]->trace_tag)
			return true;
	return false;
}

void avfsd_dreq_done(struct daemon *dm, const struct dreq *q, int res, int64_t now)
{
	if (!q->io.deadline && res >= 0) {
		dm->be_bytes += q->io.orig_len;
		dm->be_done++;
	} else if (res >= 0) {
		dm->rt_bytes += q->io.orig_len;
	}
	if (!dm->trace_buf && !tracing(dm))
		return;
	if (dm->trace_len + 160 > dm->trace_cap) {
		size_t cap = dm->trace_cap ? dm->trace_cap * 2 : 2 * TRACE_FLUSH;
		char *b = realloc(dm->trace_buf, cap);

		if (!b)
			return;	/* a trace line lost, nothing else */
		dm->trace_buf = b;
		dm->trace_cap = cap;
	}
	dm->trace_len += (size_t)snprintf(dm->trace_buf + dm->trace_len, 160,
		"%lld,%lld,%lld,%s,%s,%llu,%llu,%lld,%d,%lld\n", (long long)q->io.arrival,
		(long long)now, q->stream ? (long long)q->stream : -1ll,
		q->io.deadline ? "rt" : q->stream || q->data_write ? "be" : "meta",
		q->io.write ? "w" : "r", (unsigned long long)q->io.orig_off,
		(unsigned long long)q->io.orig_len, (long long)q->io.deadline, res < 0 ? res : 0,
		(long long)q->service_ns);
	if (dm->trace_len >= TRACE_FLUSH)
		avfsd_trace_tick(dm, now);
}

int64_t avfsd_trace_tick(struct daemon *dm, int64_t now)
{
	int64_t next = 0;

	for (size_t i = 0; i < dm->nclients; i++) {
		struct client *c = dm->clients[i];
		struct avfs_msg_trace_reply rep = { 0 };

		if (!c || c->dead || !c->trace_tag)
			continue;
		if (dm->trace_len)
			avfsd_client_send(dm, c, AVFS_MSG_TRACE, c->trace_tag, &rep, sizeof(rep),
					  dm->trace_buf, dm->trace_len);
		if (c->dead)
			continue;
		if (now >= c->trace_until) {
			rep.done = 1;
			avfsd_client_send(dm, c, AVFS_MSG_TRACE, c->trace_tag, &rep, sizeof(rep),
					  NULL, 0);
			c->trace_tag = 0;
			avfsd_log(dm, 2, "trace for pid %u ended", c->pid);
		} else if (!next || c->trace_until < next) {
			next = c->trace_until;
		}
	}
	dm->trace_len = 0;
	if (!next && !tracing(dm)) {
		free(dm->trace_buf);
		dm->trace_buf = NULL;
		dm->trace_cap = 0;
	}
	return next;
}

void avfsd_handle_trace(struct daemon *dm, struct client *c, uint64_t tag,
			const struct avfs_msg_trace *m)
{
	static const char head[] =
		"submit_ns,complete_ns,stream,class,dir,offset,length,deadline_ns,result,service_ns\n";
	struct avfs_msg_trace_reply rep = { 0 };

	if (c->uid)
		rep.res = -EPERM;	/* a trace shows every user's requests */
	else if (m->duration_ns < 1000000 || m->duration_ns > 86400ull * NS)
		rep.res = -EINVAL;
	else if (c->trace_tag)
		rep.res = -EBUSY;
	if (rep.res) {
		rep.done = 1;
		avfsd_client_send(dm, c, AVFS_MSG_TRACE, tag, &rep, sizeof(rep), NULL, 0);
		return;
	}
	avfsd_trace_tick(dm, avfsd_now());	/* lines before this trace go to earlier ones */
	avfsd_client_send(dm, c, AVFS_MSG_TRACE, tag, &rep, sizeof(rep), head, sizeof(head) - 1);
	c->trace_tag = tag;
	c->trace_until = avfsd_now() + (int64_t)m->duration_ns;
	if (!dm->trace_buf) {
		dm->trace_buf = malloc(2 * TRACE_FLUSH);
		dm->trace_cap = dm->trace_buf ? 2 * TRACE_FLUSH : 0;
	}
	avfsd_log(dm, 2, "trace for pid %u: %.1f s", c->pid, (double)m->duration_ns / NS);
}

/* ---- avfs-admin's JSON (docs/ADMIN.md) ---- */

static json_object *jd(double v)
{
	return json_object_new_double(round(v * 1000) / 1000);
}

static json_object *margins(const struct avfs_qos *q, bool p001)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "min", jd(q->requests ? (double)q->margin_min_ns / 1e6 : 0));
	if (p001)
		json_object_object_add(o, "p001", jd(avfs_qos_margin_quantile(q, 0.001) / 1e6));
	json_object_object_add(o, "p01", jd(avfs_qos_margin_quantile(q, 0.01) / 1e6));
	json_object_object_add(o, "p50", jd(avfs_qos_margin_quantile(q, 0.5) / 1e6));
	return o;
}

static json_object *stream_json(struct daemon *dm, const struct dstream *s)
{
	const struct avfs_stream_info *si = avfs_admit_find(dm->admit, s->id);
	json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_int64((int64_t)s->id));
	json_object_object_add(o, "uid", json_object_new_int64(s->uid));
	json_object_object_add(o, "pid", json_object_new_int64(s->pid));
	json_object_object_add(o, "inode", json_object_new_int64((int64_t)s->ino));
	json_object_object_add(o, "detached", json_object_new_boolean(!s->owner));
	json_object_object_add(o, "direction", json_object_new_string(s->req.write ? "write"
										     : "read"));
	json_object_object_add(o, "rate", json_object_new_int64((int64_t)s->req.rate));
	json_object_object_add(o, "buffer", json_object_new_int64((int64_t)s->req.buffer));
	json_object_object_add(o, "io", json_object_new_int64(s->req.io));
	if (si) {
		json_object_object_add(o, "period_ms", jd(si->cost.period_ns / 1e6));
		json_object_object_add(o, "utilization", jd(si->cost.u));
		json_object_object_add(o, "utilization_padded", jd(si->cost.u_padded));
	}
	json_object_object_add(o, "requests", json_object_new_int64((int64_t)s->qos.requests));
	json_object_object_add(o, "misses", json_object_new_int64((int64_t)s->qos.misses));
	json_object_object_add(o, "p0", jd(s->qos.requests ? (double)s->qos.misses /
						       (double)s->qos.requests : 0));
	json_object_object_add(o, "be_requests", json_object_new_int64((int64_t)s->qos.be_requests));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)s->qos.bytes));
	json_object_object_add(o, "margin_ms", margins(&s->qos, false));
	return o;
}

/* What the device is and how it is driven: the backend, its identification (SCSI INQUIRY and
 * VPD, NVMe Identify; empty strings where it has none) and the scheduler's mode. */
static json_object *disk_json(struct daemon *dm)
{
	const struct avfs_disk_info *in = &dm->d->info;
	const struct avfs_disk_ident *id = &dm->d->ident;
	const struct avfs_sched_conf *c = &dm->sched.conf;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "backend", json_object_new_string(id->backend));
	json_object_object_add(o, "transport", json_object_new_string(id->transport));
	json_object_object_add(o, "vendor", json_object_new_string(id->vendor));
	json_object_object_add(o, "product", json_object_new_string(id->product));
	json_object_object_add(o, "serial", json_object_new_string(id->serial));
	json_object_object_add(o, "firmware", json_object_new_string(id->firmware));
	json_object_object_add(o, "lba_format", json_object_new_string(id->lba_format));
	json_object_object_add(o, "write_cache", id->wce_known ?
			       json_object_new_boolean(id->wce) : NULL);
	json_object_object_add(o, "max_transfer", json_object_new_int64(id->max_transfer));
	json_object_object_add(o, "rotation_rate", json_object_new_int64(id->rotation_rate));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)in->size));
	json_object_object_add(o, "logical_block", json_object_new_int64(in->lbs));
	json_object_object_add(o, "rotational", json_object_new_boolean(in->rotational));
	json_object_object_add(o, "seek", json_object_new_boolean(in->has_seek));
	json_object_object_add(o, "mode", json_object_new_string(c->rotational ? "rotational" :
								 "non-rotational"));
	json_object_object_add(o, "depth", json_object_new_int64(dm->sched.max_inflight));
	json_object_object_add(o, "chunk", json_object_new_int64(c->chunk));
	json_object_object_add(o, "jit", json_object_new_boolean(c->jit));
	json_object_object_add(o, "split", json_object_new_int64((int64_t)c->split_bytes));
	return o;
}

static json_object *admin_status(struct daemon *dm, int64_t now)
{
	const struct avfs_admit_conf *ac = avfs_admit_conf(dm->admit);
	struct avfs_admit_left left;
	json_object *o = json_object_new_object(), *adm = json_object_new_object();
	size_t nclients = 0;

	for (size_t i = 0; i < dm->nclients; i++)
		nclients += dm->clients[i] && !dm->clients[i]->dead;
	avfs_admit_left(dm->admit, NULL, &left);
	json_object_object_add(o, "device", json_object_new_string(dm->dev_path));
	json_object_object_add(o, "mountpoint", json_object_new_string(dm->mnt_path));
	json_object_object_add(o, "socket", json_object_new_string(dm->sock_path));
	json_object_object_add(o, "uptime_s", jd((double)(now - dm->stats_since) / NS));
	json_object_object_add(o, "block_size",
			       json_object_new_int64((int64_t)avfs_fs_block_size(dm->fs)));
	json_object_object_add(o, "policy", json_object_new_string(dm->sched.ops->name));
	json_object_object_add(o, "clients", json_object_new_int64((int64_t)nclients));
	json_object_object_add(o, "streams", json_object_new_int64((int64_t)dm->nstreams));
	json_object_object_add(adm, "load", jd(avfs_admit_load(dm->admit)));
	json_object_object_add(adm, "left", jd(left.util));
	json_object_object_add(adm, "be_floor", jd(ac->be_floor));
	json_object_object_add(adm, "isolation", json_object_new_boolean(ac->isolation));
	json_object_object_add(adm, "default_io", json_object_new_int64(ac->default_io));
	json_object_object_add(o, "admission", adm);
	json_object_object_add(o, "disk", disk_json(dm));
	return o;
}

static json_object *streams_array(struct daemon *dm)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < dm->nstreams; i++)
		json_object_array_add(a, stream_json(dm, dm->streams[i]));
	return a;
}

static json_object *admin_streams(struct daemon *dm)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "streams", streams_array(dm));
	return o;
}

static json_object *admin_stats(struct daemon *dm, int64_t now)
{
	const struct avfs_svc_model *m = &dm->sched.conf.model;
	double up = (double)(now - dm->stats_since) / NS, busy = (double)dm->busy_ns;
	json_object *o = json_object_new_object(), *rt = json_object_new_object();
	json_object *seek = json_object_new_object(), *bins = json_object_new_array();
	json_object *counts = json_object_new_array(), *be = json_object_new_object();
	json_object *q = json_object_new_object(), *mo = json_object_new_object();
	json_object *mx = json_object_new_object();
	uint64_t seeks = 0;

	if (dm->busy_n && now > dm->busy_from)
		busy += (double)(now - dm->busy_from);
	json_object_object_add(o, "uptime_s", jd(up));
	json_object_object_add(o, "disk_utilization", jd(up > 0 ? busy / NS / up : 0));
	json_object_object_add(rt, "requests", json_object_new_int64((int64_t)dm->qos_all.requests));
	json_object_object_add(rt, "misses", json_object_new_int64((int64_t)dm->qos_all.misses));
	json_object_object_add(rt, "etime", json_object_new_int64((int64_t)dm->stats_etime));
	json_object_object_add(rt, "p0", jd(dm->qos_all.requests ? (double)dm->qos_all.misses /
							      (double)dm->qos_all.requests : 0));
	json_object_object_add(rt, "margin_ms", margins(&dm->qos_all, true));
	json_object_object_add(o, "rt", rt);
	json_object_object_add(o, "streams", streams_array(dm));
	for (unsigned k = 0; k < 8; k++) {
		json_object_array_add(bins, json_object_new_string(seek_labels[k]));
		json_object_array_add(counts, json_object_new_int64((int64_t)dm->seek_bins[k]));
		seeks += dm->seek_bins[k];
	}
	json_object_object_add(seek, "bins_gb", bins);
	json_object_object_add(seek, "counts", counts);
	json_object_object_add(seek, "frac_below_5", jd(seeks ? (double)(dm->seek_bins[0] +
		dm->seek_bins[1] + dm->seek_bins[2]) / (double)seeks : 0));
	json_object_object_add(o, "seek_distance", seek);
	json_object_object_add(be, "requests", json_object_new_int64((int64_t)dm->be_done));
	json_object_object_add(be, "bytes", json_object_new_int64((int64_t)dm->be_bytes));
	json_object_object_add(be, "mbps", jd(up > 0 ? (double)dm->be_bytes * 8 / 1e6 / up : 0));
	json_object_object_add(o, "be", be);
	json_object_object_add(q, "pending", json_object_new_int64(
		(int64_t)dm->sched.ops->pending(dm->sched.ctx)));
	json_object_object_add(q, "max_pending", json_object_new_int64((int64_t)dm->max_pending));
	json_object_object_add(q, "inflight", json_object_new_int64(dm->sched.inflight));
	json_object_object_add(o, "queue", q);
	json_object_object_add(mo, "rotation_ms", jd(m->tr_ns / 1e6));
	json_object_object_add(mo, "seek_avg_ms", jd(m->tk_ns / 1e6));
	json_object_object_add(mo, "rate_outer_mbs", jd(m->dmax / 1e6));
	json_object_object_add(mo, "rate_inner_mbs", jd(m->dmin / 1e6));
	json_object_object_add(mo, "bytes", json_object_new_int64((int64_t)m->lmax));
	json_object_object_add(o, "model", mo);
	json_object_object_add(mx, "policy", json_object_new_string(dm->sched.ops->name));
	json_object_object_add(mx, "margin_ms", jd((double)dm->sched.conf.margin_ns / 1e6));
	json_object_object_add(mx, "urgent_ms", jd((double)dm->sched.conf.urgent_ns / 1e6));
	json_object_object_add(mx, "chunk", json_object_new_int64(dm->sched.conf.chunk));
	{
		struct avfs_sched_counters k;

		avfs_sched_counters(&dm->sched, &k);
		json_object_object_add(mx, "chunks", json_object_new_int64((int64_t)k.chunks));
		json_object_object_add(mx, "jit_waits", json_object_new_int64((int64_t)k.jit_waits));
		json_object_object_add(mx, "jit_wait_ms", jd((double)k.jit_wait_ns / 1e6));
		json_object_object_add(mx, "seek_splits",
				       json_object_new_int64((int64_t)k.seek_splits));
		/* the predictor's transport estimate, and the turns its commands lost */
		json_object_object_add(mx, "jit_slip_ms", dm->predicting ?
				       jd(dm->rotpred.slip_ns / 1e6) : NULL);
		json_object_object_add(mx, "jit_lost_turns", json_object_new_int64(
				       (int64_t)dm->rotpred.slip_lost));
		json_object_object_add(mx, "jit_judged", json_object_new_int64(
				       (int64_t)dm->rotpred.slip_samples));
	}
	json_object_object_add(o, "mixer", mx);
	return o;
}

void avfsd_handle_admin(struct daemon *dm, struct client *c, uint64_t tag, const char *cmd,
			size_t len)
{
	struct avfs_msg_admin_reply rep = { 0 };
	int64_t now = avfsd_now();
	json_object *o = NULL;
	const char *text = "";

	if (len == 6 && !memcmp(cmd, "status", 6))
		o = admin_status(dm, now);
	else if (len == 7 && !memcmp(cmd, "streams", 7))
		o = admin_streams(dm);
	else if (len == 5 && !memcmp(cmd, "stats", 5))
		o = admin_stats(dm, now);
	else
		rep.res = -EINVAL;
	if (o)
		text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	avfsd_client_send(dm, c, AVFS_MSG_ADMIN, tag, &rep, sizeof(rep), text, strlen(text));
	json_object_put(o);
}

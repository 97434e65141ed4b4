/*
 * admin.c — avfs-admin's documents (docs/ADMIN.md) in json-c: status, streams, stats. Every
 * figure is the engine's (its metrics, reservations, scheduler) or the view's; this file only
 * lays them out.
 */
#include "admin.h"

#include "disk.h"
#include "engine.h"
#include "fs.h"
#include "rotpred.h"
#include "space.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NS 1e9

static json_object *jd(double v)
{
	return json_object_new_double(round(v * 1000) / 1000);
}

/* a margin in ms: a failed request is "minus forever", written as -1e9 ms */
static json_object *jms(double ns)
{
	return jd(isinf(ns) ? -1e9 : ns / 1e6);
}

static json_object *margins(const struct avfs_qos *q, bool p001)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "min", jd(!q->requests ? 0 : q->failed ? -1e9 :
					    (double)q->margin_min_ns / 1e6));
	if (p001)
		json_object_object_add(o, "p001", jms(avfs_qos_margin_quantile(q, 0.001)));
	json_object_object_add(o, "p01", jms(avfs_qos_margin_quantile(q, 0.01)));
	json_object_object_add(o, "p50", jms(avfs_qos_margin_quantile(q, 0.5)));
	return o;
}

/* A reservation; one of another user than viewer without its pid and inode (which say who
 * watches what). */
static json_object *stream_json(struct avfs_engine *e, const struct avfs_estream *s,
				uint32_t viewer)
{
	bool full = viewer == AVFSD_ADMIN_ALL || viewer == s->req.uid;
	const struct avfs_stream_info *si = avfs_admit_find(avfs_engine_admit(e), s->id);
	json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_int64((int64_t)s->id));
	json_object_object_add(o, "uid", json_object_new_int64(s->req.uid));
	if (full) {
		json_object_object_add(o, "pid", json_object_new_int64(s->pid));
		json_object_object_add(o, "inode", json_object_new_int64((int64_t)s->ino));
	}
	json_object_object_add(o, "detached", json_object_new_boolean(!s->owner));
	/* what it covers (SPEC §9): a file, or the files of a directory; every uid or one */
	json_object_object_add(o, "directory", json_object_new_boolean(s->dir));
	json_object_object_add(o, "covers_uid", s->uid_only ?
			       json_object_new_int64(s->cover_uid) : NULL);
	/* write-behind: what the daemon holds for it (engine/wbuf.c) */
	json_object_object_add(o, "buffered", json_object_new_int64((int64_t)s->wb_bytes));
	json_object_object_add(o, "buffered_peak", json_object_new_int64((int64_t)s->wb_peak));
	json_object_object_add(o, "buffer_waits", json_object_new_int64((int64_t)s->wb_waits));
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

static json_object *streams_array(struct avfs_engine *e, uint32_t viewer)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < avfs_engine_stream_count(e); i++)
		json_object_array_add(a, stream_json(e, avfs_engine_stream_at(e, i),
							    viewer));
	return a;
}

/* What the device is and how it is driven: the backend, its identification (SCSI INQUIRY and
 * VPD, NVMe Identify; empty strings where it has none) and the scheduler's mode. */
static json_object *disk_json(const struct avfsd_admin_view *v, struct avfs_engine *e)
{
	const struct avfs_disk_info *in = &v->disk->info;
	const struct avfs_disk_ident *id = &v->disk->ident;
	const struct avfs_sched_conf *c = &avfs_engine_conf(e)->sched;
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
	json_object_object_add(o, "depth", json_object_new_int64(
			       avfs_engine_sched(e)->max_inflight));
	json_object_object_add(o, "chunk", json_object_new_int64(c->chunk));
	json_object_object_add(o, "jit", json_object_new_boolean(c->jit));
	json_object_object_add(o, "split", json_object_new_int64((int64_t)c->split_bytes));
	return o;
}

static json_object *status(const struct avfsd_admin_view *v, struct avfs_engine *e,
			   size_t clients, int64_t now)
{
	struct avfs_admit *adm = avfs_engine_admit(e);
	const struct avfs_admit_conf *ac = avfs_admit_conf(adm);
	struct avfs_admit_left left;
	struct avfs_sweep_result sw;
	json_object *o = json_object_new_object(), *a = json_object_new_object();
	json_object *r = json_object_new_object();

	avfs_admit_left(adm, NULL, &left);
	json_object_object_add(o, "device", json_object_new_string(v->device));
	json_object_object_add(o, "mountpoint", json_object_new_string(v->mountpoint));
	json_object_object_add(o, "socket", json_object_new_string(v->socket));
	json_object_object_add(o, "uptime_s", jd((double)(now - v->since) / NS));
	json_object_object_add(o, "block_size", json_object_new_int64(
			       (int64_t)avfs_fs_block_size(avfs_engine_fs(e))));
	json_object_object_add(o, "policy", json_object_new_string(
			       avfs_engine_sched(e)->ops->name));
	/* a failed commit turned the file system read-only: what failed (issue 19) */
	json_object_object_add(o, "read_only", json_object_new_boolean(
			       avfs_fs_rdonly(avfs_engine_fs(e))));
	json_object_object_add(o, "failure", avfs_engine_failure(e) ?
			       json_object_new_string(avfs_engine_failure(e)) : NULL);
	/* the longest metadata commit so far (one under way included): how long another file's
	 * change may wait to be durable (ordered mode waits for data writes; commit-wait) */
	json_object_object_add(o, "commit_max_s", jd(avfs_engine_commit_max_s(e, now)));
	json_object_object_add(o, "clients", json_object_new_int64((int64_t)clients));
	json_object_object_add(o, "streams", json_object_new_int64(
			       (int64_t)avfs_engine_stream_count(e)));
	avfs_admit_sweep(adm, NULL, &sw);
	json_object_object_add(a, "test", json_object_new_string(
			       ac->test == AVFS_ADMIT_FAHRRAD ? "fahrrad" : "sweep"));
	json_object_object_add(a, "load", jd(avfs_admit_load(adm)));
	json_object_object_add(a, "limit", jd(avfs_admit_limit(adm)));
	json_object_object_add(a, "left", jd(left.util));
	json_object_object_add(a, "be_floor", jd(ac->be_floor));
	json_object_object_add(a, "isolation", json_object_new_boolean(ac->isolation));
	json_object_object_add(a, "default_io", json_object_new_int64(ac->default_io));
	/* the round model over the admitted set, whichever test decides */
	json_object_object_add(r, "round_ms", jd(sw.round_ns / 1e6));
	json_object_object_add(r, "gather_ms", jd(sw.gather_ns / 1e6));
	json_object_object_add(r, "visits_per_s", jd(sw.visits));
	json_object_object_add(r, "detours_per_s", jd(sw.detours));
	json_object_object_add(r, "urgent_per_s", jd(sw.urgent));
	json_object_object_add(r, "seek", jd(sw.seek));
	json_object_object_add(r, "rotation", jd(sw.rot));
	json_object_object_add(r, "transfer", jd(sw.xfer));
	json_object_object_add(r, "write_turns", jd(sw.turns));
	json_object_object_add(r, "commands", jd(sw.cmds));
	json_object_object_add(r, "margin", jd(sw.margin));
	json_object_object_add(r, "best_effort", jd(sw.be));
	json_object_object_add(r, "need", jd(sw.need));
	json_object_object_add(r, "limit", jd(sw.limit));
	json_object_object_add(a, "sweep", r);
	json_object_object_add(o, "admission", a);
	json_object_object_add(o, "disk", disk_json(v, e));
	return o;
}

static json_object *stats(const struct avfsd_admin_view *v, struct avfs_engine *e, int64_t now,
			  uint32_t viewer)
{
	const struct avfs_metrics *m = avfs_engine_metrics(e);
	const struct avfs_sched_conf *c = &avfs_engine_conf(e)->sched;
	struct avfs_sched *sched = avfs_engine_sched(e);
	struct avfs_metrics_summary s;
	struct avfs_sched_counters k;
	json_object *o = json_object_new_object(), *rt = json_object_new_object();
	json_object *seek = json_object_new_object(), *bins = json_object_new_array();
	json_object *counts = json_object_new_array(), *be = json_object_new_object();
	json_object *q = json_object_new_object(), *mo = json_object_new_object();
	json_object *mx = json_object_new_object();

	avfs_metrics_summary(m, now, &s);
	json_object_object_add(o, "device", json_object_new_string(v->device));
	json_object_object_add(o, "mountpoint", json_object_new_string(v->mountpoint));
	json_object_object_add(o, "uptime_s", jd((double)(now - v->since) / NS));
	json_object_object_add(o, "disk_utilization", jd(s.utilization));
	json_object_object_add(rt, "requests", json_object_new_int64((int64_t)s.rt_requests));
	json_object_object_add(rt, "misses", json_object_new_int64((int64_t)s.misses));
	json_object_object_add(rt, "etime", json_object_new_int64((int64_t)s.etime));
	json_object_object_add(rt, "p0", jd(s.p0));
	json_object_object_add(rt, "margin_ms", margins(&m->rt, true));
	json_object_object_add(o, "rt", rt);
	json_object_object_add(o, "streams", streams_array(e, viewer));
	for (unsigned i = 0; i < AVFS_SEEK_CLASSES; i++) {
		json_object_array_add(bins, json_object_new_string(avfs_seek_class_names[i]));
		json_object_array_add(counts, json_object_new_int64((int64_t)s.seek_class[i]));
	}
	json_object_object_add(seek, "bins_gb", bins);
	json_object_object_add(seek, "counts", counts);
	json_object_object_add(seek, "frac_below_5", jd(s.seek_frac_below_5));
	json_object_object_add(seek, "p50_gb", jd(s.seek_p50_gb));
	json_object_object_add(seek, "p90_gb", jd(s.seek_p90_gb));
	json_object_object_add(o, "seek_distance", seek);
	json_object_object_add(be, "requests", json_object_new_int64((int64_t)s.be_requests));
	json_object_object_add(be, "bytes", json_object_new_int64((int64_t)s.be_bytes));
	json_object_object_add(be, "mbps", jd(s.be_mbps));
	json_object_object_add(o, "be", be);
	json_object_object_add(o, "e_twait_ms", jd(s.e_twait_ms));
	json_object_object_add(o, "commands", json_object_new_int64((int64_t)s.commands));
	json_object_object_add(q, "pending", json_object_new_int64(
			       (int64_t)sched->ops->pending(sched->ctx)));
	json_object_object_add(q, "max_pending", json_object_new_int64((int64_t)s.max_pending));
	json_object_object_add(q, "inflight", json_object_new_int64(sched->inflight));
	json_object_object_add(q, "parked", json_object_new_int64(
			       (int64_t)avfs_engine_parked(e)));
	json_object_object_add(o, "queue", q);
	json_object_object_add(mo, "rotation_ms", jd(c->model.tr_ns / 1e6));
	json_object_object_add(mo, "seek_avg_ms", jd(c->model.tk_ns / 1e6));
	json_object_object_add(mo, "rate_outer_mbs", jd(c->model.dmax / 1e6));
	json_object_object_add(mo, "rate_inner_mbs", jd(c->model.dmin / 1e6));
	json_object_object_add(mo, "bytes", json_object_new_int64((int64_t)c->model.lmax));
	json_object_object_add(o, "model", mo);
	json_object_object_add(mx, "policy", json_object_new_string(sched->ops->name));
	json_object_object_add(mx, "margin_ms", jd((double)c->margin_ns / 1e6));
	json_object_object_add(mx, "urgent_ms", jd((double)c->urgent_ns / 1e6));
	json_object_object_add(mx, "chunk", json_object_new_int64(c->chunk));
	json_object_object_add(mx, "hold", json_object_new_string(c->sweep ? "sweep" : "batch"));
	json_object_object_add(mx, "coalesce", json_object_new_int64(c->coalesce));
	json_object_object_add(mx, "coalesce_ahead", json_object_new_int64(c->coalesce_ahead));
	json_object_object_add(mx, "order", json_object_new_string(c->satf ? "satf" : "lba"));
	json_object_object_add(mx, "reduced_carry", json_object_new_boolean(c->reduced_carry));
	json_object_object_add(mx, "prefetch_carry", json_object_new_boolean(c->prefetch_carry));
	json_object_object_add(mx, "recover_ms", jd((double)c->recover_ns / 1e6));
	avfs_sched_counters(sched, &k);
	json_object_object_add(mx, "satf_picks", json_object_new_int64((int64_t)k.satf_picks));
	json_object_object_add(mx, "overload", json_object_new_int64((int64_t)k.overload));
	json_object_object_add(mx, "coalesced", json_object_new_int64((int64_t)k.coalesced));
	json_object_object_add(mx, "chunks", json_object_new_int64((int64_t)k.chunks));
	json_object_object_add(mx, "jit_waits", json_object_new_int64((int64_t)k.jit_waits));
	json_object_object_add(mx, "jit_wait_ms", jd((double)k.jit_wait_ns / 1e6));
	json_object_object_add(mx, "seek_splits", json_object_new_int64((int64_t)k.seek_splits));
	{
		struct avfs_engine_ra_counts ra;
		json_object *r = json_object_new_object();

		avfs_engine_ra_counts(e, &ra);
		json_object_object_add(r, "fetches", json_object_new_int64((int64_t)ra.fetches));
		json_object_object_add(r, "served", json_object_new_int64((int64_t)ra.served));
		json_object_object_add(r, "dropped", json_object_new_int64((int64_t)ra.dropped));
		json_object_object_add(o, "read_ahead", r);
	}
	/* the predictor's transport estimate, and the turns its commands lost */
	json_object_object_add(mx, "jit_slip_ms", v->rotpred ? jd(v->rotpred->slip_ns / 1e6) : NULL);
	json_object_object_add(mx, "jit_lost_turns", json_object_new_int64(
			       v->rotpred ? (int64_t)v->rotpred->slip_lost : 0));
	json_object_object_add(mx, "jit_judged", json_object_new_int64(
			       v->rotpred ? (int64_t)v->rotpred->slip_samples : 0));
	json_object_object_add(o, "mixer", mx);
	if (v->retain) {	/* per-directory quotas and retention (fuse/retain.h) */
		json_object *r = json_object_new_object();

		json_object_object_add(r, "deleted", json_object_new_int64(
				       (int64_t)v->retain->deleted));
		json_object_object_add(r, "deleted_bytes", json_object_new_int64(
				       (int64_t)v->retain->deleted_bytes));
		json_object_object_add(r, "passes", json_object_new_int64(
				       (int64_t)v->retain->runs));
		json_object_object_add(r, "failed", json_object_new_int64(
				       (int64_t)v->retain->failed));
		json_object_object_add(r, "edquot", json_object_new_int64(
				       (int64_t)v->retain->edquot));
		json_object_object_add(o, "retention", r);
	}
	return o;
}

char *avfsd_admin_json(const struct avfsd_admin_view *v, struct avfs_engine *e, size_t clients,
		       const char *cmd, size_t len, int64_t now, uint32_t viewer, int *err)
{
	json_object *o = NULL;
	char *text;

	*err = 0;
	if (len == 6 && !memcmp(cmd, "status", 6)) {
		o = status(v, e, clients, now);
	} else if (len == 7 && !memcmp(cmd, "streams", 7)) {
		o = json_object_new_object();
		json_object_object_add(o, "streams", streams_array(e, viewer));
	} else if (len == 5 && !memcmp(cmd, "stats", 5)) {
		o = stats(v, e, now, viewer);
	} else {
		*err = -EINVAL;
		return NULL;
	}
	text = o ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : NULL;
	json_object_put(o);
	if (!text)
		*err = -ENOMEM;
	return text;
}

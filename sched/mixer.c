/*
 * mixer.c — the traffic mixer ("tm", papers/001 §3.3, SPEC §5) with semi-preemptible I/O
 * (papers/003, SPEC §6): RT requests held in LBA order until the hold time H, then run as
 * one batch through the EDF / reduced C-SCAN / C-SCAN windows; BE requests in C-SCAN order
 * from the last executed request with ageing, admitted under hold only when H allows; long
 * requests issued in chunks so that an urgent request can run between two of them; JIT seek
 * and seek splitting where the disk's rotation can be predicted.
 * Sans-I/O: `now` is an argument; no clock, no sleep, no descriptor.
 *
 * Data structure: treaps keyed by byte offset, each node carrying the aggregates that make
 * every decision O(log n): the sum of service times T_S in the subtree, the minimum of
 * T_D − m − (prefix sum of T_S) in the subtree (so H = the root's value), and the minimum and
 * maximum deadline (the EDF window, the reduced window's subset, the batch-joining rule).
 */
#include "iosched.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct avfs_io *io;
	struct node *l, *r;
	uint64_t prio;
	uint64_t key, tie;	/* byte offset (LBA order), or deadline (EDF, non-rotational) */
	int64_t dl;		/* deadline, INT64_MAX for BE */
	double ts;		/* T_S with alpha against the predecessor in this tree */
	double sum;		/* sum of ts over the subtree */
	double minh;		/* min over the subtree of dl − m − prefix(ts) */
	int64_t mindl, maxdl;
	struct node *older, *newer;	/* BE arrival list (ageing) */
	uint64_t jit_until_off;	/* JIT: the offset the slack was computed for */
	bool in_batch;		/* taken from the batch: a remainder goes back to it */
	struct node *fl_prev, *fl_next;	/* in-flight list (dispatched, not done) */
	bool split_done;	/* a split seek already went out for the current offset */
};

struct tree {
	struct node *root;
	size_t n;
};

struct tm {
	struct avfs_sched_conf c;
	struct tree rt;		/* pending RT, LBA order (held) */
	struct tree batch;	/* the RT batch being executed */
	struct tree be;		/* BE, LBA order */
	struct tree edf;	/* non-rotational: RT by deadline */
	struct node *be_old, *be_new;	/* BE in arrival order */
	uint64_t cursor;	/* batch C-SCAN position */
	uint64_t last_end;	/* end of the last executed command (RT or BE) */
	uint64_t seq, rng;
	struct node *flight;	/* nodes of dispatched commands (rotational: at most one) */
	int64_t jit_until;	/* JIT slack of jit_node ends then */
	struct node *jit_node;
	size_t npending;
	int64_t be_forced;	/* when a starving BE request was last put before RT */
	struct avfs_sched_counters cnt;
};

/* ---- treap ---- */

static uint64_t rnd(struct tm *t)
{
	uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool less(const struct node *a, uint64_t key, uint64_t tie)
{
	return a->key < key || (a->key == key && a->tie < tie);
}

static void upd(struct tm *t, struct node *n)
{
	double base;

	n->sum = n->ts;
	n->mindl = n->maxdl = n->dl;
	base = n->ts;
	if (n->l) {
		base += n->l->sum;
		n->sum += n->l->sum;
		n->mindl = n->l->mindl < n->mindl ? n->l->mindl : n->mindl;
		n->maxdl = n->l->maxdl > n->maxdl ? n->l->maxdl : n->maxdl;
	}
	/* papers/001 eq. (2): H_j = T_D(R_ej) − (m + Σ_{i<=j} T_S(R_ei)) */
	n->minh = (double)n->dl - (double)t->c.margin_ns - base;
	if (n->l && n->l->minh < n->minh)
		n->minh = n->l->minh;
	if (n->r) {
		n->sum += n->r->sum;
		n->mindl = n->r->mindl < n->mindl ? n->r->mindl : n->mindl;
		n->maxdl = n->r->maxdl > n->maxdl ? n->r->maxdl : n->maxdl;
		if (n->r->minh - base < n->minh)
			n->minh = n->r->minh - base;
	}
}

static void split(struct tm *t, struct node *n, uint64_t key, uint64_t tie, struct node **a,
		  struct node **b)
{
	if (!n) {
		*a = *b = NULL;
		return;
	}
	if (less(n, key, tie)) {
		split(t, n->r, key, tie, &n->r, b);
		*a = n;
	} else {
		split(t, n->l, key, tie, a, &n->l);
		*b = n;
	}
	upd(t, n);
}

static struct node *merge(struct tm *t, struct node *a, struct node *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		a->r = merge(t, a->r, b);
		upd(t, a);
		return a;
	}
	b->l = merge(t, a, b->l);
	upd(t, b);
	return b;
}

static struct node *tmin(struct node *n)
{
	while (n && n->l)
		n = n->l;
	return n;
}

static struct node *tmax(struct node *n)
{
	while (n && n->r)
		n = n->r;
	return n;
}

static struct node *pop_min(struct tm *t, struct node **root)
{
	struct node *m = tmin(*root), *a, *b;

	if (!m)
		return NULL;
	split(t, *root, m->key, m->tie + 1, &a, &b);
	*root = b;
	a->l = a->r = NULL;	/* a is m alone */
	return a;
}

static void set_ts(struct tm *t, struct node *n, const struct node *pred)
{
	bool seq = pred && pred->io->off + pred->io->len == n->io->off;

	/* the whole remaining request has to be served before its deadline, chunked or not */
	n->ts = avfs_svc_time(&t->c.model, n->io->off, n->io->len, seq);
	n->l = n->r = NULL;
	upd(t, n);
}

static void tree_insert(struct tm *t, struct tree *tr, struct node *n)
{
	struct node *a, *b, *s;

	n->prio = rnd(t);
	split(t, tr->root, n->key, n->tie, &a, &b);
	set_ts(t, n, tmax(a));
	s = pop_min(t, &b);	/* the successor's alpha depends on the new node */
	if (s) {
		set_ts(t, s, n);
		b = merge(t, s, b);
	}
	tr->root = merge(t, merge(t, a, n), b);
	tr->n++;
}

static void tree_erase(struct tm *t, struct tree *tr, struct node *n)
{
	struct node *a, *b, *m, *s;

	split(t, tr->root, n->key, n->tie, &a, &b);
	m = pop_min(t, &b);	/* == n */
	(void)m;
	s = pop_min(t, &b);
	if (s) {
		set_ts(t, s, tmax(a));
		b = merge(t, s, b);
	}
	tr->root = merge(t, a, b);
	tr->n--;
	n->l = n->r = NULL;
}

static struct node *next_ge(struct node *n, uint64_t key)
{
	struct node *best = NULL;

	while (n) {
		if (n->key >= key) {
			best = n;
			n = n->l;
		} else {
			n = n->r;
		}
	}
	return best;
}

/* The first node in key order with key >= k and dl < x. */
static struct node *next_ge_dl(struct node *n, uint64_t k, int64_t x)
{
	struct node *f;

	if (!n || n->mindl >= x)
		return NULL;
	if (n->key < k)
		return next_ge_dl(n->r, k, x);
	f = next_ge_dl(n->l, k, x);
	if (f)
		return f;
	if (n->dl < x)
		return n;
	return next_ge_dl(n->r, k, x);
}

static struct node *min_dl(struct node *n)
{
	while (n) {
		if (n->l && n->l->mindl == n->mindl)
			n = n->l;
		else if (n->dl == n->mindl)
			return n;
		else
			n = n->r;
	}
	return NULL;
}

/* ---- policy ---- */

static int tm_init(void **ctx, const struct avfs_sched_conf *c)
{
	struct tm *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->c = *c;
	t->rng = 0x7a11ed5eedull;
	*ctx = t;
	return 0;
}

static void free_tree(struct node *n)
{
	if (!n)
		return;
	free_tree(n->l);
	free_tree(n->r);
	n->io->pv[0] = NULL;
	free(n);
}

static void tm_destroy(void *ctx)
{
	struct tm *t = ctx;

	free_tree(t->rt.root);
	free_tree(t->batch.root);
	free_tree(t->be.root);
	free_tree(t->edf.root);
	while (t->flight) {
		struct node *n = t->flight;

		t->flight = n->fl_next;
		n->io->pv[0] = NULL;
		free(n);
	}
	free(t);
}

static void be_link(struct tm *t, struct node *n)
{
	n->older = t->be_new;
	n->newer = NULL;
	if (t->be_new)
		t->be_new->newer = n;
	else
		t->be_old = n;
	t->be_new = n;
}

static void be_unlink(struct tm *t, struct node *n)
{
	if (n->older)
		n->older->newer = n->newer;
	else
		t->be_old = n->newer;
	if (n->newer)
		n->newer->older = n->older;
	else
		t->be_new = n->older;
	n->older = n->newer = NULL;
}

/* Put a request (new, or partly done) where it belongs. */
static void place(struct tm *t, struct node *n, bool fresh)
{
	struct avfs_io *io = n->io;

	n->dl = io->deadline ? io->deadline : INT64_MAX;
	if (!t->c.rotational && io->deadline) {
		n->key = (uint64_t)io->deadline;
		tree_insert(t, &t->edf, n);
		return;
	}
	n->key = io->off;
	if (!io->deadline) {
		tree_insert(t, &t->be, n);
		if (fresh) {
			be_link(t, n);
		} else {	/* a remainder keeps its seniority: back at the old end */
			n->newer = t->be_old;
			n->older = NULL;
			if (t->be_old)
				t->be_old->older = n;
			else
				t->be_new = n;
			t->be_old = n;
		}
		return;
	}
	/* papers/001 §3.3.4: an RT request arriving during a batch joins it only if its
	 * deadline is earlier than the latest deadline of the batch; the remainder of a
	 * chunked batch request goes back to the batch */
	if ((!fresh && n->in_batch) || (t->batch.root && io->deadline < t->batch.root->maxdl)) {
		tree_insert(t, &t->batch, n);
		n->in_batch = true;
	} else {
		tree_insert(t, &t->rt, n);
		n->in_batch = false;
	}
}

static int tm_submit(void *ctx, struct avfs_io *io, int64_t now)
{
	struct tm *t = ctx;
	struct node *n = calloc(1, sizeof(*n));

	(void)now;
	if (!n)
		return -ENOMEM;
	n->io = io;
	n->tie = t->seq++;
	io->pv[0] = n;
	place(t, n, true);
	t->npending++;
	return 0;
}

/* H of papers/001 eq. (3) over the held RT requests. The first request's T_S was taken with
 * alpha = 1; if it starts where the last command ended, it needs no seek. */
static double hold_time(struct tm *t)
{
	struct node *first = tmin(t->rt.root);
	double h = t->rt.root->minh;

	if (first && first->io->off == t->last_end)
		h += t->c.model.tk_ns + t->c.model.tr_ns / 2;
	return h;
}

/* The next BE request: the oldest one if it has waited past the age bound, else C-SCAN from
 * the end of the last executed request. */
static struct node *be_pick(struct tm *t, int64_t now)
{
	struct node *n;

	if (!t->be.root)
		return NULL;
	if (t->be_old && now - t->be_old->io->arrival > t->c.be_age_ns)
		return t->be_old;
	n = next_ge(t->be.root, t->last_end);
	return n ? n : tmin(t->be.root);
}

static uint32_t cmd_len(struct tm *t, const struct avfs_io *io)
{
	if (t->c.chunk && io->len > t->c.chunk)
		return t->c.chunk;
	return (uint32_t)io->len;
}

/* Take n out of its tree and make it the command (or fail it). */
static void take(struct tm *t, struct node *n, struct tree *tr)
{
	tree_erase(t, tr, n);
	if (tr == &t->be)
		be_unlink(t, n);
}

static void fly(struct tm *t, struct node *n)
{
	n->fl_prev = NULL;
	n->fl_next = t->flight;
	if (t->flight)
		t->flight->fl_prev = n;
	t->flight = n;
}

static void land(struct tm *t, struct node *n)
{
	if (n->fl_prev)
		n->fl_prev->fl_next = n->fl_next;
	else if (t->flight == n)
		t->flight = n->fl_next;
	if (n->fl_next)
		n->fl_next->fl_prev = n->fl_prev;
	n->fl_prev = n->fl_next = NULL;
}

/* Dispatch n now — unless JIT or seek splitting say otherwise. Returns true if cmd is set. */
static bool issue(struct tm *t, struct node *n, struct tree *tr, int64_t now,
		  struct avfs_sched_cmd *cmd)
{
	struct avfs_io *io = n->io;
	int64_t seek = 0, rot = 0, half = 0;
	uint64_t mid = 0;
	int known = -1;

	if ((t->c.jit || t->c.split_bytes) && t->c.pred.predict)
		known = t->c.pred.predict(t->c.pred.ctx, now, io->off, &seek, &rot, &half, &mid);
	if (known >= 0) {
		uint64_t dist = io->off > t->last_end ? io->off - t->last_end : t->last_end - io->off;

		/* papers/003 §3.3: split a long seek when the rotational slack hides the cost */
		if (t->c.split_bytes && dist > t->c.split_bytes && !n->split_done &&
		    rot > 2 * half - seek) {
			n->split_done = true;
			t->cnt.seek_splits++;
			take(t, n, tr);
			fly(t, n);
			*cmd = (struct avfs_sched_cmd){ .kind = AVFS_SCHED_DISPATCH, .io = io,
							.off = mid, .seek = true };
			return true;
		}
		/* papers/003 §3.2: JIT seek — wait out the rotational slack, preemptibly */
		if (t->c.jit && known == 0 && rot > t->c.jit_offset_ns + 100000 &&
		    !(t->jit_node == n && n->jit_until_off == io->off && now >= t->jit_until)) {
			if (t->jit_node != n || n->jit_until_off != io->off) {
				t->cnt.jit_waits++;
				t->cnt.jit_wait_ns += rot - t->c.jit_offset_ns;
			}
			t->jit_node = n;
			n->jit_until_off = io->off;
			t->jit_until = now + rot - t->c.jit_offset_ns;
			*cmd = (struct avfs_sched_cmd){ .kind = AVFS_SCHED_WAIT, .at = t->jit_until };
			return true;
		}
	}
	take(t, n, tr);
	fly(t, n);
	t->jit_node = NULL;
	*cmd = (struct avfs_sched_cmd){ .kind = AVFS_SCHED_DISPATCH, .io = io, .off = io->off,
					.len = cmd_len(t, io), .write = io->write };
	/* papers/003 §3.1.3: only the last chunk of a write carries FUA */
	cmd->fua = io->fua && cmd->len == io->len;
	t->cnt.chunks += cmd->len < io->orig_len;
	return true;
}

static void fail(struct tm *t, struct node *n, struct tree *tr, struct avfs_sched_cmd *cmd)
{
	struct avfs_io *io = n->io;

	take(t, n, tr);
	io->pv[0] = NULL;
	free(n);
	t->npending--;
	if (t->jit_node == n)
		t->jit_node = NULL;
	*cmd = (struct avfs_sched_cmd){ .kind = AVFS_SCHED_FAIL, .io = io, .err = -ETIME };
}

/* papers/001 §3.3.4, Fig. 11: the windows of the RT scheduler over the batch. */
static void batch_next(struct tm *t, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct node *d = min_dl(t->batch.root), *n;
	int64_t td = d->dl;

	if (td <= now) {		/* missed: fail it, never issue it */
		fail(t, d, &t->batch, cmd);
		return;
	}
	if (td <= now + t->c.urgent_ns) {	/* EDF window */
		issue(t, d, &t->batch, now, cmd);
		return;
	}
	if (td <= now + t->c.margin_ns) {	/* reduced C-SCAN window */
		int64_t lim = td + t->c.margin_ns;

		n = next_ge_dl(t->batch.root, t->cursor, lim);
		if (!n)
			n = next_ge_dl(t->batch.root, 0, lim);
	} else {			/* the normal case: C-SCAN over the whole batch */
		n = next_ge(t->batch.root, t->cursor);
		if (!n)
			n = tmin(t->batch.root);
	}
	issue(t, n, &t->batch, now, cmd);
}

static void activate(struct tm *t)
{
	/* the whole set of held RT requests becomes one batch, executed from e_0 */
	struct node *n;

	while ((n = pop_min(t, &t->rt.root))) {
		t->rt.n--;
		tree_insert(t, &t->batch, n);
		n->in_batch = true;
	}
	t->cursor = 0;
}

static void next_nonrot(struct tm *t, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct node *n = tmin(t->edf.root);

	/* SPEC §5.6: no holding for seeks, EDF for RT, BE in arrival order after RT */
	if (n) {
		if (n->dl <= now)
			fail(t, n, &t->edf, cmd);
		else
			issue(t, n, &t->edf, now, cmd);
		return;
	}
	if (t->be_old) {
		issue(t, t->be_old, &t->be, now, cmd);
		return;
	}
	cmd->kind = AVFS_SCHED_IDLE;
}

static void tm_next(void *ctx, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct tm *t = ctx;
	struct node *be;
	double h;

	if (!t->c.rotational) {
		next_nonrot(t, now, cmd);
		return;
	}
	/* the best-effort floor: under an RT load that never leaves the hold time any room, a
	 * BE request older than the age bound still goes first, one every age bound — at most
	 * one worst-case command per be_age (2 % of the disk at the defaults: admission's u_BE),
	 * so metadata commits and ordinary files always make progress */
	if (t->be_old && now - t->be_old->io->arrival > t->c.be_age_ns &&
	    now - t->be_forced >= t->c.be_age_ns && (t->batch.root || t->rt.root)) {
		t->be_forced = now;
		issue(t, t->be_old, &t->be, now, cmd);
		return;
	}
	if (t->batch.root) {
		batch_next(t, now, cmd);
		return;
	}
	if (t->rt.root) {
		h = hold_time(t);
		if (h <= (double)now) {
			activate(t);
			batch_next(t, now, cmd);
			return;
		}
		be = be_pick(t, now);
		if (be) {
			uint32_t len = cmd_len(t, be->io);
			double ts = avfs_svc_time(&t->c.model, be->io->off, len,
						  be->io->off == t->last_end);

			/* papers/001 §3.3.3: BE under hold only while H >= t + T_S(R') */
			if (h >= (double)now + ts) {
				issue(t, be, &t->be, now, cmd);
				return;
			}
			activate(t);
			batch_next(t, now, cmd);
			return;
		}
		cmd->kind = AVFS_SCHED_WAIT;	/* the hold timer */
		cmd->at = (int64_t)ceil(h);
		return;
	}
	be = be_pick(t, now);
	if (be) {
		issue(t, be, &t->be, now, cmd);
		return;
	}
	cmd->kind = AVFS_SCHED_IDLE;
}

static bool tm_done(void *ctx, const struct avfs_sched_cmd *cmd, int64_t now, int res)
{
	struct tm *t = ctx;
	struct avfs_io *io = cmd->io;
	struct node *n = io ? io->pv[0] : NULL;

	(void)now;
	if (!n)
		return true;
	land(t, n);
	if (res < 0) {
		io->pv[0] = NULL;
		free(n);
		t->npending--;
		return true;
	}
	if (cmd->seek) {
		place(t, n, false);	/* the transfer is still to come */
		return false;
	}
	io->off += cmd->len;
	io->len -= cmd->len;
	t->last_end = io->off;
	t->cursor = io->off;
	n->split_done = false;
	if (io->len) {
		place(t, n, false);	/* the rest of a chunked request */
		return false;
	}
	io->pv[0] = NULL;
	free(n);
	t->npending--;
	return true;
}

static size_t tm_pending(void *ctx)
{
	return ((struct tm *)ctx)->npending;
}

static int tm_cancel(void *ctx, struct avfs_io *io)
{
	struct tm *t = ctx;
	struct node *n = io->pv[0];
	struct tree *tr;

	if (!n)
		return -ENOENT;
	if (n->fl_prev || t->flight == n)
		return -EBUSY;
	if (!io->deadline)
		tr = &t->be;
	else if (!t->c.rotational)
		tr = &t->edf;
	else
		tr = n->in_batch ? &t->batch : &t->rt;
	take(t, n, tr);
	if (t->jit_node == n)
		t->jit_node = NULL;
	io->pv[0] = NULL;
	free(n);
	t->npending--;
	return 0;
}

static void tm_counters(void *ctx, struct avfs_sched_counters *out)
{
	*out = ((struct tm *)ctx)->cnt;
}

const struct avfs_sched_ops avfs_sched_tm = {
	.name = "tm",
	.init = tm_init,
	.destroy = tm_destroy,
	.submit = tm_submit,
	.next = tm_next,
	.done = tm_done,
	.pending = tm_pending,
	.cancel = tm_cancel,
	.counters = tm_counters,
};

/* exported for tests: the current hold time (NAN when nothing is held) */
double avfs_tm_hold_time(void *ctx);
double avfs_tm_hold_time(void *ctx)
{
	struct tm *t = ctx;

	return t->rt.root ? hold_time(t) : NAN;
}

/*
 * mixer.c — the traffic mixer ("tm", papers/001 §3.3, SPEC §5) with semi-preemptible I/O
 * (papers/003, SPEC §6). RT requests are held while every one of them can wait (the hold time
 * H), and then served through the EDF / reduced C-SCAN / C-SCAN windows — in papers/001's
 * batches (hold = batch, the default: H over the held requests in LBA order, then all of them
 * as one batch) or as one sweep that never stops (hold = sweep: H over the C-SCAN order from
 * the head, taken between turns; new requests join the turn under way where the head has not
 * passed yet, as long as every request keeps half the margin). A batch goes in C-SCAN order,
 * or (order = satf) each command is the one of the next few in that order that the predictor
 * says the head reaches first, as long as the ones it jumps keep their margin. A command
 * carries the pending requests that follow it on the disk (coalescing: a stream's next
 * buffers, one seek and one rotational wait for all). BE requests go in C-SCAN order from the
 * last executed request with ageing, under hold only when H allows — while they belong to one
 * flow (io->flow); with several, the flow served longest ago goes next (commits first), in
 * C-SCAN order within it, so that a greedy sequential reader, whose next request always lies
 * ahead of the head, does not keep every other client waiting for the age bound; long
 * requests in chunks
 * so that an urgent request can run between two of them; JIT seek and seek splitting where
 * the disk's rotation can be predicted. Overload: while the RT request due first cannot be met
 * any more (a stall of the disk, or more load than it carries), the windows that serve by
 * deadline stand aside and the batch or sweep goes on in its order, coalescing, so that the
 * backlog is worked off at the disk's best rate and deadlines are kept again (a late request
 * is late either way; serving the late ones one seek each would keep every later one at the
 * edge of its deadline for good).
 * Sans-I/O: `now` is an argument; no clock, no sleep, no descriptor.
 *
 * Data structure: treaps keyed by (sweep turn, byte offset), each node carrying the
 * aggregates that make every decision O(log n): the sum of service times T_S in the subtree,
 * the minimum of T_D − m − (prefix sum of T_S) in the subtree (so H = the root's value), and
 * the minimum and maximum deadline (the EDF window, the reduced window's subset, the
 * batch-joining rule).
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
	uint64_t lap;		/* hold = sweep: the turn of the sweep it is served in; else 0 */
	uint64_t key, tie;	/* byte offset (LBA order), or deadline (EDF, non-rotational) */
	int64_t dl;		/* deadline, INT64_MAX for BE */
	double ts;		/* T_S with alpha against the predecessor in this tree */
	double sum;		/* sum of ts over the subtree */
	double minh;		/* min over the subtree of dl − m − prefix(ts) */
	int64_t mindl, maxdl;
	struct node *older, *newer;	/* BE arrival list (ageing) */
	struct flow *fl;		/* BE: its flow's record */
	struct node *fprev, *fnext;	/* BE: the flow's pending requests */
	uint64_t jit_until_off;	/* JIT: the offset the slack was computed for */
	struct tree *home;	/* the tree it is in (NULL: in flight, or alone) */
	bool in_batch;		/* taken from the batch: a remainder goes back to it */
	struct node *fl_prev, *fl_next;	/* in-flight list (dispatched, not done) */
	bool split_done;	/* a split seek already went out for the current offset */
};

struct tree {
	struct node *root;
	size_t n;
};

/* A BE flow's record (io->flow). Kept after its last request left, so that a greedy flow
 * whose next request comes just after the last went out keeps its place behind the others;
 * a slot is reused least recently served first. Past FLOWS flows with requests at once, new
 * ones share a slot (and its turns). */
#define FLOWS 64

struct flow {
	uint64_t id;
	bool used;
	unsigned n;		/* pending requests */
	struct node *head;	/* them, in no order */
	uint64_t end;		/* end of its last request served: its own C-SCAN position */
	uint64_t served;	/* the BE sequence number of its last request served (0: never) */
};

struct tm {
	struct avfs_sched_conf c;
	struct tree trees[2];	/* rt and batch point to them; activation swaps them */
	struct tree *rt;	/* hold = batch: pending RT, LBA order (held) */
	struct tree *batch;	/* hold = batch: the RT batch being executed; hold = sweep: every
				 * RT request, in the sweep's order (turn, offset) */
	struct tree be;		/* BE, LBA order */
	struct tree edf;	/* non-rotational: RT by deadline */
	struct node *be_old, *be_new;	/* BE in arrival order */
	uint64_t cursor;	/* batch/sweep C-SCAN position */
	uint64_t lap;		/* sweep: the turn the head is in (the cursor's) */
	bool running;		/* sweep: the turn t->lap was let go (H came): it runs to its end */
	uint64_t last_end;	/* end of the last executed command (RT or BE) */
	uint64_t run_bytes;	/* bytes read or written in a row up to last_end */
	uint64_t seq, rng;
	struct node *flight;	/* nodes of dispatched commands (rotational: at most one) */
	int64_t jit_until;	/* JIT slack of jit_node ends then */
	struct node *jit_node;
	size_t npending;
	int64_t be_forced;	/* when a starving BE request was last put before RT */
	struct flow flows[FLOWS];
	unsigned be_flows;	/* flows with pending requests */
	uint64_t be_served;	/* BE requests served (the flows' order) */
	bool pinned;		/* order = satf: the command out jumped the batch's C-SCAN order,
				 * so the cursor stays (the requests it jumped come next) */
	/* coalescing, set for one issue() by the window that picked the request: followers due
	 * after join_lim stay (the window's subset); the command ends by co_end (BE under hold);
	 * out_of_order: the pick jumped the sweep, so the others' deadlines bound it too */
	int64_t join_lim, co_end;
	bool out_of_order;
	struct avfs_sched_counters cnt;
	int64_t missed_at;	/* when an RT request last missed its deadline (0: never) */
};

/* ---- treap ---- */

static uint64_t rnd(struct tm *t)
{
	uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* (lap, key, tie) order: the sweep's turns first, then the offset, then arrival. */
static bool less(const struct node *a, uint64_t lap, uint64_t key, uint64_t tie)
{
	if (a->lap != lap)
		return a->lap < lap;
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

static void split(struct tm *t, struct node *n, uint64_t lap, uint64_t key, uint64_t tie,
		  struct node **a, struct node **b)
{
	if (!n) {
		*a = *b = NULL;
		return;
	}
	if (less(n, lap, key, tie)) {
		split(t, n->r, lap, key, tie, &n->r, b);
		*a = n;
	} else {
		split(t, n->l, lap, key, tie, a, &n->l);
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

/* The left spine of a treap, root first, at most SPINE nodes: its length, or SPINE + 1 when
 * it is longer (a treap that deep is astronomically unlikely; the callers then split). */
#define SPINE 160
static unsigned spine(struct node *root, struct node **path)
{
	unsigned d = 0;

	for (struct node *x = root; x; x = x->l) {
		if (d == SPINE)
			return SPINE + 1;
		path[d++] = x;
	}
	return d;
}

/* Take the first node out: spliced off the left spine, the aggregates refreshed up it. */
static struct node *pop_min(struct tm *t, struct node **root)
{
	struct node *path[SPINE], *m, *a, *b;
	unsigned d = spine(*root, path);

	if (!d)
		return NULL;
	if (d > SPINE) {
		m = tmin(*root);
		split(t, *root, m->lap, m->key, m->tie + 1, &a, &b);
		*root = b;
		a->l = a->r = NULL;	/* a is m alone */
		return a;
	}
	m = path[--d];
	if (d)
		path[d - 1]->l = m->r;
	else
		*root = m->r;
	while (d--)
		upd(t, path[d]);
	m->l = m->r = NULL;
	return m;
}

static double ts_of(struct tm *t, const struct node *n, const struct node *pred)
{
	bool seq = pred && pred->io->off + pred->io->len == n->io->off;

	/* the whole remaining request has to be served before its deadline, chunked or not */
	return avfs_svc_time(&t->c.model, n->io->off, n->io->len, seq);
}

static void set_ts(struct tm *t, struct node *n, const struct node *pred)
{
	n->ts = ts_of(t, n, pred);
	n->l = n->r = NULL;
	upd(t, n);
}

/* The first node of a treap now follows pred: its alpha again, the aggregates refreshed up
 * the left spine (no change of shape). */
static void refresh_first(struct tm *t, struct node **root, const struct node *pred)
{
	struct node *path[SPINE];
	unsigned d = spine(*root, path);

	if (!d)
		return;
	if (d > SPINE) {
		struct node *s = pop_min(t, root);

		set_ts(t, s, pred);
		*root = merge(t, s, *root);
		return;
	}
	path[d - 1]->ts = ts_of(t, path[d - 1], pred);
	while (d--)
		upd(t, path[d]);
}

static void tree_insert(struct tm *t, struct tree *tr, struct node *n)
{
	struct node *a, *b;

	n->prio = rnd(t);
	split(t, tr->root, n->lap, n->key, n->tie, &a, &b);
	set_ts(t, n, tmax(a));
	refresh_first(t, &b, n);	/* the successor's alpha depends on the new node */
	tr->root = merge(t, merge(t, a, n), b);
	tr->n++;
	n->home = tr;
}

static void tree_erase(struct tm *t, struct tree *tr, struct node *n)
{
	struct node *a, *b, *m;

	split(t, tr->root, n->lap, n->key, n->tie, &a, &b);
	m = pop_min(t, &b);	/* == n */
	(void)m;
	refresh_first(t, &b, tmax(a));
	tr->root = merge(t, a, b);
	tr->n--;
	n->l = n->r = NULL;
	n->home = NULL;
}

/* The first node at or after (lap, key). */
static struct node *find_ge(struct node *n, uint64_t lap, uint64_t key)
{
	struct node *best = NULL;

	while (n) {
		if (!less(n, lap, key, 0)) {
			best = n;
			n = n->l;
		} else {
			n = n->r;
		}
	}
	return best;
}

/* The first node with offset >= key, in a tree of one turn (BE, batches). */
static struct node *next_ge(struct node *n, uint64_t key)
{
	return find_ge(n, 0, key);
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
	t->rt = &t->trees[0];
	t->batch = &t->trees[1];
	t->rng = 0x7a11ed5eedull;
	t->join_lim = t->co_end = INT64_MAX;
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

	free_tree(t->rt->root);
	free_tree(t->batch->root);
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

/* n's flow record: the one with its id, else the free slot served longest ago. */
static struct flow *flow_of(struct tm *t, uint64_t id)
{
	struct flow *free_slot = NULL;

	for (unsigned i = 0; i < FLOWS; i++) {
		struct flow *f = &t->flows[i];

		if (f->used && f->id == id)
			return f;
		if (!f->n && (!free_slot || !f->used ||
			      (free_slot->used && f->served < free_slot->served)))
			free_slot = f;
	}
	if (!free_slot)	/* every slot has requests: share one */
		return &t->flows[id % FLOWS];
	*free_slot = (struct flow){ .id = id, .used = true };
	return free_slot;
}

static void flow_add(struct tm *t, struct node *n)
{
	struct flow *f = flow_of(t, n->io->flow);

	n->fl = f;
	n->fprev = NULL;
	n->fnext = f->head;
	if (f->head)
		f->head->fprev = n;
	f->head = n;
	if (!f->n++)
		t->be_flows++;
}

/* n leaves the BE requests: dispatched (its flow's turn) or canceled. */
static void flow_del(struct tm *t, struct node *n)
{
	struct flow *f = n->fl;

	if (!f)
		return;
	if (n->fprev)
		n->fprev->fnext = n->fnext;
	else
		f->head = n->fnext;
	if (n->fnext)
		n->fnext->fprev = n->fprev;
	n->fprev = n->fnext = NULL;
	n->fl = NULL;
	f->served = ++t->be_served;
	f->end = n->io->off + n->io->len;
	if (!--f->n)
		t->be_flows--;
}

/* Several flows wait: the commits' first, else the one served longest ago; within it the
 * request at or after its own last end (C-SCAN), else its lowest. O(FLOWS + its requests). */
static struct node *flow_pick(struct tm *t)
{
	struct flow *f = NULL;
	struct node *best = NULL, *low = NULL;

	for (unsigned i = 0; i < FLOWS; i++) {
		struct flow *g = &t->flows[i];

		if (!g->n)
			continue;
		if (g->id == AVFS_IO_FLOW_META) {
			f = g;
			break;
		}
		if (!f || g->served < f->served)
			f = g;
	}
	for (struct node *x = f->head; x; x = x->fnext) {
		if (x->key >= f->end && (!best || x->key < best->key ||
					 (x->key == best->key && x->tie < best->tie)))
			best = x;
		if (!low || x->key < low->key || (x->key == low->key && x->tie < low->tie))
			low = x;
	}
	return best ? best : low;
}

static void be_link(struct tm *t, struct node *n)
{
	flow_add(t, n);
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
	flow_del(t, n);
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

/* The latest deadline of the nodes in turns up to lap (-1 if none). */
static int64_t maxdl_upto(const struct node *n, uint64_t lap)
{
	int64_t m = -1;

	while (n) {
		if (n->lap <= lap) {
			if (n->dl > m)
				m = n->dl;
			if (n->l && n->l->maxdl > m)
				m = n->l->maxdl;
			n = n->r;
		} else {
			n = n->l;
		}
	}
	return m;
}

static double hold_of(struct tm *t, const struct tree *tr);

/* Sweep: may n (fresh, ahead of the head) join the turn under way? Every request served after
 * it is delayed by its service time, and a turn that takes whatever arrives ahead of the head
 * could be held up without end (the requests at its far end waiting for the ones that keep
 * joining before them), so it joins if its deadline is earlier than that of a request of the
 * turn (papers/001 §3.3.4's rule for a batch), or if every request still keeps half the
 * margin m in the sweep's order: H with it >= now - m/2. The other half is for the model's
 * errors (docs/DESIGN.md, "Decisions measured"). If it joins, it is in the tree on return. */
static bool joins_turn(struct tm *t, struct node *n, int64_t now)
{
	bool earlier = n->dl < maxdl_upto(t->batch->root, t->lap);

	tree_insert(t, t->batch, n);
	if (earlier || hold_of(t, t->batch) >= (double)now - (double)t->c.margin_ns / 2)
		return true;
	tree_erase(t, t->batch, n);
	return false;
}

/* Sweep: must a new request at off wait for the next turn although the head has not passed
 * it (see place())? */
static bool next_turn(struct tm *t, uint64_t off)
{
	struct node *p = NULL, *x = t->batch->root;

	if (off == t->last_end && t->run_bytes >= (t->c.coalesce ? t->c.coalesce : 1))
		return true;
	while (x) {		/* the last request of the next turn before off */
		if (less(x, t->lap + 1, off, 0)) {
			p = x;
			x = x->r;
		} else {
			x = x->l;
		}
	}
	return p && p->lap == t->lap + 1 && p->io->off + p->io->len == off;
}

/* Put a request (new, or partly done) where it belongs. */
static void place(struct tm *t, struct node *n, bool fresh, int64_t now)
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
			flow_add(t, n);
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
	if (t->c.sweep) {
		/* the sweep: a request joins the turn the head is in if the head has not passed
		 * it yet, else the next one. A stream that asks as fast as it is served must not
		 * keep the head: once the head has read a whole coalescing size in a row, the
		 * request that starts where it stopped goes to the next turn, and so does one that
		 * continues a request of the next turn. (Below that size it goes at once: a
		 * stream's buffer that came due while its command ran, still in the drive's
		 * read-ahead.) The remainder of a chunk, or a request whose seek went out, keeps
		 * its turn. */
		n->in_batch = true;
		if (fresh)
			n->lap = io->off >= t->cursor && !next_turn(t, io->off) ? t->lap
										  : t->lap + 1;
		if (fresh && n->lap == t->lap && !joins_turn(t, n, now))
			n->lap = t->lap + 1;
		if (!n->home)
			tree_insert(t, t->batch, n);
		return;
	}
	/* papers/001 §3.3.4: an RT request arriving during a batch joins it only if its
	 * deadline is earlier than the latest deadline of the batch; the remainder of a
	 * chunked batch request goes back to the batch */
	if ((!fresh && n->in_batch) || (t->batch->root && io->deadline < t->batch->root->maxdl)) {
		tree_insert(t, t->batch, n);
		n->in_batch = true;
	} else {
		tree_insert(t, t->rt, n);
		n->in_batch = false;
	}
}

static int tm_submit(void *ctx, struct avfs_io *io, int64_t now)
{
	struct tm *t = ctx;
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->io = io;
	n->tie = t->seq++;
	io->pv[0] = n;
	place(t, n, true, now);
	t->npending++;
	return 0;
}

/* H of papers/001 eq. (3) over the RT requests of a tree in its order: the held ones (hold =
 * batch), or the sweep from the head (hold = sweep: the tree's order is the sweep's, turn by
 * turn). The first request's T_S was taken with alpha = 1; if it starts where the last
 * command ended, it needs no seek. */
static double hold_of(struct tm *t, const struct tree *tr)
{
	struct node *first = tmin(tr->root);
	double h = tr->root->minh;

	if (first && first->io->off == t->last_end)
		h += t->c.model.tk_ns + t->c.model.tr_ns / 2;
	return h;
}

static double hold_time(struct tm *t)
{
	return hold_of(t, t->rt);
}

/* The next BE request: the oldest one if it has waited past the age bound, else C-SCAN from
 * the end of the last executed request (one flow) or the next flow's (several). */
static struct node *be_pick(struct tm *t, int64_t now)
{
	struct node *n;

	if (!t->be.root)
		return NULL;
	if (t->be_old && now - t->be_old->io->arrival > t->c.be_age_ns)
		return t->be_old;
	if (t->be_flows > 1)
		return flow_pick(t);
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
	n->in_batch = tr == t->batch;	/* where a remainder of it goes back */
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

/* Coalescing. A command carries the pending requests that follow it on the disk — a
 * stream's next buffers, a recording's next writes — for one seek and one rotational wait
 * instead of one each (a write sent after the one before it ends finds its first sector just
 * gone by: a whole turn lost). What may join: */
#define CO_MARGIN_DIV 4	/* a command that carries more than one request takes at most m/4 by
			 * the service-time model: with m = 500 ms a stream's whole 4 MiB buffer,
			 * with a short margin only what keeps the mixer preemptible enough */

/* s, if it is the request at `end` in turn `lap` that may follow n in one command. */
static bool follows(const struct node *n, const struct node *s, uint64_t lap, uint64_t end)
{
	return s && s->lap == lap && s->io->off == end && s->io->write == n->io->write &&
	       !s->io->fua;
}

/* The pending request that starts at `end` in n's direction: in tr at n's turn — or the next
 * one, in the sweep — or, for a batch request, among the held ones (a stream's request that
 * came after the batch began, right behind it on the disk). NULL if none. */
static struct node *follower(struct tm *t, const struct node *n, uint64_t end, struct tree *tr,
			     struct tree **from)
{
	bool sweep = tr == t->batch && t->c.sweep;
	struct node *s;

	*from = tr;
	for (uint64_t lap = n->lap; lap <= n->lap + sweep; lap++) {
		s = find_ge(tr->root, lap, end);
		if (follows(n, s, lap, end))
			return s;
	}
	if (tr != t->batch || t->c.sweep)
		return NULL;
	*from = t->rt;
	s = next_ge(t->rt->root, end);
	return follows(n, s, 0, end) ? s : NULL;
}

/* How long (modelled) the command of n may take once it carries more than n: within m/4;
 * before n's own deadline less e (n completes with the whole command); before the hold time
 * (BE under hold). */
static double co_budget(struct tm *t, const struct node *n, int64_t now)
{
	double b = (double)t->c.margin_ns / CO_MARGIN_DIV;

	if (n->dl != INT64_MAX && (double)(n->dl - now - t->c.urgent_ns) < b)
		b = (double)(n->dl - now - t->c.urgent_ns);
	if (t->co_end != INT64_MAX && (double)(t->co_end - now) < b)
		b = (double)(t->co_end - now);
	return b;
}

#define TIES_MAX 256	/* requests due first counted by ties_time (a round's of one stream) */

/* The modelled time of the requests of a subtree due at dl, the earliest deadline (a round
 * stream's requests share one), in offset order: a positioning for each that does not start
 * where the one before ends. *k counts them, at most TIES_MAX; *end is the last one's end. */
static double ties_time(struct tm *t, const struct node *n, int64_t dl, unsigned *k,
			uint64_t *end)
{
	double s = 0;

	if (!n || n->mindl > dl || *k >= TIES_MAX)
		return 0;
	s += ties_time(t, n->l, dl, k, end);
	if (n->dl == dl && *k < TIES_MAX) {
		s += avfs_svc_time(&t->c.model, n->io->off, n->io->len, n->io->off == *end);
		*end = n->io->off + n->io->len;
		++*k;
	}
	return s + ties_time(t, n->r, dl, k, end);
}

/* When n jumped the sweep or the batch (EDF or reduced window), the command must also end
 * early enough that the most urgent RT request it does not carry — with those due at the
 * same time — is still served before its deadline less e/2. Less e, for one request, kept the
 * windows' commands so short near the margin that the mixer stayed there, a seek per
 * stream's piece; one request alone let a command take the time of a round stream's other
 * requests due with it (docs/DESIGN.md, "Bigger commands, read-ahead that starts small").
 * (The command's requests are out of the trees by now.) */
static double others_budget(struct tm *t, int64_t now)
{
	struct node *o = t->batch->root ? min_dl(t->batch->root) : NULL;
	uint64_t end = UINT64_MAX;
	unsigned k = 0;
	double ties;

	if (t->rt->root && (!o || t->rt->root->mindl < o->dl))
		o = min_dl(t->rt->root);
	if (!o)
		return INFINITY;
	ties = ties_time(t, t->batch->root, o->dl, &k, &end);
	ties += ties_time(t, t->rt->root, o->dl, &k, &end);
	return (double)(o->dl - now) - (double)t->c.urgent_ns / 2 - ties;
}

/* Add s (out of its tree) to the command that ends with `last`. */
static void carry(struct tm *t, struct avfs_io **last, struct node *s, struct avfs_sched_cmd *cmd)
{
	fly(t, s);
	if (t->jit_node == s)
		t->jit_node = NULL;
	(*last)->more = s->io;
	*last = s->io;
	cmd->len += (uint32_t)s->io->len;
	t->cnt.coalesced++;
}

/* The bytes a command may reach while it carries s next: cap, or coalesce-ahead when s is
 * read ahead (no client waits for it yet) and nothing bounds every command (chunk). */
static uint64_t cap_for(const struct tm *t, const struct node *s, uint64_t cap)
{
	if (s->io->prefetch && !t->c.chunk && t->c.coalesce_ahead > cap && cap)
		return t->c.coalesce_ahead;
	return cap;
}

/* The nodes of a subtree in order into v (at most max); their count. */
static unsigned in_order(struct node *n, struct node **v, unsigned at, unsigned max)
{
	if (!n || at > max)
		return at;
	at = in_order(n->l, v, at, max);
	if (at < max)
		v[at] = n;
	return in_order(n->r, v, at + 1, max);
}

/* The followers of the command in one tree and turn, cut out as one range: two splits and a
 * merge however many they are (each taken alone would cost a removal: O(k log n) against
 * O(log n + k)). They are found first without changing the tree; the range between the first
 * and the last must hold them and nothing else (a request overlapping them keeps the slow
 * way). With `with_n`, n is still in tr (its turn: lap) and goes out in the same cut, which
 * saves its own removal; it is out on return whatever else happens. Returns how many
 * followers it carried. */
static unsigned carry_range(struct tm *t, struct node *n, struct tree *tr, uint64_t lap,
			    struct avfs_sched_cmd *cmd, struct avfs_io **last, uint64_t cap,
			    double budget, unsigned room, bool with_n)
{
	struct node *v[AVFS_SCHED_COALESCE_MAX], *first = with_n ? n : NULL, *end_node = first;
	struct node *a, *b, *c, *d, *st[SPINE];
	uint64_t end = cmd->off + cmd->len, len = cmd->len;
	unsigned cnt = 0, sp = 0, want;

	/* in order from the first node at or after (lap, end) — or n: a stack of the nodes whose
	 * left subtree is still to come, so that k followers cost O(k + depth), not O(k depth) */
	for (struct node *x = tr->root; x && sp < SPINE;) {
		if (with_n ? !less(x, n->lap, n->key, n->tie) : !less(x, lap, end, 0)) {
			st[sp++] = x;
			x = x->l;
		} else {
			x = x->r;
		}
	}
	for (bool skip = with_n;; skip = false) {
		struct node *s = sp ? st[--sp] : NULL;

		if (s)
			for (struct node *x = s->r; x && sp < SPINE; x = x->l)
				st[sp++] = x;
		if (skip && s == n)
			continue;	/* n itself comes first */
		if (skip || cnt == room || !follows(n, s, lap, end) ||
		    len + s->io->len > cap_for(t, s, cap) ||
		    s->dl > t->join_lim ||
		    avfs_svc_time(&t->c.model, cmd->off, len + s->io->len,
				  cmd->off == t->last_end) > budget)
			break;
		if (!first)
			first = s;
		end_node = s;
		len += s->io->len;
		end += s->io->len;
		cnt++;
	}
	if (!first)
		return 0;
	want = cnt + with_n;
	split(t, tr->root, first->lap, first->key, first->tie, &a, &b);
	split(t, b, end_node->lap, end_node->key, end_node->tie + 1, &c, &d);
	if (in_order(c, v, 0, want) != want) {	/* something else lies among them */
		tr->root = merge(t, merge(t, a, c), d);
		if (!with_n)
			return 0;
		take(t, n, tr);
		return carry_range(t, n, tr, lap, cmd, last, cap, budget, room, false);
	}
	refresh_first(t, &d, tmax(a));	/* its alpha now depends on what precedes the range */
	tr->root = merge(t, a, d);
	tr->n -= want;
	if (with_n) {		/* as take() */
		n->in_batch = tr == t->batch;
		n->l = n->r = NULL;
		n->home = NULL;
		if (tr == &t->be)
			be_unlink(t, n);
	}
	for (unsigned i = with_n; i < want; i++) {
		v[i]->l = v[i]->r = NULL;
		v[i]->home = NULL;
		if (tr == &t->be)
			be_unlink(t, v[i]);
		carry(t, last, v[i], cmd);
	}
	return cnt;
}

/* Take n (still in tr) out of it and extend its command by its followers: each taken out of
 * its tree and flown with n, chained on io->more; a later deadline served early is never a
 * miss. */
static void coalesce(struct tm *t, struct node *n, struct tree *tr, struct avfs_sched_cmd *cmd,
		     int64_t now)
{
	uint64_t cap = t->c.coalesce;
	struct avfs_io *last = n->io;
	double budget;
	unsigned k = 1;

	if (t->c.chunk && t->c.chunk < cap)
		cap = t->c.chunk;	/* semi-preemptible I/O bounds every command */
	if (!cap || !t->c.rotational ||
	    cmd->len >= (t->c.chunk ? cap : fmax(cap, t->c.coalesce_ahead))) {
		take(t, n, tr);
		return;
	}
	budget = co_budget(t, n, now);
	/* the common case at once: n with its followers in its tree and turn, then those in the
	 * next turn (the sweep) or among the held requests (a batch's request), in the window's
	 * order */
	if (!t->out_of_order) {
		k += carry_range(t, n, tr, n->lap, cmd, &last, cap, budget,
				 AVFS_SCHED_COALESCE_MAX - k, true);
		if (tr == t->batch)
			k += carry_range(t, n, t->c.sweep ? tr : t->rt, t->c.sweep ? n->lap + 1 : 0,
					 cmd, &last, cap, budget, AVFS_SCHED_COALESCE_MAX - k, false);
	} else {
		take(t, n, tr);
	}
	while (k < AVFS_SCHED_COALESCE_MAX) {	/* the others one by one */
		struct tree *from = NULL;
		struct node *s = follower(t, n, cmd->off + cmd->len, tr, &from);
		double need;

		if (!s || cmd->len + s->io->len > cap_for(t, s, cap) ||
		    (s->dl > t->join_lim && !(t->c.prefetch_carry && s->io->prefetch)))
			break;
		need = avfs_svc_time(&t->c.model, cmd->off, cmd->len + s->io->len,
				     cmd->off == t->last_end);
		if (need > budget)
			break;
		take(t, s, from);
		if (t->out_of_order && need > others_budget(t, now)) {
			tree_insert(t, from, s);	/* it stays for later (an RT request) */
			break;
		}
		carry(t, &last, s, cmd);
		k++;
	}
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
	t->jit_node = NULL;
	*cmd = (struct avfs_sched_cmd){ .kind = AVFS_SCHED_DISPATCH, .io = io, .off = io->off,
					.len = cmd_len(t, io), .write = io->write };
	/* papers/003 §3.1.3: only the last chunk of a write carries FUA */
	cmd->fua = io->fua && cmd->len == io->len;
	t->cnt.chunks += cmd->len < io->orig_len;
	if (cmd->len == io->len && !io->fua)
		coalesce(t, n, tr, cmd, now);	/* takes n out of tr */
	else
		take(t, n, tr);
	fly(t, n);
	return true;
}

/* issue() with the coalescing bounds of the window that picked n; they hold for this one. */
static bool issue_in(struct tm *t, struct node *n, struct tree *tr, int64_t now,
		     struct avfs_sched_cmd *cmd, int64_t join_lim, int64_t co_end, bool out_of_order)
{
	bool r;

	t->join_lim = join_lim;
	t->co_end = co_end;
	t->out_of_order = out_of_order;
	r = issue(t, n, tr, now, cmd);
	t->join_lim = t->co_end = INT64_MAX;
	t->out_of_order = false;
	return r;
}

static void fail(struct tm *t, struct node *n, struct tree *tr, int64_t now,
		 struct avfs_sched_cmd *cmd)
{
	struct avfs_io *io = n->io;

	t->missed_at = now > 0 ? now : 1;
	take(t, n, tr);
	io->pv[0] = NULL;
	free(n);
	t->npending--;
	if (t->jit_node == n)
		t->jit_node = NULL;
	*cmd = (struct avfs_sched_cmd){ .kind = AVFS_SCHED_FAIL, .io = io, .err = -ETIME };
}

/* A run: requests that follow each other on the disk in one direction (a stream's buffers),
 * which one command carries. Does s start one, after p in LBA order? */
static bool run_head(const struct node *p, const struct node *s)
{
	return !p || p->io->off + p->io->len != s->io->off || p->io->write != s->io->write;
}

/* The batch's next requests in C-SCAN order from key (those at or after it, then from the
 * lowest) up to the first `heads` runs, at most SATF_SCAN requests, into v. O(their count +
 * depth). Their count. */
#define SATF_SCAN 256
static unsigned cscan_first(struct node *root, uint64_t key, struct node **v, unsigned heads)
{
	struct node *st[SPINE];
	unsigned got = 0, runs = 0;

	for (int pass = 0; pass < 2; pass++) {
		unsigned sp = 0;

		for (struct node *x = root; x && sp < SPINE;) {
			if (pass || !less(x, 0, key, 0)) {
				st[sp++] = x;
				x = x->l;
			} else {
				x = x->r;
			}
		}
		while (sp && got < SATF_SCAN) {
			struct node *s = st[--sp];

			if (pass && !less(s, 0, key, 0))
				return got;	/* back where the first pass began */
			if (run_head(got ? v[got - 1] : NULL, s) && ++runs > heads)
				return got;
			v[got++] = s;
			for (struct node *x = s->r; x && sp < SPINE; x = x->l)
				st[sp++] = x;
		}
	}
	return got;
}

/* order = satf: which of v[0..k) (the batch's next requests in C-SCAN order; v[0] is C-SCAN's
 * choice) goes now. The one the head reaches first by the predictor (seek + rotational wait)
 * among those whose command, served before the ones it jumps, leaves each of them its margin
 * m by the service-time model (papers/001 eq. (2) over the C-SCAN order from now): a request
 * C-SCAN order would serve with its margin keeps it. The command is charged as if it carried
 * all that coalescing may add (the coalescing size, within m/4), so that it is never cut
 * short, and its positioning as predicted where that exceeds the model's. The requests after
 * it are not delayed (the model charges every positioning alike).
 * Only the first of a run of adjacent requests is a candidate: a stream's later buffers go
 * with its first, in one command. Ties and unknown predictions: the earlier in C-SCAN order.
 * *allow: how long (modelled) the chosen command may take (INFINITY for v[0]). */
static unsigned satf_pick(struct tm *t, struct node **v, unsigned k, int64_t now, double *allow)
{
	double slack = INFINITY, pre = 0, best_pos = INFINITY;
	double alpha = t->c.model.tk_ns + t->c.model.tr_ns / 2;	/* the model's positioning */
	unsigned best = 0;

	*allow = INFINITY;
	for (unsigned i = 0; i < k; i++) {
		const struct avfs_io *io = v[i]->io;
		/* (the first is charged its positioning: once jumped, it no longer follows
		 * the head) */
		bool head = run_head(i ? v[i - 1] : NULL, v[i]);
		bool seq = i && v[i - 1]->io->off + v[i - 1]->io->len == io->off;
		uint64_t most = t->c.coalesce > io->len ? t->c.coalesce : io->len;
		int64_t seek = 0, rot = 0, half = 0;
		uint64_t mid = 0;
		double own = fmax(avfs_svc_time(&t->c.model, io->off, io->len, false),
				  fmin(avfs_svc_time(&t->c.model, io->off, most, false),
				       (double)t->c.margin_ns / CO_MARGIN_DIV));

		/* a jump's own positioning is charged as the predictor says where that is more
		 * than the model's (a long seek back or ahead) */
		if ((i == 0 || (head && own <= slack)) &&
		    t->c.pred.predict(t->c.pred.ctx, now, io->off, &seek, &rot, &half, &mid) >= 0 &&
		    (double)(seek + rot) < best_pos &&
		    (i == 0 || own + fmax(0, (double)(seek + rot) - alpha) <= slack)) {
			best_pos = (double)(seek + rot);
			best = i;
			*allow = i ? slack : INFINITY;
		}
		/* v[i] served in C-SCAN order: its slack over its margin */
		pre += avfs_svc_time(&t->c.model, io->off, io->len, seq);
		if ((double)(v[i]->dl - t->c.margin_ns - now) - pre < slack)
			slack = (double)(v[i]->dl - t->c.margin_ns - now) - pre;
	}
	return best;
}

/* Overload: d, the RT request due first, cannot be met even if it went now — less is left
 * before its deadline than its modelled service time (positioning and transfer). Then serving
 * by deadline (EDF, the reduced window) only makes a seek per request and keeps every later
 * request as late: after a 2-s stall of the disk at 12 HD streams, 46 % of the next 500 s
 * missed so. The caller goes on in its C-SCAN order instead, coalescing, until d can be met
 * (docs/DESIGN.md, "Overload"). Counted once per decision so made. */
static bool overloaded(struct tm *t, const struct node *d, int64_t now)
{
	if ((double)d->dl >= (double)now + avfs_svc_time(&t->c.model, d->io->off, d->io->len,
							 d->io->off == t->last_end))
		return false;
	t->cnt.overload++;
	return true;
}

/* hold = batch: an RT request missed its deadline less than `recover` ago. A disk asked for a
 * little more than it carries otherwise slides from whole buffers a command into one piece
 * each — every stream's next piece is due within e when the mixer gets to it, and the EDF
 * window takes it alone — where it stays (21 contiguous HD readers: 0.9 MB a command, 20 %
 * missed for the rest of the hour), while the request due first can always just be met, so
 * overloaded() never says so. The batch goes on in its C-SCAN order then too (docs/DESIGN.md,
 * "Overload: recovering"). Not for the sweep: its detours are what serve a period shorter
 * than a turn, and without them one miss brings the next (Fahrrad's four streams at
 * m = 100 ms: 1 miss, 191 with it). Counted as an overload decision. */
static bool recovering(struct tm *t, int64_t now)
{
	if (!t->missed_at || now - t->missed_at >= t->c.recover_ns)
		return false;
	t->cnt.overload++;
	return true;
}

/* papers/001 §3.3.4, Fig. 11: the windows of the RT scheduler over the batch. */
static void batch_next(struct tm *t, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct node *d = min_dl(t->batch->root), *n;
	int64_t td = d->dl;

	if (td <= now) {		/* missed: fail it, never issue it */
		fail(t, d, t->batch, now, cmd);
		return;
	}
	if (overloaded(t, d, now) || recovering(t, now))
		goto cscan;
	if (td <= now + t->c.urgent_ns) {	/* EDF window */
		issue_in(t, d, t->batch, now, cmd, now + t->c.urgent_ns, INT64_MAX, true);
		return;
	}
	if (td <= now + t->c.margin_ns) {	/* reduced C-SCAN window */
		int64_t lim = td + t->c.margin_ns;

		n = next_ge_dl(t->batch->root, t->cursor, lim);
		if (!n)
			n = next_ge_dl(t->batch->root, 0, lim);
		/* ... unless that one alone would leave the request due first (and those due with
		 * it) less than e/2: that one goes first then, as in the EDF window */
		if (n->dl > td && avfs_svc_time(&t->c.model, n->io->off, n->io->len,
						n->io->off == t->last_end) > others_budget(t, now)) {
			issue_in(t, d, t->batch, now, cmd, now + t->c.urgent_ns, INT64_MAX, true);
			return;
		}
		/* its command carries what the window takes that follows it on the disk — or,
		 * with reduced-carry, whatever that is due, as long as the request due first
		 * that it does not carry can spare the time (others_budget): a stream's next
		 * buffers left behind here come due soon after, each with a seek of its own
		 * (docs/DESIGN.md, "Coalescing in the reduced window") */
		issue_in(t, n, t->batch, now, cmd, t->c.reduced_carry ? INT64_MAX : lim - 1,
			 INT64_MAX, true);
		return;
	}
	/* the normal case: C-SCAN over the whole batch */
cscan:
	if (t->c.satf && t->c.pred.predict) {
		struct node *v[SATF_SCAN];
		unsigned k = cscan_first(t->batch->root, t->cursor, v, t->c.satf_window);
		double allow;
		unsigned i;

		i = satf_pick(t, v, k, now, &allow);
		if (i) {	/* out of C-SCAN order: the command ends within the allowance */
			issue_in(t, v[i], t->batch, now, cmd, INT64_MAX,
				 now + (int64_t)allow, false);
			if (cmd->kind == AVFS_SCHED_DISPATCH && !cmd->seek) {
				t->pinned = true;
				t->cnt.satf_picks++;
			}
			return;
		}
	}
	n = next_ge(t->batch->root, t->cursor);
	if (!n)
		n = tmin(t->batch->root);
	issue(t, n, t->batch, now, cmd);
}

/* BE under hold (papers/001 §3.3.3): the next BE request R' only while H >= t + T_S(R'), and
 * a coalesced command of it only as long as it ends by H. Returns true if cmd is set. */
static bool be_under_hold(struct tm *t, double h, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct node *be = be_pick(t, now);
	double ts;

	if (!be)
		return false;
	ts = avfs_svc_time(&t->c.model, be->io->off, cmd_len(t, be->io),
			   be->io->off == t->last_end);
	if (h < (double)now + ts)
		return false;
	issue_in(t, be, &t->be, now, cmd, INT64_MAX, (int64_t)h, false);
	return true;
}

/* The modelled time from now until d is served, in the order of tr (as hold_of() counts). */
static double prefix_of(struct tm *t, const struct tree *tr, const struct node *d)
{
	const struct node *first = tmin(tr->root);
	double p = 0;

	for (const struct node *x = tr->root; x;) {
		if (x != d && less(d, x->lap, x->key, x->tie)) {
			x = x->l;
			continue;
		}
		p += x->ts + (x->l ? x->l->sum : 0);
		if (x == d)
			break;
		x = x->r;
	}
	if (first && first->io->off == t->last_end)
		p -= t->c.model.tk_ns + t->c.model.tr_ns / 2;
	return p;
}

/* hold = sweep. Every RT request is in t->batch in the sweep's order: the turn the head is in
 * from the cursor on, then the next turn. Between two turns the sweep holds while every
 * request can wait — the hold time of papers/001 eq. (3) taken over that order — and once H
 * comes, the turn runs to its end in that order, as a batch does (holding again after each
 * command would keep every request at the edge of its margin, the hold letting go just enough
 * for the next one: one stream's turn then meets another's and both miss). Requests join the
 * turn under way where the head has not passed yet (place(), joins_turn()); the EDF window of
 * §3.3.4 and a reduced C-SCAN window — when the request due first would keep less than half
 * the margin in the sweep's order — are detours that leave the sweep where it was. So a
 * request waits for at most the rest of one turn where a batch makes one that arrives just
 * after it began wait for the rest of it and for the next. */
static void sweep_next(struct tm *t, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct node *d = min_dl(t->batch->root), *n = tmin(t->batch->root);
	double h;
	bool late;

	if (n->lap > t->lap) {		/* the turn is done (the detours too): the next one */
		t->lap = n->lap;
		t->cursor = 0;
		t->running = false;
	}
	if (d->dl <= now) {		/* missed: fail it, never issue it */
		fail(t, d, t->batch, now, cmd);
		return;
	}
	late = overloaded(t, d, now);	/* no detours: the sweep goes on */
	if (!late && d->dl <= now + t->c.urgent_ns) {	/* EDF window: a detour, the sweep stays */
		issue_in(t, d, t->batch, now, cmd, now + t->c.urgent_ns, INT64_MAX, true);
		return;
	}
	if (!t->running) {
		h = hold_of(t, t->batch);
		if (h > (double)now) {	/* every request can wait: hold */
			/* (a BE command moves the head: the first request pays its seek again) */
			if (be_under_hold(t, t->batch->root->minh, now, cmd))
				return;
			cmd->kind = AVFS_SCHED_WAIT;	/* the hold timer */
			cmd->at = (int64_t)ceil(h);
			return;
		}
		t->running = true;
	}
	if (!late && d->dl <= now + t->c.margin_ns &&
	    (double)now + prefix_of(t, t->batch, d) > (double)(d->dl - t->c.margin_ns / 2)) {
		/* the sweep's order would leave the request due first less than m/2: the
		 * requests due soon first, in the sweep's order (reduced C-SCAN), a detour */
		int64_t lim = d->dl + t->c.margin_ns;

		n = next_ge_dl(t->batch->root, 0, lim);
		issue_in(t, n, t->batch, now, cmd, t->c.reduced_carry ? INT64_MAX : lim - 1,
			 INT64_MAX, true);	/* as a batch's */
		return;
	}
	issue(t, n, t->batch, now, cmd);	/* the sweep goes on */
	if (cmd->kind == AVFS_SCHED_DISPATCH && !cmd->seek) {
		t->lap = n->lap;
		t->cursor = cmd->off + cmd->len;
	}
}

static void activate(struct tm *t)
{
	/* the whole set of held RT requests becomes one batch, executed from e_0: the batch is
	 * empty, so the held tree becomes it as it is (O(1); its nodes name it as their home) */
	struct tree *held = t->rt;

	t->rt = t->batch;
	t->batch = held;
	t->cursor = 0;
}

static void next_nonrot(struct tm *t, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct node *n = tmin(t->edf.root);

	/* SPEC §5.6: no holding for seeks, EDF for RT, BE in arrival order after RT */
	if (n) {
		if (n->dl <= now)
			fail(t, n, &t->edf, now, cmd);
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
	    now - t->be_forced >= t->c.be_age_ns && (t->batch->root || t->rt->root)) {
		t->be_forced = now;
		/* one request, never coalesced: the floor is one command per be_age */
		issue_in(t, t->be_old, &t->be, now, cmd, INT64_MAX, now, true);
		return;
	}
	if (t->c.sweep) {
		if (t->batch->root) {
			sweep_next(t, now, cmd);
			return;
		}
	} else if (t->batch->root) {
		batch_next(t, now, cmd);
		return;
	} else if (t->rt->root) {
		h = hold_time(t);
		if (h <= (double)now) {
			activate(t);
			batch_next(t, now, cmd);
			return;
		}
		if (be_under_hold(t, h, now, cmd))
			return;
		if (t->be.root) {	/* BE waits that would not fit: the batch now */
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
	uint32_t mine;

	if (!n)
		return true;
	land(t, n);
	/* a coalesced command: the requests it carried are whole (or failed) with it */
	for (struct avfs_io *x = io->more; x; x = x->more) {
		struct node *m = x->pv[0];

		land(t, m);
		x->pv[0] = NULL;
		free(m);
		t->npending--;
	}
	if (res < 0) {
		t->pinned = false;
		io->pv[0] = NULL;
		free(n);
		t->npending--;
		return true;
	}
	if (cmd->seek) {
		place(t, n, false, now);	/* the transfer is still to come */
		return false;
	}
	mine = io->more ? (uint32_t)io->len : cmd->len;	/* a coalesced command carried all of n */
	io->off += mine;
	io->len -= mine;
	t->run_bytes = cmd->off == t->last_end ? t->run_bytes + cmd->len : cmd->len;
	t->last_end = cmd->off + cmd->len;
	/* the sweep's cursor moves only with the sweep (sweep_next); a batch's stays where the
	 * requests an out-of-order command jumped are (order = satf) */
	if (!t->c.sweep && !t->pinned)
		t->cursor = t->last_end;
	t->pinned = false;

	n->split_done = false;
	if (io->len) {
		place(t, n, false, now);	/* the rest of a chunked request */
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
	tr = n->home;
	if (!tr)
		return -EBUSY;	/* cannot be: every node not in flight is in its tree */
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

/* exported for tests: the current hold time (NAN when nothing is held): over the held
 * requests (hold = batch) or over the sweep from the head (hold = sweep) */
double avfs_tm_hold_time(void *ctx);
double avfs_tm_hold_time(void *ctx)
{
	struct tm *t = ctx;

	if (t->c.sweep)
		return t->batch->root && t->c.rotational ? hold_of(t, t->batch) : NAN;
	return t->rt->root ? hold_time(t) : NAN;
}

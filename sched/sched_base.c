/*
 * sched_base.c — the baseline disk schedulers fifo, cscan (mq-deadline), edf and scan-edf,
 * kept only to be compared with the traffic mixer (SPEC §13). They never hold a request back,
 * never fail one (a late request is still issued; the caller counts the miss) and never chunk.
 * In-flight limits, argument checks of the wrapper and deadline refusal live in daemon/sched.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iosched.h"

/*
 * The private fields of struct avfs_io, as these policies use them:
 *   pv[0], pv[1]  FIFO list: previous, next (fifo; cscan per direction)
 *   pv[2], pv[3]  treap: left, right child (cscan per direction, edf, scan-edf)
 *   pk[0]         arrival sequence number, from 1: unique, so it breaks every tie and makes
 *                 the sort order total (a probe with pk[0] = 0 sorts before its equals)
 *   pk[1..3]      the sort key, compared in that order before pk[0]
 *   pt[0]         cscan: FIFO expiry time (ns)
 *   pt[1]         treap heap priority, a hash of pk[0] (stored as int64_t)
 * A request is in these structures from submit() until next() dispatches it; then only the
 * in-flight count remembers it until done().
 */

enum { DIR_READ = 0, DIR_WRITE = 1 };	/* mq-deadline's DD_READ / DD_WRITE */

/* ---- an intrusive treap: every operation O(log n) expected ---- */

static struct avfs_io *kid(const struct avfs_io *n, int d)
{
	return n->pv[2 + d];
}

static void set_kid(struct avfs_io *n, int d, struct avfs_io *c)
{
	n->pv[2 + d] = c;
}

static uint64_t heap_prio(const struct avfs_io *n)
{
	return (uint64_t)n->pt[1];
}

/* splitmix64: a well-mixed priority from the sequence number, so that the treap's shape does
 * not depend on the order of the keys (sorted arrivals are the common case) and runs are
 * reproducible. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Order by pk[1], pk[2], pk[3], then arrival (pk[0]). */
static int key_cmp(const struct avfs_io *a, const struct avfs_io *b)
{
	static const int order[] = { 1, 2, 3, 0 };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		uint64_t x = a->pk[order[i]], y = b->pk[order[i]];

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

/* Split t into the nodes ordered before key (*lo) and the others (*hi). */
static void treap_split(struct avfs_io *t, const struct avfs_io *key, struct avfs_io **lo,
			struct avfs_io **hi)
{
	struct avfs_io *l, *h;

	if (!t) {
		*lo = *hi = NULL;
		return;
	}
	if (key_cmp(t, key) < 0) {
		treap_split(kid(t, 1), key, &l, &h);
		set_kid(t, 1, l);
		*lo = t;
		*hi = h;
	} else {
		treap_split(kid(t, 0), key, &l, &h);
		set_kid(t, 0, h);
		*lo = l;
		*hi = t;
	}
}

/* Join two treaps, every node of a ordered before every node of b. */
static struct avfs_io *treap_merge(struct avfs_io *a, struct avfs_io *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (heap_prio(a) > heap_prio(b)) {
		set_kid(a, 1, treap_merge(kid(a, 1), b));
		return a;
	}
	set_kid(b, 0, treap_merge(a, kid(b, 0)));
	return b;
}

/* n's key and priority are set and its children are NULL. */
static struct avfs_io *__treap_insert(struct avfs_io *t, struct avfs_io *n)
{
	struct avfs_io *lo, *hi;
	int d;

	if (!t)
		return n;
	if (heap_prio(n) > heap_prio(t)) {
		treap_split(t, n, &lo, &hi);
		set_kid(n, 0, lo);
		set_kid(n, 1, hi);
		return n;
	}
	d = key_cmp(n, t) > 0;
	set_kid(t, d, __treap_insert(kid(t, d), n));
	return t;
}

/* n is in t; found by its key, which is unique thanks to pk[0]. */
static struct avfs_io *__treap_remove(struct avfs_io *t, struct avfs_io *n)
{
	int d;

	if (!t)		/* not reached while the invariant holds */
		return NULL;
	if (t == n)
		return treap_merge(kid(n, 0), kid(n, 1));
	d = key_cmp(n, t) > 0;
	set_kid(t, d, __treap_remove(kid(t, d), n));
	return t;
}

struct treap {
	struct avfs_io *root;
};

static void treap_insert(struct treap *t, struct avfs_io *n)
{
	set_kid(n, 0, NULL);
	set_kid(n, 1, NULL);
	n->pt[1] = (int64_t)mix64(n->pk[0]);
	t->root = __treap_insert(t->root, n);
}

static void treap_remove(struct treap *t, struct avfs_io *n)
{
	t->root = __treap_remove(t->root, n);
	set_kid(n, 0, NULL);
	set_kid(n, 1, NULL);
}

static struct avfs_io *treap_first(const struct treap *t)
{
	struct avfs_io *n = t->root;

	while (n && kid(n, 0))
		n = kid(n, 0);
	return n;
}

/* The first node not ordered before key (like mq-deadline's deadline_from_pos()). */
static struct avfs_io *treap_lower_bound(const struct treap *t, const struct avfs_io *key)
{
	struct avfs_io *n = t->root, *res = NULL;

	while (n) {
		if (key_cmp(n, key) >= 0) {
			res = n;
			n = kid(n, 0);
		} else {
			n = kid(n, 1);
		}
	}
	return res;
}

/* ---- an intrusive doubly linked FIFO: O(1) ---- */

struct fifo {
	struct avfs_io *head, *tail;
};

static void fifo_push(struct fifo *f, struct avfs_io *io)
{
	io->pv[0] = f->tail;
	io->pv[1] = NULL;
	if (f->tail)
		f->tail->pv[1] = io;
	else
		f->head = io;
	f->tail = io;
}

static void fifo_del(struct fifo *f, struct avfs_io *io)
{
	struct avfs_io *prev = io->pv[0], *next = io->pv[1];

	if (prev)
		prev->pv[1] = next;
	else
		f->head = next;
	if (next)
		next->pv[0] = prev;
	else
		f->tail = prev;
	io->pv[0] = io->pv[1] = NULL;
}

/* ---- state shared by the four policies ---- */

struct base {
	size_t queued;		/* in fifo[] / tree[], not yet dispatched */
	size_t inflight;	/* dispatched, done() not called yet */
	uint64_t seq;		/* last arrival sequence number given out */
	struct fifo fifo[2];	/* fifo: [0]; cscan: per direction, arrival order */
	struct treap tree[2];	/* cscan: per direction by sector; edf, scan-edf: [0] */
	/* scan-edf */
	uint64_t head;		/* end of the last dispatched request (C-SCAN position) */
	int64_t quantum;	/* deadlines are rounded up to this, ns (>= 1) */
	/* cscan: the fields of mq-deadline's struct deadline_data, one priority level */
	uint64_t latest_pos[2];	/* per direction: end of the last dispatched request */
	int last_dir;		/* direction of the current batch */
	unsigned batching;	/* requests dispatched in the current batch */
	unsigned starved;	/* batches of reads started while writes waited */
	int64_t fifo_expire[2];	/* read_expire, write_expire */
	unsigned fifo_batch, writes_starved;
};

static int base_init(void **ctx, const struct avfs_sched_conf *conf)
{
	struct base *b;

	if (!ctx || !conf)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->quantum = conf->scan_edf_quantum_ns > 0 ? conf->scan_edf_quantum_ns : 1;
	b->last_dir = DIR_WRITE;	/* as dd_init_sched() */
	b->fifo_expire[DIR_READ] = conf->read_expire_ns;
	b->fifo_expire[DIR_WRITE] = conf->write_expire_ns;
	b->fifo_batch = conf->fifo_batch;
	b->writes_starved = conf->writes_starved;
	*ctx = b;
	return 0;
}

/* The requests still queued belong to the caller; nothing of theirs is freed. */
static void base_destroy(void *ctx)
{
	free(ctx);
}

/* Common part of submit(): the request must fit one command, since baselines never chunk.
 * 0 or -EINVAL. */
static int base_take(struct base *b, struct avfs_io *io)
{
	if (!b || !io || io->len == 0 || io->len > UINT32_MAX)
		return -EINVAL;
	io->pk[0] = ++b->seq;
	io->pk[1] = io->pk[2] = io->pk[3] = 0;
	b->queued++;
	return 0;
}

static uint64_t io_end(const struct avfs_io *io)
{
	return io->off + io->len < io->off ? UINT64_MAX : io->off + io->len;
}

static void cmd_idle(struct avfs_sched_cmd *cmd)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->kind = AVFS_SCHED_IDLE;
}

/* io has left the queues: issue all of it. */
static void cmd_dispatch(struct base *b, struct avfs_io *io, struct avfs_sched_cmd *cmd)
{
	b->queued--;
	b->inflight++;
	memset(cmd, 0, sizeof(*cmd));
	cmd->kind = AVFS_SCHED_DISPATCH;
	cmd->io = io;
	cmd->off = io->off;
	cmd->len = (uint32_t)io->len;
	cmd->write = io->write;
	cmd->fua = io->fua;
}

/* Whatever res says, the request is over: a baseline issues it whole, once; a failed or short
 * transfer is the caller's to report. */
static bool base_done(void *ctx, const struct avfs_sched_cmd *cmd, int64_t now, int res)
{
	struct base *b = ctx;

	(void)cmd;
	(void)now;
	(void)res;
	if (b->inflight)
		b->inflight--;
	return true;
}

static size_t base_pending(void *ctx)
{
	const struct base *b = ctx;

	return b->queued + b->inflight;
}

/* ---- fifo: arrival order (Linux "none"/noop) ---- */

static int fifo_submit(void *ctx, struct avfs_io *io, int64_t now)
{
	struct base *b = ctx;
	int err;

	(void)now;
	err = base_take(b, io);
	if (err)
		return err;
	fifo_push(&b->fifo[0], io);
	return 0;
}

static void fifo_next(void *ctx, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct base *b = ctx;
	struct avfs_io *io = b->fifo[0].head;

	(void)now;
	if (!io) {
		cmd_idle(cmd);
		return;
	}
	fifo_del(&b->fifo[0], io);
	cmd_dispatch(b, io, cmd);
}

/* ---- cscan: mq-deadline with one priority level (block/mq-deadline.c) ----
 * Every request is on its direction's sector-sorted tree and on its direction's FIFO with an
 * expiry time. The avfs_io deadline is ignored: this is the kernel's view of the traffic. */

static int cscan_submit(void *ctx, struct avfs_io *io, int64_t now)
{
	struct base *b = ctx;
	int dir, err;

	err = base_take(b, io);
	if (err)
		return err;
	dir = io->write ? DIR_WRITE : DIR_READ;
	io->pk[2] = io->off;
	/* dd_insert_request(): fifo_time = insertion time + fifo_expire[dir] */
	io->pt[0] = now + b->fifo_expire[dir];
	treap_insert(&b->tree[dir], io);
	fifo_push(&b->fifo[dir], io);
	return 0;
}

/* deadline_next_request(): the first request of dir at or after latest_pos[dir]. */
static struct avfs_io *cscan_from_pos(const struct base *b, int dir)
{
	struct avfs_io probe = { .pk = { 0, 0, b->latest_pos[dir], 0 } };

	return treap_lower_bound(&b->tree[dir], &probe);
}

/* __dd_dispatch_request() */
static void cscan_next(void *ctx, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct base *b = ctx;
	struct avfs_io *io, *head;
	int dir;

	/* Batches are reads XOR writes: continue the current one in sector order while it is
	 * entitled to. Expiry is not looked at inside a batch, as in the kernel. */
	io = cscan_from_pos(b, b->last_dir);
	if (io && b->batching < b->fifo_batch) {
		dir = b->last_dir;
		goto dispatch;
	}

	/* A new batch: reads, unless writes have waited through writes_starved read batches. */
	if (!b->fifo[DIR_READ].head && !b->fifo[DIR_WRITE].head) {
		cmd_idle(cmd);
		return;
	}
	if (b->fifo[DIR_READ].head &&
	    !(b->fifo[DIR_WRITE].head && b->starved++ >= b->writes_starved)) {
		dir = DIR_READ;
	} else {
		b->starved = 0;
		dir = DIR_WRITE;
	}

	/* An expired FIFO head, or nothing left at or after the last position: start again
	 * from the request with the earliest expiry; else carry on from the last position. */
	head = b->fifo[dir].head;
	io = cscan_from_pos(b, dir);
	if (!io || head->pt[0] <= now)	/* deadline_check_fifo(): expired at fifo_time */
		io = head;
	b->last_dir = dir;
	b->batching = 0;

dispatch:
	b->batching++;
	treap_remove(&b->tree[dir], io);
	fifo_del(&b->fifo[dir], io);
	/* The kernel records the start sector and looks for >= it; the end gives the same
	 * order for requests that do not overlap and true C-SCAN for those that do. */
	b->latest_pos[dir] = io_end(io);
	cmd_dispatch(b, io, cmd);
}

/* ---- edf: earliest deadline first; best effort after all RT, in arrival order ---- */

/* int64_t to uint64_t preserving order */
static uint64_t ord64(int64_t v)
{
	return (uint64_t)v ^ (UINT64_C(1) << 63);
}

static int edf_submit(void *ctx, struct avfs_io *io, int64_t now)
{
	struct base *b = ctx;
	int err;

	(void)now;
	err = base_take(b, io);
	if (err)
		return err;
	io->pk[1] = io->deadline == 0;		/* class: RT 0, BE 1 */
	io->pk[2] = io->deadline ? ord64(io->deadline) : 0;	/* BE: ties, so arrival order */
	treap_insert(&b->tree[0], io);
	return 0;
}

static void tree_next(void *ctx, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct base *b = ctx;
	struct avfs_io *io = treap_first(&b->tree[0]);

	(void)now;
	if (!io) {
		cmd_idle(cmd);
		return;
	}
	treap_remove(&b->tree[0], io);
	cmd_dispatch(b, io, cmd);
}

/* ---- scan-edf: EDF over deadlines rounded up to a quantum, C-SCAN within one ---- */

/* ceil(d / q) for q > 0, also right for d <= 0 (C division truncates towards zero). */
static int64_t ceil_div(int64_t d, int64_t q)
{
	return d > 0 ? (d - 1) / q + 1 : d / q;
}

static int scan_edf_submit(void *ctx, struct avfs_io *io, int64_t now)
{
	struct base *b = ctx;
	int err;

	(void)now;
	err = base_take(b, io);
	if (err)
		return err;
	/* key: class (RT 0, BE 1), quantum index (BE: all in one), LBA */
	io->pk[1] = io->deadline == 0;
	io->pk[2] = io->deadline ? ord64(ceil_div(io->deadline, b->quantum)) : 0;
	io->pk[3] = io->off;
	treap_insert(&b->tree[0], io);
	return 0;
}

static void scan_edf_next(void *ctx, int64_t now, struct avfs_sched_cmd *cmd)
{
	struct base *b = ctx;
	struct avfs_io *first = treap_first(&b->tree[0]), *io;
	struct avfs_io probe = { .pk = { 0 } };

	(void)now;
	if (!first) {
		cmd_idle(cmd);
		return;
	}
	/* In the earliest (class, quantum) group: the first request at or after the head,
	 * else wrap around to the group's lowest LBA, which is `first`. */
	probe.pk[1] = first->pk[1];
	probe.pk[2] = first->pk[2];
	probe.pk[3] = b->head;
	io = treap_lower_bound(&b->tree[0], &probe);
	if (!io || io->pk[1] != first->pk[1] || io->pk[2] != first->pk[2])
		io = first;
	treap_remove(&b->tree[0], io);
	b->head = io_end(io);
	cmd_dispatch(b, io, cmd);
}

/* ---- the ops tables ---- */

const struct avfs_sched_ops avfs_sched_fifo = {
	.name = "fifo",
	.init = base_init,
	.destroy = base_destroy,
	.submit = fifo_submit,
	.next = fifo_next,
	.done = base_done,
	.pending = base_pending,
};

const struct avfs_sched_ops avfs_sched_cscan = {
	.name = "cscan",
	.init = base_init,
	.destroy = base_destroy,
	.submit = cscan_submit,
	.next = cscan_next,
	.done = base_done,
	.pending = base_pending,
};

const struct avfs_sched_ops avfs_sched_edf = {
	.name = "edf",
	.init = base_init,
	.destroy = base_destroy,
	.submit = edf_submit,
	.next = tree_next,
	.done = base_done,
	.pending = base_pending,
};

const struct avfs_sched_ops avfs_sched_scan_edf = {
	.name = "scan-edf",
	.init = base_init,
	.destroy = base_destroy,
	.submit = scan_edf_submit,
	.next = scan_edf_next,
	.done = base_done,
	.pending = base_pending,
};

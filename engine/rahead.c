/*
 * rahead.c — read-ahead for deadline streams: the daemon's own buffer in front of a client's.
 * A client that reads a file in order with deadlines of its own (libavio's deadline reads, the
 * simulator's playback streams) keeps only its buffer's worth of requests in flight (8 of
 * 512 KiB: 1.73 s of an HD stream), so each time the mixer serves it a command carries what
 * that client freed since the last one — 2 MB on average at 17 streams — and pays a seek and
 * half a turn for it. Here the engine reads `read-ahead` bytes (8 MiB) beyond the furthest
 * byte the client asked for, each piece as a request with the deadline the client's own
 * request for it will carry (its deadlines so far, extrapolated: the stream's rate), so that
 * the mixer gathers and carries them with the client's (one positioning for twice the bytes),
 * and answers the client's request from memory when it comes (or when the piece it waits for
 * arrives). A run of reads in order begins with `read-ahead-start` (2.5 MiB) ahead, which
 * grows to the whole read-ahead over `read-ahead-ramp` (30 s): streams that start together
 * must each have their first command within their client's buffer, and a window that grows
 * asks the disk for its growth on top of the stream's rate (docs/DESIGN.md, "Bigger
 * commands, read-ahead that starts small").
 *
 * What it is not: a page cache. Only on a rotating disk (what it saves is positionings), only
 * reads with a client deadline and no reservation (a reservation's buffer is the one
 * admission counted), only a file read in order, at most
 * RA_WINDOWS files at a time (least recently used goes), and nothing it holds outlives a
 * change of the file: a write of the file through the engine drops its window (pieces on the
 * device are then thrown away when they arrive), and a piece is served only while the file's
 * generation and ctime are those it was read under and the size still covers the request
 * (a truncate, a hole punched, a file deleted and its number reused). A piece that misses its
 * deadline or fails is dropped: the client's request then goes to the disk as it would have.
 * Sans-I/O; memory is the only resource it takes.
 */
#include "engine_i.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 4096u
#define RA_MIN_IO (64u << 10)	/* smaller client reads get none: a piece per read, bounded */

struct ra_piece {
	struct avfs_fio f;	/* its read: f.arg is the piece */
	struct avfs_engine *e;
	struct ra_win *w;	/* NULL: its window dropped it; freed when its read ends */
	struct ra_piece *next;	/* the window's, in file order */
	uint64_t off, len;	/* file bytes; len shrinks to what was read (EOF) */
	bool ready;
	struct avfs_fio *waiters;	/* client reads answered when it arrives */
};

struct ra_win {
	uint64_t ino;		/* 0: free */
	uint32_t gen;		/* the file as its pieces were read */
	int64_t ctime_ns;
	uint64_t size;
	int64_t label;		/* the client's (the trace's stream column) */
	uint64_t io;		/* the client's request size: a piece's */
	uint64_t first_off;	/* the run of reads in order: its first read ... */
	int64_t first_dl;	/* ... and that read's deadline */
	uint64_t last_off;	/* the last read ... */
	int64_t dl;		/* ... and its deadline */
	uint64_t next_off;	/* where the client's next read in order begins */
	uint64_t ahead_end;	/* pieces asked for up to here */
	double ns_per_byte;	/* the stream's pace (0: not known yet) */
	uint64_t used;		/* least recently used goes first */
	int64_t began, last;	/* when the run's first read came, and its last one */
	struct ra_piece *pieces;
};

struct ra_state {
	struct ra_win w[RA_WINDOWS];
	uint64_t clock;
	struct ra_win *fill;	/* ra_next: the window that wants pieces */
	uint64_t fetches, served, dropped;
	bool stopped;		/* ra_stop: no more */
};

int ra_init(struct avfs_engine *e)
{
	e->ra = calloc(1, sizeof(*e->ra));
	return e->ra ? 0 : -ENOMEM;
}

static void piece_free(struct ra_piece *p)
{
	free(p->f.buf);
	free(p);
}

void ra_fini(struct avfs_engine *e)
{
	if (!e->ra)
		return;
	/* the pieces' reads were listed with the engine's requests, their parts forgotten: the
	 * dropped ones still out first (they are in no window), then the windows' */
	for (struct avfs_fio *f = e->live, *next; f; f = next) {
		next = f->priv.live_next;
		if (f->priv.ahead && !((struct ra_piece *)f->arg)->w)
			piece_free(f->arg);
	}
	for (unsigned i = 0; i < RA_WINDOWS; i++)
		for (struct ra_piece *p = e->ra->w[i].pieces, *n; p; p = n) {
			n = p->next;
			piece_free(p);
		}
	free(e->ra);
	e->ra = NULL;
}

/* Take p out of its window; a piece whose read is out stays until it arrives. */
static void unlink_piece(struct ra_piece *p)
{
	for (struct ra_piece **pp = &p->w->pieces; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->w = NULL;
	p->next = NULL;
}

/* A client read answered from p's bytes: done now, its deadline met (the QoS figures count
 * it as the client's; the request trace, of device requests, has the piece's read). */
static void answer(struct avfs_engine *e, const struct ra_piece *p, struct avfs_fio *f,
		   int64_t now)
{
	memcpy(f->buf, p->f.buf + (f->off - p->off), f->len);
	f->sched_deadline = f->deadline;
	f->priv.res = (int64_t)f->len;
	f->priv.pending = 0;
	f->priv.ahead_wait = false;
	e->ra->served++;
	e->on_fio_done(e, f, now);
}

/* A client read that waited for a piece goes to the disk as it would have. */
static void on_its_own(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	f->priv.ahead_wait = false;
	f->priv.pending = 0;
	fio_start(e, f, f->deadline, false, now);
}

/* Drop every piece of w: those not on the device are withdrawn (their disk time is not
 * spent), reads waiting for one go on their own. */
static void win_drop(struct avfs_engine *e, struct ra_win *w, int64_t now)
{
	struct ra_piece *p;

	if (e->ra->fill == w)
		e->ra->fill = NULL;
	while ((p = w->pieces)) {
		struct avfs_fio *f = p->waiters;

		unlink_piece(p);
		p->waiters = NULL;
		e->ra->dropped++;
		while (f) {
			struct avfs_fio *next = f->priv.ahead_next;

			on_its_own(e, f, now);
			f = next;
		}
		if (p->ready) {
			piece_free(p);
		} else if (!fio_withdraw(e, &p->f, now)) {
			p->f.priv.canceled = true;
			p->f.priv.res = -ECANCELED;
			e->on_fio_done(e, &p->f, now);	/* fetched() frees it */
		}
	}
	memset(w, 0, sizeof(*w));
}

/* A piece's read is done (or withdrawn): the reads that waited for it answered from it, or on
 * their own if it failed; a piece dropped meanwhile, or failed, is freed. */
static void fetched(struct avfs_fio *f, int64_t res, int64_t now)
{
	struct ra_piece *p = f->arg;
	struct avfs_engine *e = p->e;
	struct avfs_fio *waiters = p->waiters;
	bool keep = res >= 0 && p->w;

	p->waiters = NULL;
	if (keep) {
		p->ready = true;
		p->len = (uint64_t)res;
		/* (one a waiting read consumed is of no more use: the stream is past it) */
		keep = !waiters;
		if (!keep)
			unlink_piece(p);
	} else if (p->w) {
		unlink_piece(p);
		e->ra->dropped++;
	}
	while (waiters) {
		struct avfs_fio *w = waiters;

		waiters = w->priv.ahead_next;
		if (res >= 0 && w->off + w->len <= p->off + (uint64_t)res) {
			w->disk_ns = f->disk_ns;
			answer(e, p, w, now);
		} else {
			on_its_own(e, w, now);
		}
	}
	if (!keep)
		piece_free(p);
}

void ra_drop(struct avfs_engine *e, uint64_t ino, int64_t now)
{
	for (unsigned i = 0; e->ra && i < RA_WINDOWS; i++)
		if (e->ra->w[i].ino == ino)
			win_drop(e, &e->ra->w[i], now);
}

/* The window a read of ino at off continues (several readers of one file have one each), or
 * a new one: free, or one of the same file whose reader has stopped (its last read is past
 * due: whatever it still reads ahead would be thrown away), or the least recently used. */
static struct ra_win *win_for(struct avfs_engine *e, const struct avfs_fio *f, int64_t now)
{
	struct ra_win *w, *pick = NULL, *old = NULL;

	for (unsigned i = 0; i < RA_WINDOWS; i++) {
		w = &e->ra->w[i];
		if (w->ino == f->ino && w->next_off == f->off)
			return w;
	}
	for (unsigned i = 0; i < RA_WINDOWS; i++) {
		w = &e->ra->w[i];
		if (w->ino == f->ino && w->dl < now)
			win_drop(e, w, now);
		if (!w->ino && !pick)
			pick = w;
		if (w->ino && (!old || w->used < old->used))
			old = w;
	}
	if (pick)
		return pick;
	win_drop(e, old, now);
	return old;
}

bool ra_read(struct avfs_engine *e, struct avfs_fio *f, int64_t now)
{
	struct avfs_stat st;
	struct ra_piece *p = NULL;
	struct ra_win *w;

	if (!e->c.ra_bytes || e->ra->stopped || !e->c.sched.rotational || f->write || !f->ino || !f->deadline || f->stream || !e->fs ||
	    f->len < RA_MIN_IO ||
	    avfs_fs_getattr(e->fs, f->ino, &st) || !S_ISREG(st.mode))
		return false;
	w = win_for(e, f, now);
	if (w->ino && (w->gen != st.generation || w->ctime_ns != st.ctime_ns || w->io != f->len ||
		       f->off != w->next_off || f->deadline <= w->dl))
		win_drop(e, w, now);	/* the file changed under its pieces, or the client
					 * reads another way or place: what it holds is not
					 * what comes next */
	if (!w->ino) {		/* a run of reads in order begins */
		*w = (struct ra_win){ .ino = f->ino, .gen = st.generation, .ctime_ns = st.ctime_ns,
				      .io = f->len, .first_off = f->off, .first_dl = f->deadline,
				      .ahead_end = f->off + f->len, .began = now };
	} else {		/* in order: the pace from the run's first read */
		w->ns_per_byte = (double)(f->deadline - w->first_dl) /
				 (double)(f->off - w->first_off);
		for (p = w->pieces; p && p->off != f->off; p = p->next)
			;
		if (p && (f->off + f->len > p->off + p->len || f->off + f->len > st.size))
			p = NULL;
	}
	w->used = ++e->ra->clock;
	w->last = now;
	w->size = st.size;
	w->label = f->label;
	w->last_off = f->off;
	w->dl = f->deadline;
	w->next_off = f->off + f->len;
	if (w->ahead_end < w->next_off)
		w->ahead_end = w->next_off;
	e->ra->fill = w->ns_per_byte > 0 ? w : NULL;
	if (!p)
		return false;
	if (p->ready) {		/* answered from memory (after the window is settled: the
				 * front end may call again from its done()) */
		unlink_piece(p);
		answer(e, p, f, now);
		piece_free(p);
		return true;
	}
	/* its piece is on the way: f waits for it — hurried to f's deadline if the pace guessed
	 * a later one and it has not reached the device (p may be done at once then) */
	f->priv.pending = 1;
	f->priv.started = true;
	f->priv.ahead_wait = true;
	f->priv.ahead_next = p->waiters;
	p->waiters = f;
	if (p->f.sched_deadline > f->deadline && !fio_withdraw(e, &p->f, now)) {
		p->f.deadline = f->deadline;
		p->f.prefetch = false;	/* a client waits for it now */
		fio_start(e, &p->f, f->deadline, false, now);
	}
	return true;
}

/* How far ahead of the client w reads now: read-ahead-start when its run began, growing
 * linearly to read-ahead over read-ahead-ramp (as of the client's last read), in whole
 * pieces. */
static uint64_t ahead_of(const struct avfs_engine *e, const struct ra_win *w)
{
	double grown;
	uint64_t b;

	if (!e->c.ra_start || e->c.ra_start >= e->c.ra_bytes || e->c.ra_ramp_ns <= 0 ||
	    w->last - w->began >= e->c.ra_ramp_ns)
		return e->c.ra_bytes;
	grown = (double)(w->last - w->began) / (double)e->c.ra_ramp_ns;
	b = e->c.ra_start + (uint64_t)(grown * (double)(e->c.ra_bytes - e->c.ra_start));
	return b / w->io * w->io;
}

struct avfs_fio *ra_next(struct avfs_engine *e)
{
	struct ra_win *w = e->ra ? e->ra->fill : NULL;
	struct ra_piece *p, **pp;
	uint64_t len;

	if (!w || !w->ino || w->ahead_end >= w->next_off + ahead_of(e, w) ||
	    w->ahead_end >= w->size) {
		if (e->ra)
			e->ra->fill = NULL;
		return NULL;
	}
	len = w->io;
	if (w->ahead_end + len > w->size)
		len = w->size - w->ahead_end;
	p = calloc(1, sizeof(*p));
	if (p && posix_memalign((void **)&p->f.buf, ALIGN, (len + ALIGN - 1) / ALIGN * ALIGN)) {
		free(p);
		p = NULL;
	}
	if (!p) {
		e->ra->fill = NULL;	/* no memory: the client reads as it would have */
		return NULL;
	}
	p->e = e;
	p->w = w;
	p->off = w->ahead_end;
	p->len = len;
	p->f.ino = w->ino;
	p->f.off = p->off;
	p->f.len = len;
	p->f.cap = (len + ALIGN - 1) / ALIGN * ALIGN;
	/* the deadline the client's own read of it will carry, at the pace it reads */
	p->f.deadline = w->dl + (int64_t)((double)(p->off - w->last_off) * w->ns_per_byte);
	p->f.label = w->label;
	p->f.prefetch = true;
	p->f.done = fetched;
	p->f.arg = p;
	for (pp = &w->pieces; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	w->ahead_end += len;
	e->ra->fetches++;
	return &p->f;
}

void ra_stop(struct avfs_engine *e, int64_t now)
{
	if (!e->ra || e->ra->stopped)
		return;
	e->ra->stopped = true;
	for (unsigned i = 0; i < RA_WINDOWS; i++)
		if (e->ra->w[i].ino)
			win_drop(e, &e->ra->w[i], now);
}

bool ra_unwait(struct avfs_engine *e, struct avfs_fio *f)
{
	if (!f->priv.ahead_wait)
		return false;
	for (unsigned i = 0; i < RA_WINDOWS; i++)
		for (struct ra_piece *p = e->ra->w[i].pieces; p; p = p->next)
			for (struct avfs_fio **pp = &p->waiters; *pp; pp = &(*pp)->priv.ahead_next)
				if (*pp == f) {
					*pp = f->priv.ahead_next;
					f->priv.ahead_wait = false;
					return true;
				}
	return false;
}

void ra_counts(const struct avfs_engine *e, struct avfs_engine_ra_counts *out)
{
	*out = (struct avfs_engine_ra_counts){ 0 };
	if (e->ra)
		*out = (struct avfs_engine_ra_counts){ .fetches = e->ra->fetches, .served = e->ra->served,
						.dropped = e->ra->dropped };
}

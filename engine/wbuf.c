/*
 * wbuf.c — write-behind (papers/000's write buffer, SPEC §9): which file writes a front end
 * may answer before they reach the device, and how much the daemon holds so. A write may be
 * held once it is planned (the file's size and block map already say what it wrote, so a
 * read or a getattr after the answer sees it, and the commit an fsync asks for waits for it:
 * ordered mode). A reserved stream's writes while its held bytes stay within its reserved
 * buffer (counted in admission) and the engine's within `write-behind`; their deadlines are
 * the bandwidth class's (the rest of the buffer at the reserved rate), and a writer above its
 * rate, parked by the bandwidth class, is never planned early: it waits. Best-effort writes
 * while theirs stay within `write-behind-be`: a writer that waits for each answer (dd, cp,
 * fio with O_DIRECT) then hands over its next request while this one is on the device,
 * instead of leaving the device idle for the round trip and the kernel's copy of the data into
 * the daemon — so only while no other flow's request is in the engine (with one, the device
 * has work for that time). Otherwise the writer waits for the device. It does not own the data (the front
 * end's request keeps it until done()) nor answer anyone.
 */
#include "engine_i.h"

bool avfs_engine_wb_hold(struct avfs_engine *e, struct avfs_fio *f, uint64_t mem)
{
	struct avfs_estream *s;

	if (!f->write || !f->ino || f->zero_tail || !f->priv.planned || f->priv.parked ||
	    f->priv.canceled || f->priv.res < 0 || f->priv.pending <= 0 || f->priv.held)
		return false;	/* not (or no longer) a planned file write under way */
	if (mem < f->len)
		mem = f->len;
	if (!f->stream) {	/* best effort */
		if (e->wb_be_total + mem > e->c.wb_be_max)
			return false;	/* full (or off): answered when it is on the device */
		/* only while no other flow has a request here: then the device would idle for
		 * the writer's round trip; with others it does not, and an early answer would
		 * only move the disk's time from them to this writer */
		for (const struct avfs_fio *g = e->live; g; g = g->priv.live_next)
			if (g != f && g->flow != f->flow)
				return false;
		e->wb_be_total += mem;
		f->priv.held = mem;
		return true;
	}
	s = bw_stream(e, f->stream);
	if (!s || !s->req.write)
		return false;
	if (s->wb_bytes + mem > s->req.buffer || e->wb_total + mem > e->c.wb_max) {
		s->wb_waits++;	/* full: this one is answered when it is on the device */
		return false;
	}
	s->wb_bytes += mem;
	if (s->wb_bytes > s->wb_peak)
		s->wb_peak = s->wb_bytes;
	e->wb_total += mem;
	f->priv.held = mem;
	return true;
}

uint64_t avfs_engine_wb_total(const struct avfs_engine *e)
{
	return e->wb_total;
}

uint64_t avfs_engine_wb_be_total(const struct avfs_engine *e)
{
	return e->wb_be_total;
}

void wb_fio_done(struct avfs_engine *e, struct avfs_fio *f)
{
	struct avfs_estream *s;
	uint64_t mem = f->priv.held;

	if (!mem)
		return;
	f->priv.held = 0;
	if (!f->stream) {
		e->wb_be_total -= mem;
		return;
	}
	e->wb_total -= mem;
	s = bw_stream(e, f->stream);	/* (gone if released meanwhile) */
	if (s)
		s->wb_bytes = s->wb_bytes > mem ? s->wb_bytes - mem : 0;
}

/* An fsync's commit waits for every planned write (ordered mode); a held one's deadline may be
 * the rest of a large buffer away, and the mixer holds a real-time request until it must go:
 * so they go as best effort now (still charged: the bucket took their bytes). */
void wb_hurry(struct avfs_engine *e, int64_t now)
{
	struct avfs_fio *f, *next;

	if (!e->wb_total)
		return;
	for (f = e->live; f; f = next) {
		next = f->priv.live_next;	/* (f may complete) */
		if (f->priv.held && f->sched_deadline)
			fio_hurry(e, f, now);
	}
}

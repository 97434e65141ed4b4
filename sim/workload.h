/*
 * workload.h — the simulator's workloads as a seeded plan of who asks for what and when (SPEC
 * §12): which recording each playback stream plays and from where, each stream's phase, period,
 * request size, deadlines and reservation, and the best-effort generators' choices (pictures'
 * names and sizes, random offsets). Pure and deterministic: the same options, recordings and
 * seed give the same plan, whoever carries it out — avfs-sim in virtual time (sim/simrun.c) or
 * avfs-sim realtime through libavio and the mount (the parity run). It issues nothing itself.
 */
#ifndef AVFS_WORKLOAD_H
#define AVFS_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "admit.h"
#include "scenario.h"
#include "simrun.h"

/* A recording the fill made: its name is rec-%05u.ts of its index. */
struct avfs_wl_rec {
	uint64_t ino;		/* 0: deleted (or not known: the real-time run names files) */
	uint64_t size;
};

struct avfs_wl_stream {
	unsigned index;
	const struct avfs_simrun_stream *spec;	/* NULL: an NrMw stream */
	bool write;
	bool greedy;
	bool reserved;		/* through a reservation (the bandwidth class) */
	bool raw;		/* raw device bytes [raw_lo, raw_hi), outside the file system */
	uint64_t raw_lo, raw_hi;
	size_t rec;		/* a playback's recording (index) */
	char name[32];		/* its file: the recording, or live-%03u.ts for a recording stream */
	uint64_t fsize;		/* a playback's file size */
	uint64_t pos;		/* next offset */
	uint32_t io;		/* bytes a request */
	unsigned depth;		/* requests of buffer */
	int64_t t0;		/* the first request, ns */
	double period;		/* ns a request; 0: greedy */
	int64_t round;		/* ns a round (per-round deadlines), 0: none */
	unsigned per_round;	/* requests a round */
	bool own_deadlines;	/* its requests carry its deadlines (buffer or round); else 0 */
	uint64_t k;		/* next request's index */
	struct avfs_service_req svc;	/* what its deadlines follow; reserved: what it reserves */
};

/* One request of a stream. */
struct avfs_wl_req {
	uint64_t off;		/* in the file, or on the device (raw) */
	uint32_t len;
	int64_t deadline;	/* NrMw: when the buffer under-runs or overflows; 0: none (best
				 * effort, or the reservation's deadline) */
};

/* A pictures client (papers/001 §4.3.2): its own set of names. */
struct avfs_wl_pics {
	unsigned id;		/* 0: pic-NNNNNN.jpg (as ever); k: picK-NNNNNN.jpg */
	int files;		/* pictures begun */
};

struct avfs_wl {
	const struct avfs_simrun_opts *o;
	uint64_t rng;
	struct avfs_wl_stream *streams;
	unsigned nstreams;
	/* the data region, for raw requests */
	uint64_t data_off, data_blocks, block_size;
};

/* Set up o's streams over recordings recs[0..nrecs) (the fill's, in order), the data region
 * [data_off, + data_blocks * block_size), measuring from `start`. 0, or -EINVAL / -ENOMEM with
 * why (playback without recordings). */
int avfs_wl_init(struct avfs_wl *w, const struct avfs_simrun_opts *o,
		 const struct avfs_wl_rec *recs, size_t nrecs, uint64_t data_off,
		 uint64_t data_blocks, uint64_t block_size, int64_t start, char *why, size_t whylen);
void avfs_wl_free(struct avfs_wl *w);

/* The k-th request time of a periodic stream (of a round stream: its round's start). */
int64_t avfs_wl_when(const struct avfs_wl_stream *s, uint64_t k);
/* The stream's next request (and advance it: the offset wraps at a playback's file end and at
 * a raw run's end). */
void avfs_wl_next(struct avfs_wl *w, struct avfs_wl_stream *s, struct avfs_wl_req *r);

/* The pictures load: client p's next picture's name and size; *drop > 0 when the set of 100
 * before it is to be deleted first (their names: avfs_wl_picture_name of [first_drop,
 * first_drop + 100)). */
void avfs_wl_picture(struct avfs_wl *w, struct avfs_wl_pics *p, char *name, size_t len,
		     uint64_t *size, int *first_drop, int *drop);
void avfs_wl_picture_name(const struct avfs_wl_pics *p, int k, char *name, size_t len);

/* A random offset in the data region for a read of len bytes (4 KiB aligned). */
uint64_t avfs_wl_random_off(struct avfs_wl *w, uint32_t len);
/* A uniform draw in [0, n) (n = 0: any 64 bits) from the workload's generator. */
uint64_t avfs_wl_rnd(struct avfs_wl *w, uint64_t n);

/* A scenario (scenario.h) as a run's options: o, from avfs_simrun_defaults, takes s's settings,
 * its classes expanded into o->streams (class by class, count streams each, cls the class's
 * index) and its generators into o->bes, both malloc'ed (avfs_wl_scenario_free); o->disk,
 * o->policy and o->predictor point into s, which outlives o. 0 or -ENOMEM. */
int avfs_wl_scenario(struct avfs_simrun_opts *o, const struct avfs_scenario *s);
void avfs_wl_scenario_free(struct avfs_simrun_opts *o);

#endif

/*
 * scenario.h — a scenario file (docs/SCENARIOS.md): one experiment in a few lines of text — the
 * disk model, fill, allocator, policy and scheduler settings, duration and seed, named classes
 * of streams and named best-effort generators — parsed into struct avfs_scenario, changed key by
 * key (the command line's overrides) and printed back in canonical form. Pure: it parses a text
 * buffer and formats into one (reading files is the caller's), and it runs nothing: avfs-sim
 * expands a scenario into its run's streams (sim/workload.c), a real-time driver can carry out
 * the same struct. It links with sched/ (the policies and their settings) and util/ only.
 */
#ifndef AVFS_SCENARIO_H
#define AVFS_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iosched.h"

#define AVFS_SCN_NAME_MAX 32	/* names of sections, models, policies, with their NUL */
#define AVFS_SCN_SETTINGS 32	/* scheduler settings a scenario can name */
#define AVFS_SCN_STREAMS_MAX 4096	/* streams of all classes together */

/* A class of alike streams ([stream NAME]): each a client of `rate` bytes/s that reads a file
 * (or writes one) in `io` requests, with buffer or per-round deadlines. */
struct avfs_scn_stream {
	char name[AVFS_SCN_NAME_MAX];
	unsigned count;		/* streams of the class (0: none, the class idles) */
	double rate;		/* bytes/s each consumes (reads) or produces (writes); 0: greedy */
	uint32_t io;		/* bytes a request: a multiple of 4 KiB dividing the data block */
	uint64_t buffer;	/* bytes of client buffer: a request is asked for each time a
				 * request's worth of it frees and is due when the rest drains
				 * (SPEC §12); 0: the default (avfs_scn_buffer) */
	int64_t round_ns;	/* > 0: per-round deadlines instead (papers/004 §3.3.1, "served
				 * once a second"): at the start of each round the stream asks for
				 * the round's rate x round bytes, ceil(rate x round / io) requests
				 * at once, all due at the round's end */
	bool write;
	bool reserved;		/* a reservation (rate + buffer service, the bandwidth class) */
	double reserve;		/* reserved: bytes/s reserved (0: rate) */
	bool best_effort;	/* not reserved: requests without deadlines (else the stream's own
				 * buffer or round deadlines, as avfs-sim's NrMw streams) */
	bool greedy;		/* keeps buffer / io requests outstanding, ignoring rate */
	double place;		/* < 0: files (a read plays a random recording from a random
				 * point, a write records a new file); 0 <= place < 1: raw
				 * sequential I/O from this fraction of the data region on */
};

enum avfs_scn_be_kind {
	AVFS_SCN_BE_RANDOM,	/* random reads of io bytes over the data region */
	AVFS_SCN_BE_SEQUENTIAL,	/* reads a random recording from its start in io requests */
	AVFS_SCN_BE_PICTURES,	/* writes sets of 100 pictures of 0.6-2 MB (papers/001 §4.3.2) in
				 * io pieces, a set deleted before the next is written */
	AVFS_SCN_BE_COPY,	/* copies a random recording into a new file (io read, io
				 * written), deleting the copy when it is whole */
	AVFS_SCN_BE_DELETE,	/* deletes a recording no stream plays (count of them, spread
				 * evenly over the run), each committed at once */
};

/* A best-effort generator ([be NAME]): count clients of one kind, each with one request
 * outstanding, asking again when it completes unless a cap holds it back. */
struct avfs_scn_be {
	char name[AVFS_SCN_NAME_MAX];
	enum avfs_scn_be_kind kind;
	unsigned count;
	uint32_t io;		/* bytes a request; 0: the kind's (avfs_scn_be_io) */
	double rate;		/* cap, bytes/s each (0: none) */
	double iops;		/* cap, requests/s each (0: none) */
};

enum avfs_scn_bw {		/* engine.h's enum avfs_bw_policy, by name */
	AVFS_SCN_BW_PARK,
	AVFS_SCN_BW_AT_ONCE,
	AVFS_SCN_BW_UNCHARGED,
};

/* A scenario scheduler setting, as its text was given (avfs_sched_conf_set has applied it). */
struct avfs_scn_setting {
	char name[AVFS_SCN_NAME_MAX];
	char value[AVFS_SCN_NAME_MAX];
};

struct avfs_scenario {
	char disk[AVFS_SCN_NAME_MAX];	/* the disk model (avfs_hdd_model_names) */
	uint64_t size;		/* bytes of the model used (its outer part); 0: all */
	double fill;		/* fraction of the data region filled with recordings first */
	double fill_rate;	/* bytes/s of those 30-minute recordings */
	unsigned alloc;		/* enum avfs_alloc_policy: 0 ZRR, 1 contiguous first-fit, 2 ZRR in
				 * runs (the default) */
	uint32_t block_shift;	/* data block size */
	char policy[AVFS_SCN_NAME_MAX];
	struct avfs_sched_conf sched;	/* the settings below applied over the defaults */
	struct avfs_scn_setting set[AVFS_SCN_SETTINGS];
	unsigned nset;
	enum avfs_scn_bw bw;
	char predictor[AVFS_SCN_NAME_MAX];	/* JIT / split: model or rotpred */
	double duration_s;
	uint64_t seed;
	double hp_rate;		/* high-priority 4 KiB random reads a second (papers/003's
				 * probe, due within half the urgent window); 0: none */
	uint64_t read_ahead;	/* the engine's read-ahead of deadline streams (bytes, 0: none);
				 * AVFS_SCN_UNSET: the engine's default */
	uint64_t read_ahead_start;	/* ... as a stream's reads begin (bytes, 0: all at once);
					 * AVFS_SCN_UNSET: the engine's default */
	double read_ahead_ramp_s;	/* ... growing over this (0: at once); < 0: the default */
	struct avfs_scn_stream *streams;	/* the classes, in the file's order */
	unsigned nstreams;
	struct avfs_scn_be *be;	/* the generators, in the file's order */
	unsigned nbe;
};

/* The defaults of every top-level key (docs/SCENARIOS.md), no class, no generator. */
void avfs_scenario_init(struct avfs_scenario *s);
#define AVFS_SCN_UNSET UINT64_MAX
/* Free what s holds (its classes and generators); s is then as after init. */
void avfs_scenario_free(struct avfs_scenario *s);

/* Parse a scenario from text[0..len) (file: its name in messages). 0 with *out the scenario
 * (free with avfs_scenario_free), or -EINVAL with why "FILE:LINE: field 'KEY': reason" (or
 * "FILE:LINE: reason" for a line that is no key = value and no section) and *out untouched;
 * -ENOMEM. */
int avfs_scenario_parse(const char *file, const char *text, size_t len,
			struct avfs_scenario *out, char *why, size_t whylen);

/* Set one key over a parsed scenario, as the file would: "KEY" for a top-level key (or a
 * scheduler setting), "SECTION.KEY" for a class's or a generator's. Its value is checked
 * (unit, range); the checks across keys are avfs_scenario_check's, once every change is in
 * (so that changes can be made in any order). 0, or -EINVAL with why ("field 'KEY': reason")
 * and s unchanged. */
int avfs_scenario_set(struct avfs_scenario *s, const char *key, const char *value, char *why,
		      size_t whylen);
/* The checks across keys that a parsed file passed (a buffer larger than a request, a round or
 * a buffer, ...), after changes: 0, or -EINVAL with why ("field 'SECTION.KEY': reason"). */
int avfs_scenario_check(const struct avfs_scenario *s, char *why, size_t whylen);

/* s in canonical form: every key with its value, defaults too, one a line, in a fixed order;
 * it parses back to the same scenario. As snprintf: the length it needs, buf (len bytes, may
 * be 0) holding as much of it as fits, NUL-terminated. */
size_t avfs_scenario_format(const struct avfs_scenario *s, char *buf, size_t len);

/* The class or generator named name, or NULL. */
struct avfs_scn_stream *avfs_scenario_class(const struct avfs_scenario *s, const char *name);
struct avfs_scn_be *avfs_scenario_be(const struct avfs_scenario *s, const char *name);
/* Requests a round of a round class (ceil(rate x round / io)); 0 for other classes. */
unsigned avfs_scn_per_round(const struct avfs_scn_stream *c);
/* A class's client buffer: its buffer, else 8 requests; a round class's two rounds (the
 * one being consumed, the one being fetched). */
uint64_t avfs_scn_buffer(const struct avfs_scn_stream *c);
/* A generator's request size: its io, else its kind's (random 4K, others 1M; delete 0). */
uint32_t avfs_scn_be_io(const struct avfs_scn_be *g);

/* The names of the kinds and bandwidth-class policies, as the file writes them. */
const char *avfs_scn_be_kind_name(enum avfs_scn_be_kind k);
const char *avfs_scn_bw_name(enum avfs_scn_bw bw);

#endif

/*
 * admit.h — services and admission control (SPEC §7), sans-I/O like the mixer: no clock, no
 * descriptors; `now` is an argument.
 *
 * A client asks for a *service* on a file: a rate r (bytes/s), a buffer b (bytes), a request
 * size s and a direction (ABISS, papers/000 §2.1). Its requests are due when the rest of the
 * buffer drains: p = (b − s) / r after they are issued.
 *
 * Admission (AVFS_ADMIT_SWEEP, the default) asks the round model of sweep.h whether the mixer,
 * serving the whole set in C-SCAN rounds, keeps up: the rounds last (p_min − W) / 2, each stream
 * is positioned for once a round and once a data block, the seeks of a round are one sweep over
 * the stroke, rotation and transfer come from the disk's mechanics and zone rates, and the sum,
 * with a margin for the variance of rotation and zone rates, stays within 1 − u_BE. The formulas
 * and the assumptions about the mixer are in sweep.h, the measurements in docs/DESIGN.md.
 *
 * AVFS_ADMIT_FAHRRAD is the test it replaced, kept for comparison (avfs-sim reserve --test
 * fahrrad): each service becomes a disk-time utilization (Fahrrad, papers/002 §2–§6),
 *
 *   period   p   = (b - s) / r
 *   budget   e   = n_seek * (t_k + t_r / 2) + r * p / d_slow: the seeks and rotations of the
 *                  discontiguities a period crosses (one per data block, plus one) and the
 *                  transfer at the slowest rate of the file's layout (the inner rate if unknown)
 *   u  = e / p,  u' = u + WCRT / p  (Theorem 2: one worst-case request more per period)
 *                     + 2 * S / p   (with isolation, Theorem 3: the two seeks a period's
 *                                    interleaving with other streams imposes)
 *   WCRT = full-stroke seek + one rotation + the transfer of one chunk (or request) at d_min
 *   S    = full-stroke seek + one rotation (Theorem 3's proof counts seeks, not transfers)
 *
 * and admits a set while  Σ u'_i + WCRT / min p_i  ≤  1 − u_BE  (Theorem 1, a best-effort
 * floor u_BE, 2 % by default). The per-service translation (avfs_service_cost) is kept under
 * both tests: it is what avfs-admin shows per stream. Per-user quotas (total rate, number of
 * streams) come on top of either.
 *
 * Enforcement is the bandwidth class of papers/004 §3.1: a token bucket per stream (rate r,
 * size b). A request within the bucket is real-time with its deadline; one above it is served
 * as best effort, the bucket's debt bounded at half its size — so a greedy stream never takes
 * more than its reservation from the others, and unused reserved time goes to best effort
 * because the mixer is work-conserving.
 */
#ifndef AVFS_ADMIT_H
#define AVFS_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iosched.h"
#include "sweep.h"

#define AVFS_ADMIT_ANY_UID UINT32_MAX	/* a quota that applies to every user without one */

enum avfs_admit_test {
	AVFS_ADMIT_SWEEP,	/* the round model of sweep.h (default) */
	AVFS_ADMIT_FAHRRAD,	/* Fahrrad's utilization test with WCRT padding (the old one) */
};

struct avfs_admit_conf {
	struct avfs_svc_model model;	/* the disk (from the superblock or a profile) */
	struct avfs_sweep_disk disk;	/* its mechanics (a named model's; zeros: derived) */
	uint64_t block_size;	/* data block: a stream crosses one discontiguity per block */
	uint32_t chunk;		/* non-preemptible unit (0: the stream's request size) */
	uint32_t be_io;		/* the largest best-effort command (1 MiB: FUSE's max_write) */
	double be_floor;	/* u_BE, kept for best effort (0.02) */
	bool isolation;		/* sweep: reserve for the best effort the mixer puts first and for a
				 * best-effort command's overrun each round; fahrrad: pad
				 * WCRT/p + 2·S/p (Theorem 3), not only WCRT/p (Theorem 2) */
	uint32_t default_io;	/* request size when the client names none (512 KiB) */
	enum avfs_admit_test test;	/* AVFS_ADMIT_SWEEP */
	bool zrr;		/* files are spread over the zones (ZRR): a stream of unknown layout
				 * sees the disk's zone mix; else the slowest zone */
	unsigned zones;		/* the file system's zones (0: unknown): with few the mix is not
				 * trusted either (sweep.h) */
	uint32_t run;		/* blocks of a file in one zone before the next (ZRR in runs;
				 * 0 or 1: one block, papers/001's ZRR) */
	uint32_t coalesce;	/* the mixer's coalescing: bytes one command may carry (0: one
				 * request a command) */
	int64_t margin_ns;	/* the mixer's margin m (500 ms) */
	int64_t be_age_ns;	/* the mixer's best-effort age bound (2 s) */
	double k;		/* the sweep model's K: e^(−2K) the probability of a backlog of m
				 * (10) */
};

/* m: the disk model; block: the data block size. The sweep test, isolation on, u_BE 2 %, no
 * chunking, ZRR one block a zone, the mixer's default m, be_age and coalescing, K 10,
 * mechanics derived from m. */
void avfs_admit_conf_default(struct avfs_admit_conf *c, const struct avfs_svc_model *m,
			     uint64_t block);

/* What a client asks for. */
struct avfs_service_req {
	uint64_t rate;		/* bytes/s, > 0 */
	uint64_t buffer;	/* bytes: the client's buffer (ABISS's playout buffer) */
	uint32_t io;		/* request size; 0: the configuration's default */
	bool write;
	uint32_t uid;
	/* the file's layout, where known (0: unknown; the sweep test then takes the disk's zone
	 * mix under ZRR, else d_min; the Fahrrad test d_min) */
	double d_slow;		/* bytes/s: the slowest transfer rate of the file's blocks */
	double d_mean;		/* bytes/s: 1 / the mean of 1/rate over its blocks (sweep) */
	double d_fast;		/* bytes/s: the fastest (sweep; 0: d_mean) */
};

/* The translation of one service. */
struct avfs_service_cost {
	double period_ns;	/* p */
	double budget_ns;	/* e */
	double u;		/* e / p */
	double u_padded;	/* u' */
	double wcrt_ns;
};

/* The cost of r: 0, or -EINVAL with why (zero rate, a buffer not larger than a request, a
 * request size not a multiple of 4 KiB, a period over a day, a rate the disk cannot carry
 * even alone). */
int avfs_service_cost(const struct avfs_admit_conf *c, const struct avfs_service_req *r,
		      struct avfs_service_cost *out, char *why, size_t whylen);

/* What is left after a refusal (or at any time): utilization, and for a service like the
 * refused one, the largest rate that would still be admitted; for its user, the quota left. */
struct avfs_admit_left {
	double util;		/* the share of disk time left: limit − load, ≥ 0 */
	uint64_t rate;		/* bytes/s, for the same buffer, size, direction and layout */
	uint64_t buffer;	/* bytes: the smallest buffer that the same rate would be admitted
				 * with (0: none up to 1 TiB) */
	uint64_t quota_rate;	/* bytes/s the user may still reserve (UINT64_MAX: no quota) */
	uint32_t quota_streams;	/* streams the user may still open (UINT32_MAX: no quota) */
};

/* An admitted stream, as avfs-admin lists it. */
struct avfs_stream_info {
	uint64_t id;		/* > 0, never reused while the admitter lives */
	struct avfs_service_req req;
	struct avfs_service_cost cost;
};

struct avfs_admit;

int avfs_admit_create(struct avfs_admit **a, const struct avfs_admit_conf *c);
void avfs_admit_destroy(struct avfs_admit *a);
const struct avfs_admit_conf *avfs_admit_conf(const struct avfs_admit *a);

/* A quota for uid (or AVFS_ADMIT_ANY_UID): at most max_rate bytes/s and max_streams streams
 * in total (0: unlimited). 0 or -ENOMEM. */
int avfs_admit_set_quota(struct avfs_admit *a, uint32_t uid, uint64_t max_rate,
			 uint32_t max_streams);

/* Admit r: its id (> 0), or -EINVAL (a bad request), -EDQUOT (the user's quota), -EBUSY (the
 * disk: the test above fails), -ENOMEM; with why, and *left filled on -EBUSY / -EDQUOT. */
int64_t avfs_admit_add(struct avfs_admit *a, const struct avfs_service_req *r,
		       struct avfs_admit_left *left, char *why, size_t whylen);
/* Add r without the admission test (an experiment that overprovisions on purpose): its id,
 * or -EINVAL (no rate) / -ENOMEM. Its cost counts in the load like any other's. */
int64_t avfs_admit_force(struct avfs_admit *a, const struct avfs_service_req *r, char *why,
			 size_t whylen);
/* End stream id. 0 or -ENOENT. */
int avfs_admit_remove(struct avfs_admit *a, uint64_t id);

/* The admitted set's load, the share of disk time it needs (0 when empty): the sweep model's
 * need (u + margins), or Fahrrad's Σ u'_i + WCRT / min p_i. */
double avfs_admit_load(const struct avfs_admit *a);
/* What the load may reach: 1 − u_BE' (sweep) or 1 − u_BE (fahrrad). */
double avfs_admit_limit(const struct avfs_admit *a);
/* The sweep model's figures for the admitted set with r added (r NULL: as it is); under the
 * Fahrrad test too, for comparison. 0 or -EINVAL (r a bad request). */
int avfs_admit_sweep(const struct avfs_admit *a, const struct avfs_service_req *r,
		     struct avfs_sweep_result *out);
/* What is left for a service like r (r may be NULL: only util and the quota of no one). */
void avfs_admit_left(const struct avfs_admit *a, const struct avfs_service_req *r,
		     struct avfs_admit_left *left);
size_t avfs_admit_count(const struct avfs_admit *a);
/* The i-th admitted stream (0 ≤ i < count), in admission order; NULL past the end. */
const struct avfs_stream_info *avfs_admit_at(const struct avfs_admit *a, size_t i);
const struct avfs_stream_info *avfs_admit_find(const struct avfs_admit *a, uint64_t id);

/* ---- enforcement: the bandwidth class's token bucket (papers/004 §3.1) ---- */

struct avfs_bucket {
	double rate;		/* bytes/s */
	double size;		/* bytes */
	double tokens;		/* may fall to −size/2 */
	int64_t last;		/* ns of the last refill */
};

void avfs_bucket_init(struct avfs_bucket *b, double rate, double size, int64_t now);
/* Charge a request of len bytes at now: true if it is within the reservation (real-time),
 * false if the stream is above its rate (serve it as best effort). The debt a stream runs up
 * above its rate is bounded at half a bucket. */
bool avfs_bucket_charge(struct avfs_bucket *b, uint64_t len, int64_t now);

/* Take len bytes if the bucket holds them (true: real-time); else leave it as it is (false:
 * best effort, uncharged — time nobody reserved, so it costs the stream nothing). */
bool avfs_bucket_take(struct avfs_bucket *b, uint64_t len, int64_t now);

/* The deadline of a request of a rate + buffer stream that keeps its buffer full (ABISS):
 * issued at now for len bytes, it must be done before the rest of the buffer drains. */
int64_t avfs_service_deadline(const struct avfs_service_req *r, uint64_t len, int64_t now);

#endif

/*
 * sweep.h — the round (sweep) model of the traffic mixer's service of a set of rate + buffer
 * streams (admission's disk-time test, SPEC §7). Pure arithmetic over the disk's service-time
 * model and its mechanics (seek curve, rotation, zone rates); it admits nothing itself (admit.c
 * does) and knows nothing of the mixer's code, only of the service pattern it assumes:
 *
 * The mixer serves its real-time requests in batches, each one C-SCAN sweep in LBA order
 * (papers/001 §3.3; Grouped Sweeping Scheduling with one group, Yu, Chen and Kandlur 1993; the
 * round-based servers of Gemmell, Vin, Kandlur, Rangan and Rowe, 1995). A request waits for the
 * round under way and is served in the next one, behind one command that cannot be preempted:
 *
 *   round        T   = (p_min − W) / 2       p_i = (b_i − s_i) / r_i the slack of stream i's
 *                                            requests; W the longest command (full-stroke seek,
 *                                            a turn, the largest command at the slowest rate:
 *                                            a request, a best-effort one, or a coalesced one)
 *   visits       v_i = min(r_i / s_i, 1/T_g + r_i / L)   a stream's pending requests are one
 *                                            run on disk (one positioning) per round, plus one
 *                                            for each place L = run · B it enters (ZRR: another
 *                                            zone every data block B, in runs every run blocks)
 *   gathered     T_g = max(T, p_min − m) where T ≥ m, else T: the hold lets a batch go once
 *                    the request due first comes within m of its deadline (less its place in
 *                    the batch), so a request that just missed a batch waits up to p_min − m
 *                    for the next, and the next visits each stream once with all it asked for
 *                    since. Counted per stream in `avfs-sim reserve` traces (seeds 21–60,
 *                    600 s): where p_min − m > T the disk made 0.84–1.01× the positionings
 *                    T_g counts, 0.61–0.74× what T did (the request due first waits less than
 *                    p_min − m where it lies late in the batch, but the reduced and EDF
 *                    windows then serve its stream out of the batch's order, and the others
 *                    wait the longer rounds). The returns, the seek per positioning and a
 *                    best-effort command's overrun (e_BE below) go once a round of T_g too
 *   detours      with T ≥ m the sweep may take a longer round T' = T_j = (p_j − W) / 2 of one
 *                    of the set's streams: each stream whose own round T_i < T' is visited out
 *                    of the sweep's order instead, v_i = min(r_i/s_i, 1/T_i + r_i/L) a second
 *                    (its requests come due before the sweep returns: the mixer's EDF and
 *                    reduced windows and joins serve them first), each visit two positionings
 *                    there and back (Theorem 3's 2·S) at their expectation: the sweep is
 *                    anywhere when the stream's request comes due, so a seek over the distance
 *                    of two places independent and uniform over the stroke, track + (full −
 *                    track)·8/15 under the concave curve (E √|U − V| = 8/15), and half a turn
 *                    (the worst case, a full stroke and a full turn each, admitted 0.008–0.015
 *                    less of the maxima with 0 misses either way, docs/DESIGN.md); the
 *                    rest once a round of T'. The T' of least u + margin is taken (T itself
 *                    among them). A set's positionings at its zero-miss maximum were 1.8× what
 *                    one round of T for all counted (`avfs-sim reserve`, seeds 1–20): the
 *                    mixer does not visit a long-period stream every round of the shortest
 *   by request   with T < m the mixer serves a stream whose own round T_i < m request by
 *                    request: the hold lets a batch go once a request comes within m of its
 *                    deadline, and one that arrives during a batch joins it. The rounds are
 *                    then T' = T_j of one of the set's streams (T among them), and a stream
 *                    with T_i < T' is served out of them: with p_i < m each request is due
 *                    within m of its arrival and goes at once, alone (the reduced C-SCAN
 *                    window): r_i/s_i visits a second, one positioning of a full stroke and
 *                    a full turn each, a command each (`urgent`); with p_i ≥ m its requests
 *                    join the batch under way and wait in its sweep: v_i = min(r_i/s_i,
 *                    1/T_i + r_i/L) visits within the sweep. The T' of least u + margin.
 *                    While the disk has time to spare the hold lets batches go sooner than
 *                    T' (a short-period stream's request starts one), more positionings on
 *                    time the disk has; loaded, it runs them back to back, each with what
 *                    came during the one before, and the round is what its work takes: u of
 *                    rounds of T' within the disk is that round within T'. At the largest
 *                    zero-miss prefixes with T < m (seeds 61–100, 600 s) the disk made
 *                    0.54–0.65× the positionings one round of T counts. With T' bounded by
 *                    the hold's gap, min_i (s_i/r_i + max(0, p_i − m)), T' stayed T on
 *                    those sets, and admission took 0.86 of the maxima there; unbounded,
 *                    0.94, 0 misses (docs/DESIGN.md)
 *   seek         S   = full / T_g + V · track + (full − track) · Σ√(n) / T_g
 *                    (V = Σ v_i, n = V·T_g;
 *                    the swept visits and T' with detours, plus two expected seeks a
 *                    detour and full an urgent request)
 *                    every round one return and n seeks whose distances add up to at most one
 *                    stroke: by the concavity of t(d) = track + (full − track)·√(d / L), which
 *                    bounds the disk's curve, they cost at most n · t(L / n), Σ√(n) = √n
 *                    (evenly spaced); with files spread over the zones (ZRR), no layout known
 *                    and rounds the mixer gathers (T ≥ m), the n places are independent and
 *                    uniform over the stroke and the expectation is Σ√(n) = n Γ(n+1) Γ(3/2) /
 *                    Γ(n+3/2), 0.67 √n to 0.89 √n (avfs_sweep_seek_sum): the bound charged
 *                    1.06–1.38× the seek time per positioning the simulated disk spent under
 *                    the mixer (`avfs-sim reserve`, seeds 1–20), the expectation 0.99–1.23×.
 *                    With T < m a request is due within m and one round of its arrival, the
 *                    hold lets it go at once and the mixer serves short batches and windows,
 *                    not one sweep a round: there it made up to 1.4× the positionings V
 *                    counts (docs/DESIGN.md), and the bound stays
 *   rotation     R   = V · T_r / 2          (variance V · T_r² / 12, a detour's two too; an
 *                                            urgent request's: T_r)
 *   transfer     X   = Σ r_i · E_i[1/d]     (variance Σ r_i · B · Var_i[1/d], per data block
 *                                            even in runs: ZRR's zones in order swing a
 *                                            stream's rate over n·B/2 bytes, runs taken from
 *                                            both ends inwards over one run L, and two runs
 *                                            average to about the mean; charged per run
 *                                            (16 MiB) the margin tripled and admitted 12.3
 *                                            random streams where 14.05 ran clean, docs/DESIGN.md)
 *   commands     c_i = min(r_i / s_i, v_i + r_i / (k_i · s_i)): with coalescing a command
 *                    carries up to k_i = ⌊C / s_i⌋ requests that follow each other on disk, so
 *                    a visit's requests take at most one command more than their bytes / C
 *   turns        Σ over writers of (c_i − v_i) · T_r: a write command that follows the one
 *                    before it on disk misses the sector by the command overhead and waits a
 *                    turn (measured on the simulated disk: 13.4 ms for a contiguous 264 KiB write)
 *   overheads    Σ c_i · t_ovh
 *
 *   u = S + R + X + turns + commands, the share of disk time the set keeps busy, and it is
 *   admitted while
 *
 *   u + e_BE / T + K · σ² / m  ≤  1 − u_BE'
 *
 * e_BE = full + T_r − T_k − T_r/2: a best-effort command the mixer starts under hold, because
 * its estimate ends before the hold time, can end that much later, once a hold: a round of
 * T_g (also with detours: the hold is over the detoured streams' requests too); u_BE' =
 * max(u_BE, W_BE / be_age) with isolation: the best effort that the mixer puts first once every
 * be_age; σ² = the variance per second of the work above (rotational latencies, zone rates):
 * with this drift, a backlog of the mixer's margin m has a probability below e^(−2K).
 *
 * What the model leaves out, measured rather than modelled (docs/DESIGN.md): the mixer's hold
 * gathers batches longer than T_g when the periods allow (fewer positionings: the model is
 * conservative there, less so with detours); with T < m, the batches a stream due within m
 * starts while the disk has time to spare (more positionings than V counts: the disk then
 * runs busy but clean, 99–100 % in some admitted sets of `avfs-sim reserve`, and a
 * best-effort client beside gets the floor, u_BE'); requests that join a batch under way (an earlier deadline
 * than its latest) and the reduced C-SCAN and EDF windows, which serve requests due within m first
 * when a batch runs late, so that the mixer's own estimate (papers/001 eq. (1)), which knows
 * nothing of a write's lost turn, does not turn into misses.
 */
#ifndef AVFS_SWEEP_H
#define AVFS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iosched.h"

#define AVFS_SWEEP_BANDS 32
#define AVFS_SWEEP_MIX_ZONES 8	/* ZRR zones for the zone mix to be a stream's rate */

/* The disk's mechanics beyond the service-time model: a named model's (avfs_sweep_disk_named)
 * or a profile's; zeros are derived from the service-time model (see avfs_sweep_conf_check). */
struct avfs_sweep_disk {
	double track_ns;	/* seek over one track (0: T_k / 5) */
	double full_ns;		/* full-stroke seek (0: 2 T_k) */
	double overhead_ns;	/* per command (0: 200 µs) */
	unsigned nbands;	/* rate bands across the LBA range (0: the linear model) */
	double band_start[AVFS_SWEEP_BANDS];	/* fraction of the LBA range where band k starts */
	double band_rate[AVFS_SWEEP_BANDS];	/* bytes/s in band k */
};

/* The mechanics of the named model's first `bytes` (0: all of it). 0 or -ENOENT (no such
 * rotating model). */
int avfs_sweep_disk_named(struct avfs_sweep_disk *d, const char *name, uint64_t bytes);

struct avfs_sweep_conf {
	struct avfs_svc_model model;	/* T_r, T_k, rates: what the mixer estimates with */
	struct avfs_sweep_disk disk;
	uint64_t block_size;	/* B */
	bool zrr;		/* files spread over the zones (ZRR): a stream of unknown layout sees
				 * the whole LBA range's rates; else its worst, d_min */
	unsigned zones;		/* the file system's zones (0: unknown, many); with fewer than
				 * AVFS_SWEEP_MIX_ZONES a stream stays long in one part of the
				 * disk, and its unknown layout is taken at d_min too */
	uint32_t run;		/* blocks of a file in one zone before the next (0: 1) */
	uint64_t coalesce;	/* C: bytes a coalesced command may carry (0: one request a
				 * command) */
	double margin_ns;	/* the mixer's m (500 ms) */
	double be_age_ns;	/* the mixer's best-effort age bound (2 s) */
	uint64_t cmd_max;	/* the largest non-preemptible best-effort command (or chunk) */
	uint64_t chunk;		/* the mixer's chunk: a request's non-preemptible part (0: all) */
	double be_floor;	/* u_BE */
	bool be_isolation;	/* reserve for the best effort put first once every be_age, and for
				 * one best-effort command's overrun a round */
	double k;		/* K: e^(−2K) the probability of a backlog of m (10) */
};

/* One stream of the set. */
struct avfs_sweep_stream {
	double rate;		/* bytes/s */
	double buffer;		/* bytes */
	double io;		/* bytes a request */
	bool write;
	double d_mean;		/* bytes/s: 1 / E[1/d] over the stream's blocks; 0: unknown */
	double d_slow, d_fast;	/* the slowest and fastest of them (0: d_mean) */
};

enum avfs_sweep_verdict {
	AVFS_SWEEP_OK,
	AVFS_SWEEP_SHORT,	/* a period no longer than the longest command: no round fits */
	AVFS_SWEEP_TIME,	/* the rounds need more disk time than there is */
};

struct avfs_sweep_result {
	enum avfs_sweep_verdict verdict;
	double round_ns;	/* T */
	double gather_ns;	/* the round the swept streams are visited once in: T, or with
				 * T ≥ m the hold's max(T, p_min − m) */
	double period_min_ns;	/* p_min */
	double visits;		/* V: positionings a second (a detour's two) */
	double detours;		/* visits a second by detour from the sweep (its round_ns) */
	double urgent;		/* requests a second served at once, alone: due within m */
	double commands;	/* Σ c_i: commands a second (fewer than requests: coalescing) */
	double seek, rot, xfer, turns, cmds;	/* shares of disk time */
	double util;		/* their sum, u */
	double margin;		/* K σ² / m */
	double be;		/* e_BE / T */
	double need;		/* u + margin + be */
	double limit;		/* 1 − u_BE' */
	double wcrt_ns;		/* W */
};

/* Fill in the derived mechanics and check c: 0, or -EINVAL (no model, no rates). */
int avfs_sweep_conf_check(struct avfs_sweep_conf *c);

/* Evaluate the set s[0..n): the verdict and the figures. n = 0: an empty set, need 0. */
void avfs_sweep_eval(const struct avfs_sweep_conf *c, const struct avfs_sweep_stream *s,
		     size_t n, struct avfs_sweep_result *out);

/* Σ √(g_j / L) over the n seeks of one round (n may be fractional: V·T), in units of the
 * stroke L: √n for n seeks evenly spaced over it (the most a concave curve can cost, by
 * Jensen), or with spread the expectation for n places independent and uniform over it —
 * each gap before one of n uniform points is Beta(1, n), E[√G] = Γ(n+1) Γ(3/2) / Γ(n+3/2),
 * so n · E[√G] = √n · 0.886 · √(n / (n + 3/4)) nearly: 0.667 √n for one seek, 0.85 √n for
 * ten. 0 for n ≤ 0. */
double avfs_sweep_seek_sum(double n, bool spread);

/* E[1/d] and Var[1/d] (s/byte, s²/byte²) of stream s under c: its layout, or the disk's. */
void avfs_sweep_inv_rate(const struct avfs_sweep_conf *c, const struct avfs_sweep_stream *s,
			 double *mean, double *var);

#endif

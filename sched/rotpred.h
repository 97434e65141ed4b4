/*
 * rotpred.h — the rotational position predictor for JIT seek and seek splitting on a real disk
 * (papers/003 §3.2–§3.3), sans-I/O: a disk profile (rotation period, seek curve, transfer rate
 * across the LBA range) and the completions it is told of. It reads no clock and touches no
 * device. The simulated disk predicts from its own mechanics instead (avfs_simdisk_predict).
 *
 * The model: the transfer rate falls linearly from dmax at byte 0 to dmin at lmax, and a track
 * holds one rotation's worth of bytes at that rate, so the angle of byte x is the fractional
 * part of the number of tracks before it. A completion at time t of a command ending at byte e
 * puts the head at angle(e) at t: the phase of the platter. The seek over a fraction f of the
 * stroke is track + (full − track)·√f (Ruemmler–Wilkes' square-root part), plus the command
 * overhead. Skew and zone steps are not modelled: the prediction is best near the last command,
 * which is where JIT seeks inside a C-SCAN sweep are. Given the disk's own mechanics (a named
 * model), it uses those instead, and only the phase is learned.
 */
#ifndef AVFS_ROTPRED_H
#define AVFS_ROTPRED_H

#include <stdbool.h>
#include <stdint.h>

#include "iosched.h"

struct avfs_rotpred_params {
	double tr_ns;		/* rotation period */
	double track_ns;	/* seek over one track */
	double full_ns;		/* full-stroke seek */
	double overhead_ns;	/* per command, before the seek */
	double dmax, dmin;	/* bytes/s at byte 0 and at lmax */
	uint64_t lmax;		/* device bytes */
	/* Optional: the disk's own mechanics (a named model: avfs_hdd_angle_of and
	 * avfs_hdd_seek_between of disk/hddmodel.h, with geom its struct avfs_hdd), used in place
	 * of the linear rate and the square-root seek above: zones, skew and the seek curve exact. */
	const void *geom;
	double (*angle)(const void *geom, uint64_t off);		/* turns, [0, 1) */
	double (*seek)(const void *geom, uint64_t from, uint64_t to);	/* ns */
};

struct avfs_rotpred {
	struct avfs_rotpred_params p;
	bool known;		/* a completion has been observed: phase and head are known */
	double phase;		/* angle (in turns, [0,1)) of the head at time 0 */
	uint64_t head;		/* byte the head is over (end of the last command) */
	int64_t busy_until;	/* the last observed completion */
	/* The transport: how much later than the predicted time a command reaches the drive (the
	 * host's way there and the completion's way back: microseconds on a SATA disk, a
	 * millisecond through an emulator), beyond what the JIT offset covers. Learned from the
	 * commands told of by avfs_rotpred_issued that lost a turn; added to every predicted
	 * arrival. */
	double slip_ns;
	uint64_t slip_samples, slip_lost;	/* commands judged, and those that lost a turn */
	bool pending;		/* a command told of by avfs_rotpred_issued is out */
	uint64_t pend_end;	/* its end byte */
	double pend_done;	/* its predicted completion */
};

/* Check and take the parameters. 0, or -EINVAL (a non-positive period, rates, or lmax;
 * full < track; angle without seek or the other way round). */
int avfs_rotpred_init(struct avfs_rotpred *r, const struct avfs_rotpred_params *p);

/* Parameters from the service-time model alone (SPEC §5.2: T_r, mean seek T_k, rates): the seek
 * curve is fitted so that its mean over random pairs is T_k (track = T_k/10). */
void avfs_rotpred_params_from_model(const struct avfs_svc_model *m, struct avfs_rotpred_params *p);

/* A command ending at byte end_off completed at now. transfer: it moved data, so the head was
 * over end_off at now (the platter's phase); a SEEK only tells where the head is. */
void avfs_rotpred_observe(struct avfs_rotpred *r, int64_t now, uint64_t end_off, bool transfer);

/* A read or write of [off, off + len) was issued at now (one command on the device at a time,
 * as on a rotating disk). When it completes (avfs_rotpred_observe with off + len), whether it
 * lost a turn against the prediction feeds the transport estimate slip_ns. Sequential commands
 * and commands too far for the angles (AVFS_ROTPRED_NEAR) are not judged. */
void avfs_rotpred_issued(struct avfs_rotpred *r, int64_t now, uint64_t off, uint32_t len);

/* Angle of byte off, in turns [0,1). */
double avfs_rotpred_angle(const struct avfs_rotpred *r, uint64_t off);

struct avfs_hdd;

/* A named rotating model of SPEC §11 (avfsd --disk-model) for a device of `bytes`: the
 * service-time model of its first `bytes` (a smaller device is the model's outer part, like
 * hddemu --size: rates and mean seek of that part) and the predictor's parameters with the
 * model's own mechanics, through *geom (free with avfs_hdd_free once the predictor is gone).
 * 0, -ENOENT (no such rotating model), -ENOMEM. */
int avfs_rotpred_named(const char *name, uint64_t bytes, struct avfs_svc_model *m,
		       struct avfs_rotpred_params *p, struct avfs_hdd **geom);

/* struct avfs_sched_predictor's predict(): ctx is a struct avfs_rotpred. -EAGAIN before the
 * first observation (the mixer then simply issues), -EINVAL beyond lmax. Without the disk's own
 * mechanics, a target more than AVFS_ROTPRED_NEAR bytes from the head gets AVFS_PRED_ROT_MEAN:
 * the seeks and half a turn. (Against the avfs-250g model, the linear angles' mean error is
 * 0.92 ms within 512 KiB, 1.21 ms within 2 MiB, and from 8 MiB on worse than the 2.1 ms of a
 * half-turn guess: zone steps and skew.) */
#define AVFS_ROTPRED_NEAR (2ull << 20)
int avfs_rotpred_predict(void *ctx, int64_t now, uint64_t off, int64_t *seek_ns, int64_t *rot_ns,
			 int64_t *half_seek_ns, uint64_t *mid_off);

/* The scheduler's predictor interface over r: predict, issued and observe. */
struct avfs_sched_predictor avfs_rotpred_predictor(struct avfs_rotpred *r);

#endif

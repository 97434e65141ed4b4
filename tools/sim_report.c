/*
 * sim_report.c — a simulated run's figures as avfs-sim prints them (sim_report.h).
 */
#include "sim_report.h"

#include "jsonout.h"

#include <inttypes.h>
#include <stdio.h>

void avfs_sim_report_json(json_object *j, const struct avfs_simrun_result *r)
{
	const struct {
		const char *key;
		double v;
	} margin[] = {
		{ "min", r->margin_min_ms }, { "p001", r->margin_p001_ms },
		{ "p01", r->margin_p01_ms }, { "p50", r->margin_p50_ms },
	};
	json_object *m = json_object_new_object(), *sk = json_object_new_object();

	json_object_object_add(j, "rt_requests", json_object_new_uint64(r->rt_requests));
	json_object_object_add(j, "deadline_misses", json_object_new_uint64(r->deadline_misses));
	json_object_object_add(j, "etime_failed", json_object_new_uint64(r->etime_failed));
	json_object_object_add(j, "p0", avfs_json_double(r->p0, "%.6g"));
	for (size_t i = 0; i < sizeof(margin) / sizeof(margin[0]); i++)
		json_object_object_add(m, margin[i].key, avfs_json_double(margin[i].v, "%.1f"));
	json_object_object_add(j, "margin_ms", m);
	json_object_object_add(j, "disk_utilization",
			       avfs_json_double(r->disk_utilization, "%.4f"));
	json_object_object_add(sk, "p50", avfs_json_double(r->seek_p50_gb, "%.3f"));
	json_object_object_add(sk, "p90", avfs_json_double(r->seek_p90_gb, "%.3f"));
	json_object_object_add(sk, "frac_below_5", avfs_json_double(r->seek_frac_below_5, "%.4f"));
	json_object_object_add(j, "seek_gb", sk);
	{	/* the seek distances' classes (GB), as avfs-admin stats shows them */
		json_object *cls = json_object_new_object();

		for (unsigned i = 0; i < AVFS_SEEK_CLASSES; i++)
			json_object_object_add(cls, avfs_seek_class_names[i],
					       json_object_new_uint64(r->seek_class[i]));
		json_object_object_add(j, "seek_classes", cls);
	}
	json_object_object_add(j, "be_mbps", avfs_json_double(r->be_mbps, "%.2f"));
	json_object_object_add(j, "be_requests", json_object_new_uint64(r->be_requests));
	json_object_object_add(j, "e_twait_ms", avfs_json_double(r->e_twait_ms, "%.3f"));
	json_object_object_add(j, "commands", json_object_new_uint64(r->commands));
	json_object_object_add(j, "satf_picks", json_object_new_uint64(r->satf_picks));
	json_object_object_add(j, "overload", json_object_new_uint64(r->overload));
	{
		json_object *ra = json_object_new_object();

		json_object_object_add(ra, "fetches", json_object_new_uint64(r->ra.fetches));
		json_object_object_add(ra, "served", json_object_new_uint64(r->ra.served));
		json_object_object_add(ra, "dropped", json_object_new_uint64(r->ra.dropped));
		json_object_object_add(j, "read_ahead", ra);
	}
	{	/* where the simulated drive's time went over the measured window */
		struct json_object *dr = json_object_new_object();

		json_object_object_add(dr, "commands", json_object_new_uint64(r->split.commands));
		json_object_object_add(dr, "seeks", json_object_new_uint64(r->split.seeks));
		json_object_object_add(dr, "waits", json_object_new_uint64(r->split.waits));
		json_object_object_add(dr, "seek_s", avfs_json_double(r->split.seek_ns / 1e9, "%.3f"));
		json_object_object_add(dr, "rotation_s",
				       avfs_json_double(r->split.rot_ns / 1e9, "%.3f"));
		json_object_object_add(dr, "transfer_s",
				       avfs_json_double(r->split.xfer_ns / 1e9, "%.3f"));
		json_object_object_add(dr, "overhead_s",
				       avfs_json_double(r->split.overhead_ns / 1e9, "%.3f"));
		json_object_object_add(j, "drive", dr);
	}
	json_object_object_add(j, "hp_requests", json_object_new_uint64(r->hp_requests));
	json_object_object_add(j, "hp_mean_ms", avfs_json_double(r->hp_mean_ms, "%.3f"));
	json_object_object_add(j, "hp_max_ms", avfs_json_double(r->hp_max_ms, "%.3f"));
	json_object_object_add(j, "decision_us", avfs_json_double(r->decision_us, "%.3f"));
	json_object_object_add(j, "max_pending", json_object_new_uint64(r->max_pending));
	json_object_object_add(j, "zones", json_object_new_int64(r->zones));
	json_object_object_add(j, "block_size", json_object_new_uint64(r->block_size));
	json_object_object_add(j, "files_filled", json_object_new_uint64(r->files_filled));
	json_object_object_add(j, "deleted_files", json_object_new_uint64(r->deleted_files));
	json_object_object_add(j, "wall_s", avfs_json_double(r->wall_s, "%.2f"));
	json_object_object_add(j, "fill_wall_s", avfs_json_double(r->fill_wall_s, "%.2f"));
}

void avfs_sim_report_text(const struct avfs_simrun_result *r, bool be)
{
	printf("  RT requests        %" PRIu64 ", deadline misses %" PRIu64 " (P0 %.3g)\n",
	       r->rt_requests, r->deadline_misses, r->p0);
	printf("  completion margin  min %.1f ms, p0.1%% %.1f ms, p1%% %.1f ms, median %.1f ms\n",
	       r->margin_min_ms, r->margin_p001_ms, r->margin_p01_ms, r->margin_p50_ms);
	printf("  disk utilization   %.1f %%\n", r->disk_utilization * 100);
	printf("  seek distance      median %.2f GB, p90 %.2f GB, %.1f %% below 5 GB\n",
	       r->seek_p50_gb, r->seek_p90_gb, r->seek_frac_below_5 * 100);
	printf("  seeks (GB)        ");
	for (unsigned i = 0; i < AVFS_SEEK_CLASSES; i++)
		printf(" %s: %" PRIu64, avfs_seek_class_names[i], r->seek_class[i]);
	printf("\n");
	if (be)
		printf("  best effort        %.1f Mbps (%" PRIu64 " requests)\n", r->be_mbps,
		       r->be_requests);
	printf("  scheduler          %.2f us per decision, up to %" PRIu64 " requests pending\n",
	       r->decision_us, r->max_pending);
	if (r->ra.fetches)
		printf("  read-ahead         %" PRIu64 " pieces read ahead, %" PRIu64
		       " reads answered from them, %" PRIu64 " dropped unused\n", r->ra.fetches,
		       r->ra.served, r->ra.dropped);
	if (r->satf_picks)
		printf("  order=satf         %" PRIu64 " commands out of a batch's LBA order\n",
		       r->satf_picks);
	if (r->overload)
		printf("  overload           %" PRIu64 " decisions in C-SCAN order: what was due "
		       "first could not be met, or a deadline was missed within `recover`\n",
		       r->overload);
}

/*
 * profile_json.c — profile figures as JSON for avfs-admin profile and avfs-sim disk --probe
 * (profile_json.h). Formatting only: the figures are disk/profile.c's.
 */
#include "profile_json.h"

json_object *avfs_profile_json_seeks(const struct avfs_profile *r)
{
	const struct {
		const char *key;
		double ns;
	} seek[] = {
		{ "track", r->seek_track_ns }, { "third", r->seek_third_ns },
		{ "full", r->seek_full_ns }, { "mean", r->seek_mean_ns },
	};
	json_object *o = json_object_new_object();

	for (size_t i = 0; i < sizeof(seek) / sizeof(seek[0]); i++)
		json_object_object_add(o, seek[i].key, avfs_json_double(seek[i].ns / 1e6, "%.4f"));
	return o;
}

json_object *avfs_profile_json_rates(unsigned n, const uint64_t *off, const double *rate,
				     bool bytes)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; i < n; i++) {
		json_object *p = json_object_new_object();

		if (bytes)
			json_object_object_add(p, "offset_bytes", json_object_new_uint64(off[i]));
		json_object_object_add(p, "offset_gb", avfs_json_double((double)off[i] / 1e9,
									"%.3f"));
		json_object_object_add(p, "mbs", avfs_json_double(rate[i] / 1e6, "%.3f"));
		json_object_array_add(a, p);
	}
	return a;
}

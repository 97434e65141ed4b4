/*
 * profile_json.h — the JSON of disk/profile.c's figures that more than one tool prints
 * (avfs-admin profile, avfs-sim disk --probe), so that both print them alike. The documents
 * around them are the tools'.
 */
#ifndef AVFS_PROFILE_JSON_H
#define AVFS_PROFILE_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include "jsonout.h"
#include "profile.h"

/* {track, third, full, mean}: the seek times in ms. */
json_object *avfs_profile_json_seeks(const struct avfs_profile *r);

/* The rate across the disk, [{offset_bytes (with bytes), offset_gb, mbs}] (MB = 1e6 bytes):
 * n points at byte offsets off with rates rate (bytes/s). */
json_object *avfs_profile_json_rates(unsigned n, const uint64_t *off, const double *rate,
				     bool bytes);

#endif

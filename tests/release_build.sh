#!/bin/bash
# release_build.sh — the release build has no warning either (issue 17, Done when 6): a
# `meson setup --buildtype=release` of this source tree (werror is the project's default, so
# -Werror is on as in the test build) compiles and links every program, library and test of
# the host, at -O3, where some warnings only appear (-Wformat-truncation once inlined); the
# static guest programs (tests/qemu) are left to the suite's own build.
# Any warning in the log fails it, even one that -Werror would not stop. The build folder is
# kept in the test build's (release-check/): the first run builds everything (~30 s on two
# idle cores), later runs only what changed; with -Werror a file that warned has no object,
# so it is compiled again, and warns again, each run.
# usage: release_build.sh SOURCE_ROOT BUILD_ROOT
set -u
SRC=$1
B=$2/release-check
LOG=$2/release-check.log
if [ ! -f "$B/build.ninja" ]; then
	rm -rf "$B"
	meson setup --buildtype=release "$B" "$SRC" >"$LOG" 2>&1 ||
		{ cat "$LOG"; rm -rf "$B"; echo "FAIL: meson setup"; exit 1; }
fi
# the project's default, read from the source (the kept folder keeps what it was set up with)
werror=$(meson introspect --buildoptions "$SRC/meson.build" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "werror"))')
echo "werror by default: $werror"
[ "$werror" = True ] || { echo "FAIL: werror is not the default"; exit 1; }
targets=$(meson introspect --targets "$B" | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    if "tests/qemu" in t["defined_in"]:
        continue	# static guest programs: linked with -static, built by the suite
    for f in t["filename"]:
        print(os.path.relpath(f, sys.argv[1]))
' "$B")
echo "building $(echo "$targets" | wc -w) targets with --buildtype=release"
# shellcheck disable=SC2086 # a list of targets
if ! ninja -C "$B" -j "${AVFS_RELEASE_JOBS:-2}" $targets >"$LOG" 2>&1; then
	grep -B2 -A8 -E "error|warning" "$LOG" | head -60
	echo "FAIL: the release build failed"
	exit 1
fi
if grep -iE "warning" "$LOG"; then
	echo "FAIL: warnings in the release build"
	exit 1
fi
echo "ok release build: $(grep -c '^\[' "$LOG") steps (of what changed), no warning"
echo "1 passed, 0 failed"

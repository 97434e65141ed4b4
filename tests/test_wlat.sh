#!/bin/bash
# test_wlat.sh — bench/wlat.so (the LD_PRELOAD timer recorder.sh puts in ffmpeg) on dd and cp:
# opens, writes (through a dup2'd descriptor too) and closes of files under WLAT_PREFIX are
# listed with their paths, nothing else is (a file outside the prefix, stderr), a write's errno
# comes through unchanged, and without WLAT_DIR nothing is written. Env: WLAT (the built module).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/checks.sh"
[ -e "${WLAT:-}" ] || avfs_skip "wlat.so is not built (\$WLAT)"

T=$(mktemp -d /tmp/test-wlat-XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
mkdir "$T/in" "$T/out" "$T/w"

WLAT_DIR=$T/w WLAT_PREFIX=$T/in/ LD_PRELOAD=$WLAT \
	dd if=/dev/zero of="$T/in/f" bs=64K count=10 status=none
n=$(ls "$T/w" | wc -l)
check "one file per process" same "$n" 1
f=$(ls "$T/w"/wlat.* 2>/dev/null | head -n1)
check "its header counts 13 calls, none dropped" \
	grep -q "^# wlat pid [0-9]* calls 13 dropped 0 t0_ns [0-9]*$" "$f"
check "10 writes of the file, with latency and time" \
	same "$(grep -c "^w [0-9]* [0-9]* $T/in/f$" "$f")" 10
# dd opens its output, dup2()s it to fd 1 and closes the first: the writes go to fd 1
check "one open and two closes of it (dd's dup2 to fd 1 followed)" \
	same "$(grep -c "^o .* $T/in/f$" "$f") $(grep -c "^c .* $T/in/f$" "$f")" "1 2"
check "nothing outside the prefix (dd's input, stderr)" \
	same "$(grep -vc "^# \|$T/in/f$" "$f")" 0

rm -f "$T/w"/*
WLAT_DIR=$T/w WLAT_PREFIX=$T/in/ LD_PRELOAD=$WLAT cp "$T/in/f" "$T/out/g"
f=$(ls "$T/w"/wlat.* 2>/dev/null | head -n1)
check "cp: the open of its source under the prefix is timed" \
	grep -q "^o [0-9]* [0-9]* $T/in/f$" "$f"
check "cp: its destination outside the prefix is not" same "$(grep -c "$T/out/g" "$f")" 0

rm -f "$T/w"/*
chmod 444 "$T/in/f"
out=$(WLAT_DIR=$T/w WLAT_PREFIX=$T/in/ LD_PRELOAD=$WLAT \
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.write(fd, b"x")
except OSError as e:
    print(e.errno)' "$T/in/f")
check "a failed write keeps its errno (EBADF)" same "$out" 9

rm -f "$T/w"/*
LD_PRELOAD=$WLAT dd if=/dev/zero of="$T/in/h" bs=4K count=1 status=none
check "without WLAT_DIR the program runs and nothing is written" \
	eval 'test -s "$T/in/h" && test -z "$(ls "$T/w")"'
avfs_summary

#!/bin/sh
# quickstart.sh — the two commands of the README.
#   ./quickstart.sh run    install what is missing, build, run the main job
#   ./quickstart.sh test   install what is missing, build with sanitizers and -Werror,
#                          run the whole test suite (this is what CI runs)
# Works as root on a fresh Debian 12 machine from a fresh clone.
set -eu

cd "$(dirname "$0")"

# libblkid-dev: mkfs.avfs asks libblkid what a device holds before formatting it;
# libsystemd-dev: avfsd's readiness notice and journal lines; man-db and systemd: the tests
# render every man page and verify the unit; python3-prometheus-client: the test parses
# `avfs-admin stats --prometheus` with Prometheus's own parser; attr, acl and rsync: the
# extended attribute and ACL test drives the mount with setfattr/getfattr, setfacl/getfacl and
# rsync -aAX.
PACKAGES="gcc libc6-dev pkg-config meson ninja-build python3 liburing-dev libfuse3-dev fuse3 \
libnvme-dev libjson-c-dev libsgutils2-dev libcmocka-dev libblkid-dev libsystemd-dev \
util-linux mount fio man-db systemd python3-prometheus-client attr acl rsync \
qemu-system-x86 busybox-static kmod cpio xz-utils clang libclang-rt-14-dev"

install_missing() {
	missing=""
	for p in $PACKAGES; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
			missing="$missing $p"
		fi
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "quickstart: missing packages:$missing (run as root, or apt-get install them)" >&2
		exit 1
	fi
	echo "quickstart: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

setup() {	# setup DIR ARGS...: configure once, reconfigure if options changed
	dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@"
	fi
}

case "${1:-}" in
run)
	install_missing
	setup build --buildtype=release
	ninja -C build
	img=/var/tmp/avfs-demo.img
	mnt=/var/tmp/avfs-demo.mnt
	echo "quickstart: formatting $img (8 GB image file, 4 MiB blocks)"
	rm -f "$img"
	./build/tools/mkfs.avfs --size 8G "$img"
	mkdir -p "$mnt"
	echo "quickstart: starting avfsd on $mnt"
	./build/daemon/avfsd --foreground --socket /var/tmp/avfs-demo.sock "$img" "$mnt" &
	pid=$!
	trap 'fusermount3 -u "$mnt" 2>/dev/null; wait $pid 2>/dev/null' EXIT
	for i in $(seq 50); do grep -q " $mnt " /proc/mounts && break; sleep 0.1; done
	sock=/var/tmp/avfs-demo.sock
	echo "quickstart: DVR workload 4r2w (4 playbacks, 2 recordings of 19.39 Mbps HD) for 30 s through libavio,"
	echo "            each stream with a reservation; the requests traced to /var/tmp/avfs-demo.trace.csv"
	./build/tools/avfs-admin --socket $sock trace --duration 40 --out /var/tmp/avfs-demo.trace.csv &
	tpid=$!
	./build/examples/dvr --mode avio --workload 4r2w --dir "$mnt" --duration 30 --file-size 512M --reserve
	echo "quickstart: the daemon's QoS statistics (avfs-admin stats)"
	./build/tools/avfs-admin --socket $sock stats
	wait $tpid
	./build/tools/avfs-admin plot /var/tmp/avfs-demo.trace.csv --out /var/tmp/avfs-demo.svg
	echo "quickstart: the head position, margins and utilization drawn in /var/tmp/avfs-demo.svg"
	echo "quickstart: unmounting"
	fusermount3 -u "$mnt"
	wait $pid
	trap - EXIT
	./build/tools/fsck.avfs -n "$img"
	echo "quickstart: the same disk model in virtual time, one hour of 8 playbacks: tm vs cscan"
	for policy in tm cscan; do
		./build/tools/avfs-sim --disk avfs-250g --workload 8r0w --duration 3600 --policy $policy
	done
	;;
test)
	install_missing
	setup build-test --buildtype=debugoptimized -Dwerror=true \
		-Db_sanitize=address,undefined -Db_lundef=false
	ninja -C build-test
	meson test -C build-test --print-errorlogs --num-processes 2
	;;
*)
	echo "usage: $0 run|test" >&2
	exit 2
	;;
esac

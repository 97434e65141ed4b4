#!/bin/sh
# guest_fs.sh — runs inside the QEMU guest (busybox sh): mkfs.avfs and fsck.avfs, static in /bin,
# on the block device of each emulated disk (/dev/sdX of the virtio-scsi and lsi disks,
# /dev/nvme0n1), i.e. the io_uring O_DIRECT backend on real SCSI and NVMe block devices.
# Before that, on each disk, a short run of the traffic mixer (mixer_run, static in /bin) through
# each backend the disk has: SG_IO with chunking, JIT and seek splitting on the virtio-scsi disk,
# io_uring on the lsi disk's block device, NVMe passthrough on /dev/ngXnY and io_uring on
# /dev/nvmeXnY (non-rotational mode). Devices are found by serial.
# Prints "ok|FAIL SERIAL ..." per check; exit 0 iff all pass.
. /bin/guest_lib.sh	# check, block_device

# mixer SERIAL EXPECT ARG...: mixer_run ARG..., its lines indented; one check: exit 0 and a line
# matching the grep -E pattern EXPECT
mixer() {
	serial=$1 expect=$2
	shift 2
	out=$(mixer_run --duration 3 --streams 2 --rate 1M --io 256K "$@" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	echo "$out" | grep -Eq "$expect" || rc=1
	check $rc $serial "mixer_run $*: $(echo "$out" | grep -o 'misses [0-9]*' | head -1), shows /$expect/"
}

for serial in vscsi0 lsi0 nvme0; do
	dev=$(block_device $serial) || { check 1 $serial "no block device"; continue; }
	case $serial in
	vscsi0)	# the mixer's counters: it chunked, waited out slack and split seeks (SEEK(10))
		mixer $serial ' [1-9][0-9]* chunk commands, [1-9][0-9]* JIT waits .* [1-9][0-9]* seek splits' \
			--backend sg --set chunk=64K --set jit=on --set split=32M "$dev"
		;;
	lsi0) mixer $serial ' [1-9][0-9]* chunk commands' --backend uring --set chunk=64K "$dev" ;;
	nvme0)
		mixer $serial 'non-rotational mode' --backend nvme --set depth=16 \
			"/dev/ng${dev#/dev/nvme}"
		mixer $serial 'non-rotational mode' --backend uring "$dev"
		;;
	esac
	sys=/sys/block/${dev#/dev/}/queue
	echo "$serial: $dev, rotational $(cat $sys/rotational), logical block" \
		"$(cat $sys/logical_block_size), max_sectors_kb $(cat $sys/max_sectors_kb)"
	out=$(mkfs.avfs -f --block-size 1M "$dev" 2>&1)	# -f: scratch disks of the guest
	rc=$?
	echo "$out" | sed 's/^/  /'
	check $rc $serial "mkfs.avfs $dev: $(echo "$out" | grep 'data blocks' | tr -s ' ' | sed 's/^ //')"
	out=$(fsck.avfs -n "$dev" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	dirty=1
	echo "$out" | grep -q ': clean$' && dirty=0
	check $((rc + dirty)) $serial "fsck.avfs -n $dev: $(echo "$out" | tail -1 | sed 's/^[^:]*: //'), exit $rc"
done
[ $fail -eq 0 ]

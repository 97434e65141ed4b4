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

mixer() {	# mixer SERIAL ARG...: mixer_run ARG..., its lines indented, one check
	serial=$1
	shift
	out=$(mixer_run --duration 3 --streams 2 --rate 1M --io 256K "$@" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	check $rc $serial "mixer_run $*: $(echo "$out" | grep -o 'misses [0-9]*' | head -1)"
}

for serial in vscsi0 lsi0 nvme0; do
	dev=$(block_device $serial) || { check 1 $serial "no block device"; continue; }
	case $serial in
	vscsi0) mixer $serial --backend sg --set chunk=64K --set jit=on --set split=32M "$dev" ;;
	lsi0) mixer $serial --backend uring --set chunk=64K "$dev" ;;
	nvme0)
		mixer $serial --backend nvme --set depth=16 "/dev/ng${dev#/dev/nvme}"
		mixer $serial --backend uring "$dev"
		;;
	esac
	sys=/sys/block/${dev#/dev/}/queue
	echo "$serial: $dev, rotational $(cat $sys/rotational), logical block" \
		"$(cat $sys/logical_block_size), max_sectors_kb $(cat $sys/max_sectors_kb)"
	out=$(mkfs.avfs --block-size 1M "$dev" 2>&1)
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
exit $fail

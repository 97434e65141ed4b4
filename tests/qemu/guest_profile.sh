#!/bin/sh
# guest_profile.sh — runs inside the QEMU guest (busybox sh), after guest_fs.sh has formatted the
# disks: avfs-admin profile through each backend on the emulated disks (sg on the virtio-scsi
# disk, io_uring and NVMe passthrough on the NVMe namespace), read-only, each showing the
# device's identification; --write refused on the lsi disk while it holds AVFS, allowed once
# the disk is wiped, with the write figures in the JSON; mkfs.avfs --profile measuring through
# sg, and mkfs.avfs --profile FILE from a profile of the NVMe namespace; fsck after each.
# Prints "ok|FAIL SERIAL ..." per check; exit 0 iff all pass.
. /bin/guest_lib.sh	# check, block_device

# profile SERIAL EXPECT ARG...: avfs-admin profile --quick --quiet ARG...; its output indented;
# passes when it exits 0 and its output matches the grep -E pattern EXPECT
profile() {
	serial=$1 expect=$2
	shift 2
	out=$(avfs-admin profile --quick --quiet "$@" 2>&1)
	rc=$?
	echo "$out" | grep -E 'backend|identity|write cache|max transfer|model|rate|"ident"' |
		cut -c1-200 | sed 's/^/  /'
	echo "$out" | grep -Eq "$expect" || rc=1
	check $rc $serial "avfs-admin profile $*: exit $rc, shows /$expect/"
}

vscsi=$(block_device vscsi0) && lsi=$(block_device lsi0) && nvme=$(block_device nvme0) || {
	check 1 all "the three disks"
	exit 1
}
ng=/dev/ng${nvme#/dev/nvme}

profile vscsi0 'identity +scsi QEMU QEMU HARDDISK' --backend sg "$vscsi"
profile nvme0 '"transport": "nvme"' --backend nvme --json "$ng"
profile nvme0 '"transport": "nvme"' --backend uring --json --out /tmp/nvme.json "$nvme"

out=$(avfs-admin profile --quick --quiet --write "$lsi" 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
[ $rc -eq 1 ] && echo "$out" | grep -q AVFS
check $? lsi0 "avfs-admin profile --write on a disk holding AVFS: refused (exit $rc)"
dd if=/dev/zero of="$lsi" bs=1M count=8 2>/dev/null
dd if=/dev/zero of="$lsi" bs=1M seek=$(($(cat /sys/block/${lsi#/dev/}/size) / 2048 - 8)) \
	2>/dev/null
profile lsi0 '"write": true' --backend sg --write --json "$lsi"

out=$(mkfs.avfs -f --profile --backend sg --block-size 1M "$vscsi" 2>&1)	# -f: scratch
rc=$?
echo "$out" | grep -E 'model|service time' | sed 's/^/  /'
echo "$out" | grep -q 'profiled: measured now .*through sg' || rc=1
check $rc vscsi0 "mkfs.avfs --profile --backend sg: the measured model in the superblock"
fsck.avfs -n "$vscsi" >/dev/null 2>&1
check $? vscsi0 "fsck.avfs -n after mkfs.avfs --profile"

out=$(mkfs.avfs -f --profile /tmp/nvme.json --block-size 1M "$nvme" 2>&1)
rc=$?
echo "$out" | grep -E 'model|service time' | sed 's/^/  /'
check $rc nvme0 "mkfs.avfs --profile FILE (avfs-admin profile --out of the same namespace)"
fsck.avfs -n "$nvme" >/dev/null 2>&1
check $? nvme0 "fsck.avfs -n after mkfs.avfs --profile FILE"
[ $fail -eq 0 ]

#!/bin/bash
# fio_verify.sh — the acceptance run of "avfsd on a real device": fio writes 256 MiB of random
# 64 KiB blocks through a fresh avfsd mount with crc32c checksums and reads them all back;
# then a clean unmount and fsck.avfs -n. It measures nothing (bench/io-cost.sh does).
# env: AVFSD MKFS FSCK (default: ../build). Exit 77 without fio, root or FUSE.
set -u
command -v fio >/dev/null || { echo "SKIP: fio is not installed"; exit 77; }
. "$(dirname "$0")/daemon_env.sh"
avfs_require
avfs_env_init

avfs_mkfs || { echo "FAIL mkfs"; exit 1; }
check "mount" avfs_start || exit 1
t_fio() {
	timeout 300 fio --name=v --directory="$MNT" --rw=randwrite --bs=64k --size=256M \
		--verify=crc32c --do_verify=1 --output="$AVFS_T/fio.out" ||
		{ cat "$AVFS_T/fio.out"; return 1; }
	grep -E 'WRITE:|READ:|err=' "$AVFS_T/fio.out" | sed 's/^ */  /'
	grep -q 'err= 0' "$AVFS_T/fio.out"
}
check "fio randwrite 64k 256M --verify=crc32c --do_verify=1" t_fio
check "clean unmount" avfs_stop
t_fsck() {
	timeout 60 "$FSCK" -n "$IMG" >"$AVFS_T/fsck.out" 2>&1 || { cat "$AVFS_T/fsck.out"; return 1; }
}
check "fsck.avfs -n clean" t_fsck
avfs_summary

#!/bin/bash
# fio_verify.sh — the acceptance run of "avfsd on a real device": fio writes 256 MiB of random
# 64 KiB blocks through a fresh avfsd mount with crc32c checksums and reads them all back;
# then sequential reads around writes made ahead of them (the front end's read-ahead), a clean
# unmount and fsck.avfs -n. It measures nothing (bench/io-cost.sh does).
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
# the front end reads one window ahead of a sequential reader (fuse/readahead.c): a write to
# what is being, or has been, read ahead must show in the reads after it
t_readahead() {
	python3 - "$MNT/ra" <<'PY'
import os, random, sys
MB = 1 << 20
random.seed(18)
model = bytearray(os.urandom(16 * MB))
with open(sys.argv[1], "wb") as f:
    f.write(model)
for it in range(8):
    fd = os.open(sys.argv[1], os.O_RDONLY)
    wfd = os.open(sys.argv[1], os.O_WRONLY)
    k = random.randrange(1, 14)
    for i in range(16):
        if i == k:	# the reader is past k MiB: change what lies ahead of it
            off = k * MB + random.randrange(0, 3 * MB - 8192)
            data = bytes([it + 1]) * 8192
            os.pwrite(wfd, data, off)
            model[off:off + len(data)] = data
        got = os.pread(fd, MB, i * MB)
        assert got == model[i * MB:(i + 1) * MB], "pass %d: MiB %d is stale" % (it, i)
    os.close(fd)
    os.close(wfd)
PY
}
check "sequential reads see a write made ahead of them (read-ahead)" t_readahead
check "clean unmount" avfs_stop
t_fsck() {
	timeout 60 "$FSCK" -n "$IMG" >"$AVFS_T/fsck.out" 2>&1 || { cat "$AVFS_T/fsck.out"; return 1; }
}
check "fsck.avfs -n clean" t_fsck
avfs_summary

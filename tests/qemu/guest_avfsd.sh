#!/bin/sh
# guest_avfsd.sh — runs inside the QEMU guest (busybox sh): avfsd --backend sg serves a FUSE
# mount from the virtio-scsi disk (serial vscsi0) with every CDB traced (AVFS_SG_TRACE=1); dvr
# runs two streams through libavio, each with a reservation, and must miss no deadline;
# avfs-admin status; umount; fsck.avfs -n; then the SCSI commands the backend issued, counted
# by kind. A second, shorter run adds chunk, jit and split (SEEK(10) before long seeks). A
# third serves the NVMe namespace through avfsd --backend nvme (passthrough on /dev/ngXnY,
# non-rotational mode, the controller's identity in avfs-admin status).
# It tests the daemon end to end, not the scheduler's figures (host tests and avfs-sim do).
# Prints "guest-avfsd: ..." per step and "ok|FAIL SERIAL ..." per check; exit 0 iff all pass.
. /bin/guest_lib.sh	# check, block_device
SERIAL=vscsi0
BACKEND=sg
MNT=/mnt/avfs
t0=$(cut -d' ' -f1 /proc/uptime)
say() { echo "guest-avfsd: $*"; }


# start TAG [AVFSD OPTION]...: avfsd in the background, its stderr in /tmp/avfsd-TAG.log; waits
# for the FUSE mount (10 s), prints avfsd's own lines. Sets pid, log and shown; 0 when mounted.
start() {
	log=/tmp/avfsd-$1.log
	shift
	say "avfsd --backend $BACKEND ${*:+$* }--foreground $dev $MNT (AVFS_SG_TRACE=1 AVFS_NVME_TRACE=1)"
	AVFS_SG_TRACE=1 AVFS_NVME_TRACE=1 avfsd --backend $BACKEND "$@" --foreground "$dev" $MNT \
		2>"$log" &
	pid=$!
	i=0
	while ! grep -q " $MNT fuse" /proc/mounts; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 $pid 2>/dev/null; then
			grep -v -e '^sg: ' -e '^nvme: ' "$log" | sed 's/^/  /'
			return 1
		fi
		sleep 0.1
	done
	grep -v -e '^sg: ' -e '^nvme: ' "$log" | sed 's/^/  /'
	shown=$(grep -vc -e '^sg: ' -e '^nvme: ' "$log")
	say "mounted: $(grep " $MNT " /proc/mounts)"
	return 0
}

# stop: umount (avfsd runs as root: libfuse mounted with mount(2), no fusermount3 needed), then
# avfsd drains, commits and exits; 0 iff it exits 0 within 20 s
stop() {
	say "umount $MNT"
	umount $MNT || { kill $pid; wait $pid; return 1; }
	i=0
	while kill -0 $pid 2>/dev/null && [ $i -lt 200 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	kill -0 $pid 2>/dev/null && { say "avfsd still runs 20 s after umount: killing it"; kill -9 $pid; }
	wait $pid
	rc=$?
	grep -v -e '^sg: ' -e '^nvme: ' "$log" | tail -n +$((shown + 1)) | sed 's/^/  /'
	return $rc
}

# dvr_run DVR OPTION...: dvr through libavio, the summary verbatim, checked for zero misses
dvr_run() {
	wl=$1
	shift
	say "dvr --mode avio --workload $wl --dir $MNT --reserve $*"
	dvr --mode avio --workload "$wl" --dir $MNT --reserve "$@" >/tmp/dvr.out 2>&1
	rc=$?
	sed 's/^/  /' /tmp/dvr.out
	req=$(awk '$1 == "rt_requests" { print $2 }' /tmp/dvr.out)
	miss=$(awk '$1 == "deadline_misses" { print $2 }' /tmp/dvr.out)
	err=$(awk '$1 == "io_errors" { print $2 }' /tmp/dvr.out)
	margin=$(awk '$1 == "margin_ms" { print $3 }' /tmp/dvr.out)
	ok=1
	[ "$rc" -eq 0 ] && [ "${req:-0}" -gt 0 ] && [ "$miss" = 0 ] && [ "$err" = 0 ] && ok=0
	say "dvr $wl through libavio, reserved: ${req:-?} requests, ${miss:-?} deadline misses," \
		"${err:-?} I/O errors, min margin ${margin:-?} ms, exit $rc"
	check $ok $SERIAL "dvr $wl (libavio, --reserve) on avfsd --backend $BACKEND: ${req:-?} requests, ${miss:-?} misses"
}

# sg_summary LOG LBS: the commands the SG_IO backend issued, by kind, the transfer sizes of
# READ(16) and WRITE(16) (LBS bytes per block), and one sample line of each kind (a data
# transfer rather than metadata, a SEEK(10) other than the probe at LBA 0 where there is one).
# A trace line is "sg: NAME CDB-BYTES -> GOOD": the CDB's byte i is field i + 3.
sg_summary() {
	awk -v lbs="$2" '
	function hex(s,   i, v) {
		v = 0
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	/^sg: / && / -> / {
		n++
		if ($0 !~ / -> GOOD$/) bad++
		if ($2 == "READ(16)") k = "READ(16)"
		else if ($2 == "WRITE(16)")	# FUA: bit 3 of byte 1
			k = substr($4, 2, 1) ~ /[89a-f]/ ? "WRITE(16) FUA" : "WRITE(16)"
		else if ($2 == "SYNCHRONIZE") k = "SYNCHRONIZE CACHE(10)"
		else if ($2 == "SEEK(10)") k = "SEEK(10)"
		else if ($2 == "TEST") k = "TEST UNIT READY"
		else k = "other"
		c[k]++
		if (!(k in sample)) sample[k] = $0
		if ($2 == "READ(16)" || $2 == "WRITE(16)") {	# bytes 10-13: blocks
			kib = hex($13 $14 $15 $16) * lbs / 1024
			sz[$2 " " kib " KiB"]++
			if (kib >= 64 && !(k in data)) data[k] = $0	# a data sample, not metadata
		}
		if ($2 == "SEEK(10)" && $5 $6 $7 $8 != "00000000") {	# not the probe at open
			far++
			if (!(k in data)) data[k] = $0
		}
	}
	END {
		split("READ(16);WRITE(16);WRITE(16) FUA;SYNCHRONIZE CACHE(10);SEEK(10);TEST UNIT READY;other", ks, ";")
		line = ""
		for (i = 1; i <= 7; i++) {
			if (i == 7 && !c[ks[i]]) continue
			line = line (i > 1 ? ", " : "") ks[i] " " (c[ks[i]] + 0)
			if (ks[i] == "SEEK(10)")
				line = line " (" (far + 0) " beyond LBA 0)"
		}
		printf "guest-avfsd: sg trace: %s; %d commands, %d not GOOD\n", line, n, bad
		m = 0	# sizes by command, then size (insertion sort: a handful of keys)
		for (s in sz) {
			split(s, f, " ")
			for (j = ++m; j > 1 && (key[j - 1] > f[1] ||
			     (key[j - 1] == f[1] && kv[j - 1] > f[2] + 0)); j--) {
				key[j] = key[j - 1]; kv[j] = kv[j - 1]; nm[j] = nm[j - 1]
			}
			key[j] = f[1]; kv[j] = f[2] + 0; nm[j] = s
		}
		line = ""
		for (j = 1; j <= m; j++)
			line = line ", " nm[j] " x" sz[nm[j]]
		printf "guest-avfsd: sg trace sizes: %s\n", substr(line, 3)
		for (i = 1; i <= 7; i++)
			if (ks[i] in sample)
				printf "guest-avfsd: sg trace sample: %s\n", \
					ks[i] in data ? data[ks[i]] : sample[ks[i]]
	}' "$1"
}

dev=$(block_device $SERIAL) || { check 1 $SERIAL "no SCSI disk with serial $SERIAL"; exit 1; }
[ -c /dev/fuse ] || { check 1 $SERIAL "no /dev/fuse (is the fuse module in the initramfs?)"; exit 1; }
lbs=$(cat /sys/block/${dev#/dev/}/queue/logical_block_size)
say "$SERIAL is $dev, $(($(cat /sys/block/${dev#/dev/}/size) / 2048)) MiB, $lbs-byte blocks"
mkdir -p $MNT /run	# avfsd makes /run/avfs for its client socket
# the daemon's socket: /run/avfs/NAME@MAJ:MIN.sock (NAME@MAJ:MIN:INO.sock for a char node)
sock_of() { ls /run/avfs/"${1#/dev/}"@*.sock 2>/dev/null | head -n 1; }

# 4 zones of 1 MiB blocks: a file's consecutive blocks are a zone apart, so reads and writes seek
out=$(mkfs.avfs -f --block-size 1M --zones 4 "$dev" 2>&1)	# -f: guest_fs.sh formatted it
rc=$?
echo "$out" | sed 's/^/  /'
check $rc $SERIAL "mkfs.avfs --block-size 1M --zones 4 $dev"
[ $rc -eq 0 ] || exit 1

# fsck_check WHEN: fsck.avfs -n on the disk, its report indented, clean required
fsck_check() {
	out=$(fsck.avfs -n "$dev" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	echo "$out" | grep -q ': clean$' || rc=$((rc + 1))
	say "fsck.avfs -n $dev: $(echo "$out" | tail -1 | sed 's/^[^:]*: //'), exit $rc"
	check $rc $SERIAL "fsck.avfs -n $dev $1"
}

# io_check LOG WHAT: READ(16) and WRITE(16) were issued, and every command but TEST UNIT READY
# (which may meet a unit attention at open, and is retried) completed GOOD
io_check() {
	n=$(grep -c '^sg: READ(16) .* -> GOOD$' "$1")
	w=$(grep -c '^sg: WRITE(16) .* -> GOOD$' "$1")
	bad=$(grep '^sg: [A-Z].* -> ' "$1" | grep -v -e ' -> GOOD$' -e '^sg: TEST UNIT READY' | wc -l)
	[ "$n" -gt 0 ] && [ "$w" -gt 0 ] && [ "$bad" -eq 0 ]
	check $? $SERIAL "$2: $n READ(16), $w WRITE(16) over SG_IO, $bad failed"
}

# run 1: the sg backend as it comes; one playback and one recording of 8 Mbit/s in 256 KiB
# requests, 8 in flight: a period of 262 ms, a deadline 2.1 s after issue (the mixer holds a
# request until 500 ms before it, its margin). TCG sustains far more; the admission's model of
# the disk (mkfs's avfs-250g) is what bounds the rate.
if start plain; then
	check 0 $SERIAL "avfsd --backend sg mounted $dev on $MNT"
	dvr_run 1r1w --rate 8M --io 256K --depth 8 --duration 10 --file-size 8M
	say "avfs-admin status"
	avfs-admin --socket "$(sock_of $dev)" status >/tmp/status.out 2>&1
	rc=$?
	sed 's/^/  /' /tmp/status.out
	grep -q '^backend  *sg$' /tmp/status.out && grep -q 'QEMU HARDDISK' /tmp/status.out || rc=1
	check $rc $SERIAL "avfs-admin status: backend sg, the disk's identity"
	stop
	rc=$?
	say "avfsd exited $rc"
	check $rc $SERIAL "umount $MNT: avfsd drained, committed and exited 0"
else
	check 1 $SERIAL "avfsd --backend sg mounted $dev on $MNT"
	kill $pid 2>/dev/null
fi
fsck_check "after avfsd --backend sg"
grep '^sg: open ' /tmp/avfsd-plain.log
sg_summary /tmp/avfsd-plain.log $lbs
io_check /tmp/avfsd-plain.log "the sg backend carried the run"

# run 2: semi-preemptible I/O on the same disk: 256 KiB chunks, just-in-time seeks, and a
# SEEK(10) halfway before seeks longer than 32 MiB (a file's next block is a zone, ~60 MiB,
# away) when the predicted rotational slack hides it. 1 MiB requests, each four chunks.
# --disk-model: the predictor takes the model's angles, good anywhere on the disk (with the
# superblock's model alone it times JIT waits only within 2 MiB of the head); QEMU's disk does
# not rotate, so the waits only show that the path works.
if start spio --disk-model avfs-250g --set chunk=256K --set jit=on --set split=32M; then
	dvr_run 1r1w --rate 8M --io 1M --depth 4 --duration 6 --file-size 8M
	mode=$(avfs-admin --socket "$(sock_of $dev)" status 2>&1 | grep '^mixer mode')
	say "avfs-admin status: $mode"
	echo "$mode" | grep -q 'jit on'
	check $? $SERIAL "avfs-admin status: $(echo $mode)"
	spio=$(avfs-admin --socket "$(sock_of $dev)" stats 2>&1 | grep '^semi-preemptive')
	say "avfs-admin stats: $spio"
	echo "$spio" | grep -q ' [1-9][0-9]* chunk commands, [1-9][0-9]* JIT waits'
	check $? $SERIAL "the mixer chunked and waited out predicted rotational slack (JIT)"
	stop
	rc=$?
	say "avfsd exited $rc"
	check $rc $SERIAL "umount $MNT after the chunk/jit/split run: avfsd drained, committed and exited 0"
else
	check 1 $SERIAL "avfsd --backend sg --set chunk=256K --set jit=on --set split=32M mounted $dev"
	kill $pid 2>/dev/null
fi
fsck_check "after the chunk/jit/split run"
sg_summary /tmp/avfsd-spio.log $lbs | sed 's/^guest-avfsd: sg trace/& (chunk, jit, split)/'
io_check /tmp/avfsd-spio.log "the sg backend carried the chunked run"
c=$(grep -c '^sg: \(READ\|WRITE\)(16) \([0-9a-f][0-9a-f] \)\{10\}00 00 02 00 .*-> GOOD$' /tmp/avfsd-spio.log)
[ "$c" -gt 0 ]
check $? $SERIAL "chunk=256K: $c READ(16)/WRITE(16) of exactly 256 KiB (512 blocks)"
# a chunked data write carries FUA on its last chunk only (SPEC §6): FUA writes, fewer than chunks
fua=$(grep -c '^sg: WRITE(16) 8a [0-9a-f][89a-f] .*-> GOOD$' /tmp/avfsd-spio.log)
wc=$(grep -c '^sg: WRITE(16) \([0-9a-f][0-9a-f] \)\{10\}00 00 02 00 .*-> GOOD$' /tmp/avfsd-spio.log)
[ "$fua" -gt 0 ] && [ "$fua" -lt "$wc" ]
check $? $SERIAL "chunked data writes: $fua WRITE(16) with FUA among $wc chunks of 256 KiB"
# run 3: the NVMe passthrough backend on the NVMe namespace's generic node: the mixer in its
# non-rotational mode, the controller's identification (libnvme) in avfs-admin status
SERIAL=nvme0
BACKEND=nvme
blk=$(block_device $SERIAL) || { check 1 $SERIAL "no NVMe namespace with serial $SERIAL"; blk=none; }
dev=/dev/ng${blk#/dev/nvme}
if [ -c "$dev" ] && mkfs.avfs -f --block-size 1M "$blk" >/dev/null 2>&1 && start nvme; then
	dvr_run 1r1w --rate 8M --io 256K --depth 8 --duration 5 --file-size 8M
	avfs-admin --socket "$(sock_of $dev)" status >/tmp/status.out 2>&1
	rc=$?
	sed 's/^/  /' /tmp/status.out
	grep -q '^backend  *nvme$' /tmp/status.out && grep -q 'identity  *nvme 0x1b36 QEMU NVMe Ctrl' \
		/tmp/status.out && grep -q '^mixer mode  *non-rotational' /tmp/status.out || rc=1
	check $rc $SERIAL "avfs-admin status: backend nvme, the controller's identity, non-rotational mode"
	stop
	check $? $SERIAL "umount $MNT: avfsd --backend nvme drained, committed and exited 0"
	dev=$blk
	fsck_check "after avfsd --backend nvme"
	awk '/^nvme: [A-Z]+ .* -> status/ {
		k = $2
		for (i = 3; i <= NF && $i != "->"; i++)
			if ($i == "fua") k = k " FUA"
		c[k]++
	}
	END { printf "guest-avfsd: nvme trace: READ %d, WRITE %d, WRITE FUA %d, FLUSH %d\n",
		c["READ"], c["WRITE"], c["WRITE FUA"], c["FLUSH"] }' /tmp/avfsd-nvme.log
	grep -m 3 -e '^nvme: READ' -e '^nvme: FLUSH' /tmp/avfsd-nvme.log | sed 's/^/guest-avfsd: nvme trace sample: /'
	grep -m 1 '^nvme: WRITE' /tmp/avfsd-nvme.log | sed 's/^/guest-avfsd: nvme trace sample: /'
	bad=$(grep '^nvme: .* -> status' /tmp/avfsd-nvme.log | grep -vc 'status 0x0000')
	[ "$bad" -eq 0 ] && grep -q '^nvme: WRITE' /tmp/avfsd-nvme.log
	check $? $SERIAL "NVMe passthrough carried the run: every command status 0x0000 ($bad others)"
else
	check 1 $SERIAL "avfsd --backend nvme mounted $dev on $MNT"
	kill $pid 2>/dev/null
fi
say "$nchecks checks, $fail failed, $(awk -v a="$t0" '{ printf "%.1f", $1 - a }' /proc/uptime) s"
[ $fail -eq 0 ]

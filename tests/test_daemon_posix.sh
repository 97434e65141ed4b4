#!/bin/bash
# test_daemon_posix.sh — avfsd's FUSE mount as a user's programs see it (SPEC §9): files,
# directories, renames, links, attributes, truncate, fallocate, statfs, a large readdir,
# permissions under another uid, fsync and files unlinked while open, then a clean unmount,
# fsck -n and a remount that must show the same tree; last, kill -9 with an unlinked file open
# (fsck: no error; the next mount frees it); issue 18's POSIX details (st_rdev, symlinks to
# 4,095 bytes, SEEK_DATA/SEEK_HOLE, punched holes, setuid/setgid cleared on write, atime by
# the mount's rule), sync and sync -f before kill -9, and a write right after a delete on a
# full file system. Not the libavio path (test_daemon_avio) nor data
# integrity across crashes (test_daemon_integrity).
# env: AVFSD MKFS FSCK (default: ../build). Exit 77 without root or FUSE.
set -u
. "$(dirname "$0")/daemon_env.sh"
avfs_require
avfs_env_init

NOBODY="setpriv --reuid 1000 --regid 1000 --clear-groups"

zeros() {	# zeros FILE OFFSET LEN: those bytes read as zeros
	cmp -s -n "$3" <(tail -c +$(($2 + 1)) "$1") /dev/zero
}

avfs_mkfs || { echo "FAIL mkfs"; exit 1; }
check "mount" avfs_start --allow-other || exit 1
cd "$MNT" || exit 1

# ---- files ----
t_rw() {
	echo "hello" >f1 && same "$(cat f1)" hello &&
	echo "world" >>f1 && same "$(cat f1)" "hello
world" &&
	printf 'HE' | dd of=f1 conv=notrunc status=none && same "$(head -c 5 f1)" HEllo &&
	head -c 3000000 /dev/urandom >big && cp big big.copy && cmp big big.copy &&
	same "$(stat -c %s big.copy)" 3000000 &&
	rm big.copy && [ ! -e big.copy ]
}
check "create/read/write/append" t_rw

t_dirs() {
	mkdir -p d1/d2/d3 && [ -d d1/d2/d3 ] && touch d1/d2/f &&
	fails_with "Directory not empty" rmdir d1/d2 &&
	fails_with "File exists" mkdir d1 &&
	fails_with "No such file or directory" rmdir nonexistent &&
	fails_with "Not a directory" rmdir f1 &&
	rm d1/d2/f && rmdir d1/d2/d3 d1/d2 && [ ! -e d1/d2 ] && same "$(stat -c %h d1)" 2
}
check "mkdir/rmdir" t_dirs

t_rename() {
	echo a >ra && echo b >rb && mv -T ra rb && same "$(cat rb)" a && [ ! -e ra ] &&
	mkdir -p rd1 rd2/sub && echo c >rd1/x && mv rd1/x rd2/y && same "$(cat rd2/y)" c &&
	[ ! -e rd1/x ] &&
	mv rd2 rd3 && same "$(cat rd3/y)" c && [ -d rd3/sub ] && [ ! -e rd2 ] &&
	fails_with "Invalid argument" python3 -c 'import os; os.rename("rd3", "rd3/sub/in")' &&
	[ -d rd3 ] &&
	mkdir -p re1 re2/full && touch re2/full/z &&
	fails_with "Directory not empty" python3 -c 'import os; os.rename("re1", "re2/full")' &&
	python3 -c 'import os; os.rename("re1", "re2/empty_not")' && [ -d re2/empty_not ] &&
	mkdir re3 && python3 -c 'import os; os.rename("re3", "re2/empty_not")' && [ ! -e re3 ]
}
check "rename" t_rename

t_links() {
	echo linked >l1 && ln l1 l2 && same "$(stat -c %h l1)" 2 && same "$(stat -c %i l1)" \
		"$(stat -c %i l2)" && mkdir ld && ln l1 ld/l3 && same "$(stat -c %h l2)" 3 &&
	rm l1 && same "$(stat -c %h l2)" 2 && same "$(cat ld/l3)" linked &&
	fails_with "Operation not permitted" python3 -c 'import os; os.link("ld", "ld2")' 
}
check "hard links" t_links

t_symlinks() {
	ln -s f1 s1 && same "$(readlink s1)" f1 && same "$(head -n1 s1)" HEllo &&
	ln -s /does/not/exist s2 && same "$(readlink s2)" /does/not/exist &&
	same "$(stat -c %F s2)" "symbolic link" && [ ! -e s2 ] &&
	long=$(printf 'x%.0s' $(seq 1000)) && ln -s "$long" s3 && same "$(readlink s3)" "$long"
}
check "symlinks" t_symlinks

t_attrs() {
	touch at && chmod 4751 at && same "$(stat -c %a at)" 4751 &&
	chmod 640 at && same "$(stat -c %a at)" 640 &&
	chown 1234:5678 at && same "$(stat -c %u:%g at)" 1234:5678 &&
	touch -d "2001-02-03 04:05:06.123456789" at &&
	same "$(stat -c %y at)" "2001-02-03 04:05:06.123456789 +0000" &&
	touch -a -d "2002-01-01 00:00:00" at && same "$(stat -c %x at)" \
		"2002-01-01 00:00:00.000000000 +0000" &&
	same "$(stat -c %y at)" "2001-02-03 04:05:06.123456789 +0000"
}
TZ=UTC check "chmod/chown/utimens" t_attrs

t_truncate() {
	head -c 10000 /dev/urandom >tr && head -c 10000 tr >tr.ref &&
	truncate -s 5000000 tr && same "$(stat -c %s tr)" 5000000 &&
	cmp -n 10000 tr tr.ref && zeros tr 10000 4990000 &&
	truncate -s 3000 tr && same "$(stat -c %s tr)" 3000 && cmp -n 3000 tr tr.ref &&
	truncate -s 8192 tr && zeros tr 3000 5192 &&
	dd if=/dev/urandom of=tr bs=4096 seek=1000 count=1 status=none conv=notrunc &&
	same "$(stat -c %s tr)" $((1001 * 4096)) && zeros tr 8192 $((1000 * 4096 - 8192)) &&
	truncate -s 0 tr && same "$(stat -c %s tr)" 0
}
check "truncate grow/shrink, holes read as zeros" t_truncate

t_fallocate() {
	local before after
	before=$(stat -f -c %f .)
	fallocate -l 64M fa && same "$(stat -c %s fa)" $((64 << 20)) && zeros fa 0 $((64 << 20)) &&
	after=$(stat -f -c %f .) && [ $((before - after)) -ge $(((64 << 20) / $(stat -f -c %S .))) ] ||
		{ echo "  free blocks $before -> ${after:-?}"; return 1; }
	echo x >fk && fallocate --keep-size -l 16M fk && same "$(stat -c %s fk)" 2 && same "$(cat fk)" x &&
	[ "$(stat -c %b fk)" -ge $(((16 << 20) / 512)) ] ||
		{ echo "  fallocate --keep-size: $(stat -c '%s bytes, %b blocks' fk)"; return 1; }
	echo more >>fk && same "$(cat fk)" "x
more"
}
check "fallocate, fallocate --keep-size" t_fallocate

# a fallocate that grows the size past a partly written last page must not bring back the
# bytes a truncate cut off (the core's stale tail: zeroed before the size grows)
t_fallocate_stale_tail() {
	head -c 3000 /dev/urandom | tr '\000' 'x' >fs_tail && truncate -s 1000 fs_tail &&
	fallocate -l 8192 fs_tail && same "$(stat -c %s fs_tail)" 8192 && zeros fs_tail 1000 7192
}
check "fallocate past a truncated page reads zeros there" t_fallocate_stale_tail

t_statfs() {
	local total avail before
	read -r total avail <<<"$(df -B1 --output=size,avail . | tail -n1)"
	[ "$total" -gt $((1900 << 20)) ] && [ "$total" -le $((2 << 30)) ] &&
	[ "$avail" -gt 0 ] && [ "$avail" -lt "$total" ] || { echo "  df: $total $avail"; return 1; }
	before=$avail
	head -c $((32 << 20)) /dev/zero >sf && sync sf
	avail=$(df -B1 --output=avail . | tail -n1)
	[ $((before - avail)) -ge $((32 << 20)) ] || { echo "  avail $before -> $avail"; return 1; }
	case "$(stat -f -c %T .)" in fuse*) ;; *) echo "  type $(stat -f -c %T .)"; return 1 ;; esac
}
check "statfs (df)" t_statfs

t_readdir() {
	mkdir many && (cd many && seq -f 'entry-%05g' 2000 | xargs touch) &&
	same "$(ls many | wc -l)" 2000 && same "$(ls -f many | wc -l)" 2002 &&
	same "$(ls many | sort | uniq | wc -l)" 2000 &&
	same "$(ls many | head -n1)" entry-00001 && same "$(ls many | tail -n1)" entry-02000 &&
	same "$(find many -type f | wc -l)" 2000 &&
	rm many/entry-01* && same "$(ls many | wc -l)" 1000
}
check "readdir of 2000 entries" t_readdir

t_perms() {
	mkdir rootdir && chmod 755 rootdir && echo secret >rootdir/secret && chmod 600 rootdir/secret &&
	echo public >rootdir/public && chmod 644 rootdir/public &&
	fails_with "Permission denied" $NOBODY touch rootdir/new &&
	[ ! -e rootdir/new ] &&
	fails_with "Permission denied" $NOBODY cat rootdir/secret &&
	same "$($NOBODY cat rootdir/public)" public &&
	fails_with "Permission denied" $NOBODY sh -c 'echo x >>rootdir/public' &&
	fails_with "Permission denied" $NOBODY rm -f rootdir/public &&
	fails_with "Operation not permitted" $NOBODY chmod 777 rootdir/public &&
	mkdir userdir && chown 1000:1000 userdir &&
	$NOBODY sh -c 'echo mine >userdir/f && chmod 600 userdir/f' &&
	same "$(stat -c %u:%g:%a userdir/f)" 1000:1000:600 && same "$($NOBODY cat userdir/f)" mine
}
check "permissions as uid 1000" t_perms

t_fsync() {
	dd if=/dev/urandom of=fs.ref bs=1M count=8 status=none &&
	dd if=fs.ref of=fs bs=1M conv=fsync status=none && cmp fs fs.ref &&
	dd if=fs.ref of=fs bs=4k count=3 skip=5 seek=5 conv=fsync,notrunc status=none && cmp fs fs.ref &&
	sync -d fs && sync -f .
}
check "fsync (dd conv=fsync), fdatasync, syncfs" t_fsync

avail() {	# bytes available in the mount, as df says
	df -B1 --output=avail "$MNT" | tail -n1
}

# POSIX: an unlinked (or renamed-over) file lives on through its open descriptors, and its
# space comes back when the last one is closed (the release reaches avfsd after close(2)
# returns: poll for it)
t_unlinked_open() {
	local before held after i ok=1
	head -c $((8 << 20)) /dev/urandom >"$AVFS_T/uo.ref" && cp "$AVFS_T/uo.ref" uo || return 1
	before=$(avail)
	exec 3<>uo
	{ rm uo && [ ! -e uo ] && same "$(stat -L -c %h /proc/self/fd/3)" 0 &&
	  cmp - "$AVFS_T/uo.ref" <&3 && printf 'tail' >&3 &&
	  same "$(stat -L -c %s /proc/self/fd/3)" $(((8 << 20) + 4)) &&
	  same "$(tail -c 4 /proc/self/fd/3)" tail &&	# a second open of the orphan
	  cmp -n $((8 << 20)) /proc/self/fd/3 "$AVFS_T/uo.ref" &&
	  held=$(avail) && [ "$held" -lt "$before" ]; } || ok=0
	exec 3>&-
	[ $ok = 1 ] || { echo "  avail $before, ${held:-?} while open"; return 1; }
	for i in $(seq 100); do
		after=$(avail)
		[ "$after" -ge $((held + (9 << 20))) ] && return 0
		sleep 0.05
	done
	echo "  avail: $before before, $held while open, $after after close"
	return 1
}
check "unlinked while open: readable, writable, space back after close" t_unlinked_open

t_renamed_over_open() {
	local ok=1
	echo old >ro && exec 4<ro
	{ echo new >ro.new && mv ro.new ro && same "$(cat ro)" new && same "$(cat <&4)" old &&
	  same "$(stat -L -c %h /proc/self/fd/4)" 0; } || ok=0
	exec 4<&-
	[ $ok = 1 ]
}
check "renamed over while open: the old file lives on" t_renamed_over_open


# ---- issue 18: POSIX details ----
t_mknod_rdev() {
	mknod cdev c 1 7 && mknod bdev b 8 17 && mkfifo fifo &&
	same "$(stat -c '%F %t:%T' cdev)" "character special file 1:7" &&
	same "$(stat -c '%F %t:%T' bdev)" "block special file 8:11" &&
	same "$(stat -c '%F %t:%T' fifo)" "fifo 0:0" &&
	mknod bigdev c 300 70000 && same "$(stat -c '%Hr:%Lr' bigdev)" "300:70000"
}
check "mknod keeps the device numbers (st_rdev)" t_mknod_rdev

t_symlink_max() {
	local t4031 t4032 t4095 t4096
	t4031=$(head -c 4031 /dev/zero | tr '\0' a) && t4032=$(head -c 4032 /dev/zero | tr '\0' b) &&
	t4095=$(head -c 4094 /dev/zero | tr '\0' c)d && t4096=$(head -c 4096 /dev/zero | tr '\0' e) &&
	ln -s "$t4031" sl4031 && ln -s "$t4032" sl4032 && ln -s "$t4095" sl4095 &&
	same "$(readlink sl4031)" "$t4031" && same "$(readlink sl4032)" "$t4032" &&
	same "$(readlink sl4095)" "$t4095" && same "$(stat -c %s sl4095)" 4095 &&
	fails_with "File name too long" ln -s "$t4096" sl4096
}
check "symlink targets up to 4,095 bytes (PATH_MAX - 1)" t_symlink_max

# 1 MiB blocks: a sparse file with 4 KiB of data at 2 MiB, preallocated space at 5 MiB
t_seek() {
	truncate -s 8M sp && printf 'data' | dd of=sp bs=1 seek=$((2 << 20)) conv=notrunc status=none &&
	fallocate --keep-size -o $((5 << 20)) -l 1M sp &&
	same "$(python3 - <<'PY'
import os
fd = os.open("sp", os.O_RDONLY)
out = [os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE),
       os.lseek(fd, (2 << 20) + 10, os.SEEK_DATA), os.lseek(fd, (2 << 20) + 10, os.SEEK_HOLE),
       os.lseek(fd, (5 << 20) + 10, os.SEEK_HOLE)]
try:
    os.lseek(fd, (2 << 20) + 4096, os.SEEK_DATA)
    out.append("data")
except OSError as e:
    out.append(e.strerror)
print(*out)
PY
)" "$((2 << 20)) 0 $(((2 << 20) + 10)) $(((2 << 20) + 4096)) $(((5 << 20) + 10)) No such device or address"
}
check "SEEK_DATA/SEEK_HOLE (python os.lseek) on a sparse file" t_seek

# punch [512 KiB, 2.5 MiB) + 1000 of a 3 MiB file (1 MiB blocks): block 1 is freed, block 0
# loses its last half, block 2 keeps its data after the hole (zeroed in place before it)
t_punch() {
	local before after
	head -c $((3 << 20)) /dev/urandom >"$AVFS_T/pu.ref" && cp "$AVFS_T/pu.ref" pu &&
	sync pu && before=$(stat -c %b pu) &&
	fallocate --punch-hole -o $((512 << 10)) -l $(((2 << 20) + 1000)) pu &&
	after=$(stat -c %b pu) && same "$(stat -c %s pu)" $((3 << 20)) &&
	cmp -n $((512 << 10)) pu "$AVFS_T/pu.ref" && zeros pu $((512 << 10)) $(((2 << 20) + 1000)) &&
	cmp -i $(((5 << 19) + 1000)) pu "$AVFS_T/pu.ref" &&
	[ "$after" = $((before - 2048)) ] || { echo "  st_blocks $before -> ${after:-?}"; return 1; }
	same "$(python3 -c 'import os; fd = os.open("pu", os.O_RDONLY); print(os.lseek(fd, 0, os.SEEK_HOLE))')" \
		$((512 << 10)) &&
	head -c 10000 /dev/urandom >"$AVFS_T/pu2.ref" && cp "$AVFS_T/pu2.ref" pu2 &&
	fallocate --punch-hole -o 1000 -l 5000 pu2 && cmp -n 1000 pu2 "$AVFS_T/pu2.ref" &&
	zeros pu2 1000 5000 && cmp -i 6000 pu2 "$AVFS_T/pu2.ref" && same "$(stat -c %s pu2)" 10000
}
check "fallocate --punch-hole frees whole blocks, zeroes the edges" t_punch

# the files are direct I/O: the kernel tells avfsd (FUSE_WRITE_KILL_SUIDGID) to clear setuid
# and setgid when a process without CAP_FSETID writes; truncate and chown as Linux does
t_suid() {
	mkdir -p sdir && chmod 777 sdir && touch sdir/own sdir/other sdir/rootw sdir/tr sdir/ch &&
	chown 1000:1000 sdir/own sdir/tr && chmod 4755 sdir/own sdir/tr && chmod 6777 sdir/other &&
	chmod 6755 sdir/rootw sdir/ch && touch sdir/sg &&
	chown 1000:1000 sdir/sg && chmod 2745 sdir/sg &&
	$NOBODY sh -c 'echo x >>sdir/own' && same "$(stat -c %a sdir/own)" 755 &&
	$NOBODY sh -c 'echo x >>sdir/other' && same "$(stat -c %a sdir/other)" 777 &&
	$NOBODY sh -c 'echo x >>sdir/sg' && same "$(stat -c %a sdir/sg)" 2745 &&
	echo x >>sdir/rootw && same "$(stat -c %a sdir/rootw)" 6755 &&
	$NOBODY truncate -s 0 sdir/tr && same "$(stat -c %a sdir/tr)" 755 &&
	chown 1234 sdir/ch && same "$(stat -c %a sdir/ch)" 755
}
check "setuid/setgid cleared on write by a process without CAP_FSETID, on truncate, on chown" t_suid

# relatime (the default): a read updates atime when it is not after mtime or ctime, then not
# again within a day; a directory read from its start too
t_atime_relatime() {
	local a1 a2
	echo data >at_r && touch -a -d "2000-01-01" at_r && cat at_r >/dev/null &&
	a1=$(stat -c %X at_r) && [ "$a1" -ge "$(stat -c %Y at_r)" ] ||
		{ echo "  atime $(stat -c %x at_r), mtime $(stat -c %y at_r)"; return 1; }
	sleep 1.1 && cat at_r >/dev/null && a2=$(stat -c %X at_r) && same "$a2" "$a1" &&
	mkdir -p at_d && touch -a -d "2000-01-01" at_d && ls at_d >/dev/null &&
	[ "$(stat -c %X at_d)" -ge "$a1" ] || { echo "  dir atime $(stat -c %x at_d)"; return 1; }
	touch -a -d "-25 hours" at_r && touch -m -d "-26 hours" at_r && cat at_r >/dev/null &&
	[ "$(stat -c %X at_r)" -ge "$a1" ] || { echo "  day-old atime kept: $(stat -c %x at_r)"; return 1; }
}
check "atime: relatime by default" t_atime_relatime

# an idle daemon sleeps: after a request, until the next one it uses no CPU to speak of (its
# loop once moved its timer later at each turn, and the update's own completion woke it at
# once: 100 % of a core while a timer was armed). CPU seconds from /proc over 2 idle seconds.
t_idle_cpu() {
	local pid a b
	pid=$(pgrep -P "$AVFS_PID" | head -1)
	[ -n "$pid" ] || { echo "  no avfsd under $AVFS_PID"; return 1; }
	echo idle >idle_cpu && cat idle_cpu >/dev/null && ls >/dev/null &&
	a=$(awk '{print $14 + $15}' "/proc/$pid/stat") && sleep 2 &&
	b=$(awk '{print $14 + $15}' "/proc/$pid/stat") || return 1
	echo "  avfsd used $((b - a)) clock ticks ($(getconf CLK_TCK) a second) over 2 idle seconds"
	[ $((b - a)) -le $(($(getconf CLK_TCK) / 4)) ]
}
check "an idle daemon does not spin (CPU time over 2 idle seconds)" t_idle_cpu

# ---- persistence ----
snapshot() {	# the tree: names, types, modes, owners, links, sizes, mtimes, targets, contents
	(cd "$MNT" && find . -printf '%p %y %m %U %G %n %T@ %l\n' | sort &&
	 find . -type f -print0 | sort -z | xargs -0 md5sum)
}
snapshot >"$AVFS_T/before"
cd / || exit 1
check "clean unmount (avfsd exits 0)" avfs_stop
t_fsck() {
	timeout 60 "$FSCK" -n "$IMG" >"$AVFS_T/fsck.out" 2>&1 || { cat "$AVFS_T/fsck.out"; return 1; }
}
check "fsck.avfs -n clean" t_fsck
check "remount" avfs_start --allow-other || { avfs_summary; exit 1; }
snapshot >"$AVFS_T/after"
t_same_tree() {
	diff "$AVFS_T/before" "$AVFS_T/after" >"$AVFS_T/diff" && return 0
	head -n 20 "$AVFS_T/diff"
	return 1
}
check "contents survived the remount" t_same_tree
check "second clean unmount" avfs_stop

# ---- a crash while a file unlinked while open is still open ----
check "remount for a crash" avfs_start || { avfs_summary; exit 1; }
before=$(avail)
t_crash_open() {
	head -c $((4 << 20)) /dev/urandom >"$MNT/oc" && exec 3<"$MNT/oc" && rm "$MNT/oc" &&
	python3 -c 'import os; os.fsync(3)' && avfs_kill9	# the unlink is committed
}
check "kill -9 with an unlinked file open" t_crash_open
exec 3<&-
t_fsck_orphan() {
	timeout 60 "$FSCK" -n "$IMG" >"$AVFS_T/fsck.out" 2>&1 &&
	grep -q "1 file unlinked while open (not an error)" "$AVFS_T/fsck.out" &&
	grep -q ": clean" "$AVFS_T/fsck.out" || { cat "$AVFS_T/fsck.out"; return 1; }
}
check "fsck.avfs -n: the orphan is no error (exit 0)" t_fsck_orphan
check "remount after the crash" avfs_start || { avfs_summary; exit 1; }
t_orphan_freed() {
	grep -q "freed 1 orphan inodes" "$LOG" && [ "$(avail)" -ge "$before" ] ||
		{ echo "  avail $before -> $(avail)"; tail -n 5 "$LOG"; return 1; }
}
check "the mount frees the orphan (logged, space back)" t_orphan_freed
check "third clean unmount" avfs_stop
t_fsck_no_orphan() {
	timeout 60 "$FSCK" -n "$IMG" >"$AVFS_T/fsck.out" 2>&1 &&
	! grep -q "unlinked while open" "$AVFS_T/fsck.out" || { cat "$AVFS_T/fsck.out"; return 1; }
}
check "fsck.avfs -n: no orphan left" t_fsck_no_orphan

# ---- issue 18: sync and sync -f, then kill -9 ----
# sync(2) and syncfs(2) reach no FUSE daemon on this kernel (FUSE_SYNCFS goes to virtiofs
# only) and libfuse 3.14 has no syncfs operation. What reaches avfsd from `sync -f PATH` is
# the open (a directory) or the close (a file) of PATH, which sync(1) opens O_RDONLY |
# O_NONBLOCK: those answer once everything written before is durable. With --set
# close=durable every close does, so a plain `sync` after the writer closed its file holds.
check "remount for sync" avfs_start || { avfs_summary; exit 1; }
t_sync_kill() {
	local ok=1
	echo x >"$MNT/sy" || ok=0
	exec 3>"$MNT/sf"
	{ echo held >&3 && sync -f "$MNT/sf" && echo z >"$MNT/sz" && sync -f "$MNT"; } || ok=0
	avfs_kill9 || ok=0
	exec 3>&-
	[ $ok = 1 ]
}
check "echo x > F; a file open for writing; sync -f FILE; echo z > G; sync -f MOUNT; kill -9" t_sync_kill
check "fsck.avfs -n clean after the crash" t_fsck
check "remount after sync -f + kill -9" avfs_start --set close=durable || { avfs_summary; exit 1; }
t_synced() {
	same "$(cat "$MNT/sy" 2>&1)" x && same "$(cat "$MNT/sf" 2>&1)" held &&
	same "$(cat "$MNT/sz" 2>&1)" z
}
check "what sync -f FILE and sync -f MOUNT covered is there" t_synced
t_sync_durable() {
	echo y >"$MNT/sd" && sync && avfs_kill9
}
check "--set close=durable: echo y > F; sync; kill -9" t_sync_durable
check "fsck.avfs -n clean after the second crash" t_fsck
check "remount after sync + kill -9" avfs_start || { avfs_summary; exit 1; }
check "what the close before sync covered is there" same "$(cat "$MNT/sd" 2>&1)" y

# ---- O_SYNC, O_DSYNC and RWF_DSYNC writes are durable when answered, then kill -9 ----
# (the kernel leaves the sync of a direct-I/O file's write to the daemon; best-effort writes
# are otherwise answered before they are on the device: write-behind-be)
t_dsync_kill() {
	head -c $((3 << 20)) /dev/urandom >"$AVFS_T/ds.ref" &&
	dd if="$AVFS_T/ds.ref" of="$MNT/ds" bs=1M oflag=dsync,direct status=none &&
	dd if="$AVFS_T/ds.ref" of="$MNT/ds4k" bs=4k count=16 oflag=sync status=none &&
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.pwritev(fd, [b"rwf"], 0, os.RWF_DSYNC)' "$MNT/rwf" && avfs_kill9
}
check "dd oflag=dsync,direct; dd oflag=sync 4k; pwritev RWF_DSYNC; kill -9" t_dsync_kill
check "remount after the sync writes + kill -9" avfs_start || { avfs_summary; exit 1; }
t_dsynced() {
	cmp "$AVFS_T/ds.ref" "$MNT/ds" && cmp -n $((64 << 10)) "$AVFS_T/ds.ref" "$MNT/ds4k" &&
	same "$(stat -c %s "$MNT/ds4k")" $((64 << 10)) && same "$(cat "$MNT/rwf" 2>&1)" rwf
}
check "what the sync writes wrote is there" t_dsynced

# ---- issue 18: fill, delete, write at once ----
t_nospc() {
	local err
	err=$(dd if=/dev/zero of="$MNT/fill" bs=1M 2>&1 >/dev/null)
	case "$err" in *"No space left"*) ;; *) echo "  fill: $err"; return 1 ;; esac
	[ "$(avail)" -lt $((1 << 20)) ] || { echo "  avail $(avail) after the fill"; return 1; }
	rm "$MNT/fill" &&
	dd if=/dev/zero of="$MNT/after" bs=1M count=1024 status=none &&
	same "$(stat -c %s "$MNT/after")" $((1 << 30)) && rm "$MNT/after"
}
check "fill, delete, write 1 GiB at once: no ENOSPC" t_nospc
check "clean unmount after the fill" avfs_stop
check "fsck.avfs -n clean after the fill" t_fsck

# ---- issue 18: atime by the mount's rule ----
t_atime_rule() {	# t_atime_rule RULE: two reads a second apart, with atime 2000 first
	local a0 a1 a2
	echo data >"$MNT/at_$1" && touch -a -d "2000-01-01" "$MNT/at_$1" && a0=$(stat -c %X "$MNT/at_$1") &&
	cat "$MNT/at_$1" >/dev/null && a1=$(stat -c %X "$MNT/at_$1") && sleep 1.1 &&
	cat "$MNT/at_$1" >/dev/null && a2=$(stat -c %X "$MNT/at_$1") || return 1
	case $1 in
	noatime) same "$a1 $a2" "$a0 $a0" ;;
	strictatime) [ "$a1" -gt "$a0" ] && [ "$a2" -gt "$a1" ] || { echo "  atime $a0 $a1 $a2"; return 1; } ;;
	esac
}
check "remount with -o noatime" avfs_start -o noatime || { avfs_summary; exit 1; }
check "atime: noatime" t_atime_rule noatime
check "clean unmount (noatime)" avfs_stop
check "remount with --set atime=strictatime" avfs_start --set atime=strictatime ||
	{ avfs_summary; exit 1; }
check "atime: strictatime" t_atime_rule strictatime
check "clean unmount (strictatime)" avfs_stop
check "fsck.avfs -n clean at the end" t_fsck
avfs_summary

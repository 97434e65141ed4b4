#!/bin/bash
# test_systemd.sh — avfsd as systemd runs it (issue 17, Done when 2): the ExecStart of
# avfsd@.service, run with what systemd gives a Type=notify service ($NOTIFY_SOCKET, stderr on
# the journal's stream named by $JOURNAL_STREAM), reports READY=1 once the mount is served,
# logs to the journal (a real systemd-journald, read back with journalctl: the lines, their
# priority, AVFS_DEVICE), and on SIGTERM (the unit's stop) reports STOPPING=1, drains,
# commits and exits 0 with a clean file system. A background avfsd (mount.avfs's way) logs to
# the journal too. Where systemd is not PID 1 (CI, containers) this is the whole of it; the
# unit file itself is checked by systemd-analyze verify in check_install.
# It runs in a private mount namespace with journald's sockets and journal on tmpfs: the
# machine's journal (if any) is not touched.
# env: AVFSD MKFS FSCK UNIT (the build's avfsd@.service). Exit 77 without root, FUSE,
# systemd-journald or journalctl.
set -u
. "$(dirname "$0")/daemon_env.sh"
avfs_require
JOURNALD=
for j in /lib/systemd/systemd-journald /usr/lib/systemd/systemd-journald; do
	[ -x "$j" ] && JOURNALD=$j && break
done
[ -n "$JOURNALD" ] || avfs_skip "no systemd-journald (package systemd)"
for t in unshare journalctl python3 findmnt; do
	command -v $t >/dev/null || avfs_skip "no $t"
done
if [ -z "${AVFS_IN_NS:-}" ]; then
	AVFS_IN_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
avfs_env_init
JPID= NPID= DPID=
stop_all() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && sleep 1
	[ -n "$NPID" ] && kill "$NPID" 2>/dev/null
	[ -n "$JPID" ] && kill "$JPID" 2>/dev/null
	wait 2>/dev/null
}
trap 'rc=$?; stop_all; (exit $rc); avfs_cleanup' EXIT	# avfs_cleanup exits with $?

# ---- a journald of our own ----
mkdir -p /run/systemd /run/log
mount -t tmpfs tmpfs /run/systemd && mount -t tmpfs tmpfs /run/log ||
	{ echo "FAIL: tmpfs for journald"; exit 1; }
mkdir -p /run/systemd/journal
"$JOURNALD" >"$AVFS_T/journald.log" 2>&1 &
JPID=$!
for i in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
[ -S /run/systemd/journal/socket ] || { echo "FAIL: journald did not start"; cat "$AVFS_T/journald.log"; exit 1; }
journal() { journalctl -D /run/log/journal --no-pager "$@"; }
# in_journal PATTERN MATCH...: a line of the journal's entries that match MATCH... contains
# PATTERN, within 10 s (journald writes what it receives a little later, more so on a busy
# machine: one look at once failed a CI-like run now and then)
in_journal() {
	local pat=$1 i
	shift
	for i in $(seq 200); do
		journal "$@" -o cat | grep -qF -- "$pat" && return 0
		sleep 0.05
	done
	return 1
}

# ---- systemd's side of Type=notify: a datagram socket, every message logged ----
NOTIFY=$AVFS_T/notify.sock
python3 - "$NOTIFY" "$AVFS_T/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        for line in s.recv(4096).decode().split("\n"):
            log.write(line + "\n")
PY
NPID=$!
for i in $(seq 100); do [ -S "$NOTIFY" ] && break; sleep 0.05; done
: >>"$AVFS_T/notify.log"

avfs_mkfs --size 2G --block-size 1M || { echo "FAIL mkfs"; exit 1; }

# ---- the unit's ExecStart, as systemd would run it ----
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
echo "unit: ExecStart=$exec_start"
OPTIONS=noatime
read -r -a cmd <<<"$exec_start"
argv=()
for w in "${cmd[@]}"; do
	case $w in
	*/avfsd) argv+=("$AVFSD") ;;
	'${OPTIONS}') argv+=("$OPTIONS") ;;
	'${DEVICE}') argv+=("$IMG") ;;
	%f) argv+=("$MNT") ;;
	*) argv+=("$w") ;;
	esac
done
echo "run: ${argv[*]}"
ERR=$AVFS_T/stderr
: >"$ERR"
JOURNAL_STREAM=$(stat -c '%d:%i' "$ERR") NOTIFY_SOCKET=$NOTIFY "${argv[@]}" 2>>"$ERR" &
DPID=$!
ready() {
	local i
	for i in $(seq 200); do
		grep -q '^READY=1' "$AVFS_T/notify.log" && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$ERR"
	return 1
}
check "the service reports READY=1" ready
check "... once the mount is served (fuse.avfs, the image, noatime)" \
	bash -c "findmnt -n -o FSTYPE,SOURCE,OPTIONS -M '$MNT' | grep -q '^fuse.avfs *$IMG .*noatime'"
check "... with a STATUS line" grep -q "^STATUS=serving $IMG on $MNT" "$AVFS_T/notify.log"
echo hello >"$MNT/f"
sync "$MNT/f"
check "its log is in the journal (SYSLOG_IDENTIFIER=avfsd)" \
	in_journal "serving $IMG on $MNT" SYSLOG_IDENTIFIER=avfsd
check "... with the level as PRIORITY (info: 6) and the device as AVFS_DEVICE" \
	in_journal "mounted $IMG" AVFS_DEVICE="$IMG" PRIORITY=6
check "... and nothing on stderr" test ! -s "$ERR"
kill -TERM "$DPID"
stopped() {
	local i rc
	for i in $(seq 600); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	wait "$DPID"
	rc=$?
	DPID=
	[ $rc = 0 ] || echo "  exit status $rc"
	[ $rc = 0 ]
}
check "SIGTERM (the unit's stop): exits 0 within 30 s" stopped
check "... having said STOPPING=1" grep -q '^STOPPING=1' "$AVFS_T/notify.log"
check "... and logged its clean shutdown to the journal" \
	in_journal "clean shutdown of $IMG" SYSLOG_IDENTIFIER=avfsd
check "... unmounted" bash -c "! findmnt -M '$MNT' >/dev/null"
check "... the file system clean, the file kept" \
	bash -c "'$FSCK' -n '$IMG' | grep -q ': clean' && '$FSCK' --json -n '$IMG' | grep -q '\"files\": 1'"

# ---- in the background (mount.avfs's way): the journal, since journald runs ----
check "avfsd in the background returns once mounted" "$AVFSD" -o noallow_other "$IMG" "$MNT"
check "... its log goes to the journal" \
	in_journal "serving $IMG on $MNT, clients" SYSLOG_IDENTIFIER=avfsd
check "... noallow_other: the mount is root's" \
	bash -c "! findmnt -n -o OPTIONS -M '$MNT' | grep -q allow_other"
fusermount3 -u "$MNT"
check "... it lets go once unmounted" bash -c "for i in \$(seq 200); do flock -n '$IMG' true && exit 0; sleep 0.05; done; exit 1"
avfs_summary

#!/bin/bash
# guest-jit.sh — JIT seek and seek splitting (SPEC §6, papers/003 §3.2–3.3) over SG_IO on a disk
# that rotates: hddemu's disk (docs/HDDEMU.md) is the QEMU guest's virtio-scsi scsi-hd (run.sh
# QEMU_VSCSI_FILE), and tests/guest/mixer_run runs the traffic mixer on it through the sg backend,
# its predictor given hddemu's model (--disk-model). Per run one boot and one mixer_run of one
# configuration; configurations interleaved, --repeat times. Prints one table: RT misses, BE
# throughput, E(T_wait) and the mean command time as the guest saw them (transport included) and
# as the modelled disk served them (hddemu's trace), JIT waits, seek splits, hddemu's timing error.
# A benchmark, not a test: it judges no figure. Run as root. --smoke: a tiny run for CI, which
# fails only when a run does not complete or a command fails.
#
# usage: guest-jit.sh [--model avfs-250g] [--size 256M] [--duration 20] [--repeat 3]
#          [--configs chunk,jit,split] [--chunk 64K] [--split BYTES] [--jit-offset T]
#          [--streams 2] [--rate 1M] [--io 256K] [--keep] [--smoke]
# Configurations: chunk (chunking only), jit (chunking + JIT seek), split (chunking + JIT +
# seek splitting); NAME:T sets that one's JIT offset (e.g. jit:2ms; default --jit-offset, else
# the mixer's 1 ms). --split: seeks longer than this are split (default a quarter of the disk).
# --size: the outer part of the model (hddemu --size, a multiple of 4 KiB: QEMU opens the file
# with O_DIRECT and wants whole 4 KiB blocks). --keep: keep the work directory (consoles, logs,
# hddemu's trace per run).
# env: HDDEMU MIXER_RUN (static, for the guest) QEMU_CACHE (default: ../build); work under /var/tmp.
# What the guest sees is not a real disk: QEMU emulates SEEK(10) without passing it on, so a split
# seek's first half never moves hddemu's head (docs/HDDEMU.md, "Under QEMU").
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/benchlib.sh"
tool_paths HDDEMU=../build/tools/hddemu MIXER_RUN=../build/tests/qemu/mixer_run \
	QEMU_CACHE=../build/qemu-cache
RUN_SH=$(realpath -m "$HERE/../tests/qemu/run.sh")
GUEST_LIB=$(realpath -m "$HERE/../tests/qemu/guest_lib.sh")

MODEL=avfs-250g
SIZE=256M
DURATION=20
REPEAT=3
CONFIGS=chunk,jit,split
CHUNK=64K
SPLIT=
JIT_OFFSET=
STREAMS=2
RATE=1M
IO=256K
KEEP=0
SMOKE=0

bad() { echo "guest-jit: $*" >&2; exit 2; }
VALUE_OPTS="--model --size --duration --repeat --configs --chunk --split --jit-offset --streams
	--rate --io"
while [ $# -gt 0 ]; do
	case $1 in
	--keep) KEEP=1 ;;
	--smoke) SMOKE=1; SIZE=64M; DURATION=2; REPEAT=1 ;;
	-h|--help) usage; exit 0 ;;
	*) value_opt "$@" || bad "unknown argument $1 (--help)"; shift ;;
	esac
	shift
done

# ---- arguments ----
SIZE_BYTES=$(bytes_of "$SIZE") && [ "$SIZE_BYTES" -ge $((16 << 20)) ] &&
	[ $((SIZE_BYTES % 4096)) = 0 ] || bad "--size: at least 16M, a multiple of 4 KiB"
if [ -n "$SPLIT" ]; then
	SPLIT_BYTES=$(bytes_of "$SPLIT") && [ "$SPLIT_BYTES" -gt 0 ] || bad "--split: a size"
else
	SPLIT_BYTES=$((SIZE_BYTES / 4))
fi
positive "$DURATION" || bad "--duration: positive seconds"
[[ $REPEAT =~ ^[0-9]+$ ]] && [ "$REPEAT" -ge 1 ] || bad "--repeat: a positive count"
[[ $STREAMS =~ ^[0-9]+$ ]] && [ "$STREAMS" -ge 1 ] && [ "$STREAMS" -le 15 ] ||
	bad "--streams: 1 to 15"
for s in "$CHUNK" "$RATE" "$IO"; do bytes_of "$s" >/dev/null || bad "bad size $s"; done
[ "$MODEL" != ssd ] || bad "--model: a rotating model (ssd has no platter to predict)"
declare -a CFG=()
IFS=, read -r -a CFG <<<"$CONFIGS"
[ ${#CFG[@]} -gt 0 ] || bad "--configs: empty"
for c in "${CFG[@]}"; do
	case ${c%%:*} in chunk|jit|split) ;; *) bad "--configs: unknown configuration '$c'" ;; esac
	[[ $c != *:* ]] || [ "${c%%:*}" != chunk ] || bad "--configs: chunk has no JIT offset"
done

# mixer_run's arguments for configuration $1
cfg_args() {
	local name=${1%%:*} off=
	[[ $1 == *:* ]] && off=${1#*:}
	[ -z "$off" ] && off=$JIT_OFFSET
	printf '%s\n' --backend sg --disk-model "$MODEL" --duration "$DURATION" \
		--streams "$STREAMS" --rate "$RATE" --io "$IO" --set "chunk=$CHUNK"
	case $name in
	jit) printf '%s\n' --set jit=on ;;
	split) printf '%s\n' --set jit=on --set "split=$SPLIT_BYTES" ;;
	esac
	[ "$name" != chunk ] && [ -n "$off" ] && printf '%s\n' --set "jit-offset=$off"
	return 0
}

# ---- facilities ----
skip_or_fail() {	# in --smoke a missing facility is a SKIP (77), else a failure
	echo "guest-jit: $*" >&2
	[ "$SMOKE" = 1 ] && exit 77
	exit 1
}
[ "$(id -u)" = 0 ] || skip_or_fail "needs root (hddemu's FUSE mount, which QEMU opens)"
[ -c /dev/fuse ] || skip_or_fail "no /dev/fuse"
command -v fusermount3 >/dev/null || skip_or_fail "fusermount3 is not installed"
for b in "$HDDEMU" "$MIXER_RUN" "$RUN_SH"; do
	[ -x "$b" ] || { echo "guest-jit: $b is missing or not built" >&2; exit 1; }
done

T0=$(date +%s)
say() { printf 'guest-jit [%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }

W=$(mktemp -d /var/tmp/guest-jit-XXXXXX) || exit 1
HMNT=$W/hdd
IMG=$W/backing.img
TRACE=$W/hddemu.trace.csv
LOG=$W/log
mkdir "$HMNT" "$W/runs"
: >"$LOG"

HDD_PID=
CHILD=

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	[ -n "$CHILD" ] && kill_wait "$CHILD"	# run.sh (its timeout ends QEMU)
	if [ -n "$HDD_PID" ]; then
		fuse_stop "$HMNT" "$HDD_PID" 30	# (QEMU may still hold the disk open a moment)
		HDD_PID=
	fi
	if mounted "$HMNT"; then	# never rm -r into a mount
		echo "guest-jit: could not unmount $HMNT; left $W as it is" >&2
	elif [ "$KEEP" = 1 ] || [ "$rc" != 0 ]; then
		rm -f "$IMG"
		echo "guest-jit: logs kept in $W" >&2
	else
		rm -rf "$W"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'echo "guest-jit: interrupted" >&2; exit 130' INT TERM HUP

# ---- the disk: hddemu in real time, every request traced ----
"$HDDEMU" --model "$MODEL" --size "$SIZE_BYTES" --backing "$IMG" --trace "$TRACE" --foreground \
	"$HMNT" >>"$LOG" 2>&1 &
HDD_PID=$!
if ! wait_mounted "$HMNT" "$HMNT/disk" "$HDD_PID"; then
	wait_exit "$HDD_PID" 1 >/dev/null
	HDD_PID=
	cat "$LOG" >&2
	echo "guest-jit: hddemu did not mount $HMNT/disk" >&2
	exit 1
fi

# the guest's program: find the disk, wait a second (a gap in the trace after the boot's own
# reads), then mixer_run with the arguments run.sh gives it
cat >"$W/guest-jit.sh" <<'EOF'
#!/bin/sh
. /bin/guest_lib.sh
dev=$(block_device vscsi0) || { echo "guest-jit: no disk with serial vscsi0"; exit 1; }
sleep 1
mixer_run "$@" "$dev"
rc=$?
echo "guest-jit: mixer_run exit status $rc"
[ $rc -le 1 ]	# 1: a miss or a failed command, which the host counts
EOF
chmod 755 "$W/guest-jit.sh"
install -m 0755 "$MIXER_RUN" "$W/mixer_run"	# run.sh installs tools under their own names

# ---- the runs ----
say "hddemu --model $MODEL --size $SIZE_BYTES; ${DURATION}s per run, ${#CFG[@]} configuration(s)" \
	"x $REPEAT; chunk $CHUNK, split $SPLIT_BYTES"
declare -a RUNS=()
FAILED=0
for rep in $(seq "$REPEAT"); do
	for c in "${CFG[@]}"; do
		id=$c.$rep
		R=$W/runs/$id
		mkdir "$R"
		args=()
		while read -r a; do args+=(--arg "$a"); done < <(cfg_args "$c")
		sync
		from=$(($(wc -l <"$TRACE") + 1))
		echo reset >"$HMNT/stats"
		say "$c, run $rep of $REPEAT"
		QEMU_VSCSI_FILE=$HMNT/disk QEMU_LOG=$R/console QEMU_TIMEOUT=$(awk -v d="$DURATION" \
			'BEGIN { printf "%d", d + 90 }') "$RUN_SH" "$QEMU_CACHE" --tool "$GUEST_LIB" \
			--tool "$W/mixer_run" "${args[@]}" "$W/guest-jit.sh" >"$R/run.log" 2>&1 &
		CHILD=$!
		wait "$CHILD"
		rc=$?
		CHILD=
		if [ $rc = 77 ]; then
			tail -n 3 "$R/run.log" >&2
			skip_or_fail "run.sh cannot prepare the guest (SKIP)"
		fi
		sleep 0.3	# hddemu writes its trace out when idle
		cat "$HMNT/stats" >"$R/stats"
		tail -n +"$from" "$TRACE" | grep '^[0-9]' >"$R/trace.csv"
		tr -d '\r' <"$R/console" 2>/dev/null | grep -a '^mixer_run: \|^guest-jit: ' >"$R/out"
		if [ $rc != 0 ] || ! grep -q '^mixer_run: commands ' "$R/out"; then
			say "$c, run $rep: FAILED (run.sh exit $rc; $R/run.log)"
			tail -n 15 "$R/run.log" | sed 's/^/    /' >&2
			FAILED=1
		fi
		RUNS+=("$id")
	done
done

# ---- the table ----
# per run: mixer_run's lines, and from hddemu's trace of mixer_run's requests the disk's mean
# command time, E(T_wait) = ½ΣT²/elapsed (T: start to end of each request in the model) and the
# timing error (reply − end)
for id in "${RUNS[@]}"; do
	R=$W/runs/$id
	awk -v id="$id" -v tr="$R/trace.csv" -v st="$R/stats" '
	function after(key,   s, i) {	# the number after key in $0
		i = index($0, key); if (!i) return ""
		s = substr($0, i + length(key)); sub(/^ +/, "", s); sub(/[^0-9.].*/, "", s); return s }
	function before(re,   s) {	# the number that re (a regex starting with a space) follows
		if (!match($0, "[0-9.]+" re)) return ""
		s = substr($0, RSTART, RLENGTH); sub(/[^0-9.].*/, "", s); return s }
	function z(v) { return v == "" ? 0 : v }
	/^mixer_run: RT requests/ { rt = after("RT requests"); miss = after("misses")
		be = before(" MB/s"); etw = after("E(T_wait)") }
	/^mixer_run: commands/ { err = after("errors"); cmd = after("mean command time")
		seeks = after("SEEK") }
	/^mixer_run: mixer:/ { jit = before(" JIT waits"); splits = before(" seek splits") }
	END {
		n = 0
		while ((getline l < tr) > 0) { split(l, f, ","); n++; A[n] = f[1]; S[n] = f[2]; E[n] = f[3]
			late[n] = f[8] - f[3] }
		# the longest stretch without a 0.2 s pause: mixer_run (its greedy reader never
		# pauses), not the boot before it or QEMU closing the disk after it
		first = last = b = 1
		for (i = 2; i <= n + 1; i++) if (i > n || A[i] - E[i - 1] > 2e8) {
			if (i - b > last - first + 1) { first = b; last = i - 1 }
			b = i }
		k = 0; s = 0; s2 = 0; em = 0; ex = 0
		for (i = first; i <= last && n; i++) { t = E[i] - S[i]; k++; s += t; s2 += t * t
			em += late[i]; if (late[i] > ex) ex = late[i] }
		el = k ? E[last] - A[first] : 0
		while ((getline l < st) > 0) { split(l, f, " "); if (f[1] == "timing_late_io") lio = f[2] }
		ok = (rt != "" && rt > 0 && err == "0") ? 1 : 0
		# id ok rt misses be etw cmd disk_etw disk_cmd jit splits seeks err_mean err_max late_io errors
		printf "%s %d %s %s %s %s %s %.4f %.4f %s %s %s %.1f %.1f %s %s\n", id, ok, z(rt), z(miss),
			z(be), z(etw), z(cmd), (k && el > 0 ? s2 / 2 / el / 1e6 : 0), (k ? s / k / 1e6 : 0),
			z(jit), z(splits), z(seeks), (k ? em / k / 1e3 : 0), ex / 1e3, z(lio),
			(err == "" ? "-" : err)
	}' "$R/out"
done >"$W/runs.txt"

echo "guest-jit: hddemu --model $MODEL --size $SIZE_BYTES under QEMU (virtio-scsi, TCG), mixer_run" \
	"--backend sg --disk-model $MODEL: $STREAMS readers + 1 recorder at $RATE/s, $IO requests," \
	"chunk $CHUNK, split $SPLIT_BYTES, ${DURATION}s x $REPEAT"
echo "per run:"
awk '{ printf "  %-14s %s RT %s misses %s, BE %s MB/s, E(Tw) %s ms, cmd %s ms; disk: E(Tw) %.3f ms," \
	" cmd %.3f ms; JIT waits %s, splits %s; hddemu error mean %.1f max %.1f us, late I/O %s;" \
	" errors %s\n", $1, ($2 ? "ok" : "FAILED"), $3, $4, $5, $6, $7, $8, $9, $10, $11, $13, $14,
	$15, $16 }' "$W/runs.txt"
echo "mean [min-max] over the runs of each configuration; guest: as mixer_run saw the commands," \
	"transport included; disk: hddemu's model (trace)"
awk -v order="$CONFIGS" '
	function cell(c, j) { return sprintf("%.2f [%.2f-%.2f]", sum[c, j] / n[c], lo[c, j], hi[c, j]) }
	{ np = split($1, p, "."); c = p[1]; for (i = 2; i < np; i++) c = c "." p[i]
	  n[c]++; ok[c] += $2; rt[c] += $3; miss[c] += $4
	  for (j = 5; j <= 14; j++) { v = $j + 0; sum[c, j] += v
		if (n[c] == 1 || v < lo[c, j]) lo[c, j] = v; if (n[c] == 1 || v > hi[c, j]) hi[c, j] = v } }
	END {
		printf "%-12s %4s %9s %-20s %-20s %-20s %-20s %-20s %8s %7s %-16s\n", "config", "runs",
			"RT miss", "BE MB/s", "E(Tw) guest ms", "cmd guest ms", "E(Tw) disk ms",
			"cmd disk ms", "JIT/run", "split/run", "hddemu err us"
		m = split(order, O, ",")
		for (k = 1; k <= m; k++) { c = O[k]; if (!n[c]) continue
			printf "%-12s %4d %9s %-20s %-20s %-20s %-20s %-20s %8.0f %7.0f %.1f/%.1f\n", c, n[c],
				miss[c] "/" rt[c], cell(c, 5), cell(c, 6), cell(c, 7), cell(c, 8), cell(c, 9),
				sum[c, 10] / n[c], sum[c, 11] / n[c], sum[c, 13] / n[c], hi[c, 14] }
	}' "$W/runs.txt"

bad_runs=$((${#RUNS[@]} - $(awk '$2 == 1' "$W/runs.txt" | wc -l)))
if [ "$FAILED" = 1 ] || [ "$bad_runs" -gt 0 ]; then
	echo "guest-jit: $bad_runs run(s) did not complete with zero errors" >&2
	exit 1
fi
exit 0

# benchlib.sh — sourced by the benchmarks that run hddemu and other children (peer-compare.sh,
# reserve-rt.sh, recorder.sh, guest-jit.sh, parity.sh): the tools' paths, usage from the
# script's header, options and their checks, the facilities they need, mounts, and waiting for
# and stopping children without hanging on a stuck one. The sourcing script defines bad() (a
# usage error: message, exit 2) and sets BENCH_NAME (messages).

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tool_paths() {	# tool_paths VAR=PATH...: each VAR from the environment, else PATH (relative to
		# bench/); made absolute, for the scripts change directory
	local kv v
	for kv in "$@"; do
		v=${kv%%=*}
		[ -n "${!v:-}" ] || printf -v "$v" '%s' "$BENCH_DIR/${kv#*=}"
		printf -v "$v" '%s' "$(realpath -m "${!v}")"
	done
}

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
need_arg() { [ $# -ge 2 ] || bad "$1 needs a value"; }

value_opt() {	# value_opt OPT VALUE...: OPT is one of the script's VALUE_OPTS (white space
		# apart), whose variable (--file-size: FILE_SIZE) takes VALUE; false for any other
		# option. The caller shifts VALUE.
	local o v
	for o in $VALUE_OPTS; do
		[ "$o" = "$1" ] || continue
		need_arg "$@"
		v=${1#--}
		v=${v//-/_}
		printf -v "${v^^}" '%s' "$2"
		return 0
	done
	return 1
}

bytes_of() {	# bytes_of SIZE: K/M/G/T = powers of 1024; fails on bad input
	local n=${1%[KkMmGgTt]} u=${1: -1} m=1
	[[ $n =~ ^[0-9]+$ ]] || return 1
	case $u in
	[Kk]) m=$((1 << 10)) ;; [Mm]) m=$((1 << 20)) ;; [Gg]) m=$((1 << 30)) ;; [Tt]) m=$((1 << 40)) ;;
	esac
	echo $((10#$n * m))
}

is_num() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }	# is_num S: an unsigned decimal number
positive() { is_num "$1" && awk -v d="$1" 'BEGIN { exit !(d > 0) }'; }	# ... above 0

configs_of() {	# configs_of LIST REGEX HINT: CFG=(LIST split at commas), each one matching
		# the extended REGEX whole, else a usage error naming it and HINT
	local c
	CFG=()
	IFS=, read -r -a CFG <<<"$1"
	[ ${#CFG[@]} -gt 0 ] || bad "--configs: empty"
	for c in "${CFG[@]}"; do
		[[ $c =~ ^($2)$ ]] || bad "--configs: unknown configuration '$c' ($3)"
	done
}

need_facilities() {	# need_facilities TOOL...: root, /dev/fuse and every TOOL, else exit 1
	local t
	[ "$(id -u)" = 0 ] || { echo "$BENCH_NAME: needs root (FUSE, loop devices, mount)" >&2; exit 1; }
	[ -c /dev/fuse ] || { echo "$BENCH_NAME: no /dev/fuse" >&2; exit 1; }
	for t in "$@"; do
		command -v "$t" >/dev/null || { echo "$BENCH_NAME: $t is not installed" >&2; exit 1; }
	done
}

need_built() {	# need_built FILE...: every one built (executable), else exit 1
	local b
	for b in "$@"; do
		[ -x "$b" ] || { echo "$BENCH_NAME: $b is missing or not built" >&2; exit 1; }
	done
}

mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }

wait_mounted() {	# wait_mounted DIR PATH PID [SECONDS]: until DIR is mounted with PATH in
			# place (at most SECONDS, default 10) or PID is gone; true when it is
	local i
	for i in $(seq $((${4:-10} * 10))); do
		mounted "$1" && [ -e "$2" ] && return 0
		kill -0 "$3" 2>/dev/null || break
		sleep 0.1
	done
	mounted "$1" && [ -e "$2" ]
}

fuse_abort() {	# fuse_abort DIR: abort a stuck FUSE connection (its requests fail with ENOTCONN)
	local dev
	mounted "$1" || return 0
	dev=$(stat -c %d "$1" 2>/dev/null) || return 0
	[ -w "/sys/fs/fuse/connections/$dev/abort" ] && echo 1 >"/sys/fs/fuse/connections/$dev/abort"
	return 0
}

wait_exit() {	# wait_exit PID SECONDS: its exit status; 124 if still running
	local i
	for i in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && return 124
	wait "$1"
}

kill_wait() {	# kill_wait PID: TERM, then KILL after 5 s
	kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
	kill -TERM "$1" 2>/dev/null
	wait_exit "$1" 5 >/dev/null
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
	fi
	return 0
}

fuse_stop() {	# fuse_stop DIR PID SECONDS: unmount DIR (again after a second: QEMU or a reader
		# may hold it a moment; then abort its connection and detach it), wait up to
		# SECONDS for its daemon PID (none if empty), killed if it does not exit. PID's
		# exit status, 124 when it was killed; failures in $LOG
	local rc
	if mounted "$1"; then
		timeout "$3" fusermount3 -u "$1" 2>>"${LOG:-/dev/null}" || {
			sleep 1
			timeout 10 fusermount3 -u "$1" 2>>"${LOG:-/dev/null}"
		} || {
			echo "fusermount3 -u $1 failed: its connection aborted" >>"${LOG:-/dev/null}"
			fuse_abort "$1"
			timeout 10 fusermount3 -u -z "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
		}
	fi
	[ -n "$2" ] || return 0
	wait_exit "$2" "$3"
	rc=$?
	[ $rc = 124 ] && kill_wait "$2"
	return $rc
}

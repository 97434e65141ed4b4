# benchlib.sh — sourced by the benchmarks that run hddemu and other children (peer-compare.sh,
# guest-jit.sh): usage from the script's header, option checks, mounts, and waiting for and
# stopping children without hanging on a stuck one. The sourcing script defines bad().

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
need_arg() { [ $# -ge 2 ] || bad "$1 needs a value"; }

mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }

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

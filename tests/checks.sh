# checks.sh — sourced by the shell tests (bash): ok/FAIL bookkeeping and the skip with a
# reason. It runs no check itself; what a test needs around it (an avfsd, a disk) is its own
# or daemon_env.sh's.

avfs_skip() {	# avfs_skip REASON: exit 77 (meson: SKIP) with a one-line reason
	echo "SKIP: $*"
	exit 77
}

PASS=0
FAILS=0
check() {	# check NAME CMD...: runs CMD, ok when it exits 0
	local name=$1
	shift
	if "$@"; then
		PASS=$((PASS + 1))
		echo "ok $name"
	else
		FAILS=$((FAILS + 1))
		echo "FAIL $name"
	fi
}

avfs_summary() {	# the last line, and the exit status of the test
	echo "$PASS passed, $FAILS failed"
	[ "$FAILS" = 0 ]
}

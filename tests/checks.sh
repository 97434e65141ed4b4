# checks.sh — sourced by the shell tests (bash): ok/FAIL bookkeeping, the skip with a reason,
# two comparisons a check is made of (same, fails_with), and a benchmark's smoke run with its
# exit status checked (bench_smoke). What a test needs around it (an avfsd, a disk) is its own
# or daemon_env.sh's.

avfs_skip() {	# avfs_skip REASON: exit 77 (meson: SKIP) with a one-line reason
	echo "SKIP: $*"
	exit 77
}

avfs_need_hddemu() {	# the benchmarks on hddemu (bench/hddlib.sh): root, /dev/fuse, losetup
			# and $HDDEMU built (default: the build tree's, from the caller's HERE),
			# else SKIP saying which is missing; HDDEMU exported
	: "${HDDEMU:=$HERE/../build/tools/hddemu}"
	export HDDEMU
	[ "$(id -u)" = 0 ] || avfs_skip "needs root (FUSE mounts, loop devices)"
	[ -c /dev/fuse ] || avfs_skip "no /dev/fuse"
	command -v losetup >/dev/null || avfs_skip "no losetup"
	[ -x "$HDDEMU" ] || avfs_skip "hddemu is not built ($HDDEMU)"
}

PASS=0
FAILS=0
bench_smoke() {	# bench_smoke SCRIPT ARGS...: bench/SCRIPT --smoke ARGS --out $T/out.json in a
		# fresh temporary folder T (removed on exit; the caller's HERE is tests/): its table
		# into $T/table and printed, its stderr into $T/err and printed if it failed; checks
		# that it exits 0
	local rc
	T=$(mktemp -d "/var/tmp/${1%.sh}-smoke-XXXXXX") || exit 1
	trap 'rm -rf "$T"' EXIT
	bash "$HERE/../bench/$1" --smoke "${@:2}" --out "$T/out.json" >"$T/table" 2>"$T/err"
	rc=$?
	cat "$T/table"
	[ $rc = 0 ] || { echo "$1 exit status $rc; its stderr:"; cat "$T/err"; }
	check "$1 --smoke exits 0" test $rc = 0
}

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

same() {	# same GOT WANT
	[ "$1" = "$2" ] && return 0
	echo "  got '$1', want '$2'"
	return 1
}

fails_with() {	# fails_with TEXT CMD...: CMD must fail and say TEXT on stderr
	local text=$1 err
	shift
	if err=$("$@" 2>&1 >/dev/null); then
		echo "  '$*' succeeded, want '$text'"
		return 1
	fi
	case "$err" in
	*"$text"*) return 0 ;;
	esac
	echo "  '$*': '$err', want '$text'"
	return 1
}

avfs_summary() {	# the last line, and the exit status of the test
	echo "$PASS passed, $FAILS failed"
	[ "$FAILS" = 0 ]
}

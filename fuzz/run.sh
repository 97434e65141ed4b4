#!/bin/bash
# fuzz/run.sh — build the libFuzzer targets (a clang build of their own, ASan + UBSan), make
# their seed corpora, run them and keep what crashes.
#   fuzz/run.sh TARGET|all SECONDS   run each target for SECONDS, one at a time; the corpus
#                                    grows in $FUZZ_WORK/corpus/TARGET, crashes and hangs are
#                                    kept in $FUZZ_WORK/crashes/TARGET/
#   fuzz/run.sh --smoke              every target for 3 s (the test suite's fuzz_smoke); exits
#                                    77 (skip) with a reason when clang or libFuzzer is missing
#   fuzz/run.sh --list               the targets
# Environment: FUZZ_BUILD (default: build-fuzz in the source tree), FUZZ_WORK (default:
# $FUZZ_BUILD/work), FUZZ_ARGS (more libFuzzer options). Each run ends with one line:
#   TARGET: N execs in S s, cov C, ft F, corpus K, crashes X (crash files in DIR)
# Replay one crash: $FUZZ_BUILD/fuzz/TARGET CRASHFILE
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$src/build-fuzz}
work=${FUZZ_WORK:-$build/work}
targets="fuzz_super fuzz_replay fuzz_mount fuzz_fsck fuzz_proto fuzz_config fuzz_scenario"

usage() {
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

skip() {
	echo "fuzz: SKIP: $*" >&2
	exit 77
}

# clang and its libFuzzer runtime: a one-line program built with -fsanitize=fuzzer
have_libfuzzer() {
	command -v clang >/dev/null || return 1
	local t
	t=$(mktemp -d) || return 1
	printf '%s\n' '#include <stdint.h>' '#include <stddef.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
		>"$t/t.c"
	clang -fsanitize=fuzzer,address,undefined "$t/t.c" -o "$t/t" >/dev/null 2>&1
	local rc=$?
	rm -rf "$t"
	return $rc
}

build_all() {
	if [ ! -f "$build/build.ninja" ]; then
		CC=clang meson setup "$build" "$src" --buildtype=debugoptimized -Dfuzz=true \
			-Db_sanitize=address,undefined -Db_lundef=false >"$work/setup.log" 2>&1 || {
			cat "$work/setup.log" >&2
			echo "fuzz: meson setup failed" >&2
			exit 1
		}
	fi
	local t list=""
	for t in $targets mkseeds mkseeds_proto; do list="$list fuzz/$t"; done
	ninja -C "$build" $list >"$work/build.log" 2>&1 || {
		tail -40 "$work/build.log" >&2
		echo "fuzz: build failed" >&2
		exit 1
	}
}

# seeds: tiny images made as the tests make theirs (mkseeds), the shipped scenario files,
# the configuration lines of docs/ADMIN.md
seed_all() {
	local s=$work/seeds
	rm -rf "$s"
	mkdir -p "$s/fuzz_config" "$s/fuzz_scenario" "$s/fuzz_proto"
	"$build/fuzz/mkseeds_proto" "$s/fuzz_proto" || exit 1
	"$build/fuzz/mkseeds" "$s/img" || exit 1
	for t in super replay mount fsck; do
		mv "$s/img/$t" "$s/fuzz_$t"
	done
	rmdir "$s/img"
	cp "$src"/scenarios/*.scn "$s/fuzz_scenario/"
	sed -n '/^## The configuration file/,/^## /p' "$src/docs/ADMIN.md" | grep '^    ' |
		sed 's/^    //' >"$s/fuzz_config/admin_md"
	printf 'margin=500ms\nquota uid=1000 rate=5M streams=2\n' >"$s/fuzz_config/two"
}

max_len() {
	case $1 in
	fuzz_super) echo 4104 ;;
	fuzz_config|fuzz_scenario) echo 8192 ;;
	fuzz_proto) echo 16384 ;;
	*) echo 65536 ;;
	esac
}

# run TARGET SECONDS: one line of figures; returns 1 when it crashed or hung
run_one() {
	local t=$1 secs=$2 corpus=$work/corpus/$1 crashes=$work/crashes/$1 log=$work/$1.log
	mkdir -p "$corpus" "$crashes"
	cp -n "$work/seeds/$t/"* "$corpus/" 2>/dev/null
	local before
	before=$(ls "$crashes" | wc -l)
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
		"$build/fuzz/$t" "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len="$(max_len "$t")" -artifact_prefix="$crashes/" -print_final_stats=1 \
		${FUZZ_ARGS:-} >"$log" 2>&1
	local rc=$?
	local execs cov ft corp n
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	corp=$(ls "$corpus" | wc -l)
	n=$(($(ls "$crashes" | wc -l) - before))
	echo "$t: ${execs:-0} execs in $secs s, cov ${cov:-?}, ft ${ft:-?}, corpus $corp, crashes $n (crash files in $crashes; log $log)"
	if [ $rc -ne 0 ] || [ $n -ne 0 ]; then
		grep -m3 -E 'ERROR|SUMMARY|runtime error|left after|does not|timeout' "$log" >&2
		return 1
	fi
	return 0
}

[ $# -ge 1 ] || usage
case $1 in
--list) echo $targets; exit 0 ;;
--smoke) want=$targets; secs=3 ;;
-h|--help) usage ;;
*)
	[ $# -eq 2 ] || usage
	want=$1
	[ "$want" = all ] && want=$targets
	secs=$2
	;;
esac
for t in $want; do
	case " $targets " in *" $t "*) ;; *) echo "fuzz: no target $t (fuzz/run.sh --list)" >&2; exit 2 ;; esac
done
have_libfuzzer || skip "clang with libFuzzer (-fsanitize=fuzzer) is missing: apt-get install clang libclang-rt-14-dev, or ./quickstart.sh test"
mkdir -p "$work"
build_all
seed_all
fail=0
for t in $want; do
	run_one "$t" "$secs" || fail=1
done
exit $fail

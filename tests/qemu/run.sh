#!/bin/bash
# run.sh CACHE_DIR [OPTION]... [[--env VAR=VALUE | --arg ARG]... TEST]... — boot the QEMU test
# guest (prepared in CACHE_DIR by prepare.sh, which it runs first) with three empty disks: a
# virtio-scsi scsi-hd (serial vscsi0, write cache on), an lsi53c895a scsi-hd (lsi0, write cache
# off: both WCE states) and an NVMe namespace (nvme0).
# The static TEST programs run in /tests in the order given, each with the --env variables and
# --arg arguments written before it. Options: --tool FILE puts FILE in the guest's /bin;
# --expect N REGEX requires N console lines matching REGEX (grep -E), the evidence a TEST prints.
# Exit 0 iff every TEST exited 0 and every --expect held; 77 (SKIP) as prepare.sh.
# Env: QEMU_TIMEOUT (s, default 120), QEMU_DISK_MB (256), QEMU_LOG (keep the console log there),
# QEMU_KEEP=1 (keep the work directory), QEMU_APPEND (more kernel arguments, e.g. guestdebug),
# QEMU_VSCSI_FILE=PATH (vscsi0 is that existing file, e.g. hddemu's MOUNTDIR/disk, raw, opened
# with cache=none (O_DIRECT) and aio=threads, its size its own; the guest writes to it).
set -euo pipefail
shopt -s extglob
HERE=$(cd "$(dirname "$0")" && pwd)
usage() {
	echo "usage: run.sh CACHE_DIR [--tool FILE | --expect N REGEX]..." \
		"[[--env VAR=VALUE | --arg ARG]... TEST]..." >&2
	exit 2
}
[ $# -gt 0 ] || usage
CACHE=$1
shift
W=$(mktemp -d "${TMPDIR:-/tmp}/avfs-qemu.XXXXXX")
[ "${QEMU_KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT
mkdir -p "$W/ov/tests" "$W/ov/bin"
ntests=0
expects=()
while [ $# -gt 0 ]; do
	case $1 in
	--tool)
		[ $# -ge 2 ] || usage
		install -m 0755 "$2" "$W/ov/bin/"
		shift 2
		;;
	--expect)
		[ $# -ge 3 ] && [[ $2 == +([0-9]) ]] || usage
		expects+=("$2" "$3")
		shift 3
		;;
	--arg)
		[ $# -ge 2 ] || usage
		printf '%s\n' "$2" >>"$W/next.args"
		shift 2
		;;
	--env)
		[ $# -ge 2 ] && [[ $2 == [A-Za-z_]*([A-Za-z0-9_])=* ]] || usage
		v=${2#*=}
		printf "export %s='%s'\n" "${2%%=*}" "${v//\'/\'\\\'\'}" >>"$W/next.env"	# quoted for sh
		shift 2
		;;
	-*) usage ;;
	*)
		ntests=$((ntests + 1))
		t=$W/ov/tests/$(printf '%02d' $ntests)-$(basename "$1")
		install -m 0755 "$1" "$t"
		[ ! -f "$W/next.env" ] || mv "$W/next.env" "$t.env"
		[ ! -f "$W/next.args" ] || mv "$W/next.args" "$t.args"
		chmod 0644 "$t".* 2>/dev/null || true	# init.sh runs only the executables
		shift
		;;
	esac
done
[ $ntests -gt 0 ] && [ ! -f "$W/next.env" ] && [ ! -f "$W/next.args" ] || usage

rc=0
"$HERE/prepare.sh" "$CACHE" || rc=$?
[ $rc -eq 0 ] || exit $rc
CACHE=$(cd "$CACHE" && pwd)
kernel=$CACHE/$(cat "$CACHE/kernel.path")

# the kernel unpacks concatenated newc archives: the cached base, then this run's programs
(cd "$W/ov" && find . | sort | cpio -o -H newc --quiet -R 0:0) >"$W/overlay.cpio"
cat "$CACHE/base.cpio" "$W/overlay.cpio" >"$W/initrd.cpio"
for d in vscsi0 lsi0 nvme0; do
	truncate -s "${QEMU_DISK_MB:-256}M" "$W/$d.img"
done
vscsi_drive=file=$W/vscsi0.img,format=raw
if [ -n "${QEMU_VSCSI_FILE:-}" ]; then	# a given file instead: O_DIRECT, blocking I/O in threads
	if [ ! -f "$QEMU_VSCSI_FILE" ] || [ ! -r "$QEMU_VSCSI_FILE" ] || [ ! -w "$QEMU_VSCSI_FILE" ]; then
		echo "run.sh: QEMU_VSCSI_FILE=$QEMU_VSCSI_FILE: not a readable and writable file" >&2
		exit 1
	fi
	vscsi_drive="file=${QEMU_VSCSI_FILE//,/,,},format=raw,cache=none,aio=threads"
fi

# TCG only: KVM here is a nested device that hangs guests (docs/TESTING.md)
log=${QEMU_LOG:-$W/console.log}
start=$(date +%s)
set +e
timeout -k 5 "${QEMU_TIMEOUT:-120}" qemu-system-x86_64 \
	-accel tcg -cpu max -m 512 -smp 1 -nodefaults -nographic -serial stdio -no-reboot \
	-kernel "$kernel" -initrd "$W/initrd.cpio" \
	-append "console=ttyS0 loglevel=4 panic=-1 ${QEMU_APPEND:-}" \
	-drive if=none,id=d0,"$vscsi_drive" \
	-device virtio-scsi-pci,id=vs0 \
	-device scsi-hd,bus=vs0.0,scsi-id=0,lun=0,drive=d0,serial=vscsi0,write-cache=on \
	-drive if=none,id=d1,file="$W/lsi0.img",format=raw \
	-device lsi53c895a,id=lsi \
	-device scsi-hd,bus=lsi.0,scsi-id=0,lun=0,drive=d1,serial=lsi0,write-cache=off \
	-drive if=none,id=d2,file="$W/nvme0.img",format=raw \
	-device nvme,serial=nvme0,drive=d2 \
	</dev/null 2>&1 | tee "$log"
qrc=${PIPESTATUS[0]}
set -e
secs=$(($(date +%s) - start))

# the console has CRs, and a line may lack its newline at power-off: match, do not anchor
tr -d '\r' <"$log" >"$W/console.txt"
grep -aoE 'GUEST-RESULT [^ ]+ [0-9]+' "$W/console.txt" >"$W/results" || true
echo
grep -aqE '^(ok|FAIL) [^ ]+ ' "$W/console.txt" && echo "run.sh: what the guest checked, by device:"
grep -aE '^(ok|FAIL) [^ ]+ ' "$W/console.txt" | awk '
	{ dev = $2; if (!(dev in n)) order[++k] = dev
	  n[dev]++; if ($1 == "FAIL") bad[dev]++
	  verdict = $1; sub(/^(ok|FAIL) [^ ]+ /, ""); text[dev] = text[dev] "\n    " verdict " " $0 }
	END { for (i = 1; i <= k; i++) { d = order[i]
		printf "  %s: %d checks, %d failed%s\n", d, n[d], bad[d], text[d] } }' || true
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	echo "run.sh: FAIL: qemu timed out after ${QEMU_TIMEOUT:-120} s" >&2
	exit 1
fi
if ! grep -aq 'GUEST-DONE ' "$W/console.txt"; then
	echo "run.sh: FAIL: the guest did not finish (qemu exit $qrc)" >&2
	exit 1
fi
nfail=$(awk '$3 != 0' "$W/results" | wc -l)
nres=$(wc -l <"$W/results")
echo "run.sh: $nres of $ntests test program(s) ran, $nfail failed, ${secs} s in qemu:"
sed 's/^GUEST-RESULT /  /' "$W/results"
for ((i = 0; i < ${#expects[@]}; i += 2)); do
	n=$(grep -acE -- "${expects[i + 1]}" "$W/console.txt" || true)
	if [ "$n" -ge "${expects[i]}" ]; then
		echo "run.sh: expected ${expects[i]} line(s) matching '${expects[i + 1]}': $n"
	else
		echo "run.sh: FAIL: expected ${expects[i]} line(s) matching '${expects[i + 1]}': $n" >&2
		nfail=$((nfail + 1))
	fi
done
[ "$nres" -eq "$ntests" ] && [ "$nfail" -eq 0 ]

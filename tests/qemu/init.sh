#!/bin/sh
# init.sh — /init of the QEMU test guest (packed by prepare.sh): loads the SCSI and NVMe modules,
# scans the SCSI targets, runs every /tests/* program (with the variables of /tests/NAME.env and
# the arguments of /tests/NAME.args, one a line, when present), prints GUEST-RESULT NAME RC for
# each and GUEST-DONE status=0|1, and powers off. It knows nothing about what the programs test;
# run.sh reads these lines from the serial console.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
up() { cut -d' ' -f1 /proc/uptime; }
debug=
grep -q guestdebug /proc/cmdline && debug=1
echo "GUEST-BOOT uptime $(up)"

while read -r m; do
	case $m in
	# scanned below: a full scan of virtio-scsi's 256 targets costs about 6 s under TCG
	scsi_mod.ko) insmod /lib/modules/$m scan=manual ;;
	sym53c8xx.ko) insmod /lib/modules/$m settle=0 ;;
	*) insmod /lib/modules/$m ;;
	esac || echo "GUEST-WARN insmod $m failed"
	[ -z "$debug" ] || echo "GUEST-DEBUG $m loaded, uptime $(up)"
done </lib/modules/load.list
# synchronous scan of targets 0-3, every LUN, on every host (run.sh puts its disks at scsi-id 0)
for h in /sys/class/scsi_host/host*; do
	for t in 0 1 2 3; do
		echo "0 $t -" >"$h/scan" 2>/dev/null
	done
done
echo "GUEST-DEVICES $(ls /sys/class/scsi_generic /sys/class/nvme 2>/dev/null | grep -v : | tr '\n' ' ')uptime $(up)"

fail=0
n=0
for t in /tests/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	name=${t##*/}
	n=$((n + 1))
	echo "GUEST-START $name"
	(
		[ ! -f "$t.env" ] || . "$t.env"
		set --
		if [ -f "$t.args" ]; then
			while read -r a; do set -- "$@" "$a"; done <"$t.args"
		fi
		exec "$t" "$@"
	)
	rc=$?
	echo "GUEST-RESULT $name $rc"
	[ $rc -eq 0 ] || fail=1
done
[ $n -gt 0 ] || { echo "GUEST-RESULT none 1"; fail=1; }
echo "GUEST-DONE status=$fail uptime $(up)"
poweroff -f

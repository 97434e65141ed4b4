# guest_lib.sh — sourced by the guest suite's shell scripts (run.sh puts it in the guest's /bin):
# the "ok|FAIL SERIAL what" check lines run.sh groups by device, and finding a disk by serial
# (device names are not stable between boots).
fail=0		# checks failed so far
nchecks=0	# checks made

check() {	# check OK SERIAL TEXT: OK is 0 for success
	nchecks=$((nchecks + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $2 $3"
	else
		echo "FAIL $2 $3"
		fail=$((fail + 1))
	fi
}

block_device() {	# block_device SERIAL: /dev/NAME of the disk with that serial
	for b in /sys/block/*; do
		if [ -f "$b/device/vpd_pg80" ]; then	# SCSI: VPD page 80, after its 4-byte header
			s=$(tail -c +5 "$b/device/vpd_pg80")
		elif [ -f "$b/device/serial" ]; then	# NVMe: the controller's serial
			s=$(cat "$b/device/serial")
		else
			continue
		fi
		s=$(echo $s)	# trim
		[ "$s" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

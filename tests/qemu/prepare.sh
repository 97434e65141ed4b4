#!/bin/bash
# prepare.sh CACHE_DIR — everything the QEMU test guest needs, cached in CACHE_DIR (a build
# directory's qemu-cache): installs qemu and the initramfs tools if missing, fetches Debian's
# kernel package, extracts an ELF vmlinux (PVH boot, ~5 s faster under TCG than the bzImage) and
# packs base.cpio (busybox, the SCSI/NVMe modules and fuse, init.sh). It runs no guest (run.sh
# does).
# Exit 0 ready, 77 the packages cannot be installed (meson: SKIP), anything else a failure.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${1:?usage: prepare.sh CACHE_DIR}
PACKAGES="qemu-system-x86 busybox-static kmod cpio xz-utils"
# in load order; the two crypto modules must precede sd_mod and nvme (T10 PI checksums); fuse
# gives /dev/fuse to avfsd (guest_avfsd.sh). A changed list changes this script's hash, which
# keys the cache (the stamp below): base.cpio is rebuilt.
MODULES="crct10dif_generic crc64_rocksoft_generic scsi_mod sd_mod sg virtio_pci virtio_scsi sym53c8xx nvme_core nvme fuse"

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
exec 9>"$CACHE/.lock"
flock 9		# one preparation at a time per cache
t0=$(date +%s.%N)
log() { printf '[prepare %5.1fs] %s\n' "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$*"; }

# 1. host packages (quickstart.sh installs them too; this covers a build without it)
missing=
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	log "apt-get install$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	if ! { apt-get install -y -q --no-install-recommends $missing >"$CACHE/apt.log" 2>&1 ||
	       { apt-get update -q >>"$CACHE/apt.log" 2>&1 &&
		 apt-get install -y -q --no-install-recommends $missing >>"$CACHE/apt.log" 2>&1; }; }; then
		echo "SKIP: cannot install$missing (no network or apt failed, see $CACHE/apt.log)"
		exit 77
	fi
fi

# 2. Debian's kernel package, downloaded once
kernel_version() {	# the linux-image-X.Y.Z-N-amd64 that linux-image-amd64 depends on
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}
download_kernel() {
	local ver tmp
	ver=$(kernel_version)
	[ -n "$ver" ] || return 1
	log "apt-get download $ver"
	tmp=$(mktemp -d "$CACHE/dl.XXXXXX")
	if (cd "$tmp" && apt-get download -q "$ver" >"$CACHE/download.log" 2>&1); then
		mv "$tmp"/*.deb "$CACHE/"
		rmdir "$tmp"
		return 0
	fi
	rm -rf "$tmp"
	return 1
}
if ! ls "$CACHE"/linux-image-*-amd64_*.deb >/dev/null 2>&1; then
	# stale or absent package lists name a version the mirror no longer has: update and retry
	download_kernel || { apt-get update -q >"$CACHE/update.log" 2>&1 && download_kernel; } || {
		echo "prepare.sh: cannot download Debian's kernel package (see $CACHE/download.log)" >&2
		exit 1
	}
fi
deb=$(ls "$CACHE"/linux-image-*-amd64_*.deb | head -1)
stamp="$CACHE/.stamp-$(basename "$deb")-$(cat "$0" "$HERE/init.sh" | sha1sum | cut -c1-12)"
if [ -f "$stamp" ] && [ -f "$CACHE/base.cpio" ] && [ -f "$CACHE/kernel.path" ]; then
	log "up to date ($(basename "$deb"))"
	exit 0
fi
rm -f "$CACHE"/.stamp-*

# 3. unpack the kernel and the modules the guest needs
K=$CACHE/kpkg
rm -rf "$K"
mkdir -p "$K"
log "unpack $(basename "$deb")"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$K" --wildcards './boot/vmlinuz-*' \
	'./lib/modules/*/modules.*' './lib/modules/*/kernel/drivers/scsi/*' \
	'./lib/modules/*/kernel/drivers/nvme/*' './lib/modules/*/kernel/drivers/virtio/*' \
	'./lib/modules/*/kernel/crypto/*' './lib/modules/*/kernel/lib/*' \
	'./lib/modules/*/kernel/block/*' './lib/modules/*/kernel/fs/fuse/*'
kver=$(ls "$K/lib/modules" | head -1)
vmlinuz=$(ls "$K"/boot/vmlinuz-* | head -1)
depmod -b "$K" "$kver"

# 4. the ELF vmlinux inside the bzImage's XZ stream, if it has the PVH entry note QEMU boots by
cp "$vmlinuz" "$CACHE/vmlinuz"
kernel=vmlinuz
if python3 - "$vmlinuz" "$CACHE/vmlinux" <<'PY'
import lzma, sys
data = open(sys.argv[1], 'rb').read()
pos = data.find(b'\xfd7zXZ\x00')
while pos >= 0:
    try:
        out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[pos:])
        if out[:4] == b'\x7fELF':
            open(sys.argv[2], 'wb').write(out)
            sys.exit(0)
    except lzma.LZMAError:
        pass
    pos = data.find(b'\xfd7zXZ\x00', pos + 1)
sys.exit(1)
PY
then
	# XEN_ELFNOTE_PHYS32_ENTRY (18): readelf names it only in newer binutils
	if readelf -n "$CACHE/vmlinux" | grep -q 'Unknown note type: (0x00000012)\|PHYS32_ENTRY'; then
		kernel=vmlinux
	else
		log "vmlinux has no PVH entry note: booting the bzImage"
	fi
fi
[ "$kernel" = vmlinux ] || rm -f "$CACHE/vmlinux"
log "kernel $kver: $kernel"

# 5. base initramfs: busybox, the modules with their dependencies first, init.sh
R=$CACHE/root
rm -rf "$R"
mkdir -p "$R"/{bin,proc,sys,dev,tmp,tests,lib/modules}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"	# init.sh installs the other applets
install -m 0755 "$HERE/init.sh" "$R/init"
M=$K/lib/modules/$kver
declare -A seen=()
add_module() {	# add_module NAME: its dependencies, then itself, to load.list
	local re line path dep
	re=$(echo "$1" | sed 's/[-_]/[-_]/g')	# file names may have '-' where module names have '_'
	line=$(grep -E "(^|/)$re\.ko(\.xz)?:" "$M/modules.dep" | head -1) || true
	if [ -z "$line" ]; then
		grep -qE "/$re\.ko" "$M/modules.builtin" && return 0
		echo "prepare.sh: module $1 not in $kver" >&2
		exit 1
	fi
	path=${line%%:*}
	[ -z "${seen[$path]:-}" ] || return 0
	for dep in ${line#*:}; do
		dep=$(basename "$dep")
		add_module "${dep%%.ko*}"
	done
	seen[$path]=1
	case $path in
	*.xz) xz -dc "$M/$path" >"$R/lib/modules/$(basename "${path%.xz}")" ;;
	*) cp "$M/$path" "$R/lib/modules/" ;;
	esac
	basename "${path%.xz}" >>"$R/lib/modules/load.list"
}
: >"$R/lib/modules/load.list"
for m in $MODULES; do
	add_module "$m"
done
log "modules: $(tr '\n' ' ' <"$R/lib/modules/load.list")"
(cd "$R" && find . | sort | cpio -o -H newc --quiet -R 0:0) >"$CACHE/base.cpio.tmp"
mv "$CACHE/base.cpio.tmp" "$CACHE/base.cpio"
echo "$kernel" >"$CACHE/kernel.path"
rm -rf "$R" "$K"
touch "$stamp"
log "base.cpio $(du -h "$CACHE/base.cpio" | cut -f1): ready"

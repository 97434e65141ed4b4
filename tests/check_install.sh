#!/bin/bash
# check_install.sh — what `meson install` puts on a machine (issue 17, Done when 4): into a
# DESTDIR, the programs (system tools in sbin, the mount helpers in /sbin where mount(8) looks,
# the examples in libexec), libavio with its header and pkg-config file (a program is built
# against them), every man page (each rendered with MANWIDTH=80 man --warnings: no warning),
# the systemd unit (systemd-analyze verify: no complaint) and the tmpfiles.d entry; and every
# installed program answers --version and --help.
# usage: check_install.sh BUILD_DIR
set -u
BUILD=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/checks.sh"

for t in meson man systemd-analyze pkg-config cc; do
	command -v $t >/dev/null || avfs_skip "no $t (quickstart.sh installs it)"
done
D=$(mktemp -d /var/tmp/avfs-install-XXXXXX)
trap 'rm -rf "$D"' EXIT
check "meson install --destdir" meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet
prefix=$(meson introspect "$BUILD" --buildoptions |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
P=$D$prefix
echo "installed under $D (prefix $prefix):"
(cd "$D" && find . ! -type d | sort | sed 's/^\./  /')

has() {	# has PATH...: each exists (file or symlink) and is not empty
	local f
	for f in "$@"; do
		[ -s "$f" ] || { echo "  missing: ${f#"$D"}"; return 1; }
	done
}
check "system tools in sbin" has "$P"/sbin/{avfsd,mkfs.avfs,fsck.avfs,hddemu,hddemu-attach}
check "tools in bin" has "$P"/bin/{avfs-admin,avfs-sim}
check "mount helpers in /sbin" has "$D"/sbin/{mount.avfs,umount.fuse.avfs}
check "examples: programs and sources" has "$P"/libexec/avfs/{dvr,rdrt} \
	"$P"/share/doc/avfs/examples/{dvr.c,rdrt.c}
lib=$(find "$P" -name 'libavio.so.1' | head -1)
pc=$(find "$P" -name avio.pc | head -1)
check "libavio, its header and avio.pc" has "$lib" "$P"/include/avio.h "$pc"
unit=$(find "$P" -name 'avfsd@.service' | head -1)
check "systemd unit and tmpfiles.d entry" has "$unit" "$P"/lib/tmpfiles.d/avfs.conf
check "tmpfiles.d makes /run/avfs" grep -q '^d /run/avfs ' "$P"/lib/tmpfiles.d/avfs.conf

# a client built against what was installed: the header, the library, pkg-config's flags
cat >"$D/client.c" <<'C'
#include <avio.h>
#include <stdio.h>
int main(void) { void *b = avfs_buf_alloc(4096); printf("libavio ok\n"); avfs_buf_free(b); return 0; }
C
built() {
	local flags san=
	# a sanitizer build's library wants its runtime first: the client is built the same way
	ldd "$lib" | grep -q libasan && san="-fsanitize=address,undefined"
	flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$P" --cflags --libs avio) &&
		cc $san -o "$D/client" "$D/client.c" $flags &&
		LD_LIBRARY_PATH=$(dirname "$lib") "$D/client" | grep -q 'libavio ok'
}
check "a program built with pkg-config --cflags --libs avio runs" built

# every man page: there, and rendered without a warning
pages=(man1/avfs-sim.1 man3/libavio.3 man8/avfsd.8 man8/mount.avfs.8 man8/umount.fuse.avfs.8
	man8/mkfs.avfs.8 man8/fsck.avfs.8 man8/avfs-admin.8 man8/hddemu.8 man8/hddemu-attach.8)
for p in "${pages[@]}"; do
	f=$P/share/man/$p
	renders() {
		local err lines
		[ -e "$f" ] || { echo "  missing: $p"; return 1; }
		err=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >"$D/page.txt")
		lines=$(wc -l <"$D/page.txt")
		[ -z "$err" ] || echo "  $p: $err"
		[ -z "$err" ] && [ "$lines" -gt 20 ]
	}
	check "man page $p renders without warnings" renders
done
# the section 8 pages reach each other as `man NAME` does
check "man -w finds avfsd(8) in the installed tree" \
	bash -c "MANPATH='$P/share/man' man -w 8 avfsd | grep -q avfsd.8"

# the unit, as systemd reads it: an instance, its ExecStart and its man pages found in DESTDIR
verify() {
	local v=$D/unit out
	mkdir -p "$v" "$D/etc/avfs"
	printf 'DEVICE=/var/tmp/video.img\nOPTIONS=allow_other,noatime\n' >"$D/etc/avfs/srv-video.conf"
	sed -e "s#$prefix/sbin/#$P/sbin/#g" -e "s#[^ =]*/avfs/%i.conf#$D/etc/avfs/%i.conf#g" \
		"$unit" >"$v/avfsd@.service"
	ln -s avfsd@.service "$v/avfsd@srv-video.service"
	out=$(MANPATH=$P/share/man systemd-analyze verify "$v/avfsd@srv-video.service" 2>&1)
	local rc=$?
	[ -z "$out" ] || echo "$out" | sed 's/^/  /'
	[ $rc = 0 ] && [ -z "$out" ]
}
check "systemd-analyze verify avfsd@srv-video.service: no complaint" verify
check "the unit is Type=notify and runs avfsd in the foreground" \
	bash -c "grep -q '^Type=notify\$' '$unit' && grep -q '^ExecStart=$prefix/sbin/avfsd --foreground ' '$unit'"

# every program: --version and --help, exit 0
export LD_LIBRARY_PATH=$(dirname "$lib")
for prog in "$P"/sbin/{avfsd,mkfs.avfs,fsck.avfs,hddemu,hddemu-attach} "$P"/bin/{avfs-admin,avfs-sim} \
	"$D"/sbin/{mount.avfs,umount.fuse.avfs} "$P"/libexec/avfs/{dvr,rdrt}; do
	name=$(basename "$prog")
	answers() {
		local v
		v=$("$prog" --version 2>&1) || { echo "  $name --version: $v"; return 1; }
		case $v in *[0-9].[0-9]*) ;; *) echo "  $name --version: '$v'"; return 1 ;; esac
		"$prog" --help >/dev/null 2>&1 || { echo "  $name --help failed"; return 1; }
	}
	check "$name --version and --help" answers
done
avfs_summary

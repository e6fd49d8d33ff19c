#!/usr/bin/env bash
# mmdebstrap --extract-hook for the image's root filesystem ($1: the extracted tree). Runs on the
# build machine, not in the tree: the tree has no shell.
#
# The extract variant unpacks what --include names plus its dependencies, and some of those exist
# only for maintainer scripts the image never runs (ca-certificates and tzdata depend on debconf,
# which pre-depends on perl-base; ca-certificates on the openssl command). Their files go, so the
# image has no interpreter besides Node. The variant runs no maintainer scripts and keeps no dpkg
# database, so the file lists come from the .debs themselves, still in /var/cache/apt/archives.
set -euo pipefail
root="$1"
drop=" debconf perl-base openssl "

for deb in "$root"/var/cache/apt/archives/*.deb; do
  pkg=$(dpkg-deb --field "$deb" Package)
  [[ "$drop" == *" $pkg "* ]] || continue
  # Files and symlinks only: the directories are shared with the packages that stay.
  dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./||' | while read -r path; do
    [ -n "$path" ] && { [ -f "$root/$path" ] || [ -L "$root/$path" ]; } && rm -f "$root/$path"
  done
done

# chrt from util-linux, alone: the mapping workers put their threads under SCHED_IDLE with it
# (api/mapping/thread-priority.ts), so that a tenant's expression never delays the thread that
# answers requests. It needs only libc; the rest of util-linux (and its libraries) stays out. The
# .deb comes from the same mirror and release, through mmdebstrap's own apt configuration.
debs="$(mktemp -d)"
(cd "$debs" && APT_CONFIG="$MMDEBSTRAP_APT_CONFIG" apt-get download --quiet=2 -o APT::Sandbox::User=root util-linux)
dpkg-deb --fsys-tarfile "$debs"/util-linux_*.deb | tar -x -C "$root" ./usr/bin/chrt
rm -rf "$debs"

# What update-ca-certificates would write (it is a shell script run by the postinst): every
# certificate ca-certificates ships, concatenated in a fixed order. Node has its own copy of the
# Mozilla store; the bundle serves --use-openssl-ca, NODE_EXTRA_CA_CERTS-style setups and the
# Go binaries (nats-server, Alertmanager) the test cluster builds on the same base.
mkdir -p "$root/etc/ssl/certs"
find "$root/usr/share/ca-certificates" -name '*.crt' -print0 | LC_ALL=C sort -z | xargs -0 cat > "$root/etc/ssl/certs/ca-certificates.crt"

# The users the image runs as (the Dockerfile's and the chart's 65532, named like distroless'
# nonroot), so tools that look a uid up find a name and a home.
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nonroot:x:65532:' > "$root/etc/group"
printf '%s\n' 'hosts: files dns' > "$root/etc/nsswitch.conf"
ln -sf /usr/share/zoneinfo/Etc/UTC "$root/etc/localtime"
echo 'Etc/UTC' > "$root/etc/timezone"
mkdir -p "$root/home/nonroot" "$root/root" "$root/tmp"
chown 65532:65532 "$root/home/nonroot"
chmod 1777 "$root/tmp"

# Documentation and locales no process reads; the copyright files stay (licences travel with the binaries).
find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete 2>/dev/null || true
rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/locale"
# Leftovers of the dropped packages' directories, if now empty.
find "$root/usr/share/perl5" "$root/usr/lib/x86_64-linux-gnu/perl-base" "$root/usr/share/debconf" "$root/etc/perl" \
  -depth -type d -empty -delete 2>/dev/null || true
# mmdebstrap copies the build machine's; the kubelet (or docker) mounts the pod's own.
rm -f "$root/etc/resolv.conf" "$root/etc/hostname" "$root/usr/sbin/update-ca-certificates"
# Every file this hook wrote or changed gets SOURCE_DATE_EPOCH as its time (the packages' files keep
# the times in the .debs), so two builds give the same tar.
find "$root" -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +

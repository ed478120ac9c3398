#!/usr/bin/env bash
# Makes the base image the Dockerfile builds FROM when no registry can be reached: a Debian root
# filesystem made with debootstrap, Debian's nodejs 20 (trixie's; bookworm's is 18) and npm from
# the npm registry (the official node images ship npm the same way), a `node` user with uid 1000
# as theirs has, imported with `podman import`.
#   deploy/container/base-image.sh [TAG]     prints the tag; does nothing if the image exists
# The root filesystem's packages are cached in ${BATCHLINE_CACHE:-~/.cache/batchline}/debs.
set -euo pipefail

tag=${1:-localhost/batchline-base:node20-trixie}
suite=trixie
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
npm_version=${NPM_VERSION:-10.9.9}
cache=${BATCHLINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/batchline}
podman=(podman --runtime /usr/sbin/runc --cgroup-manager cgroupfs)

if "${podman[@]}" image exists "$tag"; then
  echo "$tag"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

mkdir -p "$cache/debs"
work=$(mktemp -d "${TMPDIR:-/tmp}/batchline-base.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

echo "debootstrap $suite (minbase, nodejs) from $mirror ..." >&2
debootstrap --variant=minbase --include=nodejs,ca-certificates --cache-dir="$cache/debs" \
  "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }

# npm as published on the npm registry: one tarball with its dependencies bundled.
(cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work/npm-$npm_version.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --create-home --shell /bin/bash node
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/* "$rootfs"/tmp/*

tar --numeric-owner -C "$rootfs" -cf - . \
  | "${podman[@]}" import --change 'CMD ["node"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$tag" >/dev/null
echo "$tag"

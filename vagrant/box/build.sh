#!/usr/bin/env bash
# Build the `skiff-bookworm` libvirt box from Debian packages, with no box
# download: mmdebstrap a Debian bookworm root (systemd, sshd, the packages
# `make deps` installs, a kernel and initrd), write it into an ext4 filesystem
# image (mkfs.ext4 -d: no loop device, no mount), convert that to qcow2, and
# pack it with the kernel and initrd, which the box's own Vagrantfile boots
# directly (libvirt direct kernel boot: no boot loader in the image).
# The image also holds a wheelhouse of skiff's Python dependencies at
# /opt/skiff/wheels and a pip.conf that installs only from it, so that
# provisioning (`make deps venv`) needs no network.
#
# Idempotent and cached by its inputs: the box file is named by a hash of
# the recipe (RECIPE below, customize.sh, Vagrantfile.box), the apt package list, pyproject.toml and the insecure key; a
# box with that hash is reused, and `vagrant box add` runs only when Vagrant
# does not hold that hash already.
#
# Usage: build.sh [--print-path]      (as root; `make -C vagrant box`)
# Env:   SKIFF_VM_CACHE (default /var/cache/skiff/vm), SKIFF_BOX_NAME
#        (default skiff-bookworm), SKIFF_MIRROR (default: the host's first
#        Debian mirror, else deb.debian.org), SKIFF_BOX_DISK (default 8G).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${SKIFF_VM_CACHE:-/var/cache/skiff/vm}
NAME=${SKIFF_BOX_NAME:-skiff-bookworm}
DISK=${SKIFF_BOX_DISK:-8G}
PYTHON=${PYTHON:-python3}

# Bump when the image steps below change (the cache key holds it, with
# customize.sh, the box's Vagrantfile, the package lists, pyproject.toml and
# the key; not this whole file, so that a change of its other parts does not
# cost a rebuild).
RECIPE=skiff-box-1

die() { echo "box/build.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap and mkfs need it)"
for tool in mmdebstrap mkfs.ext4 qemu-img vagrant; do
    command -v "$tool" >/dev/null || die "$tool missing: run 'make deps-vm' at the repository root"
done

# The packages: what `make deps` installs (the Makefile's APT_RUN), plus
# what a Vagrant box needs to boot and be reached.
APT_RUN=$(make -s -C "$REPO" --no-print-directory print-apt-run)
BOX_PKGS="linux-image-amd64 initramfs-tools systemd systemd-sysv udev dbus
openssh-server sudo rsync netbase less"
KEY_PUB=$(find /usr/share/rubygems-integration /usr/share/vagrant /opt/vagrant \
    -path '*/keys/vagrant.pub' 2>/dev/null | head -n1 || true)
[ -n "$KEY_PUB" ] || die "Vagrant's insecure public key (keys/vagrant.pub) not found: is vagrant installed?"

HASH=$( { echo "$RECIPE"; cat "$HERE/customize.sh" "$HERE/Vagrantfile.box"; echo "$APT_RUN $BOX_PKGS"; cat "$REPO/pyproject.toml" "$KEY_PUB"; } \
    | sha256sum | cut -c1-16)
BOX="$CACHE/$NAME-$HASH.box"

if [ "${1:-}" = "--print-path" ]; then
    echo "$BOX"
    exit 0
fi

mkdir -p "$CACHE"
if [ ! -s "$BOX" ]; then
    WORK=$(mktemp -d "$CACHE/build.XXXXXX")
    # On any exit: unmount what an interrupted mmdebstrap left mounted in the
    # root (proc, sys, dev/pts), deepest first, then remove the work dir.
    cleanup() {
        findmnt -n -l -o TARGET | grep "^$WORK/" | sort -r | xargs -r -n1 umount -l || true
        rm -rf --one-file-system "$WORK"
    }
    trap cleanup EXIT
    trap 'exit 1' INT TERM
    MIRROR=${SKIFF_MIRROR:-$(grep -h -o -m1 -E 'https?://[^ ]+/debian/?$' \
        /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n1 || true)}
    MIRROR=${MIRROR:-http://deb.debian.org/debian}

    echo "box/build.sh: wheelhouse of skiff's Python dependencies"
    "$PYTHON" - "$REPO/pyproject.toml" > "$WORK/requirements.txt" <<'PY'
import sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))
reqs = p["project"]["dependencies"] + p["project"]["optional-dependencies"]["dev"]
reqs += p["build-system"]["requires"] + ["pip"]
print("\n".join(reqs))
PY
    "$PYTHON" -m pip download -q --only-binary=:all: --dest "$WORK/wheels" \
        -r "$WORK/requirements.txt"

    echo "box/build.sh: Debian bookworm root from $MIRROR"
    # shellcheck disable=SC2086  # word-split package lists on purpose
    mmdebstrap --variant=minbase --mode=root \
        --include="$(echo $APT_RUN $BOX_PKGS | tr ' ' ',')" \
        --customize-hook="$HERE/customize.sh \"\$1\" '$KEY_PUB' '$WORK/wheels'" \
        bookworm "$WORK/root" "deb $MIRROR bookworm main" \
        "deb $MIRROR bookworm-updates main"

    echo "box/build.sh: disk image"
    mkdir "$WORK/box"
    cp -L "$WORK/root/vmlinuz" "$WORK/box/vmlinuz"
    cp -L "$WORK/root/initrd.img" "$WORK/box/initrd.img"
    mkfs.ext4 -q -L skiff-root -d "$WORK/root" "$WORK/root.raw" "$DISK"
    qemu-img convert -c -f raw -O qcow2 "$WORK/root.raw" "$WORK/box/box.img"
    rm -f "$WORK/root.raw"
    size_gb=$(( $(qemu-img info --output=json "$WORK/box/box.img" \
        | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["virtual-size"])') / 1024 / 1024 / 1024 ))
    printf '{"provider": "libvirt", "format": "qcow2", "virtual_size": %d}\n' "$size_gb" \
        > "$WORK/box/metadata.json"
    cp "$HERE/Vagrantfile.box" "$WORK/box/Vagrantfile"
    tar -C "$WORK/box" -cf "$BOX.tmp" metadata.json Vagrantfile box.img vmlinuz initrd.img
    mv -f "$BOX.tmp" "$BOX"
    # Boxes of other inputs are of no use any more.
    find "$CACHE" -maxdepth 1 -name "$NAME-*.box" ! -name "$(basename "$BOX")" -delete
    echo "box/build.sh: built $BOX"
else
    echo "box/build.sh: cached $BOX"
fi

# Add it to Vagrant unless Vagrant holds this very build (the hash is
# recorded next to the box Vagrant keeps).
VHOME=${VAGRANT_HOME:-$HOME/.vagrant.d}
MARK="$VHOME/boxes/$NAME/0/libvirt/skiff-build-hash"
if [ "$(cat "$MARK" 2>/dev/null || true)" != "$HASH" ]; then
    # (from / : in a directory with a Vagrantfile, vagrant would make .vagrant/)
    (cd / && vagrant box add --force --name "$NAME" "$BOX")
    # A new box gets a new base volume in the libvirt pool (vagrant-libvirt
    # names it by the box's time); the old ones are of no use any more.
    find "$CACHE/pool" -maxdepth 1 -name "${NAME}_vagrant_box_image_*" -delete 2>/dev/null || true
    echo "$HASH" > "$MARK"
fi
echo "box/build.sh: box $NAME ready ($HASH)"

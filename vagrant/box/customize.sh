#!/usr/bin/env bash
# mmdebstrap customize hook for vagrant/box/build.sh: make the root a
# Vagrant box. Usage: customize.sh ROOT INSECURE_PUBKEY WHEELHOUSE
set -euo pipefail

ROOT=${1:?root}
KEY=${2:?insecure public key}
WHEELS=${3:?wheelhouse}

# The root filesystem is the whole disk (/dev/vda, no partition table),
# booted directly by libvirt with the kernel and initrd next to the box.
cat > "$ROOT/etc/fstab" <<'CONF'
LABEL=skiff-root / ext4 defaults,errors=remount-ro 0 1
CONF
echo skiff > "$ROOT/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 skiff\n' > "$ROOT/etc/hosts"

# Networking: systemd-networkd, DHCP on the first NIC (the provider's
# management network); Vagrant configures the private network itself
# (its Debian guest plugin writes networkd files when networkd is active).
cat > "$ROOT/etc/systemd/network/10-mgmt.network" <<'CONF'
[Match]
Name=eth0

[Network]
DHCP=ipv4
CONF
chroot "$ROOT" systemctl enable systemd-networkd.service serial-getty@ttyS0.service

# sshd: host keys are made at first boot, so VMs from one box differ (the
# drop-in replaces the unit's ExecStartPre, `sshd -t`, which needs them).
rm -f "$ROOT"/etc/ssh/ssh_host_*
mkdir -p "$ROOT/etc/systemd/system/ssh.service.d"
cat > "$ROOT/etc/systemd/system/ssh.service.d/10-host-keys.conf" <<'CONF'
[Service]
ExecStartPre=
ExecStartPre=/usr/bin/ssh-keygen -A
ExecStartPre=/usr/sbin/sshd -t
CONF
echo 'UseDNS no' > "$ROOT/etc/ssh/sshd_config.d/10-vagrant.conf"

# Vagrant's convention: user vagrant, password-less sudo, the insecure key.
chroot "$ROOT" useradd --create-home --shell /bin/bash vagrant
echo 'vagrant ALL=(ALL) NOPASSWD: ALL' > "$ROOT/etc/sudoers.d/vagrant"
chmod 0440 "$ROOT/etc/sudoers.d/vagrant"
install -d -m 0700 -o 1000 -g 1000 "$ROOT/home/vagrant/.ssh"
install -m 0600 -o 1000 -g 1000 "$KEY" "$ROOT/home/vagrant/.ssh/authorized_keys"

# skiff's Python dependencies, offline: pip installs only from the wheelhouse.
install -d "$ROOT/opt/skiff/wheels"
cp "$WHEELS"/* "$ROOT/opt/skiff/wheels/"
cat > "$ROOT/etc/pip.conf" <<'CONF'
[global]
no-index = true
find-links = /opt/skiff/wheels
disable-pip-version-check = true
# No byte-compiling at install: under TCG it costs minutes for modules most
# daemons never import (Python compiles what it imports, on first use).
no-compile = true
CONF

# No apt lists or caches in the image.
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin

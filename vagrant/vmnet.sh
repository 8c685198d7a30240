#!/usr/bin/env bash
# The VM cluster's network namespace: libvirtd and virtlogd run inside one
# network namespace made for the cluster (default `skiff-vm`), so its
# libvirt networks, bridges and the VMs' taps exist only there; both libvirt
# networks are isolated (no <forward>: no NAT, no route to the host's
# uplink), and vagrant and its ssh run inside it too (`vmnet.sh exec`).
# The host reaches the VMs only through this namespace.
#
#   vmnet.sh up         make the namespace, start virtlogd + libvirtd (under
#                       nice -n 10: their qemu children inherit it), create
#                       the networks and the storage pool (all transient)
#   vmnet.sh exec CMD   run CMD inside the namespace (vagrant, ssh, curl ...)
#   vmnet.sh down       destroy and undefine every domain of this libvirtd,
#                       the networks, the pool (its box volume stays: cache),
#                       stop the daemons by the pids recorded at `up`, delete
#                       the namespace. Safe to repeat, also after a failed up.
#   vmnet.sh driver     print the libvirt domain type to use: kvm when the box's
#                       kernel boots under KVM, else qemu (TCG), and on stderr
#                       why (what the bounded probe boots saw); cached per box
#
# Env: SKIFF_VM_NS (namespace), SKIFF_NET (private network's first three
# octets, default 192.168.56), SKIFF_MGMT_NET (the management network's, default
# 192.168.121), SKIFF_VM_CACHE (default /var/cache/skiff/vm), SKIFF_LIBVIRTD
# (the libvirtd binary).
# Names shared with the Vagrantfile: networks skiff-mgmt and skiff-private,
# pool skiff.
set -euo pipefail

NS=${SKIFF_VM_NS:-skiff-vm}
NET=${SKIFF_NET:-192.168.56}
MGMT_NET=${SKIFF_MGMT_NET:-192.168.121}
CACHE=${SKIFF_VM_CACHE:-/var/cache/skiff/vm}
STATE=/run/skiff-vm/$NS
POOL_DIR=$CACHE/pool
HERE=$(cd "$(dirname "$0")" && pwd)
LIBVIRTD=${SKIFF_LIBVIRTD:-libvirtd}

die() { echo "vmnet.sh: $*" >&2; exit 1; }
in_ns() { ip netns exec "$NS" "$@"; }
virsh_ns() { in_ns virsh -q -c qemu:///system "$@"; }

network_xml() {  # NAME BRIDGE PREFIX DHCP(yes|no)
    local dhcp=""
    if [ "$4" = yes ]; then
        dhcp="<dhcp><range start='$3.100' end='$3.254'/></dhcp>"
    fi
    # No <forward> element: an isolated network (guests reach each other and
    # the host side of the bridge, nothing else).
    echo "<network><name>$1</name><bridge name='$2' stp='off'/><ip address='$3.1' netmask='255.255.255.0'>$dhcp</ip></network>"
}

address_in_use() {  # PREFIX: a route of the host's namespace covers PREFIX.0/24
    ip -4 route show table all | awk '{print $1}' | grep -q -E "^$1\.[0-9]+(/|$)"
}

cmd_up() {
    [ "$(id -u)" = 0 ] || die "run as root"
    for tool in libvirtd virtlogd virsh qemu-system-x86_64 dnsmasq; do
        command -v "$tool" >/dev/null || die "$tool missing: run 'make deps-vm' at the repository root"
    done
    if ip netns list | grep -q -w "^$NS"; then
        die "network namespace $NS exists already (a cluster is up?): 'vagrant/vmnet.sh down' removes it"
    fi
    if [ -S /run/libvirt/libvirt-sock ] && virsh -q -c qemu:///system version >/dev/null 2>&1; then
        die "a libvirtd outside $NS serves qemu:///system already; stop it, or use it without vmnet.sh"
    fi
    for prefix in "$NET" "$MGMT_NET"; do
        if address_in_use "$prefix"; then
            die "no free address: $prefix.0/24 is routed on this host already; set SKIFF_NET (private) or SKIFF_MGMT_NET (management) to a free 192.168.X"
        fi
    done
    # From here on, a failure undoes what was made.
    trap 'echo "vmnet.sh: up failed; tearing down" >&2; cmd_down >&2' ERR
    mkdir -p "$STATE" "$POOL_DIR"
    chmod 0755 "$CACHE" "$POOL_DIR"
    ip netns add "$NS"
    echo "$NS" > "$STATE/netns"
    ip -n "$NS" link set lo up
    # Daemons inside the namespace; `ip netns exec` also gives them a /sys of
    # the namespace, where libvirt finds its bridges.
    in_ns nice -n 10 virtlogd -d -p "$STATE/virtlogd.pid"
    # libvirt checks /dev/kvm as the qemu user (libvirt-qemu, group kvm) but
    # probes QEMU as root. With the 0600 root /dev/kvm of a host without udev
    # rules (no systemd here) the two disagree, so libvirt finds its
    # capability cache invalid on every lookup and re-probes QEMU for each
    # call: creating three domains stalled for many minutes. libvirtd gets a
    # mount namespace of its own from `ip netns exec`: there a copy of the
    # device node, group kvm and 0660, covers /dev/kvm (the host's is left
    # alone; with driver qemu no guest uses it).
    local hide=":"
    if [ -c /dev/kvm ] && getent group kvm >/dev/null; then
        rm -f "$STATE/kvm"
        mknod -m 0660 "$STATE/kvm" c "$((16#$(stat -c '%t' /dev/kvm)))" \
            "$((16#$(stat -c '%T' /dev/kvm)))"
        chgrp kvm "$STATE/kvm"
        hide="mount --bind $STATE/kvm /dev/kvm"
    fi
    if ! in_ns sh -c "$hide && exec nice -n 10 $LIBVIRTD -d -p $STATE/libvirtd.pid"; then
        cmd_down >&2
        die "libvirt not running: $LIBVIRTD did not start (see /var/log/libvirt/libvirtd.log; is another libvirtd running?)"
    fi
    local i
    for i in $(seq 1 100); do
        virsh_ns version >/dev/null 2>&1 && break
        [ "$i" = 100 ] && { cmd_down >&2; die "libvirt not running: libvirtd did not answer on qemu:///system (see /var/log/libvirt/)"; }
        sleep 0.1
    done
    virsh_ns net-create /dev/stdin >/dev/null <<<"$(network_xml skiff-mgmt skiffbr-mgmt "$MGMT_NET" yes)"
    virsh_ns net-create /dev/stdin >/dev/null <<<"$(network_xml skiff-private skiffbr-priv "$NET" no)"
    virsh_ns pool-create-as skiff dir --target "$POOL_DIR" >/dev/null
    echo "vmnet.sh: namespace $NS up: libvirtd pid $(cat "$STATE/libvirtd.pid"), networks skiff-mgmt ($MGMT_NET.0/24) and skiff-private ($NET.0/24), pool $POOL_DIR"
}

stop_pid() {  # PIDFILE: SIGTERM, wait up to 10 s, SIGKILL
    local file=$1 pid i
    [ -s "$file" ] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            if [ "$i" = 100 ]; then
                kill -KILL "$pid" 2>/dev/null || true
            fi
            sleep 0.1
        done
    fi
    rm -f "$file"
}

cmd_down() {
    local dom net
    if [ -s "$STATE/libvirtd.pid" ] && virsh_ns version >/dev/null 2>&1; then
        for dom in $(virsh_ns list --all --name); do
            virsh_ns destroy "$dom" >/dev/null 2>&1 || true
            # --remove-all-storage: the VMs' own disks (the box volume is not
            # theirs: it stays in the pool as the cache).
            virsh_ns undefine "$dom" --remove-all-storage --nvram >/dev/null 2>&1 \
                || virsh_ns undefine "$dom" >/dev/null 2>&1 || true
        done
        for net in $(virsh_ns net-list --all --name); do
            virsh_ns net-destroy "$net" >/dev/null 2>&1 || true
            virsh_ns net-undefine "$net" >/dev/null 2>&1 || true
        done
        virsh_ns pool-destroy skiff >/dev/null 2>&1 || true
    fi
    stop_pid "$STATE/libvirtd.pid"
    stop_pid "$STATE/virtlogd.pid"
    # Any VM disk left in the pool (a domain that never got defined).
    find "$POOL_DIR" -maxdepth 1 -type f ! -name '*_vagrant_box_image_*' -delete 2>/dev/null || true
    if ip netns list | grep -q -w "^$NS"; then
        ip netns delete "$NS"
    fi
    rm -rf "$STATE"
    echo "vmnet.sh: namespace $NS down"
}

# The probe's marker: the last line a kernel prints when it has run all of
# its boot and finds no root disk (it then panics; panic=-1 and -no-reboot
# make QEMU exit at once). Seeing it proves the guest ran, not just started.
PROBE_MARKER='VFS: Unable to mount root fs'

# probe_boot ACCEL SECONDS KERNEL OUT: boot KERNEL (no disk, no initrd) under
# ACCEL for at most SECONDS with its serial console in OUT. Sets PROBE_SAID
# to how it went: "reached the end of its boot in N s", "printed nothing in
# N s" or "printed N console lines in N s but did not reach the end";
# returns 0 only in the first case.
probe_boot() {
    local accel=$1 bound=$2 kernel=$3 out=$4 started ms lines
    started=$(date +%s%N)
    timeout "$bound" nice -n 10 qemu-system-x86_64 -accel "$accel" -m 256 -nodefaults \
        -display none -no-reboot -serial "file:$out" -kernel "$kernel" \
        -append "console=ttyS0 panic=-1" 2> "$out.err" || true
    ms=$(( ($(date +%s%N) - started) / 1000000 ))
    lines=$(wc -l < "$out" 2>/dev/null || echo 0)
    if grep -q "$PROBE_MARKER" "$out" 2>/dev/null; then
        PROBE_SAID="reached the end of its boot in $((ms / 1000)).$(( (ms % 1000) / 100 )) s"
        return 0
    fi
    if [ "$lines" = 0 ]; then
        PROBE_SAID="printed nothing in $bound s"
    else
        PROBE_SAID="printed $lines console lines in $bound s but did not reach the end"
    fi
    if [ -s "$out.err" ]; then
        PROBE_SAID="$PROBE_SAID (qemu said: $(grep -v 'terminating on signal' "$out.err" \
            | head -n 1 | sed 's/^qemu-system-x86_64: //'))"
    fi
    return 1
}

# Which libvirt domain type runs guests here, and why: prints the driver on
# stdout and "vmnet.sh driver: DRIVER: WHY" on stderr. /dev/kvm can exist and
# still not run a guest (nested virtualisation that hangs, with no output at
# all), while TCG is merely slow: so the box's kernel is booted for real under
# KVM, bounded (SKIFF_KVM_PROBE_SECONDS, default 20; a working KVM needs about
# one), and when KVM fails the same kernel under TCG, to tell a broken KVM
# from a host that boots nothing. Cached per box under /run/skiff-vm.
cmd_driver() {
    if [ -n "${SKIFF_LIBVIRT_DRIVER:-}" ]; then
        echo "vmnet.sh driver: $SKIFF_LIBVIRT_DRIVER: set by SKIFF_LIBVIRT_DRIVER (not probed)" >&2
        echo "$SKIFF_LIBVIRT_DRIVER"
        return
    fi
    local box cached driver why work bound=${SKIFF_KVM_PROBE_SECONDS:-20}
    box=$("$HERE/box/build.sh" --print-path)
    [ -s "$box" ] || die "missing box: $box (the probe boots its kernel); build it with 'make -C vagrant box'"
    mkdir -p /run/skiff-vm
    cached=/run/skiff-vm/kvm-probe-$(basename "$box" .box)
    if [ ! -s "$cached" ]; then
        work=$(mktemp -d)
        tar -xOf "$box" vmlinuz > "$work/vmlinuz" || { rm -rf "$work"; die "$box holds no vmlinuz: rebuild it with 'make -C vagrant box'"; }
        if [ ! -c /dev/kvm ]; then
            driver=qemu why="no /dev/kvm on this host: software emulation (TCG)"
        elif [ ! -w /dev/kvm ]; then
            driver=qemu why="/dev/kvm is not writable by uid $(id -u): software emulation (TCG)"
        elif probe_boot kvm "$bound" "$work/vmlinuz" "$work/kvm.out"; then
            driver=kvm why="the box's kernel under KVM $PROBE_SAID"
        else
            why="/dev/kvm is broken: the box's kernel under KVM $PROBE_SAID"
            if ! probe_boot tcg 300 "$work/vmlinuz" "$work/tcg.out"; then
                rm -rf "$work"
                die "no way to run guests: $why, and under TCG it $PROBE_SAID"
            fi
            driver=qemu why="$why; under TCG it $PROBE_SAID: software emulation (TCG)"
        fi
        rm -rf "$work"
        printf '%s\n%s\n' "$driver" "$why" > "$cached.tmp"
        mv -f "$cached.tmp" "$cached"
    fi
    driver=$(sed -n 1p "$cached")
    echo "vmnet.sh driver: $driver: $(sed -n 2p "$cached")" >&2
    echo "$driver"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    exec) shift; in_ns "$@" ;;
    driver) cmd_driver ;;
    *) die "usage: vmnet.sh up|down|exec CMD...|driver" ;;
esac

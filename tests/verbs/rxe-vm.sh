#!/usr/bin/env bash
# rxe-vm.sh - run a job inside a throw-away QEMU VM that boots Debian's stock
# kernel with Soft-RoCE (rdma_rxe), so libibverbs programs find a real verbs device
# (rxe0) even when the host kernel has no RDMA support.
#
# The guest sees the host's whole file system read-only over 9p (chrooted into it),
# so it runs the host's own binaries/libraries (libibverbs, librxe provider, your
# test executables), plus RXE_WORK shared read-write at the same absolute path.
#
# usage:  rxe-vm.sh JOB.sh            # JOB.sh is copied into the VM, run with sh
#         rxe-vm.sh -c 'shell command'
# exit status = the job's exit status (125 = VM never reported one: timeout/panic;
# 77 = qemu, busybox or the kernel could not be had here: the caller should skip).
# Adapted for tutti from the shared recipe (docs/transport-ibverbs.md describes it).
#
# env:  RXE_WORK    dir shared rw, job's cwd          (default: $PWD)
#       RXE_CACHE   kernel/initrd cache               (default: /var/cache/rxe-vm)
#       RXE_CPU     TCG cpu model (qemu64 fastest; use max for -march=native builds)
#       RXE_SMP     vCPUs (default 1: fastest boot under TCG)    RXE_MEM (default 2G)
#       RXE_TIMEOUT seconds for the whole VM run       (default 480)
#       RXE_NETDEV  dummy | veth  (netdev under rxe0; IP 10.77.0.1/24)   RXE_MTU (1500)
#       RXE_ACCEL   tcg | kvm  (default: kvm only if /dev/kvm AND cpu has vmx/svm)
# Inside the job: device rxe0, port 1, GID index 0 = fe80:: link-local, GID index 1 =
# ::ffff:10.77.0.1 (both RoCE v2). RoCE needs GRH (is_global=1, sgid_index), LID is 0.
set -euo pipefail

JOBCMD=
case "${1:-}" in
  -c) JOBCMD=$2 ;;
  -h|--help|"") sed -n '2,24p' "$0"; exit 2 ;;
  *) JOBCMD=$(cat "$1") ;;
esac

CACHE=${RXE_CACHE:-/var/cache/rxe-vm}
WORK=$(cd "${RXE_WORK:-$PWD}" && pwd -P)
CPU=${RXE_CPU:-qemu64}; SMP=${RXE_SMP:-1}; MEM=${RXE_MEM:-2G}
TMO=${RXE_TIMEOUT:-480}; NETDEV=${RXE_NETDEV:-dummy}; MTU=${RXE_MTU:-1500}
export PATH=$PATH:/usr/sbin:/sbin
log() { echo "rxe-vm: $*" >&2; }

# ---- 1. host packages (qemu, busybox, rdma userspace) ------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
# the initramfs needs the *static* busybox (package busybox-static replaces busybox)
{ [ -x /bin/busybox ] && { ldd /bin/busybox 2>&1 || true; } | grep -qE 'not a dynamic|statically linked'; } || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v depmod >/dev/null || need+=(kmod)
command -v xz >/dev/null || need+=(xz-utils)
command -v rdma >/dev/null || need+=(iproute2)
command -v ibv_devices >/dev/null || need+=(ibverbs-utils)
[ -e /etc/libibverbs.d/rxe.driver ] || need+=(ibverbs-providers rdma-core)
skip() { log "SKIP: $*"; exit 77; }
if [ ${#need[@]} -gt 0 ]; then
  { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; } ||
    skip "missing ${need[*]} and not root with apt-get to install them (tools/setup.sh does)"
  log "apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update -qq || skip "apt-get update failed"
  timeout 480 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
    skip "apt-get install ${need[*]} failed"
fi
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"
{ mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ]; } || skip "cache dir $CACHE not writable"

# ---- 2. Debian's kernel: vmlinux (uncompressed, PVH-bootable) + modules -------------
mkdir -p "$CACHE"
kpkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ && !p {p=$2} END {print p}'; }
PKG=$(kpkg)
[ -n "$PKG" ] || { timeout 300 apt-get update -qq || true; PKG=$(kpkg); }
[ -n "$PKG" ] || skip "apt-cache knows no linux-image-amd64 (not Debian?)"
KV=${PKG#linux-image-}
K=$CACHE/$KV
if [ ! -s "$K/vmlinux" ] || [ ! -s "$K/modules.list" ]; then
  log "fetching $PKG"
  rm -rf "$K"; mkdir -p "$K"
  if ! (cd "$K" && timeout 300 apt-get download "$PKG") >/dev/null 2>&1; then
    timeout 300 apt-get update -qq || true                    # stale lists: the old ABI is gone
    PKG=$(kpkg); KV=${PKG#linux-image-}; K=$CACHE/$KV; rm -rf "$K"; mkdir -p "$K"
    (cd "$K" && timeout 300 apt-get download "$PKG") >/dev/null || skip "cannot download $PKG"
  fi
  dpkg-deb -x "$K"/*.deb "$K/root"
  depmod -b "$K/root" "$KV"
  # bzImage -> vmlinux: XZ decompression under TCG costs ~15 s per boot, so do it once here
  z=$K/root/boot/vmlinuz-$KV
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$z" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ]; then tail -c +$((off + 1)) "$z" | xz -dcq > "$K/vmlinux.tmp" 2>/dev/null || true; fi
  if [ "$(head -c4 "$K/vmlinux.tmp" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
    mv "$K/vmlinux.tmp" "$K/vmlinux"
  else
    log "could not extract vmlinux, booting the bzImage (slower)"; rm -f "$K/vmlinux.tmp"; cp "$z" "$K/vmlinux"
  fi
  # keep only the modules the VM needs (virtio/9p for the host share, rxe + rdma_cm, dummy/veth)
  mkdir -p "$K/mods"
  for m in virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe rdma_ucm dummy veth; do
    modprobe -d "$K/root" -S "$KV" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}' || true
  done | awk '!seen[$0]++' | while read -r p; do           # busybox insmod wants plain .ko
    b=$(basename "$p"); case "$b" in
      *.ko.xz) b=${b%.xz}; xz -dc "$p" > "$K/mods/$b" ;;
      *.ko.zst) b=${b%.zst}; zstd -dcq "$p" > "$K/mods/$b" ;;
      *) cp "$p" "$K/mods/$b" ;;
    esac; echo "$b"; done > "$K/modules.list"
  grep -qx rdma_rxe.ko "$K/modules.list" || { log "rdma_rxe not found in $PKG"; exit 1; }
  rm -rf "$K/root" "$K"/*.deb
fi

# ---- 3. initramfs: busybox + modules + init + the job --------------------------------
R=$(mktemp -d "$CACHE/initrd.XXXXXX")
trap 'rm -rf "$R" "$R.cpio.gz" "$R.console"' EXIT
mkdir -p "$R/bin" "$R/mods"
cp /bin/busybox "$R/bin/busybox"
cp "$K"/mods/*.ko "$R/mods/"; cp "$K/modules.list" "$R/modules.list"
printf '%s\n' "$JOBCMD" > "$R/job.sh"
cat > "$R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /host
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do insmod "/mods/$m" || echo "RXE_VM: insmod $m failed"; done
for a in $(cat /proc/cmdline); do case "$a" in rxe_*=*) eval "${a%%=*}='${a#*=}'" ;; esac; done
finish() { echo "RXE_VM_EXIT=$1"; sync; reboot -f; sleep 10; }
O=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$O,ro,cache=loose" hostroot /host || finish 124
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts; mount -t tmpfs shm /host/dev/shm
for d in /tmp /run /var/tmp; do [ -d "/host$d" ] && mount -t tmpfs tmp "/host$d"; done
mkdir -p "/host$rxe_work" 2>/dev/null; mount -t 9p -o "$O" work "/host$rxe_work" || finish 124
cp /job.sh /host/run/rxe-job.sh
hostname rxe-vm
chroot /host /bin/sh -ec "
  ip link set lo up
  if [ '$rxe_netdev' = veth ]; then
    ip link add rxenet0 type veth peer name rxenet1; ip link set rxenet1 mtu $rxe_mtu up
  else ip link add rxenet0 type dummy; fi
  ip link set rxenet0 mtu $rxe_mtu up
  ip addr add 10.77.0.1/24 dev rxenet0
  rdma link add rxe0 type rxe netdev rxenet0
" || echo "RXE_VM: rxe setup failed"
echo "RXE_VM: ready after $(cut -d' ' -f1 /proc/uptime)s of guest uptime"
chroot /host /usr/bin/env -i HOME=/tmp TERM=dumb RXE_WORK="$rxe_work" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/sh -c 'cd "$RXE_WORK" && exec /bin/sh /run/rxe-job.sh' </dev/null
finish $?
INIT
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$R.cpio.gz"

# ---- 4. boot ------------------------------------------------------------------------------
ACCEL=${RXE_ACCEL:-}
if [ -z "$ACCEL" ]; then
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; else ACCEL=tcg; fi
fi
if [ "$ACCEL" = kvm ]; then AC=(-accel kvm -cpu host); else AC=(-accel tcg -cpu "$CPU"); fi
CONSOLE=$R.console
log "booting $KV ($ACCEL, cpu=$CPU smp=$SMP) work=$WORK"
set +e
timeout "$TMO" qemu-system-x86_64 "${AC[@]}" -smp "$SMP" -m "$MEM" \
  -nodefaults -no-user-config -display none -monitor none -serial stdio -no-reboot -nic none \
  -kernel "$K/vmlinux" -initrd "$R.cpio.gz" \
  -append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off lpj=5000000 tsc=reliable no_timer_check rxe_work=$WORK rxe_netdev=$NETDEV rxe_mtu=$MTU" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$WORK,mount_tag=work,security_model=none,multidevs=remap" \
  </dev/null 2>&1 | sed -u 's/\r$//; s/\x1bc//g; s/\x1b\[[?0-9;]*[a-zA-Z]//g' | tee "$CONSOLE"
set -e
rc=$(sed -n 's/^RXE_VM_EXIT=\([0-9]*\)$/\1/p' "$CONSOLE" | tail -1)
[ -n "$rc" ] || { log "VM gave no exit status (timeout ${TMO}s or crash)"; exit 125; }
exit "$rc"

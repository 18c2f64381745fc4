#!/usr/bin/env bash
# One command from a fresh checkout to a first report: installs fio and ssdcompare (.venv), then
# runs the `quick` suite on targets that need no spare disk, and writes the HTML report.
#   as root (with zram and loop support): a zram RAM disk vs a loop device over a file in
#     ./scratch/, both made here and removed afterwards; the RAM disk shows the CPU-bound trap
#   otherwise: a 1 GiB scratch file in ./scratch/
# Extra arguments go to `ssdcompare sweep`, e.g. --devices nvme0n1,nvme1n1 --runtime 10.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
mkdir -p scratch

if [[ " $* " == *" --devices "* || " $* " == *" --devices="* ]]; then
    exec .venv/bin/ssdcompare sweep --suite quick "$@"
fi

zram="" loop="" loaded_zram=""
cleanup() {
    if [ -n "$loop" ]; then losetup --detach "$loop" 2>/dev/null || true; fi
    if [ -n "$zram" ]; then
        echo 1 > "/sys/block/$zram/reset" 2>/dev/null || true
        echo "${zram#zram}" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    fi
    rm -f scratch/quick-loop.img
    # the module was loaded here (with its own zram0): unload it again
    if [ -n "$loaded_zram" ]; then modprobe -r zram 2>/dev/null || true; fi
}
trap cleanup EXIT
if [ "$(id -u)" -eq 0 ] && [ ! -e /sys/class/zram-control ] && modprobe zram 2>/dev/null; then
    loaded_zram=1
fi
if [ "$(id -u)" -eq 0 ] && [ -e /sys/class/zram-control ] \
        && [ -e /sys/class/zram-control/hot_add ] && [ -e /dev/loop-control ]; then
    zram="zram$(cat /sys/class/zram-control/hot_add)"
    echo $((1280 * 1024 * 1024)) > "/sys/block/$zram/disksize"
    # written through, not sparse: reading a hole never reaches storage and would flatter it
    echo "writing scratch/quick-loop.img (1280 MiB) ..."
    dd if=/dev/zero of=scratch/quick-loop.img bs=4M count=320 conv=fsync status=none
    loop=$(losetup --find --show --direct-io=on scratch/quick-loop.img)
    echo "made a RAM disk /dev/$zram and a loop device $loop over scratch/quick-loop.img"
    .venv/bin/ssdcompare sweep --suite quick --devices "/dev/$zram,$loop" "$@"
else
    .venv/bin/ssdcompare sweep --suite quick --devices ./scratch/quick-test.img --size 1g "$@"
fi

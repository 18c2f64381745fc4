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

if [[ " $* " == *" --devices "* ]]; then
    exec .venv/bin/ssdcompare sweep --suite quick "$@"
fi

zram="" loop=""
cleanup() {
    if [ -n "$loop" ]; then losetup --detach "$loop" 2>/dev/null || true; fi
    if [ -n "$zram" ]; then
        echo 1 > "/sys/block/$zram/reset" 2>/dev/null || true
        echo "${zram#zram}" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    fi
    rm -f scratch/quick-loop.img
}
if [ "$(id -u)" -eq 0 ] && { [ -e /sys/class/zram-control ] || modprobe zram 2>/dev/null; } \
        && [ -e /sys/class/zram-control/hot_add ] && [ -e /dev/loop-control ]; then
    trap cleanup EXIT
    zram="zram$(cat /sys/class/zram-control/hot_add)"
    echo $((1280 * 1024 * 1024)) > "/sys/block/$zram/disksize"
    truncate -s 1280M scratch/quick-loop.img
    loop=$(losetup --find --show --direct-io=on scratch/quick-loop.img)
    echo "made a RAM disk /dev/$zram and a loop device $loop over scratch/quick-loop.img"
    .venv/bin/ssdcompare sweep --suite quick --devices "/dev/$zram,$loop" "$@"
else
    .venv/bin/ssdcompare sweep --suite quick --devices ./scratch/quick-test.img --size 1g "$@"
fi

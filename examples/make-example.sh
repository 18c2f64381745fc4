#!/usr/bin/env bash
# Re-creates examples/results/ramdisk-vs-loop and its report: a zram RAM disk and a loop
# device over a file, both made here and removed afterwards. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
out=examples/results/ramdisk-vs-loop
rm -rf "$out"
zram="zram$(cat /sys/class/zram-control/hot_add)"
img=$(mktemp -p "${TMPDIR:-/var/tmp}" ssdcompare-example.XXXXXX)
loop=""
cleanup() {
    if [ -n "$loop" ]; then losetup --detach "$loop" || true; fi
    echo 1 > "/sys/block/$zram/reset" || true
    echo "${zram#zram}" > /sys/class/zram-control/hot_remove || true
    rm -f "$img"
}
trap cleanup EXIT
echo $((1280 * 1024 * 1024)) > "/sys/block/$zram/disksize"
# written through, not sparse: reading a hole never reaches storage and would flatter it
dd if=/dev/zero of="$img" bs=4M count=320 conv=fsync status=none
loop=$(losetup --find --show --direct-io=on "$img")
.venv/bin/ssdcompare sweep --suite examples/ramdisk-vs-loop.yaml --devices "/dev/$zram,$loop" \
    --repeat 3 --out "$out"
rm -f "$out/report.html"  # the example report below is the one to read
.venv/bin/ssdcompare report "$out" -o examples/report.html --baseline "$(basename "$loop")"

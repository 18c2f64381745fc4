#!/usr/bin/env bash
# Installs what ssdcompare needs: fio, nvme-cli and smartmontools (Debian/Ubuntu packages) and
# a virtual environment in .venv with ssdcompare and its test tools. Safe to run again; it only
# adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "need root to run: $*" >&2; exit 1; fi
}

apt_packages=()
command -v fio >/dev/null || apt_packages+=(fio)
# the drives' own health logs (temperature, thermal throttling, bytes written): NVMe, SATA/SAS
command -v nvme >/dev/null || [ -x /usr/sbin/nvme ] || apt_packages+=(nvme-cli)
command -v smartctl >/dev/null || [ -x /usr/sbin/smartctl ] || apt_packages+=(smartmontools)
python3 -c 'import venv, ensurepip' 2>/dev/null || apt_packages+=(python3-venv)
if [ "${SSDCOMPARE_TEST_DEPS:-0}" = 1 ]; then
    # the tests open the report in a real browser and make filesystems on loop devices
    command -v chromium >/dev/null || apt_packages+=(chromium)
    command -v mkfs.ext4 >/dev/null || apt_packages+=(e2fsprogs)
    command -v losetup >/dev/null && command -v blkid >/dev/null || apt_packages+=(util-linux)
    command -v mount >/dev/null || apt_packages+=(mount)
    # partition tables on loop devices (sfdisk), and waiting for udev to see them (udevadm)
    command -v sfdisk >/dev/null || apt_packages+=(fdisk)
    command -v udevadm >/dev/null || apt_packages+=(udev)
fi
if [ ${#apt_packages[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null; then
        echo "please install: ${apt_packages[*]} (no apt-get on this machine)" >&2; exit 1
    fi
    echo "installing ${apt_packages[*]} ..."
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_packages[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
echo "ready: $(fio --version), $(.venv/bin/ssdcompare --version)"

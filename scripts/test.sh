#!/usr/bin/env bash
# Runs the whole test suite. Installs what the tests need first (fio, a .venv with ssdcompare).
# The end-to-end tests make their own loop devices and RAM disks, so run as root (CI does);
# without root or fio the tests marked `root` or `fio` are skipped, with the reason.
# Arguments go to pytest, e.g. `scripts/test.sh -m "not slow"` for a quicker check.
set -euo pipefail
cd "$(dirname "$0")/.."
SSDCOMPARE_TEST_DEPS=1 scripts/install.sh >/dev/null
exec .venv/bin/python -m pytest -q "$@"

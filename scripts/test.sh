#!/usr/bin/env bash
# Runs the whole test suite. Installs what the tests need first (fio, a .venv with ssdcompare).
# The end-to-end tests make their own loop devices and RAM disks, so run as root (CI does);
# without root or fio the tests marked `root` or `fio` are skipped, with the reason.
#
# The tests run in two rounds: those not marked `serial` two more at a time than there are CPUs
# (pytest-xdist; most of them wait on fio's fixed runtime or a subprocess, not on a CPU), then
# the `serial` ones alone: they judge CPU use or timing, which a test beside them would disturb.
# Arguments go to pytest in both rounds, e.g. a file or `-x`; with a selection of your own
# (`-m "not slow"`, `-k NAME`) or `-n`, one plain pytest run does as asked.
set -euo pipefail
cd "$(dirname "$0")/.."
# compiled modules are kept (__pycache__, which git ignores): the tests start hundreds of
# Python processes, and each would otherwise compile ssdcompare and the tests' assertions anew
unset PYTHONDONTWRITEBYTECODE
SSDCOMPARE_TEST_DEPS=1 scripts/install.sh >/dev/null
pytest=(.venv/bin/python -m pytest -q)
for arg in "$@"; do
    case "$arg" in
        -m|-m*|-k|-k*|-n|-n*|--numprocesses*) exec "${pytest[@]}" "$@" ;;
    esac
done
# 5: the round had no tests (a file given that holds none of that kind)
round() { "${pytest[@]}" "$@" || { code=$?; [ "$code" -eq 5 ] || return "$code"; }; }
status=0
# --dist loadgroup: a file marked xdist_group runs on one worker, its module fixture made once
round -n "$(( $(nproc 2>/dev/null || echo 1) + 2 ))" --dist loadgroup -m "not serial" "$@" \
    || status=$?
round -m serial "$@" || status=$?
exit "$status"

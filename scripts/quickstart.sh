#!/usr/bin/env bash
# One command from a fresh checkout to a first result: installs fio and ssdcompare (.venv), then
# runs the `quick` suite against a 1 GiB scratch file in ./scratch/ (no spare disk needed).
# Pass --devices LIST to use your own targets instead, plus any other `sweep` options.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
mkdir -p scratch
devices="./scratch/quick-test.img"
if [ "${1:-}" = "--devices" ] && [ -n "${2:-}" ]; then devices="$2"; shift 2; fi
exec .venv/bin/ssdcompare plan --suite quick --devices "$devices" --size 1g "$@"

#!/usr/bin/env bash
# Build the cpu grading environment (data/envs/cpu: Debian 13 with PyTorch
# 2.x, built with debootstrap) when it is missing or out of date; reuse it
# otherwise. Used by `make run` and `make test`. Needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${NPUGRADE_BIN:-bin/npugrade}
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
start=$(date +%s)
$sudo "$bin" env build cpu --dir "${NPUGRADE_ENVS_DIR:-data/envs}"
echo "npugrade: cpu grading environment ready in $(( $(date +%s) - start ))s"

#!/usr/bin/env bash
# Install what npugrade needs to execute notebooks and run its tests, from
# Debian packages, only when something is missing.
set -euo pipefail
need=()
/usr/bin/python3 -c 'import nbconvert, nbclient, ipykernel' 2>/dev/null || need+=(jupyter-nbconvert python3-nbconvert python3-nbclient python3-ipykernel)
/usr/bin/python3 -c 'import torch' 2>/dev/null || need+=(python3-torch)
command -v bwrap >/dev/null || need+=(bubblewrap)
# debootstrap builds the cpu grading environment (npugrade env build cpu).
command -v debootstrap >/dev/null || need+=(debootstrap)
[ -x /usr/bin/jupyter ] || need+=(jupyter-core)
if [ "${NPUGRADE_NEED_POSTGRES:-}" = 1 ] && ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi
command -v runuser >/dev/null || need+=(util-linux)
# pandas, only for the tests that grade Otter-Grader's tutorial (its
# questions use it) on the host's Python.
/usr/bin/python3 -c 'import pandas' 2>/dev/null || need+=(python3-pandas)
# JupyterHub, only for the tests of signing in through a hub (its OAuth
# provider and the notebook client's token exchange).
if [ "${NPUGRADE_NEED_LINT:-}" = 1 ] && ! command -v jupyterhub >/dev/null; then
  need+=(jupyterhub)
fi
# Debian's Chromium, only for the browser tests of the web pages (chromedp).
command -v chromium >/dev/null || need+=(chromium)
# npm for Redocly's OpenAPI linter, only for make test (scripts/test.sh).
if [ "${NPUGRADE_NEED_LINT:-}" = 1 ] && ! command -v npm >/dev/null; then
  need+=(npm)
fi
install_redocly() {
  # Redocly CLI, pinned, in .tools/ (not committed); a failure (no network)
  # leaves the kin-openapi validation of the Go tests as the only check.
  [ "${NPUGRADE_NEED_LINT:-}" = 1 ] || return 0
  [ -x .tools/redocly/node_modules/.bin/redocly ] && return 0
  command -v npm >/dev/null || return 0
  echo "npugrade: installing @redocly/cli $REDOCLY_VERSION (npm) into .tools/redocly" >&2
  npm install --prefix .tools/redocly --no-audit --no-fund --loglevel=error "@redocly/cli@$REDOCLY_VERSION" >&2 ||
    echo "npugrade: could not install @redocly/cli; api/openapi.yaml is checked by the Go tests (kin-openapi) only" >&2
}
REDOCLY_VERSION=2.77.0
cd "$(dirname "$0")/.."
if [ ${#need[@]} -eq 0 ]; then
  install_redocly
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "npugrade: missing ${need[*]}; install them with your package manager" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "npugrade: installing ${need[*]} (Debian packages)" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
install_redocly

#!/usr/bin/env bash
# Install what npugrade needs to execute notebooks and run its tests, from
# Debian packages, only when something is missing.
set -euo pipefail
need=()
/usr/bin/python3 -c 'import nbconvert, nbclient, ipykernel' 2>/dev/null || need+=(jupyter-nbconvert python3-nbconvert python3-nbclient python3-ipykernel)
/usr/bin/python3 -c 'import torch' 2>/dev/null || need+=(python3-torch)
command -v bwrap >/dev/null || need+=(bubblewrap)
[ -x /usr/bin/jupyter ] || need+=(jupyter-core)
if [ "${NPUGRADE_NEED_POSTGRES:-}" = 1 ] && ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi
command -v runuser >/dev/null || need+=(util-linux)
# Debian's Chromium, only for the browser tests of the web pages (chromedp).
command -v chromium >/dev/null || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "npugrade: missing ${need[*]}; install them with your package manager" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "npugrade: installing ${need[*]} (Debian packages)" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null

#!/usr/bin/env bash
# Install the Debian/Ubuntu packages rxlab needs, only those missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config patchelf git dpkg-dev
      libgflags-dev libsnappy-dev liblz4-dev libzstd-dev libbz2-dev zlib1g-dev
      liburing-dev libaio-dev fio strace python3-venv python3-dev)
# perf: Debian calls it linux-perf, Ubuntu linux-tools-common.
if apt-cache show linux-perf >/dev/null 2>&1; then pkgs+=(linux-perf); else pkgs+=(linux-tools-common); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "rxlab: installing ${missing[*]}" >&2
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"

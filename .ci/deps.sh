#!/usr/bin/env bash
# Install the Debian/Ubuntu packages rxlab needs, only those missing.
# `deps.sh toolchains` adds clang, lld and llvm-ar of one LLVM version: the toolchain study's clang and
# clang+LTO builds (make toolchains); the tests need none of them.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config patchelf git dpkg-dev
      libgflags-dev libsnappy-dev liblz4-dev libzstd-dev libbz2-dev zlib1g-dev
      liburing-dev libaio-dev fio strace python3-venv python3-dev
      chromium    # the browser test (tests/runs/test_browser.py) drives Debian's chromium through Playwright
      texlive-latex-base texlive-latex-recommended)  # pdflatex: the paper-tables test (tests/runs/test_latex.py)

if [ "${1:-}" = toolchains ]; then
  # The newest LLVM the distribution packages with a versioned name (this VM: 19), else its default.
  llvm=""
  apt-cache show clang >/dev/null 2>&1 || ${SUDO:-$( [ "$(id -u)" -eq 0 ] || echo sudo)} apt-get update -q
  for v in 19 18 17 16 15; do
    if apt-cache show "clang-$v" >/dev/null 2>&1; then llvm=$v; break; fi
  done
  if [ -n "$llvm" ]; then pkgs=(clang-$llvm lld-$llvm llvm-$llvm); else pkgs=(clang lld llvm); fi
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

missing=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
# perf: Debian calls it linux-perf, Ubuntu linux-tools-common.
have_perf=false
if [ "${1:-}" = toolchains ]; then have_perf=true; fi
if installed linux-perf || installed linux-tools-common; then have_perf=true; fi
if [ ${#missing[@]} -eq 0 ] && $have_perf; then exit 0; fi

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
# Update first: on a new machine apt-cache knows no package before it.
$SUDO apt-get update -q
if ! $have_perf; then
  if apt-cache show linux-perf >/dev/null 2>&1; then missing+=(linux-perf); else missing+=(linux-tools-common); fi
fi
echo "rxlab: installing ${missing[*]}" >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"

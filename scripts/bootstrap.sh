#!/usr/bin/env bash
# Installs every system and Python dependency of te-mlir; safe to run repeatedly.
set -euo pipefail

LLVM_VERSION=22
APT_PACKAGES=(
  cmake ninja-build ccache git python3 python3-pip python3-venv
  "libmlir-${LLVM_VERSION}-dev" "mlir-${LLVM_VERSION}-tools"
  "llvm-${LLVM_VERSION}-dev" "llvm-${LLVM_VERSION}-tools"
  "clang-${LLVM_VERSION}" "lld-${LLVM_VERSION}"
  libgtest-dev libgmock-dev zlib1g-dev libzstd-dev libedit-dev libcurl4-openssl-dev
)
PIP_PACKAGES=(numpy ml_dtypes pytest lit nanobind)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import numpy, ml_dtypes, pytest, lit, nanobind' 2>/dev/null; then
  echo "bootstrap: installing Python packages ${PIP_PACKAGES[*]}"
  "$PYTHON" -m pip install --quiet "${PIP_PACKAGES[@]}"
fi
echo "bootstrap: dependencies are in place"

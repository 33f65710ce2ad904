#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what a fresh Debian 12 machine lacks to build and test zbkit (run as root).
# Idempotent: when every package is already installed it does nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libsqlite3-dev sqlite3
  nlohmann-json3-dev zlib1g-dev
  libboost-program-options-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  qt6-base-dev qt6-svg-dev fonts-dejavu-core fontconfig
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $EUID -ne 0 ]]; then
  echo "setup: missing packages: ${missing[*]}; run as root (or install them) and retry" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what a fresh Debian 12 machine lacks to build and test zbkit (run as root): Debian
# packages through apt, then the Python side (the PyTorch adapter and its tests) into .venv/ through
# pip, with pinned versions. Idempotent: when everything is already installed it does nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libsqlite3-dev sqlite3
  nlohmann-json3-dev zlib1g-dev
  libz3-dev
  libboost-program-options-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  qt6-base-dev qt6-svg-dev fonts-dejavu-core fontconfig
  python3 python3-venv python3-pip
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} Debian packages present"
elif [[ $EUID -ne 0 ]]; then
  echo "setup: missing packages: ${missing[*]}; run as root (or install them) and retry" >&2
  exit 1
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python: the adapter is pure Python over libzbrt (ctypes); its tests run real torch processes.
# torch 2.13.0 is the CPU build (these machines carry its wheel, so pip takes it without a
# download); other versions would fetch a multi-GB CUDA build. Pins live in one file.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${ZBKIT_VENV:-$root/.venv}"
# torchtitan's pins (requirements-torchtitan.txt) go in with --no-deps after torch, so that none of
# them can pull another torch.
requirements="$root/adapters/pytorch/requirements.txt"
titan_requirements="$root/adapters/pytorch/requirements-torchtitan.txt"
hta_requirements="$root/adapters/pytorch/requirements-hta.txt"
stamp="$venv/.zbkit-requirements"
if [[ -x "$venv/bin/python" && -f "$stamp" ]] &&
  cmp -s <(cat "$requirements" "$titan_requirements" "$hta_requirements") "$stamp"; then
  echo "setup: Python packages present in $venv"
  exit 0
fi
echo "setup: installing Python packages into $venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" 2>&1 |
  grep -v "is ignored: it is neither a file nor a directory" || true
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
  -r "$titan_requirements" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
  -r "$hta_requirements" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
# Fails loudly if the install did not work (torch still the pinned one).
"$venv/bin/python" -c "import torch, pytest, torchtitan.train, hta.trace_analysis; assert torch.__version__.startswith('2.13.0'), torch.__version__"
cat "$requirements" "$titan_requirements" "$hta_requirements" >"$stamp"

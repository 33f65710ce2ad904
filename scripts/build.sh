#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds zbkit into build/ (override with ZBKIT_BUILD_DIR), two jobs by default.
# Uses ccache when it is installed (optional: rebuilds of a second checkout reuse objects).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ZBKIT_BUILD_DIR:-$root/build}"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Batched compilation (ZBKIT_UNITY_BUILD in CMakeLists.txt) about halves a fresh build;
# ZBKIT_UNITY_BUILD=OFF scripts/build.sh compiles file by file (quicker incremental rebuilds).
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DZBKIT_UNITY_BUILD="${ZBKIT_UNITY_BUILD:-ON}" "${launcher[@]}" "$@"
cmake --build "$build_dir" -j "${ZBKIT_JOBS:-2}"

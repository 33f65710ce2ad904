#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds zbkit into build/ (override with ZBKIT_BUILD_DIR), two jobs by default.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ZBKIT_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$build_dir" -j "${ZBKIT_JOBS:-2}"

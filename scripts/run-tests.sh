#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: set up, build, run the whole test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build_dir="${ZBKIT_BUILD_DIR:-$root/build}"
"$root/scripts/check-format.sh"
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "${ZBKIT_JOBS:-2}"

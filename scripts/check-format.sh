#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if any C++ file differs from .clang-format (Debian 12's clang-format 14).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mapfile -t files < <(git ls-files '*.h' '*.cpp')
if ((${#files[@]} == 0)); then exit 0; fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/zbkit-format.log; then
  echo "check-format: these files need clang-format -i:" >&2
  grep -o '^[^:]*:' /tmp/zbkit-format.log | sort -u >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clean"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if any C++ file differs from .clang-format (Debian 12's clang-format 14), or any Python
# file from `ruff format` or fails `ruff check` (ruff pinned in adapters/pytorch/requirements.txt,
# installed into .venv/ by setup.sh; its settings in adapters/pytorch/pyproject.toml).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mapfile -t files < <(git ls-files '*.h' '*.cpp')
if ((${#files[@]} > 0)); then
  if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/zbkit-format.log; then
    echo "check-format: these files need clang-format -i:" >&2
    grep -o '^[^:]*:' /tmp/zbkit-format.log | sort -u >&2
    exit 1
  fi
  echo "check-format: ${#files[@]} C++ files clean"
fi
ruff="${ZBKIT_VENV:-$root/.venv}/bin/ruff"
if [[ ! -x "$ruff" ]]; then
  echo "check-format: no ruff at $ruff (run scripts/setup.sh)" >&2
  exit 1
fi
mapfile -t python < <(git ls-files '*.py')
config=(--config adapters/pytorch/pyproject.toml)
if ! "$ruff" format --check --quiet "${config[@]}" "${python[@]}"; then
  echo "check-format: these Python files need $ruff format:" >&2
  "$ruff" format --check "${config[@]}" "${python[@]}" 2>&1 | grep -o '^Would reformat: .*' >&2 || true
  exit 1
fi
if ! "$ruff" check --quiet "${config[@]}" "${python[@]}"; then
  echo "check-format: $ruff check found the problems above" >&2
  exit 1
fi
echo "check-format: ${#python[@]} Python files clean (ruff format, ruff check)"

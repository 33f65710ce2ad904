#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: set up, build, check formatting, that every file a document names
# exists and the structure limits (scripts/check_structure.py: sizes, import cycles, include
# layers, ARCHITECTURE.md), run the whole test suite: the C++ tests through ctest, then the PyTorch
# adapter's tests through pytest (in .venv/, see setup.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build_dir="${ZBKIT_BUILD_DIR:-$root/build}"
"$root/scripts/check-format.sh"
python3 "$root/scripts/check_doc_paths.py"
python3 "$root/scripts/check_structure.py"
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "${ZBKIT_JOBS:-2}"
# Where the time goes (the suite's budget is CI's): ctest's slowest tests, from its own timings.
cost_data="$build_dir/Testing/Temporary/CTestCostData.txt"
if [[ -f "$cost_data" ]]; then
  echo "run-tests: the 10 slowest C++ tests (seconds):"
  # awk, not head, takes the first ten: head would close the pipe early, and under pipefail
  # sort's SIGPIPE (exit 141) would end this script.
  awk 'NF == 3 { printf "  %8.2f  %s\n", $3, $1 }' "$cost_data" | sort -rn | awk 'NR <= 10'
fi

venv="${ZBKIT_VENV:-$root/.venv}"
# The Python tests find the build's zb and libzbrt through these.
export ZBKIT_ZB_BINARY="$build_dir/zb/zb"
export ZBKIT_ZBRT_LIBRARY="$build_dir/runtime/libzbrt.so"
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
if [[ ! -d "$root/adapters/pytorch/tests" ]]; then
  echo "run-tests: no Python tests yet (adapters/pytorch/tests is missing)"
  exit 0
fi
status=0
# Folders by package: library/ (zbkit), harness/ (zbkit_harness), project/ (the checks); their jobs
# live in job_scripts/. --durations: the 25 slowest, for CI's time budget. Two workers
# (pytest-xdist), each given whole modules (--dist loadscope), so that a module's fixture (the
# demo's run, the torchtitan assets) is made once: most of a test is starting processes, which
# leaves a core idle under one worker.
"$venv/bin/python" -m pytest "$root/adapters/pytorch/tests" -q -rs -p no:cacheprovider \
  -n "${ZBKIT_JOBS:-2}" --dist loadscope --durations=25 || status=$?
if ((status == 5)); then
  echo "run-tests: pytest collected no tests in adapters/pytorch/tests" >&2
fi
exit "$status"

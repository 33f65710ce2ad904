#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes zbkit's input readers with libFuzzer under ASan + UBSan (docs/reliability.md §1).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default 600 s, every target
#
# Builds build-fuzz/ with clang 14 (installs Debian's clang-14 and libclang-rt-14-dev when run as
# root and missing), then runs each target for the given time, ZBKIT_FUZZ_JOBS (default 1) at
# once, on a working corpus seeded from tests/fuzz/corpus/<target>/. An input that crashes, leaks,
# hangs (over 25 s) or breaks a round trip is written to build-fuzz/findings/<target>/; keep it in
# tests/fuzz/corpus/<target>/ once fixed, where `ctest -L fuzz` replays it in the normal build.
# Exit status: 0 when no target found anything, 1 otherwise, 2 for bad arguments.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ZBKIT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
all_targets=(costs hops schedule torch_csv chrome_trace trace_file shard store progress flight_recorder)

seconds="${1:-600}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: SECONDS_PER_TARGET must be a positive integer, got '$seconds'" >&2
  exit 2
fi
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi
for target in "${targets[@]}"; do
  if [[ ! " ${all_targets[*]} " =~ " $target " ]]; then
    echo "fuzz.sh: no fuzz target '$target' (targets: ${all_targets[*]})" >&2
    exit 2
  fi
done

if ! command -v clang++-14 >/dev/null 2>&1 ||
  ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-$(uname -m).a" >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "fuzz.sh: needs clang 14 with libFuzzer: apt-get install clang-14 libclang-rt-14-dev" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang-14 libclang-rt-14-dev >/dev/null
fi

mkdir -p "$build_dir"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DZBKIT_BUILD_FUZZERS=ON -DZBKIT_SANITIZE=address,undefined -DZBKIT_BUILD_TESTS=OFF \
  -DZBKIT_BUILD_BENCHMARKS=OFF -DZBKIT_BUILD_GUI=OFF -DZBKIT_CUDA=OFF >"$build_dir/configure.log"
cmake --build "$build_dir" -j "${ZBKIT_JOBS:-2}" --target "${targets[@]/#/fuzz_}"

# One target: its log in findings/<target>.log, its findings in findings/<target>/.
fuzz_one() {
  local target="$1" corpus="$build_dir/corpus/$1" findings="$build_dir/findings/$1"
  mkdir -p "$corpus" "$findings"
  cp -n "$root/tests/fuzz/corpus/$target"/* "$corpus"/ 2>/dev/null || true
  # Real PyTorch profiler traces (cut at -max_len: a cut gzip stream is an input too).
  if [ "$target" = trace_file ]; then cp -n "$root"/tests/data/traces/*.json.gz "$corpus"/; fi
  local status=0
  # Leak checking stays on; the 2 GiB RSS cap and 25 s per input turn a blow-up into a finding.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build_dir/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=25 \
    -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$corpus" >"$build_dir/findings/$target.log" 2>&1 ||
    status=$?
  local runs
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build_dir/findings/$target.log" |
    grep -o '[0-9]*$' | tail -1 || echo "?")
  local found
  found=$(find "$findings" -type f | wc -l)
  printf '%-13s %6s s  %10s runs  %s findings  exit %s\n' "$target" "$seconds" "$runs" "$found" \
    "$status"
  [ "$status" -eq 0 ] && [ "$found" -eq 0 ]
}

jobs="${ZBKIT_FUZZ_JOBS:-1}"
failed=0
pids=()
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: findings under $build_dir/findings/ (logs: findings/<target>.log)" >&2
fi
exit "$failed"

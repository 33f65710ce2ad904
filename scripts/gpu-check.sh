#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The injection library's check on a machine WITH an NVIDIA GPU (the CPU test suite cannot
# cover CUPTI): builds zbkit with CUDA, runs a small PyTorch job (scripts/gpu_check_job.py) plain
# and under `zb profile`, and checks
#   1. accuracy: zbkit's per-stage F/B/W (kernel busy time of each NVTX range) against the job's
#      own CUDA-event timings of the same phases, relative error <= ZBKIT_GPU_CHECK_MAX_ERROR
#      (default 0.10);
#   2. overhead: median step time with the tool over without, >= 20 steps each after warm-up,
#      <= 1 + ZBKIT_GPU_CHECK_MAX_OVERHEAD (default 0.02);
#   3. health: kernels recorded (CUPTI works), no dropped records, no "zbkit:" warning, the job's
#      exit code unchanged.
# Prints every figure. Exit: 0 all passed, 1 a check failed, 2 cannot run here (no GPU, no CUDA
# PyTorch, no CUDA Toolkit). Knobs: PYTHON, ZBKIT_BUILD_DIR, ZBKIT_GPU_CHECK_STEPS (30),
# ZBKIT_GPU_CHECK_WARMUP (5), ZBKIT_GPU_CHECK_SKIP_BUILD=1 (use an existing build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ZBKIT_BUILD_DIR:-$root/build}"
python="${PYTHON:-python3}"
steps="${ZBKIT_GPU_CHECK_STEPS:-30}"
warmup="${ZBKIT_GPU_CHECK_WARMUP:-5}"
max_error="${ZBKIT_GPU_CHECK_MAX_ERROR:-0.10}"
max_overhead="${ZBKIT_GPU_CHECK_MAX_OVERHEAD:-0.02}"

bail() {
  echo "gpu-check: cannot run: $*" >&2
  exit 2
}

# ---- Preconditions --------------------------------------------------------------------------
command -v nvidia-smi >/dev/null 2>&1 || bail "no GPU here (nvidia-smi not found)"
gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
[[ "$gpus" -ge 1 ]] || bail "nvidia-smi lists no GPU"
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  bail "no CUDA-enabled PyTorch for $python (torch missing or torch.cuda.is_available() is False)"
(( steps - warmup >= 20 )) || bail "ZBKIT_GPU_CHECK_STEPS - ZBKIT_GPU_CHECK_WARMUP must be >= 20"
workers=$(( gpus >= 2 ? 2 : 1 ))  # one pipeline stage per GPU: no two stages share a device
echo "gpu-check: $gpus GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); torch $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"

# ---- Build ----------------------------------------------------------------------------------
if [[ "${ZBKIT_GPU_CHECK_SKIP_BUILD:-0}" != 1 ]]; then
  ZBKIT_BUILD_DIR="$build_dir" "$root/scripts/build.sh" -DZBKIT_CUDA=ON -DZBKIT_BUILD_GUI=OFF ||
    bail "the CUDA build failed (is the CUDA Toolkit installed?)"
fi
zb="$build_dir/cli/zb"
library="$build_dir/profiler/inject/libzbkit_inject.so"
[[ -x "$zb" && -f "$library" ]] || bail "no $zb or $library (build with -DZBKIT_CUDA=ON)"

work="$(mktemp -d "${TMPDIR:-/tmp}/zbkit-gpu-check-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The CPU suite of the library, on this machine's driver too.
if [[ -x "$build_dir/tests/inject/zbkit_inject_tests" ]]; then
  echo "gpu-check: CPU suite of the injection library"
  "$build_dir/tests/inject/zbkit_inject_tests" --gtest_brief=1
fi

job=("$python" "$root/scripts/gpu_check_job.py" --steps "$steps" --workers "$workers")

# ---- Runs -----------------------------------------------------------------------------------
echo "gpu-check: plain run ($workers worker(s), $steps steps)"
set +e
"${job[@]}" --out "$work/plain" 2>"$work/plain.err"
plain_code=$?
echo "gpu-check: profiled run (zb profile --pp $workers --skip-iters $warmup)"
ZBKIT_INJECT_LIBRARY="$library" "$zb" profile --pp "$workers" --skip-iters "$warmup" \
  --out "$work/costs.json" --shard-dir "$work/shards" -- "${job[@]}" --out "$work/profiled" \
  >"$work/report.txt" 2>"$work/profiled.err"
profiled_code=$?
set -e
cat "$work/report.txt"
if [[ -s "$work/profiled.err" ]]; then
  echo "gpu-check: stderr of the profiled run:"
  cat "$work/profiled.err"
fi

# ---- Checks ---------------------------------------------------------------------------------
"$python" - "$work" "$workers" "$warmup" "$max_error" "$max_overhead" "$plain_code" \
  "$profiled_code" <<'EOF'
import glob, json, os, sqlite3, statistics, sys

work, workers, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
max_error, max_overhead = float(sys.argv[4]), float(sys.argv[5])
plain_code, profiled_code = int(sys.argv[6]), int(sys.argv[7])
failures = []

def load(prefix, rank):
    with open(f"{work}/{prefix}.rank{rank}.json") as f:
        return json.load(f)

if plain_code != 0 or profiled_code != plain_code:
    failures.append(f"exit codes: plain {plain_code}, profiled {profiled_code}")
warnings = [l for l in open(f"{work}/profiled.err") if l.startswith("zbkit:")]
if warnings:
    failures.append(f"{len(warnings)} zbkit warning(s): {warnings[0].strip()}")

# 1. Accuracy: zbkit's per-stage medians against the CUDA-event medians of the same run.
try:
    costs = json.load(open(f"{work}/costs.json"))["stages"]
except (OSError, ValueError, KeyError) as e:
    costs = []
    failures.append(f"no cost profile from zb profile ({e})")
print(f"{'stage':>5} {'phase':>5} {'cuda_events_ms':>15} {'zbkit_ms':>10} {'rel_error':>10}")
for rank in range(min(workers, len(costs))):
    job = load("profiled", rank)
    per_step = len(job["phase_ms"]["F"]) // len(job["step_times_s"])
    for phase in ("F", "B", "W"):
        events = job["phase_ms"][phase][warmup * per_step:]
        truth = statistics.median(events)
        got = costs[rank][phase]
        error = (got - truth) / truth
        print(f"{rank:>5} {phase:>5} {truth:>15.4f} {got:>10.4f} {error:>+10.2%}")
        if abs(error) > max_error:
            failures.append(f"stage {rank} {phase}: {error:+.2%} vs CUDA events (max {max_error:.0%})")

# 2. Overhead: median step time, profiled over plain, after warm-up.
for rank in range(workers):
    plain = statistics.median(load("plain", rank)["step_times_s"][warmup:])
    profiled = statistics.median(load("profiled", rank)["step_times_s"][warmup:])
    n = len(load("plain", rank)["step_times_s"][warmup:])
    ratio = profiled / plain
    print(f"rank {rank}: step {plain * 1e3:.3f} ms plain, {profiled * 1e3:.3f} ms profiled "
          f"({n} steps each): ratio {ratio:.4f} ({(ratio - 1):+.2%} overhead; "
          f"{1 / plain:.2f} vs {1 / profiled:.2f} steps/s)")
    if ratio > 1 + max_overhead:
        failures.append(f"rank {rank}: step-time overhead {(ratio - 1):+.2%} (max {max_overhead:.0%})")

# 3. Health of the shards: CUPTI recorded kernels, nothing dropped.
for path in sorted(glob.glob(f"{work}/shards/*.zbshard")):
    db = sqlite3.connect(path)
    kernels = db.execute("SELECT COUNT(*) FROM activities WHERE kind = 0").fetchone()[0]
    launches = db.execute("SELECT COUNT(*) FROM launches").fetchone()[0]
    ranges = db.execute("SELECT COUNT(*) FROM ranges").fetchone()[0]
    dropped = db.execute("SELECT dropped_records FROM process").fetchone()[0]
    print(f"{os.path.basename(path)}: {ranges} ranges, {kernels} kernels, {launches} launches, "
          f"{dropped} dropped")
    if kernels == 0 and "rank" in os.path.basename(path):
        failures.append(f"{path}: no kernels recorded (CUPTI not working?)")
    if dropped:
        failures.append(f"{path}: {dropped} records dropped")

if failures:
    print("gpu-check: FAILED")
    for f in failures:
        print("  - " + f)
    sys.exit(1)
print("gpu-check: all checks passed")
EOF

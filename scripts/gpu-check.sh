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
#      exit code unchanged;
#   4. the bundled pipelining job (adapters/pytorch/examples/train_pipelining.py, ZBVZeroBubble)
#      on CUDA/NCCL under `zb profile --torch`: every stage's F/B/W measured, kernels attributed,
#      the V layout and the class recorded, per-block costs for every block. It needs one GPU per
#      rank (NCCL refuses two ranks on one device): with one GPU it is skipped, and says so; on
#      any GPU, one block's per-block costs timed with CUDA synchronisation;
#   5. zbkit's CSV in this machine's torch (which need not be the 2.13.0 the CPU suite pins): the
#      shim and export tests (pytest, where this PYTHON has it) and `zb rehearse` on the committed
#      4-rank profile (emulated compute over gloo: it needs no GPU; it checks the orders, the
#      runtime and the network stack of this machine), every row within 5 % of its prediction;
#   6. another CUPTI subscriber in the job (tests/inject/cupti_rival.cpp): the job's output and exit
#      code as without zbkit, at most one "zbkit:" warning;
#   7. activation checkpointing on CUDA: a checkpointed block recomputed once under zbkit's split
#      and torch's (zbkit.checkpointing through the device thread), with the fused gradients.
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
zb="$build_dir/zb/zb"
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
set +e
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
    print("gpu-check: injection library FAILED")
    for f in failures:
        print("  - " + f)
    sys.exit(1)
print("gpu-check: injection library checks passed")
EOF
status=$?
set -e

# ---- 4. The bundled job on CUDA/NCCL ---------------------------------------------------------
if (( gpus >= 2 )); then
  echo "gpu-check: bundled job, 2 ranks on 2 GPUs over NCCL, ZBVZeroBubble, zb profile --torch"
  set +e
  "$zb" profile --torch --torch-skip 1 --torch-iters 3 --pp 2 --json --out "$work/bundled.json" \
    --shard-dir "$work/bundled" -- "$python" -m torch.distributed.run --nproc-per-node 2 \
    "$root/adapters/pytorch/examples/train_pipelining.py" --schedule ZBVZeroBubble --iters 6 \
    --warmup 1 >"$work/bundled.out" 2>"$work/bundled.err"
  bundled_code=$?
  set -e
  "$python" - "$work" "$bundled_code" <<'EOF' || status=1
import json, sys
work, code = sys.argv[1], int(sys.argv[2])
if code != 0:
    print(f"gpu-check: bundled job FAILED: exit code {code}")
    print(open(f"{work}/bundled.err").read()[-3000:])
    sys.exit(1)
lines = open(f"{work}/bundled.out").read().splitlines()
report = json.loads("\n".join(lines[max(i for i, l in enumerate(lines) if l == "{"):]))
failures = []
print(f"{'stage':>5} {'rank':>4} {'F_ms':>9} {'B_ms':>9} {'W_ms':>9}")
for stage in report["stages"]:
    print(f"{stage['stage']:>5} {stage['rank']:>4} "
          + " ".join(f"{stage[k]['median']:>9.4f}" for k in ("F", "B", "W")))
    failures += [f"stage {stage['stage']}: no {k}" for k in ("F", "B", "W")
                 if stage[k]["samples"] == 0]
kernels = report["kernels"]
print(f"kernels: {kernels['attributed']} of {kernels['total']} attributed; layout "
      f"{report['layout']}, class {report['schedule_class']}")
if kernels["attributed"] == 0:
    failures.append("no kernel attributed to a pipeline op")
if report["layout"] != "v" or report["schedule_class"] != "ScheduleZBVZeroBubble":
    failures.append("the profile did not record the V layout and the class")
layers = (report.get("layers") or {}).get("layers", [])
print("per-block costs (docs/partition.md §4): "
      + ", ".join(f"{b['name']} {b['F']:.3f}/{b['B']:.3f}/{b['W']:.3f} ms" for b in layers))
if len(layers) != 6 or any(b["F"] <= 0 for b in layers):
    failures.append("no per-block costs for the 6 blocks of the 4 stages")
for f in failures:
    print("  - " + f)
sys.exit(1 if failures else 0)
EOF
else
  echo "gpu-check: bundled job skipped: one GPU here, and NCCL needs one GPU per rank (two ranks"
  echo "  on one device are not a pipeline); checked on this GPU: the injection library above,"
  echo "  this machine's torch below"
fi

# ---- 4b. Per-block costs on this GPU: one block timed with CUDA synchronisation ----------------
echo "gpu-check: per-block costs of a block on CUDA (zbkit.pipelining.measure.blocks.measure_block)"
PYTHONPATH="$root/adapters/pytorch${PYTHONPATH:+:$PYTHONPATH}" "$python" - <<'EOF' || status=1
import sys
import torch
from zbkit.pipelining.measure import blocks

block = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                            torch.nn.Linear(4096, 1024)).cuda()
x = torch.randn(8, 512, 1024, device="cuda", requires_grad=True)
measured = blocks.measure_block(block, ((x,), {}))
print("  " + ", ".join(f"{k} {measured[k]:.3f}" for k in ("F", "B", "W")) + " ms; "
      + ", ".join(f"{k} {measured[k]}" for k in ("M_B", "M_W", "send")))
ok = min(measured[k] for k in ("F", "B", "W", "M_B", "M_W")) > 0
ok = ok and all(p.grad is None for p in block.parameters())
print("  per-block costs on CUDA: " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
EOF

# ---- 5. zbkit's CSV in this machine's torch ---------------------------------------------------
echo "gpu-check: torch $("$python" -c 'import torch; print(torch.__version__)'): shim and export tests"
if "$python" -c 'import pytest' 2>/dev/null; then
  ZBKIT_ZB_BINARY="$zb" OMP_NUM_THREADS=1 "$python" -m pytest -q -rs -p no:cacheprovider \
    "$root/adapters/pytorch/tests/library/test_export_torch.py" \
    "$root/adapters/pytorch/tests/library/test_shim.py" || status=1
else
  echo "gpu-check: no pytest for $python: the shim and export tests skipped"
fi
echo "gpu-check: zb rehearse, 4 ranks (tests/data/costs/heavy-ends4.json, 1x)"
set +e
ZBKIT_PYTHON="$python" "$zb" rehearse --costs "$root/tests/data/costs/heavy-ends4.json" -m 16 \
  --mem-limit 1x --rounds 1 --iters 3 --dir "$work/rehearse" --json >"$work/rehearse.json" \
  2>"$work/rehearse.err"
rehearse_code=$?
set -e
"$python" - "$work" "$rehearse_code" <<'EOF' || status=1
import json, sys
work, code = sys.argv[1], int(sys.argv[2])
if code != 0:
    print(f"gpu-check: zb rehearse FAILED: exit code {code}")
    print(open(f"{work}/rehearse.err").read()[-3000:])
    sys.exit(1)
doc = json.loads(open(f"{work}/rehearse.json").read().splitlines()[-1])  # the table, then the JSON
failures = []
for row in doc["rows"]:
    if "error" in row:
        print(f"{row['schedule'] + ' (' + row['runtime'] + ')':>40}: {row['error']}")
        continue
    ratio = row["measured_ms"] / row["predicted_ms"]
    print(f"{row['schedule'] + ' (' + row['runtime'] + ')':>40}: measured {row['measured_ms']:.1f} ms, predicted "
          f"{row['predicted_ms']:.1f} ms, ratio {ratio:.3f}")
    if abs(ratio - 1) > 0.05:
        failures.append(f"{row['schedule']}: measured/predicted {ratio:.3f}")
for f in failures:
    print("  - " + f)
sys.exit(1 if failures else 0)
EOF
# ---- 6. Another CUPTI subscriber in the job ---------------------------------------------------
# tests/inject/cupti_rival.cpp subscribes to CUPTI itself: the job must run as without zbkit (same
# output, same exit code), with at most one "zbkit:" line saying what zbkit could not do.
rival="$build_dir/tests/inject/zbkit_cupti_rival"
echo "gpu-check: another CUPTI subscriber (zbkit_cupti_rival)"
set +e
"$rival" >"$work/rival.plain.out" 2>"$work/rival.plain.err"
rival_plain=$?
"$zb" profile --shard-dir "$work/rival-shards" -- "$rival" >"$work/rival.out" 2>"$work/rival.err"
rival_profiled=$?
set -e
rival_job_out="$(grep '^cupti_rival:' "$work/rival.out" || true)"
rival_warnings="$(grep -c '^zbkit:' "$work/rival.err" || true)"
echo "  plain exit $rival_plain, profiled exit $rival_profiled, zbkit warnings: $rival_warnings"
grep '^zbkit:' "$work/rival.err" | sed 's/^/  /' || true
if (( rival_plain != 0 || rival_profiled != rival_plain )) ||
  [[ "$rival_job_out" != "$(cat "$work/rival.plain.out")" ]] || (( rival_warnings > 1 )); then
  echo "gpu-check: another CUPTI subscriber FAILED (exit codes, the job's output or the warnings)"
  status=1
fi

# ---- 7. Activation checkpointing on CUDA: each checkpointed block recomputed once -------------
# The CPU suite runs the autograd engine on the calling thread; on CUDA it runs the backward on a
# device thread, through which zbkit.checkpointing's group and unpack hook must reach
# (docs/activation-checkpointing.md §3). A GPT block under full AC and per-op SAC on this GPU:
# zbkit's split (B, then W) and torch's split inside one RecomputeOnce each run the block's forward
# twice (forward and one recomputation) and give the fused backward's gradients.
echo "gpu-check: activation checkpointing on CUDA (recompute once)"
if ! PYTHONPATH="$root/adapters/pytorch:$root/adapters/pytorch/examples" "$python" - <<'EOF'
import sys

import torch
from gpt_model import Gpt, GptConfig, checkpoint_blocks, count_forwards, split_stages
from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight

from zbkit import checkpointing
from zbkit.bw_split import BackwardSplit, weight_pass_nodes

failures = []
x0 = torch.randn(4, 64, 128, device="cuda")
for mode in ("full", "sac"):
    for path in ("zbkit", "torch"):
        model = Gpt(GptConfig(vocab=64, seq=64, dim=128, heads=4, layers=2), seed=0).cuda()
        calls = count_forwards(model)
        stage = split_stages(model, 2)[1]
        checkpoint_blocks([stage], mode)
        block, x = stage.blocks[0], x0.clone().requires_grad_()
        params = list(block.parameters())
        checkpointing.install()  # before the forward: its regions get the wrapped hook
        if path == "zbkit":
            split = BackwardSplit(params)
            with split.record():
                out = block(x)
            split.seal((out,), (x,))
            split.backward_input((torch.ones_like(out),), [True])
            split.backward_weight()
        else:
            out = block(x)
            group = checkpointing.RecomputeOnce(weight_pass_nodes([out], [x], params).__contains__)
            with group:
                _, groups = stage_backward_input([out], [torch.ones_like(out)], [x], iter(params))
            with group:
                stage_backward_weight(iter(params), groups)
            group.release()
        torch.cuda.synchronize()
        ran = calls["blocks.1"]
        grads = [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
        fused = block(x0.clone().requires_grad_())
        fused.backward(torch.ones_like(fused))
        same = all(torch.allclose(g, p.grad, rtol=1e-4, atol=1e-5) for g, p in zip(grads, params))
        print(f"  {mode} {path}: block forward calls {ran} (want 2), gradients equal: {same}")
        if ran != 2 or not same:
            failures.append(f"{mode} {path}")
sys.exit(1 if failures else 0)
EOF
then
  echo "gpu-check: activation checkpointing on CUDA FAILED"
  status=1
fi

if (( status == 0 )); then
  echo "gpu-check: all checks passed"
else
  echo "gpu-check: FAILED (see above)"
fi
exit "$status"

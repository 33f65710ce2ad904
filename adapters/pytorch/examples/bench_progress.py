# SPDX-License-Identifier: Apache-2.0
"""The cost of the progress record and the time zb replay takes to name a stall (docs/stalls.md §5).

    .venv/bin/python adapters/pytorch/examples/bench_progress.py [--ops 200000] [--repeats 7]
        [--detection]

1. Cost per op: what zbkit's executor adds to each op (`begin` and `end` of zbkit.progress) and
   what the shim adds to each of torch's actions (`action`), timed over --ops ops, --repeats
   times, median and spread; beside it the same loop without the record.
2. With --detection: one 2-rank job under `zb replay` with the default stall timeout, a rank
   SIGSTOPped in step 1 (tests/job_scripts/fault_job.py): seconds from the fault to zb replay's diagnosis.
3. With --flight-recorder: the same job, healthy, 3 steps, with torch's flight recorder on
   (TORCH_FR_BUFFER_SIZE): what it kept of each rank's sends and receives, beside the ops zbkit's
   record followed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTORCH_DIR = HERE.parent
sys.path.insert(0, str(PYTORCH_DIR))

from zbkit import locate  # noqa: E402
from zbkit.progress import ProgressRecord  # noqa: E402

# The checkout's zb unless ZBKIT_ZB_BINARY names another.
os.environ.setdefault(locate.ZB_ENV, str(PYTORCH_DIR.parent.parent / "build" / "zb" / "zb"))


def per_op_ns(ops: int, with_record: bool, torch_style: bool, directory: str) -> float:
    program = [("F", 0, i % 8) for i in range(64)]
    record = ProgressRecord(directory, 0, 1, program, 8, 1) if with_record else None
    begin = record.begin if record else None
    end = record.end if record else None
    action = record.action if record else None
    start = time.perf_counter_ns()
    if record is None:
        for i in range(ops):
            index = i & 63  # the loop itself: what every variant pays
    elif torch_style:
        for i in range(ops):
            index = i & 63
            action(index)
    else:
        for i in range(ops):
            index = i & 63
            begin(index)
            end(index)
    elapsed = time.perf_counter_ns() - start
    if record is not None:
        record.close()
    del index
    return elapsed / ops


def cost(args) -> None:
    with tempfile.TemporaryDirectory() as directory:
        rows = []
        for name, with_record, torch_style in (
            ("loop alone", False, False),
            ("executor: begin + end per op", True, False),
            ("torch runtime: action per op", True, True),
        ):
            samples = [per_op_ns(args.ops, with_record, torch_style, directory)
                       for _ in range(args.repeats)]  # fmt: skip
            rows.append((name, statistics.median(samples), min(samples), max(samples)))
    base = rows[0][1]
    print(f"progress record, {args.ops} ops x {args.repeats} repeats (ns per op)")
    print(f"{'':32} {'median':>8} {'min':>8} {'max':>8} {'record only':>12}")
    for name, med, low, high in rows:
        extra = "" if name == "loop alone" else f"{med - base:12.0f}"
        print(f"{name:32} {med:8.0f} {low:8.0f} {high:8.0f} {extra}")


def fault_job(folder: Path, spec: dict, env: dict) -> subprocess.CompletedProcess:
    """tests/job_scripts/fault_job.py on 2 ranks under `zb replay --run-dir folder/run --on-stall kill`, a
    zb-h1 order with 4 microbatches, `spec` completed with it."""
    zb = locate.zb_binary()
    costs = folder / "costs.json"
    costs.write_text(json.dumps({"format": "zb-costs/1", "comm": 0.1, "count": 2, "stages": [
        {"F": 1.0, "B": 1.0, "W": 0.8, "M_B": 1000, "M_W": 400}]}))  # fmt: skip
    schedule = folder / "zbh1.json"
    subprocess.run([zb, "tune", "--costs", str(costs), "--microbatches", "4", "--mem-limit",
                    "2x", "--family", "zb-h1", "--out", str(schedule)], check=True,
                   capture_output=True)  # fmt: skip
    spec_path = folder / "spec.json"
    spec_path.write_text(json.dumps(dict(spec, runner="torch", schedule=str(schedule))))
    env = dict(os.environ, OMP_NUM_THREADS="1", ZBKIT_ZB_BINARY=zb, **env)
    command = [zb, "replay", str(schedule), "--run-dir", str(folder / "run"), "--on-stall",
               "kill", "--", sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
               "2", "--master-addr", "127.0.0.1", "--master-port", "29517",
               str(PYTORCH_DIR / "tests" / "job_scripts" / "fault_job.py"), str(spec_path)]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def detection() -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        note = folder / "fault-at"
        fault = {"kind": "stop", "rank": 1, "step": 1, "stage": 1, "forward": 1, "note": str(note)}
        done = fault_job(folder, {"steps": 3, "fault": fault}, {})
        run_dir = folder / "run"
        diagnosis = run_dir / "diagnosis.json"
        if not diagnosis.exists() or not note.exists():
            print(f"no diagnosis (exit {done.returncode}):\n{done.stderr[-2000:]}")
            sys.exit(1)
        culprit = json.loads(diagnosis.read_text())["culprit"]
        seconds = diagnosis.stat().st_mtime - float(note.read_text())
        print(f"time to diagnosis, default stall timeout: {seconds:.1f} s after the fault "
              f"(culprit: {culprit['kind']} rank {culprit['rank']}: {culprit['headline']})")  # fmt: skip


def flight_recorder() -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        out = folder / "fr-rank{rank}.json"
        done = fault_job(folder, {"steps": 3, "fault": None, "flight_recorder_out": str(out)},
                         {"TORCH_FR_BUFFER_SIZE": "20000"})  # fmt: skip
        if done.returncode != 0:
            print(f"the job failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
            sys.exit(1)
        for rank in range(2):
            entries = json.loads(Path(str(out).replace("{rank}", str(rank))).read_text())["entries"]
            record = (folder / "run").joinpath(f"rank{rank}.progress")
            ops = int.from_bytes(record.read_bytes()[128:132], "little") if record.exists() else 0
            comms = "removed with the run directory" if not record.exists() else f"{ops} actions"
            print(f"rank {rank}: torch's flight recorder kept {len(entries)} entries "
                  f"{sorted({e['name'] for e in entries})}; zbkit's record: a program of "
                  f"{comms} per step")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--detection", action="store_true")
    parser.add_argument("--flight-recorder", action="store_true")
    args = parser.parse_args()
    cost(args)
    if args.detection:
        detection()
    if args.flight_recorder:
        flight_recorder()
    return 0


if __name__ == "__main__":
    sys.exit(main())

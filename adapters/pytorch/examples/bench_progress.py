# SPDX-License-Identifier: Apache-2.0
"""The cost of the progress record and the time zb replay takes to name a stall (docs/stalls.md §5).

    .venv/bin/python adapters/pytorch/examples/bench_progress.py [--ops 200000] [--repeats 7]
        [--detection]

1. Cost per op: what zbkit's executor adds to each op (`begin` and `end` of zbkit.progress) and
   what the shim adds to each of torch's actions (`action`), timed over --ops ops, --repeats
   times, median and spread; beside it the same loop without the record.
2. With --detection: one 2-rank job under `zb replay` with the default stall timeout, a rank
   SIGSTOPped in step 1 (tests/fault_job.py): seconds from the fault to zb replay's diagnosis.
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
os.environ.setdefault(locate.ZB_ENV, str(PYTORCH_DIR.parent.parent / "build" / "cli" / "zb"))


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


def detection() -> None:
    tests = PYTORCH_DIR / "tests"
    zb = locate.zb_binary()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        costs = folder / "costs.json"
        costs.write_text(json.dumps({"format": "zb-costs/1", "comm": 0.1, "count": 2, "stages": [
            {"F": 1.0, "B": 1.0, "W": 0.8, "M_B": 1000, "M_W": 400}]}))  # fmt: skip
        schedule = folder / "zbh1.json"
        subprocess.run([zb, "tune", "--costs", str(costs), "--microbatches", "4", "--mem-limit",
                        "2x", "--family", "zb-h1", "--out", str(schedule)], check=True,
                       capture_output=True)  # fmt: skip
        note = folder / "fault-at"
        spec = folder / "spec.json"
        spec.write_text(json.dumps({"runner": "torch", "schedule": str(schedule), "steps": 3,
                                    "fault": {"kind": "stop", "rank": 1, "step": 1, "stage": 1,
                                              "forward": 1, "note": str(note)}}))  # fmt: skip
        run_dir = folder / "run"
        env = dict(os.environ, OMP_NUM_THREADS="1", ZBKIT_ZB_BINARY=zb)
        command = [zb, "replay", str(schedule), "--run-dir", str(run_dir), "--on-stall", "kill",
                   "--", sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                   "--master-addr", "127.0.0.1", "--master-port", "29517",
                   str(tests / "fault_job.py"), str(spec)]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        diagnosis = run_dir / "diagnosis.json"
        if not diagnosis.exists() or not note.exists():
            print(f"no diagnosis (exit {done.returncode}):\n{done.stderr[-2000:]}")
            sys.exit(1)
        culprit = json.loads(diagnosis.read_text())["culprit"]
        seconds = diagnosis.stat().st_mtime - float(note.read_text())
        print(f"time to diagnosis, default stall timeout: {seconds:.1f} s after the fault "
              f"(culprit: {culprit['kind']} rank {culprit['rank']}: {culprit['headline']})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--detection", action="store_true")
    args = parser.parse_args()
    cost(args)
    if args.detection:
        detection()
    return 0


if __name__ == "__main__":
    sys.exit(main())

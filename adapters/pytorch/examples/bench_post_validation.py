# SPDX-License-Identifier: Apache-2.0
"""Benchmark: the bundled GPT through train_zbkit.py with the all-reduce step and post-validated,
side by side, R rounds (each round runs both, in alternating order, so the machine's drift hits
both alike); prints per round the slowest rank's median iteration time and each rank's share of
its iteration spent waiting for the step, then the median of the rounds' paired drops.

    python bench_post_validation.py --schedule-file S.json [--rounds 5] [train_zbkit.py flags]

Extra flags go to train_zbkit.py (model size, --iters, --warmup, --clip-norm ...); the default
step is AdamW (lr 1e-3) clipped at 1.0, in-place rollback. Exit 1 when a run fails or the two
runs end in different states (compare_runs.py --rounding on the first round's dumps).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_runs import compare  # noqa: E402

STEPS = ("sync", "post-validation")
DEFAULT_STEP = ["--optimizer", "adamw", "--lr", "0.001", "--clip-norm", "1.0", "--rollback",
                "in-place"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(schedule: str, step: str, extra: List[str], folder: str, dump: bool) -> Dict[str, float]:
    """One run; the slowest rank's median iteration time and each rank's waiting share."""
    pattern = os.path.join(folder, f"{step}.rank{{rank}}.json")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
               "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
               os.path.join(HERE, "train_zbkit.py"), "--schedule-file", schedule,
               "--optimizer-step", step, *DEFAULT_STEP, *extra, "--summary-out", pattern]  # fmt: skip
    if dump:
        command += ["--dump", os.path.join(folder, step)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_post_validation: {step} run failed:\n{done.stderr[-3000:]}")
    summaries = [json.load(open(pattern.format(rank=r))) for r in range(2)]
    slowest = [max(times) for times in zip(*(s["iter_s"] for s in summaries))]
    result = {"median_ms": statistics.median(slowest) * 1e3}
    for s in summaries:
        result[f"wait_r{s['rank']}"] = sum(s["barrier_s"]) / sum(s["iter_s"])
        result["rollbacks"] = result.get("rollbacks", 0) + s["rollbacks"]
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedule-file", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args, extra = parser.parse_known_args(argv)
    with open(args.schedule_file) as handle:
        predicted = json.load(handle).get("predicted") or {}
    print(f"schedule {args.schedule_file}: predicted makespan {predicted.get('makespan')} ms, "
          f"span {predicted.get('span')} ms")  # fmt: skip
    drops = []
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(1, args.rounds + 1):
            order = STEPS if round_ % 2 else STEPS[::-1]
            got = {
                step: run(args.schedule_file, step, extra, folder, round_ == 1) for step in order
            }
            sync, pv = got["sync"], got["post-validation"]
            drop = 1 - pv["median_ms"] / sync["median_ms"]
            drops.append(drop)
            print(f"round {round_}: all-reduce step {sync['median_ms']:.1f} ms (waiting r0 "
                  f"{sync['wait_r0']:.1%}, r1 {sync['wait_r1']:.1%}), post-validated "
                  f"{pv['median_ms']:.1f} ms (r0 {pv['wait_r0']:.1%}, r1 {pv['wait_r1']:.1%}, "
                  f"{pv['rollbacks']} rollbacks): {drop:+.1%} less")  # fmt: skip
            sys.stdout.flush()
            if round_ == 1:
                verdict = compare(os.path.join(folder, "sync"),
                                  os.path.join(folder, "post-validation"), rounding=True)  # fmt: skip
                print(f"state after round 1: {json.dumps(verdict)}")
                if not verdict["equal"]:
                    return 1
    print(f"median paired drop over {args.rounds} rounds: {statistics.median(drops):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

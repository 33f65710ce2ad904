# SPDX-License-Identifier: Apache-2.0
"""Benchmark: torchtitan, unedited, on 2 CPU ranks, under its default split and under the split
`zb partition` chooses from the per-block costs `zb profile --torch` measured (docs/partition.md
§5). A llama3 debug model with a large vocabulary (the head then costs several layers):

    .venv/bin/python adapters/pytorch/tests/job_scripts/titan/bench_split.py [--vocab 32768] [--seq 64]
        [--steps 10] [--pairs 3] [--dir DIR] [--json]

1. torchtitan's seed checkpoint, so that both splits start from the same weights (torchtitan
   initialises each rank's part from its own random stream);
2. `zb profile --torch --layers-out` of a few steps under the default split (1F1B);
3. `zb partition --for torchtitan` on those costs: its [parallelism] section as a config file;
4. `--pairs` pairs of runs, default then split, then split then default, ...: per run the median
   of torchtitan's own tokens/s (`tps`, per device, of the rank that logs the loss) over the steps
   after the first two, and the losses, which must be equal.

Needs torchtitan (scripts/setup.sh installs it) and a built zb (ZBKIT_ZB_BINARY or build/zb/zb).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import jobs  # noqa: E402
from assets import make_assets  # noqa: E402

STEP = re.compile(
    r"step:\s*(\d+)\s+(?:\x1b\[[0-9;]*m)*loss:\s*(-?[0-9.]+).*?tps:\s*([0-9,]+)", re.DOTALL
)
WARMUP_STEPS = 2


def zb_binary() -> str:
    return os.environ.get("ZBKIT_ZB_BINARY") or str(HERE.parents[4] / "build" / "zb" / "zb")


def env() -> Dict[str, str]:
    out = dict(os.environ, OMP_NUM_THREADS="1", ZBKIT_ZB_BINARY=zb_binary())
    for name in ("ZBKIT_SCHEDULE", "ZBKIT_TORCH_PROFILE", "PYTHONPATH"):
        out.pop(name, None)
    return out


def run(command: List[str], log: Path, stdout_only: bool = False) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env(), timeout=1800)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        sys.exit(f"bench_split: {command[0]} ... exited with {done.returncode}; see {log}")
    return done.stdout if stdout_only else done.stdout + done.stderr


def steps_of(output: str) -> Dict[int, tuple]:
    """step -> (loss, tps) of the rank that logs the loss (the others log -1)."""
    found = {}
    for line in output.splitlines():
        match = STEP.search(line)
        if match and float(match.group(2)) != -1.0:
            found[int(match.group(1))] = (
                float(match.group(2)),
                int(match.group(3).replace(",", "")),
            )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--dir", default="bench-titan-split")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(args.dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    flavor = f"debugmodel_vocab{args.vocab}"
    tokenizer, dataset = make_assets(work / "assets")
    assets = ["--model.hf_assets_path", str(tokenizer), "--training.dataset_path", str(dataset)]
    one_f_one_b = ("--parallelism.pipeline_parallel_schedule", "1F1B")

    run(jobs.seed_checkpoint_command(work / "seed", assets, flavor, seq=args.seq),
        work / "seed.log")  # fmt: skip
    seed = jobs.from_seed_checkpoint(work / "seed")
    layers = work / "layers.json"
    run([zb_binary(), "profile", "--torch", "--torch-skip", "1", "--torch-iters", "2", "--pp", "2",
         "--layers-out", str(layers), "--",
         *jobs.titan_command(work / "profiled", assets, *one_f_one_b, flavor=flavor, seq=args.seq)],
        work / "profile.log")  # fmt: skip
    partition = [zb_binary(), "partition", "--layers", str(layers), "-p", "2", "-m", "4",
                 "--layout", "loop:1"]  # fmt: skip
    chosen = run([*partition, "--for", "torchtitan"], work / "partition.log")
    section = chosen[chosen.index("[parallelism]") :]
    config = work / "split.toml"
    config.write_text("\n".join(line for line in section.splitlines()
                                if line and not line.startswith("#")) + "\n")  # fmt: skip
    report = json.loads(run([*partition, "--json"], work / "partition-json.log", stdout_only=True))
    predicted = {row["split"]: row["iteration_ms"] for row in report["rows"] if row["ok"]}

    runs: Dict[str, List[dict]] = {"default": [], "split": []}
    for pair in range(args.pairs):
        order = ("default", "split") if pair % 2 == 0 else ("split", "default")
        for name in order:
            extra = [*one_f_one_b, *seed] + (["--job.config_file", str(config)]
                                             if name == "split" else [])  # fmt: skip
            command = jobs.titan_command(work / f"{name}-{pair}", assets, *extra, flavor=flavor,
                                         seq=args.seq, steps=args.steps)  # fmt: skip
            steps = steps_of(run(command, work / f"{name}-{pair}.log"))
            measured = [tps for step, (_, tps) in sorted(steps.items()) if step > WARMUP_STEPS]
            runs[name].append({"pair": pair, "tps": statistics.median(measured),
                               "losses": [loss for _, (loss, _) in sorted(steps.items())]})  # fmt: skip
            print(f"pair {pair} {name:<7} tokens/s {runs[name][-1]['tps']:8.0f}", flush=True)

    equal = all(a["losses"] == b["losses"] for a, b in zip(runs["default"], runs["split"]))
    default_tps = statistics.median(r["tps"] for r in runs["default"])
    split_tps = statistics.median(r["tps"] for r in runs["split"])
    print(f"flavor {flavor}, seq {args.seq}, 8 samples in 4 microbatches, 2 ranks, 1F1B")
    print(f"split chosen: {config.read_text().strip().splitlines()[-1]}")
    print(f"predicted iteration (zb partition): even {predicted.get('even', float('nan')):.1f} ms, "
          f"co-tuned {predicted.get('co-tuned', float('nan')):.1f} ms")  # fmt: skip
    print(
        f"tokens/s, median of {args.pairs} runs: default split {default_tps:.0f}, "
        f"chosen split {split_tps:.0f}: {split_tps / default_tps - 1:+.1%}; losses equal: {equal}"
    )
    if args.json:
        print(json.dumps({"format": "zb-bench-titan-split/1", "flavor": flavor, "seq": args.seq,
                          "predicted_ms": predicted, "runs": runs, "losses_equal": equal,
                          "default_tps": default_tps, "split_tps": split_tps}))  # fmt: skip
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())

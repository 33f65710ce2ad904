# SPDX-License-Identifier: Apache-2.0
"""Every activation-checkpointing mode of two real jobs under `zb profile` and `zb replay` of a
split order (zb-h1), once each: the job's exit code, and for the profile the mode it recorded
(docs/activation-checkpointing.md §4 quotes the table). Too long for the suite (16 torchrun jobs,
about 4 minutes on 2 cores); the tests run the modes that break torch's own split.

    .venv/bin/python adapters/pytorch/tests/job_scripts/checkpointing_matrix.py [--only bundled]

Jobs: the bundled GPT (examples/train_pipelining.py, `--ac`), and torchtitan 0.2.2 (its llama3
debug model on 2 CPU ranks, `--activation_checkpoint.*`), both unedited by zbkit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from launch import MODEL, job_env, require_zb, run, torchrun_command, tuned_schedule  # noqa: E402

BUNDLED = {
    "none": ["--ac", "none"],
    "full": ["--ac", "full"],
    "every-2nd": ["--ac", "every2"],
    "op-SAC": ["--ac", "sac"],
}
TITAN = {
    "none": ["--activation_checkpoint.mode", "none"],
    "full": ["--activation_checkpoint.mode", "full"],
    "every-2nd": ["--activation_checkpoint.mode", "selective",
                  "--activation_checkpoint.selective_ac_option", "2"],
    "op-SAC": ["--activation_checkpoint.mode", "selective",
               "--activation_checkpoint.selective_ac_option", "op"],
}  # fmt: skip


def bundled(folder: Path, flags):
    job = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "3", "--warmup", "0"]
    return torchrun_command(*job, *flags)


def titan(folder: Path, flags):
    sys.path.insert(0, str(Path(__file__).resolve().parent / "titan"))
    import jobs  # noqa: PLC0415
    from assets import make_assets  # noqa: PLC0415

    tokenizer, dataset = make_assets(folder / "assets")
    assets = ["--model.hf_assets_path", str(tokenizer), "--training.dataset_path", str(dataset)]
    return jobs.titan_command(folder / "out", assets, "--parallelism.pipeline_parallel_schedule",
                              "1F1B", *flags)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("bundled", "torchtitan"))
    args = parser.parse_args()
    zb = str(require_zb())
    failures = 0
    print(f"{'job':11} {'mode':10} {'zb profile':>11} {'recorded':>9} {'zb replay':>10}")
    for name, modes, command in (("bundled", BUNDLED, bundled), ("torchtitan", TITAN, titan)):
        if args.only and args.only != name:
            continue
        for mode, flags in modes.items():
            with tempfile.TemporaryDirectory() as directory:
                folder = Path(directory)
                costs = folder / "costs.json"
                profiled = run([zb, "profile", "--torch", "--torch-skip", "1", "--torch-iters",
                                "2", "--pp", "2", "--out", str(costs), "--",
                                *command(folder / "p", flags)], job_env(), timeout=600)  # fmt: skip
                recorded = (
                    json.loads(costs.read_text()).get("checkpointing", "?")
                    if costs.exists() else "-"
                )  # fmt: skip
                order = tuned_schedule(folder, "zb-h1")
                replayed = run([zb, "replay", str(order), "--", *command(folder / "r", flags)],
                               job_env(), timeout=600)  # fmt: skip
                failures += profiled.returncode != 0 or replayed.returncode != 0
                print(f"{name:11} {mode:10} {'exit ' + str(profiled.returncode):>11} "
                      f"{recorded:>9} {'exit ' + str(replayed.returncode):>10}", flush=True)  # fmt: skip
                for done in (profiled, replayed):
                    if done.returncode != 0:
                        print("    " + done.stderr.strip().splitlines()[-1][:200])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

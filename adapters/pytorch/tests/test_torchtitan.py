# SPDX-License-Identifier: Apache-2.0
"""torchtitan (0.2.2, installed by scripts/setup.sh), unedited, on 2 CPU ranks over gloo through the
test launcher (tests/titan/launch.py: the two CPU patches) with a local tokenizer and dataset
(tests/titan/assets.py): its llama3 debug model profiled by `zb profile --torch`, the tuned order
exported with `zb export --for torchtitan` and run by torchtitan itself from the printed flags,
and replayed through the shim by `zb replay`; the losses equal those of torchtitan's own schedule
of the same layout (docs/formats.md §4.2)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import List

import pytest
from test_shim import free_port, job_env, require_zb, run

pytest.importorskip("torch")
if __import__("importlib").util.find_spec("torchtitan") is None:
    pytest.skip(
        "torchtitan is not installed (scripts/setup.sh installs the pinned 0.2.2)",
        allow_module_level=True,
    )

HERE = Path(__file__).resolve().parent
LAUNCH = HERE / "titan" / "launch.py"
sys.path.insert(0, str(HERE / "titan"))
from assets import make_assets  # noqa: E402

STEPS = 4
BATCH = 8
MICROBATCHES = 4
LOSS = re.compile(r"step:\s*(\d+)\s+(?:\x1b\[[0-9;]*m)*loss:\s*(-?[0-9.]+)")


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> List[str]:
    tokenizer, dataset = make_assets(tmp_path_factory.mktemp("titan-assets"))
    return ["--model.hf_assets_path", str(tokenizer), "--training.dataset_path", str(dataset)]


def titan_command(out: Path, assets: List[str], *extra: str) -> list:
    """torchrun of torchtitan's trainer: llama3 debug model, 2 pipeline ranks, BATCH samples in
    MICROBATCHES microbatches, STEPS steps, fixed seed."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(LAUNCH),
        "--model.name", "llama3", "--model.flavor", "debugmodel", *assets,
        "--training.dataset", "c4_test", "--training.local_batch_size", str(BATCH),
        "--training.seq_len", "32", "--training.steps", str(STEPS),
        "--parallelism.pipeline_parallel_degree", "2",
        "--parallelism.pipeline_parallel_microbatch_size", str(BATCH // MICROBATCHES),
        "--activation_checkpoint.mode", "none", "--debug.seed", "42", "--metrics.log_freq", "1",
        "--comm.init_timeout_seconds", "60", "--job.dump_folder", str(out), *extra,
    ]  # fmt: skip


def losses(output: str) -> List[float]:
    """The loss of each step, as the last stage's rank logs it (the others log -1)."""
    by_step = {}
    for step, value in LOSS.findall(output):
        if float(value) != -1.0:
            by_step[int(step)] = float(value)
    return [by_step[step] for step in sorted(by_step)]


def train(tmp_path: Path, name: str, assets: List[str], *extra: str, command=()) -> List[float]:
    done = run([*command, *titan_command(tmp_path / name, assets, *extra)], job_env())
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    found = losses(done.stdout + done.stderr)
    assert len(found) == STEPS, (done.stdout + done.stderr)[-3000:]
    return found


def export_for_titan(tmp_path: Path, schedule: Path, name: str) -> List[str]:
    """`zb export --for torchtitan`: the CSV, and the command-line flags it prints."""
    csv = tmp_path / f"{name}.csv"
    done = run([str(require_zb()), "export", str(schedule), "--format", "torch-csv", "-o",
                str(csv), "--for", "torchtitan", "--local-batch-size", str(BATCH)],
               job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    flags = done.stdout.split("or on its command line: ", 1)[1].split()
    assert flags[flags.index("--parallelism.pipeline_parallel_schedule_csv") + 1] == str(csv)
    return flags


def test_profile_tune_and_replay_torchtitan_unedited(tmp_path, assets):
    zb = str(require_zb())
    costs = tmp_path / "costs.json"
    profile = run([zb, "profile", "--torch", "--torch-skip", "1", "--torch-iters", "2", "--pp",
                   "2", "--json", "--out", str(costs), "--store", str(tmp_path / "zb.db"), "--",
                   *titan_command(tmp_path / "profiled", assets,
                                  "--parallelism.pipeline_parallel_schedule", "1F1B")],
                  job_env())  # fmt: skip
    assert profile.returncode == 0, profile.stderr[-4000:]
    lines = profile.stdout.splitlines()
    report = json.loads("\n".join(lines[max(i for i, line in enumerate(lines) if line == "{") :]))
    assert report["ranks"] == 2
    for stage in report["stages"]:
        for kind in ("F", "B", "W"):
            assert stage[kind]["samples"] > 0 and stage[kind]["median"] > 0, stage
    assert report["costs"]["layout"] == {
        "placement": "loop", "stages_per_rank": 1, "schedule": "Schedule1F1B",
    }  # fmt: skip
    listed = run([zb, "costs", "list", "--store", str(tmp_path / "zb.db"), "--json"], job_env())
    assert listed.returncode == 0 and json.loads(listed.stdout)["profiles"], listed.stderr

    # Tuned for the profiled job's layout (the default): one stage per rank, a split-backward
    # order torch's runtime runs right.
    schedule = tmp_path / "tuned.json"
    tuned = run([zb, "tune", "--costs", str(costs), "-m", str(MICROBATCHES), "--mem-limit", "2x",
                 "--family", "zb-h1", "--json", "--out", str(schedule)], job_env())  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    assert json.loads(tuned.stdout)["layout_from_profile"] is True
    flags = export_for_titan(tmp_path, schedule, "tuned")
    assert flags[flags.index("--parallelism.pipeline_parallel_schedule") + 1] == "1F1B"

    own = train(tmp_path, "own", assets, "--parallelism.pipeline_parallel_schedule", "1F1B")
    exported = train(tmp_path, "csv", assets, *flags)
    replayed = train(tmp_path, "shim", assets, "--parallelism.pipeline_parallel_schedule", "1F1B",
                     command=(zb, "replay", str(schedule), "--"))  # fmt: skip
    assert exported == pytest.approx(own, rel=1e-5)
    assert replayed == pytest.approx(own, rel=1e-5)


def test_a_v_order_runs_under_torchtitans_v_split(tmp_path, assets):
    # A V order needs torchtitan's V split, which only a V schedule name gives: the export says
    # ZBVZeroBubble, and the losses are those of torchtitan's own ZBVZeroBubble.
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"format": "zb-costs/1", "count": 2, "stages": [
        {"F": 1.0, "B": 1.0, "W": 0.6, "M_B": 2.0, "M_W": 1.0}]}))  # fmt: skip
    schedule = tmp_path / "v.json"
    tuned = run([str(require_zb()), "tune", "--costs", str(costs), "-m", str(MICROBATCHES),
                 "--mem-limit", "2x", "--family", "zb-v", "--out", str(schedule)], job_env())  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    flags = export_for_titan(tmp_path, schedule, "v")
    assert flags[flags.index("--parallelism.pipeline_parallel_schedule") + 1] == "ZBVZeroBubble"
    own = train(tmp_path, "own", assets, "--parallelism.pipeline_parallel_schedule",
                "ZBVZeroBubble")  # fmt: skip
    exported = train(tmp_path, "csv", assets, *flags)
    assert exported == pytest.approx(own, rel=1e-5)

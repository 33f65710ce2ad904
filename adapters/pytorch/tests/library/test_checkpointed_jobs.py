# SPDX-License-Identifier: Apache-2.0
"""Unmodified pipelining jobs with activation checkpointing under `zb profile` and `zb replay`
(docs/activation-checkpointing.md): the job never dies of zbkit; a split order recomputes each
checkpointed block once per microbatch and trains like the job's unpipelined reference; the
profile records the job's checkpointing and per-block costs that hold one recomputation."""

from __future__ import annotations

import json

import pytest
from launch import (
    MODEL,
    assert_matches_reference,
    job_env,
    require_zb,
    run,
    torchrun_command,
    tuned_schedule,
)

torch = pytest.importorskip("torch")

MICROBATCHES, ITERS = 4, 3
JOB = MODEL + ["--batch", "8", "--microbatches", str(MICROBATCHES), "--iters", str(ITERS),
               "--warmup", "0"]  # fmt: skip


def forward_calls(prefix) -> dict:
    calls = {}
    for rank in range(2):
        calls.update(torch.load(f"{prefix}.rank{rank}.pt")["forward_calls"])
    return calls


@pytest.mark.parametrize("mode", ["sac"])
def test_zb_replay_of_a_split_order_recomputes_each_block_once_and_trains_like_the_job(
    tmp_path, mode
):
    """zb-h1 (B and W apart) through the shim with op-level SAC (which torch's own split cannot
    run: "Trying to backward an extra time"): exit 0, the reference's losses and parameters, and
    per microbatch each checkpointed block runs twice (its forward and one recomputation). Full
    and every-second-block AC through the same shim code: test_activation_checkpointing.py (every
    family) and tests/job_scripts/checkpointing_matrix.py (end to end, outside the suite)."""
    schedule = tuned_schedule(tmp_path, "zb-h1", MICROBATCHES)
    prefix = tmp_path / "replay"
    args = JOB + ["--ac", mode, "--dump", str(prefix)]
    done = run([str(require_zb()), "replay", str(schedule), "--", *torchrun_command(*args)],
               job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert_matches_reference(prefix, args)
    calls = forward_calls(prefix)
    steps = (ITERS - 1) * MICROBATCHES  # after the first iteration
    want = {f"blocks.{i}": steps * (2 if mode == "sac" or i % 2 == 0 else 1) for i in range(4)}
    assert calls == want, calls


def test_zb_profile_of_an_sac_job_runs_it_and_records_its_checkpointing(tmp_path):
    """The profiling window splits backwards (I then W) to measure B and W apart; under per-op
    SAC that used to kill the job. Now: exit 0, the job's own lines, the profile says "op", and
    the per-block costs of every transformer block hold M_W above M_B (W reads recomputed
    tensors, docs/activation-checkpointing.md §2)."""
    command = [str(require_zb()), "profile", "--torch", "--torch-skip", "1", "--torch-iters", "2",
               "--pp", "2", "--json", "--shard-dir", str(tmp_path / "traces"), "--",
               *torchrun_command(*JOB, "--ac", "sac", "--schedule", "1F1B")]  # fmt: skip
    done = run(command, job_env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rank 1 iter 2 time_s" in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["checkpointing"] == "op", report.get("notes")
    assert report["costs"]["checkpointing"] == "op"
    for stage in report["stages"]:
        assert stage["B"]["median"] > 0 and stage["W"]["median"] > 0, stage
    blocks = [x for x in report["layers"]["layers"] if ".blocks." in x["name"]]
    assert len(blocks) == 4, report["layers"]
    for block in blocks:
        assert block["M_W"] > block["M_B"] > 0, block
        assert block["checkpointing"] == "op", block
    others = [x for x in report["layers"]["layers"] if ".blocks." not in x["name"]]
    assert others and all(x["checkpointing"] == "none" for x in others), others


def test_zb_replay_applies_a_memory_plan_to_the_unmodified_job(tmp_path):
    """docs/memory-plan.md §5: `zb replay --checkpointing-plan` wraps the blocks the plan
    checkpoints (the job runs none), named as a profile of this job names them: those recompute
    once per microbatch, the others not at all, and the job trains as its reference does. A plan
    for other blocks is refused before step 1 in one line."""
    schedule = tuned_schedule(tmp_path, "zb-h1", MICROBATCHES)
    stages = [["stage0.embed", "stage0.blocks.0", "stage0.blocks.1"],
              ["stage1.blocks.0", "stage1.blocks.1", "stage1.head"]]  # fmt: skip
    plan = {name: "none" for stage in stages for name in stage}
    plan["stage0.blocks.0"] = plan["stage1.blocks.1"] = "full"  # the model's blocks.0 and .3
    split = {"format": "zb-split/1", "ranks": 2, "layout": "loop:1", "stages": stages,
             "checkpointing": plan}  # fmt: skip
    (tmp_path / "plan.json").write_text(json.dumps(split))
    prefix = tmp_path / "planned"
    args = JOB + ["--dump", str(prefix)]
    zb = str(require_zb())
    done = run([zb, "replay", str(schedule), "--checkpointing-plan", str(tmp_path / "plan.json"),
                "--", *torchrun_command(*args)], job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "plan.json: 1 block(s) now 'full'" in done.stderr, done.stderr[-2000:]
    assert_matches_reference(prefix, args)
    steps = (ITERS - 1) * MICROBATCHES
    want = {f"blocks.{i}": steps * (2 if i in (0, 3) else 1) for i in range(4)}
    assert forward_calls(prefix) == want

    stages[1].append("stage1.extra")
    split["checkpointing"]["stage1.extra"] = "full"
    (tmp_path / "other.json").write_text(json.dumps(split))
    refused = run([zb, "replay", str(schedule), "--checkpointing-plan", str(tmp_path / "other.json"),
                   "--", *torchrun_command(*args)], job_env())  # fmt: skip
    assert refused.returncode == 1, refused.stderr[-2000:]
    (line,) = [line for line in refused.stderr.splitlines() if "names block" in line]
    assert line.startswith("zbkit: rank 1: checkpointing plan "), line
    assert "stage 1: the plan names block 'extra', which this stage does not have" in line, line

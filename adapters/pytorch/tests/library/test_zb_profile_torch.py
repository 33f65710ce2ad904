# SPDX-License-Identifier: Apache-2.0
"""`zb profile --torch -- torchrun ... train.py`: an unmodified torch job profiled through
torch.profiler and the adapter's hook, analysed in one command (per-rank traces of a window of
iterations -> per-stage F/B/W, hops and measured activation memory), with the job's exit code."""

from __future__ import annotations

import json
import re

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

pytest.importorskip("torch")

WINDOW = 2


def profile(tmp_path, *script_args: str, extra=()):
    command = [str(require_zb()), "profile", "--torch", "--torch-skip", "1", "--torch-iters",
               str(WINDOW), "--pp", "2", "--json", "--shard-dir", str(tmp_path / "traces"),
               *extra, "--", *torchrun_command(*script_args)]  # fmt: skip
    return run(command, job_env())


def test_profiles_an_unmodified_zbv_job_with_measured_memory(tmp_path):
    args = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "3", "--warmup", "0",
                    "--schedule", "ZBVZeroBubble"]  # fmt: skip
    # no --layout: the traces' stage numbers say V
    done = profile(tmp_path, *args, extra=("--store", str(tmp_path / "zb.db")))
    assert done.returncode == 0, done.stderr[-3000:]
    # With --json stdout is zb's report alone; the job's own lines are on stderr.
    report = json.loads(done.stdout)
    assert "rank 0 iter 0 time_s" in done.stderr, done.stderr[-2000:]
    assert report["ranks"] == 2
    assert report["memory_source"] == "measured"
    assert report["iterations"]["used"] == WINDOW
    # V placement: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
    assert {s["stage"]: s["rank"] for s in report["stages"]} == {0: 0, 1: 1, 2: 1, 3: 0}
    # The profile records the job's layout and the class the script ran (the shim's trace
    # metadata): what `zb tune` keeps to by default.
    assert report["layout"] == "v" and report["layout_known"]
    assert report["schedule_class"] == "ScheduleZBVZeroBubble"
    assert report["costs"]["layout"] == {
        "placement": "v", "stages_per_rank": 2, "schedule": "ScheduleZBVZeroBubble",
    }  # fmt: skip
    assert len(report["costs"]["stages"]) * report["costs"].get("count", 1) == 2  # per rank
    for stage in report["stages"]:
        for kind in ("F", "B", "W"):
            assert stage[kind]["samples"] == 4 * WINDOW, stage
            assert stage[kind]["median"] > 0, stage
        assert stage["M_B"] > 0, stage
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == [
        "rank0.blocks.json", "rank0.json.gz", "rank1.blocks.json", "rank1.json.gz",
    ]  # fmt: skip
    # Per-block costs, measured beside the window: each stage's children in model order (the
    # stage modules of this script each have their own "blocks.0", hence "stage<S>."), the
    # embedding's input (tokens) has no gradient, so all its backward is W.
    layers = report["layers"]
    assert layers["format"] == "zb-layers/1" and layers["source"] == "measured"
    names = [layer["name"] for layer in layers["layers"]]
    assert names[0] == "stage0.embed" and names[-1] == "stage3.head", names
    assert len(names) == 4 + 2, names  # MODEL: 4 transformer blocks, one per stage
    assert [n for n in names if n.startswith("stage2.")] == ["stage2.blocks.0"], names
    embed = layers["layers"][0]
    assert embed["B"] == 0 and embed["W"] > 0, embed
    for layer in layers["layers"][1:-1]:
        assert min(layer[k] for k in ("F", "B", "W", "M_B", "M_W", "state", "send")) > 0, layer
        assert layer["M_W"] <= layer["M_B"], layer
        # Also measured whole-checkpointed, for the memory plan (docs/memory-plan.md §1): F
        # then keeps only the block's input, W reads what it reads without.
        (full,) = layer["options"]
        assert full["checkpointing"] == "full" and full["source"] == "measured", layer
        assert 0 < full["M_B"] < layer["M_B"] and full["M_W"] == layer["M_W"], layer
        assert full["B"] > 0 and full["W"] > 0, layer
    # The blocks' saved activations, measured alone, against each stage's net allocation in the
    # schedule (an independent measurement): the same within a fifth.
    blocks_of = {s: [x for x in layers["layers"] if x["name"].startswith(f"stage{s}.")]
                 for s in range(4)}  # fmt: skip
    for stage in report["stages"]:
        measured = sum(x["M_B"] for x in blocks_of[stage["stage"]])
        assert measured == pytest.approx(stage["M_B"], rel=0.2), (stage, measured)
    assert any("per-block costs: 6 blocks" in note for note in report["notes"]), report["notes"]
    # The loss, measured apart on the last stage, counts with its last block (the head).
    assert any(note.startswith("the loss (F ") and "counted in stage3.head" in note
               for note in report["notes"]), report["notes"]  # fmt: skip
    # Stored with the profile: zb costs export --format layers gives them back.
    exported = run([str(require_zb()), "costs", "export", "--store", str(tmp_path / "zb.db"),
                    "--format", "layers", "-o", "-"], job_env())  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == layers


def test_the_jobs_exit_code_is_kept_and_nothing_recorded_is_one_warning(tmp_path):
    # The script refuses an unknown schedule name before any step; zb returns what torchrun does.
    alone = run(torchrun_command("--schedule", "NoSuchSchedule"), job_env())
    assert alone.returncode != 0
    done = profile(tmp_path, "--schedule", "NoSuchSchedule")
    assert done.returncode == alone.returncode
    warnings = [line for line in done.stderr.splitlines() if line.startswith("zb profile: warning")]
    assert len(warnings) == 1 and "nothing was recorded" in warnings[0], done.stderr[-2000:]


def test_a_job_shorter_than_the_window_says_so_once(tmp_path):
    # skip 1 + 2 profiled steps asked for, the job runs 2: one profiled, said in one warning.
    args = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "2", "--warmup", "0",
                    "--schedule", "1F1B"]  # fmt: skip
    done = profile(tmp_path, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    short = [line for line in done.stderr.splitlines() if "zbkit: warning: the job ran" in line]
    assert len(short) == 1, done.stderr[-3000:]
    assert "ran 2 steps" in short[0] and "1 profiled" in short[0], short[0]
    assert json.loads(done.stdout)["iterations"]["used"] == 1


def losses_of(output: str) -> list:
    """(rank, iteration, loss) of the bundled job's lines "rank R iter I time_s T loss L"."""
    found = re.findall(r"rank (\d+) iter (\d+) time_s \S+ loss (\S+)", output)
    return sorted((int(r), int(i), loss) for r, i, loss in found)


def test_an_interleaved_job_gets_b_and_w_apart_on_every_stage(tmp_path):
    # Interleaved1F1B runs fused backwards ("B" actions) from a compute-only order: in the window
    # the shim splits every other microbatch's into I and W, so that the profile has W > 0 (a
    # profile with W = 0 makes every zero-bubble family score like 1F1B) and BW beside it.
    args = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "3", "--warmup", "0",
                    "--schedule", "Interleaved1F1B", "--stages-per-rank", "2"]  # fmt: skip
    done = profile(tmp_path, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["layout"] == "loop" and report["schedule_class"] == "ScheduleInterleaved1F1B"
    assert report["costs"]["layout"]["stages_per_rank"] == 2
    assert len(report["stages"]) == 4
    for stage in report["stages"]:
        for kind in ("F", "B", "W"):
            assert stage[kind]["median"] > 0, stage
        # 4 microbatches x 2 profiled steps: half of the backwards split (B and W), half fused.
        assert stage["W"]["samples"] == 2 * WINDOW, stage
    # Outside the window the job ran its own order: its losses are those of an unprofiled run.
    alone = run(torchrun_command(*args), job_env())
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert losses_of(done.stderr) == losses_of(alone.stdout) != []


def test_a_recorded_replay_of_a_fused_order_keeps_that_order_and_measures_w(tmp_path):
    # zb replay --shard-dir of interleaved 1F1B (fused backwards) in the unmodified interleaved
    # script: the window splits the loaded order's backwards in place (never the class's own
    # order), the job trains as one process does, the shim names the user's file, and the
    # recorded traces give W on every stage.
    schedule = tuned_schedule(tmp_path, "1f1b-i")
    prefix = tmp_path / "dump"
    args = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "3", "--warmup", "0",
                    "--schedule", "Interleaved1F1B", "--stages-per-rank", "2",
                    "--dump", str(prefix)]  # fmt: skip
    traces = tmp_path / "traces"
    command = [str(require_zb()), "replay", str(schedule), "--shard-dir", str(traces), "--",
               *torchrun_command(*args)]  # fmt: skip
    done = run(command, job_env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"replaying {schedule} (4 stages" in done.stderr, done.stderr[-2000:]
    assert_matches_reference(prefix, args)
    imported = run([str(require_zb()), "import", str(traces), "--format", "chrome", "--pp", "2",
                    "--json"], job_env())  # fmt: skip
    assert imported.returncode == 0, imported.stderr[-2000:]
    for stage in json.loads(imported.stdout)["stages"]:
        assert stage["W"]["median"] > 0 and stage["B"]["median"] > 0, stage

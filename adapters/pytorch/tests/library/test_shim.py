# SPDX-License-Identifier: Apache-2.0
"""The bundled job under torchrun (2 ranks, gloo, CPU): with every torch schedule class, and with
zbkit schedules replayed by `zb replay` into the unmodified script through the shim. Every run
must end with the parameters of the single-process reference (examples/reference.py)."""

from __future__ import annotations

import json
import re
import sys

import pytest
from launch import (
    HOOK_DIR,
    JOB,
    assert_matches_reference,
    job_env,
    require_zb,
    run,
    torchrun_command,
    tuned_schedule,
    zb,
)

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "schedule", ["1F1B", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"]
)
def test_bundled_job_runs_with_each_torch_schedule_class(tmp_path, schedule):
    prefix = tmp_path / "dump"
    args = JOB + ["--schedule", schedule, "--dump", str(prefix)]
    done = run(torchrun_command(*args), job_env())
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = [json.loads(text) for text in re.findall(r"\{[^{}]*\}", done.stdout)]
    assert sorted(s["rank"] for s in summaries) == [0, 1]
    assert all(s["median_iter_s"] > 0 for s in summaries)
    assert "zbkit:" not in done.stderr  # no shim without zb replay
    assert_matches_reference(prefix, args)


def test_zb_replay_runs_a_tuned_zb_h1_schedule_in_the_unmodified_1f1b_script(tmp_path):
    schedule = tuned_schedule(tmp_path, "zb-h1")
    prefix = tmp_path / "dump"
    args = JOB + ["--schedule", "1F1B", "--dump", str(prefix)]
    command = [str(require_zb()), "replay", str(schedule), "--", *torchrun_command(*args)]
    done = run(command, job_env())
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(2):
        assert f"zbkit: rank {rank}: replaying " in done.stderr, done.stderr[-3000:]
        assert "in place of Schedule1F1B's order" in done.stderr
    assert_matches_reference(prefix, args)


def test_shim_runs_a_zb_v_schedule_json_in_the_unmodified_zbv_script(tmp_path):
    # The hook on PYTHONPATH and ZBKIT_SCHEDULE naming the zb-schedule/1 file: the shim converts
    # it with zb export itself (what zb replay does beforehand).
    schedule = tuned_schedule(tmp_path, "zb-v")
    prefix = tmp_path / "dump"
    args = JOB + ["--schedule", "ZBVZeroBubble", "--dump", str(prefix)]
    temp = tmp_path / "tmp"  # where the shim's conversions go: nothing may stay there
    temp.mkdir()
    env = job_env(ZBKIT_SCHEDULE=str(schedule), PYTHONPATH=str(HOOK_DIR), TMPDIR=str(temp))
    done = run(torchrun_command(*args), env)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(2):
        assert f"zbkit: rank {rank}: replaying {schedule} (4 stages, v placement" in done.stderr
    assert_matches_reference(prefix, args)
    assert list(temp.glob("zbkit-schedule-*")) == []
    # Refused (a V order in a 1F1B script): each rank ends at once (os._exit, no atexit), and
    # its conversion is gone all the same.
    refused = run(torchrun_command(*JOB, "--schedule", "1F1B"), env)
    assert refused.returncode != 0
    assert "zbkit: schedule has 4 stages in v placement" in refused.stderr, refused.stderr[-3000:]
    assert list(temp.glob("zbkit-schedule-*")) == []


def test_mismatched_schedule_is_refused_with_one_line_on_every_rank(tmp_path):
    schedule = tuned_schedule(tmp_path, "zb-v")  # 4 stages, V placement
    command = [str(require_zb()), "replay", str(schedule), "--",
               *torchrun_command(*JOB, "--schedule", "1F1B")]  # fmt: skip
    done = run(command, job_env())
    assert done.returncode != 0
    line = "zbkit: schedule has 4 stages in v placement, the script built 2 stages (loop)"
    ours = [ln for ln in done.stderr.splitlines() if ln.startswith("zbkit:")]
    assert ours == [line, line], done.stderr[-3000:]
    assert "iter 0" not in done.stdout  # refused before the first step ran


def test_a_csv_that_would_train_wrong_is_refused_before_the_first_step(tmp_path):
    """A hand-written CSV whose last stage runs F1 before F0 deadlocks nowhere, but PyTorch's
    runtime would pair microbatch 0's backward with microbatch 1's loss (docs/formats.md §4.1):
    the shim refuses it on every rank with one line naming the rule, rank, stage and microbatch."""
    csv_path = tmp_path / "swapped.csv"
    csv_path.write_text("0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n1F1,1F0,1B0,1B1,1F2,1B2,1F3,1B3\n")
    env = job_env(ZBKIT_SCHEDULE=str(csv_path), PYTHONPATH=str(HOOK_DIR))
    done = run(torchrun_command(*JOB, "--schedule", "1F1B"), env)
    assert done.returncode != 0
    line = (
        f'zbkit: {csv_path}: PyTorch runtime rule "last stage\'s forwards in microbatch order" '
        "(docs/formats.md §4.1): rank 1, stage 1 runs F1 (action 0) before F0; PyTorch would "
        "start microbatch 0's backward from microbatch 1's loss"
    )
    ours = [ln for ln in done.stderr.splitlines() if ln.startswith("zbkit:")]
    assert ours == [line, line], done.stderr[-3000:]
    assert "iter 0" not in done.stdout


def test_replay_usage_errors(tmp_path):
    done = zb("replay", "--store", "nowhere.db")
    assert done.returncode == 2
    assert done.stderr.startswith("zb replay: ") and done.stderr.count("\n") == 1
    # A memory plan that is not there: one line, exit 1, the job never starts.
    order = tuned_schedule(tmp_path, "1f1b", 4)
    done = zb("replay", str(order), "--checkpointing-plan", "missing.json", "--", "false")
    assert done.returncode == 1, done.stderr
    assert done.stderr == "zb replay: --checkpointing-plan missing.json: no such file\n"


def test_startup_hook_is_inert_unless_zbkit_launched_the_job():
    """The hook directory on PYTHONPATH alone (no ZBKIT_SCHEDULE, ZBKIT_TORCH_PROFILE or
    ZBKIT_MEMORY_REPORT, which only zbkit's launchers set) imports nothing: a Python process that
    inherits the path by accident runs untouched."""
    probe = "import sys; print(sorted(m for m in ('zbkit', 'torch') if m in sys.modules))"
    env = job_env(PYTHONPATH=str(HOOK_DIR))
    env.pop("ZBKIT_MEMORY_REPORT", None)
    done = run([sys.executable, "-c", probe], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]" and done.stderr == ""
    # The same process launched as zbkit launches it activates the shim (the import hook).
    env["ZBKIT_MEMORY_REPORT"] = "/nonexistent-zbkit-dir"
    done = run([sys.executable, "-c", probe], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['zbkit']"

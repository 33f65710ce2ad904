# SPDX-License-Identifier: Apache-2.0
"""ZBKIT_MEMORY_REPORT on the unmodified bundled job: each rank writes memory.rank<R>.json with the
peak of the bytes autograd held saved for backward, and that peak behaves like activation memory
(in flight microbatches times their size, not the whole batch, not the parameters)."""

from __future__ import annotations

import json

import pytest
from launch import HOOK_DIR, MODEL, job_env, run, torchrun_command

pytest.importorskip("torch")


def memory_reports(tmp_path, schedule: str, microbatches: int, size: int) -> dict:
    """Per rank, the report of a 2-iteration job of `microbatches` microbatches of `size`."""
    directory = tmp_path / f"memory-{schedule}-{microbatches}x{size}"
    args = MODEL + ["--batch", str(microbatches * size), "--microbatches", str(microbatches),
                    "--iters", "2", "--warmup", "0", "--schedule", schedule]  # fmt: skip
    env = job_env(PYTHONPATH=str(HOOK_DIR), ZBKIT_MEMORY_REPORT=str(directory))
    done = run(torchrun_command(*args), env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replaying" not in done.stderr  # measuring alone leaves the script's order alone
    assert sorted(p.name for p in directory.iterdir()) == ["memory.rank0.json",
                                                           "memory.rank1.json"]  # fmt: skip
    reports = {}
    for rank in range(2):
        report = json.loads((directory / f"memory.rank{rank}.json").read_text())
        assert set(report) == {"rank", "peak_activation_bytes", "steps"}
        assert report["rank"] == rank
        assert report["steps"] == 2
        reports[rank] = report
    return reports


@pytest.mark.parametrize("schedule", ["1F1B", "ZBVZeroBubble"])
def test_each_rank_writes_a_positive_peak(tmp_path, schedule):
    reports = memory_reports(tmp_path, schedule, 4, 2)
    for report in reports.values():
        assert report["peak_activation_bytes"] > 0, report


def test_1f1b_peak_follows_microbatches_in_flight_not_their_number(tmp_path):
    # Under 1F1B rank 0 holds at most `ranks` microbatches' activations at once, so twice as many
    # microbatches of the same size leave its peak alone (a GPipe-like order, or saved tensors
    # never released, would double it), while microbatches twice as large double it (so what is
    # counted scales with the activations, not with the parameters).
    four = memory_reports(tmp_path, "1F1B", 4, 2)[0]["peak_activation_bytes"]
    eight = memory_reports(tmp_path, "1F1B", 8, 2)[0]["peak_activation_bytes"]
    larger = memory_reports(tmp_path, "1F1B", 4, 4)[0]["peak_activation_bytes"]
    assert eight == pytest.approx(four, rel=0.1), (four, eight)
    assert larger == pytest.approx(2 * four, rel=0.1), (four, larger)

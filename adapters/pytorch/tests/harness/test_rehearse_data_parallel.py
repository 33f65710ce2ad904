# SPDX-License-Identifier: Apache-2.0
"""`zb rehearse` of a pipeline inside data parallelism (zbkit_harness.emulated_collectives,
docs/rehearse.md §7).

The emulated collectives are checked on the emulated device alone, exactly (times are the
stream's, not the clock's): FSDP's all-gathers at the start in order of first use, a stage's
reduction after its m-th weight gradient, waited for by the next op (in_place) or by the end of
the iteration only (step_end). The command then runs PP2 x DP2 (4 processes): the replicas'
reductions are real collectives, so both replicas of a pipeline rank place each reduction at the
same instant; every row is predicted with the collectives, each zbkit order also runs as tuned
without them, and what must hold whatever the machine's noise is asserted.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from launch import zb_rehearse

from zbkit_harness.emulated_collectives import EmulatedCollectives
from zbkit_harness.emulated_stages import Emulation, RehearsalError, StageCost, split_stages

MS = 1_000_000  # ns
REDUCING = StageCost(f_ms=1.0, b_ms=1.0, w_ms=1.0, reduce_ms=5.0)


def _device(costs, reduce_wait: str, microbatches: int = 2) -> Emulation:
    emulation = Emulation(device="async", rank=0)
    emulation.collectives = EmulatedCollectives(costs, microbatches, reduce_wait)
    emulation.reset(time.perf_counter_ns() + 1000 * MS)  # far enough ahead: no host waits
    return emulation


def _weight(emulation: Emulation, stage: int, microbatch: int):
    span = emulation.run(1.0, stage=stage)
    emulation.record("W", stage, microbatch, span)
    return span


@pytest.mark.parametrize("reduce_wait", ["in_place", "step_end"])
def test_a_stage_reduces_after_its_last_weight_gradient(reduce_wait: str) -> None:
    emulation = _device({0: REDUCING}, reduce_wait)
    start = emulation.stream_free_ns
    _weight(emulation, 0, 0)
    last = _weight(emulation, 0, 1)  # the m-th: the reduction starts when it ends
    after = emulation.run(1.0, stage=0)
    waited = reduce_wait == "in_place"
    assert after[0] == (last[1] + 5 * MS if waited else last[1])
    assert emulation.collectives.finish() == start + 2 * MS + 5 * MS
    assert emulation.collectives.events == [("reduce", 0, last[1], last[1] + 5 * MS)]


def test_fsdp_gathers_each_stage_first_in_order_of_first_use() -> None:
    costs = {
        3: StageCost(1.0, 1.0, 1.0, unshard_ms=3.0),
        0: StageCost(1.0, 1.0, 1.0, unshard_ms=2.0),
    }
    emulation = _device(costs, "in_place")
    start = emulation.stream_free_ns
    # Stage 3's op waits for both gathers (stage 0's goes first); stage 0's only for its own.
    assert emulation.run(1.0, stage=3)[0] == start + 5 * MS
    emulation.stream_free_ns = start
    assert emulation.run(1.0, stage=0)[0] == start + 2 * MS
    assert [event[:2] for event in emulation.collectives.events] == [("unshard", 0), ("unshard", 3)]


def test_what_is_not_emulated_is_refused() -> None:
    gathered = StageCost(1.0, 1.0, 1.0, unshard_ms=1.0)
    with pytest.raises(RehearsalError, match="unshard window"):
        EmulatedCollectives({s: gathered for s in range(4)}, 2)
    with pytest.raises(RehearsalError, match="reduce_wait"):
        EmulatedCollectives({0: REDUCING}, 2, "later")


def test_interleaved_parts_share_their_stages_collectives() -> None:
    (first, second) = split_stages([StageCost(2.0, 2.0, 2.0, reduce_ms=5.0, unshard_ms=3.0)], 2)
    assert first.reduce_ms + second.reduce_ms == pytest.approx(5.0)
    assert first.unshard_ms + second.unshard_ms == pytest.approx(3.0)


def test_rehearse_two_replicas_of_a_two_rank_pipeline(tmp_path: Path) -> None:
    costs = tmp_path / "reducing.json"
    stage = {"F": 4.0, "B": 4.0, "W": 2.0, "M_B": 1000, "M_W": 400, "reduce": 8.0}
    costs.write_text(json.dumps({"format": "zb-costs/1", "name": "reducing", "comm": 0.2,
                                 "count": 2, "data_parallel": 2, "reduce_wait": "step_end",
                                 "stages": [stage]}))  # fmt: skip
    done = zb_rehearse(
        tmp_path, "--costs", str(costs), "-m", "4", "--mem-limit", "2x", "--schedules",
        "torch:1F1B,zbkit:zb-h1", "--dp", "2", "--iters", "2", "--rounds", "1", "--json",
        timeout=420,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "emulated on 2 replica(s) of the pipeline (4 processes" in done.stderr
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert doc["ranks"] == 2 and doc["replicas"] == 2
    rows = {(row["schedule"], row["runtime"]): row for row in doc["rows"]}
    assert set(rows) == {("torch:Schedule1F1B", "torch"),
                         ("zbkit:zb-h1", "shim"), ("zbkit:zb-h1", "executor"),
                         ("zbkit:zb-h1/dp-oblivious", "shim"),
                         ("zbkit:zb-h1/dp-oblivious", "executor")}  # fmt: skip
    # A rank's work, then its last stage's reduction: no iteration is shorter, none predicted so.
    floor = 4 * (4.0 + 4.0 + 2.0) + 8.0
    for key, row in rows.items():
        assert row["predicted_ms"] >= floor and row["measured_ms"] >= floor, key
        assert row["peak_bytes"] == row["predicted_peak"], key
        if key[1] != "torch":
            assert row["order"] == "as scheduled", key
    # Zero bubble defers W; the oblivious order reduces both stages at the end, the DP-aware one
    # is never predicted slower.
    for runtime in ("shim", "executor"):
        aware = rows[("zbkit:zb-h1", runtime)]["predicted_ms"]
        assert aware <= rows[("zbkit:zb-h1/dp-oblivious", runtime)]["predicted_ms"], runtime
    assert "vs its DP-oblivious order" in done.stdout
    # The replicas' reductions are one collective: both replicas of a pipeline rank place each
    # at the same instant (the later replica's ready time).
    folder = tmp_path / "zbkit-rehearse" / "summaries" / "zbkit-zb-h1-executor-round0"
    for rank in (0, 1):
        replicas = [json.loads((folder / f"timeline.rank{r}.json").read_text())["collectives"]
                    for r in (rank, rank + 2)]  # fmt: skip
        reductions = [[(c["stage"], c["start_ns"]) for c in cs if c["type"] == "reduce"]
                      for cs in replicas]  # fmt: skip
        assert reductions[0] == reductions[1] and [s for s, _ in reductions[0]] == [rank], rank

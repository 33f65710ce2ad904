# SPDX-License-Identifier: Apache-2.0
"""`zb rehearse` and its emulated stages (zbkit_harness.emulated_stages, zbkit_harness.rehearse).

The emulated stages are checked under both B/W splits (torch's own and zbkit's BackwardSplit):
each computation sleeps at least its duration, records itself once with its microbatch, passes
values through, and holds M_B - M_W until B and M_W until W. The command runs on 2 ranks with
millisecond costs; what it must get right whatever the machine's noise is asserted exactly: every
row predicted by zb tune, the zbkit orders run as scheduled, peaks equal to the predicted ones
(the memory account follows the order, not the clock), no iteration shorter than a rank's work.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from launch import zb_binary, zb_rehearse

from zbkit.bw_split import BackwardSplit
from zbkit.errors import ZbkitError
from zbkit_harness.emulated_stages import (
    STAMP,
    STAMP_MARK,
    EmulatedStage,
    Emulation,
    StageCost,
    batch,
    loss_fn,
    read_costs,
    split_stages,
)
from zbkit_harness.rehearse import expected_order, first_divergence
from zbkit_harness.rehearse_rows import parse_schedules

COST = StageCost(f_ms=6.0, b_ms=8.0, w_ms=4.0, m_b=1000.0, m_w=400.0)
TINY = {"format": "zb-costs/1", "name": "tiny", "comm": 0.2, "count": 2,
        "stages": [{"F": 4.0, "B": 4.0, "W": 2.0, "M_B": 1000, "M_W": 400}]}  # fmt: skip


def _zb() -> Path:
    binary = zb_binary()
    if not binary.is_file():
        msg = f"zb binary not built at {binary} (set ZBKIT_ZB_BINARY or build the repository)"
        print(f"SKIP: {msg}")
        pytest.skip(msg)
    return binary


def _message(tag: int) -> torch.Tensor:
    return batch(tag + 1, 8)[tag:]  # row `tag` of a batch: stamped with that microbatch


def _stage_and_input(stage_id: int, emulation: Emulation, tag: int = 3):
    stage = EmulatedStage(stage_id, COST, 8, emulation)
    return stage, _message(tag).requires_grad_(stage_id > 0)


def _same_but_stamp(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values outside the ready time and producer the stamp adds."""
    return torch.equal(a.detach()[:, [0, *range(STAMP, a.shape[1])]],
                       b.detach()[:, [0, *range(STAMP, b.shape[1])]])  # fmt: skip


def _durations(emulation: Emulation):
    return {kind: (end - start) / 1e6 for kind, _s, _mb, start, end in emulation.events}


def test_split_stages_is_the_tuners_rule(tmp_path: Path) -> None:
    """The costs a zb tune schedule file carries per stage as scheduled equal split_stages of the
    profile (docs/cost-model.md §5), remainder nanoseconds included (for zbkit's runtime: for
    torch's, stage 0 carries what torch's runtime spends, TorchRuntimeCosts)."""
    costs = tmp_path / "odd.json"
    costs.write_text(json.dumps({"format": "zb-costs/1", "comm": 0.1, "stages": [
        {"F": 1.000001, "B": 2.000002, "W": 0.333333, "M_B": 10, "M_W": 3},
        {"F": 3.5, "B": 1.1, "W": 0.7, "M_B": 7, "M_W": 1}]}))  # fmt: skip
    for family, chunks in (("zb-v", 2), ("1f1b-i", 3)):
        out = tmp_path / f"{family}.json"
        subprocess.run(
            [str(_zb()), "tune", "--costs", str(costs), "-m", "6", "--mem-limit", "none",
             "--family", family, "--chunks", str(chunks), "--runtime", "zbkit", "--out", str(out)],
            check=True, capture_output=True,
        )  # fmt: skip
        doc = json.loads(out.read_text())
        entries = doc["costs"]["stages"] * doc["costs"].get("count", 1)
        if len(doc["costs"]["stages"]) > 1:
            entries = doc["costs"]["stages"]
        stages, _ = read_costs(costs)
        mine = split_stages(stages, doc["chunks"])
        assert len(entries) == len(mine) == 2 * doc["chunks"]
        for entry, cost in zip(entries, mine):
            assert (entry["F"], entry["B"], entry["W"]) == pytest.approx(
                (cost.f_ms, cost.b_ms, cost.w_ms), abs=1e-9
            )
            assert (entry["M_B"], entry["M_W"]) == pytest.approx((cost.m_b, cost.m_w))


def test_torch_split_runs_b_then_w() -> None:
    """torch's stage_backward_input runs B only, stage_backward_weight W only."""
    from torch.distributed.pipelining._backward import (
        stage_backward_input,
        stage_backward_weight,
    )

    emulation = Emulation()
    stage, x = _stage_and_input(1, emulation)
    out = stage(x)
    assert _same_but_stamp(out, x) and emulation.live == COST.m_b
    grad = _message(3)
    dinputs, groups = stage_backward_input([out], [grad], [x], stage.parameters())
    assert _same_but_stamp(dinputs[0], grad), "the gradient passes through"
    assert [e[:3] for e in emulation.events] == [("F", 1, 3), ("B", 1, 3)]
    assert emulation.live == COST.m_w, "B frees what W does not need"
    stage_backward_weight(stage.parameters(), groups)
    del groups, out
    assert [e[:3] for e in emulation.events] == [("F", 1, 3), ("B", 1, 3), ("W", 1, 3)]
    assert _same_but_stamp(stage.weight.grad[None], grad)
    assert emulation.live == 0 and emulation.peak == COST.m_b
    took = _durations(emulation)
    assert took["F"] >= COST.f_ms and took["B"] >= COST.b_ms and took["W"] >= COST.w_ms


def test_zbkit_split_on_the_first_stage() -> None:
    """zbkit's BackwardSplit on the first stage (no input gradient wanted) still runs B in B: the
    emulated graph, like real layers, needs the activation path for the weight's gradient."""
    emulation = Emulation()
    stage, x = _stage_and_input(0, emulation, tag=2)
    x = x.detach().requires_grad_(True)  # as the executor anchors a floating first input
    split = BackwardSplit(stage.parameters())
    target = _message(2)  # the loss's gradient carries the tag back
    with split.record():
        out = loss_fn(stage(x), target)
    split.seal((out,), (x,))
    split.backward_input((None,), [False])
    assert [e[:3] for e in emulation.events] == [("F", 0, 2), ("B", 0, 2)]
    assert emulation.live == COST.m_w
    split.backward_weight()
    del split, out
    assert [e[0] for e in emulation.events] == ["F", "B", "W"]
    assert emulation.live == 0


# A fully checkpointed stage: W reads more than F leaves (M_W > M_B), B holds one recomputation.
CHECKPOINTED = StageCost(f_ms=3.0, b_ms=7.0, w_ms=3.0, m_b=100.0, m_w=700.0)
GROUPS = 3


@pytest.mark.parametrize("split", ["torch", "zbkit"])
def test_a_checkpointed_stage_recomputes_as_the_split_does(split: str) -> None:
    """A checkpointed emulated stage under torch's own split recomputes its forward in B and
    again once per parameter group in W (1 + GROUPS), under zbkit's split once; each op is
    recorded once, the recomputations inside the B or W that ran them; F leaves M_B, B holds
    M_W until W (torch's split too: what B recomputed for W stays with the checkpoint)."""
    emulation = Emulation()
    stage = EmulatedStage(1, CHECKPOINTED, 8, emulation, param_groups=GROUPS)
    assert len(list(stage.parameters())) == GROUPS
    x = _message(3).requires_grad_(True)
    grad = _message(3)
    if split == "torch":
        from torch.distributed.pipelining._backward import (
            stage_backward_input,
            stage_backward_weight,
        )

        out = stage(x)
        assert emulation.live == CHECKPOINTED.m_b
        _dx, groups = stage_backward_input([out], [grad], [x], stage.parameters())
        assert len(groups) == GROUPS
        assert emulation.live == CHECKPOINTED.m_w
        stage_backward_weight(stage.parameters(), groups)
        del groups, out
        want = 1 + GROUPS
    else:
        backward = BackwardSplit(stage.parameters())
        with backward.record():
            out = stage(x)
        assert emulation.live == CHECKPOINTED.m_b
        backward.seal((out,), (x,))
        backward.backward_input((grad,), [True])
        assert emulation.live == CHECKPOINTED.m_w
        backward.backward_weight()
        del backward, out
        want = 1
    assert [e[:3] for e in emulation.events] == [("F", 1, 3), ("B", 1, 3), ("W", 1, 3)]
    assert emulation.recomputes == {(1, 3): want}
    assert emulation.live == 0
    took = _durations(emulation)
    # B: its recomputation (F) and the rest of the profile's B; W: torch's recomputes in it.
    assert took["F"] >= CHECKPOINTED.f_ms and took["B"] >= CHECKPOINTED.b_ms
    extra = GROUPS * CHECKPOINTED.f_ms if split == "torch" else 0.0
    assert took["W"] >= CHECKPOINTED.w_ms + extra
    assert all(p.grad is not None for p in stage.parameters())


def test_async_device_runs_on_the_stream() -> None:
    """The async device does not block the host: each op starts at the latest of the host's
    issue, the stream's previous end and its input's ready time plus the hop (for an input from
    another rank), and the host waits only in synchronize; sends of this rank's messages carry
    the stream's end at the time of the send."""
    from zbkit_harness.emulated_stages import _stamp_of, _stamped

    emulation = Emulation(device="async", rank=1, hop_ms=2.0)
    start = time.perf_counter_ns()
    emulation.reset(start)
    stage = EmulatedStage(1, COST, 8, emulation)
    ready = start + 50_000_000  # the input from rank 0 is ready 50 ms from now
    x = _stamped(_message(4), ready, 0).requires_grad_(True)
    out = stage(x)
    assert time.perf_counter_ns() - start < 40_000_000, "the host did not wait for F"
    (kind, _s, mb, f_start, f_end) = emulation.events[0]
    assert (kind, mb) == ("F", 4) and f_start == ready + 2_000_000  # ready + hop
    assert f_end == f_start + 6_000_000 and emulation.host_bound_ns == 0
    assert _stamp_of(out) == (4, f_end, 1)
    emulation.synchronize()
    assert time.perf_counter_ns() >= f_end
    local = _stamped(_message(5), f_end, 1)  # from this rank: no hop
    emulation.stream_free_ns = 0
    assert emulation.run(1.0, *_stamp_of(local)[1:])[0] >= f_end


def test_only_a_marked_stamp_is_a_stamp() -> None:
    """torch's shape inference runs a stage on uninitialised buffers: whatever they hold, no
    microbatch, ready time or producer is read from a tensor without the mark."""
    from zbkit_harness.emulated_stages import _stamp_of

    assert _stamp_of(_message(3)) == (3, 0, -1)
    for garbage in (torch.full((1, 8), 5.0, dtype=torch.float64),
                    torch.tensor([[2.0, 1e300, 0.0, 1.0, 0.0]], dtype=torch.float64),
                    torch.tensor([[2.0, 1e30, 0.0, STAMP_MARK]], dtype=torch.float64),
                    torch.tensor([[float("nan"), 0.0, 0.0, STAMP_MARK]], dtype=torch.float64),
                    torch.zeros(1, 2, dtype=torch.float64)):  # fmt: skip
        assert _stamp_of(garbage) == (-1, 0, -1), garbage


def test_expected_order_and_divergence() -> None:
    schedule = {"ranks": [{"rank": 0, "stages": [0], "ops": [
        {"type": "F", "mb": 0}, {"type": "B", "mb": 0}, {"type": "W", "mb": 0},
        {"type": "F", "mb": 1}, {"type": "BW", "mb": 1}]}]}  # fmt: skip
    executor = expected_order(schedule, "executor")[0]
    assert executor == [("F", 0, 0), ("B", 0, 0), ("W", 0, 0), ("F", 0, 1), ("B", 0, 1),
                        ("W", 0, 1)]  # fmt: skip
    # torch's runtime runs the first stage's B inside its W
    assert expected_order(schedule, "shim")[0] == executor
    schedule["ranks"][0]["ops"].insert(1, schedule["ranks"][0]["ops"].pop(3))  # F1 before B0
    shim = expected_order(schedule, "shim")[0]
    assert shim[:2] == [("F", 0, 0), ("F", 0, 1)]
    assert first_divergence(executor, executor) == ""
    assert "op 1: ran F of stage 0 microbatch 1" in first_divergence(executor, shim)
    assert "ran 5 computations" in first_divergence(executor, executor[:5])


def test_parse_schedules() -> None:
    assert parse_schedules("torch:1F1B,zbkit, torch:Schedule1F1B") == [
        "torch:Schedule1F1B", "zbkit:search"]  # fmt: skip
    assert len(parse_schedules("torch")) == 5
    for bad in ("torch:Nope", "zbkit:zb-h9", "jax", ""):
        with pytest.raises(ZbkitError):
            parse_schedules(bad)


def _rehearse(tmp_path: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    _zb()  # a skip that says why, before anything runs
    return zb_rehearse(tmp_path, *args, timeout=timeout)


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    costs = tmp_path / "tiny.json"
    costs.write_text(json.dumps(TINY))
    for args, says in (
        (["--costs", str(costs), "-m", "4", "--mem-limit", "2x", "--schedules", "torch:Nope"],
         "unknown torch schedule 'Nope'"),
        (["--costs", str(tmp_path / "none.json"), "-m", "4", "--mem-limit", "2x"],
         "no such file"),
        (["--costs", str(costs), "-m", "0", "--mem-limit", "2x"], "--microbatches must be >= 1"),
        (["--costs", str(costs), "--mem-limit", "2x"], "-m/--microbatches"),
        (["--costs", str(costs), "-m", "4", "--mem-limit", "lots"], "--mem-limit"),
    ):  # fmt: skip
        done = _rehearse(tmp_path, *args)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], done.stderr
        assert not (tmp_path / "zbkit-rehearse").exists(), "nothing written on a usage error"


def test_a_schedule_that_cannot_be_had_is_reported_and_the_rest_runs(tmp_path: Path) -> None:
    """zb-h2 needs 1.5x 1F1B's memory: at 1x its rows fail with zb tune's one line, torch's row
    still runs and is reported, and the exit code says something failed."""
    costs = tmp_path / "tiny.json"
    costs.write_text(json.dumps(TINY))
    done = _rehearse(
        tmp_path, "--costs", str(costs), "-m", "4", "--mem-limit", "1x", "--schedules",
        "torch:1F1B,zbkit:zb-h2", "--iters", "1", "--rounds", "1", "--json",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    rows = {(row["schedule"], row["runtime"]): row for row in doc["rows"]}
    assert rows[("torch:Schedule1F1B", "torch")]["measured_ms"] > 0
    for runtime in ("shim", "executor"):
        assert "no schedule fits --mem-limit 1x" in rows[("zbkit:zb-h2", runtime)]["error"]
    assert doc["tuned"] is None and doc["best_torch"] == "torch:Schedule1F1B"


def test_rehearse_two_ranks(tmp_path: Path) -> None:
    costs = tmp_path / "tiny.json"
    costs.write_text(json.dumps(TINY))
    store = tmp_path / "store.db"
    done = _rehearse(
        tmp_path, "--costs", str(costs), "-m", "4", "--mem-limit", "2x", "--schedules",
        "torch:1F1B,torch:ZBVZeroBubble,zbkit", "--iters", "2", "--rounds", "1",
        "--search-time", "0.5", "--store", str(store), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert doc["format"] == "zb-rehearse/1" and doc["ranks"] == 2
    rows = {(row["schedule"], row["runtime"]): row for row in doc["rows"]}
    assert set(rows) == {("torch:Schedule1F1B", "torch"), ("torch:ScheduleZBVZeroBubble", "torch"),
                         ("zbkit:search", "shim"), ("zbkit:search", "executor")}  # fmt: skip
    assert doc["tuned"] == "zbkit:search" and doc["best_torch"].startswith("torch:")
    # A rank does 4 microbatches x (F + B + W) of its stages' work: no iteration is shorter.
    rank_work = 4 * (4.0 + 4.0 + 2.0)
    for key, row in rows.items():
        assert row["iterations"] == 2, key
        assert row["predicted_ms"] > rank_work, key
        assert row["measured_ms"] >= rank_work, key
        assert row["peak_bytes"] == row["predicted_peak"], key
    for runtime in ("shim", "executor"):
        assert rows[("zbkit:search", runtime)]["order"] == "as scheduled"
    run_ids = {rows[("zbkit:search", r)].get("run_id") for r in ("shim", "executor")}
    assert None not in run_ids and len(run_ids) == 2, "both runs are stored"
    hops = subprocess.run([str(_zb().resolve()), "costs", "hops", "--store", str(store), "--json"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    (measurement,) = json.loads(hops.stdout)["measurements"]
    assert measurement["cluster"] == "local" and measurement["message_bytes"] == 4096
    assert [(h["from"], h["to"]) for h in measurement["hops"]] == [(0, 1)]
    assert measurement["median_ms"] == pytest.approx(doc["comm_ms"], abs=1e-3)
    assert "order as scheduled" in done.stdout
    assert (tmp_path / "zbkit-rehearse" / "schedule-search.json").is_file()
    # The stored runs carry the emulated device's times: each F exactly as long as its cost.
    schedule = json.loads((tmp_path / "zbkit-rehearse" / "schedule-search.json").read_text())
    entries = schedule["costs"]["stages"] * schedule["costs"].get("count", 1)
    if len(schedule["costs"]["stages"]) > 1:
        entries = schedule["costs"]["stages"]
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        for runtime in ("shim", "executor"):
            ops = db.execute(
                "SELECT o.stage, o.end_ns - o.start_ns FROM timeline_ops o JOIN timelines t"
                " ON t.id = o.timeline_id WHERE t.run_id = ? AND o.kind = 'F'",
                (rows[("zbkit:search", runtime)]["run_id"],),
            ).fetchall()
            assert len(ops) == len(entries) * 4 * 3, runtime  # stages x m x iterations
            for stage, duration_ns in ops:
                assert duration_ns / 1e6 == pytest.approx(entries[stage]["F"], abs=1e-3), runtime


def test_rehearse_under_checkpointing(tmp_path: Path) -> None:
    """A profile of a fully checkpointed job: torch's zero-bubble class runs with its own
    recompute count (1 on the first stage, which it runs whole in W; 1 + groups elsewhere),
    zbkit's order once in each runtime, as scheduled, with the predicted peaks (M_W > M_B)."""
    costs = tmp_path / "checkpointed.json"
    costs.write_text(json.dumps({**TINY, "checkpointing": "full",
                                 "stages": [{"F": 2.0, "B": 4.0, "W": 2.0, "M_B": 100,
                                             "M_W": 500}]}))  # fmt: skip
    done = _rehearse(
        tmp_path, "--costs", str(costs), "-m", "4", "--mem-limit", "none", "--schedules",
        "torch:ZBVZeroBubble,zbkit:zb-v", "--iters", "1", "--rounds", "1",
        "--ac-param-groups", str(GROUPS), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    rows = {(row["schedule"], row["runtime"]): row for row in doc["rows"]}
    assert rows[("torch:ScheduleZBVZeroBubble", "torch")]["recomputes"] == [1, 1 + GROUPS]
    for runtime in ("shim", "executor"):
        row = rows[("zbkit:zb-v", runtime)]
        assert row["recomputes"] == [1, 1], runtime
        assert row["order"] == "as scheduled", runtime
        assert row["peak_bytes"] == pytest.approx(row["predicted_peak"], rel=1e-9), runtime
    assert "under checkpointing" in done.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

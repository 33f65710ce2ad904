# SPDX-License-Identifier: Apache-2.0
"""PipelineExecutor in real 2-rank gloo pipelines against an unpipelined reference."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import pipeline_worker as pw  # noqa: E402
from worker_session import Session  # noqa: E402

from zbkit.schedule import Schedule  # noqa: E402

FAMILIES = ("1f1b", "zb-h1", "zb-h2", "zb-auto", "zb-v", "1f1b-i")
TUNE_ARGS = {"1f1b-i": ["--chunks", "2"]}  # interleaved: 2 stages per rank, loop placement


@pytest.fixture(scope="module")
def schedules(zb_tuner: Any) -> Dict[str, Schedule]:
    return {f: zb_tuner.tune(f, extra=TUNE_ARGS.get(f, ())) for f in FAMILIES}


STALL_TIMEOUT_S = 2.0
DEAD_TIMEOUT_S = 5.0
MISMATCH_TIMEOUT_S = 5.0


@pytest.fixture(scope="module")
def sessions(
    schedules: Dict[str, Schedule], zb_tuner: Any, tmp_path_factory: Any
) -> Dict[str, Session]:
    """All 2-rank sessions of this file, started together so that their start-up overlaps.

    grads: every family, then the malformed schedules; dead: rank 1 dies mid-step; stalled:
    rank 1 sleeps mid-step; mismatch: the ranks run different schedules."""
    base = schedules["zb-h1"]
    missing = list(base.ops[1])
    dropped = missing.pop()
    assert dropped.kind == "W" and dropped.microbatch == 3
    bad = {
        "wrong-rank-count": zb_tuner.tune("zb-h1", ranks=3, microbatches=6),
        "missing-op": dataclasses.replace(base, ops=(base.ops[0], tuple(missing))),
        "stage-on-two-ranks": dataclasses.replace(base, stages=((0,), (0,))),
    }
    half = len(base.ops[1]) // 2
    jobs = {
        "grads": ("grads", {"schedules": schedules, "bad": bad, "timeout_s": 30.0}),
        "dead": (
            "failure",
            {"schedules": [base, base], "die": {1: half}, "timeout_s": DEAD_TIMEOUT_S},
        ),
        "stalled": (
            "failure",
            {"schedules": [base, base], "stall": {1: 2}, "timeout_s": STALL_TIMEOUT_S},
        ),
        "mismatch": (
            "failure",
            {"schedules": [base, schedules["zb-h2"]], "timeout_s": MISMATCH_TIMEOUT_S},
        ),
    }
    return {
        name: Session(mode, job, tmp_path_factory.mktemp(name), timeout=100)
        for name, (mode, job) in jobs.items()
    }


@pytest.fixture(scope="module")
def grads_run(sessions: Dict[str, Session]) -> List[Any]:
    return sessions["grads"].results()


@pytest.fixture(scope="module")
def reference() -> Dict[int, Any]:
    return {n: pw.reference(n, 4) for n in (2, 4)}


@pytest.mark.parametrize("family", FAMILIES)
def test_gradients_match_unpipelined_step(
    family: str, schedules: Dict[str, Schedule], grads_run: List[Any], reference: Dict[int, Any]
) -> None:
    sched = schedules[family]
    assert sched.family == family
    if family == "zb-v":
        assert sched.placement == "v" and sched.num_stages == 4
    if family == "1f1b-i":
        assert sched.placement == "loop" and sched.stages == ((0, 2), (1, 3))
    ref_loss, ref_grads = reference[sched.num_stages]
    got: Dict[str, Any] = {}
    for r in range(2):
        got.update(grads_run[r][family]["grads"])
    assert sorted(got) == sorted(ref_grads)
    for name, g in ref_grads.items():
        assert torch.allclose(got[name], g, rtol=1e-5, atol=1e-10), f"{family}: {name} differs"
    last = sched.rank_of_stage(sched.num_stages - 1)
    losses = grads_run[last][family]["losses"]
    assert len(losses) == sched.microbatches
    assert abs(sum(losses) / len(losses) - ref_loss) < 1e-10
    assert grads_run[1 - last][family]["losses"] == []
    # The recorder saw every op of the rank, begin before end, in order.
    for r in range(2):
        events = grads_run[r][family]["events"]
        n = len(sched.ops[r])
        assert events == [(k, i) for i in range(n) for k in ("begin", "end")]
        assert grads_run[r][family]["peak_bytes"] > 0


def test_split_memory_reported_per_stage(
    schedules: Dict[str, Schedule], grads_run: List[Any]
) -> None:
    """B ops report what F saved and what stays for W (less, but not nothing)."""
    for r in range(2):
        stats = grads_run[r]["zb-h1"]["memory_stats"]
        assert set(stats) == set(schedules["zb-h1"].stages[r])
        for per_mb in stats.values():
            assert len(per_mb) == schedules["zb-h1"].microbatches
            for st in per_mb.values():
                assert 0 < st.retained_bytes < st.saved_bytes
                assert st.captured_bytes > 0


@pytest.mark.parametrize("case", ["wrong-rank-count", "missing-op", "stage-on-two-ranks"])
def test_malformed_schedule_fails_fast_on_every_rank(case: str, grads_run: List[Any]) -> None:
    expected = {
        "wrong-rank-count": "made for 3 ranks but the process group has 2",
        "missing-op": "rank 1 has no W for stage 1 microbatch 3",
        "stage-on-two-ranks": "stage 0 is on rank 0 and on rank 1",
    }[case]
    for r in range(2):
        res = grads_run[r][case]
        assert res["error"] is not None, f"rank {r} accepted the {case} schedule"
        assert expected in res["error"], res["error"]
        assert "\n" not in res["error"]
        assert res["seconds"] < 1.0
    assert grads_run[0][case]["error"] == grads_run[1][case]["error"]


def test_dead_peer_gives_clear_error_within_timeout(sessions: Dict[str, Session]) -> None:
    res = sessions["dead"].results()
    assert res[1] is None  # the victim died before writing anything
    died_at = float((sessions["dead"].folder / "note-rank1").read_text())
    survivor = res[0]
    assert survivor["error"] is not None
    msg = survivor["error"]
    after = survivor["error_at"] - died_at
    print(f"survivor raised {after:.2f} s after its peer died: {msg}")
    assert 0 <= after < DEAD_TIMEOUT_S + 1.0, survivor
    assert "rank 0 op " in msg and "peer rank 1" in msg, msg


def test_stalled_peer_gives_clear_error_within_timeout(sessions: Dict[str, Session]) -> None:
    """A peer that is alive but stops sending: the receive's own timeout must fire."""
    assert pw.STALL_S > STALL_TIMEOUT_S + 2.0
    res = sessions["stalled"].results()
    stalled_at = float((sessions["stalled"].folder / "note-rank1").read_text())
    msg = res[0]["error"]
    assert msg is not None, "rank 0 finished a step while its peer was stalled"
    after = res[0]["error_at"] - stalled_at
    print(f"rank 0 raised {after:.2f} s after its peer stalled: {msg}")
    assert STALL_TIMEOUT_S - 0.5 <= after < STALL_TIMEOUT_S + 2.0, res[0]
    assert "rank 0 op " in msg and "peer rank 1" in msg, msg
    assert "timed out" in msg.lower(), msg


def test_mismatched_peer_gives_clear_error_on_both_ranks(sessions: Dict[str, Session]) -> None:
    res = sessions["mismatch"].results()
    for r in range(2):
        msg = res[r]["error"]
        assert msg is not None, f"rank {r} ran a step against a peer with another schedule"
        print(f"rank {r} after {res[r]['seconds']:.2f} s: {msg}")
        assert f"rank {r} op " in msg and f"peer rank {1 - r}" in msg, msg
        # Within the timeout, with room for a slow first step on a loaded machine.
        assert res[r]["seconds"] < MISMATCH_TIMEOUT_S + 5.0
    assert "runs a different schedule" in res[0]["error"] + res[1]["error"]

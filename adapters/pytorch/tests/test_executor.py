# SPDX-License-Identifier: Apache-2.0
"""PipelineExecutor in real 2-rank gloo pipelines against an unpipelined reference."""

from __future__ import annotations

import dataclasses
import os
import pickle
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import pipeline_worker as pw  # noqa: E402
from zbkit.schedule import Schedule  # noqa: E402

WORKER = Path(__file__).with_name("pipeline_worker.py")
FAMILIES = ("1f1b", "zb-h1", "zb-h2", "zb-auto", "zb-v")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(mode: str, job: Dict[str, Any], folder: Path, timeout: float = 90) -> List[Any]:
    """Starts 2 worker processes, waits (bounded) and returns their result dicts by rank."""
    folder.mkdir(parents=True, exist_ok=True)
    job_path = folder / "job.pkl"
    job_path.write_bytes(pickle.dumps(job))
    port = _free_port()
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), mode, str(r), "2", str(port), str(job_path), str(folder)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    deadline = time.monotonic() + timeout
    logs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"{mode} workers did not finish within {timeout} s")
        logs.append(out)
    results = []
    for r in range(2):
        path = folder / f"rank{r}.pt"
        results.append(torch.load(path, weights_only=False) if path.exists() else None)
        if results[-1] is None and job.get("die", {}).get(r) is None:
            pytest.fail(f"rank {r} wrote no result (exit {procs[r].returncode}):\n{logs[r]}")
    return results


@pytest.fixture(scope="module")
def schedules(zb_tuner: Any) -> Dict[str, Schedule]:
    return {f: zb_tuner.tune(f) for f in FAMILIES}


@pytest.fixture(scope="module")
def grads_run(schedules: Dict[str, Schedule], zb_tuner: Any, tmp_path_factory: Any) -> List[Any]:
    """One 2-rank session: every family, then the malformed schedules."""
    base = schedules["zb-h1"]
    missing = list(base.ops[1])
    dropped = missing.pop()
    assert dropped.kind == "W" and dropped.microbatch == 3
    bad = {
        "wrong-rank-count": zb_tuner.tune("zb-h1", ranks=3, microbatches=6),
        "missing-op": dataclasses.replace(base, ops=(base.ops[0], tuple(missing))),
        "stage-on-two-ranks": dataclasses.replace(base, stages=((0,), (0,))),
    }
    job = {"schedules": schedules, "bad": bad, "timeout_s": 30.0}
    return run_ranks("grads", job, tmp_path_factory.mktemp("grads"))


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
    """B/W ops report what F saved and what stays for W (less, but not nothing)."""
    for r in range(2):
        stats = grads_run[r]["zb-h1"]["memory_stats"]
        assert set(stats) == set(schedules["zb-h1"].stages[r])
        for per_mb in stats.values():
            for saved, retained in per_mb.values():
                assert 0 < retained < saved


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


def test_dead_peer_gives_clear_error_within_timeout(
    schedules: Dict[str, Schedule], tmp_path: Path
) -> None:
    sched = schedules["zb-h1"]
    timeout_s = 5.0
    victim_op = len(sched.ops[1]) // 2
    job = {"schedules": [sched, sched], "die": {1: victim_op}, "timeout_s": timeout_s}
    t0 = time.monotonic()
    res = run_ranks("failure", job, tmp_path, timeout=60)
    assert res[1] is None  # the victim died before writing anything
    died_at = float((tmp_path / "note-rank1").read_text())
    survivor = res[0]
    assert survivor["error"] is not None
    msg = survivor["error"]
    after = survivor["error_at"] - died_at
    print(f"survivor raised {after:.2f} s after its peer died: {msg}")
    assert 0 <= after < timeout_s + 1.0, survivor
    assert "rank 0 op " in msg and "peer rank 1" in msg, msg
    assert time.monotonic() - t0 < 60


def test_stalled_peer_gives_clear_error_within_timeout(
    schedules: Dict[str, Schedule], tmp_path: Path
) -> None:
    """A peer that is alive but stops sending: the receive's own timeout must fire."""
    sched = schedules["zb-h1"]
    timeout_s = 2.0
    assert pw.STALL_S > timeout_s + 2.0
    job = {"schedules": [sched, sched], "stall": {1: 2}, "timeout_s": timeout_s}
    res = run_ranks("failure", job, tmp_path, timeout=60)
    stalled_at = float((tmp_path / "note-rank1").read_text())
    msg = res[0]["error"]
    assert msg is not None, "rank 0 finished a step while its peer was stalled"
    after = res[0]["error_at"] - stalled_at
    print(f"rank 0 raised {after:.2f} s after its peer stalled: {msg}")
    assert timeout_s - 0.5 <= after < timeout_s + 1.0, res[0]
    assert "rank 0 op " in msg and "peer rank 1" in msg, msg
    assert "timed out" in msg.lower() or "timeout" in msg.lower(), msg


def test_mismatched_peer_gives_clear_error_on_both_ranks(
    schedules: Dict[str, Schedule], tmp_path: Path
) -> None:
    job = {"schedules": [schedules["zb-h1"], schedules["zb-h2"]], "timeout_s": 5.0}
    res = run_ranks("failure", job, tmp_path, timeout=60)
    for r in range(2):
        msg = res[r]["error"]
        print(f"rank {r} after {res[r]['seconds']:.2f} s: {msg}")
        assert msg is not None, f"rank {r} ran a step against a peer with another schedule"
        assert f"rank {r} op " in msg and f"peer rank {1 - r}" in msg, msg
        assert res[r]["seconds"] < 5.0 + 5.0  # the timeout, with room for a slow first step

# SPDX-License-Identifier: Apache-2.0
"""Post-validation against the synchronous step in real gloo pipelines of 2 and 3 processes.

Each session trains 50 steps twice from the same weights, once with SynchronousGradientStep (an
all-reduce barrier before every step) and once with PostValidatedOptimizer under the executor,
with bursts of large gradients (clipped) and Inf gradients injected on chosen ranks (skipped).
Snapshot rollback must give bit-for-bit the same parameters and optimizer state; in-place
rollback the same to rounding (allclose, rtol 1e-6)."""

from __future__ import annotations

from typing import Any, Dict

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from launch import JOBS  # noqa: E402
from worker_session import Session  # noqa: E402

WORKER = JOBS / "pv_worker.py"
ITERS = 50
MAX_NORM = 4.0
# In-place rollback: absolute tolerance, of the tensor's largest element (measured worst 1.2e-6,
# docs/post-validation.md §4).
IN_PLACE_ATOL = 1e-4
BURSTS = [3, 4, 17, 30, 41]  # two in a row: a restart right after a restart
SGD = {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}
ADAM = {"lr": 1e-2, "weight_decay": 1e-3}  # Adam's L2 term goes through the gradient
ADAMW = {"lr": 1e-2, "weight_decay": 0.05}
CONFIGS = {
    f"{name}-{rollback}": {"optimizer": name, "kwargs": kwargs, "rollback": rollback}
    for name, kwargs in (("sgd", SGD), ("adam", ADAM), ("adamw", ADAMW))
    for rollback in ("snapshot", "in-place")
}


# family, ranks, microbatches, extra zb tune arguments, configs
SESSIONS = {
    "zb-h1-p2": ("zb-h1", 2, 4, (), list(CONFIGS)),
    "zb-h1-p3": ("zb-h1", 3, 6, (), ["adamw-in-place", "sgd-snapshot"]),
    "zb-v-p2": ("zb-v", 2, 4, (), ["adam-in-place", "sgd-in-place"]),
    "1f1b-i-p2": ("1f1b-i", 2, 4, ("--chunks", "2"), ["adamw-snapshot", "adam-in-place"]),
}
CASES = [(session, config) for session, spec in SESSIONS.items() for config in spec[4]]


@pytest.fixture(scope="module")
def sessions(zb_tuner: Any, tmp_path_factory: Any) -> Dict[str, Session]:
    """All sessions started together, so that their start-up overlaps."""
    started = {}
    for name, (family, ranks, mbs, extra, configs) in SESSIONS.items():
        schedule = zb_tuner.tune(family, ranks=ranks, microbatches=mbs, extra=extra)
        job = {
            "schedule": schedule,
            "iters": ITERS,
            "max_norm": MAX_NORM,
            "bursts": BURSTS,
            # Inf on the last rank, on rank 0, and on a middle or first rank right after a burst.
            "inject": {9: ranks - 1, 22: 0, 31: 1},
            "configs": {c: CONFIGS[c] for c in configs},
        }
        folder = tmp_path_factory.mktemp(name)
        started[name] = Session(None, job, folder, timeout=240, world=ranks, worker=WORKER)
    return started


@pytest.mark.parametrize("session,config", CASES)
def test_post_validation_equals_synchronous_step(
    session: str, config: str, sessions: Dict[str, Session]
) -> None:
    results = sessions[session].results()
    exact = CONFIGS[config]["rollback"] == "snapshot"
    worst = 0.0
    for rank, result in enumerate(results):
        sync, pv = result[config]["sync"], result[config]["pv"]
        assert sorted(pv["params"]) == sorted(sync["params"])
        assert sorted(pv["state"]) == sorted(sync["state"]) and pv["state"]
        for kind in ("params", "state"):
            for name, want in sync[kind].items():
                got = pv[kind][name]
                if exact:
                    assert torch.equal(got, want), f"rank {rank} {kind} {name} differs"
                else:
                    # Rounding of the undone update: relative to the tensor's own scale, since
                    # an element near zero gets its neighbours' absolute error.
                    scale = want.abs().max().item()
                    worst = max(worst, (got - want).abs().max().item() / max(scale, 1e-30))
                    assert torch.allclose(got, want, rtol=1e-6, atol=IN_PLACE_ATOL * scale), (
                        f"rank {rank} {kind} {name}: max difference "
                        f"{(got - want).abs().max().item():.3g} of max {scale:.3g}"
                    )
        # The same decisions; the speculative steps that were wrong were undone.
        for key in ("steps", "clipped", "skipped"):
            assert pv["counts"][key] == sync["counts"][key], (rank, key)
        assert sync["counts"]["steps"] == ITERS
        assert sync["counts"]["skipped"] == 3  # the three injections
        assert sync["counts"]["clipped"] >= 3, "the bursts should have been clipped"
        assert sync["counts"]["rollbacks"] == 0 and sync["executor_restarts"] == 0
        failed = sync["counts"]["clipped"] + sync["counts"]["skipped"]
        # Every clipped or skipped step restarts the next iteration (none after the last step).
        assert pv["executor_restarts"] == pv["counts"]["restarts"]
        assert failed - 1 <= pv["executor_restarts"] <= failed
        if rank == len(results) - 1:
            assert pv["counts"]["rollbacks"] == 0  # the last rank never steps speculatively
        else:
            assert pv["counts"]["rollbacks"] >= 1
        if exact:
            assert pv["losses"] == sync["losses"]
    if not exact:
        print(f"{session} {config}: largest difference / tensor max {worst:.3g}")


def test_rank0_rolls_back_every_wrong_speculation(sessions: Dict[str, Session]) -> None:
    """On rank 0 (whose partial state is its own) a burst or an Inf elsewhere is a rollback."""
    result = sessions["zb-h1-p2"].results()[0]["adamw-snapshot"]
    print("rank 0 counts:", result["pv"]["counts"])
    assert 1 <= result["pv"]["counts"]["rollbacks"] <= result["pv"]["counts"]["clipped"] + 2

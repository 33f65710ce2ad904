# SPDX-License-Identifier: Apache-2.0
"""Equivalence property tests: never a silent wrong gradient (docs/formats.md §4.1).

Random small instances (uneven stage costs, with and without a measured fused backward, so that
the tuner fuses some backwards) x every family x placement (loop, V, interleaved) x search results
of several seeds, tuned by the real `zb` for PyTorch's runtime and for zbkit's executor (the latter
free to run the last stage's forwards out of microbatch order). Each order is replayed in real
gloo process groups (2, 3 and 4 ranks) through zbkit's executor and through PyTorch's runtime as the
shim loads it; every replay's per-microbatch losses and every parameter's gradient must equal the
single-process reference (rtol 1e-5, float64), or the shim must have refused the order before it
ran. Orders the shim refuses also run once through PyTorch's runtime unchecked, to show that the
refusal prevents a wrong gradient in the installed torch, not a harmless difference.

The sample is drawn from ZBKIT_EQUIVALENCE_SEED (default 2026; printed), small enough for CI.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import pipeline_worker as pw  # noqa: E402
from launch import schedule_from_json, zb_binary  # noqa: E402
from worker_session import Session  # noqa: E402

from zbkit.actions import torch_label  # noqa: E402

SEED = int(os.environ.get("ZBKIT_EQUIVALENCE_SEED", "2026"))
FAMILIES = ("1f1b", "1f1b-i", "zb-h1", "zb-h2", "zb-auto", "zb-v", "v-half", "v-min")
SEARCH_SEEDS = (1, 2)  # per placement, for PyTorch's runtime
FREE_SEEDS = (3, 5, 7)  # for zbkit's executor: out-of-order orders appear among these
EVALUATIONS = "1500"
RTOL, ATOL = 1e-5, 1e-10

# A 2-rank profile with a fused backward where search seed 5 for zbkit's executor runs the last
# stage's forwards out of order (as tests/data/costs/fused2.json, tests/cli/cli_test.cpp).
KNOWN_OUT_OF_ORDER = {
    "comm": 0.05,
    "stages": [
        {"F": 1.0, "B": 1.1, "W": 0.7, "BW": 1.5, "M_B": 10, "M_W": 4},
        {"F": 1.2, "B": 1.3, "W": 0.9, "BW": 1.9, "M_B": 10, "M_W": 4},
    ],
}


def random_costs(rng: random.Random, ranks: int, fused: bool) -> Dict[str, Any]:
    stages = []
    for _ in range(ranks):
        f = round(rng.uniform(0.6, 1.6), 2)
        b = round(f * rng.uniform(0.8, 1.4), 2)
        w = round(f * rng.uniform(0.4, 0.9), 2)
        stage = {"F": f, "B": b, "W": w, "M_B": 1000, "M_W": 400}
        if fused:
            stage["BW"] = round((b + w) * rng.uniform(0.6, 0.85), 2)
        stages.append(stage)
    return {"comm": round(rng.uniform(0.0, 0.2), 2), "stages": stages}


def instances() -> List[Tuple[str, int, int, Dict[str, Any], str]]:
    """(name, ranks, microbatches, costs, memory limit)."""
    rng = random.Random(SEED)
    drawn = [("known", 2, 8, KNOWN_OUT_OF_ORDER, "2x")]
    for ranks, microbatches, fused in ((2, 4, True), (2, 6, False), (3, 6, True), (4, 8, False)):
        name = f"p{ranks}m{microbatches}{'-fused' if fused else ''}"
        limit = rng.choice(["1.5x", "2x", "none"])
        drawn.append((name, ranks, microbatches, random_costs(rng, ranks, fused), limit))
    return drawn


def zb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(zb_binary()), *args], capture_output=True, text=True, timeout=120)


def unchecked_csv(doc: Dict[str, Any], path: Path) -> Path:
    """The compute-only CSV of a zb-schedule/1 document, written without zb export's checks."""
    rows = []
    for rank in sorted(doc["ranks"], key=lambda r: r["rank"]):
        rows.append(
            ",".join(
                torch_label(op["type"], rank["stages"][op.get("chunk", 0)], op["mb"])
                for op in rank["ops"]
            )
        )
    path.write_text("\n".join(rows) + "\n")
    return path


def tune_cases(folder: Path) -> Tuple[Dict[int, Dict[str, Any]], List[str]]:
    """Per rank count: {"cases": name -> {"schedule", "json", "doc"}}; and the families that could
    not schedule an instance (with zb's reason), which the test prints."""
    by_ranks: Dict[int, Dict[str, Any]] = {}
    not_scheduled: List[str] = []
    for name, ranks, microbatches, costs, limit in instances():
        costs_file = folder / f"{name}.costs.json"
        costs_file.write_text(json.dumps({"format": "zb-costs/1", **costs}))
        base = ["tune", "--costs", str(costs_file), "-m", str(microbatches), "--mem-limit", limit]
        runs: List[Tuple[str, List[str]]] = []
        if name != "known":
            for family in FAMILIES:
                runs.append((family, ["--family", family, "--chunks", "2"]))
            for placement in ("loop", "v"):
                for seed in SEARCH_SEEDS:
                    runs.append(
                        (f"search-{placement}-s{seed}",
                         ["--family", "search", "--placement", placement, "--seed", str(seed),
                          "--time-limit", "0", "--evaluations", EVALUATIONS])
                    )  # fmt: skip
        for seed in FREE_SEEDS:
            runs.append(
                (f"search-zbkit-s{seed}",
                 ["--family", "search", "--placement", "loop", "--runtime", "zbkit", "--seed",
                  str(seed), "--time-limit", "0", "--evaluations", "3000"])
            )  # fmt: skip
        job = by_ranks.setdefault(ranks, {"cases": {}, "unchecked": {}, "docs": {}})
        for label, extra in runs:
            out = folder / f"{name}.{label}.json"
            done = zb(*base, *extra, "--out", str(out))
            if done.returncode != 0:
                assert done.returncode in (1, 2), done.stderr
                not_scheduled.append(f"{name} {label}: {done.stderr.strip()}")
                continue
            doc = json.loads(out.read_text())
            case = f"{name}/{label}"
            job["cases"][case] = {"schedule": schedule_from_json(doc), "json": str(out)}
            job["docs"][case] = doc
    return by_ranks, not_scheduled


def last_stage_out_of_order(doc: Dict[str, Any]) -> bool:
    last = doc["stages"] * doc["chunks"] - 1
    for rank in doc["ranks"]:
        mbs = [
            op["mb"]
            for op in rank["ops"]
            if op["type"] == "F" and rank["stages"][op.get("chunk", 0)] == last
        ]
        if mbs and mbs != sorted(mbs):
            return True
    return False


def reference(num_stages: int, microbatches: int) -> Tuple[List[float], Dict[str, Any]]:
    """Per-microbatch losses and every parameter's gradient of one unpipelined step."""
    _, grads = pw.reference(num_stages, microbatches)
    stages = [pw.make_stage(s) for s in range(num_stages)]
    x, y = pw.make_data(microbatches)
    losses = []
    with torch.no_grad():
        for xs, ys in zip(x.split(pw.MB_SIZE), y.split(pw.MB_SIZE)):
            h = xs
            for stage in stages:
                h = stage(h)
            losses.append(float(pw.loss_fn(h, ys)))
    return losses, grads


def mismatch(results: List[Dict[str, Any]], path: str, ref: Tuple[List[float], Dict]) -> str:
    """'' when the runs of `path` ("executor", "shim", "unchecked") on every rank equal the
    reference, else what differs first."""
    ref_losses, ref_grads = ref
    seen, losses = set(), None
    for rank_result in results:
        run = rank_result[path]
        if run["losses"]:
            losses = run["losses"]
        for name, grad in run["grads"].items():
            if not torch.allclose(grad, ref_grads[name], rtol=RTOL, atol=ATOL):
                diff = float((grad - ref_grads[name]).abs().max())
                return f"gradient of {name} differs by up to {diff:.3g}"
            seen.add(name)
    if seen != set(ref_grads):
        return f"no gradient for {sorted(set(ref_grads) - seen)}"
    if losses is None or losses != pytest.approx(ref_losses, rel=RTOL):
        return f"losses {losses} != reference {ref_losses}"
    return ""


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory):
    binary = zb_binary()
    if not binary.is_file():
        pytest.skip(f"zb binary not built at {binary} (set ZBKIT_ZB_BINARY or build)")
    folder = tmp_path_factory.mktemp("equivalence")
    by_ranks, not_scheduled = tune_cases(folder)
    print(f"equivalence sample: ZBKIT_EQUIVALENCE_SEED={SEED}")
    for line in not_scheduled:
        print(f"not scheduled: {line}")
    sessions = {}
    for ranks, job in by_ranks.items():
        worker_job = {"cases": job["cases"], "timeout_s": 60.0}
        sessions[ranks] = Session(
            "equivalence", worker_job, folder / f"p{ranks}", timeout=600, world=ranks
        )
    # The first out-of-order order, run unchecked by PyTorch's runtime (its own processes: a rank
    # that fails there leaves, and the group with it).
    unchecked = None
    for ranks, job in by_ranks.items():
        for case, doc in job["docs"].items():
            if unchecked is None and last_stage_out_of_order(doc):
                csv = unchecked_csv(doc, folder / (case.replace("/", ".") + ".csv"))
                worker_job = {"schedule": job["cases"][case]["schedule"], "csv": str(csv)}
                session = Session("unchecked", worker_job, folder / "unchecked", 300, ranks)
                unchecked = (case, job["cases"][case]["schedule"], session)
    results = {ranks: session.results() for ranks, session in sessions.items()}
    if unchecked is not None:
        unchecked = (unchecked[0], unchecked[1], unchecked[2].results())
    return by_ranks, results, unchecked


def test_every_replayed_order_equals_the_reference_or_is_refused_before_it_runs(replayed):
    by_ranks, results, _ = replayed
    failures, counts = [], {"executor": 0, "shim": 0, "refused": 0, "out_of_order": 0}
    placements = set()
    for ranks, job in by_ranks.items():
        for case, spec in job["cases"].items():
            schedule = spec["schedule"]
            placements.add((schedule.placement, schedule.chunks))
            ref = reference(schedule.num_stages, schedule.microbatches)
            per_rank = [rank_results[case] for rank_results in results[ranks]]
            problem = mismatch(per_rank, "executor", ref)
            if problem:
                failures.append(f"{case} executor: {problem}")
            counts["executor"] += 1
            refusals = {r["shim"].get("refused") for r in per_rank}
            out_of_order = last_stage_out_of_order(job["docs"][case])
            counts["out_of_order"] += out_of_order
            if refusals != {None}:
                counts["refused"] += 1
                # Every rank refuses, for the rule that protects the gradients, and only then.
                if None in refusals or not out_of_order:
                    failures.append(f"{case}: shim refused {refusals}")
                elif not all("last stage's forwards in microbatch order" in r for r in refusals):
                    failures.append(f"{case}: shim refused for another reason: {refusals}")
                continue
            if out_of_order:
                failures.append(f"{case}: the shim ran an out-of-order order")
            problem = mismatch(per_rank, "shim", ref)
            if problem:
                failures.append(f"{case} shim: {problem}")
            counts["shim"] += 1
    print(f"equivalence: {counts}; placements (placement, chunks): {sorted(placements)}")
    assert not failures, "\n".join(failures)
    # The sample covers what it claims: loop with 1 and 2 stages per rank, V, and out-of-order
    # orders (refused by the shim, run by the executor).
    assert {("loop", 1), ("loop", 2), ("v", 2)} <= placements, placements
    assert counts["refused"] >= 1 and counts["shim"] >= 20, counts


def test_the_refused_orders_would_train_wrong_in_the_installed_torch(replayed):
    """What the shim's refusal prevents: run unchecked, PyTorch's runtime pairs losses with the
    wrong microbatches: a wrong gradient, or an error deep in autograd. If a future torch keys
    its losses by microbatch, this fails, and the rule (docs/formats.md §4.1) may be relaxed for
    that version."""
    _, _, unchecked = replayed
    assert unchecked is not None, "the sample has no out-of-order order"
    case, schedule, per_rank = unchecked
    errors = [r["error"] for r in per_rank if r["error"]]
    if errors:
        # The rank that failed first, not the peers that lost it (gloo's "Connection ...").
        own = [e for e in errors if "Connection" not in e]
        print(f"{case} unchecked: torch {torch.__version__} failed: {(own or errors)[0]}")
        assert own, f"{case}: only peers failing, no rank's own error: {errors}"
        return
    ref = reference(schedule.num_stages, schedule.microbatches)
    problem = mismatch([{"unchecked": r} for r in per_rank], "unchecked", ref)
    print(f"{case} unchecked: torch {torch.__version__}: {problem}")
    assert problem, f"{case}: torch {torch.__version__} ran the out-of-order order right"

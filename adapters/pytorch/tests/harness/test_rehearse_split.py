# SPDX-License-Identifier: Apache-2.0
"""`zb rehearse --layers` (zbkit_harness.rehearse_split): every split `zb partition` compares runs
with its order on real ranks whose emulated stages take the sums of their blocks' costs, through
zbkit's executor and through torch's schedule class (the shim). Asserted
exactly, whatever the machine's noise: each split's order file carries its stages' block sums,
every split runs as scheduled, every emulated F lasts its stage's F, no iteration is shorter than
a rank's work, peaks are the predicted ones. The measured/predicted figures are in
docs/partition.md §5 (a benchmark, not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_rehearse import _rehearse

pytest.importorskip("torch")

# An embedding, 6 equal blocks, a norm and a head worth two blocks: uneven on purpose.
BLOCK = {"F": 2.0, "B": 2.0, "W": 1.0, "M_B": 100, "M_W": 40, "state": 10, "send": 1}
LAYERS = {
    "format": "zb-layers/1", "comm": 0.2, "source": "measured",
    "layers": [{"name": "tok_embeddings", "F": 0.5, "B": 0, "W": 1.0, "M_B": 10, "M_W": 10,
                "state": 30, "send": 1}]
    + [{"name": f"layers.{i}", **BLOCK} for i in range(6)]
    + [{"name": "norm", "F": 0.1, "B": 0.1, "W": 0.05, "M_B": 5, "M_W": 2, "state": 1, "send": 1},
       {"name": "output", "F": 4.0, "B": 4.0, "W": 2.0, "M_B": 60, "M_W": 60, "state": 30,
        "send": 1}],
}  # fmt: skip


def _layers(tmp_path: Path) -> Path:
    path = tmp_path / "layers.json"
    path.write_text(json.dumps(LAYERS))
    return path


def _rehearse_splits(tmp_path: Path, runtime: str) -> dict:
    """`zb rehearse --layers` on LAYERS, p=2, m=4, V, through `runtime`: its zb-rehearse/1 document,
    after checking what every split's row has whatever the runtime: the four compared splits, each
    run as scheduled, its order predicted as reported, its stages costing the sums of their blocks
    (V: rank 0 holds stages 0 and 3), every emulated F lasting its stage's F."""
    done = _rehearse(tmp_path, "--layers", str(_layers(tmp_path)), "-p", "2", "-m", "4",
                     "--layout", "v", "--runtime", runtime, "--iters", "2", "--rounds", "1",
                     "--evaluations", "200", "--json", timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert doc["format"] == "zb-rehearse/1" and doc["layout"] == "v" and doc["ranks"] == 2
    rows = {row["schedule"]: row for row in doc["rows"]}
    assert set(rows) == {"split:even", "split:torchtitan", "split:min-max", "split:co-tuned"}
    work = tmp_path / "zbkit-rehearse"
    orders = work / ("orders" if runtime == "executor" else f"orders-{runtime}")
    names = [layer["name"] for layer in LAYERS["layers"]]
    for name, row in rows.items():
        assert row["runtime"] == runtime and row["order"] == "as scheduled", row
        split = name.split(":", 1)[1]
        order = json.loads((orders / f"{split}-v.json").read_text())
        assert order["predicted"]["makespan"] == pytest.approx(row["predicted_ms"], abs=1e-3)
        row["stage_costs"] = stage_costs = order["costs"]["stages"]
        key = name if runtime == "executor" else f"{name} ({runtime})"
        for stage, blocks in enumerate(doc["splits"][key]):
            members = [LAYERS["layers"][names.index(b)] for b in blocks]
            assert stage_costs[stage]["F"] == pytest.approx(sum(m["F"] for m in members))
            assert stage_costs[stage]["M_B"] == pytest.approx(sum(m["M_B"] for m in members))
        timeline = work / "summaries" / f"split-{split}-{runtime}-round0" / "timeline.rank0.json"
        ops = json.loads(timeline.read_text())["ops"]
        for op in (op for op in ops if op["type"] == "F"):
            assert (op["end_ns"] - op["start_ns"]) / 1e6 == pytest.approx(
                stage_costs[op["stage"]]["F"], abs=1e-3
            )
    return doc


def test_every_split_runs_its_order_with_its_blocks_costs(tmp_path: Path) -> None:
    doc = _rehearse_splits(tmp_path, "executor")
    for row in doc["rows"]:
        # The executor's peaks are the predicted ones, and no iteration beat a rank's work.
        assert row["peak_bytes"] == row["predicted_peak"], row
        costs = row["stage_costs"]
        rank_work = 4 * sum(costs[s][k] for s in (0, 3) for k in ("F", "B", "W"))
        assert row["measured_ms"] >= rank_work, row
    assert any(line.startswith("split:co-tuned vs split:even") for line in doc["gains"]), doc


def test_torchs_schedule_class_runs_each_splits_order_through_the_shim(tmp_path: Path) -> None:
    """--runtime shim: each split's order, tuned for torch's runtime, replayed by the shim in the
    torch class of the layout (ZBVZeroBubble for V), with the split's per-stage costs (not one
    profile's: every emulated F lasts its own stage's F)."""
    doc = _rehearse_splits(tmp_path, "shim")
    assert any(line.startswith("split:co-tuned vs split:even (shim)") for line in doc["gains"]), doc


def test_a_memory_plan_runs_with_the_planned_costs_and_peaks(tmp_path: Path) -> None:
    """docs/memory-plan.md §4: with --checkpointing the uniform rows and the co-tuned plan run
    too, each order with its stages' planned costs (a full block: B + F, by the rule of §2) and,
    where a stage's M_W exceeds its M_B, the emulation's peak still the predicted one."""
    done = _rehearse(tmp_path, "--layers", str(_layers(tmp_path)), "-p", "2", "-m", "4",
                     "--layout", "loop:1", "--mem-limit", "500", "--checkpointing", "none,full",
                     "--derive-full", "--iters", "2", "--rounds", "1", "--evaluations", "100",
                     "--json", timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    rows = {row["schedule"]: row for row in doc["rows"]}
    assert {"split:uniform-none", "split:uniform-full", "split:co-tuned"} <= set(rows), rows
    blocks = {layer["name"]: layer for layer in LAYERS["layers"]}
    full_somewhere = False
    for name, row in rows.items():
        assert row["order"] == "as scheduled" and row["peak_bytes"] == row["predicted_peak"], row
        plan = dict(zip(blocks, doc["plans"][name]))
        order = json.loads((tmp_path / "zbkit-rehearse" / "orders" /
                            f"{name.split(':', 1)[1]}-loop-1.json").read_text())  # fmt: skip
        for stage, members in enumerate(doc["splits"][name]):
            b = sum(blocks[m]["B"] + (blocks[m]["F"] if plan[m] == "full" else 0) for m in members)
            assert order["costs"]["stages"][stage]["B"] == pytest.approx(b), (name, stage)
            full_somewhere |= any(plan[m] == "full" for m in members)
    assert full_somewhere
    assert any(line.startswith("split:co-tuned vs split:uniform-full") for line in doc["gains"])


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    layers = _layers(tmp_path)
    for args, says in (
        (["--layers", str(tmp_path / "none.json"), "-p", "2", "-m", "4"], "no such file"),
        (["--layers", str(layers), "-p", "2", "-m", "4", "--layout", "all"], "one layout"),
        (["--layers", str(layers), "-p", "9", "-m", "4", "--layout", "v"], "blocks"),
        (["--layers", str(layers), "-p", "2", "-m", "4", "--mem-limit", "2x"], "--mem-limit"),
        (["--layers", str(layers), "-p", "0", "-m", "4"], "--ranks must be >= 1"),
    ):  # fmt: skip
        done = _rehearse(tmp_path, *args)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], done.stderr

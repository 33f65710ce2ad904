# SPDX-License-Identifier: Apache-2.0
"""torch's own schedules in the tuner's table: `python -m zbkit_harness.torch_orders` takes the orders from
the installed torch, `zb tune --torch-orders` simulates them under the same costs and cap beside
zbkit's candidates (never chosen). Where a zbkit family models a torch class (1f1b:
Schedule1F1B, 1f1b-i: ScheduleInterleaved1F1B) both must give the same makespan; and torch's
Schedule1F1B order as written must be the one the class runs (its _step_microbatches)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from launch import PYTORCH_DIR, zb_binary

from zbkit_harness import torch_orders

torch = pytest.importorskip("torch", reason="torch is not installed")

COSTS = {"format": "zb-costs/1", "comm": 0.05,
         "stages": [{"F": 1.0, "B": 1.1, "W": 0.7, "M_B": 10, "M_W": 4},
                    {"F": 1.3, "B": 1.2, "W": 0.9, "M_B": 10, "M_W": 4},
                    {"F": 0.9, "B": 1.0, "W": 0.6, "M_B": 10, "M_W": 4}]}  # fmt: skip


def orders(tmp_path, ranks, microbatches):
    out = tmp_path / f"orders-p{ranks}-m{microbatches}"
    done = subprocess.run(
        [sys.executable, "-m", "zbkit_harness.torch_orders", "--ranks", str(ranks),
         "--microbatches", str(microbatches), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(PYTORCH_DIR)},  # the package, from any directory
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def tune(tmp_path, orders_dir, ranks, microbatches, *extra):
    costs = tmp_path / f"costs{ranks}.json"
    costs.write_text(json.dumps({**COSTS, "stages": COSTS["stages"][:ranks]}))
    done = subprocess.run(
        [str(zb_binary()), "tune", "--costs", str(costs), "-m", str(microbatches),
         "--mem-limit", "2x", "--torch-orders", str(orders_dir), "--json", *extra],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done


@pytest.mark.parametrize("ranks, microbatches", [(2, 4), (3, 6)])
def test_torch_rows_beside_the_families_never_chosen(tmp_path, ranks, microbatches):
    if not zb_binary().exists():
        pytest.skip(f"no zb binary at {zb_binary()}")
    directory = orders(tmp_path, ranks, microbatches)
    index = json.loads((directory / "index.json").read_text())
    assert index["format"] == "zb-torch-orders/1" and index["torch"] == torch.__version__
    # Which classes run weight passes apart (a checkpointed rehearsal charges them torch's
    # recomputations): the zero-bubble ones, not the fused 1F1B and Interleaved1F1B.
    assert {e["name"] for e in index["schedules"] if e.get("splits_backward")} == {
        "ScheduleInterleavedZeroBubble",
        "ScheduleZBVZeroBubble",
        "ScheduleDualPipeV",
    }
    assert all(e["splits_backward"] is False for e in index["schedules"]
               if e["name"] in ("Schedule1F1B", "ScheduleInterleaved1F1B"))  # fmt: skip
    done = tune(tmp_path, directory, ranks, microbatches)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {c["family"]: c for c in report["candidates"]}
    names = [f"torch:{name}" for name, _, _ in torch_orders.CLASSES]
    assert all(name in rows and rows[name]["reference"] for name in names), sorted(rows)
    assert not report["best"].startswith("torch:")
    assert not any(
        c["reference"] for c in report["candidates"] if not c["family"].startswith("torch:")
    )
    # Where zbkit has a family with torch's order, the simulated times agree.
    assert rows["torch:Schedule1F1B"]["makespan"] == pytest.approx(rows["1f1b"]["makespan"])
    assert rows["torch:ScheduleInterleaved1F1B"]["makespan"] == pytest.approx(
        rows["1f1b-i"]["makespan"]
    )
    for name in names:
        row = rows[name]
        assert row["ok"], row
        assert row["t_over_lb"] >= 1 - 1e-9
    # The table a user reads names them the same way.
    text = subprocess.run(
        [str(zb_binary()), "tune", "--costs", str(tmp_path / f"costs{ranks}.json"), "-m",
         str(microbatches), "--mem-limit", "2x", "--torch-orders", str(directory)],
        capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert all(any(line.startswith(name + " ") for line in text.splitlines()) for name in names)


def test_schedule1f1b_order_is_the_one_its_loop_runs():
    # Rank 0 of 3: 3 forwards, then backward / forward in turn, then the last backwards.
    assert torch_orders.one_f_one_b(3, 5)[0] == [
        "0F0", "0F1", "0F2", "0B0", "0F3", "0B1", "0F4", "0B2", "0B3", "0B4",
    ]  # fmt: skip
    assert torch_orders.one_f_one_b(3, 5)[2][:4] == ["2F0", "2B0", "2F1", "2B1"]


def test_a_missing_or_bad_index_is_one_line(tmp_path):
    if not zb_binary().exists():
        pytest.skip(f"no zb binary at {zb_binary()}")
    done = tune(tmp_path, tmp_path / "absent", 2, 4)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "index.json: no index" in done.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "index.json").write_text(
        '{"format": "zb-torch-orders/1", "schedules": [{"name": "X", "csv": "x.csv"}]}'
    )
    (bad / "x.csv").write_text("0F0,0Q1\n1F0\n")
    done = tune(tmp_path, bad, 2, 4)
    assert done.returncode == 0, done.stderr  # a bad order is a row that says why, not a failure
    rows = {c["family"]: c for c in json.loads(done.stdout)["candidates"]}
    assert not rows["torch:X"]["ok"] and "is not a compute action" in rows["torch:X"]["error"]

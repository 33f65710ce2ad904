# SPDX-License-Identifier: Apache-2.0
"""`zb demo --quick`: the whole loop on the bundled job (profile under torch's Schedule1F1B ->
tune -> replay through the shim and the executor next to torch's schedules -> measure), with a
tiny model. Checks what the demo reports and what it stored, not its speed (that is what the
demo itself measures, on the default sizes)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import pytest
from launch import job_env, require_zb

pytest.importorskip("torch")

TORCH_SCHEDULES = ["1F1B", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    zb = require_zb()
    work = tmp_path_factory.mktemp("demo")
    store, directory = work / "demo.db", work / "out"
    done = subprocess.run(
        [str(zb), "demo", "--quick", "--store", str(store), "--dir", str(directory)],
        env=job_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return done, store, directory


def test_the_report_lists_every_schedule_and_ends_with_the_json_line(demo):
    done, _, _ = demo
    lines = done.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert set(summary) == {
        "schedule", "throughput_1f1b", "throughput_tuned", "best_torch_schedule",
        "throughput_best_torch", "predicted_gain", "measured_gain", "grads_match",
        "peak_tuned_bytes", "peak_best_torch_bytes", "post_validation",
    }  # fmt: skip
    assert summary["grads_match"] is True
    pv = summary["post_validation"]
    assert set(pv) == {
        "schedule", "iter_ms_sync", "iter_ms_pv", "measured_drop", "predicted_drop",
        "barrier_share", "rollbacks", "equal",
    }  # fmt: skip
    # The Inf injected on rank 1 in the last iteration is rolled back on rank 0; the state then
    # equals the barrier run's.
    assert pv["equal"] is True and pv["rollbacks"] >= 1
    assert pv["iter_ms_sync"] > 0 and pv["iter_ms_pv"] > 0 and 0 <= pv["barrier_share"] < 1
    assert summary["peak_tuned_bytes"] > 0 and summary["peak_best_torch_bytes"] > 0
    # Every target is judged in the text report, met or not, with its figure.
    targets = [line for line in lines if line.startswith("targets: ")]
    assert len(targets) == 2, lines
    # Judged: met, NOT met, or undecided where the rounds fall on both sides of the target.
    assert targets[0].count("met") + targets[0].count("undecided") == 4, targets[0]
    assert targets[1].startswith("targets: post-validation ")
    assert targets[1].count("met") + targets[1].count("undecided") == 2, targets[1]
    assert any(line.startswith("post-validation: ") for line in lines), lines
    assert summary["best_torch_schedule"] in TORCH_SCHEDULES
    for key in ("throughput_1f1b", "throughput_tuned", "throughput_best_torch"):
        assert summary[key] > 0
    table = "\n".join(lines[:-1])
    # Every torch schedule is predicted from its own order (zb tune --torch-orders): no "-".
    for name in TORCH_SCHEDULES:
        row = next(line for line in table.splitlines() if line.startswith(name + " "))
        assert not row.rstrip().endswith("-"), row
    for name in TORCH_SCHEDULES + [f"zbkit {summary['schedule']} (shim)",
                                   f"zbkit {summary['schedule']} (executor)",
                                   f"zbkit {pv['schedule']} (executor, all-reduce step)",
                                   f"zbkit {pv['schedule']} (executor, post-validated)"]:  # fmt: skip
        assert any(line.startswith(name + " ") for line in table.splitlines()), (name, table)


def test_the_store_holds_the_profile_the_schedule_and_a_measured_replay(demo):
    _, store, _ = demo
    with sqlite3.connect(store) as db:
        kinds = [kind for (kind,) in db.execute("SELECT kind FROM runs ORDER BY id")]
        assert kinds[0] == "profile"
        replays = db.execute(
            "SELECT r.schedule_id, COUNT(o.rank), COUNT(DISTINCT o.rank) FROM runs r "
            "JOIN timelines t ON t.run_id = r.id JOIN timeline_ops o ON o.timeline_id = t.id "
            "WHERE r.kind = 'replay' GROUP BY r.id"
        ).fetchall()
        assert len(replays) == 1, replays
        schedule_id, ops, ranks = replays[0]
        assert ranks == 2 and ops > 0
        family = db.execute("SELECT family FROM schedules WHERE id = ?", (schedule_id,)).fetchone()
        assert family is not None


def test_the_replay_opens_beside_its_prediction_in_perfetto_and_in_hta(demo, tmp_path):
    # The executor's measured replay, as a user who ran the demo would open it (docs/trace-export.md).
    _, store, _ = demo
    zb = str(require_zb())
    with sqlite3.connect(store) as db:
        (run,) = db.execute("SELECT id FROM runs WHERE kind = 'replay'").fetchone()
    both = tmp_path / "replay.json"
    written = subprocess.run(
        [zb, "trace", "--store", str(store), "--run", str(run), "--with-prediction",
         "--format", "perfetto", "-o", str(both)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    events = json.loads(both.read_text())["traceEvents"]
    processes = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert processes == {"rank 0 · measured", "rank 1 · measured", "rank 0 · predicted",
                         "rank 1 · predicted"}  # fmt: skip
    kinds = {e["args"]["kind"] for e in events if e.get("cat") == "zb.op"}
    assert {"F"} < kinds, kinds
    checked = subprocess.run([zb, "trace", "--check", str(both)], capture_output=True, text=True,
                             timeout=60)  # fmt: skip
    assert checked.returncode == 0, checked.stdout
    kineto = tmp_path / "hta"
    assert subprocess.run(
        [zb, "trace", "--store", str(store), "--run", str(run), "--format", "kineto",
         "-o", str(kineto)], capture_output=True, timeout=60,
    ).returncode == 0  # fmt: skip
    assert sorted(p.name for p in kineto.iterdir()) == ["rank0.json", "rank1.json"]


def test_every_job_left_its_log_and_the_tuned_csv(demo):
    _, _, directory = demo
    logs = sorted(p.name for p in (directory / "logs").iterdir())
    assert "profile-1F1B.log" in logs and "executor-round1.log" in logs, logs
    assert "step-sync-round1.log" in logs and "step-post-validation-round1.log" in logs, logs
    assert json.loads((directory / "compare-post-validation.json").read_text())["equal"] is True
    assert (directory / "tuned.csv").read_text().strip()
    assert sorted(p.name for p in (directory / "profile").iterdir()) == [
        "rank0.blocks.json", "rank0.json.gz", "rank1.blocks.json", "rank1.json.gz",
    ]  # fmt: skip


def test_bad_options_are_a_usage_error_before_anything_runs(tmp_path):
    zb = require_zb()
    done = subprocess.run(
        [str(zb), "demo", "--quick", "--iters", "1", "--store", str(tmp_path / "x.db"),
         "--dir", str(tmp_path / "out")],
        env=job_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("zb demo: ")
    assert not (tmp_path / "x.db").exists()
    assert os.path.exists(tmp_path) and not (tmp_path / "out").exists()

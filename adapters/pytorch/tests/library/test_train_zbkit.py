# SPDX-License-Identifier: Apache-2.0
"""examples/train_zbkit.py under torchrun (2 ranks, gloo, CPU): schedules tuned by the real `zb`,
replayed by PipelineExecutor on the bundled GPT, must end with the parameters and losses of the
single-process reference (examples/reference.py); a recorded run from a store must be merged
into that store as a replay run of the schedule, with every op of both ranks. Skipped, saying
why, when the `zb` binary or libzbrt is not built."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from launch import (  # noqa: E402
    PYTORCH_DIR,
    free_port,
    tune_uniform,
    zb_binary,  # noqa: E402
)

from zbkit import _libzbrt_abi, libzbrt  # noqa: E402
from zbkit.libzbrt import ZbrtError  # noqa: E402

EXAMPLES = PYTORCH_DIR / "examples"
SCRIPT = EXAMPLES / "train_zbkit.py"
sys.path.insert(0, str(EXAMPLES))
from compare_runs import compare  # noqa: E402
from reference import train_reference  # noqa: E402

MODEL = ["--layers", "4", "--dim", "32", "--heads", "2", "--seq", "16", "--vocab", "64"]
ITERS = 2
JOB = MODEL + ["--batch", "8", "--iters", str(ITERS), "--warmup", "0"]
TIMEOUT_S = 150
SUMMARY_KEYS = {
    "format", "rank", "schedule", "class", "ranks", "stages", "microbatches", "iters", "median_iter_s",
    "iter_s", "peak_activation_bytes", "optimizer", "optimizer_step",
}  # fmt: skip
STEP_KEYS = {"barrier_s", "grad_norms", "clipped", "skipped", "rollbacks", "restarts"}


def _skip(reason: str) -> None:
    print(f"SKIP: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def zb() -> Path:
    path = zb_binary()
    if not path.is_file():
        _skip(f"zb binary not built at {path} (set ZBKIT_ZB_BINARY or build the repository)")
    try:
        _libzbrt_abi.lib()
    except ZbrtError as error:
        _skip(f"libzbrt is not built: {error}")
    return path


def tune(zb: Path, folder: Path, family: str, store: Path = None):
    """A zb-schedule/1 file of `family` for 2 ranks, m = 4, and its id when stored in `store`."""
    assert zb.exists()
    return tune_uniform(folder, family, 4, store)


def job_env() -> dict:
    env = dict(os.environ)
    for name in ("ZBKIT_SCHEDULE", "ZBKIT_TORCH_PROFILE", "PYTHONPATH"):
        env.pop(name, None)  # no shim: the executor drives this job itself
    env.update(OMP_NUM_THREADS="1", ZBKIT_ZB_BINARY=str(zb_binary()))
    return env


def run_job(*args: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(SCRIPT), *args,
    ]  # fmt: skip
    return subprocess.run(command, env=job_env(), capture_output=True, text=True, timeout=TIMEOUT_S)


def assert_matches_reference(prefix: Path) -> None:
    ref_losses, ref_params = train_reference(JOB)
    seen, losses = set(), None
    for rank in range(2):
        dump = torch.load(f"{prefix}.rank{rank}.pt")
        if dump["losses"]:
            assert losses is None, "losses on both ranks"
            losses = dump["losses"]
        for name, value in dump["params"].items():
            torch.testing.assert_close(value, ref_params[name], rtol=1e-5, atol=1e-6, msg=name)
            seen.add(name)
    assert seen == set(ref_params), "some parameters are on no rank"
    assert losses is not None and losses == pytest.approx(ref_losses, rel=1e-5)


def read_summaries(done: subprocess.CompletedProcess, pattern: str) -> list:
    """The summary files of both ranks; each also ends its rank's stdout."""
    summaries = [json.loads(Path(pattern.format(rank=r)).read_text()) for r in range(2)]
    printed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert sorted(printed, key=lambda s: s["rank"]) == summaries
    return summaries


@pytest.mark.parametrize("family, stages", [("1f1b", 2), ("zb-h1", 2), ("zb-v", 4)])
def test_tuned_schedule_trains_like_the_reference(zb, tmp_path, family, stages):
    schedule, _ = tune(zb, tmp_path, family)
    prefix = tmp_path / "dump"
    pattern = str(tmp_path / "summary.rank{rank}.json")
    done = run_job("--schedule-file", str(schedule), *JOB, "--dump", str(prefix),
                   "--summary-out", pattern)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert_matches_reference(prefix)
    for rank in range(2):
        lines = re.findall(rf"^rank {rank} iter (\d+) time_s [0-9.]+", done.stdout, re.M)
        assert lines == [str(i) for i in range(ITERS)], done.stdout
    summaries = read_summaries(done, pattern)
    for rank, summary in enumerate(summaries):
        assert set(summary) == SUMMARY_KEYS, summary
        assert summary["format"] == "zb-job-summary/1"  # docs/formats.md §3.1
        assert summary["rank"] == rank and summary["ranks"] == 2
        assert (summary["schedule"], summary["stages"]) == (family, stages)
        assert summary["class"] == "PipelineExecutor" and summary["microbatches"] == 4
        assert summary["iters"] == len(summary["iter_s"]) == ITERS
        assert summary["median_iter_s"] > 0 and all(t > 0 for t in summary["iter_s"])
        assert summary["peak_activation_bytes"] > 0


def test_recorded_run_is_merged_into_the_store(zb, tmp_path):
    store = tmp_path / "zbkit.db"
    _, schedule_id = tune(zb, tmp_path, "zb-h1", store)
    shards = tmp_path / "shards"
    prefix = tmp_path / "dump"
    pattern = str(tmp_path / "summary.rank{rank}.json")
    done = run_job("--store", str(store), "--schedule-id", str(schedule_id), *JOB,
                   "--record-dir", str(shards), "--dump", str(prefix),
                   "--summary-out", pattern)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert_matches_reference(prefix)
    assert sorted(p.name for p in shards.iterdir()) == ["rank0.zbshard", "rank1.zbshard"]
    summaries = read_summaries(done, pattern)
    run_id = summaries[0]["run_id"]
    assert "run_id" not in summaries[1]  # only rank 0 merges

    schedule = libzbrt.load_schedule_from_store(store, schedule_id)
    with sqlite3.connect(store) as db:
        kind, linked, command = db.execute(
            "SELECT kind, schedule_id, command FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        (timeline_id,) = db.execute(
            "SELECT id FROM timelines WHERE run_id = ? AND kind = 'measured'", (run_id,)
        ).fetchone()
        rows = db.execute(
            "SELECT rank, kind, stage, microbatch FROM timeline_ops WHERE timeline_id = ?",
            (timeline_id,),
        ).fetchall()
        peaks = dict(
            db.execute(
                "SELECT rank, MAX(memory) FROM memory_samples WHERE timeline_id = ? GROUP BY rank",
                (timeline_id,),
            )
        )
    assert (kind, linked) == ("replay", schedule_id)
    assert "train_zbkit.py" in command and f"--schedule-id {schedule_id}" in command
    for rank, ops in enumerate(schedule.ops):
        recorded = sorted((k, s, mb) for r, k, s, mb in rows if r == rank)
        assert recorded == sorted((op.kind, op.stage, op.microbatch) for op in ops * ITERS)
    # The memory samples are the executor's, so their peak is the summary's.
    assert peaks == {r: float(summaries[r]["peak_activation_bytes"]) for r in range(2)}


def test_a_store_that_cannot_take_the_run_never_fails_the_training(zb, tmp_path):
    """Another writer holds the store for the whole job: training runs and ends as it would,
    rank 0 says in one line that the run was not stored and where its timeline stays, and the
    kept shards store the run once the store is free."""
    store = tmp_path / "zbkit.db"
    _, schedule_id = tune(zb, tmp_path, "zb-h1", store)
    shards = tmp_path / "shards"
    prefix = tmp_path / "dump"
    pattern = str(tmp_path / "summary.rank{rank}.json")
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, until the job is done
    try:
        done = run_job("--store", str(store), "--schedule-id", str(schedule_id), *JOB,
                       "--record-dir", str(shards), "--dump", str(prefix),
                       "--summary-out", pattern)  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert_matches_reference(prefix)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("zbkit: the run")]
    assert len(warnings) == 1, done.stderr[-3000:]
    assert "database is locked" in warnings[0] and str(shards) in warnings[0], warnings[0]
    summaries = read_summaries(done, pattern)
    assert all("run_id" not in summary for summary in summaries)
    run_id = libzbrt.merge_run(store, schedule_id, shards, "merged later")
    with sqlite3.connect(store) as db:
        (ops,) = db.execute(
            "SELECT num_ops FROM timelines WHERE run_id = ? AND kind = 'measured'", (run_id,)
        ).fetchone()
    schedule = libzbrt.load_schedule_from_store(store, schedule_id)
    assert ops == sum(len(rank_ops) for rank_ops in schedule.ops) * ITERS


def test_schedule_that_does_not_fit_is_refused(zb, tmp_path):
    schedule, _ = tune(zb, tmp_path, "zb-h1")
    done = run_job("--schedule-file", str(schedule), *JOB, "--microbatches", "8")
    assert done.returncode != 0
    assert "train_zbkit: --microbatches 8, the schedule has 4" in done.stderr, done.stderr[-3000:]
    assert "iter 0" not in done.stdout


def test_post_validation_ends_like_the_synchronous_step(zb, tmp_path):
    """The bundled GPT with AdamW, a clipped step and an Inf on rank 1 at iteration 2, on a V
    schedule: the barrier-free step ends bit for bit where the all-reduce one does."""
    schedule, _ = tune(zb, tmp_path, "zb-v")
    iters = 5
    job = MODEL + ["--batch", "8", "--iters", str(iters), "--warmup", "0", "--optimizer", "adamw",
                   "--lr", "0.01", "--clip-norm", "0.7", "--inject-inf", "2:1"]  # fmt: skip
    summaries = {}
    for step in ("sync", "post-validation"):
        pattern = str(tmp_path / f"{step}.rank{{rank}}.json")
        done = run_job("--schedule-file", str(schedule), *job, "--optimizer-step", step,
                       "--dump", str(tmp_path / step), "--summary-out", pattern)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        summaries[step] = read_summaries(done, pattern)
    verdict = compare(str(tmp_path / "sync"), str(tmp_path / "post-validation"), rounding=False)
    assert verdict == {"equal": True, "max_rel_diff": 0.0, "problem": None}
    for rank in range(2):
        sync, pv = summaries["sync"][rank], summaries["post-validation"][rank]
        assert set(sync) == set(pv) == SUMMARY_KEYS | STEP_KEYS
        assert len(sync["barrier_s"]) == len(pv["barrier_s"]) == iters
        assert sync["skipped"] == pv["skipped"] == 1
        assert sync["clipped"] == pv["clipped"] == 1
        assert sync["rollbacks"] == sync["restarts"] == 0
        # Every clipped or skipped step but a last one restarts the next iteration.
        assert pv["restarts"] >= 1
    print("clipped", summaries["sync"][0]["clipped"], "rollbacks on rank 0",
          summaries["post-validation"][0]["rollbacks"])  # fmt: skip
    assert summaries["post-validation"][0]["rollbacks"] == 2  # the clip and the Inf
    assert summaries["post-validation"][1]["rollbacks"] == 0  # the last rank knows the global


def test_bad_step_options_are_usage_errors(zb, tmp_path):
    schedule, _ = tune(zb, tmp_path, "zb-h1")
    done = run_job("--schedule-file", str(schedule), *JOB, "--inject-inf", "2-1",
                   "--optimizer-step", "sync")  # fmt: skip
    assert done.returncode != 0
    assert "'2-1' is not ITER:RANK" in done.stderr, done.stderr[-2000:]
    done = run_job("--schedule-file", str(schedule), *JOB, "--clip-norm", "1")
    assert "--clip-norm and --inject-inf need --optimizer-step" in done.stderr, done.stderr[-2000:]

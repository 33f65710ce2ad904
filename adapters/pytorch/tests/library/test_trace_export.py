# SPDX-License-Identifier: Apache-2.0
"""`zb trace` opened by the real consumers: Holistic Trace Analysis (pinned in
requirements-hta.txt) loads a 64-rank export as a distributed trace with every rank its own id and
computes the temporal breakdown and idle time per rank, agreeing with the schedule; a run that
`zb profile --torch` measured on real torch processes goes out to Perfetto and to Kineto and comes
back through `zb import` op for op (docs/trace-export.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import defaultdict

import pytest
from launch import MODEL, job_env, require_zb, run, torchrun_command
from worker_session import Session

RANKS = 64
MICROBATCHES = 64


def zb(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(require_zb()), *args], capture_output=True, text=True,
                          timeout=timeout, env=job_env())  # fmt: skip


def hta(script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs HTA in a process of its own, as a user would (it starts a multiprocessing pool)."""
    pytest.importorskip("hta", reason="HolisticTraceAnalysis is installed by scripts/setup.sh")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=timeout, env=job_env())  # fmt: skip


def ops_per_rank(schedule: dict) -> dict:
    """Busy time per rank (us) from zb export's zb-schedule/1: the sum of its ops' durations."""
    busy = defaultdict(float)
    for program in schedule["ranks"]:
        for op in program["ops"]:
            busy[program["rank"]] += (op["end"] - op["start"]) * 1000.0
    return busy


def test_hta_loads_a_64_rank_export_with_every_rank_its_own_id(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"format": "zb-costs/1", "comm": 0.05, "count": RANKS,
                                 "stages": [{"F": 1.0, "B": 1.0, "W": 0.5, "M_B": 2, "M_W": 1}]}))  # fmt: skip
    store = tmp_path / "zb.db"
    tuned = zb("tune", "--costs", str(costs), "-m", str(MICROBATCHES), "--mem-limit", "none",
               "--family", "zb-h1", "--store", str(store))  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    out = tmp_path / "hta"
    written = zb("trace", "--store", str(store), "--schedule", "1", "--format", "kineto",
                 "-o", str(out))  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert len(list(out.glob("rank*.json"))) == RANKS
    exported = zb("export", "--store", str(store), "--schedule", "1", "--format", "json", "-o", "-")
    busy = ops_per_rank(json.loads(exported.stdout))

    started = time.monotonic()
    done = hta(f"""
        import json
        from hta.trace_analysis import TraceAnalysis
        analysis = TraceAnalysis(trace_dir={str(out)!r})
        breakdown = analysis.get_temporal_breakdown(visualize=False)
        idle = analysis.get_idle_time_breakdown(visualize=False)[0]
        print(json.dumps({{
            "ranks": sorted(int(r) for r in analysis.t.traces),
            "compute_us": {{int(r): float(c) for r, c in
                           zip(breakdown["rank"], breakdown["compute_time(us)"])}},
            "idle_us": {{int(r): float(c) for r, c in
                        zip(breakdown["rank"], breakdown["idle_time(us)"])}},
            "idle_rows": len(idle),
        }}))
    """)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # Every rank its own id (HTA reads "rank": N from distributedInfo; a file it cannot read
    # would all collapse onto rank 0).
    assert result["ranks"] == list(range(RANKS))
    # The temporal breakdown: per rank, HTA's compute time is the schedule's busy time.
    assert len(result["compute_us"]) == RANKS
    for rank in range(RANKS):
        assert result["compute_us"][str(rank)] == pytest.approx(busy[rank], abs=1.0), rank
    # zb-h1 leaves the middle ranks idle longer than the ends only by the pipeline's fill: some
    # idle time on every rank but the first, and the idle-time breakdown has rows.
    assert all(result["idle_us"][str(rank)] > 0 for rank in range(1, RANKS))
    assert result["idle_rows"] > 0
    print(f"HTA loaded {RANKS} ranks and computed the breakdown in {seconds:.1f} s")
    assert seconds < 30, seconds


def test_a_measured_torch_run_goes_out_and_comes_back_op_for_op(tmp_path):
    store = tmp_path / "zb.db"
    args = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "3", "--warmup", "0",
                    "--schedule", "Interleaved1F1B", "--stages-per-rank", "2"]  # fmt: skip
    profiled = run([str(require_zb()), "profile", "--torch", "--torch-skip", "1", "--torch-iters",
                    "2", "--pp", "2", "--store", str(store), "--",
                    *torchrun_command(*args)], job_env())  # fmt: skip
    assert profiled.returncode == 0, profiled.stderr[-3000:]

    # Perfetto: clean by zb trace --check.
    perfetto = tmp_path / "run.json"
    assert zb("trace", "--store", str(store), "--run", "1", "--format", "perfetto",
              "-o", str(perfetto)).returncode == 0  # fmt: skip
    checked = zb("trace", "--check", str(perfetto))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert " 0 overlapping" in checked.stdout and " 0 unclosed" in checked.stdout

    # Kineto per rank, imported again: the same ops, transfers included, at the same times.
    kineto = tmp_path / "kineto"
    assert zb("trace", "--store", str(store), "--run", "1", "--format", "kineto",
              "-o", str(kineto)).returncode == 0  # fmt: skip
    again = tmp_path / "again.db"
    imported = zb("import", "--format", "chrome", str(kineto), "--store", str(again))
    assert imported.returncode == 0, imported.stderr
    assert zb("trace", "--store", str(again), "--run", "1", "--format", "perfetto",
              "-o", str(tmp_path / "again.json")).returncode == 0  # fmt: skip

    def ops(path):
        events = json.loads(path.read_text())["traceEvents"]
        return sorted(
            (e["pid"], e["args"]["kind"], e["args"]["stage"], e["args"]["microbatch"],
             e["args"]["iteration"], e["ts"], e["dur"])
            for e in events if e.get("cat") == "zb.op"
        )  # fmt: skip

    first, second = ops(perfetto), ops(tmp_path / "again.json")
    assert len(first) > 0
    assert {op[1] for op in first} >= {"F", "BW", "COMM"} or {op[1] for op in first} >= {
        "F", "B", "W", "COMM"}  # fmt: skip
    assert first == second

    # HTA reads the same export: both ranks, a breakdown per rank.
    done = hta(f"""
        from hta.trace_analysis import TraceAnalysis
        analysis = TraceAnalysis(trace_dir={str(kineto)!r})
        print(sorted(int(r) for r in analysis.t.traces))
        print(len(analysis.get_temporal_breakdown(visualize=False)))
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-2:] == ["[0, 1]", "2"]


def test_zbkit_executor_ops_carry_torchs_labels_in_a_torch_profiler_trace(tmp_path, zb_tuner):
    """zbkit's executor puts torch's `PP:` labels on its ops while torch.profiler records, so the
    trace reads like one of torch's runtime and zb import attributes it like one."""
    schedule = zb_tuner.tune("zb-h1")
    folder = tmp_path / "traces"
    folder.mkdir()
    session = Session("profiled", {"schedule": schedule}, tmp_path / "session", timeout=100)
    results = session.results()
    names = set()
    for rank in range(2):
        events = json.loads(open(results[rank]["trace"]).read())["traceEvents"]
        names |= {e["name"] for e in events if str(e.get("name", "")).startswith("PP:")}
    expected = {f"PP:{op.stage}{ {'F': 'F', 'B': 'I', 'W': 'W', 'BW': 'B'}[op.kind]}{op.microbatch}"
                for rank_ops in schedule.ops for op in rank_ops}  # fmt: skip
    assert names == expected
    for rank in range(2):
        (folder / f"rank{rank}.json").write_text(open(results[rank]["trace"]).read())
    imported = zb("import", "--format", "chrome", str(folder), "--json")
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["ranks"] == 2 and report["ops_by_family"] == {"torch-pp": len(expected)}

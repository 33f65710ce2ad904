# SPDX-License-Identifier: Apache-2.0
"""`zb import DIR` of what torch.profiler writes for a user who profiles a job themselves
(torch_profiler_job.py: `tensorboard_trace_handler`, `<host>_<pid>.<ns>.pt.trace.json.gz` per
rank), with no `--format`: Interleaved1F1B (torch's runtime labels every action `PP:...`) imports
as `--format chrome` does; Schedule1F1B (its older loop labels none) is refused with one line that
says so and what to do, not with a list of gloo ranges."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")

from launch import JOBS, MODEL, job_env, require_zb, torchrun_command  # noqa: E402

JOB = JOBS / "torch_profiler_job.py"


def profiled(tmp_path: Path, schedule: str) -> Path:
    trace_dir = tmp_path / schedule
    command = torchrun_command(
        "--trace-dir", str(trace_dir), "--schedule", schedule, *MODEL,
        "--batch", "8", "--microbatches", "4", "--iters", "4", script=JOB,
    )  # fmt: skip
    done = subprocess.run(command, env=job_env(), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    traces = sorted(p.name for p in trace_dir.iterdir())
    assert len(traces) == 2 and all(name.endswith(".pt.trace.json.gz") for name in traces), traces
    return trace_dir


def zb_import(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(require_zb()), "import", *args], capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_a_directory_of_torch_profiler_traces_imports_without_format(tmp_path):
    trace_dir = profiled(tmp_path, "Interleaved1F1B")
    auto = zb_import(str(trace_dir))
    assert auto.returncode == 0, auto.stderr
    assert "2 rank(s), 4 stage(s)" in auto.stdout, auto.stdout
    chrome = zb_import(str(trace_dir), "--format", "chrome")
    assert chrome.returncode == 0, chrome.stderr
    assert auto.stdout == chrome.stdout


def test_traces_of_schedule1f1b_say_why_nothing_is_recognized(tmp_path):
    trace_dir = profiled(tmp_path, "1F1B")
    done = zb_import(str(trace_dir))
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    line = done.stderr.strip()
    assert line.startswith(f"zb import: no pipeline ops recognized in {trace_dir}: 2 process(es)")
    assert "point-to-point transfers (c10d::send / c10d::recv_) but no PP:<action> range" in line
    assert "zb profile --torch -- CMD" in line and "--rules FILE" in line
    assert "gloo:" not in line, line

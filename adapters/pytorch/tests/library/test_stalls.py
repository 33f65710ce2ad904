# SPDX-License-Identifier: Apache-2.0
"""The fault suite of `zb doctor` and the live stall watch (docs/stalls.md §5): real jobs on 2, 4
and 8 gloo ranks under `zb replay` (or `zb profile`) `--stall-timeout 3 --on-stall kill`, each with
one injected fault
(a rank frozen, killed, slow, raising; orders that cross; a rank with another microbatch count or
layout) in torch's runtime through the shim, in zbkit's executor, and in the unmodified bundled
script; and no false alarm: every fault run first trains HEALTHY_STEPS healthy steps under the
same 3-second watch (a false alarm would end the job before its fault strikes, which the test
checks), and each configuration no fault covers runs healthy throughout. Each checks the diagnosis
zb replay printed and kept (diagnosis.json): the culprit's kind, rank and op; that it came within
the target after the fault; and that no process of the job is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

pytest.importorskip("torch")

from launch import JOBS, SCRIPT, job_env, torchrun_command, zb_binary  # noqa: E402

JOB = JOBS / "fault_job.py"
BUNDLED_SCRIPT = SCRIPT
STALL_TIMEOUT_S = 3
# After the fault: the stall timeout, one watch interval, reading the records, ending the job.
DIAGNOSIS_WITHIN_S = 60
# Healthy steps before each injected fault: the no-false-alarm check rides on the fault runs.
HEALTHY_STEPS = 6


def tune(folder: Path, family: str, ranks: int, microbatches: int = 4) -> Path:
    out = folder / f"{family}-p{ranks}-m{microbatches}.json"
    if out.exists():
        return out
    costs = folder / f"costs-p{ranks}.json"
    stage = {"F": 1.0, "B": 1.0, "W": 0.8, "M_B": 1000, "M_W": 400}
    costs.write_text(json.dumps({"format": "zb-costs/1", "comm": 0.1, "count": ranks,
                                 "stages": [stage]}))  # fmt: skip
    done = subprocess.run(
        [str(zb_binary()), "tune", "--costs", str(costs), "--microbatches", str(microbatches),
         "--mem-limit", "2x", "--family", family, "--out", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def gpipe(folder: Path, microbatches: int = 4) -> Path:
    """A 2-rank GPipe order (every F, then every BW) as a zb-schedule/1 file (the costs of a tuned
    file: zb export needs them)."""
    costs = json.loads(tune(folder, "1f1b", 2, microbatches).read_text())["costs"]
    ranks = []
    for rank in range(2):
        ops = [{"type": "F", "mb": mb, "chunk": 0} for mb in range(microbatches)]
        ops += [{"type": "BW", "mb": mb, "chunk": 0} for mb in range(microbatches)]
        ranks.append({"rank": rank, "stages": [rank], "ops": ops})
    path = folder / "gpipe-p2.json"
    path.write_text(json.dumps({"format": "zb-schedule/1", "stages": 2, "microbatches": 4,
                                "chunks": 1, "placement": "loop", "costs": costs,
                                "ranks": ranks}))  # fmt: skip
    return path


def left_behind(run_dir: Path) -> list:
    """The ranks' processes (from their records) still there."""
    alive = []
    for record in run_dir.glob("rank*.progress"):
        pid = int.from_bytes(record.read_bytes()[20:24], "little")
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive


class Run:
    def __init__(self, done: subprocess.CompletedProcess, run_dir: Path,
                 fault_at: Optional[float]) -> None:  # fmt: skip
        self.done = done
        self.run_dir = run_dir
        self.fault_at = fault_at
        path = run_dir / "diagnosis.json"
        self.diagnosis: Optional[Dict[str, Any]] = (
            json.loads(path.read_text()) if path.exists() else None
        )
        self.diagnosed_at = path.stat().st_mtime if path.exists() else None

    def context(self) -> str:
        return f"exit {self.done.returncode}\n{self.done.stderr[-4000:]}"


def replay(tmp_path: Path, schedule: Path, command: list, timeout: float = 150) -> Run:
    run_dir = tmp_path / "run"
    zb = [str(zb_binary()), "replay", str(schedule), "--run-dir", str(run_dir),
          "--stall-timeout", str(STALL_TIMEOUT_S), "--on-stall", "kill", "--"]  # fmt: skip
    done = subprocess.run(zb + command, env=job_env(), capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    note = tmp_path / "fault-at"
    fault_at = float(note.read_text()) if note.exists() else None
    run = Run(done, run_dir, fault_at)
    assert left_behind(run_dir) == [], run.context()
    return run


def fault_run(tmp_path: Path, runner: str, schedule: Path, ranks: int, fault: Optional[dict],
              rank_schedules: Optional[dict] = None, steps: int = 3) -> Run:  # fmt: skip
    if fault is not None:
        fault = dict(fault, note=str(tmp_path / "fault-at"))
    spec = {"runner": runner, "schedule": str(schedule), "steps": steps, "fault": fault,
            "rank_schedules": {str(r): str(p) for r, p in (rank_schedules or {}).items()}}  # fmt: skip
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    return replay(tmp_path, schedule, torchrun_command(str(spec_path), ranks=ranks, script=JOB))


def assert_culprit(run: Run, kind: str, rank: int, op: Optional[str] = None) -> None:
    assert run.diagnosis is not None, "no diagnosis.json: " + run.context()
    culprit = run.diagnosis["culprit"]
    assert (culprit["kind"], culprit["rank"]) == (kind, rank), run.context()
    if op is not None:
        assert op in culprit["headline"], run.context()
        # What the culprit ran before it stopped: its record's history ends with the op it is
        # in (not ended), after ops it ended (the fault comes in step 1, after a whole step 0).
        recent = next(r for r in run.diagnosis["ranks"] if r["rank"] == rank)["recent"]
        assert recent and recent[-1]["ms"] is None and op in recent[-1]["op"], run.context()
        assert any(entry["ms"] is not None for entry in recent[:-1]), run.context()
    if run.fault_at is not None:
        assert run.diagnosed_at - run.fault_at < DIAGNOSIS_WITHIN_S, run.context()


@pytest.fixture(scope="module")
def schedules(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("schedules")


# (runner, family, ranks, fault kind, rank, stage, expected culprit kind, op in the headline)
FAULTS = [
    ("torch", "1f1b", 2, "stop", 1, 1, "frozen", "F stage 1"),
    ("torch", "zb-h1", 2, "stop", 0, 0, "frozen", "F stage 0"),
    ("torch", "zb-h2", 2, "kill", 1, 1, "died", "F stage 1"),
    ("torch", "zb-v", 2, "kill", 0, 3, "died", "F stage 3"),
    ("torch", "1f1b-i", 2, "raise", 1, 3, "raised", "F stage 3"),
    ("torch", "zb-h1", 2, "sleep", 1, 1, "slow", "F stage 1"),
    ("torch", "zb-v", 2, "sleep", 1, 1, "slow", "F stage 1"),
    ("torch", "zb-h1", 4, "stop", 2, 2, "frozen", "F stage 2"),
    ("torch", "1f1b", 4, "kill", 3, 3, "died", "F stage 3"),
    ("torch", "zb-v", 4, "raise", 1, 1, "raised", "F stage 1"),
    ("executor", "zb-h1", 2, "stop", 1, 1, "frozen", "F stage 1"),
    ("executor", "zb-v", 2, "kill", 1, 2, "died", "F stage 2"),
    ("executor", "1f1b", 2, "raise", 0, 0, "raised", "F stage 0"),
    ("executor", "zb-h2", 2, "sleep", 0, 0, "slow", "F stage 0"),
    ("executor", "1f1b-i", 2, "stop", 0, 2, "frozen", "F stage 2"),
    ("executor", "zb-h1", 4, "kill", 2, 2, "died", "F stage 2"),
    ("torch", "zb-h1", 8, "stop", 5, 5, "frozen", "F stage 5"),
]


@pytest.mark.parametrize("runner,family,ranks,kind,rank,stage,culprit,op", FAULTS,
                         ids=[f"{f[0]}-{f[1]}-p{f[2]}-{f[3]}-rank{f[4]}" for f in FAULTS])  # fmt: skip
def test_an_injected_fault_is_named_with_its_rank_and_op(
    tmp_path, schedules, runner, family, ranks, kind, rank, stage, culprit, op
):
    schedule = tune(schedules, family, ranks, max(4, ranks))  # torch wants m >= stages
    fault = {"kind": kind, "rank": rank, "step": HEALTHY_STEPS, "stage": stage, "forward": 1,
             "seconds": 60}  # fmt: skip
    run = fault_run(tmp_path, runner, schedule, ranks, fault, steps=HEALTHY_STEPS + 2)
    assert run.done.returncode != 0, run.context()
    # The fault struck: no false alarm ended the job in its healthy steps.
    assert run.fault_at is not None, "ended before the fault: " + run.context()
    assert_culprit(run, culprit, rank, op)
    assert f"zb doctor {run.run_dir}" in run.done.stderr


def test_crossed_orders_are_a_deadlock(tmp_path, schedules):
    """Rank 0 runs 1F1B, rank 1 GPipe: each file fits, together they wait for each other."""
    one_f_one_b = tune(schedules, "1f1b", 2)
    run = fault_run(tmp_path, "torch", one_f_one_b, 2, None, {1: gpipe(schedules)})
    assert_culprit(run, "deadlock", 0)
    assert "waits for rank 1" in run.diagnosis["culprit"]["headline"]


def test_a_rank_with_another_microbatch_count_makes_the_schedule_unrunnable(tmp_path, schedules):
    four, six = tune(schedules, "1f1b", 2, 4), tune(schedules, "1f1b", 2, 6)
    run = fault_run(tmp_path, "torch", four, 2, None, {1: six})
    assert_culprit(run, "unrunnable", 1)
    assert "whose program has no op that sends it" in run.diagnosis["culprit"]["headline"]


def test_a_schedule_for_another_layout_on_one_rank_is_named(tmp_path, schedules):
    """Rank 1 gets a V-placement file (stages 1 and 2) beside rank 0's loop one (0 and 2)."""
    loop, v = tune(schedules, "1f1b-i", 2), tune(schedules, "zb-v", 2)
    run = fault_run(tmp_path, "torch", loop, 2, None, {1: v})
    assert run.done.returncode != 0, run.context()
    assert run.diagnosis is not None, run.context()
    problems = " ".join(run.diagnosis["problems"])
    assert "is in the programs of ranks 0 and 1" in problems, run.context()


def _wait_for_step(run_dir: Path, rank: int, step: int, process: subprocess.Popen) -> int:
    """The pid of `rank` once its record shows it in step `step`."""
    record = run_dir / f"rank{rank}.progress"
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        if record.exists():
            data = record.read_bytes()
            slots = [data[o : o + 56] for o in (256, 320)]
            steps = [int.from_bytes(s[8:16], "little", signed=True) for s in slots]
            if max(steps) >= step:
                return int.from_bytes(data[20:24], "little")
        time.sleep(0.05)
    raise AssertionError(f"rank {rank} never reached step {step}")


BUNDLED_JOB = ["--layers", "4", "--dim", "32", "--heads", "2", "--seq", "16", "--vocab", "64",
               "--batch", "8", "--microbatches", "4", "--iters", "400"]  # fmt: skip
# (how the bundled script runs, the signal a rank gets from outside, the culprit)
BUNDLED = [
    ("replay", signal.SIGSTOP, "frozen"),
    ("replay", signal.SIGKILL, "died"),
    # zb profile of a script whose torch schedule runs through torch's runtime: the record comes
    # from torch's own action names, no zbkit order involved.
    ("profile", signal.SIGSTOP, "frozen"),
]


@pytest.mark.parametrize("how,signal_number,culprit", BUNDLED,
                         ids=[f"{b[0]}-{signal.Signals(b[1]).name}" for b in BUNDLED])  # fmt: skip
def test_the_unmodified_bundled_script(tmp_path, schedules, how, signal_number, culprit):
    """The bundled pipelining script, run as a user runs it; the fault comes from outside."""
    run_dir = tmp_path / "run"
    watch = ["--run-dir", str(run_dir), "--stall-timeout", str(STALL_TIMEOUT_S), "--on-stall",
             "kill"]  # fmt: skip
    if how == "replay":
        zb = ["replay", str(tune(schedules, "zb-v", 2, 4)), *watch]
        job = ["--schedule", "ZBVZeroBubble", *BUNDLED_JOB]
    else:
        zb = ["profile", "--torch", "--pp", "2", *watch]
        job = ["--schedule", "Interleaved1F1B", *BUNDLED_JOB]
    command = [str(zb_binary()), *zb, "--", *torchrun_command(*job, script=BUNDLED_SCRIPT)]
    process = subprocess.Popen(command, env=job_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        pid = _wait_for_step(run_dir, 1, 5, process)
        os.kill(pid, signal_number)
        struck = time.time()
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    run = Run(subprocess.CompletedProcess(command, process.returncode, "", stderr), run_dir,
              struck)  # fmt: skip
    assert left_behind(run_dir) == [], run.context()
    assert_culprit(run, culprit, 1)
    # torch's runtime marks only beginnings: an action ends when the next begins.
    recent = next(r for r in run.diagnosis["ranks"] if r["rank"] == 1)["recent"]
    assert len(recent) >= 2 and recent[-1]["ms"] is None, run.context()
    assert all(entry["ms"] is not None for entry in recent[:-1]), run.context()
    # The steps before the stall as a Perfetto trace: every rank's last ops, the one each is in
    # open, and what Perfetto's importer needs (zb trace --check).
    trace = tmp_path / "stall.json"
    doctor = subprocess.run([str(zb_binary()), "doctor", str(run_dir), "--trace-out", str(trace)],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert f"wrote {trace}: the last " in doctor.stdout, doctor.stdout + doctor.stderr
    checked = subprocess.run([str(zb_binary()), "trace", "--check", str(trace)],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    slices = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    open_ops = [e for e in slices if "(not ended)" in e.get("args", {}).get("range", "")]
    assert {e["pid"] for e in open_ops} == {1, 2}, open_ops  # one open op on each rank


# Every configuration that must raise no alarm; those a fault run covers (its healthy steps) are
# not run again.
CONFIGURATIONS = [(runner, family, ranks) for runner in ("torch", "executor")
                  for family, ranks in (("1f1b", 2), ("zb-h1", 2), ("zb-h2", 2), ("zb-v", 2),
                                        ("1f1b-i", 2), ("zb-h1", 4), ("1f1b", 4), ("zb-v", 4),
                                        ("v-half", 4), ("1f1b-i", 4))]  # fmt: skip
HEALTHY = [c for c in CONFIGURATIONS if c not in {f[:3] for f in FAULTS}]


def test_every_configuration_is_checked_for_false_alarms():
    covered = {f[:3] for f in FAULTS}
    assert set(CONFIGURATIONS) <= covered | set(HEALTHY)
    assert len(HEALTHY) == 6 and len(covered & set(CONFIGURATIONS)) == 14


@pytest.mark.parametrize("runner,family,ranks", HEALTHY,
                         ids=[f"{h[0]}-{h[1]}-p{h[2]}" for h in HEALTHY])  # fmt: skip
def test_a_healthy_run_raises_no_alarm(tmp_path, schedules, runner, family, ranks):
    schedule = tune(schedules, family, ranks)
    run = fault_run(tmp_path, runner, schedule, ranks, None, steps=20)
    assert run.done.returncode == 0, run.context()
    assert "no progress" not in run.done.stderr and run.diagnosis is None, run.context()
    # The records are the job's: it went well, so the directory keeps no diagnosis; every rank
    # left its record as exited.
    doctor = subprocess.run([str(zb_binary()), "doctor", str(run.run_dir), "--json"],
                            capture_output=True, text=True, timeout=30)  # fmt: skip
    assert doctor.returncode == 0, doctor.stderr
    assert json.loads(doctor.stdout)["state"] == "finished"


def test_zb_doctor_reads_torchs_flight_recorder_dumps(tmp_path):
    """Real dumps of torch's flight recorder (gloo keeps its collectives): rank 1 never joins the
    third all-reduce; zb doctor names it, and the one rank 0 waits in."""
    prefix = tmp_path / "fr_rank_"
    env = dict(job_env(), TORCH_FR_BUFFER_SIZE="1000")
    process = subprocess.Popen(torchrun_command(str(prefix), script=JOBS / "fr_hang_job.py"), env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.time() + 120
        while not all(Path(f"{prefix}{r}").exists() for r in range(2)):
            assert process.poll() is None and time.time() < deadline, "no dumps"
            time.sleep(0.2)
    finally:
        # torchrun ends its workers (each in a session of its own) on SIGTERM.
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    done = subprocess.run([str(zb_binary()), "doctor", "--flight-recorder", str(prefix)],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ("flight recorder: process group 0: rank 1 never joined collective 3 (gloo:all_reduce), "
            "which rank 0 waits in") in done.stdout, done.stdout  # fmt: skip
    bad = tmp_path / "bad_rank_0"
    bad.write_bytes(Path(f"{prefix}0").read_bytes()[:100])
    torn = subprocess.run([str(zb_binary()), "doctor", "--flight-recorder", str(tmp_path / "bad_rank_")],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert torn.returncode == 1 and torn.stderr.count("\n") == 1, torn.stderr
    assert f"{bad}: not a flight-recorder pickle" in torn.stderr, torn.stderr

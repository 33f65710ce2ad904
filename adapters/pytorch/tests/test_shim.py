# SPDX-License-Identifier: Apache-2.0
"""The bundled job under torchrun (2 ranks, gloo, CPU): with every torch schedule class, and with
zbkit schedules replayed by `zb replay` into the unmodified script through the shim. Every run
must end with the parameters of the single-process reference (examples/reference.py)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
PYTORCH_DIR = HERE.parent
REPO = PYTORCH_DIR.parent.parent
EXAMPLES = PYTORCH_DIR / "examples"
SCRIPT = EXAMPLES / "train_pipelining.py"
HOOK_DIR = PYTORCH_DIR / "zbkit" / "_hook"
sys.path.insert(0, str(EXAMPLES))
from reference import train_reference  # noqa: E402

# Small enough that a 2-rank run takes a few seconds on two slow cores.
MODEL = ["--layers", "4", "--dim", "32", "--heads", "2", "--seq", "16", "--vocab", "64"]
JOB = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "2", "--warmup", "0"]
TIMEOUT_S = 150


def zb_binary() -> Path:
    return Path(os.environ.get("ZBKIT_ZB_BINARY") or REPO / "build" / "cli" / "zb")


def require_zb() -> Path:
    path = zb_binary()
    if not path.exists():
        pytest.skip(f"no zb binary at {path} (build the project or set ZBKIT_ZB_BINARY)")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def torchrun_command(*script_args: str) -> list:
    return [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
        str(SCRIPT), *script_args,
    ]  # fmt: skip


def job_env(**extra: str) -> dict:
    env = dict(os.environ)
    for name in ("ZBKIT_SCHEDULE", "ZBKIT_TORCH_PROFILE", "PYTHONPATH"):
        env.pop(name, None)
    env.update(OMP_NUM_THREADS="1", ZBKIT_ZB_BINARY=str(zb_binary()))
    env.update(extra)
    return env


def run(command: list, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


def zb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(require_zb()), *args], capture_output=True, text=True, timeout=60)


def tune_uniform(folder: Path, family: str, microbatches: int = 4, store: Path = None):
    """A zb-schedule/1 file of `family` for 2 ranks, tuned by the real zb on uniform costs, and
    its schedule id when also stored in `store` (else None)."""
    costs = folder / "costs.json"
    costs.write_text(
        json.dumps(
            {"format": "zb-costs/1", "name": "bundled job", "comm": 0.05, "count": 2,
             "stages": [{"F": 1.0, "B": 1.0, "W": 0.8, "M_B": 1000, "M_W": 300}]}
        )
    )  # fmt: skip
    out = folder / f"{family}.json"
    args = ["tune", "--costs", str(costs), "-m", str(microbatches), "--mem-limit", "none",
            "--family", family, "-o", str(out)]  # fmt: skip
    if store is not None:
        args += ["--store", str(store)]
    done = zb(*args)
    assert done.returncode == 0, done.stderr
    found = re.search(r"stored as schedule (\d+) in ", done.stdout)
    assert (store is None) == (found is None), done.stdout
    return out, int(found.group(1)) if found else None


def tuned_schedule(tmp_path: Path, family: str, microbatches: int = 4) -> Path:
    return tune_uniform(tmp_path, family, microbatches)[0]


def assert_matches_reference(prefix: Path, job_args: list) -> None:
    ref_losses, ref_params = train_reference(job_args)
    seen, losses = set(), None
    for rank in range(2):
        dump = torch.load(f"{prefix}.rank{rank}.pt")
        if dump["losses"]:
            losses = dump["losses"]
        for name, value in dump["params"].items():
            torch.testing.assert_close(value, ref_params[name], rtol=1e-4, atol=1e-5, msg=name)
            seen.add(name)
    assert seen == set(ref_params), "some parameters are on no rank"
    assert losses is not None and len(losses) == len(ref_losses)
    assert losses == pytest.approx(ref_losses, rel=1e-5)


@pytest.mark.parametrize(
    "schedule", ["1F1B", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"]
)
def test_bundled_job_runs_with_each_torch_schedule_class(tmp_path, schedule):
    prefix = tmp_path / "dump"
    args = JOB + ["--schedule", schedule, "--dump", str(prefix)]
    done = run(torchrun_command(*args), job_env())
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = [json.loads(text) for text in re.findall(r"\{[^{}]*\}", done.stdout)]
    assert sorted(s["rank"] for s in summaries) == [0, 1]
    assert all(s["median_iter_s"] > 0 for s in summaries)
    assert "zbkit:" not in done.stderr  # no shim without zb replay
    assert_matches_reference(prefix, args)


def test_zb_replay_runs_a_tuned_zb_h1_schedule_in_the_unmodified_1f1b_script(tmp_path):
    schedule = tuned_schedule(tmp_path, "zb-h1")
    prefix = tmp_path / "dump"
    args = JOB + ["--schedule", "1F1B", "--dump", str(prefix)]
    command = [str(require_zb()), "replay", str(schedule), "--", *torchrun_command(*args)]
    done = run(command, job_env())
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(2):
        assert f"zbkit: rank {rank}: replaying " in done.stderr, done.stderr[-3000:]
        assert "in place of Schedule1F1B's order" in done.stderr
    assert_matches_reference(prefix, args)


def test_shim_runs_a_zb_v_schedule_json_in_the_unmodified_zbv_script(tmp_path):
    # The hook on PYTHONPATH and ZBKIT_SCHEDULE naming the zb-schedule/1 file: the shim converts
    # it with zb export itself (what zb replay does beforehand).
    schedule = tuned_schedule(tmp_path, "zb-v")
    prefix = tmp_path / "dump"
    args = JOB + ["--schedule", "ZBVZeroBubble", "--dump", str(prefix)]
    temp = tmp_path / "tmp"  # where the shim's conversions go: nothing may stay there
    temp.mkdir()
    env = job_env(ZBKIT_SCHEDULE=str(schedule), PYTHONPATH=str(HOOK_DIR), TMPDIR=str(temp))
    done = run(torchrun_command(*args), env)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(2):
        assert f"zbkit: rank {rank}: replaying {schedule} (4 stages, v placement" in done.stderr
    assert_matches_reference(prefix, args)
    assert list(temp.glob("zbkit-schedule-*")) == []
    # Refused (a V order in a 1F1B script): each rank ends at once (os._exit, no atexit), and
    # its conversion is gone all the same.
    refused = run(torchrun_command(*JOB, "--schedule", "1F1B"), env)
    assert refused.returncode != 0
    assert "zbkit: schedule has 4 stages in v placement" in refused.stderr, refused.stderr[-3000:]
    assert list(temp.glob("zbkit-schedule-*")) == []


def test_mismatched_schedule_is_refused_with_one_line_on_every_rank(tmp_path):
    schedule = tuned_schedule(tmp_path, "zb-v")  # 4 stages, V placement
    command = [str(require_zb()), "replay", str(schedule), "--",
               *torchrun_command(*JOB, "--schedule", "1F1B")]  # fmt: skip
    done = run(command, job_env())
    assert done.returncode != 0
    line = "zbkit: schedule has 4 stages in v placement, the script built 2 stages (loop)"
    ours = [ln for ln in done.stderr.splitlines() if ln.startswith("zbkit:")]
    assert ours == [line, line], done.stderr[-3000:]
    assert "iter 0" not in done.stdout  # refused before the first step ran


def test_a_csv_that_would_train_wrong_is_refused_before_the_first_step(tmp_path):
    """A hand-written CSV whose last stage runs F1 before F0 deadlocks nowhere, but PyTorch's
    runtime would pair microbatch 0's backward with microbatch 1's loss (docs/formats.md §4.1):
    the shim refuses it on every rank with one line naming the rule, rank, stage and microbatch."""
    csv_path = tmp_path / "swapped.csv"
    csv_path.write_text("0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n1F1,1F0,1B0,1B1,1F2,1B2,1F3,1B3\n")
    env = job_env(ZBKIT_SCHEDULE=str(csv_path), PYTHONPATH=str(HOOK_DIR))
    done = run(torchrun_command(*JOB, "--schedule", "1F1B"), env)
    assert done.returncode != 0
    line = (
        f'zbkit: {csv_path}: PyTorch runtime rule "last stage\'s forwards in microbatch order" '
        "(docs/formats.md §4.1): rank 1, stage 1 runs F1 (action 0) before F0; PyTorch would "
        "start microbatch 0's backward from microbatch 1's loss"
    )
    ours = [ln for ln in done.stderr.splitlines() if ln.startswith("zbkit:")]
    assert ours == [line, line], done.stderr[-3000:]
    assert "iter 0" not in done.stdout


def test_replay_usage_errors():
    done = zb("replay", "--store", "nowhere.db")
    assert done.returncode == 2
    assert done.stderr.startswith("zb replay: ") and done.stderr.count("\n") == 1


def test_startup_hook_is_inert_unless_zbkit_launched_the_job():
    """The hook directory on PYTHONPATH alone (no ZBKIT_SCHEDULE, ZBKIT_TORCH_PROFILE or
    ZBKIT_MEMORY_REPORT, which only zbkit's launchers set) imports nothing: a Python process that
    inherits the path by accident runs untouched."""
    probe = "import sys; print(sorted(m for m in ('zbkit', 'torch') if m in sys.modules))"
    env = job_env(PYTHONPATH=str(HOOK_DIR))
    env.pop("ZBKIT_MEMORY_REPORT", None)
    done = run([sys.executable, "-c", probe], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]" and done.stderr == ""
    # The same process launched as zbkit launches it activates the shim (the import hook).
    env["ZBKIT_MEMORY_REPORT"] = "/nonexistent-zbkit-dir"
    done = run([sys.executable, "-c", probe], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['zbkit']"

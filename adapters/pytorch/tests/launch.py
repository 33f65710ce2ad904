# SPDX-License-Identifier: Apache-2.0
"""The one support module of the Python tests: where things are, and launching what they test.

Paths (the package, the examples, the startup hook, the torchrun jobs under tests/job_scripts/), `zb` as
a process (`zb`, `zb_binary`, `require_zb`, `zb_partition`), torchrun jobs of the bundled script
(`torchrun_command`, `job_env`, `run`, on a `free_port`), schedules tuned by the real `zb`
(`tune_uniform`, `ZbTuner`) and their test-only conversion (`schedule_from_json`, `dump_schedule`).
Test files import it by name (tests/conftest.py puts this folder and tests/job_scripts/ on sys.path); the
job scripts under tests/job_scripts/ may too.

The JSON -> Schedule conversion below exists only for the tests; the product path from a store or
a zb-schedule/1 file to `zbkit.schedule.Schedule` is `zbkit.libzbrt` (over libzbrt).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Sequence

TESTS = Path(__file__).resolve().parent
PYTORCH_DIR = TESTS.parent
REPO = PYTORCH_DIR.parent.parent
EXAMPLES = PYTORCH_DIR / "examples"
JOBS = TESTS / "job_scripts"
SCRIPT = EXAMPLES / "train_pipelining.py"
HOOK_DIR = PYTORCH_DIR / "zbkit" / "_hook"
for _path in (PYTORCH_DIR, JOBS):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from zbkit import locate, pipelining  # noqa: E402
from zbkit.schedule import Op, Schedule  # noqa: E402

# The package finds zb and libzbrt only through zbkit.locate (the environment, else PATH); the
# tests know the checkout, so they default the environment to its build (scripts/run-tests.sh
# sets both).
os.environ.setdefault(locate.ZB_ENV, str(REPO / "build" / "zb" / "zb"))
os.environ.setdefault(locate.ZBRT_ENV, str(REPO / "build" / "runtime" / "libzbrt.so"))

# The bundled job, small enough that a 2-rank run takes a few seconds on two slow cores.
MODEL = ["--layers", "4", "--dim", "32", "--heads", "2", "--seq", "16", "--vocab", "64"]
JOB = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", "2", "--warmup", "0"]
TIMEOUT_S = 150


def zb_binary() -> Path:
    """The `zb` command: $ZBKIT_ZB_BINARY (defaulted above to the checkout's build/zb/zb)."""
    return Path(locate.zb_binary())


def require_zb() -> Path:
    """zb_binary(), or the test skipped saying where it was looked for."""
    import pytest  # noqa: PLC0415

    path = zb_binary()
    if not path.exists():
        pytest.skip(f"no zb binary at {path} (build the project or set ZBKIT_ZB_BINARY)")
    return path


def zb(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`zb ARGS...`, its output captured as text."""
    return subprocess.run([str(require_zb()), *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def zb_rehearse(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`zb rehearse ARGS...` run in `cwd` (its logs and schedules land in cwd/zbkit-rehearse),
    one thread per process, this build's libzbrt by an absolute path."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if env.get("ZBKIT_ZBRT_LIBRARY"):
        env["ZBKIT_ZBRT_LIBRARY"] = str(Path(env["ZBKIT_ZBRT_LIBRARY"]).resolve())
    return subprocess.run([str(require_zb().resolve()), "rehearse", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)  # fmt: skip


def zb_partition(layers: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`zb partition --layers LAYERS ARGS...`, its output captured as text."""
    return subprocess.run(
        [str(zb_binary()), "partition", "--layers", str(layers), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def torchrun_command(*script_args: str, ranks: int = 2, script: Path = SCRIPT) -> list:
    """torchrun of `script` (the bundled job unless given) on `ranks` local ranks."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
        "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
        str(script), *script_args,
    ]  # fmt: skip


def job_env(**extra: str) -> dict:
    """The environment of a job: every variable that activates the shim (zbkit.pipelining) and
    PYTHONPATH cleared, one thread, this build's zb; then `extra`."""
    env = dict(os.environ)
    for name in (*pipelining.ACTIVATING, "PYTHONPATH"):
        env.pop(name, None)
    env.update(OMP_NUM_THREADS="1", ZBKIT_ZB_BINARY=str(zb_binary()))
    env.update(extra)
    return env


def run(command: list, env: dict, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


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
    """The dumps PREFIX.rank<R>.pt of a 2-rank run of the bundled job with `job_args` hold the
    parameters and losses of the single-process reference (examples/reference.py)."""
    import pytest  # noqa: PLC0415
    import torch  # noqa: PLC0415

    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    from reference import train_reference  # noqa: PLC0415

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


def schedule_from_json(doc: Dict[str, Any]) -> Schedule:
    """A zb-schedule/1 document as a Schedule (tests only; see the module doc)."""
    ranks = sorted(doc["ranks"], key=lambda r: r["rank"])
    return Schedule(
        ranks=int(doc["stages"]),
        microbatches=int(doc["microbatches"]),
        chunks=int(doc["chunks"]),
        placement=str(doc["placement"]),
        stages=tuple(tuple(int(s) for s in r["stages"]) for r in ranks),
        ops=tuple(
            tuple(
                Op(
                    kind=o["type"],
                    stage=int(r["stages"][o.get("chunk", 0)]),
                    microbatch=int(o["mb"]),
                )
                for o in r["ops"]
            )
            for r in ranks
        ),
        family=str(doc.get("family", "")),
        predicted_makespan_ms=(doc.get("predicted") or {}).get("makespan"),
    )


class ZbTuner:
    """Runs `zb tune` into a temporary folder and returns Schedules."""

    def __init__(self, binary: Path, folder: Path) -> None:
        self.binary = binary
        self.folder = folder

    def tune(
        self, family: str, ranks: int = 2, microbatches: int = 4, extra: Sequence[str] = ()
    ) -> Schedule:
        costs = self.folder / f"costs-p{ranks}.json"
        if not costs.exists():
            costs.write_text(
                json.dumps(
                    {
                        "format": "zb-costs/1",
                        "comm": 0.1,
                        "count": ranks,
                        "stages": [{"F": 1.0, "B": 1.0, "W": 0.8, "M_B": 1000, "M_W": 400}],
                    }
                )
            )
        out = self.folder / f"{family}-p{ranks}-m{microbatches}.json"
        cmd = [
            str(self.binary), "tune", "--costs", str(costs), "--microbatches", str(microbatches),
            "--mem-limit", "2x", "--family", family, "--out", str(out), *extra,
        ]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
        return schedule_from_json(json.loads(out.read_text()))


def dump_schedule(schedule: Schedule, path: Path) -> Path:
    """Writes a Schedule for the worker processes."""
    path.write_bytes(pickle.dumps(schedule))
    return path

# SPDX-License-Identifier: Apache-2.0
"""Test set-up: the package on sys.path, and schedules made by the real `zb` binary.

The JSON -> Schedule conversion below exists only for the tests; the product path from a store or
a zb-schedule/1 file to `zbkit.schedule.Schedule` is `zbkit.libzbrt` (over libzbrt).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Sequence

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
REPO_ROOT = PACKAGE_ROOT.parents[1]
if str(PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_ROOT))

from zbkit import locate  # noqa: E402
from zbkit.schedule import Op, Schedule  # noqa: E402

# The package finds zb and libzbrt only through zbkit.locate (the environment, else PATH); the
# tests know the checkout, so they default the environment to its build (scripts/run-tests.sh
# sets both).
os.environ.setdefault(locate.ZB_ENV, str(REPO_ROOT / "build" / "cli" / "zb"))
os.environ.setdefault(locate.ZBRT_ENV, str(REPO_ROOT / "build" / "runtime" / "libzbrt.so"))


def zb_binary() -> Path:
    """The `zb` command: $ZBKIT_ZB_BINARY (defaulted above to the checkout's build/cli/zb)."""
    return Path(locate.zb_binary())


def zb_partition(layers: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`zb partition --layers LAYERS ARGS...`, its output captured as text."""
    return subprocess.run(
        [str(zb_binary()), "partition", "--layers", str(layers), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


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


@pytest.fixture(scope="session")
def zb_tuner(tmp_path_factory: pytest.TempPathFactory) -> ZbTuner:
    binary = zb_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        msg = f"zb binary not built at {binary} (set ZBKIT_ZB_BINARY or build the repository)"
        print(f"SKIP: {msg}")
        pytest.skip(msg)
    return ZbTuner(binary, tmp_path_factory.mktemp("zb"))


def dump_schedule(schedule: Schedule, path: Path) -> Path:
    """Writes a Schedule for the worker processes."""
    path.write_bytes(pickle.dumps(schedule))
    return path

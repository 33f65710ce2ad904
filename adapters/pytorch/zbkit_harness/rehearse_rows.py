# SPDX-License-Identifier: Apache-2.0
"""What `zb rehearse` runs (zbkit_harness.rehearse, docs/rehearse.md): its settings, the schedules a
`--schedules` LIST names, and its rows, each a schedule on one runtime with its prediction and
what it measured."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from zbkit.errors import ZbkitError

from .emulated_stages import RehearsalError
from .torch_orders import CLASSES
from .torchrun_jobs import Measurement, median

OBLIVIOUS = "/dp-oblivious"  # a zbkit row's schedule, its order tuned without the collectives
TORCH_CLASSES = [name for name, _, _ in CLASSES]
ZBKIT_FAMILIES = ("1f1b", "1f1b-i", "zb-h1", "zb-h2", "zb-auto", "zb-v", "v-half", "v-min",
                  "search")  # fmt: skip


class UsageError(ZbkitError):
    """A bad command line: exit 2, nothing run or written."""


def note(text: str) -> None:
    sys.stderr.write(f"zb rehearse: {text}\n")
    sys.stderr.flush()


def _number(value: float, digits: int) -> Optional[float]:
    """Rounded, or None (JSON null) for a figure that could not be computed (NaN)."""
    return None if math.isnan(value) else round(value, digits)


@dataclass
class Row:
    """One schedule on one runtime: how to run it, its prediction and what it measured."""

    schedule: str  # "torch:<Class>" or "zbkit:<family>"
    runtime: str  # "torch" (the class itself), "shim" or "executor"
    job_args: List[str]
    env: Dict[str, str] = field(default_factory=dict)
    predicted_ms: float = 0.0
    predicted_peak: float = 0.0  # fuller rank, profile units
    ops_per_rank: int = 0
    schedule_id: Optional[int] = None
    measured: Measurement = field(default_factory=Measurement)
    error: str = ""
    run_id: Optional[int] = None
    host_bound_s: List[float] = field(default_factory=list)  # per iteration, the worst rank's
    schedule_file: Optional[Path] = None  # zbkit rows: the order they must run
    order: str = ""  # zbkit rows: "as scheduled" or the first divergence

    @property
    def label(self) -> str:
        return self.schedule if self.runtime == "torch" else f"{self.schedule} ({self.runtime})"

    @property
    def tag(self) -> str:
        return self.label.replace(":", "-").replace("/", "-").replace(" (", "-").rstrip(")")

    def measured_ms(self) -> float:
        return median(self.measured.iteration_s) * 1e3

    def ratio(self) -> float:
        return self.measured_ms() / self.predicted_ms if self.predicted_ms > 0 else math.nan

    def excess_per_op_ms(self) -> float:
        """What the prediction does not explain, per op of a rank: the runtime's own cost per op
        and the communication's deviation from the hop time, together (an upper bound on either)."""
        if not self.ops_per_rank:
            return math.nan
        return (self.measured_ms() - self.predicted_ms) / self.ops_per_rank

    def host_bound_ms(self) -> float:
        """Median over iterations of the most time a rank's device waited for its host."""
        return median(self.host_bound_s) * 1e3

    def to_json(self) -> Dict[str, Any]:
        doc: Dict[str, Any] = {
            "schedule": self.schedule,
            "runtime": self.runtime,
            "predicted_ms": round(self.predicted_ms, 3),
            "predicted_peak": self.predicted_peak,
        }
        if self.error:
            doc["error"] = self.error
            return doc
        doc.update(
            measured_ms=round(self.measured_ms(), 3),
            measured_over_predicted=_number(self.ratio(), 4),
            peak_bytes=self.measured.fuller_rank_peak(),
            iterations=len(self.measured.iteration_s),
            excess_per_op_ms=_number(self.excess_per_op_ms(), 4),
            host_bound_ms=round(self.host_bound_ms(), 3),
        )
        recomputes = self.measured.recompute_range()
        if recomputes is not None:
            doc["recomputes"] = list(recomputes)
        if self.order:
            doc["order"] = self.order
        if self.schedule_id is not None:
            doc["schedule_id"] = self.schedule_id
        if self.run_id is not None:
            doc["run_id"] = self.run_id
        return doc


@dataclass
class Settings:
    costs: Path
    microbatches: int
    mem_limit: str
    schedules: List[str]
    iters: int = 4
    warmup: int = 1
    rounds: int = 2
    store: str = ""
    cluster: str = "local"
    dir: Path = Path("zbkit-rehearse")
    message_bytes: int = 4096
    comm: str = "measured"
    device: str = "async"
    time_scale: float = 1.0
    search_time: float = 3.0
    json: bool = False
    ac_param_groups: int = 9
    dp: int = 1


def parse_schedules(text: str) -> List[str]:
    """LIST: comma-separated `torch` (every class), `torch:<Class>` (the `Schedule` prefix may be
    left out), `zbkit` (the search) or `zbkit:<family>`; each as a canonical name, once."""
    names: List[str] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, _, what = item.partition(":")
        if kind == "torch" and not what:
            chosen = [f"torch:{name}" for name in TORCH_CLASSES]
        elif kind == "torch":
            cls = what if what.startswith("Schedule") else f"Schedule{what}"
            if cls not in TORCH_CLASSES:
                raise RehearsalError(
                    f"--schedules: unknown torch schedule {what!r} (one of "
                    f"{', '.join(TORCH_CLASSES)})"
                )
            chosen = [f"torch:{cls}"]
        elif kind == "zbkit":
            family = what or "search"
            if family not in ZBKIT_FAMILIES:
                raise RehearsalError(
                    f"--schedules: unknown zbkit family {family!r} (one of "
                    f"{', '.join(ZBKIT_FAMILIES)})"
                )
            chosen = [f"zbkit:{family}"]
        else:
            raise RehearsalError(
                f"--schedules: {item!r} is neither torch[:<Class>] nor zbkit[:<family>]"
            )
        names.extend(name for name in chosen if name not in names)
    if not names:
        raise RehearsalError("--schedules is empty")
    return names

# SPDX-License-Identifier: Apache-2.0
"""Running Python training jobs for zbkit's commands (`zb demo`; a rehearsal builds on the same):
the bundled scripts on N ranks under torchrun with their output in a log, their summaries read
through one checked reader, `zb` subcommands for the C++ parts, and the one median and paired
comparison the reports use.

A job's summary is the `zb-job-summary/1` JSON each rank writes with `--summary-out`
(docs/formats.md §3.1). Every failure is a `JobError` with one line naming the job and its log.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from zbkit._json_file import read_json
from zbkit.errors import ZbkitError

SUMMARY_FORMAT = "zb-job-summary/1"
MEMORY_REPORT_FIELDS = ("rank", "peak_activation_bytes")

__all__ = [
    "JobError",
    "JobSummary",
    "Jobs",
    "Measurement",
    "SUMMARY_FORMAT",
    "median",
    "paired_ratios",
    "read_summary",
]


class JobError(ZbkitError):
    """A job or a zb subcommand failed, or left no readable summary."""


def median(values: Sequence[float]) -> float:
    """The median (the mean of the two middle values for an even count); 0 for none."""
    return statistics.median(values) if values else 0.0


def paired_ratios(a: Sequence[float], b: Sequence[float]) -> List[float]:
    """Per round, a's median time over b's: both ran minutes apart at most, so the machine's
    slow drift cancels in each ratio; the median of the ratios is the paired comparison."""
    return [x / y for x, y in zip(a, b) if y > 0]


@dataclass
class JobSummary:
    """What one rank of a job reports (zb-job-summary/1)."""

    rank: int
    iter_s: List[float]  # the measured iterations' times, warm-up left out
    peak_activation_bytes: Optional[float] = None
    barrier_s: Optional[List[float]] = None  # time waiting for the optimizer step, per iteration
    rollbacks: int = 0
    run_id: Optional[int] = None  # the replay run a recording job stored
    host_bound_s: Optional[List[float]] = None  # rehearsal, per iteration: stream idle for host
    # rehearsal under checkpointing: per stage, the fewest and most recomputations a microbatch got
    recomputes: Dict[int, Tuple[int, int]] = field(default_factory=dict)


def _field(doc: Mapping[str, Any], name: str, kind: Any, where: str, required: bool = True):
    if name not in doc:
        if required:
            raise JobError(f"{where}: no field {name!r}")
        return None
    value = doc[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise JobError(
            f"{where}: field {name!r} is {value!r}, not {getattr(kind, '__name__', kind)}"
        )
    return value


def _times(doc: Mapping[str, Any], name: str, where: str, required: bool) -> Optional[List[float]]:
    values = _field(doc, name, list, where, required)
    if values is None:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values):
        raise JobError(f"{where}: field {name!r} holds something other than times >= 0")
    return [float(v) for v in values]


def read_summary(path: Path) -> JobSummary:
    """One rank's summary file, checked: its format, rank and iteration times (non-empty), and
    the optional fields' types."""
    where = str(path)
    doc = read_json(path, JobError, unreadable="no job summary")
    if not isinstance(doc, dict) or doc.get("format") != SUMMARY_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise JobError(f"{where}: format is {got!r}, expected {SUMMARY_FORMAT!r}")
    iter_s = _times(doc, "iter_s", where, True)
    if not iter_s:
        raise JobError(f"{where}: field 'iter_s' is empty")
    peak = _field(doc, "peak_activation_bytes", (int, float), where, False)
    return JobSummary(
        rank=_field(doc, "rank", int, where),
        iter_s=iter_s,
        peak_activation_bytes=float(peak) if peak is not None else None,
        barrier_s=_times(doc, "barrier_s", where, False),
        rollbacks=_field(doc, "rollbacks", int, where, False) or 0,
        run_id=_field(doc, "run_id", int, where, False),
        host_bound_s=_times(doc, "host_bound_s", where, False),
        recomputes=_recomputes(doc, where),
    )


def _recomputes(doc: Mapping[str, Any], where: str) -> Dict[int, Tuple[int, int]]:
    """The optional "recomputes" field: {"<stage>": [fewest, most]}."""
    entries = _field(doc, "recomputes", dict, where, False) or {}
    out: Dict[int, Tuple[int, int]] = {}
    for stage, pair in entries.items():
        if (
            not str(stage).isdigit()
            or not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair)
        ):
            raise JobError(f"{where}: field 'recomputes' must map stages to [fewest, most]")
        out[int(stage)] = (pair[0], pair[1])
    return out


def read_memory_report(path: Path) -> float:
    """The peak activation bytes of the shim's memory report (ZBKIT_MEMORY_REPORT)."""
    where = str(path)
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise JobError(f"{where}: no readable memory report ({error})") from None
    if not isinstance(doc, dict):
        raise JobError(f"{where}: not a memory report")
    return float(_field(doc, "peak_activation_bytes", (int, float), where))


@dataclass
class Measurement:
    """What the runs of one schedule measured, accumulated over rounds."""

    iteration_s: List[float] = field(default_factory=list)  # slowest rank's, per iteration
    peak_bytes: List[float] = field(default_factory=list)  # per rank; empty: not measured
    rank_iteration_s: List[float] = field(default_factory=list)  # per rank, summed
    rank_barrier_s: List[float] = field(default_factory=list)  # per rank, summed
    rollbacks: int = 0
    recomputes: Dict[int, Tuple[int, int]] = field(default_factory=dict)  # per stage, last job's

    @classmethod
    def of(cls, summaries: Sequence[JobSummary]) -> "Measurement":
        """One job's: the slowest rank's time of each iteration, the ranks' peaks (when every
        rank reports one), waiting shares and rollbacks."""
        count = max(len(s.iter_s) for s in summaries)
        measured = cls(
            iteration_s=[
                max(s.iter_s[i] for s in summaries if i < len(s.iter_s)) for i in range(count)
            ]
        )
        peaks = [s.peak_activation_bytes for s in summaries]
        if all(p is not None for p in peaks):
            measured.peak_bytes = [float(p) for p in peaks]  # type: ignore[arg-type]
        for s in summaries:
            measured.recomputes.update(s.recomputes)
            if s.barrier_s is not None:
                measured.rank_iteration_s.append(sum(s.iter_s))
                measured.rank_barrier_s.append(sum(s.barrier_s))
                measured.rollbacks += s.rollbacks
        return measured

    def add(self, other: "Measurement") -> None:
        self.iteration_s.extend(other.iteration_s)
        if other.peak_bytes:
            self.peak_bytes = list(other.peak_bytes)
        if other.recomputes:
            self.recomputes = dict(other.recomputes)
        self.rollbacks += other.rollbacks
        for mine, theirs in ((self.rank_iteration_s, other.rank_iteration_s),
                             (self.rank_barrier_s, other.rank_barrier_s)):  # fmt: skip
            mine.extend([0.0] * (len(theirs) - len(mine)))
            for r, value in enumerate(theirs):
                mine[r] += value

    def recompute_range(self) -> Optional[Tuple[int, int]]:
        """The fewest and the most recomputations of a checkpointed stage's forward one
        microbatch got, over every stage; None when nothing was checkpointed."""
        if not self.recomputes:
            return None
        return (min(low for low, _ in self.recomputes.values()),
                max(high for _, high in self.recomputes.values()))  # fmt: skip

    def fuller_rank_peak(self) -> float:
        """The peak of the fuller rank: what a per-rank budget must hold; 0 when not measured."""
        return max(self.peak_bytes) if self.peak_bytes else 0.0

    def barrier_share(self, rank: int) -> float:
        """The share of `rank`'s iteration time it spent waiting for the step; 0 without."""
        if rank >= len(self.rank_barrier_s) or self.rank_iteration_s[rank] <= 0:
            return 0.0
        return self.rank_barrier_s[rank] / self.rank_iteration_s[rank]


class Jobs:
    """Runs jobs under `directory`: logs/<tag>.log (the command line, then its output) and
    summaries/<tag>/rank<R>.json."""

    def __init__(
        self,
        directory: Path,
        ranks: int,
        python: str,
        zb: str,
        env: Mapping[str, str],
        replicas: int = 1,
    ) -> None:
        self.directory, self.ranks, self.python, self.zb_binary = Path(directory), ranks, python, zb
        # A job runs `replicas` copies of the `ranks` pipeline ranks (`zb rehearse --dp`).
        self.processes = ranks * replicas
        self.env = dict(env)
        (self.directory / "logs").mkdir(parents=True, exist_ok=True)

    def log(self, tag: str) -> Path:
        return self.directory / "logs" / f"{tag}.log"

    def summaries(self, tag: str) -> Path:
        return self.directory / "summaries" / tag

    def run(self, tag: str, command: Sequence[str], env: Optional[Mapping[str, str]] = None) -> int:
        """Runs `command` with its output appended to the tag's log; returns its exit code."""
        log = self.log(tag)
        with open(log, "a") as out:
            out.write(f"$ {shlex.join(command)}\n")
            out.flush()
            merged = {**os.environ, **self.env, **(env or {})}
            try:
                done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=merged)
            except OSError as error:
                raise JobError(
                    f"{tag}: cannot run {command[0]}: {error.strerror}; see {log}"
                ) from None
        return done.returncode

    def check(self, tag: str, command: Sequence[str], env: Optional[Mapping[str, str]] = None):
        code = self.run(tag, command, env)
        if code != 0:
            raise JobError(f"{tag} exited with {code}; see {self.log(tag)}")

    def torchrun(
        self, tag: str, script: Path, args: Sequence[str], env: Optional[Mapping[str, str]] = None
    ) -> List[JobSummary]:
        """`script` on the ranks under torchrun; each rank's summary."""
        folder = self.summaries(tag)
        folder.mkdir(parents=True, exist_ok=True)
        command = [*self.torchrun_command(script), *args,
                   "--summary-out", str(folder / "rank{rank}.json")]  # fmt: skip
        self.check(tag, command, env)
        return [read_summary(folder / f"rank{r}.json") for r in range(self.processes)]

    def torchrun_command(self, script: Path, processes: int = 0) -> List[str]:
        """`script` under torchrun on `processes` (default: the job's every process)."""
        return [self.python, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(processes or self.processes), str(script)]  # fmt: skip

    def zb(self, tag: str, *args: str) -> str:
        """A zb subcommand; its stdout. A failure names zb's own one-line error."""
        command = [self.zb_binary, *args]
        log = self.log(tag)
        with open(log, "a") as out:
            out.write(f"$ {shlex.join(command)}\n")
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, env={**os.environ, **self.env}
            )
        except OSError as error:
            raise JobError(
                f"{tag}: cannot run {self.zb_binary}: {error.strerror} (set ZBKIT_ZB_BINARY)"
            ) from None
        with open(log, "a") as out:
            out.write(done.stdout + done.stderr)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            raise JobError(f"{tag}: {last} (see {log})")
        return done.stdout

    def zb_json(self, tag: str, *args: str) -> Dict[str, Any]:
        """A zb subcommand run with --json; its one JSON document."""
        out = self.zb(tag, *args, "--json")
        try:
            doc = json.loads(out)
        except ValueError:
            raise JobError(f"{tag}: zb printed no JSON document; see {self.log(tag)}") from None
        if not isinstance(doc, dict):
            raise JobError(f"{tag}: zb printed {type(doc).__name__}, not an object")
        return doc

# SPDX-License-Identifier: Apache-2.0
"""A pipeline schedule as zbkit hands it to Python trainers.

Plain immutable values: the runtime binding (`zbkit.libzbrt`, over libzbrt) builds them from a
stored schedule or a zb-schedule/1 file, the executor and the torch shim consume them. Vocabulary
(docs/schedules.md): p ranks, v chunks (stages) per rank, p*v stages in model order, m
microbatches; an op is (kind, stage, microbatch) with kind F (forward), B (gradient w.r.t. the
stage input), W (gradient w.r.t. the weights, after its B) or BW (B and W fused).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection, Optional, Tuple

from .errors import ScheduleError

OP_KINDS = ("F", "B", "W", "BW")
PLACEMENTS = ("loop", "v")


def placement_stages(
    placement: str, ranks: int, num_stages: int, rank: int
) -> Optional[Tuple[int, ...]]:
    """The global stages `placement` puts on `rank`, by local chunk: "loop" stage s on rank
    s % ranks (one stage per rank included), "v" (2 stages per rank) rank r holds r and
    2*ranks-1-r. None when the placement cannot lay out `num_stages` over `ranks` (docs/
    schedules.md). The one home of the placement rule in Python."""
    if placement == "loop":
        return tuple(range(rank, num_stages, ranks))
    if placement == "v":
        return (rank, 2 * ranks - 1 - rank) if num_stages == 2 * ranks else None
    raise ScheduleError(f"unknown placement {placement!r} (one of {', '.join(PLACEMENTS)})")


def placement_of_rank(held: Collection[int], rank: int, ranks: int, num_stages: int) -> str:
    """The name of the placement that puts exactly `held` on `rank` ("loop" first where both
    would), or "custom"."""
    for name in PLACEMENTS:
        expected = placement_stages(name, ranks, num_stages, rank)
        if expected is not None and set(held) == set(expected):
            return name
    return "custom"


_OP_TEXT = re.compile(r"(F|B|W|BW) stage (0|[1-9][0-9]*) mb (0|[1-9][0-9]*)")


@dataclass(frozen=True)
class Op:
    """One op of a rank's order. `str(op)` is how zbkit writes it for people, "B stage 3 mb 5"
    (the C++ side's FormatOp, schemas/include/zbkit/schemas/op_text.h); `Op.parse` reads exactly
    that back: the two are inverses."""

    kind: str  # one of OP_KINDS
    stage: int  # global stage id, 0 .. ranks * chunks - 1
    microbatch: int  # 0 .. microbatches - 1

    def __str__(self) -> str:
        return f"{self.kind} stage {self.stage} mb {self.microbatch}"

    @classmethod
    def parse(cls, text: str) -> "Op":
        """The op `text` names, exactly as `str` writes it; ScheduleError for anything else."""
        match = _OP_TEXT.fullmatch(text)
        if match is None:
            raise ScheduleError(f"{text!r} is not an op (expected e.g. 'B stage 3 mb 5')")
        return cls(match.group(1), int(match.group(2)), int(match.group(3)))


@dataclass(frozen=True)
class Schedule:
    ranks: int  # p
    microbatches: int  # m
    chunks: int  # v, stages per rank
    placement: str  # "loop": stage s on rank s % p; "v" (v = 2): rank r holds r and 2p-1-r
    stages: Tuple[Tuple[int, ...], ...]  # stages[r]: global stage ids on rank r, by local chunk
    ops: Tuple[Tuple[Op, ...], ...]  # ops[r]: rank r's ops in execution order
    family: str = ""  # the generator that produced it ("zb-h1", "zb-v", ...)
    schedule_id: Optional[int] = None  # id in the store it was loaded from, if any
    predicted_makespan_ms: Optional[float] = None

    @property
    def num_stages(self) -> int:
        return self.ranks * self.chunks

    def rank_of_stage(self, stage: int) -> int:
        for rank, held in enumerate(self.stages):
            if stage in held:
                return rank
        raise ScheduleError(f"stage {stage} is on no rank of this {self.ranks}-rank schedule")

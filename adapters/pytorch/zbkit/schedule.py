# SPDX-License-Identifier: Apache-2.0
"""A pipeline schedule as zbkit hands it to Python trainers.

Plain immutable values: the runtime binding (`zbkit.runtime`, over libzbrt) builds them from a
stored schedule or a zb-schedule/1 file, the executor and the torch shim consume them. Vocabulary
(docs/schedules.md): p ranks, v chunks (stages) per rank, p*v stages in model order, m
microbatches; an op is (kind, stage, microbatch) with kind F (forward), B (gradient w.r.t. the
stage input), W (gradient w.r.t. the weights, after its B) or BW (B and W fused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

OP_KINDS = ("F", "B", "W", "BW")
PLACEMENTS = ("loop", "v")


@dataclass(frozen=True)
class Op:
    kind: str  # one of OP_KINDS
    stage: int  # global stage id, 0 .. ranks * chunks - 1
    microbatch: int  # 0 .. microbatches - 1


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
        raise ValueError(f"stage {stage} is on no rank of this {self.ranks}-rank schedule")

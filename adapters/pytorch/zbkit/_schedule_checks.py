# SPDX-License-Identifier: Apache-2.0
"""Checks of a whole zbkit schedule before anything runs (every rank checks every rank's part, so
all ranks fail alike): shape, placement (zbkit.schedule.placement_stages), each op once and in a
runnable local order, and an order that cannot deadlock across ranks. Errors are one line.

The data-dependency rule lives here once: a forward of stage s > 0 waits for the forward of s-1
(same microbatch), an input gradient (B, or BW) of stage s < last for that of s+1; `stuck_points`
replays per-rank orders against it, for the executor and for the PyTorch CSV rules
(zbkit.torch_rules). Plain Python: torch is imported only to check the message tags.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .errors import ZbkitPipelineError
from .schedule import OP_KINDS, Op, Schedule, placement_stages

__all__ = ["dependency", "stuck_points", "validate_schedule"]

# (kind, stage, microbatch), kind in OP_KINDS; a BW counts as its B for what waits on it.
Key = Tuple[str, int, int]


def dependency(kind: str, stage: int, microbatch: int, num_stages: int) -> Optional[Key]:
    """What an op waits for on another stage: ("F", s-1, mb) for a forward, ("B", s+1, mb) for
    an input gradient (B or BW); None for the first stage's forwards, the last stage's input
    gradients and every W."""
    if kind == "F" and stage > 0:
        return ("F", stage - 1, microbatch)
    if kind in ("B", "BW") and stage < num_stages - 1:
        return ("B", stage + 1, microbatch)
    return None


def stuck_points(
    orders: Sequence[Sequence[Key]], num_stages: int
) -> List[Tuple[int, int, Key, Key]]:
    """Replays per-rank op orders against the data dependencies, each rank as far as it can, in
    turn. Empty when every op can run; otherwise, per unfinished rank, (rank, index, op, what it
    waits for) where it stopped: those orders deadlock."""
    done = set()
    position = [0] * len(orders)
    progressed = True
    while progressed:
        progressed = False
        for rank, ops in enumerate(orders):
            while position[rank] < len(ops):
                kind, stage, mb = ops[position[rank]]
                need = dependency(kind, stage, mb, num_stages)
                if need is not None and need not in done:
                    break
                done.add(("B" if kind == "BW" else kind, stage, mb))
                position[rank] += 1
                progressed = True
    stuck = []
    for rank, ops in enumerate(orders):
        if position[rank] < len(ops):
            op = ops[position[rank]]
            stuck.append((rank, position[rank], op, dependency(*op, num_stages)))
    return stuck  # type: ignore[return-value]


def _fail(msg: str) -> ZbkitPipelineError:
    return ZbkitPipelineError(msg)


def validate_schedule(schedule: Schedule, world_size: Optional[int] = None) -> None:
    """Checks the whole schedule; raises ZbkitPipelineError with one line."""
    p, v, m = schedule.ranks, schedule.chunks, schedule.microbatches
    where = f"zbkit schedule{'' if not schedule.family else ' ' + schedule.family}"
    if p < 1 or v < 1 or m < 1:
        raise _fail(f"{where}: ranks {p}, chunks {v}, microbatches {m} must all be >= 1")
    if world_size is not None and p != world_size:
        raise _fail(f"{where}: made for {p} ranks but the process group has {world_size}")
    if schedule.placement not in ("loop", "v"):
        raise _fail(f"{where}: unknown placement {schedule.placement!r}")
    if schedule.placement == "v" and v != 2:
        raise _fail(f"{where}: placement v needs 2 chunks per rank, has {v}")
    if len(schedule.stages) != p:
        raise _fail(f"{where}: stages lists {len(schedule.stages)} ranks, expected {p}")
    if len(schedule.ops) != p:
        raise _fail(f"{where}: ops lists {len(schedule.ops)} ranks, expected {p}")
    n = p * v
    from ._p2p import data_tags_fit  # noqa: PLC0415 - the tag space's home imports torch

    if not data_tags_fit(n, m):
        raise _fail(f"{where}: {n} stages x {m} microbatches overflow the message tags")
    owner = _check_stages(schedule, where, n)
    for r, ops in enumerate(schedule.ops):
        _check_rank_ops(schedule, where, r, ops, owner)
    stuck = stuck_points(
        [[(o.kind, o.stage, o.microbatch) for o in ops] for ops in schedule.ops], n
    )
    if stuck:
        r, i, (kind, stage, mb), (need_kind, need_stage, need_mb) = stuck[0]
        raise _fail(
            f"{where}: rank {r} op {i} ({Op(kind, stage, mb)}) waits for "
            f"{Op(need_kind, need_stage, need_mb)}, which cannot run before it (the ranks would "
            f"deadlock)"
        )


def _check_stages(schedule: Schedule, where: str, n: int) -> Dict[int, int]:
    """Each rank holds its placement's stages, each stage on one rank; returns stage -> rank."""
    p, v = schedule.ranks, schedule.chunks
    owner: Dict[int, int] = {}
    for r, held in enumerate(schedule.stages):
        if len(held) != v:
            raise _fail(f"{where}: rank {r} holds {len(held)} stages, expected {v}")
        for s in held:
            if not 0 <= s < n:
                raise _fail(f"{where}: rank {r} holds stage {s}, outside 0..{n - 1}")
            if s in owner:
                raise _fail(f"{where}: stage {s} is on rank {owner[s]} and on rank {r}")
            owner[s] = r
        expected = placement_stages(schedule.placement, p, n, r)
        if tuple(held) != expected:
            raise _fail(
                f"{where}: rank {r} holds stages {list(held)}, placement {schedule.placement} "
                f"puts {list(expected or ())} there"
            )
    return owner


def _check_rank_ops(
    schedule: Schedule, where: str, r: int, ops: Sequence[Op], owner: Dict[int, int]
) -> None:
    """Rank r's ops: known kinds on its stages, each once, F before B before W (or a BW), and
    every stage's every microbatch complete."""
    m = schedule.microbatches
    seen: Dict[Key, int] = {}
    for i, op in enumerate(ops):
        at = f"{where}: rank {r} op {i} ({op})"
        if op.kind not in OP_KINDS:
            raise _fail(f"{at}: unknown kind {op.kind!r}")
        if owner.get(op.stage) != r:
            raise _fail(f"{at}: stage {op.stage} is not on rank {r}")
        if not 0 <= op.microbatch < m:
            raise _fail(f"{at}: microbatch outside 0..{m - 1}")
        key = (op.kind, op.stage, op.microbatch)
        if key in seen:
            raise _fail(f"{at}: duplicate, first at op {seen[key]}")
        seen[key] = i
        if op.kind != "F" and ("F", op.stage, op.microbatch) not in seen:
            raise _fail(f"{at}: runs before its F")
        if op.kind == "W" and ("B", op.stage, op.microbatch) not in seen:
            raise _fail(f"{at}: runs before its B")
        if op.kind in ("B", "W") and ("BW", op.stage, op.microbatch) in seen:
            raise _fail(f"{at}: the pair already ran fused as BW")
        if op.kind == "BW" and ("B", op.stage, op.microbatch) in seen:
            raise _fail(f"{at}: its B already ran")
    for s in schedule.stages[r]:
        for mb in range(m):
            missing = []
            if ("F", s, mb) not in seen:
                missing.append("F")
            if ("BW", s, mb) not in seen:
                missing.extend(k for k in ("B", "W") if (k, s, mb) not in seen)
            if missing:
                raise _fail(
                    f"{where}: rank {r} has no {'/'.join(missing)} for stage {s} microbatch {mb}"
                )

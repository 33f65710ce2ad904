# SPDX-License-Identifier: Apache-2.0
"""What PyTorch's `_PipelineScheduleRuntime` needs of a schedule beyond its data dependencies,
checked on the CSV before anything runs (docs/formats.md §4.1, which cites the torch source).

Two rules; a schedule that breaks either is refused with one line naming the rule, the rank, the
stage and the microbatch:

- **last stage's forwards in microbatch order**: the runtime appends each loss in the order the
  last stage's forwards run (`_maybe_compute_loss`) and looks a backward's loss up by microbatch
  index (`_maybe_get_loss`), so running F7 before F6 there starts microbatch 6's backward from
  microbatch 7's loss: a silently wrong gradient, not an error.
- **an order its lowering can schedule**: `_add_send_recv` places each rank's next action once its
  input has been computed (a forward after the previous stage's forward of that microbatch, an
  input or full backward after the next stage's); an order where no rank can go on is refused by
  torch with "Malformed compute schedule, can't schedule sends/recvs", which names nothing.

zbkit's C++ side holds the same rules (`zbkit/tuner/torch_export.h`): `zb tune` keeps them when
the target is torch, `zb export --format torch-csv*` refuses orders that break them. This module
checks files that did not come through `zb export` (a CSV written by hand or by another tool).
Pure functions over (stage, kind, microbatch) rows; torch's action kinds: F, I (input gradient),
W (weight gradient), B (full backward), plus the communication kinds, which are ignored here.
"""

from __future__ import annotations

from typing import Optional, Sequence, Set, Tuple

# One action of a rank: (global stage, torch kind, microbatch or None).
Action = Tuple[int, str, Optional[int]]

LOSS_ORDER_RULE = "last stage's forwards in microbatch order"
LOWERING_RULE = "an order its lowering can schedule"
_RULES_DOC = "docs/formats.md §4.1"


def _rule(name: str) -> str:
    return f'PyTorch runtime rule "{name}" ({_RULES_DOC})'


def check_loss_order(rows: Sequence[Sequence[Action]], num_stages: int) -> Optional[str]:
    """None when every rank runs the last stage's forwards in microbatch order (0, 1, 2, ...);
    otherwise the one-line reason."""
    last = num_stages - 1
    for rank, row in enumerate(rows):
        expected = 0
        for index, (stage, kind, microbatch) in enumerate(row):
            if kind != "F" or stage != last:
                continue
            if microbatch != expected:
                return (
                    f"{_rule(LOSS_ORDER_RULE)}: rank {rank}, stage {last} runs F{microbatch} "
                    f"(action {index}) before F{expected}; PyTorch would start microbatch "
                    f"{expected}'s backward from microbatch {microbatch}'s loss"
                )
            expected += 1
    return None


def _waits_for(action: Action, num_stages: int) -> Optional[Tuple[int, Set[str], int]]:
    """What torch's lowering makes `action` wait for: (stage, kinds, microbatch), or None."""
    stage, kind, microbatch = action
    if kind == "F" and stage > 0:
        return stage - 1, {"F"}, microbatch
    if kind in ("I", "B") and stage < num_stages - 1:
        return stage + 1, {"I", "B"}, microbatch
    return None


def check_lowering(rows: Sequence[Sequence[Action]], num_stages: int) -> Optional[str]:
    """None when torch's lowering (`_add_send_recv`) can place every compute action: each rank in
    turn runs its next action once what it waits for has run on any rank (a local input and a
    received one count the same). Otherwise the one-line reason, naming where each unfinished
    rank is stuck."""
    compute = [[a for a in row if a[1] in ("F", "I", "W", "B")] for row in rows]
    done: Set[Tuple[int, str, int]] = set()
    position = [0] * len(compute)
    remaining = sum(len(row) for row in compute)
    while remaining:
        progress = False
        for rank, row in enumerate(compute):
            if position[rank] == len(row):
                continue
            action = row[position[rank]]
            needed = _waits_for(action, num_stages)
            if needed is not None and not any(
                (needed[0], kind, needed[2]) in done for kind in needed[1]
            ):
                continue
            done.add(action)  # type: ignore[arg-type]
            position[rank] += 1
            remaining -= 1
            progress = True
        if not progress:
            stuck = []
            for rank, row in enumerate(compute):
                if position[rank] == len(row):
                    continue
                stage, kind, microbatch = row[position[rank]]
                waited = _waits_for(row[position[rank]], num_stages)
                assert waited is not None  # only a waiting action can be stuck
                waited_kind = "F" if kind == "F" else "I"
                stuck.append(
                    f"rank {rank} at {stage}{kind}{microbatch} (stage {stage}, microbatch "
                    f"{microbatch}) waits for {waited[0]}{waited_kind}{microbatch}"
                )
            return f"{_rule(LOWERING_RULE)}: no rank can go on: " + "; ".join(stuck)
    return None


def check(rows: Sequence[Sequence[Action]], num_stages: int) -> Optional[str]:
    """Both rules: None, or the first one-line reason."""
    return check_loss_order(rows, num_stages) or check_lowering(rows, num_stages)

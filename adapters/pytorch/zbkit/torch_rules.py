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

from typing import Optional, Sequence, Tuple

from ._schedule_checks import stuck_points
from .actions import COMPUTE, FROM_TORCH, torch_label

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


def check_lowering(rows: Sequence[Sequence[Action]], num_stages: int) -> Optional[str]:
    """None when torch's lowering (`_add_send_recv`) can place every compute action: each rank in
    turn runs its next action once what it waits for has run on any rank (a local input and a
    received one count the same), which is zbkit's data-dependency rule
    (zbkit._schedule_checks.stuck_points). Otherwise the one-line reason, naming where each unfinished
    rank is stuck."""
    orders = [[(FROM_TORCH[k], s, mb) for s, k, mb in row if FROM_TORCH.get(k) in COMPUTE]
              for row in rows]  # fmt: skip
    stuck = [
        f"rank {rank} at {torch_label(kind, stage, mb)} (stage {stage}, microbatch {mb}) waits "
        f"for {torch_label(need[0], need[1], need[2])}"
        for rank, _, (kind, stage, mb), need in stuck_points(orders, num_stages)
    ]
    return f"{_rule(LOWERING_RULE)}: no rank can go on: " + "; ".join(stuck) if stuck else None


def check(rows: Sequence[Sequence[Action]], num_stages: int) -> Optional[str]:
    """Both rules: None, or the first one-line reason."""
    return check_loss_order(rows, num_stages) or check_lowering(rows, num_stages)

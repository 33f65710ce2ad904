# SPDX-License-Identifier: Apache-2.0
"""The one vocabulary of what a pipeline rank runs, after torch's `_ComputationType` and `_Action`:
compute (zbkit's F, B, W, BW) and what torch's runtime runs besides (the transfers, FSDP's unshard
and reshard, the gradient reduction, an overlapped F and B). Every kind has zbkit's name (a
schedule's op kinds; the C++ side's `zb::OpKindName` for the compute ones), torch's token (the
`_ComputationType` value: its CSV letters and the `<stage><token><mb>` of its `PP:` profiler
labels; `I` is zbkit's B, `B` zbkit's BW) and its code in the progress record (zb-progress,
docs/formats.md §7; `zb doctor` reads it: doctor/include/zbkit/doctor/progress.h).

Plain Python (no torch), so that schedules, the progress record and the shim share it.
scripts/check_structure.py fails when another module of the packages spells the table again.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple


class Kind(NamedTuple):
    name: str  # zbkit's
    torch: str  # torch's _ComputationType value; "" where torch has none
    code: int  # in the progress record


KINDS: Tuple[Kind, ...] = (
    Kind("F", "F", 0),
    Kind("B", "I", 1),  # the input gradient
    Kind("W", "W", 2),  # the weight gradient
    Kind("BW", "B", 3),  # both: torch's full backward
    Kind("SEND_F", "SEND_F", 4),
    Kind("RECV_F", "RECV_F", 5),
    Kind("SEND_B", "SEND_B", 6),
    Kind("RECV_B", "RECV_B", 7),
    Kind("OTHER", "", 8),  # an action of a torch newer than this table
    Kind("UNSHARD", "UNSHARD", 9),
    Kind("RESHARD", "RESHARD", 10),
    Kind("REDUCE_GRAD", "REDUCE_GRAD", 11),
    Kind("OVERLAP_F_B", "OVERLAP_F_B", 12),
)
#: zbkit's compute kinds: the ops of a schedule
COMPUTE = ("F", "B", "W", "BW")
#: torch's token -> zbkit's kind, and back
FROM_TORCH: Dict[str, str] = {k.torch: k.name for k in KINDS if k.torch}
TO_TORCH: Dict[str, str] = {k.name: k.torch for k in KINDS if k.torch}
#: zbkit's kind -> its code in the progress record
CODES: Dict[str, int] = {k.name: k.code for k in KINDS}


def torch_label(kind: str, stage: int, microbatch: Optional[int]) -> str:
    """torch's action text for zbkit's `kind` ("3I7" for B of stage 3 microbatch 7), which torch's
    `_Action.from_str` reads back and its runtime records as the profiler range `PP:3I7`."""
    return f"{stage}{TO_TORCH[kind]}{'' if microbatch is None else microbatch}"


def from_torch(action) -> Tuple[str, int, int]:
    """(zbkit's kind, stage, microbatch or -1) of one of torch's `_Action`s; "OTHER" for a kind
    this table does not know."""
    token = getattr(action.computation_type, "value", "")
    microbatch = action.microbatch_index
    return (
        FROM_TORCH.get(token, "OTHER"),
        action.stage_index,
        -1 if microbatch is None else microbatch,
    )

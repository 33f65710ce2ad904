# SPDX-License-Identifier: Apache-2.0
"""The op orders of torch's built-in pipeline schedule classes, as the installed torch computes
them, for `zb tune --torch-orders DIR`: torch's schedules as rows beside zbkit's candidates, under
the same costs and cap (docs/schedules.md §7).

    python -m zbkit_harness.torch_orders --ranks P --microbatches M [--stages-per-rank V] --out DIR

writes DIR/<Class>.csv (compute only, docs/formats.md §4) for each class the installed torch builds
for P ranks and M microbatches, and DIR/index.json:
{"format": "zb-torch-orders/1", "torch": VERSION, "ranks": P, "microbatches": M,
 "schedules": [{"name": "ScheduleZBVZeroBubble", "csv": "ScheduleZBVZeroBubble.csv",
                "splits_backward": true},
               {"name": ..., "error": "why torch refused it"}, ...]}.
`splits_backward`: whether the class's order has weight passes apart from their input pass (a
checkpointed rehearsal charges those with torch's recomputations, docs/rehearse.md §6).

The runtime-based classes (Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV) are
asked for their `pipeline_order`, computed in their constructor from the stages' layout alone,
which is what `_PipelineScheduleRuntime` runs (DualPipeV's OVERLAP_F_B pairs run their parts in
order). Schedule1F1B runs its own loop (`Schedule1F1B._step_microbatches`: min(m, stages - stage)
forwards, then one full backward and one forward in turn, then the remaining backwards); its order
is written from that rule. No process group is needed: the stages are stand-ins carrying only
their layout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List, Optional, Sequence, Tuple

from zbkit.actions import COMPUTE, FROM_TORCH, TO_TORCH, torch_label
from zbkit.schedule import placement_stages

# class name, placement, stages per rank (None: --stages-per-rank)
CLASSES: Tuple[Tuple[str, str, Optional[int]], ...] = (
    ("Schedule1F1B", "loop", 1),
    ("ScheduleInterleaved1F1B", "loop", None),
    ("ScheduleInterleavedZeroBubble", "loop", None),
    ("ScheduleZBVZeroBubble", "v", 2),
    ("ScheduleDualPipeV", "v", 2),
)


def one_f_one_b(ranks: int, microbatches: int) -> List[List[str]]:
    """Schedule1F1B's order per rank (one stage per rank), as its _step_microbatches runs it."""
    rows = []
    for stage in range(ranks):
        warmup = min(microbatches, ranks - stage)
        row = [f"{stage}F{mb}" for mb in range(warmup)]
        forward, backward = warmup, 0
        while backward < microbatches:
            row.append(f"{stage}B{backward}")
            backward += 1
            if forward < microbatches:
                row.append(f"{stage}F{forward}")
                forward += 1
        rows.append(row)
    return rows


def _actions(action) -> List[str]:
    """The compute cells of one pipeline_order entry (an OVERLAP_F_B pair gives its parts)."""
    if action is None:
        return []
    parts = action.sub_actions if getattr(action, "sub_actions", None) else (action,)
    cells = []
    for part in parts:
        kind = FROM_TORCH.get(part.computation_type.value)
        if kind in COMPUTE:
            cells.append(torch_label(kind, part.stage_index, part.microbatch_index))
    return cells


def runtime_order(name: str, placement: str, ranks: int, per_rank: int, microbatches: int):
    """A runtime-based class's pipeline_order, as cells per rank."""
    from torch.distributed.pipelining import schedules  # noqa: PLC0415

    num_stages = ranks * per_rank
    held = placement_stages(placement, ranks, num_stages, 0)
    stages = [
        SimpleNamespace(group_rank=0, group_size=ranks, stage_index=s, num_stages=num_stages,
                        is_first=s == 0, is_last=s == num_stages - 1, has_backward=True,
                        submod=None)
        for s in held
    ]  # fmt: skip
    schedule = getattr(schedules, name)(stages, microbatches, loss_fn=lambda out, target: out)
    order = schedule.pipeline_order
    return [[cell for action in order[r] for cell in _actions(action)] for r in range(ranks)]


def write_orders(ranks: int, microbatches: int, per_rank: int, out: Path) -> Dict:
    import torch  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    index = {"format": "zb-torch-orders/1", "torch": torch.__version__, "ranks": ranks,
             "microbatches": microbatches, "schedules": []}  # fmt: skip
    for name, placement, fixed in CLASSES:
        entry: Dict[str, object] = {"name": name}
        try:
            if name == "Schedule1F1B":
                rows = one_f_one_b(ranks, microbatches)
            else:
                rows = runtime_order(name, placement, ranks, fixed or per_rank, microbatches)
        except Exception as error:  # torch refuses some layouts (m % p, m >= 2p): keep its words
            entry["error"] = (str(error).strip().splitlines() or [type(error).__name__])[0]
        else:
            (out / f"{name}.csv").write_text("\n".join(",".join(row) for row in rows) + "\n")
            entry["csv"] = f"{name}.csv"
            weight = TO_TORCH["W"]
            entry["splits_backward"] = any(
                cell.lstrip("0123456789").startswith(weight) for row in rows for cell in row
            )
        index["schedules"].append(entry)
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return index


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zbkit_harness.torch_orders", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--microbatches", type=int, required=True)
    parser.add_argument(
        "--stages-per-rank", type=int, default=2, help="for the interleaved classes"
    )
    parser.add_argument("--out", required=True, help="the directory for the CSVs and index.json")
    args = parser.parse_args(argv)
    if args.ranks < 1 or args.microbatches < 1 or args.stages_per_rank < 1:
        parser.exit(
            2,
            "zbkit_harness.torch_orders: --ranks, --microbatches and --stages-per-rank must be >= 1\n",
        )
    index = write_orders(args.ranks, args.microbatches, args.stages_per_rank, Path(args.out))
    for entry in index["schedules"]:
        print(f"{entry['name']}: {entry.get('csv') or 'refused: ' + entry['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

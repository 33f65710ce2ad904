# SPDX-License-Identifier: Apache-2.0
"""A rank's pipeline stages from a layer split (`zb partition --split-out`, zb-split/1,
docs/formats.md §6), for a plain torch script.

    split = read_split("split.json")
    check_schedule_class(split, ScheduleZBVZeroBubble)
    for stage_index, module in stage_modules(model, split, rank):
        stages.append(PipelineStage(module, stage_index, split.num_stages, device))

Each stage is the `nn.Sequential` of its blocks, in model order: right for a model whose forward
is its blocks applied one after the other (the stage module's children, a stack of layers); a
model whose forward does more between its blocks (torchtitan's) builds its own stages from the
names, as torchtitan does with `module_fqns_per_model_part`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from ._json_file import read_json
from .errors import SplitError

SPLIT_FORMAT = "zb-split/1"
# torch's schedule classes that place two stages per rank in a V (docs/formats.md §1).
V_SCHEDULE_CLASSES = ("ScheduleZBVZeroBubble", "ScheduleDualPipeV")


@dataclass(frozen=True)
class LayerSplit:
    """`stages[s]`: the fully qualified names of stage s's blocks; `layout` "loop:V" or "v"."""

    ranks: int
    layout: str
    schedule: str
    stages: tuple[tuple[str, ...], ...]
    source: str = "<split>"
    # The memory plan (docs/memory-plan.md §5): (block, mode) for the blocks it names.
    checkpointing: tuple[tuple[str, str], ...] = ()

    def planned_modes(self, stage: int) -> dict:
        """The plan's mode of each block of `stage` ({} without a plan)."""
        plan = dict(self.checkpointing)
        return {name: plan[name] for name in self.stages[stage] if name in plan}

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def stages_per_rank(self) -> int:
        return self.num_stages // self.ranks

    def stages_of_rank(self, rank: int) -> list[int]:
        """The global stage ids `rank` holds, its first chunk first."""
        if not 0 <= rank < self.ranks:
            raise SplitError(f"{self.source}: rank {rank} is not one of its {self.ranks} ranks")
        if self.layout == "v":
            return [rank, 2 * self.ranks - 1 - rank]
        return [rank + chunk * self.ranks for chunk in range(self.stages_per_rank)]


def _parse_layout(source: str, layout: object) -> int:
    """Stages per rank of a layout name, or SplitError."""
    if layout == "v":
        return 2
    if isinstance(layout, str) and layout.startswith("loop:") and layout[5:].isdigit():
        chunks = int(layout[5:])
        if chunks >= 1:
            return chunks
    raise SplitError(f'{source}: layout: must be "loop:V" or "v", got {layout!r}')


def parse_split(document: object, source: str = "<split>") -> LayerSplit:
    """Validates a zb-split/1 document (its fields, every block named once)."""
    if not isinstance(document, dict):
        raise SplitError(f"{source}: must be a JSON object")
    if document.get("format") != SPLIT_FORMAT:
        raise SplitError(
            f'{source}: format: expected "{SPLIT_FORMAT}", got {document.get("format")!r}'
        )
    ranks = document.get("ranks")
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise SplitError(f"{source}: ranks: must be an integer >= 1, got {ranks!r}")
    chunks = _parse_layout(source, document.get("layout"))
    schedule = document.get("schedule", "")
    if not isinstance(schedule, str):
        raise SplitError(f"{source}: schedule: must be a string")
    stages = document.get("stages")
    if not isinstance(stages, list) or len(stages) != ranks * chunks:
        raise SplitError(
            f"{source}: stages: must list {ranks * chunks} stages ({ranks} ranks x {chunks}), "
            f"got {len(stages) if isinstance(stages, list) else stages!r}"
        )
    seen: set[str] = set()
    for index, stage in enumerate(stages):
        if not isinstance(stage, list) or not stage:
            raise SplitError(f"{source}: stages[{index}]: must be a non-empty list of names")
        for name in stage:
            if not isinstance(name, str) or not name:
                raise SplitError(f"{source}: stages[{index}]: {name!r} is not a module name")
            if name in seen:
                raise SplitError(f"{source}: stages[{index}]: {name!r} is in two stages")
            seen.add(name)
    plan = document.get("checkpointing", {})
    if not isinstance(plan, dict):
        raise SplitError(f"{source}: checkpointing: must be an object of block: mode")
    for name, mode in plan.items():
        if name not in seen:
            raise SplitError(f"{source}: checkpointing: {name!r} is in no stage")
        if mode not in ("none", "full", "op"):
            raise SplitError(
                f'{source}: checkpointing: {name!r}: must be "none", "full" or "op", got {mode!r}'
            )
    return LayerSplit(
        ranks, document["layout"], schedule, tuple(tuple(stage) for stage in stages), source,
        tuple(plan.items()),
    )  # fmt: skip


def read_split(path: str | Path) -> LayerSplit:
    return parse_split(read_json(path, SplitError), str(path))


def check_schedule_class(split: LayerSplit, schedule_class: type | str) -> None:
    """Refuses a split the script's schedule cannot run: a V split under a loop schedule or the
    reverse (the stages would land on the wrong ranks)."""
    name = schedule_class if isinstance(schedule_class, str) else schedule_class.__name__
    is_v = name in V_SCHEDULE_CLASSES
    if is_v != (split.layout == "v"):
        wanted = split.schedule or ("a V schedule" if split.layout == "v" else "a loop schedule")
        raise SplitError(
            f"{split.source}: layout {split.layout} cannot run under {name}: the split was chosen "
            f"for {wanted}"
        )


def stage_modules(model, split: LayerSplit, rank: int) -> list[tuple[int, object]]:
    """(global stage id, nn.Sequential of its blocks) for each stage `rank` holds; the blocks are
    the model's own modules (not copies). A Sequential's keys cannot hold dots, so each keeps the
    model's names in `_zbkit_block_fqns` (key -> name): what `zb profile --torch` calls its blocks.
    With a memory plan, each block comes checkpointed as the plan says (zbkit.checkpointing_plan:
    wrapped in torch's checkpoint_wrapper, or unwrapped); the model itself is not changed."""
    from torch import nn

    from .checkpointing_plan import planned_block

    modules = []
    for stage in split.stages_of_rank(rank):
        planned = split.planned_modes(stage)
        blocks = OrderedDict()
        for name in split.stages[stage]:
            try:
                block = model.get_submodule(name)
            except AttributeError:
                raise SplitError(
                    f"{split.source}: stages[{stage}]: the model has no module {name!r}"
                ) from None
            mode = planned.get(name)
            if mode is not None:
                block = planned_block(block, mode, f"{split.source}: stages[{stage}] {name!r}")
            blocks[name.replace(".", "_")] = block
        sequential = nn.Sequential(blocks)
        sequential._zbkit_block_fqns = {key: name for key, name in
                                        zip(blocks, split.stages[stage])}  # fmt: skip
        modules.append((stage, sequential))
    return modules

# SPDX-License-Identifier: Apache-2.0
"""What a stage module's blocks are, for everything that reasons per block: the per-block costs
(zbkit.pipelining.measure.blocks) and activation checkpointing's detection (zbkit.checkpointing).
Plain Python (no torch import), so that both can use it without importing each other."""

from __future__ import annotations

from typing import Dict, List

__all__ = ["stage_block_slots", "stage_blocks"]

_CONTAINERS = ("ModuleList", "ModuleDict", "Sequential")


def stage_block_slots(stage_module) -> List[tuple]:
    """(name, parent, key, module) of each block stage_blocks() names: where it sits, so that it
    can be replaced (a memory plan wrapping it in a checkpoint, docs/memory-plan.md §5)."""
    fqns: Dict[str, str] = getattr(stage_module, "_zbkit_block_fqns", {})
    slots = []
    for name, child in stage_module.named_children():
        if child is None:
            continue
        if type(child).__name__ in _CONTAINERS and type(stage_module).__name__ not in _CONTAINERS:
            slots.extend((f"{name}.{key}", child, key, grandchild) for key, grandchild in
                         child.named_children() if grandchild is not None)  # fmt: skip
        else:
            slots.append((fqns.get(name, name), stage_module, name, child))
    return slots


def stage_blocks(stage_module) -> List[tuple]:
    """(name, module) of a stage module's top-level blocks: its children, a container child
    (ModuleList, ModuleDict, Sequential) opened one level (torchtitan's `layers.3`). A stage that
    zbkit.split built names its blocks as the model does (its `_zbkit_block_fqns`)."""
    return [(name, module) for name, _, _, module in stage_block_slots(stage_module)]

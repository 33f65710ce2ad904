# SPDX-License-Identifier: Apache-2.0
"""Applying a memory plan (docs/memory-plan.md §5): each block checkpointed as `zb partition
--checkpointing` chose, the plan read from its zb-split/1 file (`"checkpointing": {"layers.0":
"full", ...}`).

- `full`: a block that runs without checkpointing is wrapped whole in torch's non-reentrant
  `checkpoint_wrapper` (what torchtitan's full AC and most trainers use); a block wrapped so
  already stays as it is.
- `none`: a block wrapped whole in a `CheckpointWrapper` is replaced by the module it wraps.
- `op`: only where the block runs per-op selective checkpointing already: the policy is the
  job's, zbkit does not invent one.

Anything else is refused with one line naming the block (a wrapper inside the block zbkit
cannot take off, an FSDP2-sharded block whose hooks would then run inside the checkpoint): the
plan is applied before step 1 or not at all. Parameters are the model's own, so the optimizer,
the gradients and the state dict (CheckpointWrapper strips its prefix) are unchanged.

`zbkit.split.stage_modules` applies it to the stages it builds (a plain torch script); the shim
applies it to the stages of the job `zb replay --checkpointing-plan FILE` runs (torchtitan and
any script, unedited)."""

from __future__ import annotations

from typing import Dict, Mapping

from ._data_parallel import fsdp_modules
from ._stage_blocks import stage_block_slots
from .errors import SplitError

__all__ = ["apply_to_stage", "planned_block"]


def planned_block(block, mode: str, where: str):
    """`block` as the plan's `mode` runs it: itself, wrapped, or unwrapped; SplitError naming
    `where` (the block) when that cannot be done."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: PLC0415
        CheckpointImpl,
        CheckpointWrapper,
        checkpoint_wrapper,
    )

    from . import checkpointing  # noqa: PLC0415

    current = checkpointing.block_mode(block)
    if mode == current:
        return block
    outer = isinstance(block, CheckpointWrapper)
    inner = [m for m in block.modules() if isinstance(m, CheckpointWrapper) and m is not block]
    if fsdp_modules(block):
        raise SplitError(
            f"{where}: the plan checkpoints it '{mode}' but the job runs it '{current}' and it is "
            f"sharded by FSDP (fully_shard); checkpointing must be applied before sharding"
        )
    if mode == "full" and current == "none":
        return checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
    if mode == "none" and outer and not inner:
        return block._checkpoint_wrapped_module
    if mode == "full" and current == "op" and outer and not inner:
        return checkpoint_wrapper(
            block._checkpoint_wrapped_module, checkpoint_impl=CheckpointImpl.NO_REENTRANT
        )
    if mode == "op":
        why = "zbkit applies a per-op policy only where the job has one"
    else:
        why = "its checkpoint is not a wrapper around the whole block"
    raise SplitError(
        f"{where}: the plan checkpoints it '{mode}', the job runs it '{current}': {why}"
    )


def apply_to_stage(stage_module, planned: Mapping[str, str], where: str) -> Dict[str, str]:
    """Applies `planned` (block name -> mode) to the blocks of one stage module in place; the
    blocks must be exactly the plan's (SplitError naming the first that differs). Returns the
    blocks whose mode changed, name -> mode."""
    slots = stage_block_slots(stage_module)
    names = [name for name, _, _, _ in slots]
    missing = [name for name in planned if name not in names]
    extra = [name for name in names if name not in planned]
    if missing or extra:
        detail = (
            f"the plan names block {missing[0]!r}, which this stage does not have"
            if missing
            else f"this stage's block {extra[0]!r} is not in the plan"
        )
        raise SplitError(f"{where}: {detail} (the plan was made for another split)")
    changed = {}
    for name, parent, key, block in slots:
        replacement = planned_block(block, planned[name], f"{where} block {name!r}")
        if replacement is not block:
            parent._modules[key] = replacement
            changed[name] = planned[name]
    return changed

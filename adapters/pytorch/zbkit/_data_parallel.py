# SPDX-License-Identifier: Apache-2.0
"""What data parallelism needs of a pipeline order: the guard against a silent divergence under
DDP, and the bytes FSDP gathers that a profile records (docs/data-parallel.md).

`DistributedDataParallel` all-reduces a module's gradients from hooks on each parameter's
gradient accumulator, which run only when a backward *accumulates* into ``.grad``. A split
backward computes the weight gradients with ``torch.autograd.grad`` and adds them to ``.grad``
itself (torch's `stage_backward_weight`, zbkit's `BackwardSplit`), so the hooks never run: every
replica keeps its own local gradient and the replicas drift apart with no error (pytorch #144530).
torch's runtime handles a DDP stage only on a fused backward (`backward_maybe_with_nosync`); FSDP2
(`fully_shard`) reduces in `perform_reduce_grad` and is unaffected. A DDP stage under an order
with split backwards is refused before the first step, with one line naming the module and what
to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional, Tuple

if TYPE_CHECKING:  # torch is imported on use: the shim loads this module before the job's torch
    from torch import nn

# What a user can do instead; said in every refusal.
REMEDY = (
    "run a fused order (zb tune --family 1f1b, or the job's own schedule) or shard the stage with "
    "FSDP2 (fully_shard) instead of DDP"
)


def unsharded_bytes(modules: Iterable["nn.Module"]) -> int:
    """The bytes FSDP's all-gather adds on this process while `modules` are unsharded
    (docs/data-parallel.md §5): each sharded parameter's (a DTensor's) full size less the rank's
    own shard; 0 where nothing is sharded."""
    from torch.distributed.tensor import DTensor  # noqa: PLC0415

    total = 0
    seen = set()
    for module in modules:
        for parameter in module.parameters():
            if not isinstance(parameter, DTensor) or id(parameter) in seen:
                continue
            seen.add(id(parameter))
            shard = parameter.to_local()
            total += (parameter.numel() - shard.numel()) * parameter.element_size()
    return total


def reduced_bytes(modules: Iterable["nn.Module"]) -> int:
    """The bytes of gradients the data-parallel reductions of `modules` take in per step
    (docs/data-parallel.md §5): every parameter with a gradient of an FSDP-sharded stage (a
    DTensor: its full size, the reduce-scatter's input) or of a DDP module (the all-reduce's), in
    the parameter's own dtype; 0 where nothing is reduced."""
    from torch.distributed.tensor import DTensor  # noqa: PLC0415

    total = 0
    seen = set()
    for module in modules:
        replicated = ddp_module(module) is not None
        for parameter in module.parameters():
            if not parameter.requires_grad or id(parameter) in seen:
                continue
            if replicated or isinstance(parameter, DTensor):
                seen.add(id(parameter))
                total += parameter.numel() * parameter.element_size()
    return total


def ddp_module(module: "nn.Module") -> Optional[str]:
    """The qualified name of the first DistributedDataParallel module in `module` ("" for the
    module itself), or None when there is none."""
    from torch.nn.parallel import DistributedDataParallel  # noqa: PLC0415

    for name, inner in module.named_modules():
        if isinstance(inner, DistributedDataParallel):
            return name
    return None


# What skips DDP's hooks, and what to do instead: the shim's (and the profiling window's) split,
# and zbkit's executor, whose every backward (fused BW too) goes through torch.autograd.grad.
SPLIT_BACKWARD = ("a split backward (B apart from W)", REMEDY)
EXECUTOR_BACKWARD = (
    "zbkit's executor (every backward through torch.autograd.grad)",
    "replay the script through torch's runtime (zb replay) with a fused order, or shard the stage "
    "with FSDP2 (fully_shard) instead of DDP",
)


def split_under_ddp(
    stages: Iterable[Tuple[int, "nn.Module"]],
    where: str,
    skipped_by: Tuple[str, str] = SPLIT_BACKWARD,
) -> Optional[str]:
    """None when no stage holds a DDP module; otherwise the one-line refusal for the first one.
    `stages` are (global stage id, module); `where` says who refuses ("zbkit: rank 1", "zbkit
    executor rank 0"); `skipped_by` what would skip DDP's all-reduce and what to do instead."""
    what, remedy = skipped_by
    for stage, module in stages:
        name = ddp_module(module)
        if name is None:
            continue
        held = f"({type(module).__name__}) holds one at '{name}'" if name else "is one"
        return (
            f"{where}: stage {stage} runs under DistributedDataParallel (its module {held}), "
            f"whose gradient all-reduce {what} skips, so the replicas would silently diverge "
            f"(pytorch #144530); {remedy}"
        )
    return None

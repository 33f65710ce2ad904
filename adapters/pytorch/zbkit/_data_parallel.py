# SPDX-License-Identifier: Apache-2.0
"""What data parallelism needs of a pipeline order: the guard against a silent divergence under
DDP, and the bytes FSDP gathers and the reductions take in, which a profile records
(docs/data-parallel.md).

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

from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, Tuple

if TYPE_CHECKING:  # torch is imported on use: the shim loads this module before the job's torch
    from torch import nn

# What a user can do instead; said in every refusal.
REMEDY = (
    "run a fused order (zb tune --family 1f1b, or the job's own schedule) or shard the stage with "
    "FSDP2 (fully_shard) instead of DDP"
)


def fsdp_modules(module: "nn.Module", recurse: bool = True) -> list:
    """The FSDP2 (`fully_shard`) modules in `module` (itself only, without `recurse`); [] where
    this torch has no FSDP2."""
    try:
        from torch.distributed.fsdp import FSDPModule  # noqa: PLC0415
    except ImportError:
        return []
    found = module.modules() if recurse else (module,)
    return [m for m in found if isinstance(m, FSDPModule)]


def _fsdp_dtypes(modules: Iterable["nn.Module"]) -> Dict[int, Tuple[Any, Any]]:
    """id(sharded parameter) -> (the dtype FSDP gathers it in, the dtype it reduces its gradient
    in), each None where FSDP keeps the parameter's own, from FSDP2's own state (torch 2.13:
    `FSDPParam.param_dtype`, `reduce_dtype`, its mixed-precision policy); {} where those
    internals are not there, and then the parameters' own dtypes stand."""
    found: Dict[int, Tuple[Any, Any]] = {}
    try:
        from torch.distributed.fsdp import FSDPModule  # noqa: PLC0415
    except ImportError:
        return found
    for module in modules:
        for inner in module.modules():
            if not isinstance(inner, FSDPModule):
                continue
            try:
                for group in inner._get_fsdp_state()._fsdp_param_groups or ():
                    for param in group.fsdp_params:
                        found[id(param.sharded_param)] = (param.param_dtype, param.reduce_dtype)
            except AttributeError:
                continue
    return found


def unsharded_bytes(modules: Iterable["nn.Module"]) -> int:
    """The bytes FSDP's all-gathers add on this process while `modules` are unsharded
    (docs/data-parallel.md §5): each sharded parameter (a DTensor) at its full size, in the dtype
    FSDP gathers it in. FSDP2 gathers into new buffers of the full size (torch 2.13
    `FSDPParam.init_all_gather_outputs`) and the unsharded parameter is a view of them, so the
    rank's own shard is not reused; 0 where nothing is sharded."""
    from torch.distributed.tensor import DTensor  # noqa: PLC0415

    modules = list(modules)
    dtypes = _fsdp_dtypes(modules)
    total = 0
    seen = set()
    for module in modules:
        for parameter in module.parameters():
            if not isinstance(parameter, DTensor) or id(parameter) in seen:
                continue
            seen.add(id(parameter))
            gathered = dtypes.get(id(parameter), (None, None))[0] or parameter.dtype
            total += parameter.numel() * gathered.itemsize
    return total


def reduced_bytes(modules: Iterable["nn.Module"]) -> int:
    """The bytes of gradients the data-parallel reductions of `modules` take in per step
    (docs/data-parallel.md §5): every parameter with a gradient of an FSDP-sharded stage (a
    DTensor: its full size, the reduce-scatter's input, in FSDP's reduce dtype: its policy's
    `reduce_dtype`, else the dtype it computes in) or of a DDP module (the all-reduce's, in the
    parameter's dtype); 0 where nothing is reduced."""
    from torch.distributed.tensor import DTensor  # noqa: PLC0415

    modules = list(modules)
    dtypes = _fsdp_dtypes(modules)
    total = 0
    seen = set()
    for module in modules:
        replicated = ddp_module(module) is not None
        for parameter in module.parameters():
            if not parameter.requires_grad or id(parameter) in seen:
                continue
            if isinstance(parameter, DTensor):
                gathered, reduced = dtypes.get(id(parameter), (None, None))
                dtype = reduced or gathered or parameter.dtype
            elif replicated:
                dtype = parameter.dtype
            else:
                continue
            seen.add(id(parameter))
            total += parameter.numel() * dtype.itemsize
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

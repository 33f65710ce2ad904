# SPDX-License-Identifier: Apache-2.0
"""Activation checkpointing (AC) under a split backward: each checkpointed region recomputed once.

A zero-bubble order runs the backward of one (stage, microbatch) as two autograd passes, B (input
gradient) and W (weight gradients), far apart in time. torch's non-reentrant checkpoint keys its
recomputation by the autograd graph task, so every pass that reaches a checkpointed region runs
its forward again: B once and W once more (torch's own `stage_backward_weight` once per parameter
group), and per-op selective AC (SAC), whose cache of saved ops may be read once, fails with
"Trying to backward an extra time" (docs/activation-checkpointing.md §1).

torch offers one documented handle on this: under one `torch.utils.checkpoint.GraphExecGroup`,
every checkpointed region is recomputed at most once, however many backward calls run. Its one
restriction is that two calls must not read the same saved tensor; B and W both run the nodes
where the activation and the weight paths meet (a Linear's ``AddmmBackward``, which reads its
saved input for the weight gradient and its weight for the input gradient), so B would consume the
recomputed tensors W needs. `RecomputeOnce` is that group with this one gap closed: while B runs,
the recomputed tensors read by a node W will run again are kept, and W reads them from here;
everything else B reads is freed by torch at B as before, and what only W reads (the weight-only
nodes, which B never runs) stays in torch's own recomputation cache until W reads it. `release()`
after W drops what was kept. That is the memory timeline of docs/activation-checkpointing.md §2:
M_W, what one (stage, microbatch) holds from B to W, includes recomputed tensors and can exceed
M_B, what the forward left behind.

The kept tensors are handed over at the checkpoint's unpack hook, the one place they pass through:
`install()` wraps the hook pair torch builds for each region's forward (`_checkpoint_hook`, a
private class of torch.utils.checkpoint) so that, inside a `RecomputeOnce` only, its unpack goes
through here; everywhere else the wrapped hook is torch's, unchanged. Where that class is not what
this module expects (another torch), `install()` returns False with the reason and the callers run
the backward they ran before (one warning; never a different gradient).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Iterable, Iterator, Optional, Tuple

import torch
from torch.autograd.graph import Node

from ._stage_blocks import stage_blocks
from .errors import ZbkitError

__all__ = [
    "BLOCK_MODES",
    "RecomputeOnce",
    "block_mode",
    "compiled_module",
    "current_group",
    "install",
    "install_problem",
    "job_mode",
    "mapping_saved_tensors",
    "modes_mode",
    "profile_mismatch",
    "reentrant_refusal",
    "split_refusal",
    "wrappers_bypassed",
]

_lock = threading.Lock()
_installed: Optional[bool] = None
_problem = ""
_local = threading.local()


class _NotUnpackedWhileMapping(ZbkitError):
    """Raised by the wrapped checkpoint unpack while `mapping_saved_tensors` is active: a caller
    that reads a node's saved tensors only to learn what the node holds must not trigger a
    recomputation (an unpack outside backward recomputes the whole region)."""


class mapping_saved_tensors:  # noqa: N801 - a context manager used like a function
    """Inside this, reading a saved tensor that a checkpointed region holds raises a RuntimeError
    instead of recomputing the region (zbkit.bw_split reads every node's saved tensors once to
    learn which node owns which of its own boxes; a region's tensors are not among them)."""

    def __enter__(self) -> "mapping_saved_tensors":
        _local.mapping = getattr(_local, "mapping", 0) + 1
        return self

    def __exit__(self, *exc: object) -> None:
        _local.mapping -= 1


def _group_class():
    return getattr(torch.utils.checkpoint, "GraphExecGroup", None)


def install() -> bool:
    """Wraps torch's checkpoint hook once per process (idempotent, thread-safe). False when this
    torch's checkpoint is not the one this module knows; `install_problem()` says why."""
    global _installed, _problem
    with _lock:
        if _installed is not None:
            return _installed
        module = torch.utils.checkpoint
        hook_class = getattr(module, "_checkpoint_hook", None)
        if _group_class() is None:
            _problem = "torch.utils.checkpoint has no GraphExecGroup (torch older than 2.9)"
        elif hook_class is None or not hasattr(torch._C, "_current_autograd_node"):
            _problem = "torch.utils.checkpoint has no _checkpoint_hook to wrap"
        if _problem:
            _installed = False
            return False

        class _RecomputeOnceHook(hook_class):  # type: ignore[misc, valid-type]
            """torch's checkpoint hook pair with its unpack routed through `RecomputeOnce`."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                original = self.unpack_hook

                def unpack(holder: Any) -> Any:
                    if getattr(_local, "mapping", 0):
                        raise _NotUnpackedWhileMapping("a checkpointed region's saved tensor")
                    group = torch.utils.checkpoint.GraphExecGroup._get_current_group()
                    if isinstance(group, RecomputeOnce):
                        return group._unpack(holder, original)
                    return original(holder)

                self.unpack_hook = unpack

        module._checkpoint_hook = _RecomputeOnceHook
        _installed = True
        return True


def current_group() -> Any:
    """The GraphExecGroup the calling thread is in (None outside one, or on a torch without)."""
    return torch._C._get_graph_exec_group() if _group_class() is not None else None


def install_problem() -> str:
    """Why `install()` returned False ("" when it did not)."""
    return _problem


_Group = _group_class() or object


def _keep_nothing(node: "Node") -> bool:
    return False


class RecomputeOnce(_Group):  # type: ignore[misc, valid-type]
    """The group one (stage, microbatch)'s B and W both run in: ``with group: B`` ... ``with
    group: W``, then `release()`. `keeps(node)` says whether W runs `node` again (so what B reads
    for it must be kept); zbkit.bw_split and the shim pass their own classification of the graph."""

    def __init__(self, keeps: Callable[[Node], bool]) -> None:
        self._keeps = keeps
        # holder -> the recomputed tensor B read for a node W runs again. Weak keys: a holder
        # whose graph is gone takes its entry with it.
        self._kept: "weakref.WeakKeyDictionary[Any, torch.Tensor]" = weakref.WeakKeyDictionary()

    def _unpack(self, holder: Any, original: Callable[[Any], torch.Tensor]) -> torch.Tensor:
        kept = self._kept.get(holder)
        if kept is not None:
            return kept
        value = original(holder)
        node = torch._C._current_autograd_node()
        if node is not None and self._keeps(node):
            self._kept[holder] = value
        return value

    def kept_tensors(self) -> Tuple[torch.Tensor, ...]:
        """The recomputed tensors held for W now (what M_W adds under AC)."""
        return tuple(self._kept.values())

    def release(self) -> None:
        """After W: drops what was kept for it, and the classification. torch's checkpoint keys
        its recomputations by this group (the frame holds it), and a classification holds the
        graph's nodes, whose saved tensors hold the frame: a cycle through autograd's C++ nodes,
        which Python's collector cannot break, and every checkpointed region of the microbatch
        would stay alive (a leak of M_B per microbatch and step)."""
        self._kept = weakref.WeakKeyDictionary()
        self._keeps = _keep_nothing


# ---------------------------------------------------------------------------------------------
# What a job does: detection (docs/activation-checkpointing.md §1)

#: How one block checkpoints its activations: not at all, torch's non-reentrant checkpoint of
#: the whole block (checkpoint_wrapper, torchtitan's full AC and its every-k-th "selective"
#: layer AC), per-op selective (a checkpoint with a context_fn: torchtitan's op SAC), torch's
#: reentrant checkpoint.
BLOCK_MODES = ("none", "full", "op", "reentrant")


def block_mode(block: "torch.nn.Module") -> str:
    """One of BLOCK_MODES for `block`, from the outermost checkpoint_wrapper in it (torch's
    CheckpointWrapper, which torchtitan and most trainers apply). A forward that calls
    torch.utils.checkpoint itself is not visible here; zbkit's split still recomputes it once
    (non-reentrant)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: PLC0415
        CheckpointImpl,
        CheckpointWrapper,
    )

    for _, inner in block.named_modules():
        if not isinstance(inner, CheckpointWrapper):
            continue
        if inner.checkpoint_impl == CheckpointImpl.REENTRANT:
            return "reentrant"
        keywords = getattr(inner.checkpoint_fn, "keywords", {}) or {}
        if keywords.get("use_reentrant") is True:
            return "reentrant"
        context_fn = keywords.get("context_fn")
        if context_fn is not None and context_fn is not torch.utils.checkpoint.noop_context_fn:
            return "op"
        return "full"
    return "none"


@contextlib.contextmanager
def wrappers_bypassed(block: "torch.nn.Module") -> Iterator[None]:
    """Inside this, `block`'s checkpoint wrappers call their module directly (no checkpoint): what
    the block saves and reads without checkpointing, measured on the same module."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: PLC0415
        CheckpointWrapper,
    )

    def call(function, *args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    wrappers = [m for _, m in block.named_modules() if isinstance(m, CheckpointWrapper)]
    saved = [m.__dict__.get("checkpoint_fn") for m in wrappers]
    try:
        for wrapper in wrappers:
            wrapper.checkpoint_fn = call
        yield
    finally:
        for wrapper, previous in zip(wrappers, saved):
            wrapper.checkpoint_fn = previous


def job_mode(blocks: "Iterable[torch.nn.Module]") -> str:
    """The job's mode from its blocks: the one mode the blocks have; "layer" when some blocks
    are fully checkpointed and others of the same kind not at all (torchtitan's selective
    every-k-th layer); "mixed" otherwise; "none" when no block checkpoints. A block that is not
    checkpointed counts only where a block of its kind (its class) is: jobs checkpoint their
    transformer blocks, not the embedding or the head."""
    found = [(block_mode(block), _kind(block)) for block in blocks]
    checkpointed_kinds = {kind for mode, kind in found if mode != "none"}
    return modes_mode([mode for mode, kind in found if kind in checkpointed_kinds])


def modes_mode(modes: "Iterable[str]") -> str:
    """The job mode of these block modes (job_mode, once the blocks that count are chosen)."""
    kinds = set(modes)
    if len(kinds) <= 1:
        return kinds.pop() if kinds else "none"
    if kinds == {"none", "full"}:
        return "layer"
    return "mixed"


def _kind(block: "torch.nn.Module") -> str:
    """The class of what a block computes, seen through a checkpoint wrapper around it."""
    return type(getattr(block, "_checkpoint_wrapped_module", block)).__name__


def compiled_module(module: "torch.nn.Module") -> Optional[str]:
    """The qualified name of the first compiled module in `module` ("" for itself): a
    torch.compile'd OptimizedModule, or a module whose .compile() was called. None if none."""
    for name, inner in module.named_modules():
        if (
            type(inner).__name__ == "OptimizedModule"
            or getattr(inner, "_compiled_call_impl", None) is not None
        ):
            return name
    return None


def reentrant_refusal(
    stages: "list[tuple[int, torch.nn.Module]]", where: str, why: str, remedy: str
) -> Optional[str]:
    """The one-line refusal for the first block checkpointed with torch's reentrant checkpoint
    in `stages` ((global stage id, module)), saying `why` it cannot run and what else to do
    (`remedy`, after "checkpoint it with use_reentrant=False"); None if there is none."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: PLC0415
        CheckpointWrapper,
    )

    for stage, module in stages:
        for name, inner in module.named_modules():
            if isinstance(inner, CheckpointWrapper) and block_mode(inner) == "reentrant":
                shown = f"'{name}'" if name else f"its module ({type(module).__name__})"
                return (
                    f"{where}: stage {stage} checkpoints {shown} with torch's reentrant "
                    f"checkpoint, {why}; checkpoint it with use_reentrant=False "
                    f"(checkpoint_wrapper's default) {remedy}"
                )
    return None


def split_refusal(stages: "list[tuple[int, torch.nn.Module]]", where: str) -> Optional[str]:
    """None when every stage can run a split backward with each checkpointed block recomputed
    once; else the one-line refusal for the first stage that cannot: a reentrant checkpoint (its
    backward recomputes and accumulates every weight gradient inside B; a split would run it
    again in W) or a compiled module (one opaque backward: torch refuses a split of it too).
    `stages` are (global stage id, module); `where` says who refuses."""
    for stage, module in stages:
        reentrant = reentrant_refusal(
            [(stage, module)],
            where,
            "whose backward cannot be split into B and W",
            "or run a fused order (zb tune --family 1f1b, or the job's own schedule)",
        )
        if reentrant:
            return reentrant
        name = compiled_module(module)
        if name is not None:
            shown = f"'{name}'" if name else f"its module ({type(module).__name__})"
            return (
                f"{where}: stage {stage} runs compiled code ({shown} is torch.compile'd), one "
                f"opaque backward that cannot be split into B and W; run a fused order (zb tune "
                f"--family 1f1b, or the job's own schedule) or the stage uncompiled"
            )
    return None


def profile_mismatch(
    profiled: str, stages: "list[tuple[int, torch.nn.Module]]", where: str, what: str
) -> Optional[str]:
    """None when the job's local stages checkpoint as the profile its order was tuned from says
    (`profiled`, a zb-costs/1 "checkpointing"; "" or "mixed": nothing to compare); else the
    one-line refusal naming the first block that differs. A rank sees only its own blocks: under
    a "layer" profile each of them may be full or none."""
    if not profiled or profiled == "mixed":
        return None
    allowed = ("none", "full") if profiled == "layer" else (profiled,)
    blocks = [(stage, name, block) for stage, module in stages
              for name, block in stage_blocks(module)]  # fmt: skip
    local = job_mode(block for _, _, block in blocks)
    if local in allowed or (profiled == "layer" and local == "layer"):
        return None
    checked = {_kind(b) for _, _, b in blocks if block_mode(b) != "none"} or {
        _kind(b) for _, _, b in blocks
    }
    for stage, name, block in blocks:
        mode = block_mode(block)
        if _kind(block) in checked and mode not in allowed:
            return (
                f"{where}: {what} was tuned from a profile of a job that checkpoints "
                f"activations '{profiled}' (costs.checkpointing), but this job's stage {stage} "
                f"block '{name}' checkpoints '{mode}'; profile the job as it runs now (zb "
                f"profile) and tune again"
            )
    return None

# SPDX-License-Identifier: Apache-2.0
"""The shim's recompute-once split: torch's runtime runs each (stage, microbatch)'s input pass
(BACKWARD_INPUT, `stage_backward_input`) and weight pass (BACKWARD_WEIGHT, `stage_backward_weight`,
one autograd call per parameter group) under one `zbkit.checkpointing.RecomputeOnce`, so that a
checkpointed block is recomputed once, in the input pass, whatever the script's activation
checkpointing (full or per-op selective); torch alone recomputes it in every pass, and SAC fails on
the second (docs/activation-checkpointing.md).

The stages' two methods are wrapped on the instances, once per stage, whenever the shim runs a
step (`zb replay`, `zb profile`: the profiling window's own split goes through them too). A fused
backward and a stage with a custom weight function (`dw_builder`) run as before, and so does
everything where zbkit.checkpointing cannot install itself (one warning): never a different
gradient, at worst torch's recompute count."""

from __future__ import annotations

import sys
from typing import Dict

from .. import checkpointing
from ..bw_split import weight_pass_nodes
from ._stages import local_stages

__all__ = ["recompute_once"]

_warned = False


class _Everything:
    def __contains__(self, node) -> bool:
        return True


_EVERY_NODE = _Everything()


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write(f"zbkit: warning: {message}\n")
        sys.stderr.flush()


def recompute_once(schedule) -> None:
    """Wraps the backward methods of `schedule`'s local stages (idempotent)."""
    if not checkpointing.install():
        _warn_once(
            "checkpointed blocks are recomputed in every backward pass of a split order "
            f"({checkpointing.install_problem()})"
        )
        return
    for stage in local_stages(schedule):
        if not stage.__dict__.get("_zbkit_recompute_once"):
            _wrap(stage)


def _group_for(stage, chunk: int, loss):
    """(the RecomputeOnce of `stage`'s microbatch `chunk`, its node classification), or (None,
    None) where the input pass runs as torch runs it: a stage with its own weight function, a
    caller already in a GraphExecGroup, or a stage whose torch keeps its forward cache otherwise
    than torch 2.13 (never a failure of the job's step)."""
    try:
        if stage.dw_builder is not None or checkpointing.current_group() is not None:
            return None, None
        output, inputs = stage.fwd_cache.get(chunk, ((), ()))
        roots = (loss,) if stage.is_last else output
        if not isinstance(roots, (tuple, list)):
            roots = (roots,)
        nodes = _WeightPassNodes(roots, inputs, stage.submod)
        return checkpointing.RecomputeOnce(nodes), nodes
    except Exception as error:  # another torch's stage: torch's own split, said once
        _warn_once(f"torch's split runs as it is here ({type(error).__name__}: {error})")
        return None, None


def _wrap(stage) -> None:
    backward, weight = stage.backward_one_chunk, stage.backward_weight_one_chunk
    groups: Dict[int, checkpointing.RecomputeOnce] = {}

    def backward_one_chunk(bwd_chunk_id, loss=None, full_backward=True, last_backward=False):
        group = None
        if not full_backward:
            group, nodes = _group_for(stage, bwd_chunk_id, loss)
        if group is None:
            return backward(
                bwd_chunk_id, loss=loss, full_backward=full_backward, last_backward=last_backward
            )
        try:
            with group:
                result = backward(
                    bwd_chunk_id, loss=loss, full_backward=False, last_backward=last_backward
                )
        finally:
            nodes.forget_tensors()
        groups[bwd_chunk_id] = group
        return result

    def backward_weight_one_chunk(bwd_chunk_id, last_backward=False):
        group = groups.pop(bwd_chunk_id, None)
        if group is None or checkpointing.current_group() is not None:
            return weight(bwd_chunk_id, last_backward=last_backward)
        try:
            with group:
                return weight(bwd_chunk_id, last_backward=last_backward)
        finally:
            group.release()

    stage.backward_one_chunk = backward_one_chunk
    stage.backward_weight_one_chunk = backward_weight_one_chunk
    stage.__dict__["_zbkit_recompute_once"] = True


class _WeightPassNodes:
    """`keeps(node)` for a RecomputeOnce: whether the weight pass runs `node`. The graph is walked
    once, on the first checkpointed tensor the input pass reads (a stage without checkpointing
    never pays for the walk); `forget_tensors()` after the input pass drops the stage's outputs
    and inputs, which must not live on until W because of this."""

    def __init__(self, roots, inputs, module) -> None:
        self._graph = (roots, inputs, module)
        self._nodes = None

    def __call__(self, node) -> bool:
        if self._nodes is None:
            if self._graph is None:
                return True
            roots, inputs, module = self._graph
            try:
                self._nodes = weight_pass_nodes(roots, inputs, module.parameters())
            except Exception as error:  # keep everything B reads: more memory, never a failure
                _warn_once(f"the weight pass's nodes are unknown ({error}); B keeps all it reads")
                self._nodes = _EVERY_NODE
        return node in self._nodes

    def forget_tensors(self) -> None:
        self._graph = None

# SPDX-License-Identifier: Apache-2.0
"""Replays one rank's op list of a zbkit schedule in real PyTorch training.

`PipelineExecutor` runs the ops of `schedule.ops[rank]` in order on plain ``nn.Module`` stages:
F (forward; the last stage also computes the loss, scaled by 1/m), B (gradient w.r.t. the stage
input, handed upstream), W (weight gradients, accumulated into ``.grad``) and BW (both fused).
B and W are a real split (`zbkit.bw_split`). After `step` every parameter's ``.grad`` holds the
gradient of one unpipelined step on the whole batch, ready for an ordinary optimizer step.

Communication is point-to-point through ``torch.distributed`` (gloo on CPU, NCCL on GPU) by
`zbkit._p2p.StageWire`: sends posted right after the op that produces them, receives waited for
just before the consuming op, bounded. A dead, slow or mismatched peer raises
`ZbkitPipelineError` naming this rank, the op and the peer. Adjacent stages on the same rank (V
placement) hand over locally. The schedule is checked first by `zbkit._schedule_checks`.
"""

from __future__ import annotations

import hashlib
import importlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch
import torch.distributed as dist
from torch import nn
from torch._C._autograd import _profiler_enabled as profiler_enabled
from torch.profiler import record_function

from . import _p2p as p2p
from . import checkpointing
from . import progress as progress_record
from ._data_parallel import EXECUTOR_BACKWARD, split_under_ddp
from ._p2p import ACT, GRAD, one_line
from ._schedule_checks import validate_schedule
from .actions import torch_label
from .bw_split import BackwardSplit, SplitStats
from .errors import ZbkitPipelineError
from .schedule import Op, Schedule

__all__ = [
    "PipelineExecutor",
    "ZbkitPipelineError",
    "post_validation_deadlines",
    "validate_schedule",
]


def _fail(msg: str) -> ZbkitPipelineError:
    return ZbkitPipelineError(msg)


def post_validation_deadlines(schedule: Schedule) -> List[int]:
    """Per rank, the index of the op before which a speculative optimizer step is validated.

    Only forwards of the rank's first stage (chunk 0) may run on speculative weights (the paper's
    rule, docs/post-validation.md): they are what a failed validation redoes. A rank's deadline is
    also no later than the op that would consume an activation its upstream rank sends after *its*
    deadline, so that what a restart drains is fixed by the schedule: the messages each peer sends
    before its own deadline."""
    deadlines: List[int] = []
    for r, ops in enumerate(schedule.ops):
        first = schedule.stages[r][0]
        # Where in rank r-1's sends each microbatch's activation towards stage `first` comes.
        position: Dict[int, int] = {}
        if r > 0:
            upstream = schedule.ops[r - 1]
            sent = [op.microbatch for op in upstream if op.kind == "F" and op.stage + 1 == first]
            position = {mb: i for i, mb in enumerate(sent)}
        d = 0
        while d < len(ops) and ops[d].kind == "F" and ops[d].stage == first:
            if r > 0 and position.get(ops[d].microbatch, len(ops)) >= deadlines[r - 1]:
                break
            d += 1
        deadlines.append(d)
    return deadlines


def _fingerprint(schedule: Schedule) -> int:
    """A stable hash of what both ends of a message must agree on."""
    text = repr(
        (
            schedule.ranks,
            schedule.chunks,
            schedule.microbatches,
            schedule.placement,
            schedule.stages,
            [[(o.kind, o.stage, o.microbatch) for o in ops] for ops in schedule.ops],
        )
    )
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "little")


Inputs = Union[Sequence[Any], Callable[[int], Any]]


class PipelineExecutor:
    """Runs `schedule.ops[rank]` on `modules` (global stage id -> module held by this rank).

    Args:
        schedule: the schedule (same object content on every rank).
        rank: this rank's index in the pipeline (its rank in `group`).
        modules: the stages this rank holds, exactly ``schedule.stages[rank]``.
        loss_fn: ``loss_fn(output, target) -> scalar`` applied on the last stage per microbatch.
        group: the process group (None: the default group; not needed for a 1-rank schedule).
        recorder: optional object with ``begin(i)``/``end(i)`` around op i of this rank and,
            if it has one, ``memory(bytes)`` after each op with the activation bytes held.
        timeout_s: bound on every wait for a peer.
        loss_scale: factor on each microbatch loss; default 1/m, so the accumulated gradients
            equal one step on the whole batch.
        post_validation: optional `zbkit.post_validation.PostValidatedOptimizer` of this rank.
            When its last step is pending, `step` validates it before this rank's deadline (the
            first op that is not a forward of the rank's first stage, and no later than the
            upstream rank's: `post_validation_deadline`), forwarding the global state as soon as
            it arrives; if validation fails the iteration restarts from its first op, draining
            the activations sent on speculative weights.
    """

    def __init__(
        self,
        schedule: Schedule,
        rank: int,
        modules: Mapping[int, nn.Module],
        loss_fn: Callable[[Any, Any], torch.Tensor],
        group: Optional[Any] = None,
        recorder: Optional[Any] = None,
        timeout_s: float = 300.0,
        loss_scale: Optional[float] = None,
        post_validation: Optional[Any] = None,
    ) -> None:
        world = None
        if dist.is_available() and dist.is_initialized():
            world = dist.get_world_size(group)
        elif schedule.ranks != 1:
            raise _fail(
                f"zbkit executor rank {rank}: torch.distributed is not initialized for a "
                f"{schedule.ranks}-rank schedule"
            )
        validate_schedule(schedule, world)
        if not 0 <= rank < schedule.ranks:
            raise _fail(f"zbkit executor: rank {rank} outside 0..{schedule.ranks - 1}")
        if world is not None and dist.get_rank(group) != rank:
            raise _fail(
                f"zbkit executor rank {rank}: this process is rank {dist.get_rank(group)} of the "
                f"process group"
            )
        held = set(schedule.stages[rank])
        given = set(modules)
        if given != held:
            raise _fail(
                f"zbkit executor rank {rank}: modules for stages {sorted(given)} but the schedule "
                f"puts stages {sorted(held)} on this rank"
            )
        if timeout_s <= 0:
            raise _fail(f"zbkit executor rank {rank}: timeout_s must be > 0, is {timeout_s}")
        ddp = split_under_ddp(
            sorted(modules.items()), f"zbkit executor rank {rank}", EXECUTOR_BACKWARD
        )
        if ddp:
            raise _fail(ddp)
        # Every backward of the executor is a torch.autograd.grad, which torch's reentrant
        # checkpoint refuses; a compiled stage cannot be split (zbkit.checkpointing).
        where = f"zbkit executor rank {rank}"
        refusal = checkpointing.reentrant_refusal(
            sorted(modules.items()),
            where,
            "which refuses torch.autograd.grad, the executor's every backward",
            "or replay the script through torch's runtime (zb replay) with a fused order",
        )
        split_stages = {op.stage for op in schedule.ops[rank] if op.kind in ("B", "W")}
        refusal = refusal or checkpointing.split_refusal(
            sorted((s, m) for s, m in modules.items() if s in split_stages), where
        )
        if refusal:
            raise _fail(refusal)
        self.schedule = schedule
        self.rank = rank
        self.modules = dict(modules)
        self.loss_fn = loss_fn
        self.group = group
        self.recorder = recorder
        self.timeout_s = float(timeout_s)
        m = schedule.microbatches
        self.loss_scale = 1.0 / m if loss_scale is None else float(loss_scale)
        self._n = schedule.num_stages
        self._ops: Tuple[Op, ...] = schedule.ops[rank]
        # torch.distributed.pipelining's labels ("PP:3F7", "PP:3I7" for B, "PP:3B7" for BW), put on
        # each op while torch.profiler records, so a profile of zbkit's executor reads like one of
        # torch's runtime (and zb import reads it the same way).
        self._labels = tuple(
            "PP:" + torch_label(op.kind, op.stage, op.microbatch) for op in self._ops
        )
        self._device: Dict[int, torch.device] = {}
        for s, mod in self.modules.items():
            first = next(iter(mod.parameters()), None)
            self._device[s] = first.device if first is not None else torch.device("cpu")
        self._wire = p2p.StageWire(
            schedule, rank, group, _fingerprint(schedule), self.timeout_s,
            p2p.wire_device(group) if world is not None else torch.device("cpu"), _fail,
        )  # fmt: skip
        if post_validation is not None and (post_validation.rank, post_validation.ranks) != (
            rank,
            schedule.ranks,
        ):
            raise _fail(
                f"zbkit executor rank {rank}: the post-validated optimizer is for rank "
                f"{post_validation.rank} of {post_validation.ranks}"
            )
        self.post_validation = post_validation
        deadlines = post_validation_deadlines(schedule)
        #: index of the op before which a pending step is validated
        self.post_validation_deadline = deadlines[rank]
        # Per peer: how many of its messages to this rank it sends before its own deadline (the
        # ones a failed validation makes stale).
        self._stale_in = {
            peer: self._wire.messages_before(peer, deadlines[peer])
            for peer in range(schedule.ranks)
            if peer != rank
        }
        #: iterations restarted after a failed validation
        self.restarts = 0
        #: where this rank is, for `zb doctor` (zbkit.progress; on when ZBKIT_PROGRESS_DIR is set)
        self.progress = progress_record.open_from_environment(
            rank, schedule.ranks, [(o.kind, o.stage, o.microbatch) for o in self._ops], m, self._n
        )
        # torch.autograd.grad imports this (and sympy) lazily on its first call with output
        # gradients: seconds on a slow machine. Pay for it here rather than inside the first B,
        # where the peer waiting for that B's gradient would count it against its timeout.
        importlib.import_module("torch.fx.experimental.symbolic_shapes")
        #: per stage, per microbatch: the SplitStats of the last step (memory of F, and of what
        #: W kept alive after B; for a BW op, retained and captured are 0)
        self.memory_stats: Dict[int, Dict[int, SplitStats]] = {}

    def _where(self, op_i: int, op: Op) -> str:
        return f"zbkit executor rank {self.rank} op {op_i} ({op})"

    # ---- ops -------------------------------------------------------------------------------

    def _microbatch(self, source: Any, mb: int, what: str) -> Any:
        if callable(source):
            return source(mb)
        if source is None:
            raise _fail(f"zbkit executor rank {self.rank}: no {what} given")
        if len(source) != self.schedule.microbatches:
            raise _fail(
                f"zbkit executor rank {self.rank}: {len(source)} {what} microbatches for a "
                f"{self.schedule.microbatches}-microbatch schedule"
            )
        return source[mb]

    def _forward(self, op_i: int, op: Op) -> None:
        s, mb = op.stage, op.microbatch
        dev = self._device[s]
        if s == 0:
            x = self._microbatch(self._inputs, mb, "inputs")
            if isinstance(x, torch.Tensor):
                x = x.to(dev)
                # A floating first-stage input anchors the split; its gradient is never asked.
                if x.is_floating_point():
                    x = x.detach().requires_grad_(True)
        else:
            x = self._wire.receive(self._where(op_i, op), mb, ACT, s - 1).to(dev)
            if x.is_floating_point():
                x = x.detach().requires_grad_(True)
        module = self.modules[s]
        split = BackwardSplit(module.parameters())
        last = s == self._n - 1
        with split.record():
            out = module(x)
            if last:
                target = self._microbatch(self._targets, mb, "targets")
                if isinstance(target, torch.Tensor):
                    target = target.to(dev)
                loss = self.loss_fn(out, target)
                if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                    raise _fail(
                        f"zbkit executor rank {self.rank} op {op_i} ({op}): loss_fn "
                        f"must return a scalar tensor"
                    )
                self._losses[mb] = loss.detach().reshape(())
                out = loss * self.loss_scale
        if not isinstance(out, torch.Tensor):
            raise _fail(
                f"zbkit executor rank {self.rank} op {op_i} ({op}): stage {s} returned "
                f"{type(out).__name__}; stages must return one tensor"
            )
        inputs = (x,) if isinstance(x, torch.Tensor) and x.requires_grad else ()
        split.seal((out,), inputs)
        self._splits[(s, mb)] = split
        self._want_dx[(s, mb)] = s > 0 and bool(inputs)
        if not last:
            self._wire.send(self._where(op_i, op), op, ACT, out, s + 1)

    def _grad_output(self, op_i: int, op: Op) -> Optional[torch.Tensor]:
        s = op.stage
        if s == self._n - 1:
            return None
        where = self._where(op_i, op)
        return self._wire.receive(where, op.microbatch, GRAD, s + 1).to(self._device[s])

    def _backward(self, op_i: int, op: Op, fused: bool) -> None:
        s, mb = op.stage, op.microbatch
        dy = self._grad_output(op_i, op)
        split = self._splits[(s, mb)]
        want = [self._want_dx[(s, mb)]]
        if fused:
            grads = split.backward_fused((dy,), want)
            del self._splits[(s, mb)]
        else:
            grads = split.backward_input((dy,), want)
        self.memory_stats.setdefault(s, {})[mb] = split.stats
        if s > 0:
            dx = grads[0]
            if dx is None:
                raise _fail(
                    f"zbkit executor rank {self.rank} op {op_i} ({op}): stage {s} "
                    f"output does not depend on its input, no gradient to hand upstream"
                )
            self._wire.send(self._where(op_i, op), op, GRAD, dx, s - 1)

    def _weight(self, op_i: int, op: Op) -> None:
        split = self._splits.pop((op.stage, op.microbatch))
        split.backward_weight()

    def _held_bytes(self) -> int:
        return sum(split.held_bytes() for split in self._splits.values())

    # ---- step ------------------------------------------------------------------------------

    def step(
        self, inputs: Optional[Inputs], targets: Optional[Inputs] = None
    ) -> List[torch.Tensor]:
        """Runs one iteration: this rank's ops in order, gradients accumulated into ``.grad``.

        Args:
            inputs: the m first-stage input microbatches (a sequence, or ``f(mb)``); only the
                rank holding stage 0 reads it.
            targets: the m loss targets (sequence or ``f(mb)``); only the last stage's rank.
        Returns:
            On the rank holding the last stage, the m unscaled microbatch losses (detached, in
            microbatch order; their mean is the full-batch loss for equal microbatches); [] on
            the other ranks.
        """
        self._inputs = inputs
        self._targets = targets
        pv = self.post_validation
        validating = pv is not None and pv.pending
        progress = self.progress
        if progress is not None:
            progress.iteration_begin()
        try:
            # Until validated, only what a restart would drain is received.
            self._begin_attempt(dict(self._stale_in) if validating else None)
            while not self._run_ops(validating):
                self._restart()
                validating = False
            self._wire.finish_sends()
        except BaseException as error:
            if progress is not None:
                progress.raised(error)
            raise
        finally:
            self._wire.abandon_sends()
        if progress is not None:
            progress.iteration_end()
        return [self._losses[mb] for mb in sorted(self._losses)]

    def _begin_attempt(self, hold: Optional[Dict[int, int]]) -> None:
        """Fresh per-iteration state; the first message from every peer posted."""
        self._splits: Dict[Tuple[int, int], BackwardSplit] = {}
        self._want_dx: Dict[Tuple[int, int], bool] = {}
        self._losses: Dict[int, torch.Tensor] = {}
        self.memory_stats = {}
        self._wire.begin(hold)

    def _validate(self) -> bool:
        """The pending optimizer step's validation; on success the held-back receives go out."""
        ok = self.post_validation.validate()
        if ok:
            self._wire.release()
        return ok

    def _restart(self) -> None:
        """After a failed validation: every peer's messages sent before its deadline were made on
        speculative weights (or inputs); receive and drop them, then start the iteration over."""
        where = f"zbkit executor rank {self.rank}, restarting after a failed post-validation"
        self._wire.drain(self._stale_in, where)
        self.restarts += 1
        self.post_validation.counts.restarts += 1
        self._begin_attempt(None)

    def _run_ops(self, validating: bool) -> bool:
        """This rank's ops in order; False when the pending step's validation failed (at the
        deadline, before any op that is not a speculative forward)."""
        rec = self.recorder
        report_memory = getattr(rec, "memory", None) if rec is not None else None
        deadline = self.post_validation_deadline
        progress = self.progress
        for i, op in enumerate(self._ops):
            if validating:
                if i == deadline:
                    validating = False
                    if not self._validate():
                        return False
                else:
                    self.post_validation.poll()
            if progress is not None:
                progress.begin(i)
            if rec is not None:
                rec.begin(i)
            label = record_function(self._labels[i]) if profiler_enabled() else None
            if label is not None:
                label.__enter__()
            try:
                if op.kind == "F":
                    self._forward(i, op)
                elif op.kind == "B":
                    self._backward(i, op, fused=False)
                elif op.kind == "BW":
                    self._backward(i, op, fused=True)
                else:
                    self._weight(i, op)
            except ZbkitPipelineError:
                raise
            except Exception as e:  # noqa: BLE001 - name the op for any failure inside it
                raise _fail(f"zbkit executor rank {self.rank} op {i} ({op}): {one_line(e)}") from e
            finally:
                if label is not None:
                    label.__exit__(None, None, None)
            if progress is not None:
                progress.end(i)
            if rec is not None:
                rec.end(i)
                if report_memory is not None:
                    report_memory(self._held_bytes())
            self._wire.reap()
        return not validating or self._validate()

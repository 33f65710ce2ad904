# SPDX-License-Identifier: Apache-2.0
"""Replays one rank's op list of a zbkit schedule in real PyTorch training.

`PipelineExecutor` runs the ops of `schedule.ops[rank]` in order on plain ``nn.Module`` stages:
F (forward; the last stage also computes the loss, scaled by 1/m), B (gradient w.r.t. the stage
input, handed upstream), W (weight gradients, accumulated into ``.grad``) and BW (both fused).
B and W are a real split (`zbkit.bw_split`). After `step` every parameter's ``.grad`` holds the
gradient of one unpipelined step on the whole batch, ready for an ordinary optimizer step.

Communication is point-to-point through ``torch.distributed`` (gloo on CPU, NCCL on GPU; the code
only looks at the backend to pick where the wire tensors live). Each message is a small int64
header (schedule fingerprint, direction, stage, microbatch, dtype, shape) followed by the payload.
Sends are posted right after the op that produces them; receives from each peer are posted in the
order that peer sends (computed from its op list, so NCCL, which ignores tags, matches them too),
a header as soon as the previous payload is posted, and waited for just before the consuming op,
with a bounded timeout. A dead, slow or mismatched peer raises `ZbkitPipelineError` naming this
rank, the op and the peer. Adjacent stages on the same rank (V placement) hand over locally.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch
import torch.distributed as dist
from torch import nn

from .bw_split import BackwardSplit, SplitStats
from .schedule import OP_KINDS, Op, Schedule

__all__ = [
    "PipelineExecutor",
    "ZbkitPipelineError",
    "post_validation_deadlines",
    "validate_schedule",
]

ACT = 0  # activation, stage s -> s + 1
GRAD = 1  # input gradient, stage s -> s - 1

_MAGIC = 0x7A626B74  # "zbkt"
_MAX_DIMS = 8
_HEADER_LEN = 7 + _MAX_DIMS
_DTYPES: Tuple[torch.dtype, ...] = (
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
)


class ZbkitPipelineError(RuntimeError):
    """A schedule that cannot run here, or a peer that died, timed out or disagreed."""


def _fail(msg: str) -> ZbkitPipelineError:
    return ZbkitPipelineError(msg)


def _op_text(op: Op) -> str:
    return f"{op.kind} stage {op.stage} mb {op.microbatch}"


def validate_schedule(schedule: Schedule, world_size: Optional[int] = None) -> None:
    """Checks the whole schedule (every rank's part, so all ranks fail alike); raises one line."""
    p, v, m = schedule.ranks, schedule.chunks, schedule.microbatches
    where = f"zbkit schedule{'' if not schedule.family else ' ' + schedule.family}"
    if p < 1 or v < 1 or m < 1:
        raise _fail(f"{where}: ranks {p}, chunks {v}, microbatches {m} must all be >= 1")
    if world_size is not None and p != world_size:
        raise _fail(f"{where}: made for {p} ranks but the process group has {world_size}")
    if schedule.placement not in ("loop", "v"):
        raise _fail(f"{where}: unknown placement {schedule.placement!r}")
    if schedule.placement == "v" and v != 2:
        raise _fail(f"{where}: placement v needs 2 chunks per rank, has {v}")
    if len(schedule.stages) != p:
        raise _fail(f"{where}: stages lists {len(schedule.stages)} ranks, expected {p}")
    if len(schedule.ops) != p:
        raise _fail(f"{where}: ops lists {len(schedule.ops)} ranks, expected {p}")
    n = p * v
    owner: Dict[int, int] = {}
    for r, held in enumerate(schedule.stages):
        if len(held) != v:
            raise _fail(f"{where}: rank {r} holds {len(held)} stages, expected {v}")
        for s in held:
            if not 0 <= s < n:
                raise _fail(f"{where}: rank {r} holds stage {s}, outside 0..{n - 1}")
            if s in owner:
                raise _fail(f"{where}: stage {s} is on rank {owner[s]} and on rank {r}")
            owner[s] = r
        if schedule.placement == "loop":
            expected = tuple(r + c * p for c in range(v))
        else:
            expected = (r, 2 * p - 1 - r)
        if tuple(held) != expected:
            raise _fail(
                f"{where}: rank {r} holds stages {list(held)}, placement {schedule.placement} "
                f"puts {list(expected)} there"
            )
    for r, ops in enumerate(schedule.ops):
        seen: Dict[Tuple[str, int, int], int] = {}
        for i, op in enumerate(ops):
            at = f"{where}: rank {r} op {i} ({_op_text(op)})"
            if op.kind not in OP_KINDS:
                raise _fail(f"{at}: unknown kind {op.kind!r}")
            if owner.get(op.stage) != r:
                raise _fail(f"{at}: stage {op.stage} is not on rank {r}")
            if not 0 <= op.microbatch < m:
                raise _fail(f"{at}: microbatch outside 0..{m - 1}")
            key = (op.kind, op.stage, op.microbatch)
            if key in seen:
                raise _fail(f"{at}: duplicate, first at op {seen[key]}")
            seen[key] = i
            f_at = seen.get(("F", op.stage, op.microbatch))
            if op.kind != "F" and f_at is None:
                raise _fail(f"{at}: runs before its F")
            if op.kind == "W" and ("B", op.stage, op.microbatch) not in seen:
                raise _fail(f"{at}: runs before its B")
            if op.kind in ("B", "W") and ("BW", op.stage, op.microbatch) in seen:
                raise _fail(f"{at}: the pair already ran fused as BW")
            if op.kind == "BW" and ("B", op.stage, op.microbatch) in seen:
                raise _fail(f"{at}: its B already ran")
        for s in schedule.stages[r]:
            for mb in range(m):
                missing = []
                if ("F", s, mb) not in seen:
                    missing.append("F")
                if ("BW", s, mb) not in seen:
                    for k in ("B", "W"):
                        if (k, s, mb) not in seen:
                            missing.append(k)
                if missing:
                    raise _fail(
                        f"{where}: rank {r} has no {'/'.join(missing)} for stage {s} "
                        f"microbatch {mb}"
                    )
    if 4 * n * m >= 2**31:
        raise _fail(f"{where}: {n} stages x {m} microbatches overflow the message tags")
    _check_progress(schedule, where)


def _check_progress(schedule: Schedule, where: str) -> None:
    """Replays the op lists against their data dependencies; a cycle would hang, so say where.

    F of stage s needs F of s-1 (same microbatch); B/BW of s needs B/BW of s+1; the rest is
    local order, already checked."""
    n = schedule.num_stages
    done = set()
    pos = [0] * schedule.ranks
    progressed = True
    while progressed:
        progressed = False
        for r, ops in enumerate(schedule.ops):
            while pos[r] < len(ops):
                op = ops[pos[r]]
                need = _dependency(op, n)
                if need is not None and need not in done:
                    break
                done.add(("B" if op.kind == "BW" else op.kind, op.stage, op.microbatch))
                pos[r] += 1
                progressed = True
    for r, ops in enumerate(schedule.ops):
        if pos[r] < len(ops):
            op = ops[pos[r]]
            kind, stage, mb = _dependency(op, n)  # type: ignore[misc]
            raise _fail(
                f"{where}: rank {r} op {pos[r]} ({_op_text(op)}) waits for {kind} of stage {stage} "
                f"mb {mb}, which cannot run before it (the ranks would deadlock)"
            )


def _dependency(op: Op, n: int) -> Optional[Tuple[str, int, int]]:
    if op.kind == "F" and op.stage > 0:
        return ("F", op.stage - 1, op.microbatch)
    if op.kind in ("B", "BW") and op.stage < n - 1:
        return ("B", op.stage + 1, op.microbatch)
    return None


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


@dataclass
class _Msg:
    """One expected incoming message."""

    direction: int
    stage: int  # the producing stage
    microbatch: int
    peer: int
    header: Optional[torch.Tensor] = None
    header_work: Any = None
    payload: Optional[torch.Tensor] = None
    payload_work: Any = None

    def text(self) -> str:
        what = "activation" if self.direction == ACT else "input gradient"
        return f"{what} of stage {self.stage} mb {self.microbatch} from peer rank {self.peer}"


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
        self._owner = {s: r for r, st in enumerate(schedule.stages) for s in st}
        self._ops: Tuple[Op, ...] = schedule.ops[rank]
        self._fp = _fingerprint(schedule)
        # isend/irecv address peers by their rank in the default group.
        self._peer_global = [
            dist.get_global_rank(group, r) if world is not None and group is not None else r
            for r in range(schedule.ranks)
        ]
        backend = dist.get_backend(group) if world is not None else "gloo"
        self._wire_device = (
            torch.device("cuda", torch.cuda.current_device())
            if str(backend).lower() == "nccl"
            else torch.device("cpu")
        )
        self._device: Dict[int, torch.device] = {}
        for s, mod in self.modules.items():
            first = next(iter(mod.parameters()), None)
            self._device[s] = first.device if first is not None else torch.device("cpu")
        self._incoming_order: Dict[int, List[Tuple[int, int, int]]] = self._plan_incoming()
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
            peer: sum(1 for op in schedule.ops[peer][: deadlines[peer]] if self._sends_to_me(op))
            for peer in range(schedule.ranks)
            if peer != rank
        }
        #: iterations restarted after a failed validation
        self.restarts = 0
        self._post_limit: Optional[Dict[int, int]] = None
        # torch.autograd.grad imports this (and sympy) lazily on its first call with output
        # gradients: seconds on a slow machine. Pay for it here rather than inside the first B,
        # where the peer waiting for that B's gradient would count it against its timeout.
        importlib.import_module("torch.fx.experimental.symbolic_shapes")
        #: per stage, per microbatch: the SplitStats of the last step (memory of F, and of what
        #: W kept alive after B; for a BW op, retained and captured are 0)
        self.memory_stats: Dict[int, Dict[int, SplitStats]] = {}

    # ---- plan ------------------------------------------------------------------------------

    def _message(self, op: Op) -> Optional[Tuple[int, Tuple[int, int, int]]]:
        """(destination stage, message) of what `op` sends, or None."""
        if op.kind == "F" and op.stage + 1 < self._n:
            return op.stage + 1, (ACT, op.stage, op.microbatch)
        if op.kind in ("B", "BW") and op.stage > 0:
            return op.stage - 1, (GRAD, op.stage, op.microbatch)
        return None

    def _sends_to_me(self, op: Op) -> bool:
        sent = self._message(op)
        return sent is not None and self._owner[sent[0]] == self.rank

    def _plan_incoming(self) -> Dict[int, List[Tuple[int, int, int]]]:
        """Per peer, the messages it sends this rank, in the order it sends them."""
        order: Dict[int, List[Tuple[int, int, int]]] = {}
        for peer, ops in enumerate(self.schedule.ops):
            if peer == self.rank:
                continue
            for op in ops:
                sent = self._message(op)
                if sent is not None and self._owner[sent[0]] == self.rank:
                    order.setdefault(peer, []).append(sent[1])
        return order

    def _tag(self, direction: int, stage: int, mb: int, part: int) -> int:
        m = self.schedule.microbatches
        return (((direction * self._n + stage) * m + mb) << 1) | part

    # ---- communication ---------------------------------------------------------------------

    def _timeout(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=self.timeout_s)

    def _send(
        self, op_i: int, op: Op, direction: int, tensor: torch.Tensor, dst_stage: int
    ) -> None:
        if self._owner[dst_stage] == self.rank:
            self._local[(direction, op.stage, op.microbatch)] = tensor.detach()
            return
        peer = self._owner[dst_stage]
        t = tensor.detach().to(self._wire_device).contiguous()
        if t.dim() > _MAX_DIMS or t.dtype not in _DTYPES:
            raise _fail(
                f"zbkit executor rank {self.rank} op {op_i} ({_op_text(op)}): cannot send a "
                f"{t.dim()}-d {t.dtype} tensor (at most {_MAX_DIMS} dims of {len(_DTYPES)} dtypes)"
            )
        head = [_MAGIC, self._fp, direction, op.stage, op.microbatch]
        head += [_DTYPES.index(t.dtype), t.dim()] + list(t.shape) + [0] * (_MAX_DIMS - t.dim())
        header = torch.tensor(head, dtype=torch.int64, device=self._wire_device)
        where = f"op {op_i} ({_op_text(op)})"
        try:
            tag = self._tag(direction, op.stage, op.microbatch, 0)
            dst = self._peer_global[peer]
            w1 = dist.isend(header, dst, group=self.group, tag=tag)
            w2 = dist.isend(t, dst, group=self.group, tag=tag + 1)
        except Exception as e:  # noqa: BLE001 - any backend failure becomes one clear line
            raise _fail(
                f"zbkit executor rank {self.rank} {where}: send to peer rank {peer} failed: "
                f"{_one_line(e)}"
            ) from e
        self._sends.append((where, peer, header, t, w1, w2))

    def _post_next_header(self, peer: int) -> None:
        queue = self._in_queue.get(peer)
        if not queue:
            return
        idx = self._in_posted.get(peer, 0)
        if idx >= len(queue):
            return
        if self._post_limit is not None and idx >= self._post_limit.get(peer, 0):
            return  # until validated, only what a restart would drain (see _restart)
        msg = queue[idx]
        if msg.header_work is not None:
            return
        msg.header = torch.empty(_HEADER_LEN, dtype=torch.int64, device=self._wire_device)
        msg.header_work = dist.irecv(
            msg.header,
            self._peer_global[peer],
            group=self.group,
            tag=self._tag(msg.direction, msg.stage, msg.microbatch, 0),
        )

    def _wait(self, work: Any, what: str) -> None:
        try:
            ok = work.wait(self._timeout())
        except Exception as e:  # noqa: BLE001
            raise _fail(f"{what}: {_one_line(e)}") from e
        if ok is False:
            raise _fail(f"{what}: timed out after {self.timeout_s:g} s")

    def _receive(self, op_i: int, op: Op, direction: int, src_stage: int) -> torch.Tensor:
        """The tensor stage `src_stage` sent towards `op`; waited for here, bounded."""
        key = (direction, src_stage, op.microbatch)
        if self._owner[src_stage] == self.rank:
            try:
                return self._local.pop(key)
            except KeyError:
                raise _fail(
                    f"zbkit executor rank {self.rank} op {op_i} ({_op_text(op)}): stage "
                    f"{src_stage} on this rank has not produced its "
                    f"{'activation' if direction == ACT else 'gradient'} yet (schedule order)"
                ) from None
        peer = self._owner[src_stage]
        where = f"zbkit executor rank {self.rank} op {op_i} ({_op_text(op)})"
        # Drain this peer's messages in its send order up to the one needed.
        while key not in self._arrived:
            self._accept_next(peer, where)
        msg = self._arrived.pop(key)
        self._wait(msg.payload_work, f"{where}: waiting for the {msg.text()} failed")
        return msg.payload

    def _accept_next(self, peer: int, where: str) -> None:
        """Waits for the header of `peer`'s next message, checks it and posts its payload."""
        queue = self._in_queue[peer]
        idx = self._in_posted.get(peer, 0)
        if idx >= len(queue):
            raise _fail(f"{where}: peer rank {peer} sends nothing more this step")
        msg = queue[idx]
        self._post_next_header(peer)
        self._wait(msg.header_work, f"{where}: waiting for the {msg.text()} failed")
        h = msg.header.tolist()
        got = (h[2], h[3], h[4])
        if h[0] != _MAGIC or h[1] != self._fp:
            raise _fail(
                f"{where}: peer rank {peer} runs a different schedule (fingerprint mismatch on "
                f"the {msg.text()})"
            )
        if got != (msg.direction, msg.stage, msg.microbatch):
            raise _fail(f"{where}: peer rank {peer} sent {got} where {msg.text()} was expected")
        if not 0 <= h[5] < len(_DTYPES) or not 0 <= h[6] <= _MAX_DIMS:
            raise _fail(f"{where}: peer rank {peer} sent a corrupt header for the {msg.text()}")
        shape = h[7 : 7 + h[6]]
        msg.payload = torch.empty(shape, dtype=_DTYPES[h[5]], device=self._wire_device)
        msg.payload_work = dist.irecv(
            msg.payload,
            self._peer_global[peer],
            group=self.group,
            tag=self._tag(msg.direction, msg.stage, msg.microbatch, 1),
        )
        self._in_posted[peer] = idx + 1
        self._post_next_header(peer)
        self._arrived[(msg.direction, msg.stage, msg.microbatch)] = msg

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
            x = self._receive(op_i, op, ACT, s - 1).to(dev)
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
                        f"zbkit executor rank {self.rank} op {op_i} ({_op_text(op)}): loss_fn "
                        f"must return a scalar tensor"
                    )
                self._losses[mb] = loss.detach().reshape(())
                out = loss * self.loss_scale
        if not isinstance(out, torch.Tensor):
            raise _fail(
                f"zbkit executor rank {self.rank} op {op_i} ({_op_text(op)}): stage {s} returned "
                f"{type(out).__name__}; stages must return one tensor"
            )
        inputs = (x,) if isinstance(x, torch.Tensor) and x.requires_grad else ()
        split.seal((out,), inputs)
        self._splits[(s, mb)] = split
        self._want_dx[(s, mb)] = s > 0 and bool(inputs)
        if not last:
            self._send(op_i, op, ACT, out, s + 1)

    def _grad_output(self, op_i: int, op: Op) -> Optional[torch.Tensor]:
        s = op.stage
        if s == self._n - 1:
            return None
        return self._receive(op_i, op, GRAD, s + 1).to(self._device[s])

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
                    f"zbkit executor rank {self.rank} op {op_i} ({_op_text(op)}): stage {s} "
                    f"output does not depend on its input, no gradient to hand upstream"
                )
            self._send(op_i, op, GRAD, dx, s - 1)

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
        self._sends: List[Any] = []
        pv = self.post_validation
        validating = pv is not None and pv.pending
        self._post_limit = dict(self._stale_in) if validating else None
        try:
            self._begin_attempt()
            while not self._run_ops(validating):
                self._restart()
                validating = False
            for where, peer, _h, _t, w1, w2 in self._sends:
                what = f"zbkit executor rank {self.rank} {where}: send to peer rank {peer} failed"
                self._wait(w1, what)
                self._wait(w2, what)
        finally:
            self._sends = []
        return [self._losses[mb] for mb in sorted(self._losses)]

    def _begin_attempt(self) -> None:
        """Fresh per-iteration state; the first header from every peer posted."""
        self._local: Dict[Tuple[int, int, int], torch.Tensor] = {}
        self._splits: Dict[Tuple[int, int], BackwardSplit] = {}
        self._want_dx: Dict[Tuple[int, int], bool] = {}
        self._losses: Dict[int, torch.Tensor] = {}
        self._arrived: Dict[Tuple[int, int, int], _Msg] = {}
        self._in_posted: Dict[int, int] = {}
        self._in_queue = {
            peer: [_Msg(d, s, mb, peer) for (d, s, mb) in msgs]
            for peer, msgs in self._incoming_order.items()
        }
        self.memory_stats = {}
        for peer in self._in_queue:
            self._post_next_header(peer)

    def _validate(self) -> bool:
        """The pending optimizer step's validation; on success the held-back headers go out."""
        ok = self.post_validation.validate()
        if ok:
            self._post_limit = None
            for peer in self._in_queue:
                self._post_next_header(peer)
        return ok

    def _restart(self) -> None:
        """After a failed validation: every peer's messages sent before its deadline were made on
        speculative weights (or inputs); receive and drop them, then start the iteration over."""
        where = f"zbkit executor rank {self.rank}, restarting after a failed post-validation"
        for peer, stale in self._stale_in.items():
            while self._in_posted.get(peer, 0) < stale:
                self._accept_next(peer, where)
            for msg in self._in_queue.get(peer, [])[:stale]:
                key = (msg.direction, msg.stage, msg.microbatch)
                if self._arrived.get(key) is msg:
                    self._wait(msg.payload_work, f"{where}: draining the {msg.text()} failed")
                    del self._arrived[key]
        self._post_limit = None
        self.restarts += 1
        self.post_validation.counts.restarts += 1
        self._begin_attempt()

    def _run_ops(self, validating: bool) -> bool:
        """This rank's ops in order; False when the pending step's validation failed (at the
        deadline, before any op that is not a speculative forward)."""
        rec = self.recorder
        report_memory = getattr(rec, "memory", None) if rec is not None else None
        deadline = self.post_validation_deadline
        for i, op in enumerate(self._ops):
            if validating:
                if i == deadline:
                    validating = False
                    if not self._validate():
                        return False
                else:
                    self.post_validation.poll()
            if rec is not None:
                rec.begin(i)
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
                raise _fail(
                    f"zbkit executor rank {self.rank} op {i} ({_op_text(op)}): {_one_line(e)}"
                ) from e
            if rec is not None:
                rec.end(i)
                if report_memory is not None:
                    report_memory(self._held_bytes())
            self._reap_sends()
        return not validating or self._validate()

    def _reap_sends(self) -> None:
        """Drops completed sends so their buffers are freed early."""
        keep = []
        for item in self._sends:
            w1, w2 = item[4], item[5]
            if not (w1.is_completed() and w2.is_completed()):
                keep.append(item)
        self._sends = keep


def _one_line(e: BaseException) -> str:
    """The first line of an exception, without a backend's source location and boilerplate."""
    lines = str(e).strip().splitlines()
    text = lines[0] if lines else type(e).__name__
    text = re.sub(r"^\[[^\]]*\.(?:cc|cpp|h):\d+\]\s*", "", text)
    text = text.split(". This is typically caused", 1)[0]
    return text

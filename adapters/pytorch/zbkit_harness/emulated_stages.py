# SPDX-License-Identifier: Apache-2.0
"""Stage modules with emulated compute, for `zb rehearse` (docs/rehearse.md).

An `EmulatedStage` is an ordinary ``nn.Module`` whose forward, input-gradient and weight-gradient
computations take exactly a profile's F, B and W durations as timed waits (sleeps, so that eight
ranks on two cores do not compete for them) and pass real tensors on: what goes between stages,
and what torch's runtime or zbkit's executor schedule, is real; only the arithmetic is replaced
by its duration. The autograd graph of one stage is

    out = Activation(x + Weight(weight))

where `Weight` is a custom function of the parameter only (forward returns zeros, backward
sleeps W) and `Activation` one of the activation only (forward sleeps F, backward sleeps B and
passes the gradient through). As in a stack of real layers, the gradient reaches the node where
the weight joins only through the activation path, so a B/W split (torch's
`stage_backward_input`/`stage_backward_weight` and zbkit's `BackwardSplit` alike) runs
`Activation`'s backward in B, also on the first stage, whose input needs no gradient, and
`Weight`'s in W; a fused backward runs both. Values pass through (the forward adds zeros and the
backward hands its gradient on), apart from the stamp below.

Each microbatch's tensors carry a stamp in their first elements (`STAMP`): the microbatch
index (the rehearsal builds the inputs and the targets so, and the loss makes the target the
output gradient), the time the tensor is ready, the rank that produced it and a mark that tells a
stamp from garbage. So every op knows
its (stage, microbatch) whichever runtime calls it and records itself in its rank's `Emulation`
(kind, stage, microbatch, start, end), and an asynchronous device knows when a message's data
exists (`Emulation` says how the two devices run). Activation memory is held as real tensors
saved for backward (M_B - M_W by `Activation`, M_W by `Weight`, scaled by `memory_scale`), so
what a runtime keeps alive, and for how long, is what it really keeps; the `Emulation` counts
them in the profile's units and keeps the peak.
"""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from zbkit._json_file import read_json
from zbkit.errors import ZbkitError

__all__ = [
    "EmulatedStage",
    "Emulation",
    "RehearsalError",
    "StageCost",
    "batch",
    "loss_fn",
    "message_width",
    "read_costs",
    "read_reduce_wait",
    "split_stages",
    "stamp_sends",
    "targets",
]


class RehearsalError(ZbkitError):
    """`zb rehearse`: an input it cannot use, or a row it cannot run (docs/rehearse.md)."""


@dataclass(frozen=True)
class StageCost:
    """One stage's profile: durations in ms, activation memory in the profile's units."""

    f_ms: float
    b_ms: float
    w_ms: float
    m_b: float = 0.0
    m_w: float = 0.0
    # Inside data parallelism (docs/data-parallel.md §5): the stage's gradient reduction and
    # FSDP's all-gather of its parameters, ms; emulated_collectives runs them.
    reduce_ms: float = 0.0
    unshard_ms: float = 0.0


COST_KEYS = ("F", "B", "W", "M_B", "M_W", "reduce", "unshard")


def _stage_cost(entry: Any) -> StageCost:
    """A zb-costs/1 stage entry's costs; a TypeError, ValueError or AttributeError if it has
    something else."""
    return StageCost(*(float(entry.get(key, 0.0)) for key in COST_KEYS))


def read_costs(path: Path) -> Tuple[List[StageCost], float]:
    """The stages (a `count` entry expanded) and the per-hop comm time (ms) of a zb-costs/1 file
    (docs/formats.md §1). The C++ reader is the strict one; `zb tune` has read the same file
    before a rehearsal runs, so this only takes out what the emulation needs."""
    where = str(path)
    doc = read_json(path, RehearsalError)
    if not isinstance(doc, dict) or doc.get("format") != "zb-costs/1":
        raise RehearsalError(f"{where}: not a zb-costs/1 profile")
    entries = doc.get("stages")
    if not isinstance(entries, list) or not entries:
        raise RehearsalError(f"{where}: field 'stages' must be a non-empty list")
    count = doc.get("count", len(entries))
    if len(entries) == 1 and isinstance(count, int) and count >= 1:
        entries = entries * count
    stages = []
    for i, entry in enumerate(entries):
        try:
            stage = _stage_cost(entry)
        except (AttributeError, TypeError, ValueError):
            raise RehearsalError(f"{where}: stages[{i}] is not a stage's costs") from None
        if not all(math.isfinite(v) and v >= 0 for v in vars(stage).values()):
            raise RehearsalError(f"{where}: stages[{i}] holds a negative or non-finite value")
        stages.append(stage)
    comm = doc.get("comm", 0.0)
    if not isinstance(comm, (int, float)) or not comm >= 0:
        raise RehearsalError(f"{where}: field 'comm' must be a number >= 0")
    return stages, float(comm)


def read_stage_costs(path: Path, num_stages: int, per_rank: int) -> List[StageCost]:
    """The costs of each of `num_stages` stages, `per_rank` on a rank: from a zb-costs/1 profile
    (one stage per rank, each split into equal chunks, split_stages), or from the costs a
    zb-schedule/1 file carries, every stage its own (what `zb partition --orders-dir` writes for
    a layer split, whose chunks differ)."""
    where = str(path)
    doc = read_json(path, RehearsalError)
    if isinstance(doc, dict) and doc.get("format") == "zb-schedule/1":
        costs = doc.get("costs")
        entries = costs.get("stages") if isinstance(costs, dict) else None
        if not isinstance(entries, list) or len(entries) != num_stages:
            raise RehearsalError(f"{where}: its costs must give each of the {num_stages} stages")
        try:
            return [_stage_cost(entry) for entry in entries]
        except (AttributeError, TypeError, ValueError):
            raise RehearsalError(f"{where}: costs.stages holds something else than costs") from None
    stages, _comm = read_costs(path)
    if len(stages) * per_rank != num_stages:
        raise RehearsalError(
            f"{where} has {len(stages)} stages; {num_stages} stages on {per_rank} per rank need "
            f"{num_stages // per_rank}"
        )
    return split_stages(stages, per_rank)


def split_stages(stages: Sequence[StageCost], chunks: int) -> List[StageCost]:
    """Each profiled stage as `chunks` consecutive equal parts: the rule of docs/cost-model.md §5
    (C++ `CostProfile::SplitStages`), which every interleaved and V schedule the tuner predicts
    is simulated under: times divided by `chunks` with the remainder nanoseconds on the first
    parts, memory divided by `chunks`. tests/test_rehearse.py checks it against the costs a
    `zb tune` schedule file carries."""
    if chunks == 1:
        return list(stages)

    def parts(ms: float) -> List[float]:
        total = round(ms * 1e6)
        base, extra = divmod(total, chunks)
        return [(base + (1 if k < extra else 0)) / 1e6 for k in range(chunks)]

    out = []
    for stage in stages:
        f, b, w = parts(stage.f_ms), parts(stage.b_ms), parts(stage.w_ms)
        # Each part reduces and gathers its share of the parameters.
        reduce, unshard = parts(stage.reduce_ms), parts(stage.unshard_ms)
        for k in range(chunks):
            out.append(StageCost(f[k], b[k], w[k], stage.m_b / chunks, stage.m_w / chunks,
                                 reduce[k], unshard[k]))  # fmt: skip
    return out


def read_reduce_wait(path: Path) -> str:
    """When a rank waits for its reductions (zb-costs/1 `reduce_wait`, or a zb-schedule/1's
    costs'): "in_place" unless the file says otherwise."""
    doc = read_json(path, RehearsalError)
    if isinstance(doc, dict) and doc.get("format") == "zb-schedule/1":
        doc = doc.get("costs")
    wait = doc.get("reduce_wait", "in_place") if isinstance(doc, dict) else "in_place"
    if wait not in REDUCE_WAITS:
        raise RehearsalError(f"{path}: field 'reduce_wait' must be in_place or step_end")
    return wait


DEVICES = ("async", "sync")
REDUCE_WAITS = ("in_place", "step_end")  # zb-costs/1 `reduce_wait` (docs/data-parallel.md §5)
# Elements [0, 0..3] of every message: microbatch, ready time (ns), producing rank and a mark
# that tells a stamp from the uninitialised buffers torch's shape inference runs a stage on.
STAMP = 4
STAMP_MARK = 2718281.0
MAX_WAIT_NS = 3600 * 10**9  # no emulated op waits an hour: a later deadline is a bug


class Emulation:
    """One rank's device, timeline and activation-memory account.

    device "sync": each computation sleeps its duration on the calling (host) thread, like a
    device the host waits for: the runtime's own time per op adds to every op. device "async": a
    GPU's stream, as the host sees it: a computation is enqueued and the host goes on; it runs
    from max(host issue, the stream's previous end, its input's ready time + hop) for its
    duration, and the host waits for the stream only in `synchronize` (end of the iteration). The
    runtime's own time then costs only where the host falls behind the stream (`host_bound_ns`:
    the time the stream sat idle waiting for the host to issue, summed). Inputs from another rank
    carry their ready time and producer (STAMP), so a hop costs `hop_ms` after the producer's end.

    memory_scale is the bytes allocated per unit of the profile's memory (the account itself
    stays in profile units)."""

    def __init__(
        self, memory_scale: float = 1.0, device: str = "sync", rank: int = 0, hop_ms: float = 0.0
    ) -> None:
        if device not in DEVICES:
            raise RehearsalError(f"unknown device {device!r} (one of {', '.join(DEVICES)})")
        self.memory_scale, self.device, self.rank = memory_scale, device, rank
        self.hop_ns = round(hop_ms * 1e6)
        self.events: List[Tuple[str, int, int, int, int]] = []  # kind, stage, mb, start, end ns
        self.live = 0.0
        self.peak = 0.0
        self.stream_free_ns = 0
        self.host_bound_ns = 0
        # A checkpointed stage's computations run in parts (one per parameter group): the parts
        # of one op gathered so far, the last finished recomputation of each (stage, microbatch)
        # not yet merged into the op it ran in, and the recomputations per (stage, microbatch).
        self._parts: Dict[Tuple[str, int, int], List[int]] = {}
        self._recomputed: Dict[Tuple[int, int], List[int]] = {}
        self.recomputes: Dict[Tuple[int, int], int] = {}
        # Inside data parallelism: the rank's emulated collectives (emulated_collectives), which
        # an op may wait for and a weight gradient may start; None outside.
        self.collectives: Optional[Any] = None

    def run(
        self, ms: float, ready_ns: int = 0, producer: int = -1, stage: int = -1
    ) -> Tuple[int, int]:
        """One computation of `ms` of `stage` whose input was ready at `ready_ns` on rank
        `producer`; its (start, end) in ns."""
        collective_ns = self.collectives.before_op(stage) if self.collectives else 0
        if self.device == "sync":
            start = sleep_until(collective_ns) if collective_ns else time.perf_counter_ns()
            return start, sleep_until(start + round(ms * 1e6))
        now = time.perf_counter_ns()
        not_before = ready_ns + (self.hop_ns if ready_ns and producer != self.rank else 0)
        not_before = max(not_before, collective_ns)
        queue_ready = max(self.stream_free_ns, not_before)
        self.host_bound_ns += max(0, now - queue_ready)
        start = max(now, queue_ready)
        self.stream_free_ns = start + round(ms * 1e6)
        return start, self.stream_free_ns

    def synchronize(self) -> None:
        """Waits for the stream (async; the sync device has nothing pending) and the rank's
        collectives."""
        end = self.stream_free_ns if self.device == "async" else 0
        if self.collectives:
            end = max(end, self.collectives.finish())
        sleep_until(end)

    def record(self, kind: str, stage: int, microbatch: int, span: Tuple[int, int]) -> None:
        if microbatch >= 0:
            self.events.append((kind, stage, microbatch, span[0], span[1]))
            if kind == "W" and self.collectives:
                self.collectives.weight_done(stage, span[1])

    def record_part(
        self, kind: str, stage: int, microbatch: int, span: Tuple[int, int], parts: int
    ) -> None:
        """One of the `parts` parts of an op of a checkpointed stage (kind F, B, W, or R for a
        recomputation of the stage's forward): the op is recorded once all its parts ran, from
        its first part's start to its last's end. A recomputation is counted and becomes part of
        the B or W that triggered it (its span starts there), as on a device, where the
        recomputation is inside that backward."""
        if microbatch < 0:
            return
        key = (kind, stage, microbatch)
        gathered = self._parts.setdefault(key, [span[0], span[1], 0])
        gathered[0], gathered[1] = min(gathered[0], span[0]), max(gathered[1], span[1])
        gathered[2] += 1
        if kind != "R":
            recomputation = self._recomputed.pop((stage, microbatch), None)
            if recomputation is not None:
                gathered[0] = min(gathered[0], recomputation[0])
        if gathered[2] < parts:
            return
        del self._parts[key]
        if kind == "R":
            self._recomputed[(stage, microbatch)] = gathered[:2]
            self.recomputes[(stage, microbatch)] = self.recomputes.get((stage, microbatch), 0) + 1
        else:
            self.record(kind, stage, microbatch, (gathered[0], gathered[1]))

    def hold(self, units: float) -> torch.Tensor:
        """A real tensor standing for `units` of activation memory, counted until it is freed."""
        tensor = torch.empty(max(1, round(units * self.memory_scale)), dtype=torch.uint8)
        self.live += units
        self.peak = max(self.peak, self.live)
        weakref.finalize(tensor, self._release, units)
        return tensor

    def _release(self, units: float) -> None:
        self.live -= units

    def reset(self, start_ns: int) -> None:
        """Starts a new iteration at `start_ns`: its timeline, peak (what is still held stays
        counted) and host-bound time; the stream is idle from then."""
        self.events.clear()
        self._parts.clear()
        self._recomputed.clear()
        self.recomputes.clear()
        self.peak = self.live
        self.stream_free_ns = start_ns
        self.host_bound_ns = 0
        if self.collectives:
            self.collectives.begin(start_ns)


def sleep_until(deadline_ns: int) -> int:
    """Sleeps to a deadline rather than for a duration, so that a sleep's overshoot is not
    added twice; the time it woke."""
    while True:
        now = time.perf_counter_ns()
        if now >= deadline_ns:
            return now
        if deadline_ns - now > MAX_WAIT_NS:
            raise RehearsalError(
                f"emulated device: a deadline {(deadline_ns - now) / 1e9:.0f} s away (a stamp "
                "that is not one?)"
            )
        time.sleep((deadline_ns - now) / 1e9)


def _stamp_of(tensor: torch.Tensor) -> Tuple[int, int, int]:
    """(microbatch, ready ns, producing rank) of a message; microbatch -1 for a tensor that
    carries none (torch's shape inference runs a stage once on uninitialised buffers)."""
    flat = tensor.detach().reshape(-1)
    if flat.numel() < STAMP:
        return -1, 0, -1
    microbatch, ready, producer, mark = flat[:STAMP].tolist()
    if mark != STAMP_MARK or not all(
        math.isfinite(v) and v == int(v) for v in (microbatch, ready, producer)
    ):
        return -1, 0, -1
    if not (0 <= microbatch < 2**31 and 0 <= ready < 2**62 and -1 <= producer < 2**20):
        return -1, 0, -1
    return int(microbatch), int(ready), int(producer)


def _stamped(tensor: torch.Tensor, end_ns: int, rank: int) -> torch.Tensor:
    """A copy of `tensor` whose stamp says it is ready at `end_ns` on `rank`."""
    out = tensor.clone()
    flat = out.view(-1)
    if flat.numel() >= STAMP:
        flat[1], flat[2] = float(end_ns), float(rank)
    return out


def stamp_sends(emulation: Emulation) -> None:
    """Makes every message this process sends ready when the emulated stream reaches the send.

    On a GPU the runtime's send waits for everything enqueued on the compute stream before the
    send was called (NCCL waits on an event recorded then), not only for the op that produced
    the tensor: after a fused backward the input gradient leaves once the weight gradient is
    done too. So each point-to-point send of a stamped tensor from this rank gets the stream's
    current end as its ready time. torch's pipelining (`_batch_p2p`, `batch_isend_irecv`) and
    zbkit's executor send through `torch.distributed.isend`; the wrapper replaces it in both
    modules that hold it, so `P2POp`'s check of its op still recognises it."""
    if emulation.device != "async":
        return
    import torch.distributed as dist  # noqa: PLC0415
    from torch.distributed import distributed_c10d  # noqa: PLC0415

    original = distributed_c10d.isend
    if getattr(original, "_zbkit_stamps", False):
        return

    def isend(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        microbatch, ready, producer = _stamp_of(tensor)
        if microbatch >= 0 and producer == emulation.rank and tensor.dtype == torch.float64:
            tensor.view(-1)[1] = float(max(ready, emulation.stream_free_ns))
        return original(tensor, *args, **kwargs)

    isend._zbkit_stamps = True  # type: ignore[attr-defined]
    distributed_c10d.isend = isend
    dist.isend = isend


class _Activation(torch.autograd.Function):
    """The stage's input path: F forward, B backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, stage: "EmulatedStage") -> torch.Tensor:  # type: ignore[override]
        emulation, cost = stage.emulation, stage.cost
        microbatch, ready, producer = _stamp_of(x)
        span = emulation.run(cost.f_ms, ready, producer, stage.stage)
        emulation.record("F", stage.stage, microbatch, span)
        ctx.save_for_backward(emulation.hold(max(0.0, cost.m_b - cost.m_w)))
        ctx.stage = stage
        return _stamped(x, span[1], emulation.rank)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        stage = ctx.stage
        emulation = stage.emulation
        microbatch, ready, producer = _stamp_of(grad)
        span = emulation.run(stage.cost.b_ms, ready, producer, stage.stage)
        emulation.record("B", stage.stage, microbatch, span)
        # What W reads beyond what F left (M_W > M_B: blocks checkpointed inside the stage,
        # recomputed in B, docs/memory-plan.md) exists from B until W.
        extra = stage.cost.m_w - stage.cost.m_b
        if extra > 0:
            stage.read_by_w.setdefault(microbatch, []).append(emulation.hold(extra))
        return _stamped(grad, span[1], emulation.rank), None


class _Weight(torch.autograd.Function):
    """The stage's parameter path: nothing in the forward, W backward."""

    @staticmethod
    def forward(ctx, weight: torch.Tensor, stage: "EmulatedStage") -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(stage.emulation.hold(min(stage.cost.m_w, stage.cost.m_b)))
        ctx.stage = stage
        return torch.zeros_like(weight)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        stage = ctx.stage
        microbatch, ready, producer = _stamp_of(grad)
        held = stage.read_by_w.get(microbatch)
        if held:
            held.pop()  # freed with W
            if not held:
                del stage.read_by_w[microbatch]
        span = stage.emulation.run(stage.cost.w_ms, ready, producer, stage.stage)
        stage.emulation.record("W", stage.stage, microbatch, span)
        return grad, None


def _recomputing() -> bool:
    """Whether a checkpointed region's forward runs as a recomputation: inside a backward (torch's
    checkpoint recomputes from a saved tensor's unpack hook, in the graph task that unpacks it),
    not as the step's forward."""
    return torch._C._current_graph_task_id() != -1


class _CheckpointedPart(torch.autograd.Function):
    """One of a checkpointed stage's `param_groups` consecutive parts on the input path: F / g
    forward (each time the region runs: the forward, then every recomputation), (B - F) / g
    backward (the profile's B holds one recomputation, which the region's re-run forward now
    takes)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, stage: "EmulatedStage") -> torch.Tensor:  # type: ignore[override]
        emulation, groups = stage.emulation, stage.param_groups
        microbatch, ready, producer = _stamp_of(x)
        span = emulation.run(stage.cost.f_ms / groups, ready, producer, stage.stage)
        kind = "R" if _recomputing() else "F"
        emulation.record_part(kind, stage.stage, microbatch, span, groups)
        ctx.save_for_backward(_NOTHING)  # something saved: the checkpoint recomputes to unpack it
        ctx.stage = stage
        return _stamped(x, span[1], emulation.rank)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        ctx.saved_tensors  # noqa: B018 -- unpacking is what makes torch's checkpoint recompute
        stage = ctx.stage
        emulation, groups = stage.emulation, stage.param_groups
        microbatch, ready, producer = _stamp_of(grad)
        backward_ms = max(0.0, stage.cost.b_ms - stage.cost.f_ms) / groups
        span = emulation.run(backward_ms, ready, producer, stage.stage)
        emulation.record_part("B", stage.stage, microbatch, span, groups)
        return _stamped(grad, span[1], emulation.rank), None


class _CheckpointedWeight(torch.autograd.Function):
    """One parameter group of a checkpointed stage: W / g backward. What W reads beyond the
    checkpoint's inputs (M_W - M_B, shared by the groups) exists only once the region has been
    recomputed: the forward saves nothing of it, a recomputation saves it as real tensors."""

    @staticmethod
    def forward(ctx, weight: torch.Tensor, stage: "EmulatedStage") -> torch.Tensor:  # type: ignore[override]
        cost = stage.cost
        read = max(0.0, cost.m_w - cost.m_b) / stage.param_groups
        ctx.save_for_backward(stage.emulation.hold(read) if _recomputing() else _NOTHING)
        ctx.stage = stage
        return torch.zeros_like(weight)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        ctx.saved_tensors  # noqa: B018 -- unpacking is what makes torch's checkpoint recompute
        stage = ctx.stage
        microbatch, ready, producer = _stamp_of(grad)
        span = stage.emulation.run(
            stage.cost.w_ms / stage.param_groups, ready, producer, stage.stage
        )
        stage.emulation.record_part("W", stage.stage, microbatch, span, stage.param_groups)
        return grad, None


_NOTHING = torch.empty(0, dtype=torch.uint8)


def message_width(message_bytes: int) -> int:
    """Elements per microbatch of a message of about `message_bytes` (float64, room for the
    stamp)."""
    return max(STAMP, message_bytes // 8)


class _Region(nn.Module):
    """The checkpointed body of a stage: `param_groups` parts in a row, each `part(h + weight)`."""

    def __init__(self, stage: "EmulatedStage", width: int) -> None:
        super().__init__()
        self.weights = nn.ParameterList(
            nn.Parameter(torch.zeros(width, dtype=torch.float64)) for _ in range(stage.param_groups)
        )
        self._stage = [stage]  # not a submodule: the stage holds this region

    def forward(self, x: torch.Tensor, _kept: torch.Tensor) -> torch.Tensor:
        stage = self._stage[0]
        for weight in self.weights:
            x = _CheckpointedPart.apply(x + _CheckpointedWeight.apply(weight, stage), stage)
        return x


class EmulatedStage(nn.Module):
    """Stage `stage` of a pipeline, taking `cost`'s durations; its tensors are `width` (>= STAMP)
    float64 per microbatch.

    With `param_groups` g >= 1 the stage is one fully checkpointed block, as a trainer builds it
    (torch's `checkpoint_wrapper`, non-reentrant: what torchtitan's full AC uses): g parts in a
    row, each `part(h + weight_g)`, so that torch's split finds g parameter groups, as it finds 9
    in torchtitan's Llama 3 block (docs/rehearse.md §6). What the checkpoint keeps from the
    forward stands for M_B (a tensor among its inputs), the recomputation allocates what W reads
    (M_W - M_B); so a runtime that recomputes once holds M_W from B to W, and torch's own split
    pays, and holds, what it really does."""

    def __init__(
        self, stage: int, cost: StageCost, width: int, emulation: Emulation, param_groups: int = 0
    ) -> None:
        super().__init__()
        self.stage, self.cost, self.emulation = stage, cost, emulation
        self.param_groups = param_groups
        self.read_by_w: Dict[int, list] = {}  # microbatch -> what its B allocated for its W
        if not param_groups:
            self.weight = nn.Parameter(torch.zeros(width, dtype=torch.float64))
            return
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: PLC0415
            CheckpointImpl,
            checkpoint_wrapper,
        )

        # The recomputation saves more than the forward did (what W reads): no metadata check.
        self.block = checkpoint_wrapper(_Region(self, width),
                                        checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                        determinism_check="none")  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.param_groups:
            return _Activation.apply(x + _Weight.apply(self.weight, self), self)
        kept = self.emulation.hold(self.cost.m_b)  # an input: the checkpoint keeps it until W
        return self.block(x, kept)


def batch(microbatches: int, width: int) -> torch.Tensor:
    """The first stage's input: one row per microbatch, row i tagged i."""
    x = torch.zeros(microbatches, width, dtype=torch.float64)
    x[:, 0] = torch.arange(microbatches, dtype=x.dtype)
    x[:, 2] = -1.0  # produced by no rank
    x[:, 3] = STAMP_MARK
    return x


def targets(microbatches: int, width: int) -> torch.Tensor:
    """The loss's targets: `loss_fn` makes them the output gradient, row i tagged i."""
    y = torch.zeros(microbatches, width, dtype=torch.float64)
    y[:, 0] = torch.arange(microbatches, dtype=y.dtype)
    y[:, 2] = -1.0
    y[:, 3] = STAMP_MARK
    return y


def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(output * target).sum(): its gradient with respect to the output is the target, which
    carries the microbatch's tag back through every stage."""
    return (output * target).sum()


def timeline(emulation: Emulation, rank: int, origin_ns: int) -> Dict[str, Any]:
    """The recorded ops of one iteration, times in ms from `origin_ns`."""
    return {
        "rank": rank,
        "ops": [
            {"type": kind, "stage": stage, "mb": mb,
             "start": (start - origin_ns) / 1e6, "end": (end - origin_ns) / 1e6}
            for kind, stage, mb, start, end in emulation.events
        ],
    }  # fmt: skip

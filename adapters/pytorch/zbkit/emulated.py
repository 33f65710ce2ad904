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
`Weight`'s in W; a fused backward runs both. Values pass through unchanged: the forward adds
zeros and the backward hands its gradient on.

Each microbatch's tensors carry its index in element [0, 0] (the rehearsal builds the inputs and
the loss so that they do: `batch`, `targets`, `loss_fn`), so every op knows its (stage,
microbatch) whichever runtime calls it, and records itself in the process's `Emulation`: kind,
stage, microbatch, start and end. Activation memory is held as real tensors saved for backward
(M_B - M_W by `Activation`, M_W by `Weight`, scaled by `memory_scale`), so what a runtime keeps
alive, and for how long, is what it really keeps; the `Emulation` counts them in the profile's
units and keeps the peak.
"""

from __future__ import annotations

import json
import math
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import torch
from torch import nn

from .errors import ZbkitError

__all__ = [
    "EmulatedStage",
    "Emulation",
    "RehearsalError",
    "StageCost",
    "batch",
    "loss_fn",
    "read_costs",
    "split_stages",
    "targets",
]


class RehearsalError(ZbkitError):
    """A rehearsal's input is unusable or one of its jobs failed."""


@dataclass(frozen=True)
class StageCost:
    """One stage's profile: durations in ms, activation memory in the profile's units."""

    f_ms: float
    b_ms: float
    w_ms: float
    m_b: float = 0.0
    m_w: float = 0.0


def read_costs(path: Path) -> Tuple[List[StageCost], float]:
    """The stages (a `count` entry expanded) and the per-hop comm time (ms) of a zb-costs/1 file
    (docs/formats.md §1). The C++ reader is the strict one; `zb tune` has read the same file
    before a rehearsal runs, so this only takes out what the emulation needs."""
    where = str(path)
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as error:
        raise RehearsalError(f"{where}: cannot read ({error.strerror})") from None
    except ValueError as error:
        raise RehearsalError(f"{where}: not JSON ({error})") from None
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
            values = [float(entry.get(k, 0.0)) for k in ("F", "B", "W", "M_B", "M_W")]
        except (AttributeError, TypeError, ValueError):
            raise RehearsalError(f"{where}: stages[{i}] is not a stage's costs") from None
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise RehearsalError(f"{where}: stages[{i}] holds a negative or non-finite value")
        stages.append(StageCost(*values))
    comm = doc.get("comm", 0.0)
    if not isinstance(comm, (int, float)) or not comm >= 0:
        raise RehearsalError(f"{where}: field 'comm' must be a number >= 0")
    return stages, float(comm)


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
        for k in range(chunks):
            out.append(StageCost(f[k], b[k], w[k], stage.m_b / chunks, stage.m_w / chunks))
    return out


class Emulation:
    """One process's clock, timeline and activation-memory account. memory_scale is the bytes
    allocated per unit of the profile's memory (the account itself stays in profile units)."""

    def __init__(self, memory_scale: float = 1.0) -> None:
        self.memory_scale = memory_scale
        self.events: List[Tuple[str, int, int, int, int]] = []  # kind, stage, mb, start, end ns
        self.live = 0.0
        self.peak = 0.0

    def wait(self, ms: float) -> Tuple[int, int]:
        """Sleeps `ms` measured from now, to the deadline rather than for a duration,
        so that the sleep's own overshoot is not added twice; (start, end) in ns."""
        start = time.perf_counter_ns()
        deadline = start + round(ms * 1e6)
        while True:
            left = deadline - time.perf_counter_ns()
            if left <= 0:
                break
            time.sleep(left / 1e9)
        return start, time.perf_counter_ns()

    def record(self, kind: str, stage: int, microbatch: int, span: Tuple[int, int]) -> None:
        if microbatch >= 0:
            self.events.append((kind, stage, microbatch, span[0], span[1]))

    def hold(self, units: float) -> torch.Tensor:
        """A real tensor standing for `units` of activation memory, counted until it is freed."""
        tensor = torch.empty(max(1, round(units * self.memory_scale)), dtype=torch.uint8)
        self.live += units
        self.peak = max(self.peak, self.live)
        weakref.finalize(tensor, self._release, units)
        return tensor

    def _release(self, units: float) -> None:
        self.live -= units

    def reset(self) -> None:
        """Starts a new iteration's timeline and peak (what is still held stays counted)."""
        self.events.clear()
        self.peak = self.live


def _microbatch_of(tensor: torch.Tensor) -> int:
    """The tag; -1 for a tensor that carries none (torch's shape inference runs a stage once on
    uninitialised buffers before the first step)."""
    tag = tensor.reshape(-1)[0].item()
    return int(tag) if math.isfinite(tag) and tag >= 0 and tag == int(tag) else -1


class _Activation(torch.autograd.Function):
    """The stage's input path: F forward, B backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, stage: "EmulatedStage") -> torch.Tensor:  # type: ignore[override]
        emulation, cost = stage.emulation, stage.cost
        span = emulation.wait(cost.f_ms)
        emulation.record("F", stage.stage, _microbatch_of(x), span)
        ctx.save_for_backward(emulation.hold(max(0.0, cost.m_b - cost.m_w)))
        ctx.stage = stage
        return x.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        stage = ctx.stage
        span = stage.emulation.wait(stage.cost.b_ms)
        stage.emulation.record("B", stage.stage, _microbatch_of(grad), span)
        return grad, None


class _Weight(torch.autograd.Function):
    """The stage's parameter path: nothing in the forward, W backward."""

    @staticmethod
    def forward(ctx, weight: torch.Tensor, stage: "EmulatedStage") -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(stage.emulation.hold(stage.cost.m_w))
        ctx.stage = stage
        return torch.zeros_like(weight)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        stage = ctx.stage
        span = stage.emulation.wait(stage.cost.w_ms)
        stage.emulation.record("W", stage.stage, _microbatch_of(grad), span)
        return grad, None


class EmulatedStage(nn.Module):
    """Stage `stage` of a pipeline, taking `cost`'s durations; its tensors are `width` floats
    per microbatch."""

    def __init__(self, stage: int, cost: StageCost, width: int, emulation: Emulation) -> None:
        super().__init__()
        self.stage, self.cost, self.emulation = stage, cost, emulation
        self.weight = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Activation.apply(x + _Weight.apply(self.weight, self), self)


def batch(microbatches: int, width: int) -> torch.Tensor:
    """The first stage's input: one row per microbatch, row i tagged i."""
    x = torch.zeros(microbatches, width)
    x[:, 0] = torch.arange(microbatches, dtype=x.dtype)
    return x


def targets(microbatches: int, width: int) -> torch.Tensor:
    """The loss's targets: `loss_fn` makes them the output gradient, row i tagged i."""
    y = torch.zeros(microbatches, width)
    y[:, 0] = torch.arange(microbatches, dtype=y.dtype)
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

# SPDX-License-Identifier: Apache-2.0
"""Optimizer post-validation: gradient clipping and the Inf/NaN check without a pipeline barrier.

Before an ordinary optimizer step a pipeline must agree on two global values: the gradient norm
over every rank's parameters (for clipping) and whether any gradient is Inf/NaN (skip the step).
`SynchronousGradientStep` does that the usual way, with one all-reduce that every rank waits for.
`PostValidatedOptimizer` removes the wait (ZB paper, section 4; docs/post-validation.md):

1. **Partial reduction.** At the end of iteration k rank r receives the partial state (sum of
   squared gradient norms and an Inf/NaN flag) of ranks 0..r-1 from rank r-1, adds its own and
   sends it on to rank r+1. Rank r-1's message is the only wait, and rank r-1 finished first.
2. **Speculative step.** The partial norm is a lower bound of the global one, so if the partial
   state already says clip or skip the rank does not step yet; otherwise it steps, keeping what it
   needs to undo the step and the gradients.
3. **Full state back.** The last rank holds the global state: it steps exactly and sends the state
   back towards rank 0, each rank forwarding it, while iteration k+1's warm-up forwards run
   (`PipelineExecutor(post_validation=...)` checks at every op and forwards it at once).
4. **Validate** before the first op of iteration k+1 that is not a chunk-0 forward (the executor's
   deadline; only those ran on speculative weights): if the global state says Inf/NaN the
   speculative step is rolled back and skipped; if it says clip, it is rolled back and redone
   with the clipped gradients. Either way iteration k+1 restarts from its first op on every rank
   (the executor drains the forwards sent on speculative weights), so results equal the
   synchronous step's.

Rollback is exact either by a snapshot (``rollback="snapshot"``: parameters and optimizer state
copied before each speculative step; bit-for-bit equal, any optimizer, one copy of memory) or in
place (``rollback="in-place"``: the step inverted algebraically for SGD with momentum, Adam and
AdamW, no extra memory, equal to rounding).

Both classes add the ranks' squared norms in rank order in float64, so the global norm, the clip
factor and therefore every parameter are bit-for-bit the same in the two.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from ._p2p import TAG_GLOBAL, TAG_PARTIAL, StateWire, wait_bounded, wire_device
from .errors import ZbkitPostValidationError

__all__ = [
    "GradientState",
    "PostValidatedOptimizer",
    "StepCounts",
    "SynchronousGradientStep",
    "ZbkitPostValidationError",
]

ROLLBACKS = ("snapshot", "in-place")
_CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s: coefficient max_norm / (norm + 1e-6)


@dataclass(frozen=True)
class GradientState:
    """A (partially) reduced gradient state: the sum of squared L2 norms and an Inf/NaN flag."""

    sum_sq: float = 0.0
    found_inf: bool = False

    def plus(self, other: "GradientState") -> "GradientState":
        return GradientState(self.sum_sq + other.sum_sq, self.found_inf or other.found_inf)

    @property
    def norm(self) -> float:
        return math.sqrt(self.sum_sq) if not self.found_inf else math.inf

    def action(self, max_norm: Optional[float]) -> Tuple[str, float]:
        """("skip", 0) on Inf/NaN, ("clip", coefficient) when the norm exceeds max_norm, else
        ("step", 1): torch.nn.utils.clip_grad_norm_'s rule, which scales by
        max_norm / (norm + 1e-6) when that is below 1."""
        if self.found_inf:
            return "skip", 0.0
        if max_norm is not None:
            coefficient = max_norm / (math.sqrt(self.sum_sq) + _CLIP_EPS)
            if coefficient < 1.0:
                return "clip", coefficient
        return "step", 1.0


@dataclass
class StepCounts:
    """What the steps did: clipped, skipped (Inf/NaN), rolled back, and the time spent waiting."""

    steps: int = 0
    clipped: int = 0
    skipped: int = 0
    rollbacks: int = 0  # speculative steps undone
    restarts: int = 0  # iterations restarted after a failed validation (executor's count)
    wait_s: List[float] = field(default_factory=list)  # per step: blocked on the other ranks
    norms: List[float] = field(default_factory=list)  # per step: the global gradient norm


def _parameters(optimizer: torch.optim.Optimizer) -> List[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


def local_state(parameters: List[torch.Tensor]) -> GradientState:
    """This rank's squared gradient norm: each gradient's norm in its own dtype (as
    clip_grad_norm_ computes it, without a float64 copy), squared and added in float64 in
    parameter order; one device synchronization."""
    grads = [p.grad.detach() for p in parameters if p.grad is not None]
    if not grads:
        return GradientState()
    device = grads[0].device
    norms = torch.stack([torch.linalg.vector_norm(g).to(device, torch.float64) for g in grads])
    sum_sq = 0.0
    for norm in norms.tolist():
        sum_sq += norm * norm
    return GradientState(sum_sq, not math.isfinite(sum_sq))


def _apply(optimizer: torch.optim.Optimizer, action: str, coefficient: float) -> None:
    """The synchronous step for a global decision (shared by both classes, so they agree)."""
    if action == "skip":
        return
    if action == "clip":
        for p in _parameters(optimizer):
            if p.grad is not None:
                p.grad.detach().mul_(coefficient)
    optimizer.step()


def _count(counts: StepCounts, action: str, state: GradientState) -> None:
    counts.steps += 1
    counts.norms.append(state.norm)
    counts.clipped += action == "clip"
    counts.skipped += action == "skip"


class _Wire(StateWire):
    """The gradient-state messages of one rank (zbkit._p2p.StateWire) as GradientStates."""

    def __init__(self, rank: int, group: Any, device: torch.device, timeout_s: float) -> None:
        super().__init__(rank, group, device, timeout_s, self.error)

    def send_state(self, state: "GradientState", step: int, to: int, tag: int) -> Any:
        return self.send(state.sum_sq, state.found_inf, step, to, tag)

    def wait_state(
        self, posted: Tuple[Any, torch.Tensor], source: int, step: int
    ) -> "GradientState":
        return GradientState(*self.wait(posted, source, step))

    def error(self, text: str) -> ZbkitPostValidationError:
        return ZbkitPostValidationError(f"zbkit post-validation rank {self.rank}: {text}")


def _check_ranks(rank: int, ranks: int, group: Any) -> None:
    if ranks < 1 or not 0 <= rank < ranks:
        raise ZbkitPostValidationError(f"zbkit post-validation: rank {rank} outside 0..{ranks - 1}")
    if ranks > 1 and not (dist.is_available() and dist.is_initialized()):
        raise ZbkitPostValidationError(
            f"zbkit post-validation rank {rank}: torch.distributed is not initialized for "
            f"{ranks} ranks"
        )
    if ranks > 1 and (dist.get_world_size(group), dist.get_rank(group)) != (ranks, rank):
        raise ZbkitPostValidationError(
            f"zbkit post-validation rank {rank}: the process group is rank "
            f"{dist.get_rank(group)} of {dist.get_world_size(group)}, expected {rank} of {ranks}"
        )


class SynchronousGradientStep:
    """The baseline: clip and Inf/NaN-check with one all-reduce over the pipeline, then step.

    Every rank puts its squared norm at its own index of a vector and the vector is summed, so the
    global norm is added in rank order like the post-validation chain's (adding zeros is exact).
    ``counts.wait_s`` holds the time each step spent in the all-reduce: the barrier."""

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        rank: int,
        ranks: int,
        group: Any = None,
        max_norm: Optional[float] = None,
        timeout_s: float = 300.0,
    ) -> None:
        _check_ranks(rank, ranks, group)
        self.optimizer, self.rank, self.ranks, self.group = optimizer, rank, ranks, group
        self.max_norm = max_norm
        self.timeout_s = timeout_s
        self.counts = StepCounts()
        self._device = wire_device(group) if ranks > 1 else torch.device("cpu")

    def _error(self, text: str) -> ZbkitPostValidationError:
        return ZbkitPostValidationError(f"zbkit synchronous step rank {self.rank}: {text}")

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def waited_s(self) -> float:
        """All the time spent waiting on the other ranks so far."""
        return sum(self.counts.wait_s)

    def step(self) -> str:
        """Clips or skips by the global state and steps; returns "step", "clip" or "skip"."""
        local = local_state(_parameters(self.optimizer))
        start = time.perf_counter()
        if self.ranks > 1:
            vector = torch.zeros(2 * self.ranks, dtype=torch.float64, device=self._device)
            vector[self.rank] = local.sum_sq
            vector[self.ranks + self.rank] = float(local.found_inf)
            work = dist.all_reduce(vector, group=self.group, async_op=True)
            wait_bounded(work, self.timeout_s, "the all-reduce", self._error)
            values = vector.tolist()
            total = GradientState(values[0], values[self.ranks] != 0.0)
            for r in range(1, self.ranks):
                total = total.plus(GradientState(values[r], values[self.ranks + r] != 0.0))
        else:
            total = local
        self.counts.wait_s.append(time.perf_counter() - start)
        action, coefficient = total.action(self.max_norm)
        _apply(self.optimizer, action, coefficient)
        _count(self.counts, action, total)
        return action

    def finish(self) -> None:
        """Nothing is pending in a synchronous step (the same interface as the other class)."""


class _RollbackSnapshot:
    """Parameters and optimizer state copied before a speculative step; restores bit-for-bit."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.params = [(p, p.detach().clone()) for p in _parameters(optimizer)]
        self.state = {
            p: {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in s.items()}
            for p, s in optimizer.state.items()
        }

    def restore(self, optimizer: torch.optim.Optimizer) -> None:
        with torch.no_grad():
            for p, saved in self.params:
                p.copy_(saved)
        for p, _ in self.params:
            if p in self.state:
                optimizer.state[p] = self.state[p]
            else:
                optimizer.state.pop(p, None)


class _InPlaceRollback:
    """Undoes one step of SGD (momentum, dampening, Nesterov, weight decay), Adam or AdamW by
    inverting its update (the paper's Algorithm 1 for AdamW), in float64, with the same gradients
    and hyperparameters; a state that the step created is deleted, so the first step is exact."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.kind = _in_place_kind(optimizer)
        self.had_state = {p: bool(optimizer.state.get(p)) for p in _parameters(optimizer)}

    def restore(self, optimizer: torch.optim.Optimizer) -> None:
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue  # torch's optimizers skip these too
                    undo = self._undo_sgd if self.kind == "sgd" else self._undo_adam
                    undo(optimizer, group, p)
                    if not self.had_state[p]:
                        optimizer.state.pop(p, None)

    @staticmethod
    def _undo_sgd(optimizer: torch.optim.Optimizer, group: Dict[str, Any], p: Any) -> None:
        lr, wd, mu = group["lr"], group["weight_decay"], group["momentum"]
        g = p.grad.double()
        if group.get("maximize", False):
            g = -g
        theta = p.double()
        state = optimizer.state.get(p, {})
        buf = state.get("momentum_buffer")
        if mu == 0 or buf is None:  # plain SGD: theta' = theta (1 - lr wd) - lr g
            old = (theta + lr * g) / (1 - lr * wd)
        else:
            b = buf.double()
            if group["nesterov"]:  # theta' = theta - lr (g + wd theta + mu b')
                old = (theta + lr * (g + mu * b)) / (1 - lr * wd)
            else:  # theta' = theta - lr b'
                old = theta + lr * b
            # b' = mu b + (1 - dampening) (g + wd theta)
            buf.copy_((b - (1 - group["dampening"]) * (g + wd * old)) / mu)
        p.copy_(old)

    @staticmethod
    def _undo_adam(optimizer: torch.optim.Optimizer, group: Dict[str, Any], p: Any) -> None:
        state = optimizer.state[p]
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        t = float(state["step"])
        m, v = state["exp_avg"].double(), state["exp_avg_sq"].double()
        g = p.grad.double()
        if group.get("maximize", False):
            g = -g
        step_size = lr / (1 - beta1**t)
        update = step_size * m / (v.sqrt() / math.sqrt(1 - beta2**t) + eps)
        theta = p.double() + update
        decoupled = isinstance(optimizer, torch.optim.AdamW) or group.get("decoupled_weight_decay")
        if decoupled:  # AdamW: theta' = theta (1 - lr wd) - update
            theta = theta / (1 - lr * wd)
        elif wd != 0:  # Adam: the L2 term was added to the gradient
            g = g + wd * theta
        state["exp_avg"].copy_((m - (1 - beta1) * g) / beta1)
        state["exp_avg_sq"].copy_(((v - (1 - beta2) * g * g) / beta2).clamp_(min=0))
        if isinstance(state["step"], torch.Tensor):
            state["step"].sub_(1)
        else:
            state["step"] = t - 1
        p.copy_(theta)


def _in_place_kind(optimizer: torch.optim.Optimizer) -> str:
    name = type(optimizer).__name__
    if isinstance(optimizer, torch.optim.SGD):
        return "sgd"
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        if any(group.get("amsgrad") for group in optimizer.param_groups):
            raise ZbkitPostValidationError(
                f"zbkit post-validation: {name}(amsgrad=True) cannot be rolled back in place (its "
                f"running maximum forgets); use rollback='snapshot'"
            )
        return "adam"
    raise ZbkitPostValidationError(
        f"zbkit post-validation: no in-place rollback for {name} (SGD, Adam and AdamW have one); "
        f"use rollback='snapshot'"
    )


def _hyperparameters(optimizer: torch.optim.Optimizer) -> List[Dict[str, Any]]:
    return [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]


def _set_hyperparameters(optimizer: torch.optim.Optimizer, values: List[Dict[str, Any]]) -> None:
    for group, saved in zip(optimizer.param_groups, values):
        group.update(saved)


class PostValidatedOptimizer:
    """Wraps a torch.optim optimizer on one pipeline rank; see the module doc.

    Use ``step()`` and ``zero_grad()`` as usual, and pass the object to the PipelineExecutor
    (``post_validation=``), which validates the step during the next iteration; call ``finish()``
    after the last iteration (it validates the last step). ``zero_grad()`` is held back until the
    step is validated: the gradients are what a rollback and a redone clipped step need.

    Args:
        optimizer: the user's optimizer over this rank's parameters.
        rank, ranks: this rank's place in the pipeline (the partial state flows 0 -> ranks-1).
        group: the process group the executor uses (None: the default group).
        max_norm: clip the global gradient norm to this (None: only the Inf/NaN check).
        rollback: "snapshot" (exact for any optimizer) or "in-place" (SGD, Adam, AdamW).
        timeout_s: bound on every wait for a peer.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        rank: int,
        ranks: int,
        group: Any = None,
        max_norm: Optional[float] = None,
        rollback: str = "snapshot",
        timeout_s: float = 300.0,
    ) -> None:
        _check_ranks(rank, ranks, group)
        if rollback not in ROLLBACKS:
            raise ZbkitPostValidationError(
                f"zbkit post-validation: rollback {rollback!r} is not one of {', '.join(ROLLBACKS)}"
            )
        if max_norm is not None and not max_norm > 0:
            raise ZbkitPostValidationError(f"zbkit post-validation: max_norm {max_norm} is not > 0")
        if rollback == "in-place":
            _in_place_kind(optimizer)  # fails now, not at the first rollback
        self.optimizer, self.rank, self.ranks, self.group = optimizer, rank, ranks, group
        self.max_norm = max_norm
        self.rollback = rollback
        self.counts = StepCounts()
        device = wire_device(group) if ranks > 1 else torch.device("cpu")
        self._wire = _Wire(rank, group, device, timeout_s)
        self._step = 0
        self._pending = False
        self._global: Optional[GradientState] = None
        self._posted_global: Optional[Tuple[Any, torch.Tensor]] = None
        self._forwarded = False
        self._stepped = False
        self._undo: Any = None
        self._hyper: List[Dict[str, Any]] = []
        self._zero_requested: Optional[bool] = None
        self._sends: List[Any] = []
        self._wait = 0.0

    @property
    def pending(self) -> bool:
        """A step waits for its validation (the executor then validates before its deadline)."""
        return self._pending

    @property
    def is_last(self) -> bool:
        return self.rank == self.ranks - 1

    def waited_s(self) -> float:
        """All the time spent waiting on the other ranks so far, the pending step's included."""
        pending = self._wait if self._pending and not self.is_last else 0.0
        return sum(self.counts.wait_s) + pending

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self._pending:
            self._zero_requested = set_to_none
        else:
            self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        """Partial reduction and speculative step at the end of an iteration (see module doc)."""
        if self._pending:
            raise self._wire.error(
                f"step {self._step} was never validated: pass this optimizer to "
                f"PipelineExecutor(post_validation=...) or call finish() before stepping again"
            )
        self._reap_sends()
        self._step += 1
        self._wait = 0.0
        state = local_state(_parameters(self.optimizer))
        if self.rank > 0:
            posted = self._wire.post(self.rank - 1, TAG_PARTIAL)
            start = time.perf_counter()
            before = self._wire.wait_state(posted, self.rank - 1, self._step)
            self._wait += time.perf_counter() - start
            state = before.plus(state)
        if not self.is_last:
            self._sends.append(self._wire.send_state(state, self._step, self.rank + 1, TAG_PARTIAL))
            # Posted now, before the next iteration's receives from the same peer (NCCL matches
            # point-to-point messages in the order they are posted).
            self._posted_global = self._wire.post(self.rank + 1, TAG_GLOBAL)
            self._hyper = _hyperparameters(self.optimizer)
            self._stepped = state.action(self.max_norm)[0] == "step"
            if self._stepped:
                self._undo = (
                    _RollbackSnapshot(self.optimizer)
                    if self.rollback == "snapshot"
                    else _InPlaceRollback(self.optimizer)
                )
                self.optimizer.step()
            self._global = None
            self._forwarded = False
            self._pending = True
            return
        # The last rank holds the global state: its step is the synchronous one.
        self._global = state
        action, coefficient = state.action(self.max_norm)
        _apply(self.optimizer, action, coefficient)
        _count(self.counts, action, state)
        self.counts.wait_s.append(self._wait)
        if self.ranks > 1:
            self._sends.append(self._wire.send_state(state, self._step, self.rank - 1, TAG_GLOBAL))
            self._pending = True  # nothing to undo, but iteration k+1 may have to restart

    def poll(self) -> None:
        """Forwards the global state upstream as soon as it has arrived (never blocks)."""
        if self._pending and self._global is None and self._posted_global[0].is_completed():
            self._receive_global()

    def _receive_global(self) -> None:
        start = time.perf_counter()
        self._global = self._wire.wait_state(self._posted_global, self.rank + 1, self._step)
        self._wait += time.perf_counter() - start
        if self.rank > 0 and not self._forwarded:
            self._sends.append(
                self._wire.send_state(self._global, self._step, self.rank - 1, TAG_GLOBAL)
            )
            self._forwarded = True

    def validate(self) -> bool:
        """Waits for the global state and makes the step the synchronous one would have made.

        Returns True when the speculative state was right (the next iteration may go on), False
        when the step was clipped or skipped (the ops run since on speculative weights or inputs
        must be redone: the executor restarts the iteration)."""
        if not self._pending:
            return True
        self._pending = False
        if self.is_last:
            action = self._global.action(self.max_norm)[0]
        else:
            if self._global is None:
                self._receive_global()
            state = self._global
            action, coefficient = state.action(self.max_norm)
            if action != "step" or not self._stepped:
                # The scheduler may have moved the learning rate since: undo and redo with the
                # step's own hyperparameters.
                current = _hyperparameters(self.optimizer)
                _set_hyperparameters(self.optimizer, self._hyper)
                if self._stepped:
                    self._undo.restore(self.optimizer)
                    self.counts.rollbacks += 1
                _apply(self.optimizer, action, coefficient)
                _set_hyperparameters(self.optimizer, current)
            self._undo = None
            _count(self.counts, action, state)
            self.counts.wait_s.append(self._wait)
        if self._zero_requested is not None:
            self.optimizer.zero_grad(set_to_none=self._zero_requested)
            self._zero_requested = None
        return action == "step"

    def finish(self) -> None:
        """Validates the last step (after the last iteration) and waits for this rank's sends."""
        self.validate()
        self._reap_sends(wait=True)

    def _reap_sends(self, wait: bool = False) -> None:
        kept = []
        for work, tensor in self._sends:
            if wait:
                what = "sending a gradient state message"
                wait_bounded(work, self._wire.timeout_s, what, self._wire.error)
            elif not work.is_completed():
                kept.append((work, tensor))
        self._sends = kept

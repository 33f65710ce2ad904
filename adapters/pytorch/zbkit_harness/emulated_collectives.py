# SPDX-License-Identifier: Apache-2.0
"""A pipeline rank's data-parallel collectives, emulated for `zb rehearse --dp` (docs/rehearse.md
§7).

A profile of a pipeline inside data parallelism gives each stage a gradient reduction (`reduce`,
ms) and, under FSDP, an all-gather of its parameters (`unshard`, ms). The rehearsal runs them as
the simulator places them (docs/data-parallel.md §5), on a resource of their own next to the
rank's emulated stream (emulated_stages.Emulation):

- **unshard**: FSDP holds at most three stages unsharded (torch's `_add_unshard_reshard`); a rank
  of at most three stages has them all in its window from its first op, so each is gathered at the
  start of the iteration, in order of first use (ascending stage: a stage's first forward follows
  the previous stage's), one after another; a stage's ops wait for its all-gather.
- **reduce**: after a stage's last weight gradient of the iteration (its m-th W or fused BW,
  torch's `_add_reduce_grad`), from when that ended and the resource is free. Under `in_place`
  the rank's next op waits for it (the compute stream waits, as FSDP's final callback makes it);
  under `step_end` only the end of the iteration does.

What is real: with replicas (`--dp` N > 1) each reduction is also a collective among the
replicas of the pipeline rank, over gloo: it starts only once every replica's stage is done
(an all-reduce of the ready times, MAX), so replicas that drift apart wait for each other as
they would on a cluster. The host waits for that collective only where the emulated device
would: at the rank's next op under `in_place`, at the end of the iteration under `step_end`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import torch

from .emulated_stages import REDUCE_WAITS, RehearsalError, StageCost

MAX_UNSHARDED_STAGES = 3  # torch's `_add_unshard_reshard(max_active_stages=3)`


def has_collectives(costs: Iterable[StageCost]) -> bool:
    """Whether any of the stages reduces or gathers: what there is to emulate."""
    return any(cost.reduce_ms > 0 or cost.unshard_ms > 0 for cost in costs)


@dataclass
class _Pending:
    stage: int
    ready_ns: torch.Tensor  # this replica's, then (once `work` is done) every replica's latest
    work: Optional[Any]  # the replicas' all-reduce; None without replicas


class EmulatedCollectives:
    """The collectives of one pipeline rank holding the stages of `costs`, for `microbatches`
    microbatches an iteration; `group` is the process group of its replicas (None: no
    replicas)."""

    def __init__(
        self,
        costs: Mapping[int, StageCost],
        microbatches: int,
        reduce_wait: str = "in_place",
        group: Optional[Any] = None,
    ) -> None:
        if reduce_wait not in REDUCE_WAITS:
            raise RehearsalError(
                f"reduce_wait {reduce_wait!r} is not one of {', '.join(REDUCE_WAITS)}"
            )
        unsharding = [s for s, cost in costs.items() if cost.unshard_ms > 0]
        if unsharding and len(costs) > MAX_UNSHARDED_STAGES:
            raise RehearsalError(
                f"a rank of {len(costs)} stages: FSDP's unshard window of "
                f"{MAX_UNSHARDED_STAGES} stages moves during the iteration, which the rehearsal "
                "does not emulate (at most 3 stages per rank with 'unshard' costs)"
            )
        self.costs, self.microbatches = dict(costs), microbatches
        self.in_place = reduce_wait == "in_place"
        self.group = group
        self.free_ns = 0  # when the resource is next free, once `pending` is settled
        self.gathered_ns: Dict[int, int] = {}
        self.reduced_ns = 0  # when the last reduction placed ends
        self.weights_done: Dict[int, int] = {}
        self.pending: List[_Pending] = []
        self.events: List[Tuple[str, int, int, int]] = []  # kind, stage, start, end ns

    def begin(self, start_ns: int) -> None:
        """A new iteration from `start_ns`: every stage's all-gather issued in order of first
        use (its stages' window, see the module's docstring)."""
        self.settle()  # nothing should be left; a leftover would desynchronise the replicas
        self.free_ns, self.reduced_ns, self.weights_done, self.events = start_ns, 0, {}, []
        self.gathered_ns = {}
        for stage in sorted(self.costs):
            cost_ns = round(self.costs[stage].unshard_ms * 1e6)
            if cost_ns:
                self.events.append(("unshard", stage, self.free_ns, self.free_ns + cost_ns))
                self.free_ns += cost_ns
            self.gathered_ns[stage] = self.free_ns if cost_ns else 0

    def before_op(self, stage: int) -> int:
        """The earliest an op of `stage` may start: its parameters gathered and, under
        `in_place`, every reduction issued so far done."""
        if self.in_place and self.pending:
            self.settle()
        return max(self.gathered_ns.get(stage, 0), self.reduced_ns if self.in_place else 0)

    def weight_done(self, stage: int, end_ns: int) -> None:
        """A weight gradient of `stage` ended at `end_ns`: after its m-th of the iteration its
        gradients are reduced."""
        done = self.weights_done.get(stage, 0) + 1
        self.weights_done[stage] = done
        if done != self.microbatches or stage not in self.costs:
            return
        if self.costs[stage].reduce_ms <= 0:
            return
        ready = torch.tensor([end_ns], dtype=torch.int64)
        work = None
        if self.group is not None:
            import torch.distributed as dist  # noqa: PLC0415

            work = dist.all_reduce(ready, op=dist.ReduceOp.MAX, group=self.group, async_op=True)
        self.pending.append(_Pending(stage, ready, work))

    def settle(self) -> int:
        """Places the reductions issued so far (waiting for the replicas' collectives, in the
        order issued: one resource); when the resource is free after them."""
        for pending in self.pending:
            if pending.work is not None:
                pending.work.wait()
            start = max(int(pending.ready_ns.item()), self.free_ns)
            end = start + round(self.costs[pending.stage].reduce_ms * 1e6)
            self.events.append(("reduce", pending.stage, start, end))
            self.free_ns = self.reduced_ns = end
        self.pending = []
        return self.free_ns

    def finish(self) -> int:
        """When the iteration's collectives end (its end cannot come before)."""
        return self.settle()

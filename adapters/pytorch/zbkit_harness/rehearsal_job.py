# SPDX-License-Identifier: Apache-2.0
"""One rehearsal job: a pipelining script on emulated stages (zbkit_harness.emulated_stages), run by
`zb rehearse` under torchrun once per schedule and round (docs/rehearse.md).

    torchrun --nproc-per-node P rehearsal_job.py --costs FILE --microbatches M
        (--schedule CLASS | --schedule-file S.json) [--iters K] [--warmup W] ...

With `--schedule CLASS` it is a plain torch.distributed.pipelining script: it builds the stages
the class's layout puts on this rank (torch_orders.CLASSES) as PipelineStages and steps a
`CLASS` object, so the shim (ZBKIT_SCHEDULE) replays a zbkit order in it exactly as it does in a
user's script. With `--schedule-file` zbkit's executor runs the file's order (recording it through
libzbrt with `--record-dir`). `--probe` measures the per-hop time of a message instead. With
`--dp N` the processes are N replicas of the pipeline (class Mesh), and a profile's reductions and
all-gathers run beside each rank's stream (emulated_collectives), the reductions real collectives
among the replicas.

Every iteration starts after a barrier; each rank writes a zb-job-summary/1 (`--summary-out`, its
`iter_s` after the warm-up, `peak_activation_bytes` in the profile's memory units) and, with
`--timeline-out`, the ops of its last iteration with CLOCK_MONOTONIC times (one clock for the
ranks of one host).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

from zbkit.schedule import placement_stages
from zbkit_harness.emulated_collectives import EmulatedCollectives, has_collectives
from zbkit_harness.emulated_stages import (
    DEVICES,
    EmulatedStage,
    Emulation,
    RehearsalError,
    batch,
    loss_fn,
    message_width,
    read_reduce_wait,
    read_stage_costs,
    stamp_sends,
    targets,
)
from zbkit_harness.torch_orders import CLASSES

PROBE_ROUNDS = 30
PR_SET_TIMERSLACK = 29  # <linux/prctl.h>


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--costs",
                        help="zb-costs/1 (one stage per rank), or a zb-schedule/1 whose costs "
                        "give every stage its own; all but --probe need it")  # fmt: skip
    parser.add_argument("--microbatches", type=int, required=True)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--schedule", choices=[name for name, _, _ in CLASSES])
    which.add_argument("--schedule-file", help="zb-schedule/1, run by zbkit's executor")
    which.add_argument("--probe", action="store_true", help="measure the per-hop time")
    parser.add_argument("--stages-per-rank", type=int, default=2, help="for the interleaved ones")
    parser.add_argument("--iters", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--message-bytes", type=int, default=4096)
    parser.add_argument("--memory-scale", type=float, default=1.0)
    parser.add_argument("--device", choices=DEVICES, default="async")
    parser.add_argument("--hop-ms", type=float, default=0.0, help="async: a message's transfer")
    parser.add_argument("--checkpoint-groups", type=int, default=0,
                        help="N >= 1: every stage fully checkpointed, N parameter groups "
                        "(emulated_stages.EmulatedStage); 0: no checkpointing")  # fmt: skip
    parser.add_argument("--dp", type=int, default=1,
                        help="replicas of the pipeline: the world is a (dp, pp) mesh, global rank "
                        "= replica x pipeline ranks + pipeline rank; the costs' collectives run "
                        "among the replicas (emulated_collectives)")  # fmt: skip
    parser.add_argument("--summary-out", default="")
    parser.add_argument("--timeline-out", default="")
    parser.add_argument("--record-dir", default="", help="libzbrt shards of the emulated ops")
    parser.add_argument("--record-schedule", default="",
                        help="the zb-schedule/1 the ops are recorded against (default: "
                        "--schedule-file)")  # fmt: skip
    parser.add_argument("--store", default="", help="with --record-dir: merge the run here")
    parser.add_argument("--schedule-id", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=300.0)
    args = parser.parse_args(argv)
    if not args.probe and not args.costs:
        parser.error("the following arguments are required: --costs")
    return args


class Mesh:
    """This process's place in the (dp, pp) mesh and the groups it talks over: the pipeline's
    (the whole world without replicas) and its replicas' (None without)."""

    def __init__(self, replicas: int) -> None:
        rank, world = dist.get_rank(), dist.get_world_size()
        if replicas < 1 or world % replicas:
            raise SystemExit(f"rehearsal_job: --dp {replicas} does not divide {world} processes")
        self.ranks = world // replicas  # pipeline ranks
        self.rank, self.replica = rank % self.ranks, rank // self.ranks
        self.pipeline, self.replicas = dist.group.WORLD, None
        if replicas == 1:
            return
        # Every process creates every group, in the same order (dist.new_group's contract).
        for replica in range(replicas):
            group = dist.new_group([replica * self.ranks + r for r in range(self.ranks)])
            if replica == self.replica:
                self.pipeline = group
        for r in range(self.ranks):
            group = dist.new_group([replica * self.ranks + r for replica in range(replicas)])
            if r == self.rank:
                self.replicas = group


def width_of(args) -> int:
    return message_width(args.message_bytes)


def probe(args, rank: int, ranks: int) -> Dict[str, Any]:
    """The median one-way time of a message of --message-bytes between neighbouring ranks: pairs
    (r, r+1) ping-pong PROBE_ROUNDS times, even r first, then odd r, so no rank is in two pairs
    at once. Each rank reports the hops it led."""
    message = torch.zeros(width_of(args), dtype=torch.float64)
    hops: Dict[str, float] = {}
    for parity in (0, 1):
        dist.barrier()
        lead = rank % 2 == parity and rank + 1 < ranks
        follow = (rank - 1) % 2 == parity and rank >= 1
        times: List[float] = []
        for _ in range(PROBE_ROUNDS):
            if lead:
                start = time.perf_counter()
                dist.send(message, rank + 1)
                dist.recv(message, rank + 1)
                times.append((time.perf_counter() - start) / 2)
            elif follow:
                dist.recv(message, rank - 1)
                dist.send(message, rank - 1)
        if times:
            hops[f"{rank}-{rank + 1}"] = statistics.median(times[PROBE_ROUNDS // 5 :]) * 1e3
    return {"hop_ms": hops}


def stage_costs(args, num_stages: int, per_rank: int):
    try:
        return read_stage_costs(Path(args.costs), num_stages, per_rank)
    except RehearsalError as error:
        raise SystemExit(f"rehearsal_job: {error}") from None


def torch_stepper(args, mesh: Mesh, emulation: Emulation):
    """A plain pipelining script's schedule object and its stages' parameters."""
    from torch.distributed.pipelining import PipelineStage, schedules  # noqa: PLC0415

    rank, ranks = mesh.rank, mesh.ranks
    placement, fixed = next((p, f) for name, p, f in CLASSES if name == args.schedule)
    per_rank = fixed or args.stages_per_rank
    num_stages = ranks * per_rank
    costs = stage_costs(args, num_stages, per_rank)
    mine = placement_stages(placement, ranks, num_stages, rank)
    modules = [EmulatedStage(s, costs[s], width_of(args), emulation, args.checkpoint_groups)
               for s in mine]  # fmt: skip
    stages = [
        PipelineStage(module, s, num_stages, torch.device("cpu"), group=mesh.pipeline)
        for s, module in zip(mine, modules)
    ]
    schedule_class = getattr(schedules, args.schedule)
    if per_rank == 1:
        schedule = schedule_class(stages[0], n_microbatches=args.microbatches, loss_fn=loss_fn)
    else:
        schedule = schedule_class(stages, n_microbatches=args.microbatches, loss_fn=loss_fn)
    has_first, has_last = 0 in mine, num_stages - 1 in mine
    x, y = batch(args.microbatches, width_of(args)), targets(args.microbatches, width_of(args))

    def step() -> None:
        step_args = (x,) if has_first else ()
        step_kwargs = {"target": y, "losses": []} if has_last else {}
        schedule.step(*step_args, **step_kwargs)

    return step, modules, type(schedule).__name__


def executor_stepper(args, mesh: Mesh, emulation: Emulation):
    from zbkit import libzbrt  # noqa: PLC0415
    from zbkit.executor import PipelineExecutor  # noqa: PLC0415

    rank, ranks = mesh.rank, mesh.ranks
    schedule = libzbrt.load_schedule(args.schedule_file)
    if schedule.ranks != ranks:
        raise SystemExit(
            f"rehearsal_job: {args.schedule_file} is for {schedule.ranks} ranks, not {ranks}"
        )
    costs = stage_costs(args, schedule.num_stages, schedule.chunks)
    modules = {
        s: EmulatedStage(s, costs[s], width_of(args), emulation, args.checkpoint_groups)
        for s in schedule.stages[rank]
    }
    executor = PipelineExecutor(schedule, rank, modules, loss_fn, group=mesh.pipeline,
                                timeout_s=args.timeout_s, loss_scale=1.0)  # fmt: skip
    m, width = args.microbatches, width_of(args)
    x, y = batch(m, width), targets(m, width)
    xs, ys = list(x.split(1)), list(y.split(1))

    def step() -> None:
        executor.step(xs, ys)

    return step, list(modules.values()), PipelineExecutor.__name__


class DeviceRecorder:
    """Records the emulated device's ops of each iteration through libzbrt against the schedule
    they replay (`--record-schedule`, or `--schedule-file`), with the device's times: a fused BW
    spans its B and W, and under torch's runtime the first stage's B, which runs inside its W,
    is recorded where it ran. The emulation's clock (CLOCK_MONOTONIC) is moved onto libzbrt's
    (CLOCK_REALTIME) once."""

    def __init__(self, path: str, rank: int, shard: str) -> None:
        from zbkit import libzbrt  # noqa: PLC0415

        schedule = libzbrt.load_schedule(path)
        self.recorder = libzbrt.Recorder(schedule, rank, shard)
        self.index: Dict[tuple, int] = {}
        for i, op in enumerate(schedule.ops[rank]):
            for kind in ("B", "W") if op.kind == "BW" else (op.kind,):
                self.index[(kind, op.stage, op.microbatch)] = i
        self.offset_ns = libzbrt.now_ns() - time.perf_counter_ns()

    def begin(self, iteration: int) -> None:
        """Before the iteration's first op is issued: the iteration's range begins now, before
        any of its ops on the device."""
        self.recorder.iteration_begin(iteration)

    def end(self, events) -> None:
        """After the device is synchronized: its ops, then the iteration's end."""
        spans: Dict[int, List[int]] = {}
        for key, (start, end) in last_runs(events).items():
            i = self.index.get(key)
            if i is None:
                continue
            span = spans.setdefault(i, [start, end])  # a fused BW spans its B and its W
            span[0], span[1] = min(span[0], start), max(span[1], end)
        for i, (start, end) in sorted(spans.items(), key=lambda item: item[1][0]):
            self.recorder.record(i, start + self.offset_ns, end + self.offset_ns)
        self.recorder.iteration_end()

    def close(self) -> None:
        self.recorder.close()


def open_recorder(args, rank: int) -> Optional[DeviceRecorder]:
    path = args.record_schedule or args.schedule_file
    if not (args.record_dir and path):
        return None
    os.makedirs(args.record_dir, exist_ok=True)
    return DeviceRecorder(path, rank, os.path.join(args.record_dir, f"rank{rank}.zbshard"))


def write(path_template: str, rank: int, doc: Dict[str, Any]) -> None:
    if not path_template:
        return
    path = path_template.replace("{rank}", str(rank))  # str.replace: a path may hold braces
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        handle.write(json.dumps(doc) + "\n")


def train(args, step, modules, emulation: Emulation, recorder) -> Dict[str, Any]:
    """Warm-up and measured iterations, each after a barrier; the measured times, the peak over
    them and the last one's ops."""
    times, peaks, host_bound = [], [], []
    for iteration in range(args.warmup + args.iters):
        for module in modules:
            for parameter in module.parameters():
                parameter.grad = None
        dist.barrier()
        measuring = iteration >= args.warmup
        if recorder is not None:
            recorder.begin(iteration)
        start = time.perf_counter_ns()
        emulation.reset(start)
        step()
        emulation.synchronize()
        elapsed = (time.perf_counter_ns() - start) / 1e9
        if recorder is not None:
            recorder.end(emulation.events)
        if measuring:
            times.append(elapsed)
            peaks.append(emulation.peak)
            host_bound.append(emulation.host_bound_ns / 1e9)
    return {
        "iter_s": times,
        "host_bound_s": host_bound,
        "peak_activation_bytes": max(peaks),
        "recomputes": recomputes(emulation),
        "ops": [
            {"type": kind, "stage": stage, "mb": mb, "start_ns": start, "end_ns": end}
            for (kind, stage, mb), (start, end) in last_runs(emulation.events).items()
        ],
        "collectives": [
            {"type": kind, "stage": stage, "start_ns": start, "end_ns": end}
            for kind, stage, start, end in (
                emulation.collectives.events if emulation.collectives else []
            )
        ],
    }


def recomputes(emulation: Emulation) -> Dict[str, List[int]]:
    """Per stage of this rank, the fewest and the most recomputations of its forward a microbatch
    got in the last iteration (each of a checkpointed stage's microbatches is counted; empty
    without checkpointing)."""
    counts: Dict[int, List[int]] = {}
    for kind, stage, mb, _start, _end in emulation.events:
        if kind == "F":
            counts.setdefault(stage, []).append(emulation.recomputes.get((stage, mb), 0))
    if not any(emulation.recomputes.values()):
        return {}
    return {str(stage): [min(c), max(c)] for stage, c in sorted(counts.items())}


def last_runs(events) -> Dict[tuple, tuple]:
    """(kind, stage, microbatch) -> (start, end) of its last run, in the order of those runs:
    torch's shape inference runs the first stage's forward of microbatch 0 once more in the
    first step."""
    last: Dict[tuple, tuple] = {}
    for kind, stage, mb, start, end in events:
        last.pop((kind, stage, mb), None)
        last[(kind, stage, mb)] = (start, end)
    return last


def fine_timer_slack() -> None:
    """Linux lets a sleep overrun by the thread's timer slack (50 us by default) to batch
    wake-ups; an emulated op would add it each time. 1 ns asks for exact wake-ups
    (prctl(PR_SET_TIMERSLACK), proc(5)); elsewhere this does nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    fine_timer_slack()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    if args.probe:
        write(args.summary_out, rank, {"format": "zb-rehearse-probe/1", "rank": rank,
                                       **probe(args, rank, ranks)})  # fmt: skip
        dist.barrier()
        dist.destroy_process_group()
        return 0
    mesh = Mesh(args.dp)
    emulation = Emulation(args.memory_scale, args.device, rank, args.hop_ms)
    stamp_sends(emulation)
    # One replica records the pipeline's run: the others run the same order.
    recorder = open_recorder(args, mesh.rank) if mesh.replica == 0 else None
    if args.schedule:
        step, modules, runner = torch_stepper(args, mesh, emulation)
    else:
        step, modules, runner = executor_stepper(args, mesh, emulation)
    costs = {module.stage: module.cost for module in modules}
    if has_collectives(costs.values()):
        emulation.collectives = EmulatedCollectives(
            costs, args.microbatches, read_reduce_wait(Path(args.costs)), mesh.replicas
        )
    try:
        measured = train(args, step, modules, emulation, recorder)
    finally:
        if recorder is not None:
            recorder.close()
    run_id = None
    if args.store and args.record_dir and (args.record_schedule or args.schedule_file):
        from zbkit import libzbrt  # noqa: PLC0415

        dist.barrier()  # every shard written
        if rank == 0:
            run_id = libzbrt.record_run(
                args.store, args.schedule_id, args.record_dir, "zb rehearse (emulated compute)"
            )
    summary = {
        "format": "zb-job-summary/1",  # docs/formats.md §3.1
        "rank": rank,
        "class": runner,
        "ranks": ranks,
        "replicas": args.dp,
        "microbatches": args.microbatches,
        "iters": len(measured["iter_s"]),
        "median_iter_s": statistics.median(measured["iter_s"]),
        "iter_s": measured["iter_s"],
        "peak_activation_bytes": measured["peak_activation_bytes"],
        "host_bound_s": measured["host_bound_s"],
        "recomputes": measured["recomputes"],
        "device": args.device,
    }
    if run_id is not None:
        summary["run_id"] = run_id
    write(args.summary_out, rank, summary)
    write(args.timeline_out, rank, {"rank": rank, "ops": measured["ops"],
                                    "collectives": measured["collectives"]})  # fmt: skip
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

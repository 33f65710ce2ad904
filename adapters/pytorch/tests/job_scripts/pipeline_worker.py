# SPDX-License-Identifier: Apache-2.0
"""One rank of the 2-rank gloo pipelines the executor tests start as real processes.

Also the home of the test model, so the single-process reference builds exactly the same stages.

    python pipeline_worker.py MODE RANK WORLD PORT JOB.pkl OUT_DIR

JOB.pkl is a pickled dict made by the test; results go to OUT_DIR/rank{RANK}.pt.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

D = 8  # model width
SEQ = 4  # tokens per sample
MB_SIZE = 2  # samples per microbatch
STALL_S = 6.0  # how long a stalling rank sleeps


def make_stage(stage: int) -> nn.Module:
    """Stage `stage` of the test model: Linear, LayerNorm, GELU and a transformer block."""
    torch.manual_seed(1000 + stage)
    return nn.Sequential(
        nn.Linear(D, D),
        nn.LayerNorm(D),
        nn.GELU(),
        nn.TransformerEncoderLayer(D, 2, 2 * D, dropout=0.0, batch_first=True),
    ).double()


# Activation checkpointing of a test stage: which of its modules are checkpointed, and how.
CHECKPOINTED = {"full": (0, 3), "every2": (3,), "sac": (0, 3), "reentrant": (3,)}
_WRAPPED = "_checkpoint_wrapped_module."


def _save_matmuls(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy

    saved = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default)
    return CheckpointPolicy.MUST_SAVE if op in saved else CheckpointPolicy.PREFER_RECOMPUTE


def checkpointed_stage(stage: int, mode: str, calls: Dict[str, int]) -> nn.Module:
    """make_stage(stage) with CHECKPOINTED[mode]'s modules wrapped in torch's checkpoint_wrapper
    (per-op selective for "sac", torch's reentrant checkpoint for "reentrant"); calls["s.i"]
    counts the forward calls of module i, recomputations included."""
    import functools

    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        checkpoint_wrapper,
    )
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    module = make_stage(stage)
    for index, child in enumerate(module):
        key = f"{stage}.{index}"
        calls.setdefault(key, 0)
        child.register_forward_pre_hook(lambda *_, key=key: calls.__setitem__(key, calls[key] + 1))
    for index in CHECKPOINTED.get(mode, ()):
        options: Dict[str, Any] = {}
        if mode == "sac":
            options["context_fn"] = functools.partial(
                create_selective_checkpoint_contexts, _save_matmuls
            )
        if mode == "reentrant":
            options["checkpoint_impl"] = CheckpointImpl.REENTRANT
        module[index] = checkpoint_wrapper(module[index], **options)
    return module


def unwrapped_name(name: str) -> str:
    """A parameter's name as make_stage has it (checkpoint_wrapper adds a level)."""
    return name.replace(_WRAPPED, "")


def make_data(microbatches: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The whole batch (inputs, targets)."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(microbatches * MB_SIZE, SEQ, D, dtype=torch.float64, generator=g)
    y = torch.randn(microbatches * MB_SIZE, SEQ, D, dtype=torch.float64, generator=g)
    return x, y


def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.mse_loss(out, target)


def reference(num_stages: int, microbatches: int) -> Tuple[float, Dict[str, torch.Tensor]]:
    """One unpipelined step on the whole batch: (loss, {"stage.param": grad})."""
    stages = [make_stage(s) for s in range(num_stages)]
    x, y = make_data(microbatches)
    h = x
    for st in stages:
        h = st(h)
    loss = loss_fn(h, y)
    loss.backward()
    grads = {
        f"{s}.{n}": p.grad.clone() for s, st in enumerate(stages) for n, p in st.named_parameters()
    }
    return float(loss.detach()), grads


def _build(schedule: Any, rank: int, **kw: Any) -> Any:
    from zbkit.executor import PipelineExecutor

    modules = {s: make_stage(s) for s in schedule.stages[rank]}
    return PipelineExecutor(schedule, rank, modules, loss_fn, **kw), modules


def _step_inputs(schedule: Any) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
    x, y = make_data(schedule.microbatches)
    return list(x.split(MB_SIZE)), list(y.split(MB_SIZE))


class _Recorder:
    def __init__(self, die_at: int = -1, stall_at: int = -1, note: str = "") -> None:
        self.events: List[Tuple[str, int]] = []
        self.peak = 0
        self.die_at = die_at
        self.stall_at = stall_at
        self.note = note

    def begin(self, i: int) -> None:
        if i == self.die_at:
            Path(self.note).write_text(repr(time.time()))
            os._exit(17)  # a rank dying mid-iteration
        if i == self.stall_at:
            Path(self.note).write_text(repr(time.time()))
            time.sleep(STALL_S)  # a rank that hangs, alive, for longer than the peer's timeout
        self.events.append(("begin", i))

    def end(self, i: int) -> None:
        self.events.append(("end", i))

    def memory(self, nbytes: int) -> None:
        self.peak = max(self.peak, nbytes)


def run_grads(job: Dict[str, Any], rank: int, result: Dict[str, Any]) -> None:
    """Every schedule in job["schedules"]: grads, losses, recorder events, memory."""
    from zbkit.executor import ZbkitPipelineError

    for name, schedule in job["schedules"].items():
        rec = _Recorder()
        ex, modules = _build(schedule, rank, recorder=rec, timeout_s=job["timeout_s"])
        xs, ys = _step_inputs(schedule)
        losses = ex.step(xs, ys)
        result[name] = {
            "losses": [float(v) for v in losses],
            "grads": {
                f"{s}.{n}": p.grad.clone()
                for s, mod in modules.items()
                for n, p in mod.named_parameters()
            },
            "events": rec.events,
            "peak_bytes": rec.peak,
            "memory_stats": ex.memory_stats,
        }
    for name, schedule in job.get("bad", {}).items():
        t0 = time.monotonic()
        try:
            _build(schedule, rank, timeout_s=job["timeout_s"])
            result[name] = {"error": None}
        except ZbkitPipelineError as e:
            result[name] = {"error": str(e), "seconds": time.monotonic() - t0}


def run_profiled(job: Dict[str, Any], rank: int, result: Dict[str, Any]) -> None:
    """One step of zbkit's executor under torch.profiler: the Chrome trace torch writes, with
    distributedInfo, at out_dir/rank<R>.json."""
    from torch.profiler import ProfilerActivity, profile

    schedule = job["schedule"]
    ex, _ = _build(schedule, rank, timeout_s=30.0)
    xs, ys = _step_inputs(schedule)
    ex.step(xs, ys)  # warm-up, unprofiled: no labels are wanted (nor paid for) outside a profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        ex.step(xs, ys)
    path = str(Path(job["out_dir"]) / f"rank{rank}.json")
    prof.export_chrome_trace(path)
    result["trace"] = path


def run_failure(job: Dict[str, Any], rank: int, result: Dict[str, Any]) -> None:
    """A step where a peer dies (job["die"] = {rank: op index}) or runs another schedule.

    job["stall"] = {rank: op index} makes that rank sleep STALL_S seconds there instead. The
    dying or stalling rank leaves the wall-clock time it did so in OUT_DIR/note-rank{RANK}."""
    from zbkit.executor import ZbkitPipelineError

    schedule = job["schedules"][rank]
    note = str(Path(job["out_dir"]) / f"note-rank{rank}")
    rec = _Recorder(
        die_at=job.get("die", {}).get(rank, -1),
        stall_at=job.get("stall", {}).get(rank, -1),
        note=note,
    )
    ex, _ = _build(schedule, rank, recorder=rec, timeout_s=job["timeout_s"])
    xs, ys = _step_inputs(schedule)
    # Both ranks start the step together: on a loaded machine one rank's start-up can take longer
    # than the peer's receive timeout, which would then fire before the failure under test began.
    import torch.distributed as dist  # noqa: PLC0415

    dist.barrier()
    t0 = time.monotonic()
    try:
        ex.step(xs, ys)
        result["error"] = None
    except ZbkitPipelineError as e:
        result["error"] = str(e)
    result["error_at"] = time.time()
    result["seconds"] = time.monotonic() - t0


def _grads_of(modules: Dict[int, nn.Module]) -> Dict[str, torch.Tensor]:
    return {
        f"{s}.{n}": p.grad.clone()
        for s, mod in modules.items()
        for n, p in mod.named_parameters()
        if p.grad is not None
    }


def _torch_runtime(schedule: Any, rank: int, as_script: bool = True):
    """This rank's stages of `schedule` as torch PipelineStages under a torch schedule object, as
    a pipelining script builds them (as_script): Schedule1F1B for one stage per rank, else the
    runtime class that loads CSVs; that class always without as_script. Returns (schedule
    object, modules)."""
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules as torch_schedules

    modules = {s: make_stage(s) for s in schedule.stages[rank]}
    device = torch.device("cpu")
    stages = [
        PipelineStage(modules[s], s, schedule.num_stages, device, group=None)
        for s in schedule.stages[rank]
    ]
    if as_script and len(stages) == 1:
        obj = torch_schedules.Schedule1F1B(stages[0], schedule.microbatches, loss_fn=loss_fn)
    else:
        obj = torch_schedules._PipelineScheduleRuntime(
            stages, n_microbatches=schedule.microbatches, loss_fn=loss_fn
        )
    return obj, modules


def _torch_step(runtime: Any, schedule: Any, rank: int) -> List[float]:
    """One step of a loaded torch runtime on the test batch; the losses it returns (last stage)."""
    x, y = make_data(schedule.microbatches)
    local = set(schedule.stages[rank])
    args = (x,) if 0 in local else ()
    kwargs: Dict[str, Any] = {}
    losses: List[torch.Tensor] = []
    if schedule.num_stages - 1 in local:
        kwargs = {"target": y, "losses": losses}
    step = type(runtime).step
    getattr(step, "__wrapped__", step)(runtime, *args, **kwargs)
    return [float(v.detach()) for v in losses]


def run_equivalence(job: Dict[str, Any], rank: int, result: Dict[str, Any]) -> None:
    """Every case of job["cases"] (name -> {"schedule", "json"}) replayed through zbkit's executor
    and through PyTorch's runtime as the shim loads it (zbkit.pipelining.replay.prepare: its checks, then
    torch's _load_csv); a shim refusal is recorded, not raised (every rank refuses alike, from the
    same file)."""
    from zbkit import pipelining

    for name, case in job["cases"].items():
        schedule = case["schedule"]
        entry: Dict[str, Any] = {}
        ex, modules = _build(schedule, rank, timeout_s=job["timeout_s"])
        xs, ys = _step_inputs(schedule)
        entry["executor"] = {
            "losses": [float(v) for v in ex.step(xs, ys)],
            "grads": _grads_of(modules),
        }
        obj, modules = _torch_runtime(schedule, rank)
        try:
            runtime = pipelining.replay.prepare(obj, case["json"])
        except pipelining.Refusal as refusal:
            entry["shim"] = {"refused": str(refusal)}
        else:
            losses = _torch_step(runtime, schedule, rank)
            entry["shim"] = {"losses": losses, "grads": _grads_of(modules)}
        result[name] = entry


def _second_step(step, modules, calls: Dict[str, int], entry: Dict[str, Any]) -> None:
    """Two steps of `step`; entry gets the second's losses and forward calls (the first includes
    torch's one-time shape inference, which runs every module once more), the modules the
    second's gradients alone."""
    step()
    for module in modules.values():
        for p in module.parameters():
            p.grad = None
    first = dict(calls)
    entry["losses"] = step()
    entry["calls"] = {key: calls[key] - first.get(key, 0) for key in calls}


def checkpoint_frames_alive() -> int:
    """The checkpointed regions (torch's non-reentrant checkpoint frames) still alive: after a
    step, none should be (each holds its region's inputs)."""
    import gc

    from torch.utils.checkpoint import _CheckpointFrame

    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, _CheckpointFrame))


def run_checkpointing(job: Dict[str, Any], rank: int, result: Dict[str, Any]) -> None:
    """Every case of job["cases"] under every activation-checkpointing mode of job["modes"],
    through zbkit's executor and through PyTorch's runtime as the shim runs it (replay.prepare,
    then the shim's recompute-once wrapping, as its step does); and job["torch_classes"] (name ->
    (schedule, class name)) as torch runs them alone, the reference, under job["torch_modes"]. Per run: losses, gradients
    (make_stage's names), forward calls per module, all of the second of two steps; or the
    error."""
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules as torch_schedules

    from zbkit import pipelining
    from zbkit.executor import PipelineExecutor
    from zbkit.pipelining.recompute import recompute_once

    def grads(modules):
        return {
            f"{s}.{unwrapped_name(n)}": p.grad.clone()
            for s, mod in modules.items()
            for n, p in mod.named_parameters()
            if p.grad is not None
        }

    def attempt(entry, body):
        try:
            body()
        except Exception as error:  # what torch or zbkit raised: the test reports it
            cause = error.__cause__ or error
            entry["error"] = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0][:200]}"

    for mode in job["modes"]:
        for name, case in job["cases"].items():
            schedule = case["schedule"]
            local = schedule.stages[rank]
            for path in ("executor", "shim"):
                calls: Dict[str, int] = {}
                modules = {s: checkpointed_stage(s, mode, calls) for s in local}
                entry: Dict[str, Any] = {"calls": calls}

                def body(
                    path=path, modules=modules, entry=entry, schedule=schedule, local=local,
                    case=case, calls=calls,
                ):  # fmt: skip
                    if path == "executor":
                        recorder = _Recorder()
                        ex = PipelineExecutor(
                            schedule,
                            rank,
                            modules,
                            loss_fn,
                            recorder=recorder,
                            timeout_s=job["timeout_s"],
                        )
                        # Each microbatch its own storage (not a view of the batch's), so that
                        # the first stage's saved input counts one microbatch, as measured alone.
                        xs, ys = (list(t.clone() for t in ts) for ts in _step_inputs(schedule))
                        step = lambda: [float(v) for v in ex.step(xs, ys)]  # noqa: E731
                    else:
                        stages = [
                            PipelineStage(modules[s], s, schedule.num_stages, torch.device("cpu"))
                            for s in local
                        ]
                        obj = torch_schedules._PipelineScheduleRuntime(
                            stages, n_microbatches=schedule.microbatches, loss_fn=loss_fn
                        )
                        runtime = pipelining.replay.prepare(obj, case["json"])
                        recompute_once(runtime)
                        step = lambda: _torch_step(runtime, schedule, rank)  # noqa: E731
                    _second_step(step, modules, calls, entry)
                    entry["regions_alive"] = checkpoint_frames_alive()
                    entry["grads"] = grads(modules)
                    if path == "executor":  # the activation bytes its splits held, at most
                        entry["peak_bytes"] = recorder.peak

                attempt(entry, body)
                result[(mode, name, path)] = entry
        if mode not in job.get("torch_modes", ()):
            continue
        for name, (schedule, class_name) in job.get("torch_classes", {}).items():
            local = schedule.stages[rank]
            calls = {}
            modules = {s: checkpointed_stage(s, mode, calls) for s in local}
            entry = {"calls": calls}

            def run_class(
                modules=modules, entry=entry, schedule=schedule, cls=class_name, local=local,
                calls=calls,
            ):  # fmt: skip
                stages = [
                    PipelineStage(modules[s], s, schedule.num_stages, torch.device("cpu"))
                    for s in local
                ]
                obj = getattr(torch_schedules, cls)(
                    stages if len(stages) > 1 else stages[0],
                    n_microbatches=schedule.microbatches,
                    loss_fn=loss_fn,
                )
                _second_step(lambda: _torch_step(obj, schedule, rank), modules, calls, entry)
                entry["grads"] = grads(modules)

            attempt(entry, run_class)
            result[(mode, name, "torch")] = entry


def run_unchecked(job: Dict[str, Any], rank: int, result: Dict[str, Any]) -> None:
    """job["schedule"] through PyTorch's runtime from the CSV job["csv"], without the shim's
    checks: its losses and gradients, or the error it raised (a rank that fails leaves, so its
    peers fail too instead of waiting)."""
    schedule = job["schedule"]
    try:
        runtime, modules = _torch_runtime(schedule, rank, as_script=False)
        runtime._load_csv(job["csv"])
        losses = _torch_step(runtime, schedule, rank)
        result.update(losses=losses, grads=_grads_of(modules), error=None)
    except Exception as error:  # whatever torch raises: the test reports it
        cause = f" (caused by {error.__cause__})" if error.__cause__ is not None else ""
        result.update(error=f"{type(error).__name__}: {str(error).strip()[:300]}{cause}")


def main() -> None:
    mode, rank, world, port, job_path, out_dir = sys.argv[1:7]
    rank, world = int(rank), int(world)
    from datetime import timedelta

    import torch.distributed as dist

    job = pickle.loads(Path(job_path).read_bytes())
    job["out_dir"] = out_dir
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=60),
    )
    result: Dict[str, Any] = {}
    runners = {
        "grads": run_grads, "failure": run_failure, "equivalence": run_equivalence,
        "unchecked": run_unchecked, "profiled": run_profiled, "checkpointing": run_checkpointing,
    }  # fmt: skip
    runners[mode](job, rank, result)
    path = Path(out_dir) / f"rank{rank}.pt"
    torch.save(result, str(path) + ".tmp")
    os.replace(str(path) + ".tmp", path)
    sys.stdout.flush()
    # After a failure the group holds receives that never complete; leave without tearing down.
    if mode in ("grads", "equivalence", "profiled", "checkpointing"):
        dist.barrier()
        dist.destroy_process_group()
    os._exit(0)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Runs zbkit's schedules inside unmodified torch.distributed.pipelining scripts, and profiles them.

`zb replay` puts zbkit/_hook on PYTHONPATH; its sitecustomize calls `install()`, which does
nothing unless one of these is set:

- `ZBKIT_SCHEDULE=PATH`: a PyTorch schedule CSV written by `zb export --format torch-csv` (or
  `torch-csv-comms`), or a zb-schedule/1 JSON file, which is converted by running
  `zb export` (`ZBKIT_ZB_BINARY`, default <repo>/build/cli/zb). The first `step()` of every
  pipelining schedule object the script builds checks the schedule against the stages the script
  built (ranks, stage count, this rank's stage ids, microbatches) and then runs it through
  `_PipelineScheduleRuntime._load_csv`: a runtime-based schedule (Interleaved1F1B, ZBVZeroBubble,
  ...) loads it in place, any other one (Schedule1F1B, GPipe, a plain PipelineScheduleMulti)
  hands its stages to a `_PipelineScheduleRuntime` built with the same arguments. A schedule that
  does not fit is refused with one line on stderr and exit code 1, on every rank (each rank
  decides alone, from the same file, so none waits for a peer that already left).
- `ZBKIT_TORCH_PROFILE=DIR`: `step()` runs under torch.profiler for `ZBKIT_PROFILE_ITERS`
  (default 3) iterations after skipping `ZBKIT_PROFILE_SKIP` (default 1), and each rank writes
  DIR/rank<R>.json.gz, a Chrome trace whose `PP:<action>` ranges `zb import DIR --format chrome`
  attributes to pipeline ops, with the schedule class the script runs as the trace's
  `zbkit_schedule_class` metadata (the profile's layout records it). Schedules that record no such ranges themselves (Schedule1F1B,
  ScheduleGPipe: anything not run by `_PipelineScheduleRuntime`) get them from the shim during the
  window: it wraps the script's stage objects so that each forward is `PP:<s>F<mb>`, the full
  backward of an even microbatch runs as `PP:<s>I<mb>` then `PP:<s>W<mb>` (split, so that the
  profile gives B and W apart; the gradients are the same), that of an odd one fused as
  `PP:<s>B<mb>` (the fused backward's own cost), and each batch of sends and receives is posted under
  `PP:<s>SEND_F<mb>`, `PP:<s>RECV_B<mb>`, ... (the ranges torch's runtime records).
- `ZBKIT_MEMORY_REPORT=DIR`: every `step()` runs under `saved_tensors_hooks` that track the bytes
  of the tensors autograd saves (parameters and leaves that require grad left out; each storage
  counted once while a saved reference to it lives), and at exit each rank writes
  DIR/memory.rank<R>.json: {"rank": R, "peak_activation_bytes": N, "steps": K}.

The patch is applied when torch.distributed.pipelining.schedules is first imported (an import
hook), so processes that never import it (torchrun itself, tools) do not pay for importing torch.
"""

from __future__ import annotations

import atexit
import csv
import functools
import importlib.abc
import importlib.machinery
import os
import subprocess
import sys
import tempfile
import threading
from typing import Dict, List, Optional, Sequence, Set, Tuple

from . import torch_rules
from .errors import ScheduleRefused
from .schedule import placement_of_rank

SCHEDULES_MODULE = "torch.distributed.pipelining.schedules"
# The trace metadata key naming the schedule class (kScheduleClassKey in zbkit/profiler/trace.h).
SCHEDULE_CLASS_KEY = "zbkit_schedule_class"
_REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


# A schedule that cannot run on the stages the script built; the message is the one line.
Refusal = ScheduleRefused


# ---------------------------------------------------------------------------------------------
# Reading the schedule


def _zb_binary() -> str:
    return os.environ.get("ZBKIT_ZB_BINARY") or os.path.join(_REPO_ROOT, "build", "cli", "zb")


def _is_json(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(64).lstrip()[:1] == b"{"


def schedule_csv(path: str) -> str:
    """The CSV to load for ZBKIT_SCHEDULE=path: the file itself, or `zb export`'s conversion of a
    zb-schedule/1 JSON file (written next to nothing the user owns: a private temp file)."""
    try:
        json_file = _is_json(path)
    except OSError as error:
        raise Refusal(f"zbkit: cannot read ZBKIT_SCHEDULE {path}: {error.strerror}") from None
    if not json_file:
        return path
    handle, converted = tempfile.mkstemp(prefix="zbkit-schedule-", suffix=".csv")
    os.close(handle)
    atexit.register(_remove_quietly, converted)
    command = [_zb_binary(), "export", path, "--format", "torch-csv", "-o", converted]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        raise Refusal(
            f"zbkit: cannot run {command[0]} to convert {path} (set ZBKIT_ZB_BINARY): "
            f"{error.strerror}"
        ) from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Refusal(f"zbkit: zb export could not convert {path}: {detail}")
    return converted


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class ScheduleShape:
    """What a schedule CSV says about the job: per rank the stage ids, and the microbatches; and
    the rows themselves, as (stage, kind, microbatch) with torch's kind letters (torch_rules)."""

    def __init__(self, rows: Sequence[Sequence[Tuple[int, str, Optional[int]]]], has_comms: bool):
        self.rows = rows
        self.ranks = len(rows)
        self.stages_of_rank: List[Set[int]] = [set() for _ in rows]
        microbatches = -1
        for rank, row in enumerate(rows):
            for stage, _, microbatch in row:
                self.stages_of_rank[rank].add(stage)
                if microbatch is not None:
                    microbatches = max(microbatches, microbatch)
        self.num_stages = 1 + max((max(s) for s in self.stages_of_rank if s), default=-1)
        self.microbatches = microbatches + 1
        self.has_comms = has_comms

    def placement(self) -> str:
        return placement_name(self.stages_of_rank, self.ranks, self.num_stages)


def read_shape(path: str) -> ScheduleShape:
    from torch.distributed.pipelining.schedules import _Action  # noqa: PLC0415

    comm_tokens = ("SEND_F", "RECV_F", "SEND_B", "RECV_B")
    rows, has_comms = [], False
    with open(path, newline="") as handle:
        for number, row in enumerate(csv.reader(handle)):
            actions = []
            for cell in row:
                if not cell.strip():
                    continue
                try:
                    action = _Action.from_str(cell)
                except Exception as error:  # torch raises RuntimeError; keep any parse failure
                    raise Refusal(f"zbkit: {path}: row {number}: {error}") from None
                if action is None:
                    continue
                name = action.computation_type.name
                kind = torch_rules.TORCH_LETTERS.get(name, name)
                has_comms = has_comms or any(token in cell for token in comm_tokens)
                actions.append((action.stage_index, kind, action.microbatch_index))
            rows.append(actions)
    if not rows:
        raise Refusal(f"zbkit: {path}: the schedule is empty")
    return ScheduleShape(rows, has_comms)


def placement_name(stages_of_rank: Sequence[Set[int]], ranks: int, num_stages: int) -> str:
    """ "loop" (stage s on rank s % ranks, including one stage per rank), "v" (rank r holds r and
    2*ranks-1-r) or "custom" (zbkit.schedule.placement_stages)."""
    names = {
        placement_of_rank(held, rank, ranks, num_stages) for rank, held in enumerate(stages_of_rank)
    }
    return names.pop() if len(names) == 1 else "custom"


def script_placement(local: Set[int], rank: int, ranks: int, num_stages: int) -> str:
    """The placement name of the script's stages, judged from this rank's own (the only ones a
    rank can see without talking to its peers)."""
    return placement_of_rank(local, rank, ranks, num_stages)


def check_fit(
    shape: ScheduleShape, local: Set[int], rank: int, ranks: int, num_stages: int, microbatches: int
) -> None:
    """Raises Refusal with one line naming both sides when the schedule does not fit."""
    built = script_placement(local, rank, ranks, num_stages)
    fits_stages = (
        shape.ranks == ranks
        and shape.num_stages == num_stages
        and rank < shape.ranks
        and shape.stages_of_rank[rank] == local
    )
    if not fits_stages:
        ours = f"{shape.num_stages} stages in {shape.placement()} placement"
        theirs = f"{num_stages} stages ({built})"
        if shape.ranks != ranks:
            ours += f" over {shape.ranks} ranks"
            theirs += f" over {ranks} ranks"
        elif shape.placement() == built == "custom" or shape.placement() == built:
            mine = sorted(shape.stages_of_rank[rank]) if rank < shape.ranks else []
            ours += f" (rank {rank} holds {mine})"
            theirs += f" (rank {rank} holds {sorted(local)})"
        raise Refusal(f"zbkit: schedule has {ours}, the script built {theirs}")
    if shape.microbatches != microbatches:
        raise Refusal(
            f"zbkit: schedule has {shape.microbatches} microbatches, the script's schedule uses "
            f"{microbatches} (n_microbatches)"
        )


# ---------------------------------------------------------------------------------------------
# Replaying


def _refuse(message: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    # os._exit: the peers may already be gone, and interpreter teardown of a process group whose
    # peers left can block; the refusal must end this rank now, with a failure code.
    os._exit(1)


def _local_stages(schedule) -> list:
    stages = getattr(schedule, "_stages", None)
    return list(stages) if stages is not None else [schedule._stage]


def _prepare(schedule, path: str):
    """Checks the schedule against `schedule`'s stages and returns the runtime that runs it."""
    from torch.distributed.pipelining import schedules as torch_schedules  # noqa: PLC0415

    stages = _local_stages(schedule)
    first = stages[0]
    rank, ranks, num_stages = first.group_rank, first.group_size, first.num_stages
    csv_path = schedule_csv(path)
    shape = read_shape(csv_path)
    local = {stage.stage_index for stage in stages}
    check_fit(shape, local, rank, ranks, num_stages, schedule._n_microbatches)
    broken = torch_rules.check(shape.rows, shape.num_stages)
    if broken:
        raise Refusal(f"zbkit: {path}: {broken}")
    runtime_class = torch_schedules._PipelineScheduleRuntime
    if isinstance(schedule, runtime_class):
        runtime = schedule
    else:
        runtime = runtime_class(
            stages,
            n_microbatches=schedule._n_microbatches,
            loss_fn=schedule._loss_fn,
            args_chunk_spec=schedule._args_chunk_spec,
            kwargs_chunk_spec=schedule._kwargs_chunk_spec,
            output_merge_spec=schedule._output_merge_spec,
            scale_grads=schedule.scale_grads,
        )
    try:
        runtime._load_csv(csv_path, format="compute_comms" if shape.has_comms else "compute_only")
    except Exception as error:  # torch's validation and lowering raise several types
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise Refusal(f"zbkit: PyTorch rejected the schedule {path}: {first_line}") from None
    sys.stderr.write(
        f"zbkit: rank {rank}: replaying {path} ({shape.num_stages} stages, {shape.placement()} "
        f"placement, {shape.microbatches} microbatches) through _PipelineScheduleRuntime in place "
        f"of {type(schedule).__name__}'s order\n"
    )
    sys.stderr.flush()
    return runtime


def _wrap_step(original_step):
    @functools.wraps(original_step)
    def step(self, *args, **kwargs):
        path = os.environ.get("ZBKIT_SCHEDULE")
        if path:
            runtime = self.__dict__.get("_zbkit_runtime")
            if runtime is None:
                try:
                    runtime = _prepare(self, path)
                except Refusal as refusal:
                    _refuse(str(refusal))
                self.__dict__["_zbkit_runtime"] = runtime
                runtime.__dict__["_zbkit_runtime"] = runtime
            if runtime is not self:
                # The delegate's own step is this wrapper too: run the unwrapped one.
                inner = type(runtime).step
                inner = getattr(inner, "__wrapped__", inner)
                return _measured(runtime, inner, args, kwargs)
        return _measured(self, original_step, args, kwargs)

    step._zbkit_patched = True
    return step


# ---------------------------------------------------------------------------------------------
# Profiling


class _ProfileWindow:
    """One torch.profiler window over steps skip .. skip+iters-1 of this process."""

    def __init__(self, directory: str, skip: int, iters: int):
        self.directory, self.skip, self.iters = directory, skip, iters
        self.steps = 0
        self.profiler = None
        self.done = False
        self.named = False

    def before(self) -> None:
        if self.done or self.profiler is not None or self.steps < self.skip:
            return
        import torch  # noqa: PLC0415

        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.profiler = torch.profiler.profile(activities=activities, profile_memory=True)
        self.profiler.__enter__()
        atexit.register(self.finish)

    def name_schedule(self, class_name: str) -> None:
        """Records the schedule class the job runs in the trace (top-level metadata, read by `zb
        import` into the profile's layout, docs/formats.md §1), once per window."""
        if self.profiler is None or self.named:
            return
        self.named = True
        self.profiler.add_metadata(SCHEDULE_CLASS_KEY, class_name)

    def after(self) -> None:
        self.steps += 1
        if self.profiler is not None:
            self.profiler.step()  # marks ProfilerStep#N: the importer's iteration boundary
            if self.steps >= self.skip + self.iters:
                self.finish()

    def finish(self) -> None:
        if self.profiler is None or self.done:
            return
        self.done = True
        profiler, self.profiler = self.profiler, None
        profiler.__exit__(None, None, None)
        os.makedirs(self.directory, exist_ok=True)
        target = os.path.join(self.directory, f"rank{_rank()}.json.gz")
        profiler.export_chrome_trace(target)


_window: Optional[_ProfileWindow] = None


def _rank() -> int:
    try:
        import torch.distributed as dist  # noqa: PLC0415

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except Exception:
        pass
    return int(os.environ.get("RANK", "0"))


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value.strip() else default
    except ValueError:
        sys.stderr.write(f"zbkit: {name}={value!r} is not an integer; using {default}\n")
        return default


def _profiled(target, step_function, args, kwargs):
    global _window
    directory = os.environ.get("ZBKIT_TORCH_PROFILE")
    if not directory:
        return step_function(target, *args, **kwargs)
    if _window is None:
        _window = _ProfileWindow(
            directory, _env_int("ZBKIT_PROFILE_SKIP", 1), _env_int("ZBKIT_PROFILE_ITERS", 3)
        )
    _window.before()
    _window.name_schedule(type(target).__name__)
    labels = None
    try:
        if _window.profiler is not None and not _records_pp_ranges(target):
            labels = _StageLabels(target)
        return step_function(target, *args, **kwargs)
    finally:
        if labels is not None:
            labels.remove()
        _window.after()


def _records_pp_ranges(schedule) -> bool:
    from torch.distributed.pipelining import schedules as torch_schedules  # noqa: PLC0415

    return isinstance(schedule, torch_schedules._PipelineScheduleRuntime)


class _StageLabels:
    """`PP:<action>` ranges for a schedule whose own loop records none, for one step: the local
    stages' compute and send/receive methods are wrapped on the instances (the class, shared with
    any other schedule of the process, is left alone), and the schedules module's `_batch_p2p`,
    which posts every batch of sends and receives, opens one range per labelled op of the batch.
    remove() puts everything back."""

    METHODS = (
        "forward_one_chunk", "backward_one_chunk", "backward_weight_one_chunk",
        "get_fwd_send_ops", "get_fwd_recv_ops", "get_bwd_send_ops", "get_bwd_recv_ops",
    )  # fmt: skip

    def __init__(self, schedule):
        from torch.distributed.pipelining import schedules as module  # noqa: PLC0415
        from torch.profiler import record_function  # noqa: PLC0415

        self.module = module
        self.saved = []
        for stage in _local_stages(schedule):
            for name in self.METHODS:
                self.saved.append((stage, name, stage.__dict__.get(name, _ABSENT)))
            self._wrap(stage, record_function)
        self.batch_p2p = module.__dict__["_batch_p2p"]
        module._batch_p2p = _labelled_batch_p2p(self.batch_p2p, record_function)

    @staticmethod
    def _wrap(stage, record_function) -> None:
        forward, backward = stage.forward_one_chunk, stage.backward_one_chunk
        weight = stage.backward_weight_one_chunk
        s = stage.stage_index

        def forward_one_chunk(fwd_chunk_id, *args, **kwargs):
            with record_function(f"PP:{s}F{fwd_chunk_id}"):
                return forward(fwd_chunk_id, *args, **kwargs)

        def backward_one_chunk(bwd_chunk_id, loss=None, full_backward=True, last_backward=False):
            if not stage.has_backward:
                return backward(
                    bwd_chunk_id,
                    loss=loss,
                    full_backward=full_backward,
                    last_backward=last_backward,
                )
            if not full_backward:
                with record_function(f"PP:{s}I{bwd_chunk_id}"):
                    return backward(
                        bwd_chunk_id, loss=loss, full_backward=False, last_backward=last_backward
                    )
            if bwd_chunk_id % 2 == 1:
                # Every other microbatch runs fused, as the script asked, so that the profile
                # measures the fused backward (BW) beside its split into I and W: on some
                # hardware the split costs more than the fused pass (docs/cost-model.md §2).
                with record_function(f"PP:{s}B{bwd_chunk_id}"):
                    return backward(
                        bwd_chunk_id, loss=loss, full_backward=True, last_backward=last_backward
                    )
            # As _PipelineScheduleRuntime runs an I then a W: the DP gradient sync that
            # last_backward asks for belongs to the W, which completes the gradients.
            with record_function(f"PP:{s}I{bwd_chunk_id}"):
                backward(bwd_chunk_id, loss=loss, full_backward=False, last_backward=False)
            with record_function(f"PP:{s}W{bwd_chunk_id}"):
                weight(bwd_chunk_id, last_backward=last_backward)

        def backward_weight_one_chunk(bwd_chunk_id, last_backward=False):
            with record_function(f"PP:{s}W{bwd_chunk_id}"):
                return weight(bwd_chunk_id, last_backward=last_backward)

        stage.forward_one_chunk = forward_one_chunk
        stage.backward_one_chunk = backward_one_chunk
        stage.backward_weight_one_chunk = backward_weight_one_chunk
        for name, token in (("get_fwd_send_ops", "SEND_F"), ("get_fwd_recv_ops", "RECV_F"),
                            ("get_bwd_send_ops", "SEND_B"), ("get_bwd_recv_ops", "RECV_B")):  # fmt: skip
            setattr(stage, name, _labelled_ops(getattr(stage, name), f"PP:{s}{token}"))

    def remove(self) -> None:
        self.module._batch_p2p = self.batch_p2p
        for stage, name, previous in reversed(self.saved):
            if previous is _ABSENT:
                stage.__dict__.pop(name, None)
            else:
                stage.__dict__[name] = previous


_ABSENT = object()


def _labelled_ops(get_ops, prefix: str):
    def labelled(chunk_id):
        ops = get_ops(chunk_id)
        for op in ops:
            op._zbkit_label = f"{prefix}{chunk_id}"
        return ops

    return labelled


def _labelled_batch_p2p(batch_p2p, record_function):
    import contextlib  # noqa: PLC0415

    def labelled(p2p_ops, *args, **kwargs):
        labels = dict.fromkeys(getattr(op, "_zbkit_label", None) for op in p2p_ops)
        labels.pop(None, None)
        # One call posts the whole batch (1F1B fuses a send with the next receive so that NCCL
        # cannot deadlock), so each of its ops gets a range over that call: nested, the same span.
        with contextlib.ExitStack() as ranges:
            for label in labels:
                ranges.enter_context(record_function(label))
            return batch_p2p(p2p_ops, *args, **kwargs)

    return labelled


# ---------------------------------------------------------------------------------------------
# Activation memory


class _Saved:
    """What the pack hook stores in place of a counted tensor; its release is the tensor's."""

    __slots__ = ("tensor", "key", "report")

    def __init__(self, tensor, key, report):
        self.tensor, self.key, self.report = tensor, key, report

    def __del__(self):
        self.report.release(self.key)


class _MemoryReport:
    """The peak, over this process's steps, of the bytes autograd holds saved for backward."""

    def __init__(self, directory: str):
        self.directory = directory
        # The autograd engine may drop saved tensors on its device threads.
        self.lock = threading.Lock()
        self.live: Dict[tuple, List[int]] = {}  # storage -> [saved references, bytes]
        self.bytes = self.peak = self.steps = 0
        self.rank: Optional[int] = None
        atexit.register(self.write)

    def pack(self, tensor):
        import torch  # noqa: PLC0415

        # A view of a parameter (mm saves weight.t()) is the parameter's memory, not an activation.
        base = tensor._base if tensor._base is not None else tensor
        if isinstance(base, torch.nn.Parameter) or (base.requires_grad and base.is_leaf):
            return tensor
        try:
            storage = tensor.untyped_storage()
            # data_ptr is unique while the storage lives, which our reference guarantees.
            key = (storage.device.type, storage.device.index, storage.data_ptr())
            size = storage.nbytes()
        except (RuntimeError, NotImplementedError):  # no plain storage (sparse, functional ...)
            return tensor
        with self.lock:
            entry = self.live.get(key)
            if entry is None:
                self.live[key] = [1, size]
                self.bytes += size
                self.peak = max(self.peak, self.bytes)
            else:
                entry[0] += 1
        return _Saved(tensor, key, self)

    @staticmethod
    def unpack(packed):
        return packed.tensor if type(packed) is _Saved else packed

    def release(self, key) -> None:
        with self.lock:
            entry = self.live[key]
            entry[0] -= 1
            if entry[0] == 0:
                del self.live[key]
                self.bytes -= entry[1]

    def write(self) -> None:
        import json  # noqa: PLC0415

        rank = self.rank if self.rank is not None else _rank()
        os.makedirs(self.directory, exist_ok=True)
        target = os.path.join(self.directory, f"memory.rank{rank}.json")
        report = {"rank": rank, "peak_activation_bytes": self.peak, "steps": self.steps}
        with open(target, "w") as handle:
            json.dump(report, handle)
            handle.write("\n")


_memory: Optional[_MemoryReport] = None


def _measured(target, step_function, args, kwargs):
    """Runs one step under the memory hooks (ZBKIT_MEMORY_REPORT) and the profile window."""
    global _memory
    directory = os.environ.get("ZBKIT_MEMORY_REPORT")
    if not directory:
        return _profiled(target, step_function, args, kwargs)
    import torch  # noqa: PLC0415

    if _memory is None:
        _memory = _MemoryReport(directory)
    if _memory.rank is None:
        _memory.rank = _rank()  # at exit the process group may be gone
    with torch.autograd.graph.saved_tensors_hooks(_memory.pack, _MemoryReport.unpack):
        result = _profiled(target, step_function, args, kwargs)
    _memory.steps += 1
    return result


# ---------------------------------------------------------------------------------------------
# Installing


def patch_schedules(module) -> None:
    """Wraps `step` of the schedule base classes (every pipelining schedule inherits one of them)
    and of any class in the module that defines its own."""
    for name in dir(module):
        cls = getattr(module, name)
        if not isinstance(cls, type) or "step" not in cls.__dict__:
            continue
        if not issubclass(cls, module._PipelineSchedule):
            continue
        original = cls.__dict__["step"]
        if getattr(original, "_zbkit_patched", False):
            continue
        cls.step = _wrap_step(original)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when torch.distributed.pipelining.schedules is imported, it lets the
    normal finders locate it and patches the module right after it executes."""

    def find_spec(self, fullname, path, target=None):
        if fullname != SCHEDULES_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        original_exec = spec.loader.exec_module

        def exec_module(module):
            original_exec(module)
            patch_schedules(module)

        spec.loader.exec_module = exec_module
        return spec


ACTIVATING = ("ZBKIT_SCHEDULE", "ZBKIT_TORCH_PROFILE", "ZBKIT_MEMORY_REPORT")


def install() -> bool:
    """Activates the shim when one of ACTIVATING is set; returns whether it did. Safe to call more
    than once."""
    if not any(os.environ.get(name) for name in ACTIVATING):
        return False
    if SCHEDULES_MODULE in sys.modules:
        patch_schedules(sys.modules[SCHEDULES_MODULE])
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
    return True

# SPDX-License-Identifier: Apache-2.0
"""The shim's profiling window (ZBKIT_TORCH_PROFILE): torch.profiler over a few steps, with
`PP:<action>` ranges added for schedules whose own loop records none (see zbkit.pipelining)."""

from __future__ import annotations

import atexit
import os
import sys
from typing import Optional

from ..._data_parallel import SPLIT_BACKWARD, reduced_bytes, split_under_ddp, unsharded_bytes
from ...actions import torch_label
from .._stages import local_stages, process_rank
from . import blocks

# The trace metadata key naming the schedule class (kScheduleClassKey in zbkit/profiler/trace.h).
SCHEDULE_CLASS_KEY = "zbkit_schedule_class"
# The job's activation checkpointing (kCheckpointingKey, zbkit.checkpointing.job_mode).
CHECKPOINTING_KEY = "zbkit_checkpointing"
# The pipeline this process's stages were built on (kPipelineKey): "<rank>/<size>/<first>", its
# rank in the stages' process group, the group's size and its lowest global rank (which tells the
# data-parallel replicas of one pipeline apart, whatever the order of the job's device mesh).
PIPELINE_KEY = "zbkit_pipeline"
# The bytes FSDP's all-gathers add on this process (kUnshardedKey, _data_parallel.unsharded_bytes),
# written only where some stage is sharded.
UNSHARDED_KEY = "zbkit_unsharded"
# The bytes of gradients this process's data-parallel reductions take in per step (kReducedKey,
# _data_parallel.reduced_bytes), written only where some stage is reduced.
REDUCED_KEY = "zbkit_reduced"


def pipeline_group(schedule) -> str:
    """PIPELINE_KEY's value for the stages of `schedule` on this process."""
    import torch.distributed as dist  # noqa: PLC0415

    stage = local_stages(schedule)[0]
    members = dist.get_process_group_ranks(stage.group) if stage.group is not None else \
        list(range(dist.get_world_size()))  # fmt: skip
    return f"{stage.group_rank}/{stage.group_size}/{min(members)}"


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
        # Per-block costs (zbkit.pipelining.measure.blocks): inputs kept in the first profiled step, the
        # blocks measured after the window; ZBKIT_PROFILE_BLOCKS=0 turns it off.
        self.measure_blocks = os.environ.get("ZBKIT_PROFILE_BLOCKS", "1") != "0"
        self.capture = None
        self.fused_only = {}  # id(schedule) -> whether its backwards must stay fused
        atexit.register(self.say_if_short)

    def may_split(self, schedule) -> bool:
        """Whether the window may split `schedule`'s backwards into I and W to measure B and W
        apart: not on a DDP stage, whose gradient all-reduce a split skips (zbkit._data_parallel);
        there the backwards stay fused (BW measured, B and W not apart), said once."""
        key = id(schedule)
        if key not in self.fused_only:
            stages = [(stage.stage_index, stage.submod) for stage in local_stages(schedule)]
            # The refusal's sentence, with what the window does instead in place of its remedy.
            instead = (
                "the profiling window keeps its backwards fused (BW measured, B and W not apart)"
            )
            ddp = split_under_ddp(stages, f"zbkit: rank {process_rank()}",
                                  (SPLIT_BACKWARD[0], instead))  # fmt: skip
            self.fused_only[key] = ddp is not None
            if ddp:
                sys.stderr.write(ddp + "\n")
                sys.stderr.flush()
        return not self.fused_only[key]

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

    def name_schedule(self, schedule) -> None:
        """Records the schedule class the job runs and how this rank's stages checkpoint their
        activations in the trace (top-level metadata, read by `zb import` into the profile,
        docs/formats.md §1, docs/activation-checkpointing.md §1), once per window."""
        if self.profiler is None or self.named:
            return
        self.named = True
        self.profiler.add_metadata(SCHEDULE_CLASS_KEY, type(schedule).__name__)
        try:
            from ... import checkpointing  # noqa: PLC0415

            stage_blocks = [
                block
                for stage in local_stages(schedule)
                for _, block in blocks.stage_blocks(stage.submod)
            ]
            self.profiler.add_metadata(CHECKPOINTING_KEY, checkpointing.job_mode(stage_blocks))
        except Exception as error:  # the profile then says nothing of it
            blocks.warn(f"activation checkpointing not recorded: {error}")
        try:
            self.profiler.add_metadata(PIPELINE_KEY, pipeline_group(schedule))
        except Exception as error:  # the profiler then reads ranks from the global ranks
            blocks.warn(f"the stages' pipeline group not recorded: {error}")
        for key, count, what in ((UNSHARDED_KEY, unsharded_bytes, "FSDP's unsharded parameter"),
                                 (REDUCED_KEY, reduced_bytes, "the reduced gradients'")):  # fmt: skip
            try:
                found = count(stage.submod for stage in local_stages(schedule))
                if found > 0:
                    self.profiler.add_metadata(key, str(found))
            except Exception as error:  # the profile then leaves the field out
                blocks.warn(f"{what} bytes not recorded: {error}")

    def after(self) -> None:
        self.steps += 1
        if self.profiler is not None:
            self.profiler.step()  # marks ProfilerStep#N: the importer's iteration boundary
            if self.steps >= self.skip + self.iters:
                self.finish()

    def say_if_short(self) -> None:
        """One warning (rank 0's) when the job ran fewer steps than the window asked for: the
        profile then holds fewer iterations than the user meant, or none."""
        wanted = self.skip + self.iters
        if self.steps >= wanted or process_rank() != 0:
            return
        profiled = max(0, self.steps - self.skip)
        sys.stderr.write(
            f"zbkit: warning: the job ran {self.steps} steps, fewer than the {self.skip} skipped "
            f"+ {self.iters} profiled the window asked for: {profiled} profiled (zb profile "
            "--torch-skip / --torch-iters)\n"
        )
        sys.stderr.flush()

    def finish(self) -> None:
        if self.profiler is None or self.done:
            return
        self.done = True
        profiler, self.profiler = self.profiler, None
        profiler.__exit__(None, None, None)
        os.makedirs(self.directory, exist_ok=True)
        target = os.path.join(self.directory, f"rank{process_rank()}.json.gz")
        profiler.export_chrome_trace(target)
        if self.capture is not None:
            capture, self.capture = self.capture, None
            try:
                blocks.measure_and_write(capture, self.directory)
            except Exception as error:  # the job goes on without per-block costs
                blocks.warn(f"not measured: {error}")

    def capture_blocks(self, schedule):
        """The hooks that keep each block's inputs, for the first profiled step only."""
        if not self.measure_blocks or self.profiler is None or self.capture is not None:
            return None
        try:
            self.capture = blocks.Capture(schedule)
        except Exception as error:
            self.measure_blocks = False
            blocks.warn(f"not measured: {error}")
            return None
        return self.capture


_window: Optional[_ProfileWindow] = None


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value.strip() else default
    except ValueError:
        sys.stderr.write(f"zbkit: {name}={value!r} is not an integer; using {default}\n")
        return default


class _BlocksOnly:
    """Per-block costs without torch.profiler (ZBKIT_BLOCKS_DIR: `zb profile` through the
    injection library, which records the stages itself): the blocks' inputs kept in step
    ZBKIT_PROFILE_SKIP, the blocks measured right after it."""

    def __init__(self, directory: str, skip: int):
        self.directory, self.skip, self.steps = directory, skip, 0

    def step(self, target, step_function, args, kwargs):
        capture = None
        if self.steps == self.skip:
            try:
                blocks.watch_optimizers()
                capture = blocks.Capture(target)
            except Exception as error:
                blocks.warn(f"not measured: {error}")
        try:
            return step_function(target, *args, **kwargs)
        finally:
            self.steps += 1
            if capture is not None:
                capture.remove()
                try:
                    blocks.measure_and_write(capture, self.directory)
                except Exception as error:  # the job goes on without per-block costs
                    blocks.warn(f"not measured: {error}")


_blocks_only: Optional[_BlocksOnly] = None


def profiled(target, step_function, args, kwargs):
    global _window, _blocks_only
    directory = os.environ.get("ZBKIT_TORCH_PROFILE")
    if not directory:
        blocks_dir = os.environ.get("ZBKIT_BLOCKS_DIR")
        if not blocks_dir:
            return step_function(target, *args, **kwargs)
        if _blocks_only is None:
            _blocks_only = _BlocksOnly(blocks_dir, _env_int("ZBKIT_PROFILE_SKIP", 1))
        return _blocks_only.step(target, step_function, args, kwargs)
    if _window is None:
        _window = _ProfileWindow(
            directory, _env_int("ZBKIT_PROFILE_SKIP", 1), _env_int("ZBKIT_PROFILE_ITERS", 3)
        )
    try:
        blocks.watch_optimizers()
    except Exception as error:  # optimizer state is then left out of `state`
        blocks.warn(f"optimizer state not seen: {error}")
    _window.before()
    _window.name_schedule(target)
    labels = None
    capture = _window.capture_blocks(target)
    try:
        if _window.profiler is not None:
            split = _window.may_split(target)
            if not _records_pp_ranges(target):
                labels = _StageLabels(target, split)
            elif split:
                labels = _SplitBackwards(target)
        return step_function(target, *args, **kwargs)
    finally:
        if labels is not None:
            labels.remove()
        if capture is not None:
            capture.remove()
        _window.after()


def _records_pp_ranges(schedule) -> bool:
    from torch.distributed.pipelining import schedules as torch_schedules  # noqa: PLC0415

    return isinstance(schedule, torch_schedules._PipelineScheduleRuntime)


class _SplitBackwards:
    """For one step of a schedule that `_PipelineScheduleRuntime` runs (Interleaved1F1B,
    LoopedBFS, or an order loaded from a CSV) whose backwards are fused ("B" actions): the full
    backward of every even microbatch runs as "I" then "W" in its place, the odd ones stay fused,
    as _StageLabels does for single-stage schedules, so that the profile measures B and W apart
    (and BW) whatever schedule the job runs. The runtime records each action's `PP:` range itself.
    The lowered order (with its communication) is edited in place and put back by remove(); the
    gradients are the same either way."""

    def __init__(self, schedule):
        from torch.distributed.pipelining import schedules as module  # noqa: PLC0415

        self.schedule = None
        lowered = getattr(schedule, "pipeline_order_with_comms", None)
        if not isinstance(lowered, dict):
            return
        split = {rank: _split_even(actions, module) for rank, actions in lowered.items()}
        if all(len(split[rank]) == len(lowered[rank]) for rank in lowered):
            return  # nothing fused to split
        self.schedule, self.lowered = schedule, lowered
        schedule.pipeline_order_with_comms = split

    def remove(self) -> None:
        if self.schedule is not None:
            self.schedule.pipeline_order_with_comms = self.lowered


def _split_even(actions, module) -> list:
    kinds = module._ComputationType
    split = []
    for action in actions:
        if (
            action is not None
            and action.computation_type == kinds.FULL_BACKWARD
            and action.microbatch_index is not None
            and action.microbatch_index % 2 == 0
            and action.sub_actions is None
        ):
            stage, mb = action.stage_index, action.microbatch_index
            split.append(module._Action(stage, kinds.BACKWARD_INPUT, mb))
            split.append(module._Action(stage, kinds.BACKWARD_WEIGHT, mb))
        else:
            split.append(action)
    return split


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

    def __init__(self, schedule, split: bool = True):
        from torch.distributed.pipelining import schedules as module  # noqa: PLC0415
        from torch.profiler import record_function  # noqa: PLC0415

        self.module = module
        self.saved = []
        for stage in local_stages(schedule):
            for name in self.METHODS:
                self.saved.append((stage, name, stage.__dict__.get(name, _ABSENT)))
            self._wrap(stage, record_function, split)
        self.batch_p2p = module.__dict__["_batch_p2p"]
        module._batch_p2p = _labelled_batch_p2p(self.batch_p2p, record_function)

    @staticmethod
    def _wrap(stage, record_function, split: bool) -> None:
        forward, backward = stage.forward_one_chunk, stage.backward_one_chunk
        weight = stage.backward_weight_one_chunk
        s = stage.stage_index

        def forward_one_chunk(fwd_chunk_id, *args, **kwargs):
            with record_function(_label("F", s, fwd_chunk_id)):
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
                with record_function(_label("B", s, bwd_chunk_id)):
                    return backward(
                        bwd_chunk_id, loss=loss, full_backward=False, last_backward=last_backward
                    )
            if bwd_chunk_id % 2 == 1 or not split:
                # Every other microbatch runs fused, as the script asked, so that the profile
                # measures the fused backward (BW) beside its split into I and W: on some
                # hardware the split costs more than the fused pass (docs/cost-model.md §2).
                # Every one does where a split is unsafe (a DDP stage: may_split).
                with record_function(_label("BW", s, bwd_chunk_id)):
                    return backward(
                        bwd_chunk_id, loss=loss, full_backward=True, last_backward=last_backward
                    )
            # As _PipelineScheduleRuntime runs an I then a W: the DP gradient sync that
            # last_backward asks for belongs to the W, which completes the gradients.
            with record_function(_label("B", s, bwd_chunk_id)):
                backward(bwd_chunk_id, loss=loss, full_backward=False, last_backward=False)
            with record_function(_label("W", s, bwd_chunk_id)):
                weight(bwd_chunk_id, last_backward=last_backward)

        def backward_weight_one_chunk(bwd_chunk_id, last_backward=False):
            with record_function(_label("W", s, bwd_chunk_id)):
                return weight(bwd_chunk_id, last_backward=last_backward)

        stage.forward_one_chunk = forward_one_chunk
        stage.backward_one_chunk = backward_one_chunk
        stage.backward_weight_one_chunk = backward_weight_one_chunk
        for name, token in (("get_fwd_send_ops", "SEND_F"), ("get_fwd_recv_ops", "RECV_F"),
                            ("get_bwd_send_ops", "SEND_B"), ("get_bwd_recv_ops", "RECV_B")):  # fmt: skip
            setattr(stage, name, _labelled_ops(getattr(stage, name), _label(token, s, None)))

    def remove(self) -> None:
        self.module._batch_p2p = self.batch_p2p
        for stage, name, previous in reversed(self.saved):
            if previous is _ABSENT:
                stage.__dict__.pop(name, None)
            else:
                stage.__dict__[name] = previous


_ABSENT = object()


def _label(kind: str, stage: int, microbatch) -> str:
    """torch's profiler range for zbkit's `kind` (zbkit.actions): "PP:3I7" for B."""
    return "PP:" + torch_label(kind, stage, microbatch)


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

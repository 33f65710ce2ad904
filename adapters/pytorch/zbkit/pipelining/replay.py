# SPDX-License-Identifier: Apache-2.0
"""The shim's replay: a schedule file (ZBKIT_SCHEDULE) read, checked against the stages the
script built and loaded into PyTorch's `_PipelineScheduleRuntime` (see zbkit.pipelining)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from typing import List, Optional, Sequence, Set, Tuple

from .. import locate, torch_rules
from .._data_parallel import split_under_ddp
from ..errors import ScheduleRefused
from ..schedule import placement_of_rank
from ._stages import local_stages

# A schedule that cannot run on the stages the script built; the message is the one line.
Refusal = ScheduleRefused


# ---------------------------------------------------------------------------------------------
# Reading the schedule


def _is_json(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(64).lstrip()[:1] == b"{"


def schedule_csv(path: str) -> str:
    """The CSV to load for ZBKIT_SCHEDULE=path: the file itself, or `zb export`'s conversion of a
    zb-schedule/1 JSON file (written next to nothing the user owns: a private temp file, which the
    caller removes once loaded: a rank that is refused or killed runs no atexit)."""
    try:
        json_file = _is_json(path)
    except OSError as error:
        raise Refusal(f"zbkit: cannot read ZBKIT_SCHEDULE {path}: {error.strerror}") from None
    if not json_file:
        return path
    handle, converted = tempfile.mkstemp(prefix="zbkit-schedule-", suffix=".csv")
    os.close(handle)
    command = [locate.zb_binary(), "export", path, "--format", "torch-csv", "-o", converted]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        _remove_quietly(converted)
        raise Refusal(
            f"zbkit: cannot run {command[0]} to convert {path} (set ZBKIT_ZB_BINARY): "
            f"{error.strerror}"
        ) from None
    if done.returncode != 0:
        _remove_quietly(converted)
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Refusal(f"zbkit: zb export could not convert {path}: {detail}")
    return converted


def _profiled_checkpointing(path: str) -> str:
    """The activation checkpointing of the job a zb-schedule/1 file was tuned for (its
    costs.checkpointing), "" for a CSV or a schedule that does not say."""
    try:
        if not _is_json(path):
            return ""
        with open(path) as handle:
            value = json.load(handle).get("costs", {}).get("checkpointing", "")
    except (OSError, ValueError, AttributeError):
        return ""  # zb export, which converts the file, reports what is wrong with it
    return value if isinstance(value, str) else ""


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
                kind = action.computation_type.value  # torch's token (zbkit.actions)
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


def refuse(message: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    # os._exit: the peers may already be gone, and interpreter teardown of a process group whose
    # peers left can block; the refusal must end this rank now, with a failure code.
    os._exit(1)


def prepare(schedule, path: str):
    """Checks the schedule against `schedule`'s stages and returns the runtime that runs it."""
    stages = local_stages(schedule)
    csv_path = schedule_csv(path)
    try:
        return _prepare(schedule, stages, path, csv_path)
    finally:
        if csv_path != path:  # a conversion: loaded (or refused) now, not needed any more
            _remove_quietly(csv_path)


def _apply_plan(plan_path: str, stages, rank: int) -> None:
    """The memory plan `zb replay --checkpointing-plan` names (docs/memory-plan.md §5), applied
    to this rank's stages before step 1; a plan made for other blocks is refused in one line."""
    from ..checkpointing_plan import apply_to_stage  # noqa: PLC0415
    from ..errors import SplitError  # noqa: PLC0415
    from ..split import read_split  # noqa: PLC0415

    try:
        split = read_split(plan_path)
        changed = {}
        for stage in stages:
            if stage.stage_index >= split.num_stages:
                raise SplitError(f"{plan_path}: has {split.num_stages} stages, the job more")
            # A plan from a profile whose stages name their blocks alike carries "stage<S>."
            # (docs/partition.md §4); the stage module itself does not.
            prefix = f"stage{stage.stage_index}."
            planned = {name[len(prefix):] if name.startswith(prefix) else name: mode
                       for name, mode in split.planned_modes(stage.stage_index).items()}  # fmt: skip
            if len(planned) != len(split.stages[stage.stage_index]):
                raise SplitError(
                    f"{plan_path}: stage {stage.stage_index}: not every block has a mode"
                )
            where = f"{plan_path}: stage {stage.stage_index}"
            changed.update(apply_to_stage(stage.submod, planned, where))
    except SplitError as error:
        raise Refusal(f"zbkit: rank {rank}: checkpointing plan {error}") from None
    counts = {mode: list(changed.values()).count(mode) for mode in sorted(set(changed.values()))}
    summary = ", ".join(f"{count} block(s) now '{mode}'" for mode, count in counts.items())
    sys.stderr.write(
        f"zbkit: rank {rank}: checkpointing plan {plan_path}: {summary or 'no block changed'}\n"
    )


def _prepare(schedule, stages, path: str, csv_path: str):
    from torch.distributed.pipelining import schedules as torch_schedules  # noqa: PLC0415

    from .. import checkpointing  # noqa: PLC0415 - needs torch, which the shim loads on use

    first = stages[0]
    rank, ranks, num_stages = first.group_rank, first.group_size, first.num_stages
    shape = read_shape(csv_path)
    local = {stage.stage_index for stage in stages}
    check_fit(shape, local, rank, ranks, num_stages, schedule._n_microbatches)
    # What the user named (`zb replay` passes its FILE or "DB schedule ID"; the file the shim
    # reads is a temporary CSV converted from it).
    shown = os.environ.get("ZBKIT_SCHEDULE_NAME") or path
    broken = torch_rules.check(shape.rows, shape.num_stages)
    if broken:
        raise Refusal(f"zbkit: {shown}: {broken}")
    if any(kind in ("I", "W") for _, kind, _ in shape.rows[rank]):
        ddp = split_under_ddp(((s.stage_index, s.submod) for s in stages), f"zbkit: rank {rank}")
        if ddp:
            raise Refusal(f"{ddp} ({shown} splits backwards)")
        stages_split = {s for s, kind, _ in shape.rows[rank] if kind in ("I", "W")}
        unsplittable = checkpointing.split_refusal(
            [(s.stage_index, s.submod) for s in stages if s.stage_index in stages_split],
            f"zbkit: rank {rank}",
        )
        if unsplittable:
            raise Refusal(f"{unsplittable} ({shown} splits backwards)")
    plan_path = os.environ.get("ZBKIT_CHECKPOINTING_PLAN")
    if plan_path:
        _apply_plan(plan_path, stages, rank)
    mismatch = checkpointing.profile_mismatch(
        _profiled_checkpointing(path), [(s.stage_index, s.submod) for s in stages],
        f"zbkit: rank {rank}", shown,
    )  # fmt: skip
    if mismatch:
        raise Refusal(mismatch)
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
        raise Refusal(f"zbkit: PyTorch rejected the schedule {shown}: {first_line}") from None
    sys.stderr.write(
        f"zbkit: rank {rank}: replaying {shown} ({shape.num_stages} stages, {shape.placement()} "
        f"placement, {shape.microbatches} microbatches) through _PipelineScheduleRuntime in place "
        f"of {type(schedule).__name__}'s order\n"
    )
    sys.stderr.flush()
    return runtime

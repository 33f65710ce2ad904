# SPDX-License-Identifier: Apache-2.0
"""The shim's progress record (ZBKIT_PROGRESS_DIR, zbkit.progress): where torch's own pipelining
runtime is, for `zb doctor`.

torch's `_PipelineScheduleRuntime` names every action it runs, sends and receives included,
through the module function `_get_profiler_function_name` (its `PP:<action>` ranges). The shim
wraps that function: each call is the next action of the rank's `pipeline_order_with_comms`,
whose list is the program the record holds. Schedules that torch does not run through that
runtime (Schedule1F1B, ScheduleGPipe without `zb replay`) name no actions and get no record."""

from __future__ import annotations

import os
import sys
from typing import List, Optional, Tuple

from .. import actions
from .. import progress as progress_record


def _program(order) -> List[Tuple[str, int, int]]:
    program = []
    for action in order:
        if action is None:
            program.append(("OTHER", -1, -1))
            continue
        program.append(actions.from_torch(action))
    return program


class _Tracker:
    """The record of this process and the order it was made for."""

    def __init__(self) -> None:
        self.record: Optional[progress_record.ProgressRecord] = None
        self.order = None  # the list object the record's program came from
        self.program: List[Tuple[str, int, int]] = []
        self.next_action = 0
        self.stepping = False
        self.disabled = False

    def for_runtime(self, runtime) -> Optional[progress_record.ProgressRecord]:
        orders = getattr(runtime, "pipeline_order_with_comms", None)
        rank = getattr(runtime, "rank", None)
        if not orders or rank is None or rank not in orders:
            return None
        order = orders[rank]
        if order is not self.order:
            program = _program(order)
            if self.record is None or program != self.program:
                if self.record is not None:
                    self.record.close()
                self.record = progress_record.open_from_environment(
                    rank, runtime.pp_group_size, program, runtime._n_microbatches,
                    runtime._num_stages, progress_record.SOURCE_TORCH_RUNTIME,
                )  # fmt: skip
                self.program = program
            self.order = order
        return self.record


_tracker = _Tracker()


def patch_action_names(module) -> None:
    """Wraps the schedules module's `_get_profiler_function_name` (once): the runtime calls it
    as each action begins."""
    original = module._get_profiler_function_name
    if getattr(original, "_zbkit_progress", False):
        return

    def named(action):
        tracker = _tracker
        if tracker.stepping and tracker.record is not None:
            tracker.record.action(tracker.next_action)
            tracker.next_action += 1
        return original(action)

    named._zbkit_progress = True
    named.__wrapped__ = original
    module._get_profiler_function_name = named


def tracked(runtime, call):
    """Runs `call` (one step of `runtime`) with the rank's progress recorded, when
    ZBKIT_PROGRESS_DIR is set and `runtime` is torch's action runtime."""
    if not os.environ.get(progress_record.DIR_VARIABLE) or _tracker.disabled:
        return call()
    try:
        record = _tracker.for_runtime(runtime)
    except Exception as error:  # noqa: BLE001 - the record must never harm the job
        _tracker.disabled = True
        print(f"zbkit: warning: cannot follow {type(runtime).__name__}'s actions ({error}); no "
              f"progress record", file=sys.stderr, flush=True)  # fmt: skip
        return call()
    if record is None:
        return call()
    record.iteration_begin()
    _tracker.next_action = 0
    _tracker.stepping = True
    try:
        result = call()
    except BaseException as error:
        record.raised(error)
        raise
    finally:
        _tracker.stepping = False
    record.iteration_end()
    return result

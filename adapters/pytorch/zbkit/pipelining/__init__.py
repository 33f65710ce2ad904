# SPDX-License-Identifier: Apache-2.0
"""zbkit inside unmodified torch.distributed.pipelining scripts: replays zbkit's schedules, measures
the job (profile, per-block costs, activation memory) and records its progress.

`zb replay` puts zbkit/_hook on PYTHONPATH; its sitecustomize calls `install()`, which does
nothing unless one of these is set:

- `ZBKIT_SCHEDULE=PATH`: a PyTorch schedule CSV written by `zb export --format torch-csv` (or
  `torch-csv-comms`), or a zb-schedule/1 JSON file, which is converted by running
  `zb export` (`zbkit.locate.zb_binary`: `ZBKIT_ZB_BINARY`, else the `zb` on PATH). The first `step()` of every
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
  `PP:<s>SEND_F<mb>`, `PP:<s>RECV_B<mb>`, ... (the ranges torch's runtime records). Schedules
  that torch's runtime runs from a compute-only order of fused backwards (Interleaved1F1B,
  LoopedBFS) get the same split in the window: every even microbatch's `B` action runs as `I` then
  `W` (the order lowered again by the runtime, and put back after each step), so that the profile
  has B and W apart, and BW, whatever schedule the job runs.
- `ZBKIT_BLOCKS_DIR=DIR` (without ZBKIT_TORCH_PROFILE, as `zb profile` sets it beside the
  injection library): the per-block costs alone (zbkit.pipelining.measure.blocks), the blocks' inputs kept in
  step ZBKIT_PROFILE_SKIP (default 1) and measured right after it, into DIR/rank<R>.blocks.json.
  With ZBKIT_TORCH_PROFILE the profiling window measures them (into its own DIR).
- `ZBKIT_PROGRESS_DIR=DIR` (`zb replay` and `zb profile` set it): each rank keeps
  DIR/rank<R>.progress, the action torch's runtime is in, for `zb doctor` (zbkit.pipelining.progress,
  docs/stalls.md).
- `ZBKIT_MEMORY_REPORT=DIR`: every `step()` runs under `saved_tensors_hooks` that track the bytes
  of the tensors autograd saves (zbkit._saved_bytes: the stages' parameters and buffers left out,
  each storage counted once while a saved reference to it lives), and at exit each rank writes
  DIR/memory.rank<R>.json: {"rank": R, "peak_activation_bytes": N, "steps": K}.

The patch is applied when torch.distributed.pipelining.schedules is first imported (an import
hook), so processes that never import it (torchrun itself, tools) do not pay for importing torch.

The features live apart and this module installs them: `replay` (the schedule file), `measure`
(`measure.window`: the profiling window; `measure.blocks`: per-block costs; `measure.memory`: the
activation-memory report; all three count saved bytes through zbkit._saved_bytes), `progress`
(the progress record), `recompute` (each checkpointed block recomputed once under a split order:
zbkit.checkpointing).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import sys

from .measure.memory import measured
from .progress import patch_action_names, tracked
from .replay import Refusal, check_fit, prepare, read_shape, refuse, schedule_csv

__all__ = ["ACTIVATING", "Refusal", "check_fit", "install", "patch_schedules", "read_shape",
           "schedule_csv"]  # fmt: skip

SCHEDULES_MODULE = "torch.distributed.pipelining.schedules"


def _with_progress(step_function):
    """`step_function` with the rank's progress recorded (innermost, so that the record's program
    is the order the step really runs, after the profiling window changed it)."""

    def step(schedule, /, *args, **kwargs):  # the script may pass `target=`
        return tracked(schedule, lambda: step_function(schedule, *args, **kwargs))

    return step


def recompute_once(schedule) -> None:
    # Imported on the first step: it needs torch.utils.checkpoint, which processes that only load
    # the shim (torchrun's launcher) must not pay for.
    from .recompute import recompute_once as wrap  # noqa: PLC0415

    wrap(schedule)


def _wrap_step(original_step):
    @functools.wraps(original_step)
    def step(self, *args, **kwargs):
        path = os.environ.get("ZBKIT_SCHEDULE")
        if path:
            runtime = self.__dict__.get("_zbkit_runtime")
            if runtime is None:
                try:
                    runtime = prepare(self, path)
                except Refusal as refusal:
                    refuse(str(refusal))
                self.__dict__["_zbkit_runtime"] = runtime
                runtime.__dict__["_zbkit_runtime"] = runtime
            if runtime is not self:
                # The delegate's own step is this wrapper too: run the unwrapped one.
                inner = type(runtime).step
                inner = getattr(inner, "__wrapped__", inner)
                recompute_once(runtime)
                return measured(runtime, _with_progress(inner), args, kwargs)
        recompute_once(self)
        return measured(self, _with_progress(original_step), args, kwargs)

    step._zbkit_patched = True
    return step


def patch_schedules(module) -> None:
    """Wraps `step` of the schedule base classes (every pipelining schedule inherits one of them)
    and of any class in the module that defines its own; and the runtime's action names, which
    the progress record follows."""
    patch_action_names(module)
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


ACTIVATING = ("ZBKIT_SCHEDULE", "ZBKIT_TORCH_PROFILE", "ZBKIT_MEMORY_REPORT", "ZBKIT_BLOCKS_DIR",
              "ZBKIT_PROGRESS_DIR")  # fmt: skip


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

# SPDX-License-Identifier: Apache-2.0
"""One rank of the fault suite's job (test_stalls.py), started by torchrun under `zb replay`.

    torchrun --nproc-per-node P fault_job.py SPEC.json

SPEC: {"runner": "torch" | "executor", "schedule": zb-schedule/1 path, "rank_schedules":
{"R": path} (a rank that runs another file), "steps": N, "fault": {"kind": "raise" | "sleep" |
"kill" | "stop", "rank": R, "step": T, "stage": S, "forward": K, "seconds": X, "note": PATH} or
null, "flight_recorder_out": PATH with {rank} (optional: what torch's flight recorder kept)}.

The test model of pipeline_worker on gloo. "torch" runs the schedule in torch's own runtime, loaded
by zbkit's shim from the rank's file (zbkit.pipelining.replay.prepare, what `zb replay` does in an
unmodified script); "executor" in zbkit's PipelineExecutor. Both keep the progress record that
`zb replay` turns on (ZBKIT_PROGRESS_DIR). The fault strikes in the K-th forward (0-based) that
stage S runs in step T on rank R: an exception, a sleep of X seconds (a straggler), SIGKILL or
SIGSTOP of the rank's own process; the time it struck goes to the note file first.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the support module

import pipeline_worker as pw  # noqa: E402
import torch.distributed as dist  # noqa: E402
from launch import schedule_from_json  # noqa: E402


class FaultAt:
    """A forward pre-hook on each local stage that strikes once, where the spec says."""

    def __init__(self, fault, rank: int) -> None:
        self.fault = fault if fault and fault["rank"] == rank else None
        self.step = -1
        self.calls = {}

    def new_step(self, step: int) -> None:
        self.step = step
        self.calls = {}

    def hook(self, stage: int):
        def pre_hook(module, args):
            if self.fault is None or not args or getattr(args[0], "device", None) is None:
                return
            if args[0].device.type == "meta":  # torch's shape inference, not a microbatch
                return
            k = self.calls.get(stage, 0)
            self.calls[stage] = k + 1
            f = self.fault
            if (self.step, stage, k) != (f["step"], f["stage"], f["forward"]):
                return
            self.fault = None
            # When the fault struck, for the test's time-to-diagnosis.
            Path(f["note"]).write_text(repr(time.time()))
            if f["kind"] == "raise":
                raise RuntimeError(f"injected fault in stage {stage} forward {k}")
            if f["kind"] == "sleep":
                time.sleep(f["seconds"])
            elif f["kind"] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif f["kind"] == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)

        return pre_hook


def write_flight_recorder(pattern: str, rank: int) -> None:
    """What torch's flight recorder (TORCH_FR_BUFFER_SIZE) holds of this rank's steps: its
    entries' names and states, as JSON to `pattern` with {rank} replaced (bench_progress.py)."""
    import pickle

    from torch._C._distributed_c10d import _dump_fr_trace

    dump = pickle.loads(_dump_fr_trace())
    entries = [{"name": e.get("profiling_name"), "state": e.get("state")}
               for e in dump.get("entries", [])]  # fmt: skip
    Path(pattern.replace("{rank}", str(rank))).write_text(
        json.dumps({"rank": rank, "entries": entries})
    )


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    path = spec.get("rank_schedules", {}).get(str(rank), spec["schedule"])
    schedule = schedule_from_json(json.loads(Path(path).read_text()))
    fault = FaultAt(spec.get("fault"), rank)
    if spec["runner"] == "executor":
        runner, modules = pw._build(schedule, rank, timeout_s=300)
        xs, ys = pw._step_inputs(schedule)
        run_step = lambda: runner.step(xs, ys)  # noqa: E731
    else:
        from zbkit import pipelining

        obj, modules = pw._torch_runtime(schedule, rank)
        runner = pipelining.replay.prepare(obj, path)
        run_step = lambda: pw._torch_step(runner, schedule, rank)  # noqa: E731
    for stage, module in modules.items():
        module.register_forward_pre_hook(fault.hook(stage))
    from zbkit.pipelining.progress import tracked

    for step in range(spec["steps"]):
        fault.new_step(step)
        if spec["runner"] == "executor":
            run_step()
        else:
            # What the shim's patched step() does around torch's: the progress record.
            tracked(runner, run_step)
        for module in modules.values():
            for p in module.parameters():
                p.grad = None
    if spec.get("flight_recorder_out"):
        write_flight_recorder(spec["flight_recorder_out"], rank)
    dist.destroy_process_group()
    print(f"rank {rank}: {spec['steps']} steps done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

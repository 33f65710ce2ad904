# SPDX-License-Identifier: Apache-2.0
"""The bundled job (examples/train_pipelining.py) profiled as a user profiles a job, without zbkit:
torch.profiler with `tensorboard_trace_handler(DIR)`, which writes
`<host>_<pid>.<ns>.pt.trace.json.gz` per rank, stepped once per iteration (after the optimizer's
step, the script's last call of each). Arguments: `--trace-dir DIR`, then the bundled job's."""

from __future__ import annotations

import os
import sys

import torch

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def main() -> int:
    assert sys.argv[1] == "--trace-dir"
    trace_dir = sys.argv[2]
    del sys.argv[1:3]
    profiler = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=0, active=2, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(trace_dir, use_gzip=True),
    )
    optimizer_step = torch.optim.SGD.step

    def step_and_mark(self, *args, **kwargs):
        result = optimizer_step(self, *args, **kwargs)
        profiler.step()
        return result

    torch.optim.SGD.step = step_and_mark
    sys.path.insert(0, EXAMPLES)
    import train_pipelining  # noqa: PLC0415

    with profiler:
        return train_pipelining.main()


if __name__ == "__main__":
    sys.exit(main())

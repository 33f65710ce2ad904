# SPDX-License-Identifier: Apache-2.0
"""zbkit's experiment harness: `zb demo`, `zb rehearse` and the jobs they orchestrate under
torchrun. Not for training scripts (they import `zbkit`); this package uses `zbkit`, never the
other way round (scripts/check_structure.py checks it).

- `demo`, `demo_report`: `zb demo`, the whole loop on the bundled job, and its report;
- `rehearse`, `rehearse_rows`, `rehearse_report`, `rehearsal_job`: `zb rehearse`, schedules on
  emulated stages;
- `rehearse_split`: `zb rehearse --layers`, every layer split `zb partition` compares, rehearsed;
- `emulated_stages`: stages that take a profile's F/B/W on an emulated device stream;
- `emulated_collectives`: a pipeline rank's data-parallel reductions and all-gathers beside it;
- `torchrun_jobs`: running torchrun jobs and reading their `zb-job-summary/1` files;
- `torch_orders`: the installed torch's own schedule classes written as CSVs.
"""

__all__ = [
    "demo",
    "demo_report",
    "emulated_collectives",
    "emulated_stages",
    "rehearsal_job",
    "rehearse",
    "rehearse_report",
    "rehearse_rows",
    "rehearse_split",
    "torch_orders",
    "torchrun_jobs",
]

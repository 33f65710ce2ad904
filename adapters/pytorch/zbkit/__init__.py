# SPDX-License-Identifier: Apache-2.0
"""zbkit for Python trainers: what a training script imports to run zbkit's schedules.

Public modules (`__all__`); everything else (names starting with `_`) is internal:

- `actions`: the one vocabulary of what a rank runs (zbkit's kinds, torch's action letters, the
  progress record's codes);
- `schedule`: the plain `Schedule` and `Op` values (no torch needed), and op text
  (`str(op)`, `Op.parse`);
- `executor`: `PipelineExecutor`, one rank's op list on `nn.Module` stages;
- `bw_split`: `BackwardSplit`, a stage's backward split into B (input gradient) and W (weights);
- `checkpointing`: activation checkpointing under a split backward (each checkpointed block
  recomputed once, in B: `RecomputeOnce`), how a block checkpoints (`block_mode`) and what a split
  order cannot run (`split_refusal`);
- `checkpointing_plan`: a memory plan applied (each block checkpointed as `zb partition
  --checkpointing` chose: wrapped in torch's checkpoint_wrapper or unwrapped);
- `post_validation`: the optimizer step checked during the next iteration's warm-up;
- `libzbrt`: the binding of libzbrt (open a schedule, record a replay, store it);
- `pipelining`: zbkit inside unmodified torch.distributed.pipelining scripts (the shim `zb replay`
  and `zb profile` install): `replay` (zbkit's orders through torch's runtime), `measure` (the
  profiling window, per-block costs, the activation-memory report), `progress` (for `zb doctor`);
- `split`: a rank's stages from a layer split (`zb partition --split-out`, zb-split/1);
- `torch_rules`: what PyTorch's runtime needs of an order (docs/formats.md §4.1);
- `progress`: each rank's progress record, which `zb doctor` reads while a job hangs;
- `locate`: where `zb`, libzbrt and the examples are;
- `errors`: `ZbkitError`, the base of every error zbkit raises.

Submodules are imported on use, so that `zbkit.schedule` and `zbkit.libzbrt` work without torch:
``from zbkit.executor import PipelineExecutor``. The experiment harness (`zb demo`,
`zb rehearse`) is the separate package `zbkit_harness`, which trainers never need.
"""

__version__ = "0.1.0"

__all__ = [
    "actions",
    "bw_split",
    "checkpointing",
    "checkpointing_plan",
    "errors",
    "executor",
    "libzbrt",
    "locate",
    "pipelining",
    "post_validation",
    "progress",
    "schedule",
    "split",
    "torch_rules",
]

# SPDX-License-Identifier: Apache-2.0
"""What the shim measures of an unmodified pipelining job, each switched on by its own variable:

- `window`: the profiling window (ZBKIT_TORCH_PROFILE): torch.profiler over a few steps, with
  `PP:<action>` ranges and the backward split into B and W where the schedule's loop records none;
- `blocks`: per-block costs (ZBKIT_BLOCKS_DIR, or inside the window): F, B, W and the bytes each
  block saves, for `zb partition`;
- `memory`: the activation-memory report (ZBKIT_MEMORY_REPORT): the peak bytes autograd holds.

All three count "bytes autograd saved" the same way, through zbkit._saved_bytes (docs/cost-model.md §4).
"""

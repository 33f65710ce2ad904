# SPDX-License-Identifier: Apache-2.0
"""zbkit for Python trainers: schedule values, the pipeline executor and the B/W split.

Submodules are imported on use so that `zbkit.schedule` (and the runtime binding) work without
torch: ``from zbkit.executor import PipelineExecutor``, ``from zbkit.bw_split import
BackwardSplit``.
"""

__version__ = "0.1.0"

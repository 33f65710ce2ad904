# SPDX-License-Identifier: Apache-2.0
"""The shim's activation-memory report (ZBKIT_MEMORY_REPORT): the peak bytes autograd holds
saved for backward, per rank (see zbkit.pipelining)."""

from __future__ import annotations

import atexit
import os
import threading
from typing import Dict, List, Optional, Set

from ..._saved_bytes import StorageKey, counted, state_storages
from .._stages import local_stages, process_rank
from .window import profiled

# ---------------------------------------------------------------------------------------------
# Activation memory


class _Saved:
    """What the pack hook stores in place of a counted tensor; its release is the tensor's."""

    __slots__ = ("tensor", "key", "report")

    def __init__(self, tensor, key, report):
        self.tensor, self.key, self.report = tensor, key, report

    def __del__(self):
        self.report.release(self.key)


class _MemoryReport:
    """The peak, over this process's steps, of the bytes autograd holds saved for backward."""

    def __init__(self, directory: str):
        self.directory = directory
        # The autograd engine may drop saved tensors on its device threads.
        self.lock = threading.Lock()
        self.live: Dict[tuple, List[int]] = {}  # storage -> [saved references, bytes]
        self.bytes = self.peak = self.steps = 0
        self.rank: Optional[int] = None
        self.state: Set[StorageKey] = set()  # the storages of the stages' parameters and buffers
        atexit.register(self.write)

    def pack(self, tensor):
        # What counts is zbkit._saved_bytes's rule: not the stages' parameters or buffers (mm
        # saves weight.t(), a view of the parameter's storage), each storage once.
        found = counted(tensor, self.state)
        if found is None:
            return tensor
        key, size = found
        with self.lock:
            entry = self.live.get(key)
            if entry is None:
                self.live[key] = [1, size]
                self.bytes += size
                self.peak = max(self.peak, self.bytes)
            else:
                entry[0] += 1
        return _Saved(tensor, key, self)

    @staticmethod
    def unpack(packed):
        return packed.tensor if type(packed) is _Saved else packed

    def release(self, key) -> None:
        with self.lock:
            entry = self.live[key]
            entry[0] -= 1
            if entry[0] == 0:
                del self.live[key]
                self.bytes -= entry[1]

    def write(self) -> None:
        import json  # noqa: PLC0415

        rank = self.rank if self.rank is not None else process_rank()
        os.makedirs(self.directory, exist_ok=True)
        target = os.path.join(self.directory, f"memory.rank{rank}.json")
        report = {"rank": rank, "peak_activation_bytes": self.peak, "steps": self.steps}
        with open(target, "w") as handle:
            json.dump(report, handle)
            handle.write("\n")


_memory: Optional[_MemoryReport] = None


def measured(target, step_function, args, kwargs):
    """Runs one step under the memory hooks (ZBKIT_MEMORY_REPORT) and the profile window."""
    global _memory
    directory = os.environ.get("ZBKIT_MEMORY_REPORT")
    if not directory:
        return profiled(target, step_function, args, kwargs)
    import torch  # noqa: PLC0415

    if _memory is None:
        _memory = _MemoryReport(directory)
    if _memory.rank is None:
        _memory.rank = process_rank()  # at exit the process group may be gone
    _memory.state = state_storages(stage.submod for stage in local_stages(target))
    with torch.autograd.graph.saved_tensors_hooks(_memory.pack, _MemoryReport.unpack):
        result = profiled(target, step_function, args, kwargs)
    _memory.steps += 1
    return result

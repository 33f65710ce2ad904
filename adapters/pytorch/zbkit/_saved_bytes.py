# SPDX-License-Identifier: Apache-2.0
"""What "the bytes autograd saved" are, in one place (docs/cost-model.md §4): the activation
memory that the executor's split (`zbkit.bw_split`: M_B and what W keeps), the shim's memory
report (`zbkit.pipelining.measure.memory`: the peak per rank) and the per-block costs
(`zbkit.pipelining.measure.blocks`: M_B, M_W of each block) measure.

- A saved tensor is counted by its **storage**, once per storage: views of one tensor (`mm` saves
  `weight.t()`, attention saves slices of one projection) are one allocation.
- It is not counted when that storage is a **parameter's or a buffer's** of the modules measured
  (whether the parameter requires grad or not): that memory is the rank's state, constant per
  step, not per microbatch. Everything else counts, the stage's own input included (a leaf that
  requires grad: the activation received from upstream, held until B).
- Tensors without a plain storage (sparse, functional wrappers) cannot be sized and are left out.
"""

from __future__ import annotations

from typing import Iterable, Optional, Set, Tuple

# (device type, device index, address): unique while the storage lives.
StorageKey = Tuple[str, Optional[int], int]


def storage_of(tensor) -> Optional[Tuple[StorageKey, int]]:
    """(key, bytes) of the tensor's storage, or None for a tensor without a plain one."""
    try:
        storage = tensor.untyped_storage()
        return (storage.device.type, storage.device.index, storage.data_ptr()), storage.nbytes()
    except (RuntimeError, NotImplementedError, AttributeError):
        return None


def state_storages(modules: Iterable, tensors: Iterable = ()) -> Set[StorageKey]:
    """The storages of the modules' parameters and buffers, and of `tensors` (parameters given
    without their module): what a saved tensor must not share to count."""
    keys: Set[StorageKey] = set()

    def add(tensor) -> None:
        found = storage_of(tensor)
        if found is not None:
            keys.add(found[0])

    for module in modules:
        for parameter in module.parameters():
            add(parameter)
        for buffer in module.buffers():
            add(buffer)
    for tensor in tensors:
        add(tensor)
    return keys


def counted(tensor, state: Set[StorageKey]) -> Optional[Tuple[StorageKey, int]]:
    """(key, bytes) of a saved tensor's storage when it counts as activation memory, else None
    (a parameter's or buffer's storage, or one that cannot be sized)."""
    found = storage_of(tensor)
    if found is None or found[0] in state:
        return None
    return found

# SPDX-License-Identifier: Apache-2.0
"""Runs torchtitan's trainer (`python -m torchtitan.train`, its arguments unchanged) on CPUs over
gloo, for zbkit's tests on machines without an accelerator. Two things in torchtitan 0.2.2 assume
one, and are patched here, in the test launcher, not in zbkit (a GPU job needs neither):

- `torchtitan.tools.utils.get_device_info()` falls back to "cuda" when no accelerator exists, and
  every module imports its `device_type` / `device_module` at import time: "cpu" is forced before
  torchtitan is imported, with a device module that adds to `torch.cpu` the few calls its memory
  metrics make (no device memory to report: zeros);
- `torchtitan.distributed.utils.set_pg_timeouts` passes the device index ('cpu' here) to
  `barrier(device_ids=...)`, which gloo refuses: the barrier runs without it;
- under FSDP (`data_parallel_shard_degree` > 1) torchtitan sets each block's gradient divide
  factor (`set_gradient_divide_factor(1.0)`), for which FSDP2 reduce-scatters with
  `ReduceOp.PREMUL_SUM`, which gloo does not have: on gloo FSDP sums and scales after the
  collective instead (FSDP's own `force_sum_reduction_for_comms`, the same gradients).

It also knows one more model flavor, as a user adds a configuration of their own to
`llama3_args`: `--model.flavor debugmodel_vocab<N>` is the debug model with an N-entry vocabulary
(a large one makes the embedding and the head cost several layers: unbalanced stages).

Usage: torchrun ... launch.py --job.config_file FILE ... (any torchtitan.train arguments).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types

VOCAB_FLAVOR = re.compile(r"^debugmodel_vocab(\d+)$")


def _cpu_device_module() -> types.ModuleType:
    import torch  # noqa: PLC0415

    module = types.ModuleType("zbkit_titan_cpu")
    module.__dict__.update(
        {name: getattr(torch.cpu, name) for name in dir(torch.cpu) if not name.startswith("__")}
    )
    module.set_device = lambda device: None
    module.get_device_name = lambda device=None: "cpu"
    module.get_device_properties = lambda device=None: types.SimpleNamespace(total_memory=1 << 40)
    module.reset_peak_memory_stats = lambda device=None: None
    module.empty_cache = lambda: None
    module.memory_stats = lambda device=None: {}
    return module


def force_cpu() -> None:
    import torch._utils  # noqa: PLC0415

    device_module = _cpu_device_module()
    torch._utils._get_available_device_type = lambda: "cpu"
    original = torch._utils._get_device_module
    torch._utils._get_device_module = lambda kind="cuda": (
        device_module if kind == "cpu" else original(kind)
    )


def patch_pg_timeouts() -> None:
    import torch.distributed  # noqa: PLC0415
    from torchtitan.distributed import utils  # noqa: PLC0415

    def set_pg_timeouts(timeout, parallel_dims) -> None:
        torch.distributed.barrier()
        groups = [
            mesh.get_group() for mesh in parallel_dims.get_all_one_dimensional_meshes().values()
        ] + [None]
        for group in groups:
            torch.distributed.distributed_c10d._set_pg_timeout(timeout, group)

    utils.set_pg_timeouts = set_pg_timeouts


def sum_reductions_on_gloo() -> None:
    import torch.distributed as dist  # noqa: PLC0415
    from torch.distributed.fsdp._fully_shard import _fsdp_collectives  # noqa: PLC0415

    original = _fsdp_collectives._get_gradient_divide_factors

    def divide_factors(reduce_scatter_group, all_reduce_group, *args, **kwargs):
        group = reduce_scatter_group or all_reduce_group
        if group is not None and str(dist.get_backend(group)).lower() == "gloo":
            kwargs["force_sum_reduction_for_comms"] = True
            args = args[:3]  # reduce_dtype, device_type, factor: the flag goes by keyword
        return original(reduce_scatter_group, all_reduce_group, *args, **kwargs)

    _fsdp_collectives._get_gradient_divide_factors = divide_factors


def register_vocab_flavor(argv: list) -> None:
    """Adds `debugmodel_vocab<N>` to torchtitan's llama3 flavors when the command line names it."""
    names = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--model.flavor"]
    names += [arg.split("=", 1)[1] for arg in argv if arg.startswith("--model.flavor=")]
    for name in names:
        match = VOCAB_FLAVOR.match(name)
        if match:
            from torchtitan.models.llama3 import llama3_args  # noqa: PLC0415

            llama3_args[name] = dataclasses.replace(
                llama3_args["debugmodel"], vocab_size=int(match.group(1))
            )


def main() -> None:
    force_cpu()
    patch_pg_timeouts()
    sum_reductions_on_gloo()
    register_vocab_flavor(sys.argv[1:])
    import torchtitan.train as titan  # noqa: PLC0415

    sys.argv[0] = "torchtitan.train"
    titan.main(titan.Trainer)


if __name__ == "__main__":
    main()

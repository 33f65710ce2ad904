# SPDX-License-Identifier: Apache-2.0
"""Per-block costs for the profiling window (ZBKIT_TORCH_PROFILE, see zbkit.pipelining): what each
top-level block of every local stage costs per microbatch, measured on the real module with the
inputs it got in the job, so that `zb partition` can choose a layer split (docs/partition.md §4).

During the first profiled step, a forward pre-hook on every block keeps a copy of the inputs of
its first call (and the order the blocks ran in). After the window, with the profiler off, each
block is run again on those inputs, alone: F its forward, then its backward split as torch's
pipelining runtime splits it, B the input gradient (`stage_backward_input`) and W the weight
gradient from the intermediate gradients B kept (`stage_backward_weight`), each timed on its own.
Each is the median of a few repeats after a warm-up. The schedule's loss, which runs on the last
stage in no block, is measured apart (F, B, saved bytes) from its first inputs.

Memory, from one forward: M_B the bytes autograd saves (zbkit._saved_bytes: each storage once,
the block's parameters and buffers left out), M_W the part of it that is an argument of an op with one of the block's parameters
(what the weight gradient needs, as in the paper's 32·s·b·h); `state` the parameters, their
gradients and the optimizer's state for them; `send` the bytes of the output.

The measurement leaves the job as it was: its gradients (each parameter's .grad put back), its
random state (forked) and the blocks' buffers (BatchNorm statistics, put back). A block it cannot
run is left out with one warning; nothing it does can stop the job.

Each block is also measured in the checkpointing modes it did not run in (`none` with its
checkpoint wrappers bypassed, `full` wrapped in torch's checkpoint_wrapper): the block's
`options`, what the memory plan chooses among (docs/memory-plan.md §1).

Each rank writes <dir>/rank<R>.blocks.json (zb-block-costs/1, docs/formats.md §6), which `zb
profile --torch` and `zb import <dir>` read into the profile's per-layer costs."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import time
import weakref
from typing import Dict, List, Optional

from ..._data_parallel import fsdp_modules
from ..._saved_bytes import counted, state_storages, storage_of
from ..._stage_blocks import stage_blocks
from .._stages import local_stages, process_rank

FORMAT = "zb-block-costs/1"
REPEATS = 3

# Every optimizer that stepped in this process: where the blocks' optimizer state lives.
_optimizers: "weakref.WeakSet" = weakref.WeakSet()
_optimizer_hook = None


def watch_optimizers() -> None:
    """Registers (once) a global optimizer step hook that remembers each optimizer that steps."""
    global _optimizer_hook
    if _optimizer_hook is not None:
        return
    from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: PLC0415

    def remember(optimizer, args, kwargs):
        _optimizers.add(optimizer)

    _optimizer_hook = register_optimizer_step_post_hook(remember)


class Capture:
    """Forward pre-hooks on every block of the local stages for one step: each block's first
    inputs (detached copies that keep whether they required grad) and the order blocks ran in."""

    def __init__(self, schedule):
        self.inputs: Dict[int, tuple] = {}  # id(module) -> (args, kwargs)
        self.autocast: Dict[int, list] = {}  # id(module) -> the autocast it ran under
        self.failed: set = set()  # id(module) of blocks whose inputs could not be kept
        self.order: Dict[int, int] = {}
        self.stages: List[tuple] = []  # (stage index, [(name, module)])
        self.stage_modules: Dict[int, object] = {}  # stage index -> its module
        self.handles = []
        self.last_stage: Optional[int] = None  # the local stage that computes the loss
        # Each block also measured in the checkpointing modes it did not run in, for the memory
        # plan (docs/memory-plan.md §1); ZBKIT_PROFILE_BLOCK_MODES=0 turns it off.
        self.measure_modes = os.environ.get("ZBKIT_PROFILE_BLOCK_MODES", "1") != "0"
        for stage in local_stages(schedule):
            blocks = stage_blocks(stage.submod)
            self.stages.append((stage.stage_index, blocks))
            self.stage_modules[stage.stage_index] = stage.submod
            if getattr(stage, "is_last", False):
                self.last_stage = stage.stage_index
            for _, module in blocks:
                self.handles.append(module.register_forward_pre_hook(self._keep, with_kwargs=True))
        # The loss runs on the last stage, in no block: its first inputs are kept too.
        self.loss_fn = getattr(schedule, "_loss_fn", None)
        self.loss_inputs: Optional[tuple] = None
        self.schedule = schedule
        if self.last_stage is not None and callable(self.loss_fn):
            original = self.loss_fn

            def keep_loss(output, target, *args, **kwargs):
                if self.loss_inputs is None:
                    try:
                        self.loss_inputs = (_copy(output), _copy(target), args, kwargs,
                                            autocast_state())  # fmt: skip
                    except Exception as error:  # the loss then stays with the stage totals
                        self.loss_inputs = ()
                        warn(f"the loss's inputs could not be kept: {error}")
                return original(output, target, *args, **kwargs)

            schedule._loss_fn = keep_loss

    def _keep(self, module, args, kwargs):
        # Runs inside the job's forward: whatever goes wrong here stays here (the block is then
        # not measured, said once), never in the job.
        key = id(module)
        if key in self.inputs or key in self.failed:
            return
        try:
            self.inputs[key] = (_copy(args), _copy(kwargs))
            self.autocast[key] = autocast_state()
            self.order[key] = len(self.order)
        except Exception as error:
            self.inputs.pop(key, None)
            self.failed.add(key)
            warn(f"a block's inputs could not be kept ({type(module).__name__}): {error}")

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []
        if self.last_stage is not None and callable(self.loss_fn):
            self.schedule._loss_fn = self.loss_fn


def autocast_state() -> list:
    """(device type, dtype) of every autocast on where a block is called: a job that runs its
    forward under torch.autocast (torchtitan without FSDP does, in bf16) gets its blocks
    measured under the same."""
    import torch  # noqa: PLC0415

    return [(device, torch.get_autocast_dtype(device)) for device in ("cuda", "cpu")
            if torch.is_autocast_enabled(device)]  # fmt: skip


def _copy(tree):
    import torch  # noqa: PLC0415
    from torch.utils._pytree import tree_map  # noqa: PLC0415

    def copy(value):
        if isinstance(value, torch.Tensor):
            return value.detach().clone().requires_grad_(value.requires_grad)
        return value

    return tree_map(copy, tree)


def _fresh(tree, leaves: list):
    """New leaves over the captured inputs (no copy), so each repeat builds its own graph."""
    import torch  # noqa: PLC0415
    from torch.utils._pytree import tree_map  # noqa: PLC0415

    def fresh(value):
        if isinstance(value, torch.Tensor):
            leaf = value.detach().requires_grad_(value.requires_grad)
            if leaf.requires_grad:
                leaves.append(leaf)
            return leaf
        return value

    return tree_map(fresh, tree)


class _BlockRunner:
    """Runs one block on its captured inputs and times its F, B and W."""

    def __init__(self, module, captured, autocast: Optional[list] = None):
        import torch  # noqa: PLC0415

        self.torch = torch
        self.module, (self.args, self.kwargs) = module, captured
        # An FSDP2 block is called past its hooks: its parameters are already gathered
        # (_unsharded), and its hooks would reshard them and reduce-scatter into the job's
        # gradients.
        self.call = module.forward if fsdp_modules(module, recurse=False) else module
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.cuda = any(p.is_cuda for p in module.parameters())
        self.autocast = autocast or []

    def autocasting(self) -> contextlib.ExitStack:
        """The autocast the job's forward ran under, entered again."""
        contexts = contextlib.ExitStack()
        for device, dtype in self.autocast:
            contexts.enter_context(self.torch.autocast(device, dtype=dtype))
        return contexts

    def _now(self) -> float:
        if self.cuda:
            self.torch.cuda.synchronize()
        return time.perf_counter()

    def forward(self):
        """(seconds, grad-requiring outputs, their gradient seeds, input leaves, the output)."""
        from torch.utils._pytree import tree_flatten  # noqa: PLC0415

        leaves: list = []
        args, kwargs = _fresh(self.args, leaves), _fresh(self.kwargs, leaves)
        with self.autocasting():
            start = self._now()
            output = self.call(*args, **kwargs)
            seconds = self._now() - start
        outputs = [t for t in tree_flatten(output)[0]
                   if isinstance(t, self.torch.Tensor) and t.grad_fn is not None]  # fmt: skip
        seeds = [self.torch.ones_like(t) for t in outputs]
        return seconds, outputs, seeds, leaves, output

    def input_backward(self) -> tuple:
        """(forward seconds, backward seconds) of a forward and the gradient of its inputs."""
        forward, outputs, seeds, leaves, _ = self.forward()
        if not outputs or not leaves:
            return forward, 0.0
        start = self._now()
        self.torch.autograd.grad(outputs, leaves, seeds, allow_unused=True)
        return forward, self._now() - start

    def split_backward(self) -> tuple:
        """(forward, B, W) seconds of one forward and its backward split as torch's pipelining
        runtime splits it (`stage_backward_input`, then `stage_backward_weight` from the
        intermediate gradients it kept): W timed on its own, not as a difference. A block whose
        inputs need no gradient has B = 0 and all of its backward in W, as torch runs a first
        stage. The parameters' .grad is put back as it was (torch's calls accumulate into it).
        Both run in one RecomputeOnce, as the shim runs them: a checkpointed block's one
        recomputation is in B, none in W (docs/activation-checkpointing.md)."""
        from torch.distributed.pipelining import _backward  # noqa: PLC0415

        from ... import checkpointing  # noqa: PLC0415
        from ...bw_split import weight_pass_nodes  # noqa: PLC0415

        checkpointing.install()  # before the forward: its checkpointed regions get the hook
        forward, outputs, seeds, leaves, _ = self.forward()
        if not outputs:
            return forward, 0.0, 0.0
        # stage_backward_input detaches its outputs in place, which a view refuses.
        outputs = [t.clone() if t._base is not None else t for t in outputs]
        kept = [p.grad for p in self.params]
        for parameter in self.params:
            parameter.grad = None
        try:
            if not leaves:
                start = self._now()
                if self.params:
                    self.torch.autograd.grad(outputs, self.params, seeds, allow_unused=True)
                return forward, 0.0, self._now() - start
            group = contextlib.nullcontext()
            if checkpointing.install() and checkpointing.current_group() is None:
                nodes = weight_pass_nodes(outputs, leaves, self.params)
                group = checkpointing.RecomputeOnce(nodes.__contains__)
            start = self._now()
            with group:
                _, groups = _backward.stage_backward_input(
                    outputs, seeds, leaves, iter(self.params)
                )
            b = self._now() - start
            start = self._now()
            with group:
                _backward.stage_backward_weight(iter(self.params), groups)
            return forward, b, self._now() - start
        finally:
            for parameter, grad in zip(self.params, kept):
                parameter.grad = grad

    def memory(self) -> tuple:
        """(M_B, M_W, send) in bytes, from one forward. For a checkpointed block M_B is what its
        forward leaves (the checkpointed regions' inputs, and what is saved outside them) and M_W
        what W reads: the same tensors as without checkpointing, recomputed in B and kept until
        W (docs/activation-checkpointing.md §2), so M_W is measured on a forward with the
        block's checkpoint wrappers bypassed."""
        from ... import checkpointing  # noqa: PLC0415

        m_b, m_w, send = self._memory()
        if checkpointing.block_mode(self.module) in ("full", "op"):
            with checkpointing.wrappers_bypassed(self.module):
                _, m_w, _ = self._memory()
        return m_b, m_w, send

    def _memory(self) -> tuple:
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415
        from torch.utils._pytree import tree_flatten  # noqa: PLC0415

        torch = self.torch
        parameters = state_storages([self.module])
        saved: Dict[tuple, int] = {}
        weight_inputs = set()

        def pack(tensor):
            found = counted(tensor, parameters)
            if found is not None:
                saved[found[0]] = found[1]
            return tensor

        class WeightInputs(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                tensors = [t for t in tree_flatten((args, kwargs))[0]
                           if isinstance(t, torch.Tensor)]  # fmt: skip
                keys = [storage_of(t) for t in tensors]
                if any(k is not None and k[0] in parameters for k in keys):
                    weight_inputs.update(k[0] for k in keys if k is not None)
                return func(*args, **kwargs)

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            with WeightInputs():
                _, _, _, _, output = self.forward()
        m_b = sum(saved.values())
        m_w = sum(size for key, size in saved.items() if key in weight_inputs)
        send = sum(t.numel() * t.element_size() for t in tree_flatten(output)[0]
                   if isinstance(t, torch.Tensor))  # fmt: skip
        return m_b, m_w, send


def _state_bytes(module) -> int:
    """Parameters, their gradients (those that require one) and the optimizer state kept for
    them, in bytes."""
    import torch  # noqa: PLC0415

    total = 0
    for parameter in module.parameters():
        local = getattr(parameter, "to_local", None)  # a sharded (DTensor) parameter: this rank's
        size = (local() if local else parameter).numel() * parameter.element_size()
        total += size * (2 if parameter.requires_grad else 1)
        for optimizer in list(_optimizers):
            for value in optimizer.state.get(parameter, {}).values():
                if isinstance(value, torch.Tensor):
                    value = value.to_local() if hasattr(value, "to_local") else value
                    total += value.numel() * value.element_size()
    return total


@contextlib.contextmanager
def _unsharded(stage_module):
    """A stage's FSDP2 parameters gathered while its blocks are measured (their sharded DTensors
    cannot run with a block's plain inputs), sharded again after. Each gather is a collective of
    the data-parallel group: every replica measures the same stages, so the calls match."""
    gathered = []
    try:
        for module in fsdp_modules(stage_module) if stage_module is not None else []:
            module.unshard()
            gathered.append(module)
        yield
    finally:
        for module in reversed(gathered):
            try:
                module.reshard()
            except Exception as error:  # the job reshards at its next forward anyway
                warn(f"an FSDP module could not be sharded again after the measurement: {error}")


def _timed(module, captured, repeats: int, autocast: Optional[list]) -> dict:
    """F, B, W in ms (medians of `repeats` after one warm-up), M_B, M_W, send in bytes."""
    runner = _BlockRunner(module, captured, autocast)
    runner.split_backward()  # warm-up
    times = [runner.split_backward() for _ in range(repeats)]
    f, b, w = (statistics.median(column) * 1e3 for column in zip(*times))
    m_b, m_w, send = runner.memory()
    return {"F": f, "B": b, "W": w, "M_B": m_b, "M_W": m_w, "send": send}


def measure_block(
    module, captured, repeats: int = REPEATS, autocast: Optional[list] = None
) -> dict:
    """F, B, W in ms (medians of `repeats` after one warm-up), M_B, M_W, state, send in bytes;
    the forward under `autocast` (autocast_state()) as the job ran it."""
    return {**_timed(module, captured, repeats, autocast), "state": _state_bytes(module)}


def other_modes(module) -> list:
    """(mode, the module to run with `module`'s own checkpoint wrappers bypassed) for each
    checkpointing mode the memory plan may give `module` besides its own (docs/memory-plan.md
    §1): `none` the module itself, `full` it wrapped whole in torch's non-reentrant
    checkpoint_wrapper. None for a reentrant, mixed or FSDP2 block (its hooks would run) and
    where torch lacks the wrapper."""
    from ... import checkpointing  # noqa: PLC0415

    own = checkpointing.block_mode(module)
    if own not in ("none", "full", "op") or fsdp_modules(module):
        return []
    try:
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: PLC0415
            checkpoint_wrapper,
        )
    except ImportError:
        return []
    # Bypassing the block's own wrappers is a no-op for a block without any.
    modes = [("none", module)] if own != "none" else []
    if own != "full":
        modes.append(("full", checkpoint_wrapper(module)))
    return modes


def measure_other_modes(module, captured, name: str, repeats: int = REPEATS,
                        autocast: Optional[list] = None) -> list:  # fmt: skip
    """The block's costs under each of other_modes(), as zb-layers/1 `options`; a mode that
    cannot run is left out with one warning."""
    from ... import checkpointing  # noqa: PLC0415

    options = []
    for mode, runnable in other_modes(module):
        try:
            with checkpointing.wrappers_bypassed(module):
                costs = _timed(runnable, captured, repeats, autocast)
        except Exception as error:  # the block's own figures stand
            warn(f"block {name!r} not measured under checkpointing {mode}: {error}")
            continue
        del costs["send"]
        options.append({"checkpointing": mode, **costs, "source": "measured"})
    return options


class _LossRunner(_BlockRunner):
    """The schedule's loss on the last stage's captured output: F the loss, B its gradient with
    respect to the output (a loss has no parameters, so no W)."""

    def __init__(self, loss_fn, captured):
        import torch  # noqa: PLC0415

        self.torch = torch
        output, target, args, kwargs, self.autocast = captured
        self.loss_fn, self.output, self.target = loss_fn, output, target
        self.extra_args, self.extra_kwargs = args, kwargs
        self.params = []
        self.cuda = isinstance(output, torch.Tensor) and output.is_cuda

    def forward(self):
        leaves: list = []
        output = _fresh(self.output, leaves)
        with self.autocasting():
            start = self._now()
            loss = self.loss_fn(output, self.target, *self.extra_args, **self.extra_kwargs)
            seconds = self._now() - start
        outputs = [loss] if getattr(loss, "grad_fn", None) is not None else []
        return seconds, outputs, [self.torch.ones_like(t) for t in outputs], leaves, loss


def measure_loss(loss_fn, captured, repeats: int = REPEATS) -> dict:
    """F and B in ms (medians of `repeats` after one warm-up), and M_B, the bytes the loss saves
    for its backward (with a large vocabulary, the logits' softmax)."""
    runner = _LossRunner(loss_fn, captured)
    runner.input_backward()  # warm-up
    forwards, backwards = [], []
    for _ in range(repeats):
        forward, seconds = runner.input_backward()
        forwards.append(forward)
        backwards.append(seconds)
    saved: Dict[tuple, int] = {}

    def pack(tensor):
        found = counted(tensor, set())  # the loss has no parameters
        if found is not None:
            saved[found[0]] = found[1]
        return tensor

    with runner.torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        runner.forward()
    return {"F": statistics.median(forwards) * 1e3, "B": statistics.median(backwards) * 1e3,
            "M_B": sum(saved.values())}  # fmt: skip


def measure_and_write(capture: Capture, directory: str) -> None:
    """Measures every captured block of every local stage and writes rank<R>.blocks.json; one
    warning per block it could not measure, never an exception."""
    import torch  # noqa: PLC0415

    from ... import checkpointing  # noqa: PLC0415

    stages = []
    for stage_index, blocks in capture.stages:
        ran = sorted((capture.order[id(m)], name, m) for name, m in blocks
                     if id(m) in capture.inputs)  # fmt: skip
        measured = []
        states = {id(m): _state_bytes(m) for _, _, m in ran}  # sharded, as the rank keeps them
        gathering = contextlib.ExitStack()
        try:
            gathering.enter_context(_unsharded(capture.stage_modules.get(stage_index)))
        except Exception as error:  # the blocks then stay unmeasured, said once
            warn(f"stage {stage_index}: its FSDP parameters could not be gathered: {error}")
            ran = []
        for _, name, module in ran:
            buffers = [(b, b.detach().clone()) for b in module.buffers()]
            try:
                with torch.random.fork_rng(devices=_cuda_devices(module)):
                    inputs, autocast = capture.inputs[id(module)], capture.autocast.get(id(module))
                    costs = measure_block(module, inputs, autocast=autocast)
                    costs["state"] = states[id(module)]
                    block = {
                        "name": name,
                        **costs,
                        "checkpointing": checkpointing.block_mode(module),
                    }
                    if capture.measure_modes:
                        block["options"] = measure_other_modes(module, inputs, name,
                                                               autocast=autocast)  # fmt: skip
                    measured.append(block)
            except Exception as error:  # a block we cannot rerun must not stop the job
                warn(f"stage {stage_index} block {name!r} not measured: {error}")
            finally:
                with torch.no_grad():
                    for buffer, saved in buffers:
                        buffer.copy_(saved)
        gathering.close()
        entry = {"stage": stage_index, "blocks": measured}
        if stage_index == capture.last_stage and capture.loss_inputs:
            try:
                with torch.random.fork_rng(devices=[]):
                    entry["loss"] = measure_loss(capture.loss_fn, capture.loss_inputs)
            except Exception as error:  # the stage totals keep it
                warn(f"stage {stage_index}: the loss not measured: {error}")
        stages.append(entry)
    rank = process_rank()
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, f"rank{rank}.blocks.json")
    document = {"format": FORMAT, "rank": rank, "repeats": REPEATS, "stages": stages}
    with open(target + ".tmp", "w") as handle:
        json.dump(document, handle)
        handle.write("\n")
    os.replace(target + ".tmp", target)


def _cuda_devices(module) -> list:
    return sorted({p.device.index or 0 for p in module.parameters() if p.is_cuda})


def warn(message: str) -> None:
    sys.stderr.write(f"zbkit: warning: per-block costs: {message}\n")
    sys.stderr.flush()

# SPDX-License-Identifier: Apache-2.0
"""BackwardSplit: B then W equals the fused backward, with nothing computed twice."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Set, Tuple

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import pipeline_worker as pw  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from zbkit.bw_split import BackwardSplit  # noqa: E402

# ZBKIT_TEST_DEVICE=cuda runs these on a GPU (the device check); CPU otherwise.
DEVICE = torch.device(os.environ.get("ZBKIT_TEST_DEVICE", "cpu"))


def _nodes(root: Any) -> List[Any]:
    """The graph's nodes in a deterministic order, so two identical graphs line up."""
    order, seen, stack = [], set(), [root]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        order.append(n)
        stack.extend(reversed([c for c, _ in n.next_functions]))
    return order


class _SlotCounter:
    """Post-hooks on every node: which (node index, output slot) gradients were computed."""

    def __init__(self, root: Any) -> None:
        self.count: Dict[Tuple[int, int], int] = {}
        self.handles = []
        for i, n in enumerate(_nodes(root)):
            self.handles.append(n.register_hook(self._hook(i)))

    def _hook(self, i: int) -> Any:
        def hook(grad_inputs: Any, _grad_outputs: Any) -> None:
            for k, g in enumerate(grad_inputs):
                if g is not None:
                    self.count[(i, k)] = self.count.get((i, k), 0) + 1

        return hook

    def slots(self) -> Set[Tuple[int, int]]:
        return set(self.count)


def _stage() -> nn.Module:
    return pw.make_stage(1).to(DEVICE)


def _forward(
    module: nn.Module, x: torch.Tensor
) -> Tuple[BackwardSplit, torch.Tensor, torch.Tensor]:
    x = x.clone().requires_grad_(True)
    split = BackwardSplit(module.parameters())
    with split.record():
        y = module(x)
    split.seal((y,), (x,))
    return split, x, y


def _data() -> Tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(pw.MB_SIZE, pw.SEQ, pw.D, dtype=torch.float64, generator=g).to(DEVICE)
    dy = torch.randn(pw.MB_SIZE, pw.SEQ, pw.D, dtype=torch.float64, generator=g).to(DEVICE)
    return x, dy


@pytest.mark.parametrize("want_dx", [True, False], ids=["middle-stage", "first-stage"])
def test_split_equals_fused_and_computes_nothing_twice(want_dx: bool) -> None:
    x0, dy = _data()
    split_mod, fused_mod = _stage(), _stage()

    split, _, y = _forward(split_mod, x0)
    slots = _SlotCounter(y.grad_fn)
    with FlopCounterMode(display=False) as b_flops:
        (dx,) = split.backward_input((dy,), [want_dx])
    b_slots = slots.slots()
    with FlopCounterMode(display=False) as w_flops:
        split.backward_weight()
    split_count = dict(slots.count)

    fused, _, y2 = _forward(fused_mod, x0)
    fused_slots = _SlotCounter(y2.grad_fn)
    with FlopCounterMode(display=False) as f_flops:
        (dx2,) = fused.backward_fused((dy,), [want_dx])

    # Same results.
    if want_dx:
        assert dx is not None and torch.allclose(dx, dx2, rtol=1e-12, atol=1e-14)
    else:
        assert dx is None and dx2 is None
    for (name, a), (_, b) in zip(split_mod.named_parameters(), fused_mod.named_parameters()):
        assert a.grad is not None, name
        assert torch.allclose(a.grad, b.grad, rtol=1e-12, atol=1e-14), name

    # Nothing computed twice: every gradient slot of every node at most once over B and W, and
    # exactly the slots the fused backward computes.
    twice = {k: v for k, v in split_count.items() if v > 1}
    assert not twice, f"computed more than once: {twice}"
    assert set(split_count) == fused_slots.slots()
    w_slots = set(split_count) - b_slots
    assert b_slots and w_slots, "both B and W must do some of the work"

    # The same in FLOPs: B + W == fused, each a real share.
    b, w, f = b_flops.get_total_flops(), w_flops.get_total_flops(), f_flops.get_total_flops()
    assert b > 0 and w > 0
    assert b + w == f, (b, w, f)


def test_w_keeps_less_memory_than_f_saved() -> None:
    x0, dy = _data()
    split, x, _ = _forward(_stage(), x0)
    assert split.split_clean
    saved = split.stats.saved_bytes
    assert split.held_bytes() == saved
    assert split.stats.mixed_nodes > 0
    split.backward_input((dy,), [True])
    st = split.stats
    retained = st.retained_bytes
    print(
        f"F saved {saved} B; kept for W: {retained} B of saved tensors and {st.captured_bytes} B "
        f"of captured gradients; mixed nodes {st.mixed_nodes}"
    )
    assert 0 < retained < saved
    # W also needs the output gradient of each weight op (dY of a Linear): one per mixed node at
    # most, each the size of an activation.
    assert 0 < st.captured_bytes <= st.mixed_nodes * 2 * pw.SEQ * pw.D * pw.MB_SIZE * 8
    assert split.held_bytes() == st.w_bytes == retained + st.captured_bytes
    # The stage input itself is what the first Linear needs for its weight gradient.
    assert retained >= x.numel() * x.element_size()
    split.backward_weight()
    assert split.held_bytes() == 0


def test_scalar_loss_output_and_accumulation() -> None:
    """A last stage (loss as output, grad 1) accumulates into .grad across microbatches."""
    mod, ref = _stage(), _stage()
    xs = [_data()[0] + i for i in range(3)]
    target = torch.zeros_like(xs[0])
    for x in xs:
        split = BackwardSplit(mod.parameters())
        with split.record():
            loss = nn.functional.mse_loss(mod(x), target) / 3
        split.seal((loss,), ())
        split.backward_input((None,), [])
        split.backward_weight()
    total = sum(nn.functional.mse_loss(ref(x), target) for x in xs) / 3
    total.backward()
    for (name, a), (_, b) in zip(mod.named_parameters(), ref.named_parameters()):
        assert torch.allclose(a.grad, b.grad, rtol=1e-12, atol=1e-14), name


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_custom_function_and_tied_weights_stay_correct() -> None:
    """Outside the clean split (see the module doc) the gradients are still right."""
    torch.manual_seed(0)
    lin = nn.Linear(pw.D, pw.D).double().to(DEVICE)
    ref = nn.Linear(pw.D, pw.D).double().to(DEVICE)
    ref.load_state_dict(lin.state_dict())

    def body(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return m(_Square.apply(m(x)))  # one weight used twice, and a custom Function

    x0, dy = _data()
    split = BackwardSplit(lin.parameters())
    x = x0.clone().requires_grad_()
    with split.record():
        y = body(lin, x)
    split.seal((y,), (x,))
    assert not split.split_clean
    (dx,) = split.backward_input((dy,), [True])
    split.backward_weight()
    xr = x0.clone().requires_grad_()
    body(ref, xr).backward(dy)
    assert torch.allclose(dx, xr.grad, rtol=1e-12, atol=1e-14)
    assert torch.allclose(lin.weight.grad, ref.weight.grad, rtol=1e-12, atol=1e-14)
    assert torch.allclose(lin.bias.grad, ref.bias.grad, rtol=1e-12, atol=1e-14)


class _Scale(torch.autograd.Function):
    """x * w with a parameter w: a mixed custom node."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return g * w, (g * x).sum(dim=tuple(range(g.dim() - 1)))


def test_custom_function_with_a_parameter_falls_back_correctly() -> None:
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(pw.D, dtype=torch.float64, device=DEVICE))
    x0, dy = _data()
    x = x0.clone().requires_grad_()
    split = BackwardSplit([w])
    with split.record():
        y = _Scale.apply(torch.tanh(x), w)
    split.seal((y,), (x,))
    assert not split.split_clean
    (dx,) = split.backward_input((dy,), [True])
    assert w.grad is None  # W's share is applied only by W
    split.backward_weight()
    xr = x0.clone().requires_grad_()
    wr = w.detach().clone().requires_grad_()
    (torch.tanh(xr) * wr).backward(dy)
    assert torch.allclose(dx, xr.grad, rtol=1e-12, atol=1e-14)
    assert torch.allclose(w.grad, wr.grad, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode", ["none", "full", "sac"])
@pytest.mark.parametrize("fused", [False, True], ids=["split", "fused"])
def test_nothing_of_a_microbatch_outlives_its_backward(mode: str, fused: bool) -> None:
    """Once W (or the fused backward) has run and the caller drops the split and the graph,
    nothing of them stays: no split, no checkpointed region. A saved tensor's box named the
    nodes that read it and the split named its nodes, while the nodes' saved tensors hold the
    box and the split (the unpack hook): cycles through autograd's C++ nodes, which Python's
    collector cannot break, so every microbatch's split, graph and output gradient stayed for
    good, with or without checkpointing."""
    import gc

    def alive() -> Tuple[int, int]:
        frames = pw.checkpoint_frames_alive()  # after a collection
        return sum(isinstance(o, BackwardSplit) for o in gc.get_objects()), frames

    module = pw.checkpointed_stage(1, mode, {})
    x, y = pw.make_data(1)
    before = alive()
    for _ in range(3):
        split = BackwardSplit(module.parameters())
        h = x.detach().requires_grad_()
        with split.record():
            out = pw.loss_fn(module(h), y)
        split.seal((out,), (h,))
        if fused:
            split.backward_fused((None,), [True])
        else:
            split.backward_input((None,), [True])
            split.backward_weight()
        del split, h, out
    assert alive() == before

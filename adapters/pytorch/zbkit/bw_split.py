# SPDX-License-Identifier: Apache-2.0
"""A real split of one stage's backward into B (input gradient) and W (weight gradients).

Zero-bubble schedules run the backward of a (stage, microbatch) in two separate ops: B computes
the gradient w.r.t. the stage input, which the upstream stage waits for, and W computes the
weight gradients later, filling what would be a bubble (docs/schedules.md, docs/cost-model.md).
`BackwardSplit` does that on a plain autograd graph, with nothing computed twice:

* After the forward, the autograd graph of the stage is classified. A node is *weight-only* when
  everything it reaches is a parameter (for example ``TBackward -> AccumulateGrad(weight)``); a
  node is *mixed* when it reaches the stage input and also has an edge into a weight-only node or
  a parameter (``AddmmBackward`` of a Linear: edges to bias, input and weight).
* B runs the engine once from the stage outputs with the stage input and the *inputs* of every
  mixed node as targets. The engine then evaluates each mixed node only for its activation edge
  (its weight outputs are not needed for any target) and captures the gradient arriving at it.
* W runs each mixed node again from the captured gradient with only its weight edges as targets
  (so it computes, e.g., ``x^T dY`` and never ``dY W^T`` again), then pushes what reaches the
  weight-only subgraphs through them into the parameters, accumulating into ``.grad``.

Memory: every tensor autograd saves during the forward goes through
``torch.autograd.graph.saved_tensors_hooks`` into a box this module owns. After B, the boxes of
nodes W never runs are emptied, so their memory is really freed between B and W. `SplitStats`
reports ``saved_bytes`` (what the forward saved, parameters excluded: the measured M_B),
``retained_bytes`` (the part of it still held for W) and ``captured_bytes`` (the output gradients
B captured for W, e.g. dY of each Linear); ``w_bytes``, their sum, is everything W keeps alive
between B and W, the measured counterpart of the cost model's M_W.

Activation checkpointing: B and W run in one `zbkit.checkpointing.RecomputeOnce`, so that a
checkpointed region is recomputed once, in B, and the recomputed tensors W reads are kept until W
(``recomputed_bytes``, part of ``w_bytes``; docs/activation-checkpointing.md). seal() reads no
region's saved tensors (that would recompute it).

Limits: a parameter (or a tensor computed from parameters only) used at two places of one stage
would make W walk the activation chain between the two uses and count a gradient twice; such a
stage is detected (`split_clean` is False) and runs its whole backward in B, W then only
accumulating what B kept: correct, but without the split. A custom ``torch.autograd.Function``
is one opaque node that computes all its input gradients whenever it runs; one that takes both an
activation and a parameter also makes the stage fall back (one that takes only activations splits
fine). Built-in operators whose backward computes every output regardless of which are needed
would do part of W's work in B; the FLOP test in tests/test_bw_split.py checks the layers it uses
(Linear, LayerNorm, GELU, TransformerEncoderLayer).
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import torch
from torch.autograd.graph import GradientEdge, Node

from . import checkpointing
from ._saved_bytes import StorageKey, counted, state_storages
from .errors import BackwardSplitError

__all__ = ["BackwardSplit", "SplitStats", "accumulate_grad", "weight_pass_nodes"]


class _Box:
    """One saved tensor, owned here so that it can be released between B and W."""

    __slots__ = ("tensor", "owners", "what")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor: Optional[torch.Tensor] = tensor
        self.owners: List[Node] = []
        self.what = f"{tuple(tensor.shape)} {tensor.dtype}"


class SplitStats:
    """Per (stage, microbatch) figures of one split backward."""

    __slots__ = (
        "saved_bytes",
        "retained_bytes",
        "captured_bytes",
        "recomputed_bytes",
        "mixed_nodes",
        "weight_only_nodes",
    )

    def __init__(self) -> None:
        self.saved_bytes = 0  # unique storages autograd saved in F, parameters excluded
        self.retained_bytes = 0  # of those, what is still held between B and W
        self.captured_bytes = 0  # gradients B captured for W, held between B and W
        # tensors of checkpointed regions that B recomputed and W reads again (zbkit.checkpointing)
        self.recomputed_bytes = 0
        self.mixed_nodes = 0
        self.weight_only_nodes = 0

    @property
    def w_bytes(self) -> int:
        """Everything held from B until W: retained saved tensors, captured gradients and the
        recomputed tensors of checkpointed regions that W reads."""
        return self.retained_bytes + self.captured_bytes + self.recomputed_bytes

    def __repr__(self) -> str:
        return (
            f"SplitStats(saved_bytes={self.saved_bytes}, retained_bytes={self.retained_bytes}, "
            f"captured_bytes={self.captured_bytes}, recomputed_bytes={self.recomputed_bytes}, "
            f"mixed_nodes={self.mixed_nodes}, "
            f"weight_only_nodes={self.weight_only_nodes})"
        )


def _unique_bytes(tensors: Iterable[torch.Tensor], state: Set[StorageKey]) -> int:
    """The bytes of the tensors' storages that count (zbkit._saved_bytes.counted), each once."""
    seen: Set[StorageKey] = set()
    total = 0
    for tensor in tensors:
        found = counted(tensor, state)
        if found is not None and found[0] not in seen:
            seen.add(found[0])
            total += found[1]
    return total


def accumulate_grad(param: torch.Tensor, grad: torch.Tensor) -> None:
    """Adds `grad` into ``param.grad`` the way ordinary backward accumulation does."""
    if param.grad is None:
        param.grad = grad.detach().clone()
    else:
        param.grad.add_(grad.detach())


def _children(node: Node) -> Iterator[Tuple[Node, int]]:
    for child, nr in node.next_functions:
        if child is not None:
            yield child, nr


_CUSTOM_FUNCTION_NODE = torch.autograd.function.BackwardCFunction
_saved_attributes_of: Dict[type, Tuple[str, ...]] = {}


def _saved_attributes(node: Node) -> Tuple[str, ...]:
    """The ``_saved_*`` attributes of a node's type. Every built-in backward node type is its own
    Python class with a fixed set of them, so dir() runs once per type, not once per node of
    every forward (it dominated seal())."""
    kind = type(node)
    names = _saved_attributes_of.get(kind)
    if names is None:
        names = tuple(a for a in dir(node) if a.startswith("_saved_"))
        _saved_attributes_of[kind] = names
    return names


def _input_slots(node: Node) -> int:
    """How many gradient inputs (forward outputs) a node has."""
    # graph.Node has no public count; _input_metadata holds one entry per gradient input.
    return len(node._input_metadata)


def _classify(
    roots: Iterable[Node], inputs: Iterable[Any], params: Iterable[torch.Tensor]
) -> Tuple[Dict[Node, torch.Tensor], List[Node], Set[Node], List[Node]]:
    """The graph from `roots` back to the inputs (tensors that require grad; anything else is
    ignored) and the parameters: (the parameters' gradient nodes, every node children first, the
    weight-only nodes, the mixed nodes). See the module doc for the two kinds."""
    param_nodes: Dict[Node, torch.Tensor] = {}
    for p in params:
        if p.requires_grad:
            param_nodes[torch.autograd.graph.get_gradient_edge(p).node] = p
    input_nodes: Set[Node] = set()
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.requires_grad:
            input_nodes.add(torch.autograd.graph.get_gradient_edge(x).node)

    # Post-order walk (children before parents): reach_act / reach_param per node.
    reach_act: Dict[Node, bool] = {}
    reach_param: Dict[Node, bool] = {}
    order: List[Node] = []
    visited: Set[Node] = set()
    stack: List[Tuple[Node, bool]] = [(r, False) for r in roots if r is not None]
    while stack:
        node, done = stack.pop()
        if done:
            act = node in input_nodes
            par = node in param_nodes
            for child, _ in _children(node):
                act = act or reach_act[child]
                par = par or reach_param[child]
            reach_act[node] = act
            reach_param[node] = par
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for child, _ in _children(node):
            if child not in visited:
                stack.append((child, False))

    weight_only = {n for n in order if reach_param[n] and not reach_act[n]}
    mixed = [n for n in order if reach_act[n] and any(c in weight_only for c, _ in _children(n))]
    return param_nodes, order, weight_only, mixed


def weight_pass_nodes(
    outputs: Iterable[torch.Tensor], inputs: Iterable[Any], params: Iterable[torch.Tensor]
) -> Set[Node]:
    """The nodes a weight pass runs after an input pass of the same graph, in zbkit's split and
    in torch's (`stage_backward_weight` starts at the nodes where the activation and the weight
    paths meet, its "intermediates", our mixed nodes): the mixed and the weight-only nodes."""
    roots = (o.grad_fn for o in outputs if isinstance(o, torch.Tensor))
    _, _, weight_only, mixed = _classify(roots, inputs, params)
    return set(mixed) | weight_only


class BackwardSplit:
    """The backward of one forward pass of one stage, runnable as B then W, or fused.

    Usage::

        split = BackwardSplit(params)
        with split.record():
            out = module(x)              # x: the stage input, requires_grad
        split.seal(outputs=(out,), inputs=(x,))
        (dx,) = split.backward_input((dy,), want_input_grads=True)   # B
        split.backward_weight()                                      # W, into .grad
        # or instead of both: split.backward_fused((dy,), want_input_grads=True)
    """

    def __init__(self, params: Iterable[torch.Tensor]) -> None:
        given = list(params)
        self._params: List[torch.Tensor] = [p for p in given if p.requires_grad]
        # What a saved tensor must not share to count as activation memory (zbkit._saved_bytes).
        self._param_storage: Set[StorageKey] = state_storages((), given)
        self._boxes: List[_Box] = []
        self._mapping_node: Optional[Node] = None
        self._outputs: Tuple[torch.Tensor, ...] = ()
        self._inputs: Tuple[torch.Tensor, ...] = ()
        self._mixed: List[Node] = []
        self._weight_only: Set[Node] = set()
        self._param_of: Dict[Node, torch.Tensor] = {}
        self._wo_roots: List[Tuple[int, Node, int]] = []  # (output index, node, slot)
        self._captured: Dict[Node, List[Optional[torch.Tensor]]] = {}
        self._root_grads: List[Optional[torch.Tensor]] = []
        self._state = "new"
        #: False when this stage's graph cannot be split cleanly; then B runs the fused
        #: backward and W only accumulates the weight gradients B kept (see the module doc)
        self.split_clean = True
        self._deferred: List[Tuple[torch.Tensor, torch.Tensor]] = []
        # B and W of a split run in one group, so that checkpointed regions recompute once
        self._group: Optional[checkpointing.RecomputeOnce] = None
        self.stats = SplitStats()

    # ---- forward ---------------------------------------------------------------------------

    def _pack(self, t: torch.Tensor) -> _Box:
        box = _Box(t)
        self._boxes.append(box)
        return box

    def _unpack(self, box: _Box) -> torch.Tensor:
        if self._mapping_node is not None:
            box.owners.append(self._mapping_node)
        if box.tensor is None:
            raise BackwardSplitError(
                f"zbkit bw_split: a saved tensor {box.what} was released after B but W needs it"
            )
        return box.tensor

    @contextlib.contextmanager
    def record(self) -> Iterator[None]:
        """Run the stage's forward (and loss) inside this to route saved tensors through here."""
        if self._state != "new":
            raise BackwardSplitError("zbkit bw_split: record() used twice on one BackwardSplit")
        # Before the forward: the checkpointed regions it runs must get the wrapped hook.
        checkpointing.install()
        with torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack):
            yield
        self._state = "recorded"

    def seal(self, outputs: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor]) -> None:
        """Classifies the graph from `outputs` back to `inputs` and the parameters.

        `inputs` are the stage inputs (leaves that require grad); only the ones whose gradient is
        asked for in B get it, the others just anchor the split (a first stage's data input).
        """
        if self._state != "recorded":
            raise BackwardSplitError("zbkit bw_split: seal() needs a recorded forward")
        self._outputs = tuple(outputs)
        self._inputs = tuple(inputs)
        for out in self._outputs:
            if out.grad_fn is None:
                raise BackwardSplitError(
                    "zbkit bw_split: a stage output does not depend on anything that requires grad"
                )
        param_nodes, order, weight_only, mixed = _classify(
            (o.grad_fn for o in self._outputs), self._inputs, self._params
        )
        # W runs each mixed node from its captured gradient with that node's weight-side children
        # as targets. If such a child is also reachable another way (one parameter, or one
        # parameter-derived tensor, used at two places), the engine would also walk the other
        # path and count its gradient twice. Such a stage falls back to a fused backward in B.
        parents: Dict[Node, Set[Node]] = {}
        for n in order:
            for c, _ in _children(n):
                parents.setdefault(c, set()).add(n)
        self.split_clean = not any(
            len(parents[c]) > 1 for n in mixed for c, _ in _children(n) if c in weight_only
        )
        # A custom autograd.Function computes all its input gradients whenever it runs (its
        # needs_input_grad is fixed in the forward), so as a mixed node it would run, and compute
        # its weight gradient, in both passes.
        if any(isinstance(n, torch.autograd.function.BackwardCFunction) for n in mixed):
            self.split_clean = False

        self._weight_only = weight_only
        self._mixed = mixed
        self._param_of = {n: p for n, p in param_nodes.items() if n in weight_only}
        self._wo_roots = [
            (i, o.grad_fn, o.output_nr)
            for i, o in enumerate(self._outputs)
            if o.grad_fn in weight_only
        ]
        self.stats.mixed_nodes = len(mixed)
        self.stats.weight_only_nodes = len(weight_only) - len(self._param_of)

        # Which node owns which saved tensor: reading a node's saved attributes calls our unpack
        # hook with that node marked (a checkpointed region's tensors are not ours: reading them
        # would recompute the region, so they refuse while mapping).
        with checkpointing.mapping_saved_tensors():
            for n in order:
                self._mapping_node = n
                try:
                    for attr in _saved_attributes(n):
                        try:
                            getattr(n, attr)
                        except RuntimeError:
                            pass
                    if isinstance(n, _CUSTOM_FUNCTION_NODE):  # a custom autograd.Function's ctx
                        try:
                            n.saved_tensors  # noqa: B018 - read for the unpack side effect
                        except RuntimeError:
                            pass
                finally:
                    self._mapping_node = None
        self.stats.saved_bytes = self._bytes(self._boxes)
        if self.split_clean and checkpointing.install():
            w_nodes = set(mixed) | weight_only
            self._group = checkpointing.RecomputeOnce(w_nodes.__contains__)
        self._state = "sealed"

    def _bytes(self, boxes: Iterable[_Box]) -> int:
        return _unique_bytes((b.tensor for b in boxes if b.tensor is not None), self._param_storage)

    # ---- backward --------------------------------------------------------------------------

    def _grad_outputs(self, grads: Sequence[Optional[torch.Tensor]]) -> List[torch.Tensor]:
        if len(grads) != len(self._outputs):
            raise BackwardSplitError(
                f"zbkit bw_split: {len(grads)} output gradients for {len(self._outputs)} outputs"
            )
        result = []
        for out, g in zip(self._outputs, grads):
            result.append(torch.ones_like(out) if g is None else g)
        return result

    def backward_input(
        self, grad_outputs: Sequence[Optional[torch.Tensor]], want_input_grads: Sequence[bool]
    ) -> List[Optional[torch.Tensor]]:
        """B: gradients w.r.t. the inputs flagged in `want_input_grads` (None for the others).

        A None output gradient means 1 (a scalar loss)."""
        if self._state != "sealed":
            raise BackwardSplitError(f"zbkit bw_split: backward_input() in state {self._state}")
        dys = self._grad_outputs(grad_outputs)
        if not self.split_clean:
            return self._fused_in_b(dys, want_input_grads)
        # Output gradients are needed again by W only where an output is itself weight-only.
        wo_outputs = {i for i, _, _ in self._wo_roots}
        self._root_grads = [g if i in wo_outputs else None for i, g in enumerate(dys)]
        targets: List[Any] = []
        wanted = [i for i, x in enumerate(self._inputs) if want_input_grads[i] and x.requires_grad]
        for i in wanted:
            targets.append(self._inputs[i])
        slots: List[Tuple[Node, int]] = []
        for n in self._mixed:
            for k in range(_input_slots(n)):
                slots.append((n, k))
                targets.append(GradientEdge(n, k))
        result: List[Optional[torch.Tensor]] = [None] * len(self._inputs)
        if targets:
            with self._in_group():
                grads = torch.autograd.grad(
                    self._outputs, targets, dys, retain_graph=True, allow_unused=True
                )
            for j, i in enumerate(wanted):
                result[i] = grads[j]
            captured = grads[len(wanted) :]
            for (n, k), g in zip(slots, captured):
                self._captured.setdefault(n, [None] * _input_slots(n))[k] = g
        # Release what only B needed: boxes none of whose owners W runs.
        w_nodes = set(self._mixed) | self._weight_only
        for b in self._boxes:
            if b.owners and not any(o in w_nodes for o in b.owners):
                b.tensor = None
        self.stats.retained_bytes = self._bytes(self._boxes)
        self.stats.captured_bytes = self._captured_bytes()
        if self._group is not None:
            self.stats.recomputed_bytes = _unique_bytes(
                self._group.kept_tensors(), self._param_storage
            )
        self._outputs = ()
        self._inputs = ()
        self._state = "b_done"
        return result

    def _fused_in_b(
        self, dys: List[torch.Tensor], want_input_grads: Sequence[bool]
    ) -> List[Optional[torch.Tensor]]:
        wanted = [i for i, x in enumerate(self._inputs) if want_input_grads[i] and x.requires_grad]
        targets = [self._inputs[i] for i in wanted] + list(self._params)
        result: List[Optional[torch.Tensor]] = [None] * len(self._inputs)
        grads = torch.autograd.grad(self._outputs, targets, dys, allow_unused=True)
        for j, i in enumerate(wanted):
            result[i] = grads[j]
        weight_grads = zip(self._params, grads[len(wanted) :])
        self._deferred = [(p, g) for p, g in weight_grads if g is not None]
        self._release()
        self.stats.retained_bytes = 0
        self._state = "b_done"
        return result

    def backward_weight(self) -> None:
        """W: weight gradients of this (stage, microbatch), accumulated into ``.grad``."""
        if self._state != "b_done":
            raise BackwardSplitError(f"zbkit bw_split: backward_weight() in state {self._state}")
        if not self.split_clean:
            for p, g in self._deferred:
                accumulate_grad(p, g)
            self._deferred = []
            self._state = "done"
            return
        pending: Dict[Tuple[Node, int], torch.Tensor] = {}

        def add_pending(node: Node, nr: int, g: Optional[torch.Tensor]) -> None:
            if g is None:
                return
            key = (node, nr)
            pending[key] = g if key not in pending else pending[key] + g

        for i, node, nr in self._wo_roots:
            add_pending(node, nr, self._root_grads[i])
        for n in self._mixed:
            got = self._captured.get(n)
            if got is None or all(g is None for g in got):
                continue
            outs = [GradientEdge(n, k) for k, g in enumerate(got) if g is not None]
            gouts = [g for g in got if g is not None]
            targets: List[Any] = []
            keys: List[Tuple[Node, int]] = []
            for c, nr in _children(n):
                if c in self._weight_only and (c, nr) not in keys:
                    keys.append((c, nr))
                    param = self._param_of.get(c)
                    targets.append(param if param is not None else GradientEdge(c, nr))
            with self._in_group():
                grads = torch.autograd.grad(
                    outs, targets, gouts, retain_graph=True, allow_unused=True
                )
            for (c, nr), g in zip(keys, grads):
                if g is None:
                    continue
                if c in self._param_of:
                    accumulate_grad(self._param_of[c], g)
                else:
                    add_pending(c, nr, g)
        if pending:
            params = list(self._param_of.values())
            outs = [GradientEdge(c, nr) for (c, nr) in pending]
            with self._in_group():
                grads = torch.autograd.grad(
                    outs, params, list(pending.values()), retain_graph=False, allow_unused=True
                )
            for p, g in zip(params, grads):
                if g is not None:
                    accumulate_grad(p, g)
        self._release()
        self._state = "done"

    def backward_fused(
        self, grad_outputs: Sequence[Optional[torch.Tensor]], want_input_grads: Sequence[bool]
    ) -> List[Optional[torch.Tensor]]:
        """BW: input and weight gradients in one engine pass; weights accumulate into .grad."""
        if self._state != "sealed":
            raise BackwardSplitError(f"zbkit bw_split: backward_fused() in state {self._state}")
        dys = self._grad_outputs(grad_outputs)
        wanted = [i for i, x in enumerate(self._inputs) if want_input_grads[i] and x.requires_grad]
        targets = [self._inputs[i] for i in wanted] + list(self._params)
        result: List[Optional[torch.Tensor]] = [None] * len(self._inputs)
        if targets:
            grads = torch.autograd.grad(self._outputs, targets, dys, allow_unused=True)
            for j, i in enumerate(wanted):
                result[i] = grads[j]
            for p, g in zip(self._params, grads[len(wanted) :]):
                if g is not None:
                    accumulate_grad(p, g)
        self._release()
        self._state = "done"
        return result

    def _captured_bytes(self) -> int:
        grads = [g for got in self._captured.values() for g in got] + self._root_grads
        return _unique_bytes((g for g in grads if g is not None), set())

    def held_bytes(self) -> int:
        """Bytes this split holds now: saved_bytes before B, w_bytes between B and W, 0 after.

        The executor asks after every op for every pending split, so the figures seal() and B
        computed are returned as they are (what a split holds changes only in those steps)
        instead of walking the boxes again."""
        if self._state == "sealed":
            return self.stats.saved_bytes
        if self._state == "b_done":
            return self.stats.w_bytes
        if self._state == "done":
            return 0
        return self._bytes(self._boxes)

    def _in_group(self):
        """The split's `RecomputeOnce` entered, or nothing where there is none or the caller is
        already inside a GraphExecGroup of its own (they do not nest; then its regions follow
        the caller's group)."""
        group = self._group
        if group is None or checkpointing.current_group() is not None:
            return contextlib.nullcontext()
        return group

    def _release(self) -> None:
        """Once no pass needs the graph: what was held for it, and every reference to its nodes.
        The graph's saved tensors hold this split (its unpack hook), and autograd's C++ nodes
        are not traversed by Python's collector, so a split that kept its nodes would keep
        itself, its graph and what it captured (an output gradient per microbatch) alive for
        good, and with them every checkpointed region of the microbatch."""
        if self._group is not None:
            self._group.release()
            self._group = None
        for b in self._boxes:
            b.tensor, b.owners = None, []
        self._boxes = []
        self._captured = {}
        self._mixed, self._weight_only, self._param_of, self._wo_roots = [], set(), {}, []
        self._root_grads = []
        self._outputs, self._inputs = (), ()
        self._root_grads = []
        self._outputs = ()
        self._inputs = ()
        self._mixed = []
        self._weight_only = set()
        self._param_of = {}
        self._wo_roots = []

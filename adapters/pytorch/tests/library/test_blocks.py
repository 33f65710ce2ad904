# SPDX-License-Identifier: Apache-2.0
"""The profiling window's per-block costs (zbkit.pipelining.measure.blocks), in one process on real modules:
which blocks a stage has and what they are called, what one block measures, and that measuring
leaves the job as it was (gradients, random state, buffers). The torchrun jobs that go through
`zb profile --torch` are in test_zb_profile_torch.py and test_torchtitan.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from zbkit.pipelining.measure import blocks  # noqa: E402
from zbkit.split import parse_split, stage_modules  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from gpt_model import Gpt, GptConfig, split_stages  # noqa: E402

DIM = 32


def test_a_stage_modules_blocks_are_its_children_with_containers_opened():
    model = Gpt(GptConfig(layers=4, dim=DIM, heads=2, seq=8, vocab=64))
    first, last = split_stages(model, 2)
    assert [name for name, _ in blocks.stage_blocks(first)] == ["embed", "blocks.0", "blocks.1"]
    assert [name for name, _ in blocks.stage_blocks(last)] == ["blocks.0", "blocks.1", "head"]
    # A stage zbkit.split built is named as the model names its blocks.
    split = parse_split({"format": "zb-split/1", "ranks": 2, "layout": "loop:1",
                         "stages": [["embed", "blocks.0"], ["blocks.1", "blocks.2", "blocks.3",
                                                            "head"]]})  # fmt: skip
    ((_, stage),) = stage_modules(model, split, 1)
    names = [name for name, _ in blocks.stage_blocks(stage)]
    assert names == ["blocks.1", "blocks.2", "blocks.3", "head"]


def _mlp() -> torch.nn.Sequential:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(DIM, 4 * DIM), torch.nn.GELU(), torch.nn.Linear(4 * DIM, DIM)
    )


def _param_bytes(module) -> int:
    return sum(p.numel() * p.element_size() for p in module.parameters())


def test_one_block_measures_times_memory_state_and_what_it_sends():
    block = _mlp()
    x = torch.randn(8, 16, DIM, requires_grad=True)
    measured = blocks.measure_block(block, ((x,), {}))
    assert min(measured[k] for k in ("F", "B", "W")) > 0, measured
    # Saved for backward: the two Linear inputs and GELU's input (its output is the second
    # Linear's input), float32; the weight gradients need the two Linear inputs.
    tokens = 8 * 16 * 4
    assert measured["M_B"] == tokens * (DIM + 4 * DIM + 4 * DIM), measured
    assert measured["M_W"] == tokens * (DIM + 4 * DIM), measured
    assert measured["send"] == tokens * DIM
    assert measured["state"] == 2 * _param_bytes(block)  # parameters and gradients, no optimizer
    # An input without a gradient (token ids, or a stage's first block): no B, all of it W.
    frozen = blocks.measure_block(block, ((x.detach(),), {}))
    assert frozen["B"] == 0 and frozen["W"] > 0, frozen


def test_an_optimizers_state_counts_once_it_has_stepped():
    blocks.watch_optimizers()
    block = _mlp()
    optimizer = torch.optim.Adam(block.parameters())
    block(torch.randn(4, DIM)).sum().backward()
    optimizer.step()
    measured = blocks.measure_block(block, ((torch.randn(4, DIM, requires_grad=True),), {}))
    steps = 4 * len(list(block.parameters()))  # Adam's float32 step counter per parameter
    assert measured["state"] == 4 * _param_bytes(block) + steps, measured


def test_measuring_leaves_gradients_random_state_and_buffers_alone(tmp_path, monkeypatch):
    torch.manual_seed(1)
    block = torch.nn.Sequential(
        torch.nn.Linear(DIM, DIM), torch.nn.BatchNorm1d(DIM), torch.nn.Dropout(0.5)
    )
    stage = SimpleNamespace(
        stage_index=2, submod=torch.nn.Sequential(block, torch.nn.Linear(DIM, 4))
    )
    schedule = SimpleNamespace(_stages=[stage])
    capture = blocks.Capture(schedule)
    stage.submod(torch.randn(16, DIM, requires_grad=True))  # the job's own forward
    capture.remove()
    statistics = [b.clone() for b in block.buffers()]
    rng = torch.get_rng_state()
    monkeypatch.setenv("RANK", "5")
    blocks.measure_and_write(capture, str(tmp_path))
    assert all(p.grad is None for p in stage.submod.parameters())
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(a, b) for a, b in zip(block.buffers(), statistics))
    written = json.loads((tmp_path / "rank5.blocks.json").read_text())
    assert written["format"] == "zb-block-costs/1" and written["rank"] == 5
    (only,) = written["stages"]
    assert only["stage"] == 2
    assert [b["name"] for b in only["blocks"]] == ["0", "1"]


def test_a_block_that_cannot_run_again_is_one_warning_and_the_rest_is_kept(tmp_path, capsys):
    class OnlyOnce(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(DIM, DIM)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            if self.calls > 1:
                raise RuntimeError("this block runs once")
            return self.linear(x)

    stage = SimpleNamespace(stage_index=0, submod=torch.nn.Sequential(OnlyOnce(), _mlp()))
    capture = blocks.Capture(SimpleNamespace(_stages=[stage]))
    stage.submod(torch.randn(4, DIM))
    capture.remove()
    blocks.measure_and_write(capture, str(tmp_path))
    warnings = [line for line in capsys.readouterr().err.splitlines() if "per-block" in line]
    assert len(warnings) == 1 and "block '0' not measured: this block runs once" in warnings[0]
    (written,) = tmp_path.glob("rank*.blocks.json")
    assert [b["name"] for b in json.loads(written.read_text())["stages"][0]["blocks"]] == ["1"]


def test_the_loss_is_measured_apart_on_the_last_stage(tmp_path, monkeypatch):
    # The schedule's loss runs on the last stage after its last block, in no block: its first
    # inputs are kept while the capture is on, then it is measured alone (F the loss, B its
    # gradient, M_B what it saves: at least the log-softmax of the logits).
    def loss_fn(logits, target):
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())

    head = torch.nn.Linear(DIM, 512)
    stage = SimpleNamespace(stage_index=1, is_last=True, submod=torch.nn.Sequential(head))
    schedule = SimpleNamespace(_stages=[stage], _loss_fn=loss_fn)
    capture = blocks.Capture(schedule)
    assert schedule._loss_fn is not loss_fn  # kept while capturing
    logits = stage.submod(torch.randn(4, 8, DIM))
    schedule._loss_fn(logits, torch.randint(0, 512, (4, 8))).backward()
    capture.remove()
    assert schedule._loss_fn is loss_fn
    monkeypatch.setenv("RANK", "1")
    blocks.measure_and_write(capture, str(tmp_path))
    (entry,) = json.loads((tmp_path / "rank1.blocks.json").read_text())["stages"]
    assert entry["loss"]["F"] > 0 and entry["loss"]["B"] > 0, entry
    assert entry["loss"]["M_B"] >= 4 * 8 * 512 * 4, entry  # the log-softmax, float32
    assert [b["name"] for b in entry["blocks"]] == ["0"]


def test_a_forward_under_autocast_is_measured_under_it(tmp_path, monkeypatch):
    # A job that runs its forward under torch.autocast (torchtitan without FSDP, in bf16): its
    # blocks are measured under the same autocast, so what they save is bf16, not float32.
    monkeypatch.setenv("RANK", "0")
    saved = {}
    for name, autocast in (("plain", False), ("bf16", True)):
        stage = SimpleNamespace(stage_index=0, submod=torch.nn.Sequential(_mlp()))
        capture = blocks.Capture(SimpleNamespace(_stages=[stage]))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            stage.submod(torch.randn(8, 16, DIM, requires_grad=True))
        capture.remove()
        blocks.measure_and_write(capture, str(tmp_path / name))
        (block,) = json.loads((tmp_path / name / "rank0.blocks.json").read_text())["stages"][0][
            "blocks"
        ]
        saved[name] = block["M_B"]
    assert saved["bf16"] < 0.75 * saved["plain"], saved


def test_inputs_that_cannot_be_kept_never_reach_the_job(tmp_path, monkeypatch, capsys):
    # The pre-hook runs inside the job's forward: a failure there is one warning and an
    # unmeasured block, and the forward computes what it computes without zbkit.
    model = torch.nn.Sequential(_mlp(), _mlp())
    x = torch.randn(4, DIM)
    expected = model(x)
    stage = SimpleNamespace(stage_index=0, submod=model)
    capture = blocks.Capture(SimpleNamespace(_stages=[stage]))
    real_copy, calls = blocks._copy, []

    def copy_fails_once(tree):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("cannot copy this input")
        return real_copy(tree)

    monkeypatch.setattr(blocks, "_copy", copy_fails_once)
    assert torch.equal(stage.submod(x), expected)
    capture.remove()
    monkeypatch.setenv("RANK", "0")
    blocks.measure_and_write(capture, str(tmp_path))
    warnings = [line for line in capsys.readouterr().err.splitlines() if "per-block" in line]
    assert len(warnings) == 1 and "cannot copy this input" in warnings[0], warnings
    (entry,) = json.loads((tmp_path / "rank0.blocks.json").read_text())["stages"]
    assert [b["name"] for b in entry["blocks"]] == ["1"]


def test_each_block_is_also_measured_in_the_checkpointing_modes_it_did_not_run_in():
    """The memory plan's input (docs/memory-plan.md §1): a plain block measured whole-checkpointed
    too, a checkpointed one without its checkpoint; the rule of §2 holds exactly for memory: F
    then keeps only the block's input, W reads the same tensors."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    x = torch.randn(8, 16, DIM, requires_grad=True)
    plain = _mlp()
    own = blocks.measure_block(plain, ((x,), {}))
    (full,) = blocks.measure_other_modes(plain, ((x,), {}), "mlp")
    assert full["checkpointing"] == "full" and full["source"] == "measured"
    assert min(full[k] for k in ("F", "B", "W")) > 0, full
    assert full["M_B"] == x.numel() * x.element_size(), full  # the input, nothing else
    assert full["M_W"] == own["M_W"], (full, own)
    assert set(full) == {"checkpointing", "F", "B", "W", "M_B", "M_W", "source"}

    wrapped = checkpoint_wrapper(_mlp())
    (none,) = blocks.measure_other_modes(wrapped, ((x,), {}), "wrapped")
    assert none["checkpointing"] == "none"
    assert (none["M_B"], none["M_W"]) == (own["M_B"], own["M_W"]), (none, own)
    assert all(p.grad is None for p in wrapped.parameters())

    monkey = blocks.Capture(SimpleNamespace(_stages=[]))
    assert monkey.measure_modes  # on by default; ZBKIT_PROFILE_BLOCK_MODES=0 turns it off


def test_a_job_s_blocks_file_carries_the_other_modes(tmp_path, monkeypatch):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    stage = SimpleNamespace(stage_index=0, submod=torch.nn.Sequential(checkpoint_wrapper(_mlp()),
                                                                      _mlp()))  # fmt: skip
    capture = blocks.Capture(SimpleNamespace(_stages=[stage]))
    stage.submod(torch.randn(4, DIM, requires_grad=True))
    capture.remove()
    monkeypatch.setenv("RANK", "0")
    blocks.measure_and_write(capture, str(tmp_path))
    written = json.loads((tmp_path / "rank0.blocks.json").read_text())["stages"][0]["blocks"]
    assert [(b["checkpointing"], [o["checkpointing"] for o in b["options"]]) for b in written] == [
        ("full", ["none"]),
        ("none", ["full"]),
    ]
    monkeypatch.setenv("ZBKIT_PROFILE_BLOCK_MODES", "0")
    capture = blocks.Capture(SimpleNamespace(_stages=[stage]))
    stage.submod(torch.randn(4, DIM, requires_grad=True))
    capture.remove()
    blocks.measure_and_write(capture, str(tmp_path))
    written = json.loads((tmp_path / "rank0.blocks.json").read_text())["stages"][0]["blocks"]
    assert all("options" not in b for b in written)

# SPDX-License-Identifier: Apache-2.0
"""zbkit.split: the stages `zb partition --split-out` chose, built in a plain script, compute what
the whole model computes; splits the script cannot run are refused with one line."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from launch import zb_partition  # noqa: E402

from zbkit.errors import SplitError  # noqa: E402
from zbkit.split import check_schedule_class, parse_split, read_split, stage_modules  # noqa: E402

BLOCKS = 10


def _model() -> torch.nn.Sequential:
    torch.manual_seed(0)
    layers = [torch.nn.Linear(16, 16) if i % 2 == 0 else torch.nn.Tanh() for i in range(BLOCKS)]
    return torch.nn.Sequential(*layers)


def _layers_file(path) -> None:
    """Uneven costs (a heavy last block, as an LM head), named as the model names its blocks."""
    layers = []
    for i in range(BLOCKS):
        heavy = 3.0 if i == BLOCKS - 1 else 1.0
        layers.append(
            {
                "name": str(i),
                "F": heavy,
                "B": heavy,
                "W": 0.8 * heavy,
                "M_B": 4,
                "M_W": 1,
                "state": 2,
                "send": 1,
            }
        )
    path.write_text(json.dumps({"format": "zb-layers/1", "comm": 0.05, "layers": layers}))


@pytest.mark.parametrize("layout", ["loop:1", "loop:2", "v"])
def test_the_chosen_stages_compute_what_the_model_computes(tmp_path, layout):
    _layers_file(tmp_path / "layers.json")
    split_file = tmp_path / "split.json"
    done = zb_partition(
        tmp_path / "layers.json",
        "-p",
        "2",
        "-m",
        "4",
        "--layout",
        layout,
        "--evaluations",
        "100",
        "--split-out",
        str(split_file),
    )
    assert done.returncode == 0, done.stderr
    split = read_split(split_file)
    assert split.layout == layout and split.ranks == 2
    model = _model()
    by_stage = {}
    for rank in range(split.ranks):
        for stage, module in stage_modules(model, split, rank):
            assert stage not in by_stage
            by_stage[stage] = module
    assert sorted(by_stage) == list(range(split.num_stages))
    x = torch.randn(3, 16)
    y = x
    for stage in range(split.num_stages):
        y = by_stage[stage](y)
    assert torch.equal(y, model(x))
    check_schedule_class(split, split.schedule)  # the class the split was chosen for runs it


def _document(**changes):
    document = {
        "format": "zb-split/1",
        "ranks": 2,
        "layout": "v",
        "schedule": "ScheduleZBVZeroBubble",
        "stages": [["0", "1"], ["2"], ["3"], ["4"]],
    }
    document.update(changes)
    return document


def test_splits_the_script_cannot_run_are_refused():
    split = parse_split(_document(), "split.json")
    assert split.stages_of_rank(0) == [0, 3] and split.stages_of_rank(1) == [1, 2]
    with pytest.raises(SplitError, match="layout v cannot run under Schedule1F1B"):
        check_schedule_class(split, "Schedule1F1B")
    loop = parse_split(_document(layout="loop:2", schedule="ScheduleInterleaved1F1B"), "s.json")
    assert loop.stages_of_rank(1) == [1, 3]
    with pytest.raises(SplitError, match="layout loop:2 cannot run under ScheduleZBVZeroBubble"):
        check_schedule_class(loop, "ScheduleZBVZeroBubble")
    bad = parse_split(_document(stages=[["0"], ["1"], ["2"], ["layers.40"]]), "split.json")
    with pytest.raises(
        SplitError, match=r"split.json: stages\[3\]: the model has no module 'layers.40'"
    ):
        stage_modules(_model(), bad, 0)
    for changes, message in [
        ({"format": "zb-costs/1"}, "format: expected"),
        ({"ranks": 0}, "ranks: must be an integer >= 1"),
        ({"layout": "loop:x"}, "layout: must be"),
        ({"stages": [["0"], ["1"], ["2"]]}, "stages: must list 4 stages"),
        ({"stages": [["0"], ["1"], ["2"], ["1"]]}, "'1' is in two stages"),
        ({"stages": [["0"], [], ["2"], ["3"]]}, r"stages\[1\]: must be a non-empty list"),
    ]:
        with pytest.raises(SplitError, match=message):
            parse_split(_document(**changes), "split.json")


def test_an_unreadable_split_file_is_one_line(tmp_path):
    with pytest.raises(SplitError, match=r"missing.json: cannot read \(No such file"):
        read_split(tmp_path / "missing.json")
    (tmp_path / "torn.json").write_text('{"format": "zb-split/1", "ranks": ')
    with pytest.raises(SplitError, match=r"torn.json: not JSON \("):
        read_split(tmp_path / "torn.json")


def test_a_memory_plan_comes_applied_with_the_stages(tmp_path):
    """docs/memory-plan.md §5: `zb partition --checkpointing` writes each block's mode into the
    split; stage_modules gives the planned blocks wrapped in torch's checkpoint_wrapper (the model
    itself unchanged), which recompute once in the backward and compute the same gradients."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointWrapper,
        checkpoint_wrapper,
    )

    _layers_file(tmp_path / "layers.json")
    split_file = tmp_path / "split.json"
    done = zb_partition(tmp_path / "layers.json", "-p", "2", "-m", "4", "--layout", "loop:1",
                        "--checkpointing", "none,full", "--derive-full", "--mem-limit", "18",
                        "--evaluations", "0", "--split-out", str(split_file))  # fmt: skip
    assert done.returncode == 0, done.stderr
    split = read_split(split_file)
    plan = dict(split.checkpointing)
    assert sorted(plan) == sorted(str(i) for i in range(BLOCKS)), plan
    assert set(plan.values()) == {"none", "full"}, (plan, done.stdout)  # the cap binds: a mix

    model, planned = _model(), _model()
    calls = {}
    for name, block in planned.named_children():
        block.register_forward_pre_hook(
            lambda *_, n=name: calls.__setitem__(n, calls.get(n, 0) + 1)
        )
    stages = [m for rank in range(2) for _, m in stage_modules(planned, split, rank)]
    wrapped = {n for m in stages for n, b in zip(m._zbkit_block_fqns.values(), m)
               if isinstance(b, CheckpointWrapper)}  # fmt: skip
    assert wrapped == {name for name, mode in plan.items() if mode == "full"}
    assert not any(isinstance(b, CheckpointWrapper) for b in planned.children())
    x = torch.randn(3, 16)
    y = x
    for stage in stages:
        y = stage(y)
    y.sum().backward()
    model(x).sum().backward()
    for name in dict(planned.named_children()):
        want = 2 if name in wrapped else 1  # the forward, and the recomputation in the backward
        assert calls.get(name, 0) == want, (name, calls)
    for mine, theirs in zip(planned.parameters(), model.parameters()):
        assert torch.allclose(mine.grad, theirs.grad)

    # Unwrapping, and what cannot be applied.
    document = _document(layout="loop:2", schedule="ScheduleInterleaved1F1B",
                         checkpointing={"0": "none", "2": "op"})  # fmt: skip
    wrapped_model = _model()
    wrapped_model[0] = checkpoint_wrapper(wrapped_model[0])
    (_, first), (_, third) = stage_modules(wrapped_model, parse_split(
        _document(layout="loop:2", schedule="ScheduleInterleaved1F1B",
                  checkpointing={"0": "none"}), "s.json"), 0)  # fmt: skip
    assert first[0] is wrapped_model[0]._checkpoint_wrapped_module
    with pytest.raises(SplitError, match=r"'2': the plan checkpoints it 'op', the job runs it "
                                         r"'none': zbkit applies a per-op policy only"):  # fmt: skip
        stage_modules(_model(), parse_split(document, "s.json"), 1)
    with pytest.raises(SplitError, match=r"checkpointing: '9' is in no stage"):
        parse_split(_document(checkpointing={"9": "full"}), "s.json")
    with pytest.raises(SplitError, match=r"checkpointing: '1': must be \"none\", \"full\" or"):
        parse_split(_document(checkpointing={"1": "selective"}), "s.json")

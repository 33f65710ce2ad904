# SPDX-License-Identifier: Apache-2.0
"""Zero bubble under activation checkpointing (docs/activation-checkpointing.md): every split order
recomputes each checkpointed module exactly once per microbatch, in zbkit's executor and in
PyTorch's runtime as the shim runs it, with the gradients of the unpipelined reference; torch's own
split, the reference count, recomputes once per pass (and per-op SAC fails there).

A forward pre-hook counts every call of each module of the test stages (pipeline_worker.py
checkpointed_stage), recomputations included: a checkpointed module must run 2 x microbatches
times per step (its forward and one recompute), any other module microbatches times."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import pipeline_worker as pw  # noqa: E402
from launch import schedule_from_json, zb  # noqa: E402
from worker_session import Session  # noqa: E402

from zbkit import checkpointing  # noqa: E402
from zbkit.bw_split import BackwardSplit  # noqa: E402

RTOL, ATOL = 1e-5, 1e-10
MODES = ("full", "sac", "every2")
# M_W > M_B, as checkpointing makes it: W holds the recomputed tensors as well.
COSTS = {
    "comm": 0.05,
    "stages": [
        {"F": 1.0, "B": 2.1, "W": 0.8, "M_B": 100, "M_W": 250},
        {"F": 1.1, "B": 2.2, "W": 0.9, "M_B": 100, "M_W": 250},
    ],
}
FAMILIES = {
    "zb-h1": ["--family", "zb-h1"],
    "zb-h2": ["--family", "zb-h2"],
    "zb-v": ["--family", "zb-v"],
    "v-half": ["--family", "v-half"],
    "interleaved": ["--family", "1f1b-i", "--chunks", "2"],
    "search": ["--family", "search", "--placement", "loop", "--chunks", "2", "--seed", "1",
               "--time-limit", "0", "--evaluations", "800"],
}  # fmt: skip
MICROBATCHES = 4


def measured_memory(mode: str, num_stages: int) -> List[Dict[str, float]]:
    """Per stage, M_B and M_W as zbkit's split measures one microbatch of it under `mode`, the
    way the executor runs it (input that requires grad, the loss on the last stage)."""
    memory = []
    x, y = pw.make_data(1)
    for s in range(num_stages):
        module = pw.checkpointed_stage(s, mode, {})
        split = BackwardSplit(module.parameters())
        h = x.detach().requires_grad_()
        with split.record():
            out = module(h)
            if s == num_stages - 1:
                out = pw.loss_fn(out, y)
        split.seal((out,), (h,))
        split.backward_input((None if s == num_stages - 1 else torch.ones_like(out),), [s > 0])
        memory.append({"M_B": split.stats.saved_bytes, "M_W": split.stats.w_bytes})
        split.backward_weight()
        x = out.detach()
    return memory


@pytest.fixture(scope="module")
def checkpointed_runs(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("checkpointing")
    costs = folder / "costs.json"
    costs.write_text(json.dumps({"format": "zb-costs/1", **COSTS}))
    cases: Dict[str, Any] = {}
    for name, flags in FAMILIES.items():
        out = folder / f"{name}.json"
        done = zb(
            "tune", "--costs", str(costs), "-m", str(MICROBATCHES), "--mem-limit", "none", *flags,
            "--out", str(out), timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, f"{name}: {done.stderr}"
        cases[name] = {"schedule": schedule_from_json(json.loads(out.read_text())),
                       "json": str(out)}  # fmt: skip
    # Memory (5c): per-stage M_B and M_W of the stages under full AC, measured by the split;
    # an order tuned under a cap from them; its predicted peak per rank and the cap.
    memory = measured_memory("full", 2)
    assert all(m["M_W"] > m["M_B"] for m in memory), memory
    capped_costs = folder / "capped.costs.json"
    capped_costs.write_text(json.dumps({"format": "zb-costs/1", "checkpointing": "full",
        "comm": 0.05, "stages": [{**COSTS["stages"][s], **memory[s]} for s in range(2)]}))  # fmt: skip
    out = folder / "capped.json"
    done = zb("tune", "--costs", str(capped_costs), "-m", str(MICROBATCHES), "--mem-limit", "6x",
              "--family", "zb-auto", "--runtime", "zbkit", "--json", "--out", str(out),
              timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    capped = json.loads(out.read_text())
    cases["capped"] = {"schedule": schedule_from_json(capped), "json": str(out),
                       "cap": report["candidates"][-1]["cap"],
                       "predicted": capped["predicted"]["peak_memory"]}  # fmt: skip
    # torch's own classes, run by torch alone: the reference recompute count.
    torch_classes = {}
    for name, cls in (("ZBVZeroBubble", "ScheduleZBVZeroBubble"),
                      ("InterleavedZeroBubble", "ScheduleInterleavedZeroBubble")):  # fmt: skip
        like = cases["zb-v" if cls == "ScheduleZBVZeroBubble" else "interleaved"]["schedule"]
        torch_classes[name] = (like, cls)
    job = {"cases": cases, "modes": MODES, "torch_classes": torch_classes,
           "torch_modes": ("full",), "timeout_s": 60.0}  # fmt: skip
    results = Session("checkpointing", job, folder / "run", timeout=600).results()
    return cases, results


def test_measured_peak_under_checkpointing_is_the_predicted_one_within_the_cap(
    checkpointed_runs,
):
    """An order tuned for zbkit's executor under a cap (6x: each deferred W holds about five
    times what a forward leaves, so zb-auto needs that much to split at all) from the stages' M_B
    and M_W as zbkit's split measures them under full AC (M_W > M_B: W holds the recomputed
    tensors) runs in zbkit's executor with
    a peak of held activation bytes per rank within 10 % of the tuner's prediction, and under the
    cap."""
    cases, results = checkpointed_runs
    case = cases["capped"]
    for rank, rank_results in enumerate(results):
        measured = rank_results[("full", "capped", "executor")]["peak_bytes"]
        predicted = case["predicted"][rank]
        print(f"rank {rank}: peak {measured} B measured, {predicted:.0f} B predicted, "
              f"cap {case['cap'][rank]:.0f} B")  # fmt: skip
        assert abs(measured - predicted) <= 0.1 * predicted, (rank, measured, predicted)
        assert measured <= case["cap"][rank], (rank, measured, case["cap"])


def _reference(num_stages: int):
    return pw.reference(num_stages, MICROBATCHES)


@pytest.mark.parametrize("path", ["executor", "shim"])
def test_every_split_order_recomputes_each_checkpointed_module_once(checkpointed_runs, path):
    cases, results = checkpointed_runs
    failures = []
    for mode in MODES:
        for name, case in cases.items():
            schedule = case["schedule"]
            _, ref_grads = _reference(schedule.num_stages)
            seen = set()
            for rank, rank_results in enumerate(results):
                entry = rank_results[(mode, name, path)]
                if "error" in entry:
                    failures.append(f"{mode} {name} rank {rank}: {entry['error']}")
                    continue
                local = schedule.stages[rank]
                for key, count in entry["calls"].items():
                    stage, index = (int(v) for v in key.split("."))
                    want = MICROBATCHES * (2 if index in pw.CHECKPOINTED[mode] else 1)
                    if stage in local and count != want:
                        failures.append(f"{mode} {name}: module {key} ran {count}x, not {want}x")
                for grad_name, grad in entry["grads"].items():
                    seen.add(grad_name)
                    if not torch.allclose(grad, ref_grads[grad_name], rtol=RTOL, atol=ATOL):
                        failures.append(f"{mode} {name}: gradient of {grad_name} differs")
            if seen and seen != set(ref_grads):
                failures.append(f"{mode} {name}: no gradient for {sorted(set(ref_grads) - seen)}")
    assert not failures, "\n".join(failures)


def test_no_checkpointed_region_outlives_its_step(checkpointed_runs):
    """After a step, every checkpointed region of it is gone, in zbkit's executor and in torch's
    runtime under the shim (its recompute-once group once closed a cycle through autograd's
    nodes that kept every region, and its inputs, alive: M_B per microbatch and step; found by
    `zb rehearse` under checkpointing, docs/rehearse.md §6)."""
    cases, results = checkpointed_runs
    alive = [
        f"{mode} {name} {path} rank {rank}: {entry['regions_alive']}"
        for rank, rank_results in enumerate(results)
        for (mode, name, path), entry in rank_results.items()
        if entry.get("regions_alive")
    ]
    assert not alive, "checkpointed regions alive after the step:\n" + "\n".join(alive)


def test_torch_alone_recomputes_in_every_pass_the_reference(checkpointed_runs):
    """torch's own zero-bubble classes on the same stages with full AC: the same gradients, but
    each checkpointed module recomputed in B and again per parameter group in W (torchtitan
    #773); printed for the record, asserted to be more than once, and the gradients equal the
    reference (torch's split is slow under AC, not wrong)."""
    cases, results = checkpointed_runs
    for name in ("ZBVZeroBubble", "InterleavedZeroBubble"):
        counts = {}
        schedule = cases["zb-v" if name == "ZBVZeroBubble" else "interleaved"]["schedule"]
        _, ref_grads = _reference(schedule.num_stages)
        for rank_results in results:
            entry = rank_results[("full", name, "torch")]
            assert "error" not in entry, f"{name}: {entry['error']}"
            counts.update({k: v for k, v in entry["calls"].items() if v})
            for grad_name, grad in entry["grads"].items():
                torch.testing.assert_close(grad, ref_grads[grad_name], rtol=RTOL, atol=ATOL)
        recomputes = {
            k: v / MICROBATCHES - 1
            for k, v in counts.items()
            if int(k.split(".")[1]) in pw.CHECKPOINTED["full"]
        }
        print(f"torch {name}, full AC: recomputes per microbatch {recomputes}")
        # Stage 0 has no input gradient: torch runs its whole backward in W, recomputing once.
        later = [v for k, v in recomputes.items() if not k.startswith("0.")]
        assert later and min(later) > 1, recomputes
        # The transformer layer (6 parameter groups) once in B and once per group in W.
        assert max(later) >= 6, recomputes


def _one_stage(mode: str):
    calls: Dict[str, int] = {}
    module = pw.checkpointed_stage(1, mode, calls)
    x, y = pw.make_data(1)
    return module, calls, x.requires_grad_(), y


@pytest.mark.parametrize("mode", ["full", "sac"])
def test_torchs_split_recomputes_once_per_pass_and_zbkit_once(mode):
    """torch's own split functions (what its zero-bubble classes call) on one checkpointed stage:
    alone they recompute in the input pass and again in the weight pass (SAC: "Trying to
    backward an extra time"); inside one RecomputeOnce, once, with the fused gradients."""
    from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight

    assert checkpointing.install(), checkpointing.install_problem()
    reference, _, x, y = _one_stage("none")
    pw.loss_fn(reference(x), y).backward()

    module, calls, x, y = _one_stage(mode)
    loss = pw.loss_fn(module(x), y)
    _, groups = stage_backward_input([loss], None, [x], module.parameters())
    if mode == "sac":
        with pytest.raises(RuntimeError, match="backward an extra time"):
            stage_backward_weight(module.parameters(), groups)
    else:
        stage_backward_weight(module.parameters(), groups)
        assert calls["1.3"] > 2, calls  # the forward, the input pass, the weight pass(es)

    module, calls, x, y = _one_stage(mode)
    loss = pw.loss_fn(module(x), y)
    nodes = set()
    group = checkpointing.RecomputeOnce(lambda node: node in nodes)
    from zbkit.bw_split import weight_pass_nodes

    nodes.update(weight_pass_nodes([loss], [x], module.parameters()))
    with group:
        _, groups = stage_backward_input([loss], None, [x], module.parameters())
    assert group.kept_tensors(), "the weight pass needs recomputed tensors"
    with group:
        stage_backward_weight(module.parameters(), groups)
    group.release()
    assert calls["1.0"] == calls["1.3"] == 2, calls
    named = dict(reference.named_parameters())
    for name, p in module.named_parameters():
        torch.testing.assert_close(p.grad, named[pw.unwrapped_name(name)].grad)


@pytest.mark.parametrize("mode", ["none", "full", "sac", "every2"])
def test_split_memory_under_checkpointing(mode):
    """What zbkit.bw_split measures for one checkpointed stage: M_B (saved_bytes) shrinks to the
    checkpointed regions' inputs, and M_W (w_bytes) holds the recomputed tensors W reads, so that
    under full AC M_W > M_B; without AC nothing is recomputed."""
    module, calls, x, y = _one_stage(mode)
    split = BackwardSplit(module.parameters())
    with split.record():
        loss = pw.loss_fn(module(x), y)
    split.seal((loss,), (x,))
    split.backward_input((None,), [True])
    stats = split.stats
    split.backward_weight()
    checkpointed = pw.CHECKPOINTED.get(mode, ())
    assert all(calls[f"1.{i}"] == (2 if i in checkpointed else 1) for i in range(4)), calls
    if mode == "none":
        assert stats.recomputed_bytes == 0
    else:
        assert stats.recomputed_bytes > 0, stats
    if mode == "full":
        assert stats.w_bytes > stats.saved_bytes, stats


def _gpt_block(mode: str):
    """One block of the bundled GPT, checkpointed as `mode` (gpt_model.checkpoint_blocks), and
    its forward-call counter."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from gpt_model import Gpt, GptConfig, checkpoint_blocks, count_forwards, split_stages

    model = Gpt(GptConfig(vocab=32, seq=8, dim=32, heads=2, layers=2), seed=0)
    calls = count_forwards(model)
    stage = split_stages(model, 2)[1]
    checkpoint_blocks([stage], mode)
    return stage.blocks[0], calls


@pytest.mark.parametrize("mode", ["full", "sac"])
def test_per_block_costs_recompute_once_and_keep_what_w_reads(mode):
    """zb profile's per-block costs of a checkpointed block (measure.blocks): B holds the one
    recomputation and W none (a forward counter: each timed split is one forward and one
    recompute; SAC would fail in torch's W alone), M_B is what the forward leaves (less than the
    same block unchecked) and M_W what W reads, as much as the unchecked block's."""
    from zbkit.pipelining.measure import blocks

    x = torch.randn(2, 8, 32, requires_grad=True)
    plain, _ = _gpt_block("none")
    unchecked = blocks.measure_block(plain, ((x,), {}), repeats=1)
    block, calls = _gpt_block(mode)
    assert checkpointing.block_mode(block) == ("op" if mode == "sac" else "full")
    before = calls["blocks.1"]
    runner = blocks._BlockRunner(block, ((x,), {}))
    runner.split_backward()
    assert calls["blocks.1"] - before == 2, calls  # the forward and one recomputation
    measured = blocks.measure_block(block, ((x,), {}), repeats=1)
    assert measured["M_B"] < unchecked["M_B"], (measured, unchecked)
    assert measured["M_W"] == unchecked["M_W"], (measured, unchecked)
    assert measured["M_W"] > measured["M_B"], measured


def test_modes_are_detected_per_block_and_for_the_job():
    modes = {}
    for mode, want in (("none", "none"), ("full", "full"), ("sac", "op"),
                       ("reentrant", "reentrant")):  # fmt: skip
        block, _ = _gpt_block(mode)
        modes[mode] = checkpointing.block_mode(block)
        assert modes[mode] == want
    assert checkpointing.modes_mode(["full", "none", "full", "none"]) == "layer"
    assert checkpointing.modes_mode(["op", "op"]) == "op"
    assert checkpointing.modes_mode(["op", "none"]) == "mixed"
    assert checkpointing.modes_mode([]) == "none"
    # A job's mode counts the blocks of the checkpointed blocks' kind: the GPT's stages hold an
    # embedding or a head besides their transformer blocks.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from gpt_model import Gpt, GptConfig, checkpoint_blocks, split_stages

    from zbkit.pipelining.measure.blocks import stage_blocks

    for mode, want in (("none", "none"), ("full", "full"), ("sac", "op"), ("every2", "layer")):
        model = Gpt(GptConfig(vocab=32, seq=8, dim=32, heads=2, layers=4), seed=0)
        stage = split_stages(model, 1)[0]  # embedding, 4 blocks, head
        checkpoint_blocks([stage], mode)
        assert checkpointing.job_mode(b for _, b in stage_blocks(stage)) == want, mode


def test_a_reentrant_or_compiled_stage_is_refused_for_a_split_order_naming_the_module():
    from zbkit.errors import ZbkitPipelineError
    from zbkit.executor import PipelineExecutor
    from zbkit.schedule import Op, Schedule

    calls: Dict[str, int] = {}
    stage = pw.checkpointed_stage(0, "reentrant", calls)
    refusal = checkpointing.split_refusal([(0, stage)], "zbkit: rank 0")
    assert refusal.startswith("zbkit: rank 0: stage 0 checkpoints '3' with torch's reentrant")
    assert "\n" not in refusal
    compiled = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.compile(torch.nn.Linear(4, 4)))
    refusal = checkpointing.split_refusal([(1, compiled)], "zbkit: rank 0")
    assert "stage 1 runs compiled code ('1' is torch.compile'd)" in refusal
    assert checkpointing.split_refusal([(0, pw.make_stage(0))], "x") is None
    # zbkit's executor refuses before step 1: a compiled stage for a split order only, a
    # reentrant checkpoint for any order (torch refuses its every backward, autograd.grad).
    split = Schedule(1, 1, 1, "loop", ((0,),), ((Op("F", 0, 0), Op("B", 0, 0), Op("W", 0, 0)),))
    fused = Schedule(1, 1, 1, "loop", ((0,),), ((Op("F", 0, 0), Op("BW", 0, 0)),))
    for order in (split, fused):
        with pytest.raises(ZbkitPipelineError, match="reentrant checkpoint, which refuses"):
            PipelineExecutor(order, 0, {0: stage}, pw.loss_fn)
    with pytest.raises(ZbkitPipelineError, match="runs compiled code"):
        PipelineExecutor(split, 0, {0: compiled}, torch.nn.functional.mse_loss)
    PipelineExecutor(fused, 0, {0: compiled}, torch.nn.functional.mse_loss)


def test_a_schedule_tuned_for_other_checkpointing_is_named_before_step_one():
    """zb replay compares the profile's costs.checkpointing with the job's stages: a different
    mode is refused in one line naming the stage and block; "layer" admits full and none per
    rank; a profile that does not say (or says "mixed") is not compared."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from gpt_model import Gpt, GptConfig, checkpoint_blocks, split_stages

    def stage(mode: str):
        model = Gpt(GptConfig(vocab=32, seq=8, dim=32, heads=2, layers=4), seed=0)
        built = split_stages(model, 2)[1]
        checkpoint_blocks([built], mode)
        return [(1, built)]

    refusal = checkpointing.profile_mismatch("none", stage("sac"), "zbkit: rank 1", "t.json")
    assert refusal == (
        "zbkit: rank 1: t.json was tuned from a profile of a job that checkpoints activations "
        "'none' (costs.checkpointing), but this job's stage 1 block 'blocks.0' checkpoints 'op'; "
        "profile the job as it runs now (zb profile) and tune again"
    )
    assert "block 'blocks.0' checkpoints 'none'" in checkpointing.profile_mismatch(
        "full", stage("none"), "w", "t"
    )
    for profiled, mode in (("op", "sac"), ("layer", "every2"), ("layer", "full"),
                           ("layer", "none"), ("", "sac"), ("mixed", "full")):  # fmt: skip
        assert checkpointing.profile_mismatch(profiled, stage(mode), "w", "t") is None

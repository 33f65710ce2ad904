# SPDX-License-Identifier: Apache-2.0
"""The guard against a silent divergence under DDP (zbkit._data_parallel, docs/data-parallel.md):
a pipeline inside data parallelism (pp_dp_job.py: PP2 x DP2 on 4 ranks, stages wrapped in DDP or
FSDP2) replayed with a split order is refused before step 1 when a stage is DDP, runs when the
order is fused or the stages are FSDP2, and the replicas of every pipeline rank end equal."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from launch import (  # noqa: E402
    HOOK_DIR,
    JOBS,
    PYTORCH_DIR,
    job_env,
    torchrun_command,
    tune_uniform,
    zb,
)

JOB = JOBS / "pp_dp_job.py"
TIMEOUT_S = 240


def torchrun4(*job_args: str) -> list:
    return torchrun_command(*job_args, ranks=4, script=JOB)


def assert_replicas_equal(prefix: Path) -> None:
    """Ranks (dp 0, pp p) and (dp 1, pp p) hold the same parameters, which differ from the
    initial ones (the job trained); the replicas saw different data, so only a real gradient
    reduction keeps them equal."""
    dumps = [torch.load(f"{prefix}.rank{rank}.pt") for rank in range(4)]
    by_stage = {}
    for dump in dumps:
        by_stage.setdefault(dump["pp"], []).append(dump)
    assert sorted(by_stage) == [0, 1]
    for pp, (first, second) in by_stage.items():
        assert first["params"].keys() == second["params"].keys()
        for name, value in first["params"].items():
            assert torch.equal(value, second["params"][name]), f"stage {pp} replicas differ: {name}"


def test_split_order_refused_for_ddp_stages_before_step_one(tmp_path: Path) -> None:
    """zb-h1 through the shim (the CSV `zb export` writes, loaded as the user would) with DDP
    stages: every rank that checks refuses with one line naming the stage and what to do, before
    its first step (no rank trains, no dump)."""
    schedule, _ = tune_uniform(tmp_path, "zb-h1")
    csv = tmp_path / "zb-h1.csv"
    done = zb("export", str(schedule), "--format", "torch-csv", "-o", str(csv))
    assert done.returncode == 0, done.stderr
    env = job_env(ZBKIT_SCHEDULE=str(csv), PYTHONPATH=str(HOOK_DIR) + os.pathsep + str(PYTORCH_DIR))
    done = subprocess.run(
        torchrun4("--wrap", "ddp", "--dump", str(tmp_path / "dump")),
        env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode != 0
    refusals = [line for line in done.stderr.splitlines() if "DistributedDataParallel" in line]
    assert refusals, done.stderr[-3000:]
    line = refusals[0]
    assert line.startswith("zbkit: rank ") and "runs under DistributedDataParallel" in line, line
    assert "pytorch #144530" in line and "FSDP2" in line and "fused order" in line, line
    assert "loss" not in done.stdout, "a rank trained before the refusal"
    assert not list(tmp_path.glob("dump.rank*.pt"))


def test_fused_order_runs_under_ddp_and_split_order_under_fsdp2(tmp_path: Path) -> None:
    """A fused order (1f1b) keeps running on DDP stages, and zb-h1 runs on FSDP2 stages (which
    torch's runtime reduces itself): both through `zb replay`, the replicas equal afterwards."""
    for family, wrap in (("1f1b", "ddp"), ("zb-h1", "fsdp")):
        schedule, _ = tune_uniform(tmp_path, family)
        prefix = tmp_path / f"{family}-{wrap}"
        done = subprocess.run(
            [str(os.environ["ZBKIT_ZB_BINARY"]), "replay", str(schedule), "--",
             *torchrun4("--wrap", wrap, "--dump", str(prefix))],
            env=job_env(), capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
        assert done.returncode == 0, f"{family} on {wrap}: {done.stderr[-3000:]}"
        assert "DistributedDataParallel" not in done.stderr
        assert_replicas_equal(prefix)


def test_exported_comms_csv_runs_on_fsdp2_stages(tmp_path: Path) -> None:
    """The compute+comms CSV `zb export` writes holds FSDP's UNSHARD and RESHARD where torch's
    own lowering puts them: loaded as the user would, on FSDP2 stages it trains, the replicas
    equal (without them torch stopped at "Attempted to compute on sharded"), and as the job's own
    1F1B does: its losses and parameters (the order splits backwards and adds the microbatches'
    weight gradients itself, so to rounding)."""
    schedule, _ = tune_uniform(tmp_path, "zb-h1")
    csv = tmp_path / "zb-h1.comms.csv"
    done = zb("export", str(schedule), "--format", "torch-csv-comms", "-o", str(csv))
    assert done.returncode == 0, done.stderr
    env = job_env(ZBKIT_SCHEDULE=str(csv), PYTHONPATH=str(HOOK_DIR) + os.pathsep + str(PYTORCH_DIR))
    prefix = tmp_path / "comms"
    done = subprocess.run(torchrun4("--wrap", "fsdp", "--dump", str(prefix)), env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"replaying {csv}" in done.stderr
    assert_replicas_equal(prefix)
    own = tmp_path / "own"
    done = subprocess.run(torchrun4("--wrap", "fsdp", "--dump", str(own)), env=job_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(4):
        want, got = (torch.load(f"{path}.rank{rank}.pt") for path in (own, prefix))
        assert got["losses"] == pytest.approx(want["losses"], rel=1e-5), rank
        for name, value in want["params"].items():
            assert torch.allclose(got["params"][name], value, rtol=1e-5, atol=1e-6), (rank, name)


def test_profiling_window_keeps_ddp_backwards_fused(tmp_path: Path) -> None:
    """The profiling window splits the backward of every even microbatch to measure B and W apart,
    which would skip DDP's reduction where that is the step's last backward (microbatch 2 of 3):
    on DDP stages it keeps them fused, says so once per rank, and the job trains as it would
    unprofiled (the replicas equal)."""
    prefix = tmp_path / "profiled"
    env = job_env(
        ZBKIT_TORCH_PROFILE=str(tmp_path / "trace"), ZBKIT_PROFILE_SKIP="0",
        ZBKIT_PROFILE_ITERS="2", ZBKIT_PROFILE_BLOCKS="0",
        PYTHONPATH=str(HOOK_DIR) + os.pathsep + str(PYTORCH_DIR),
    )  # fmt: skip
    done = subprocess.run(
        torchrun4("--wrap", "ddp", "--microbatches", "3", "--batch", "6", "--dump", str(prefix)),
        env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "keeps its backwards fused" in line]
    assert len(warnings) == 4, done.stderr[-3000:]
    assert_replicas_equal(prefix)
    assert len(list((tmp_path / "trace").glob("rank*.json.gz"))) == 4
    # What DDP's all-reduce takes in per step (`zbkit_reduced`): each stage's parameters, the same
    # on both replicas of a pipeline rank (global ranks r and r + 2, a (dp, pp) mesh).
    reduced = []
    for rank in range(4):
        with gzip.open(tmp_path / "trace" / f"rank{rank}.json.gz", "rt") as trace:
            reduced.append(int(json.load(trace)["zbkit_reduced"]))
    assert reduced[0] == reduced[2] > 0 and reduced[1] == reduced[3] > 0, reduced
    # And the time of each stage's all-reduce, which gloo runs on a thread of its own
    # (docs/data-parallel.md §3): `zb import` of those traces.
    costs = tmp_path / "costs.json"
    done = zb("import", str(tmp_path / "trace"), "--out", str(costs))
    assert done.returncode == 0, done.stderr
    for stage, profile in enumerate(json.loads(costs.read_text())["stages"]):
        assert profile["reduce"] > 0 and profile["reduced"] == reduced[stage], profile
        assert "unshard" not in profile, profile


def test_zb_profile_reads_one_pipeline_of_pp2_x_fsdp2_and_measures_its_blocks(
    tmp_path: Path,
) -> None:
    """`zb profile --torch` of PP2 x FSDP2 (DTensor parameters): one 2-rank pipeline read from the
    stages' process groups, its replicas folded, each stage's reduce-scatter and all-gather timed;
    the profiling window gathers each stage's parameters for the per-block measurement and shards
    them again, every block of every rank is measured, its state the rank's own shard, and the job
    ends with the parameters and losses of the same job run without zbkit (the measurement reduced
    nothing into its gradients)."""
    plain, profiled = tmp_path / "plain", tmp_path / "profiled"
    done = subprocess.run(torchrun4("--wrap", "fsdp", "--dump", str(plain)), env=job_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    costs, layers = tmp_path / "costs.json", tmp_path / "layers.json"
    done = subprocess.run(
        [str(os.environ["ZBKIT_ZB_BINARY"]), "profile", "--torch", "--torch-skip", "0",
         "--torch-iters", "1", "--shard-dir", str(tmp_path / "trace"), "--out", str(costs),
         "--layers-out", str(layers), "--", *torchrun4("--wrap", "fsdp", "--dump", str(profiled))],
        env=job_env(), capture_output=True, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not measured" not in done.stderr, done.stderr[-3000:]
    # Without --pp: the stages' process groups say which ranks are replicas (the mesh is (dp,
    # pp): global ranks 0 and 2 hold stage 0), so one 2-rank pipeline is profiled, not 4 ranks.
    assert "2 data-parallel replicas of a 2-rank pipeline" in done.stdout, done.stdout
    profile = json.loads(costs.read_text())
    assert len(profile["stages"]) == 2 and profile["layout"]["placement"] == "loop", profile
    assert profile["data_parallel"] == 2 and "data parallelism: 2 replicas" in done.stdout
    # Each stage's FSDP reduce-scatter and all-gathers of the step, timed from FSDP's own ranges
    # (docs/data-parallel.md §5): what zb tune then places in the order.
    for stage in profile["stages"]:
        assert stage["reduce"] > 0 and stage["unshard"] > 0, profile
    assert "data-parallel collectives per step" in done.stdout, done.stdout
    # What the all-gathers add: every parameter at its full size (FSDP2 gathers into new buffers,
    # the rank's own shard is not reused), twice the rank's shard with two replicas: each block's
    # state (the shard and its gradient). The reduce-scatter takes in every full gradient: as much.
    for rank in range(2):
        doc = json.loads((tmp_path / "trace" / f"rank{rank}.blocks.json").read_text())
        state = sum(block["state"] for block in doc["stages"][0]["blocks"])
        assert profile["stages"][rank]["unsharded"] == state, (profile, state)
        assert profile["stages"][rank]["reduced"] == state, (profile, state)
    assert "bytes of gradients" in done.stdout, done.stdout
    assert len(json.loads(layers.read_text())["layers"]) == 6
    for rank in range(4):
        doc = json.loads((tmp_path / "trace" / f"rank{rank}.blocks.json").read_text())
        (stage,) = doc["stages"]
        names = [block["name"] for block in stage["blocks"]]
        assert names == (["embed", "blocks.0", "blocks.1"] if stage["stage"] == 0
                         else ["blocks.0", "blocks.1", "head"]), (rank, names)  # fmt: skip
        for block in stage["blocks"]:
            assert block["F"] > 0 and block["W"] > 0 and block["M_B"] > 0, (rank, block)
    # The sharded state: half of what one unsharded replica holds per block, as each rank keeps.
    embed = json.loads((tmp_path / "trace" / "rank0.blocks.json").read_text())["stages"][0]
    assert embed["blocks"][0]["state"] == 64 * 32 * 4 * 2 // 2 + 16 * 32 * 4 * 2 // 2
    assert_replicas_equal(profiled)
    for rank in range(4):
        want, got = (torch.load(f"{prefix}.rank{rank}.pt") for prefix in (plain, profiled))
        assert got["losses"] == want["losses"], rank
        for name, value in want["params"].items():
            assert torch.equal(value, got["params"][name]), (rank, name)


EXECUTOR_PROBE = textwrap.dedent(
    """
    import sys, torch, torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    from zbkit.errors import ZbkitPipelineError
    from zbkit.executor import PipelineExecutor
    from zbkit.schedule import Op, Schedule
    dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
    ops = (Op("F", 0, 0), Op("BW", 0, 0))
    schedule = Schedule(ranks=1, microbatches=1, chunks=1, placement="loop", stages=((0,),),
                        ops=(ops,))
    loss = lambda out, target: out.sum()
    nested = nn.Sequential(nn.Linear(4, 4), DistributedDataParallel(nn.Linear(4, 4)))
    for module in (DistributedDataParallel(nn.Linear(4, 4)), nested):
        try:
            PipelineExecutor(schedule, 0, {0: module}, loss)
        except ZbkitPipelineError as error:
            print(str(error))
        else:
            print("accepted")
    PipelineExecutor(schedule, 0, {0: nn.Linear(4, 4)}, loss)
    print("plain accepted")
    dist.destroy_process_group()
    """
)


def test_executor_refuses_ddp_stages(tmp_path: Path) -> None:
    """zbkit's executor computes every backward (fused BW too) with torch.autograd.grad, which
    skips DDP's hooks: a stage that is, or holds, a DDP module is refused at construction with one
    line naming where; a plain stage is accepted."""
    done = subprocess.run(
        [sys.executable, "-c", EXECUTOR_PROBE, str(tmp_path / "store")],
        env={**os.environ, "PYTHONPATH": str(PYTORCH_DIR)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    own, nested, plain = done.stdout.strip().splitlines()
    assert own.startswith("zbkit executor rank 0: stage 0 runs under DistributedDataParallel")
    assert "(its module is one)" in own and "zb replay" in own
    assert "(Sequential) holds one at '1'" in nested
    assert plain == "plain accepted"

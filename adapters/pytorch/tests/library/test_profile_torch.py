# SPDX-License-Identifier: Apache-2.0
"""Profiling an unmodified torch job on CPU: the shim's ZBKIT_TORCH_PROFILE window writes one
Chrome trace per rank, and `zb import` derives per-stage F/B/W costs and hop times from the
`PP:<action>` ranges PyTorch's runtime records, or, for Schedule1F1B, which records none, the
ranges the shim adds."""

from __future__ import annotations

import gzip
import json

import pytest
from launch import HOOK_DIR, MODEL, job_env, require_zb, run, torchrun_command, zb

torch = pytest.importorskip("torch")

ITERS, SKIP, WINDOW = 3, 1, 2


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    require_zb()
    directory = tmp_path_factory.mktemp("traces")
    args = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", str(ITERS), "--warmup",
                    "0", "--schedule", "ZBVZeroBubble"]  # fmt: skip
    env = job_env(
        PYTHONPATH=str(HOOK_DIR),
        ZBKIT_TORCH_PROFILE=str(directory),
        ZBKIT_PROFILE_SKIP=str(SKIP),
        ZBKIT_PROFILE_ITERS=str(WINDOW),
    )
    done = run(torchrun_command(*args), env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replaying" not in done.stderr  # profiling alone leaves the script's order alone
    return directory


def test_each_rank_writes_one_trace_of_the_window_and_its_blocks(trace_dir):
    assert sorted(p.name for p in trace_dir.iterdir()) == [
        "rank0.blocks.json", "rank0.json.gz", "rank1.blocks.json", "rank1.json.gz",
    ]  # fmt: skip


@pytest.mark.parametrize("rank", [0, 1])
def test_zb_import_derives_per_stage_costs_and_hops_from_each_rank(trace_dir, rank):
    done = zb("import", str(trace_dir / f"rank{rank}.json.gz"), "--format", "chrome", "--pp", "2",
              "--layout", "v", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["iterations"]["used"] == WINDOW  # the window, ProfilerStep by ProfilerStep
    held = {rank, 3 - rank}  # V placement on 2 ranks
    stages = {s["stage"]: s for s in report["stages"]}
    for stage in held:
        for kind in ("F", "B", "W"):
            figures = stages[stage].get(kind)
            assert figures is not None, f"stage {stage} has no {kind}: {stages[stage]}"
            # 4 microbatches in each of the window's iterations, none left out.
            assert figures["samples"] == 4 * WINDOW
            assert figures["median"] > 0
    assert any(h.get("samples", 0) > 0 for h in report["hops"]), report["hops"]


def test_zb_import_reads_the_whole_directory_with_memory(trace_dir):
    done = zb("import", str(trace_dir), "--format", "chrome", "--pp", "2", "--layout", "v",
              "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ranks"] == 2
    assert report["memory_source"] == "measured"


# Rules that name no stage leave the ranks to the traces: ranks that pass activations with
# c10d::send / c10d::recv_ (torch's pipelining does) are a pipeline; ranks that meet only in
# collectives are data-parallel replicas of one (HTA's traces: tests/profiler/public_traces_test.cpp).
NO_STAGE_RULES = [
    {"regex": r"^PP:\d+F\d+$", "kind": "F"},
    {"regex": r"^PP:\d+I\d+$", "kind": "B"},
    {"regex": r"^PP:\d+W\d+$", "kind": "W"},
    {"regex": r"^PP:\d+B\d+$", "kind": "BW"},
    {"regex": r"^PP:", "kind": "IGNORE"},
]


def _variant(trace_dir, out, *, all_reduce: bool, keep_p2p: bool):
    """The real traces, with a data-parallel all-reduce added to each rank and/or their
    point-to-point calls taken out, and without the pipeline group the shim records (as traces
    from elsewhere: what places the ranks then is the communication they show)."""
    out.mkdir()
    for path in sorted(trace_dir.glob("rank*.json.gz")):
        with gzip.open(path, "rt") as f:
            trace = json.load(f)
        trace.pop("zbkit_pipeline", None)
        events = trace["traceEvents"]
        if not keep_p2p:
            events[:] = [e for e in events if e.get("name") not in ("c10d::send", "c10d::recv_")]
        if all_reduce:
            op = next(e for e in events if e.get("ph") == "X" and e["name"].startswith("PP:"))
            events.append({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_",
                           "pid": op["pid"], "tid": op["tid"], "ts": op["ts"], "dur": 1})  # fmt: skip
        with gzip.open(out / path.name, "wt") as f:
            json.dump(trace, f)


@pytest.mark.parametrize(
    ("all_reduce", "keep_p2p", "ranks"),
    [(False, True, 2), (True, True, 2), (True, False, 1)],
    ids=["pipeline", "pipeline-with-data-parallel-all-reduce", "all-reduce-only-replicas"],
)
def test_ranks_are_a_pipeline_where_they_send_to_each_other(
    trace_dir, tmp_path, all_reduce, keep_p2p, ranks
):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(NO_STAGE_RULES))
    traces = tmp_path / "traces"
    _variant(trace_dir, traces, all_reduce=all_reduce, keep_p2p=keep_p2p)
    done = zb("import", str(traces), "--format", "chrome", "--rules", str(rules), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ranks"] == ranks, report.get("notes")
    replicas = [note for note in report.get("notes", []) if "replicas" in note]
    assert bool(replicas) == (ranks == 1), report.get("notes")


# Schedule1F1B (PipelineScheduleSingle) records no PP: ranges; the shim labels its stages.
ONE_F_ONE_B = MODEL + ["--batch", "8", "--microbatches", "4", "--iters", str(ITERS), "--warmup",
                       "0", "--schedule", "1F1B"]  # fmt: skip


@pytest.fixture(scope="module")
def trace_dir_1f1b(tmp_path_factory):
    require_zb()
    directory = tmp_path_factory.mktemp("traces-1f1b")
    env = job_env(
        PYTHONPATH=str(HOOK_DIR),
        ZBKIT_TORCH_PROFILE=str(directory / "traces"),
        ZBKIT_PROFILE_SKIP=str(SKIP),
        ZBKIT_PROFILE_ITERS=str(WINDOW),
    )
    done = run(torchrun_command(*ONE_F_ONE_B, "--dump", str(directory / "dump")), env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replaying" not in done.stderr
    return directory


@pytest.mark.parametrize("rank", [0, 1])
def test_zb_import_derives_f_b_w_and_hops_from_a_profiled_1f1b_job(trace_dir_1f1b, rank):
    trace = trace_dir_1f1b / "traces" / f"rank{rank}.json.gz"
    done = zb("import", str(trace), "--format", "chrome", "--pp", "2", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["iterations"]["used"] == WINDOW
    stages = {s["stage"]: s for s in report["stages"]}
    # Every microbatch's F; the hook splits the even microbatches' backward into B and W and
    # leaves the odd ones fused (BW), so the profile holds both ways.
    for kind, per_iteration in (("F", 4), ("B", 2), ("W", 2), ("BW", 2)):
        figures = stages[rank].get(kind)
        assert figures is not None, f"stage {rank} has no {kind}: {stages[rank]}"
        assert figures["samples"] == per_iteration * WINDOW, (kind, figures)
        assert figures["median"] > 0
    # The sends and receives are labelled too: both hops of 2 stages, every microbatch.
    hops = {(h["from"], h["to"]): h for h in report["hops"]}
    assert set(hops) == {(0, 1), (1, 0)}, report["hops"]
    assert all(h["samples"] == 4 * WINDOW for h in hops.values()), report["hops"]


def test_profiling_1f1b_leaves_the_trained_parameters_alone(trace_dir_1f1b, tmp_path):
    # The window's split backward (I then W) must compute the gradients the full one does.
    plain = tmp_path / "plain"
    done = run(torchrun_command(*ONE_F_ONE_B, "--dump", str(plain)), job_env())
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(2):
        profiled = torch.load(f"{trace_dir_1f1b / 'dump'}.rank{rank}.pt")
        reference = torch.load(f"{plain}.rank{rank}.pt")
        assert profiled["params"].keys() == reference["params"].keys()
        assert profiled["params"], f"rank {rank} dumped no parameters"
        for name, value in reference["params"].items():
            assert torch.allclose(profiled["params"][name], value, rtol=1e-5), name
        assert profiled["losses"] == pytest.approx(reference["losses"], rel=1e-5)


def test_blocks_alone_beside_another_profiler_leave_the_training_as_it_was(tmp_path):
    # ZBKIT_BLOCKS_DIR without ZBKIT_TORCH_PROFILE, as `zb profile` sets it beside the injection
    # library (which records the stages itself): per-block costs only, measured right after step
    # ZBKIT_PROFILE_SKIP, no trace, and the trained parameters those of a plain run.
    blocks = tmp_path / "blocks"
    env = job_env(PYTHONPATH=str(HOOK_DIR), ZBKIT_BLOCKS_DIR=str(blocks), ZBKIT_PROFILE_SKIP="1")
    done = run(torchrun_command(*ONE_F_ONE_B, "--dump", str(tmp_path / "measured")), env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in blocks.iterdir()) == ["rank0.blocks.json", "rank1.blocks.json"]
    for rank, first, last in ((0, "embed", "blocks.1"), (1, "blocks.0", "head")):
        (stage,) = json.loads((blocks / f"rank{rank}.blocks.json").read_text())["stages"]
        names = [b["name"] for b in stage["blocks"]]
        assert names[0] == first and names[-1] == last, names
        assert ("loss" in stage) == (rank == 1), stage
    plain = tmp_path / "plain"
    alone = run(torchrun_command(*ONE_F_ONE_B, "--dump", str(plain)), job_env())
    assert alone.returncode == 0, alone.stderr[-3000:]
    for rank in range(2):
        measured = torch.load(f"{tmp_path / 'measured'}.rank{rank}.pt")
        reference = torch.load(f"{plain}.rank{rank}.pt")
        for name, value in reference["params"].items():
            assert torch.equal(measured["params"][name], value), name
        assert measured["losses"] == reference["losses"]

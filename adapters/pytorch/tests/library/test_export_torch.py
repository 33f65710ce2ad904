# SPDX-License-Identifier: Apache-2.0
"""`zb export` output checked by the installed PyTorch itself.

For every family: the torch-csv file passes torch's own schedule validation, lowering and
deadlock simulation (what `_PipelineScheduleRuntime._load_csv` runs), and the torch-csv-comms file
passes torch's simulation as it stands. Then a few are loaded by `_load_csv` on real ranks, in
both formats, and executed on the bundled job (through the shim), ending with the reference's
parameters."""

from __future__ import annotations

import pytest
from launch import (
    JOB,
    assert_matches_reference,
    job_env,
    require_zb,
    run,
    torchrun_command,
    tuned_schedule,
    zb,
)

torch = pytest.importorskip("torch")
from torch.distributed.pipelining import schedules as ts  # noqa: E402

FAMILIES = ["1f1b", "1f1b-i", "zb-h1", "zb-h2", "zb-auto", "zb-v", "v-half", "v-min"]
RANKS = 2
MICROBATCHES = 4


def export(schedule, fmt, tmp_path):
    out = tmp_path / f"{schedule.stem}.{fmt}.csv"
    done = zb("export", str(schedule), "--format", fmt, "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def read_actions(path):
    """The CSV as torch's loader reads it: one row per rank, cells through _Action.from_str."""
    import csv

    with open(path, newline="") as handle:
        return {rank: [ts._Action.from_str(c) for c in row] for rank, row in
                enumerate(csv.reader(handle))}  # fmt: skip


def fsdp_window(row):
    """The compute ops with the UNSHARD and RESHARD actions among them, each run of RESHARDs in
    stage order (torch reshards in its set's order; a RESHARD moves no data)."""
    kept = [a for a in row if a.is_compute_op or a.computation_type in (ts.UNSHARD, ts.RESHARD)]
    out, run = [], []
    for action in kept + [None]:
        if action is not None and action.computation_type == ts.RESHARD:
            run.append(action)
            continue
        out += sorted(run, key=lambda a: a.stage_index)
        run = []
        if action is not None:
            out.append(action)
    return out


def test_the_fsdp_window_of_four_stages_per_rank_is_torchs(tmp_path):
    """Four stages per rank (interleaved): at most three unsharded at once, evicted and fetched
    before each op exactly where torch's own lowering does it."""
    require_zb()
    costs = tmp_path / "costs.json"
    costs.write_text('{"format": "zb-costs/1", "comm": 0.05, "count": 2, "stages": '
                     '[{"F": 1.0, "B": 1.0, "W": 0.8, "M_B": 1000, "M_W": 300}]}')  # fmt: skip
    schedule = tmp_path / "i4.json"
    done = zb("tune", "--costs", str(costs), "-m", "8", "--mem-limit", "none", "--family",
              "1f1b-i", "--chunks", "4", "-o", str(schedule))  # fmt: skip
    assert done.returncode == 0, done.stderr
    compute = read_actions(export(schedule, "torch-csv", tmp_path))
    comms = read_actions(export(schedule, "torch-csv-comms", tmp_path))
    mine = {r: fsdp_window(row) for r, row in comms.items()}
    assert mine == {r: fsdp_window(ts._add_unshard_reshard(row)) for r, row in compute.items()}
    for row in mine.values():
        assert sum(a.computation_type == ts.RESHARD for a in row) > 4, "nothing was evicted"


@pytest.mark.parametrize("family", FAMILIES)
def test_torch_validates_lowers_and_simulates_the_export(tmp_path, family):
    require_zb()
    schedule = tuned_schedule(tmp_path, family, MICROBATCHES)
    compute = read_actions(export(schedule, "torch-csv", tmp_path))
    assert len(compute) == RANKS
    num_stages = 1 + max(a.stage_index for row in compute.values() for a in row if a)
    # What _load_csv(format="compute_only") runs: validation (which also infers the placement)...
    stage_to_rank = ts._validate_schedule(compute, RANKS, num_stages, MICROBATCHES)
    # ...then the lowering to communication, which fails on an order it cannot complete.
    lowered = {r: ts._add_reduce_grad(ts._add_unshard_reshard(row), MICROBATCHES)
               for r, row in compute.items()}  # fmt: skip
    lowered = ts._add_send_recv(lowered, lambda s: stage_to_rank[s], num_stages)

    comms = read_actions(export(schedule, "torch-csv-comms", tmp_path))
    assert all(a is not None for row in comms.values() for a in row), "an empty cell"
    # The same compute order per rank, and the same REDUCE_GRADs torch's lowering adds.
    assert {r: [a for a in row if a.is_compute_op] for r, row in comms.items()} == {
        r: [a for a in row if a.is_compute_op] for r, row in compute.items()
    }
    reduce = ts._ComputationType.REDUCE_GRAD
    assert {r: [a for a in row if a.computation_type == reduce] for r, row in comms.items()} == {
        r: [a for a in row if a.computation_type == reduce] for r, row in lowered.items()
    }
    # FSDP's window where torch's own lowering puts it (docs/data-parallel.md §4).
    assert {r: fsdp_window(row) for r, row in comms.items()} == {
        r: fsdp_window(ts._add_unshard_reshard(row)) for r, row in compute.items()
    }
    # torch's simulator (it knows no REDUCE_GRAD, UNSHARD, RESHARD: filtered) must see both
    # orders finish.
    not_simulated = (reduce, ts.UNSHARD, ts.RESHARD)
    for order in (comms, lowered):
        plain = {r: [a for a in row if a.computation_type not in not_simulated]
                 for r, row in order.items()}  # fmt: skip
        ts._simulate_comms_compute(plain, lambda s: stage_to_rank[s], num_stages)
    # Every receive matches a send of the same (stage, microbatch) posted in the same order per
    # pair of ranks: torch's P2P ops carry no tag.
    sends, recvs = {}, {}
    for rank, row in comms.items():
        for a in row:
            ctype = a.computation_type
            if ctype in (ts.SEND_F, ts.SEND_B):
                dst = stage_to_rank[a.stage_index + (1 if ctype == ts.SEND_F else -1)]
                sends.setdefault((rank, dst), []).append((a.stage_index, a.microbatch_index))
            elif ctype in (ts.RECV_F, ts.RECV_B):
                src = stage_to_rank[a.stage_index + (-1 if ctype == ts.RECV_F else 1)]
                peer = a.stage_index + (-1 if ctype == ts.RECV_F else 1)
                recvs.setdefault((src, rank), []).append((peer, a.microbatch_index))
    assert sends == recvs


@pytest.mark.parametrize(
    "family,script_schedule", [("zb-v", "ZBVZeroBubble"), ("1f1b-i", "Interleaved1F1B")]
)
def test_comms_export_runs_verbatim_on_the_bundled_job(tmp_path, family, script_schedule):
    schedule = tuned_schedule(tmp_path, family, MICROBATCHES)
    comms = export(schedule, "torch-csv-comms", tmp_path)
    prefix = tmp_path / "dump"
    args = JOB + ["--schedule", script_schedule, "--dump", str(prefix)]
    from launch import HOOK_DIR

    done = run(torchrun_command(*args), job_env(ZBKIT_SCHEDULE=str(comms),
                                                PYTHONPATH=str(HOOK_DIR)))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"zbkit: rank 0: replaying {comms}" in done.stderr
    assert_matches_reference(prefix, args)


def test_legacy_export_is_refused_with_the_reason_where_it_cannot_express_the_schedule(tmp_path):
    import json

    schedule = tuned_schedule(tmp_path, "zb-h1", MICROBATCHES)
    data = json.loads(schedule.read_text())
    # Fuse rank 0's last backward: drop its W and turn its B into a BW.
    ops = data["ranks"][0]["ops"]
    last_b = max(i for i, op in enumerate(ops) if op["type"] == "B")
    mb = ops[last_b]["mb"]
    ops[last_b]["type"] = "BW"
    data["ranks"][0]["ops"] = [op for op in ops if not (op["type"] == "W" and op["mb"] == mb)]
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(data))
    ok = zb("export", str(mixed), "--format", "torch-csv", "-o", "-")
    assert ok.returncode == 0, ok.stderr
    refused = zb("export", str(mixed), "--format", "torch-csv-legacy", "-o", "-")
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1
    assert "torch-csv-legacy cannot express this schedule" in refused.stderr

# SPDX-License-Identifier: Apache-2.0
"""PyTorch runtime rules (zbkit.torch_rules, docs/formats.md §4.1): the checks on their own, the
lowering check against torch's own lowering on random orders, and the rows the shim checks."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from zbkit import torch_rules

torch = pytest.importorskip("torch", reason="torch is not installed")


def rows_of(text: str):
    """'0F0,0F1|1F0,...' -> rows of (stage, kind, microbatch) as the shim reads them."""
    rows = []
    for row in text.split("|"):
        actions = []
        for cell in row.split(","):
            stage = int(cell[0])
            kind, microbatch = cell[1], int(cell[2:])
            actions.append((stage, kind, microbatch))
        rows.append(actions)
    return rows


def test_the_last_stages_forwards_must_run_in_microbatch_order():
    in_order = rows_of("0F0,0F1,0I0,0W0,0I1,0W1|1F0,1I0,1F1,1I1,1W0,1W1")
    assert torch_rules.check(in_order, 2) is None
    swapped = rows_of("0F0,0F1,0I0,0W0,0I1,0W1|1F1,1F0,1I0,1I1,1W0,1W1")
    reason = torch_rules.check(swapped, 2)
    assert reason == (
        'PyTorch runtime rule "last stage\'s forwards in microbatch order" (docs/formats.md '
        "§4.1): rank 1, stage 1 runs F1 (action 0) before F0; PyTorch would start microbatch 0's "
        "backward from microbatch 1's loss"
    )
    # Only the last stage: the first may run its forwards in any order its inputs allow.
    first_swapped = rows_of("0F1,0F0,0I0,0W0,0I1,0W1|1F0,1I0,1F1,1I1,1W0,1W1")
    assert torch_rules.check_loss_order(first_swapped, 2) is None


def test_an_order_the_lowering_cannot_schedule_names_where_each_rank_is_stuck():
    # Rank 0 waits in B0 for rank 1's B0, which rank 1 runs after F1, which waits for rank 0's F1.
    cycle = rows_of("0F0,0B0,0F1,0B1|1F0,1F1,1B0,1B1")
    assert torch_rules.check_loss_order(cycle, 2) is None
    reason = torch_rules.check_lowering(cycle, 2)
    assert reason == (
        'PyTorch runtime rule "an order its lowering can schedule" (docs/formats.md §4.1): no '
        "rank can go on: rank 0 at 0B0 (stage 0, microbatch 0) waits for 1I0; rank 1 at 1F1 "
        "(stage 1, microbatch 1) waits for 0F1"
    )


def _random_order(rng: random.Random, ranks: int, microbatches: int):
    """A random per-rank order of one stage per rank (F, then I, then W per microbatch on its
    rank), which may or may not deadlock across ranks."""
    rows = []
    for rank in range(ranks):
        pending = {mb: ["F", "I", "W"] for mb in range(microbatches)}
        row = []
        while pending:
            mb = rng.choice(sorted(pending))
            row.append((rank, pending[mb].pop(0), mb))
            if not pending[mb]:
                del pending[mb]
        rows.append(row)
    return rows


def test_the_lowering_check_agrees_with_torchs_own_lowering_on_random_orders():
    from torch.distributed.pipelining.schedules import _Action, _add_send_recv

    rng = random.Random(3)
    agreed = {True: 0, False: 0}
    for _ in range(300):
        ranks, microbatches = rng.choice([(2, 2), (2, 3), (3, 2), (3, 3)])
        rows = _random_order(rng, ranks, microbatches)
        ours = torch_rules.check_lowering(rows, ranks) is None
        actions = {
            rank: [_Action.from_str(f"{s}{kind}{mb}") for s, kind, mb in row]
            for rank, row in enumerate(rows)
        }
        try:
            _add_send_recv(actions, stage_to_rank=lambda s: s, num_stages=ranks)
            theirs = True
        except AssertionError as error:
            assert "can't schedule sends/recvs" in str(error)
            theirs = False
        assert ours == theirs, rows
        agreed[ours] += 1
    assert agreed[True] > 10 and agreed[False] > 10, agreed  # both outcomes were exercised


def test_the_shim_reads_a_csv_into_the_rows_the_rules_check(tmp_path: Path):
    """The shim hands the rules torch's actions with torch's kind letters (the refusal of a whole
    job is in test_shim.py)."""
    from zbkit import pipelining

    swapped = tmp_path / "swapped.csv"
    swapped.write_text("0F0,0F1,0I0,0W0,0I1,0W1\n1F1,1F0,1I0,1I1,1W0,1W1\n")
    shape = pipelining.read_shape(str(swapped))
    assert shape.rows[1][0] == (1, "F", 1)
    reason = torch_rules.check(shape.rows, shape.num_stages)
    assert reason is not None and "rank 1, stage 1 runs F1 (action 0) before F0" in reason

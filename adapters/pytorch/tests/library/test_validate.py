# SPDX-License-Identifier: Apache-2.0
"""Schedule validation, and the 1-rank executor path (no process group), in one process."""

from __future__ import annotations

from typing import List, Tuple

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import pipeline_worker as pw  # noqa: E402

from zbkit.errors import ScheduleError  # noqa: E402
from zbkit.executor import PipelineExecutor, ZbkitPipelineError, validate_schedule  # noqa: E402
from zbkit.schedule import Op, Schedule  # noqa: E402


def _sched(ops: List[List[Tuple[str, int, int]]], m: int = 2) -> Schedule:
    p = len(ops)
    return Schedule(
        ranks=p,
        microbatches=m,
        chunks=1,
        placement="loop",
        stages=tuple((r,) for r in range(p)),
        ops=tuple(tuple(Op(k, s, mb) for k, s, mb in rank_ops) for rank_ops in ops),
        family="hand",
    )


GOOD0 = [("F", 0, 0), ("F", 0, 1), ("B", 0, 0), ("W", 0, 0), ("BW", 0, 1)]
GOOD1 = [("F", 1, 0), ("BW", 1, 0), ("F", 1, 1), ("B", 1, 1), ("W", 1, 1)]


def test_a_good_hand_schedule_passes() -> None:
    validate_schedule(_sched([GOOD0, GOOD1]), world_size=2)


@pytest.mark.parametrize(
    "ops, expected",
    [
        (
            [GOOD0, [("F", 1, 0), ("BW", 1, 0), ("F", 1, 1), ("W", 1, 1), ("B", 1, 1)]],
            "rank 1 op 3 (W stage 1 mb 1): runs before its B",
        ),
        (
            [GOOD0, GOOD1 + [("F", 1, 1)]],
            "rank 1 op 5 (F stage 1 mb 1): duplicate, first at op 2",
        ),
        (
            [GOOD0, [("F", 1, 0), ("BW", 1, 0), ("F", 1, 1), ("BW", 1, 1), ("B", 1, 1)]],
            "rank 1 op 4 (B stage 1 mb 1): the pair already ran fused as BW",
        ),
        (
            [GOOD0, [("BW", 1, 0), ("F", 1, 0), ("F", 1, 1), ("BW", 1, 1)]],
            "rank 1 op 0 (BW stage 1 mb 0): runs before its F",
        ),
        (
            [GOOD0, [("F", 1, 0), ("BW", 1, 0), ("F", 1, 1)]],
            "rank 1 has no B/W for stage 1 microbatch 1",
        ),
        (
            [GOOD0, [("F", 0, 0)] + GOOD1],
            "rank 1 op 0 (F stage 0 mb 0): stage 0 is not on rank 1",
        ),
        (
            # rank 0 waits for B of mb 0 before it sends F of mb 1; rank 1 wants F of mb 1 first.
            [
                [("F", 0, 0), ("BW", 0, 0), ("F", 0, 1), ("BW", 0, 1)],
                [("F", 1, 0), ("F", 1, 1), ("BW", 1, 0), ("BW", 1, 1)],
            ],
            "rank 0 op 1 (BW stage 0 mb 0) waits for B stage 1 mb 0, which cannot run",
        ),
    ],
    ids=["w-before-b", "duplicate", "b-after-bw", "bw-before-f", "missing", "foreign", "deadlock"],
)
def test_bad_schedules_fail_with_one_line(ops: list, expected: str) -> None:
    with pytest.raises(ZbkitPipelineError) as info:
        validate_schedule(_sched(ops), world_size=2)
    msg = str(info.value)
    assert expected in msg, msg
    assert "\n" not in msg


def test_world_size_and_modules_must_match() -> None:
    with pytest.raises(ZbkitPipelineError, match="made for 2 ranks but the process group has 4"):
        validate_schedule(_sched([GOOD0, GOOD1]), world_size=4)
    one = _sched([[("F", 0, 0), ("B", 0, 0), ("W", 0, 0)]], m=1)
    with pytest.raises(ZbkitPipelineError, match=r"modules for stages \[0, 1\] but the schedule"):
        PipelineExecutor(one, 0, {0: pw.make_stage(0), 1: pw.make_stage(1)}, pw.loss_fn)


def test_one_rank_schedule_runs_without_a_process_group() -> None:
    m = 3
    ops = [("F", 0, mb) for mb in range(m)]
    ops += [(k, 0, mb) for mb in reversed(range(m)) for k in ("B", "W")]
    sched = _sched([ops], m=m)
    stage = pw.make_stage(0)
    ex = PipelineExecutor(sched, 0, {0: stage}, pw.loss_fn)
    x, y = pw.make_data(m)
    losses = ex.step(list(x.split(pw.MB_SIZE)), lambda mb: y.split(pw.MB_SIZE)[mb])
    ref_loss, ref = pw.reference(1, m)
    assert abs(sum(float(v) for v in losses) / m - ref_loss) < 1e-12
    for name, p in stage.named_parameters():
        assert torch.allclose(p.grad, ref[f"0.{name}"], rtol=1e-5, atol=1e-12), name
    st = ex.memory_stats[0][0]
    assert 0 < st.retained_bytes < st.saved_bytes


def test_op_text_and_parse_are_exact_inverses():
    assert str(Op("B", 3, 5)) == "B stage 3 mb 5"
    for kind in ("F", "B", "W", "BW"):
        for stage, mb in ((0, 0), (7, 10), (1000, 123456)):
            op = Op(kind, stage, mb)
            assert Op.parse(str(op)) == op
    for text in ("", "B stage 3", "B  stage 3 mb 5", "B stage 03 mb 5", "COMM stage 0 mb 0",
                 "B stage 3 mb 5 ", "b stage 3 mb 5", "3I5", "zb:B:s3:mb5"):  # fmt: skip
        with pytest.raises(ScheduleError, match="is not an op"):
            Op.parse(text)

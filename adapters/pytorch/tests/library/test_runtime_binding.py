# SPDX-License-Identifier: Apache-2.0
"""zbkit.libzbrt over the real libzbrt: loading schedules made by the real `zb tune` from a file
and from a store, errors with the library's messages, a recorded replay merged into the store and
read back with sqlite3, and the Python-side mark cost. Skipped (with the reason) when libzbrt or
`zb` is not built."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
REPO_ROOT = PACKAGE_ROOT.parents[1]
if str(PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_ROOT))

from launch import schedule_from_json  # noqa: E402

from zbkit import _libzbrt_abi, libzbrt, locate  # noqa: E402
from zbkit.libzbrt import Recorder, ZbrtError  # noqa: E402
from zbkit.schedule import Op, Schedule  # noqa: E402

PAPER_COSTS = REPO_ROOT / "tuner" / "data" / "paper" / "1.5B-p8-m24.json"


def _skip(reason: str) -> None:
    print(f"SKIP: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def lib():
    try:
        return _libzbrt_abi.lib()
    except ZbrtError as error:
        _skip(f"libzbrt is not built: {error}")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, lib):
    """A store with zb-h1 and zb-v schedules of the paper's 1.5B model (p = 8, m = 24), and the
    zb-v one as a file: (folder, store, {family: schedule id}, {family: file})."""
    zb = Path(os.environ.get("ZBKIT_ZB_BINARY", REPO_ROOT / "build" / "zb" / "zb"))
    if not zb.is_file():
        _skip(f"zb binary not built at {zb} (set ZBKIT_ZB_BINARY or build the repository)")
    folder = tmp_path_factory.mktemp("zbrt")
    store = folder / "zbkit.db"
    files = {}
    for family in ("zb-h1", "zb-v"):
        files[family] = folder / f"{family}.json"
        cmd = [str(zb), "tune", "--costs", str(PAPER_COSTS), "-m", "24", "--mem-limit", "2x",
               "--family", family, "--store", str(store), "--out", str(files[family])]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
    with sqlite3.connect(store) as db:
        ids = dict(db.execute("SELECT family, id FROM schedules"))
    assert set(ids) == {"zb-h1", "zb-v"}
    return folder, store, ids, files


def _from_json(path: Path) -> Schedule:
    """The zb-schedule/1 document read directly, for comparison."""
    return schedule_from_json(json.loads(path.read_text()))


def test_abi_version(lib):
    assert libzbrt.abi_version() == _libzbrt_abi.ABI_VERSION == 1
    assert abs(libzbrt.now_ns() - time.time_ns()) < 1_000_000_000


def test_load_schedule_from_file_matches_the_json(tuned):
    _, _, _, files = tuned
    schedule = libzbrt.load_schedule(files["zb-v"])
    expected = _from_json(files["zb-v"])
    assert schedule.schedule_id is None
    assert schedule.predicted_makespan_ms == pytest.approx(expected.predicted_makespan_ms)
    assert schedule.family == "zb-v" and schedule.placement == "v" and schedule.chunks == 2
    assert schedule.stages[0] == (0, 15)
    from dataclasses import replace

    assert replace(schedule, predicted_makespan_ms=expected.predicted_makespan_ms) == expected


def test_load_schedule_from_store_matches_the_file(tuned):
    _, store, ids, files = tuned
    for family, schedule_id in ids.items():
        schedule = libzbrt.load_schedule_from_store(store, schedule_id)
        from_file = libzbrt.load_schedule(files[family])
        assert schedule.schedule_id == schedule_id
        assert schedule.ops == from_file.ops and schedule.stages == from_file.stages
        assert schedule.ranks == 8 and schedule.microbatches == 24
        assert schedule.predicted_makespan_ms == pytest.approx(from_file.predicted_makespan_ms)
        assert schedule.rank_of_stage(schedule.stages[3][0]) == 3


def test_errors_raise_with_the_library_message(tuned, tmp_path):
    folder, store, ids, _ = tuned
    with pytest.raises(ZbrtError, match=r"zbrt_schedule_open_file: .*missing\.json") as info:
        libzbrt.load_schedule(tmp_path / "missing.json")
    assert info.value.status == "ZBRT_ERROR_NOT_FOUND"
    with pytest.raises(ZbrtError, match="999") as info:
        libzbrt.load_schedule_from_store(store, 999)
    assert info.value.status == "ZBRT_ERROR_NOT_FOUND"
    schedule = libzbrt.load_schedule_from_store(store, ids["zb-h1"])
    with pytest.raises(ZbrtError, match="rank 8 is out of range") as info:
        Recorder(schedule, 8, tmp_path / "rank8.zbshard")
    assert info.value.status == "ZBRT_ERROR_OUT_OF_RANGE"
    rec = Recorder(schedule, 0, tmp_path / "rank0.zbshard")
    with pytest.raises(ZbrtError, match=r"op 0 \(PP:0F0\) of rank 0 was not begun") as info:
        rec.end(0)
    assert info.value.status == "ZBRT_ERROR_STATE"
    with pytest.raises(ZbrtError, match="out of range"):
        rec.begin(len(schedule.ops[0]))
    rec.close()
    rec.close()  # idempotent
    with pytest.raises(ZbrtError, match="closed"):
        rec.begin(0)
    with pytest.raises(ZbrtError, match="loaded by zbkit.libzbrt"):
        Recorder(_from_json(folder / "zb-h1.json"), 0, tmp_path / "x.zbshard")
    with pytest.raises(ZbrtError, match="no shard for rank 1 of 8"):
        libzbrt.merge_run(store, ids["zb-h1"], [tmp_path / "rank0.zbshard"], "x")


def test_library_path_names_env(monkeypatch, tmp_path):
    monkeypatch.setenv(locate.ZBRT_ENV, str(tmp_path / "nope.so"))
    with pytest.raises(ZbrtError) as info:
        _libzbrt_abi._load()
    message = str(info.value)
    assert str(tmp_path / "nope.so") in message
    assert f"{locate.ZBRT_ENV}=" in message


def test_library_found_beside_the_zb_on_path(monkeypatch):
    """Without ZBKIT_ZBRT_LIBRARY, libzbrt is the one beside the zb on PATH (here the build
    tree's <build>/zb/zb and <build>/runtime/libzbrt.so), not one found from the package's
    folder."""
    zb = Path(os.environ.get(locate.ZB_ENV, REPO_ROOT / "build" / "zb" / "zb"))
    monkeypatch.delenv(locate.ZBRT_ENV, raising=False)
    monkeypatch.delenv(locate.ZB_ENV, raising=False)
    monkeypatch.setenv("PATH", str(zb.parent))
    assert locate.zb_binary() == str(zb)
    assert locate.zbrt_library() == zb.resolve().parent.parent / "runtime" / "libzbrt.so"
    monkeypatch.setenv("PATH", "/nonexistent")
    assert locate.zb_binary() == "zb"
    assert locate.zbrt_library() == Path("libzbrt.so")


def test_recorded_replay_merges_into_one_run(tuned, tmp_path):
    _, store, ids, _ = tuned
    schedule = libzbrt.load_schedule_from_store(store, ids["zb-v"])
    shards = tmp_path / "shards"
    shards.mkdir()
    for rank in range(schedule.ranks):
        with Recorder(schedule, rank, shards / f"rank{rank}.zbshard") as rec:
            held = 0
            for step in range(2):
                rec.iteration_begin(step)
                for i, op in enumerate(schedule.ops[rank]):
                    rec.begin(i)
                    rec.end(i)
                    held += {"F": 1000, "B": -600, "W": -400, "BW": -1000}[op.kind]
                    rec.memory(max(held, 0))
                rec.iteration_end()
    run_id = libzbrt.merge_run(store, ids["zb-v"], shards, "python replay.py")
    with sqlite3.connect(store) as db:
        kind, schedule_id, command = db.execute(
            "SELECT kind, schedule_id, command FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        assert (kind, schedule_id, command) == ("replay", ids["zb-v"], "python replay.py")
        (timeline_id,) = db.execute(
            "SELECT id FROM timelines WHERE run_id = ?", (run_id,)
        ).fetchone()
        rows = db.execute(
            "SELECT rank, stage, kind, microbatch, start_ns, end_ns FROM timeline_ops"
            " WHERE timeline_id = ?",
            (timeline_id,),
        ).fetchall()
    total = sum(len(ops) for ops in schedule.ops)
    assert len(rows) == 2 * total
    seen = {}
    for rank, stage, kind, mb, start, end in rows:
        assert start <= end
        seen[(rank, Op(kind, stage, mb))] = seen.get((rank, Op(kind, stage, mb)), 0) + 1
    for rank, ops in enumerate(schedule.ops):
        for op in ops:
            assert seen[(rank, op)] == 2


def test_python_mark_cost(tuned, tmp_path):
    """begin + end through ctypes; prints the figure (the C side alone is bench/zbrt_bench)."""
    _, store, ids, _ = tuned
    schedule = libzbrt.load_schedule_from_store(store, ids["zb-h1"])
    ops = len(schedule.ops[0])
    with Recorder(schedule, 0, tmp_path / "rank0.zbshard") as rec:
        rounds = 200
        t0 = time.perf_counter_ns()
        for step in range(rounds):
            rec.iteration_begin(step)
            for i in range(ops):
                rec.begin(i)
                rec.end(i)
            rec.iteration_end()
        per_op = (time.perf_counter_ns() - t0) / (rounds * ops)
    print(f"\nzbkit.runtime mark cost: {per_op:.0f} ns per op (begin + end, {rounds * ops} ops)")
    assert per_op < 20_000  # a loose bound: Python call overhead, on a shared machine

# SPDX-License-Identifier: Apache-2.0
"""Replaying zbkit schedules from Python: the ctypes binding of libzbrt (runtime/README.md).

    from zbkit import libzbrt as runtime
    schedule = runtime.load_schedule_from_store("zbkit.db", 3)     # or load_schedule("s.json")
    with runtime.Recorder(schedule, rank, f"{shard_dir}/rank{rank}.zbshard") as rec:
        rec.iteration_begin(step)
        for i, op in enumerate(schedule.ops[rank]):
            rec.begin(i); run(op); rec.end(i)
        rec.iteration_end()
    # once every rank has closed its recorder:
    run_id = runtime.merge_run("zbkit.db", 3, shard_dir, "python train.py")

The library is ZBKIT_ZBRT_LIBRARY, else <repo>/build/runtime/libzbrt.so. Every failure raises
ZbrtError with the library's one-line message.
"""

from __future__ import annotations

import ctypes
import os
import sys
import weakref
from typing import Dict, Iterable, Optional, Union

from . import _libzbrt_abi as _zbrt
from ._libzbrt_abi import ZbrtError
from .schedule import Op, Schedule

__all__ = [
    "ZbrtError",
    "Recorder",
    "load_schedule",
    "load_schedule_from_store",
    "merge_run",
    "record_run",
    "now_ns",
    "abi_version",
]

PathLike = Union[str, bytes, "os.PathLike[str]"]


class _Handle:
    """Owns one zbrt_schedule handle; closes it when the Schedule it was loaded for is gone."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value

    def close(self) -> None:
        if self.value:
            _zbrt.lib().zbrt_schedule_close(self.value)
            self.value = None


# id(schedule) -> its handle, for Recorder; the entry goes with the Schedule (weakref.finalize),
# since the frozen value type has no room for it.
_handles: Dict[int, _Handle] = {}


def _forget(key: int) -> None:
    handle = _handles.pop(key, None)
    if handle is not None:
        handle.close()


def abi_version() -> int:
    return _zbrt.lib().zbrt_abi_version()


def now_ns() -> int:
    """CLOCK_REALTIME in ns, the clock of every mark."""
    return _zbrt.lib().zbrt_now_ns()


def load_schedule(path: PathLike) -> Schedule:
    """A zb-schedule/1 file (`zb tune --out`)."""
    lib = _zbrt.lib()
    handle = ctypes.c_void_p()
    _zbrt.check(lib.zbrt_schedule_open_file(_zbrt.fspath(path), ctypes.byref(handle)))
    return _adopt(handle)


def load_schedule_from_store(db: PathLike, schedule_id: int) -> Schedule:
    """Schedule `schedule_id` of the zbkit store `db` (opened read-only)."""
    lib = _zbrt.lib()
    handle = ctypes.c_void_p()
    _zbrt.check(
        lib.zbrt_schedule_open_store(_zbrt.fspath(db), int(schedule_id), ctypes.byref(handle))
    )
    return _adopt(handle)


def _adopt(raw: ctypes.c_void_p) -> Schedule:
    handle = _Handle(raw.value)
    try:
        schedule = _read(handle.value)
    except BaseException:
        handle.close()
        raise
    key = id(schedule)
    _handles[key] = handle
    weakref.finalize(schedule, _forget, key)
    return schedule


def _read(h: int) -> Schedule:
    lib = _zbrt.lib()
    check = _zbrt.check
    i32 = ctypes.c_int32()

    def scalar(function) -> int:
        check(function(h, ctypes.byref(i32)))
        return i32.value

    ranks = scalar(lib.zbrt_schedule_ranks)
    microbatches = scalar(lib.zbrt_schedule_microbatches)
    chunks = scalar(lib.zbrt_schedule_chunks)
    placement = _zbrt.PLACEMENT_NAMES[scalar(lib.zbrt_schedule_placement)]
    family = ctypes.c_char_p()
    check(lib.zbrt_schedule_family(h, ctypes.byref(family)))
    schedule_id = ctypes.c_int64()
    check(lib.zbrt_schedule_id(h, ctypes.byref(schedule_id)))
    makespan = ctypes.c_int64()
    has_prediction = ctypes.c_int32()
    check(lib.zbrt_schedule_makespan_ns(h, ctypes.byref(makespan), ctypes.byref(has_prediction)))

    stages = []
    ops = []
    count32 = ctypes.c_int32()
    count64 = ctypes.c_int64()
    op = _zbrt.zbrt_op()
    for rank in range(ranks):
        buffer = (ctypes.c_int32 * max(chunks, 1))()
        check(lib.zbrt_rank_stages(h, rank, buffer, len(buffer), ctypes.byref(count32)))
        stages.append(tuple(buffer[: count32.value]))
        check(lib.zbrt_rank_op_count(h, rank, ctypes.byref(count64)))
        rank_ops = []
        for index in range(count64.value):
            check(lib.zbrt_rank_op(h, rank, index, ctypes.byref(op)))
            rank_ops.append(Op(_zbrt.OP_KIND_NAMES[op.kind], op.stage, op.microbatch))
        ops.append(tuple(rank_ops))

    return Schedule(
        ranks=ranks,
        microbatches=microbatches,
        chunks=chunks,
        placement=placement,
        stages=tuple(stages),
        ops=tuple(ops),
        family=(family.value or b"").decode("utf-8", "replace"),
        schedule_id=schedule_id.value if schedule_id.value >= 0 else None,
        predicted_makespan_ms=makespan.value / 1e6 if has_prediction.value else None,
    )


class Recorder:
    """Records one rank's replay of `schedule` (loaded by this module); `close()` writes the
    rank's shard to `shard_path` (name it "<dir>/rank<R>.zbshard"). Op indices are positions in
    `schedule.ops[rank]`. One thread at a time; usable as a context manager."""

    def __init__(self, schedule: Schedule, rank: int, shard_path: PathLike):
        handle = _handles.get(id(schedule))
        if handle is None or not handle.value:
            raise ZbrtError(
                "Recorder needs a schedule loaded by zbkit.libzbrt "
                "(load_schedule or load_schedule_from_store)"
            )
        lib = _zbrt.lib()
        recorder = ctypes.c_void_p()
        _zbrt.check(
            lib.zbrt_recorder_open(
                handle.value, int(rank), _zbrt.fspath(shard_path), ctypes.byref(recorder)
            )
        )
        self.rank = int(rank)
        self.shard_path = os.fspath(shard_path)
        self._recorder = recorder.value
        # Bound once: the mark methods are the hot path.
        self._op_begin = lib.zbrt_op_begin
        self._op_end = lib.zbrt_op_end
        self._lib = lib

    def begin(self, op_index: int) -> None:
        code = self._op_begin(self._recorder, op_index)
        if code:
            self._fail(code)

    def end(self, op_index: int) -> None:
        code = self._op_end(self._recorder, op_index)
        if code:
            self._fail(code)

    def record(self, op_index: int, begin_ns: int, end_ns: int) -> None:
        """Op `op_index` ran from begin_ns to end_ns (now_ns()'s clock): for ops timed by
        something else than begin/end around them, e.g. zb rehearse's emulated device."""
        _zbrt.check(
            self._lib.zbrt_op_record(self._handle(), int(op_index), int(begin_ns), int(end_ns))
        )

    def memory(self, nbytes: int) -> None:
        """A sample: `nbytes` held on the rank from now on."""
        _zbrt.check(self._lib.zbrt_record_memory(self._handle(), int(nbytes)))

    def iteration_begin(self, iteration: int) -> None:
        _zbrt.check(self._lib.zbrt_iteration_begin(self._handle(), int(iteration)))

    def iteration_end(self) -> None:
        _zbrt.check(self._lib.zbrt_iteration_end(self._handle()))

    def close(self) -> None:
        """Writes the shard. Idempotent; raises if writing failed or ops were left open (the
        shard then has the others)."""
        recorder, self._recorder = self._recorder, None
        if recorder:
            _zbrt.check(self._lib.zbrt_recorder_close(recorder))

    @property
    def closed(self) -> bool:
        return not self._recorder

    def _handle(self) -> int:
        if not self._recorder:
            raise ZbrtError(f"the recorder of rank {self.rank} is closed")
        return self._recorder

    def _fail(self, code: int) -> None:
        if not self._recorder:
            raise ZbrtError(f"the recorder of rank {self.rank} is closed", code)
        raise ZbrtError(_zbrt.last_error(), code)

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.close()
        else:
            try:
                self.close()
            except ZbrtError:
                pass  # the original exception says more

    def __del__(self) -> None:
        # A recorder dropped without close() still leaves its shard.
        recorder = getattr(self, "_recorder", None)
        if recorder:
            self._recorder = None
            self._lib.zbrt_recorder_close(recorder)


def merge_run(
    store: PathLike,
    schedule_id: int,
    shard_dir: Union[PathLike, Iterable[PathLike]],
    command: str = "",
) -> int:
    """Stores every rank's shard (a directory of *.zbshard, or a list of shard files) as one run
    of kind "replay" of schedule `schedule_id`, with its measured timeline; returns the run id."""
    if isinstance(shard_dir, (str, bytes, os.PathLike)):
        shards = _zbrt.fspath(shard_dir)
    else:
        shards = b":".join(_zbrt.fspath(path) for path in shard_dir)
    run_id = ctypes.c_int64()
    _zbrt.check(
        _zbrt.lib().zbrt_merge_run(
            _zbrt.fspath(store),
            int(schedule_id),
            shards,
            (command or "").encode("utf-8"),
            ctypes.byref(run_id),
        )
    )
    return run_id.value


def record_run(
    store: PathLike,
    schedule_id: int,
    shard_dir: Union[PathLike, Iterable[PathLike]],
    command: str = "",
) -> Optional[int]:
    """merge_run for a job that has trained: a store that cannot take the run (held by another
    writer past the busy timeout, read-only, full, of another zbkit version) must not fail a
    training that went well. Returns the run id, or None after one line on stderr that says why
    and where the timeline stays: in the shards, which `zb import` reads and merge_run can store
    later."""
    try:
        return merge_run(store, schedule_id, shard_dir, command)
    except ZbrtError as error:
        where = shard_dir if isinstance(shard_dir, (str, bytes, os.PathLike)) else "the shards"
        sys.stderr.write(
            f"zbkit: the run was not stored ({error}); its timeline stays in {os.fsdecode(where)}"
            " (zbkit.libzbrt.merge_run stores it later, zb import reads it)\n"
        )
        sys.stderr.flush()
        return None

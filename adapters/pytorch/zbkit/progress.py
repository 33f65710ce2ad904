# SPDX-License-Identifier: Apache-2.0
"""The progress record: where each rank of a job is, readable by another process while it hangs.

Every rank run under zbkit (the executor, and through the shim torch's own pipelining runtime)
keeps one small file, ``<dir>/rank<R>.progress`` (zb-progress/1, docs/formats.md §7), mapped into
its memory: a header (rank, world, pid, host, job), the rank's program (its ordered ops), the
state it is in (iteration, op index, phase, since when, ops done) and the last HISTORY_SIZE ops it
ended with their begin and end times, so that a diagnosis shows what the rank did before it
stalled, not only where it stopped. `zb doctor` and the live stall watch of `zb replay` /
`zb profile` read these files and the programs in them to build the wait-for graph
(docs/stalls.md).

Cost: one ``struct.pack_into`` into the shared mapping per mark, and one more for the history
entry of each op that ends (no system call, no lock shared between ranks;
examples/bench_progress.py measures it). Writes go to the page cache, so the state a
SIGKILLed rank leaves is the last one it wrote. The state is written into one of two slots in
turn, each framed by its sequence number at both ends, so that a reader that catches a write half
done takes the other slot; a history entry is framed the same way, and a reader skips one that is
half written.

A record that cannot be created says so in one warning on stderr and records nothing: the job
runs on.
"""

from __future__ import annotations

import atexit
import mmap
import os
import socket
import struct
import sys
import time
from typing import Iterable, Optional, Sequence, Tuple

from . import actions

__all__ = [
    "PHASE_NAMES",
    "ProgressRecord",
    "job_id",
    "open_from_environment",
]

MAGIC = b"ZBPROG01"
VERSION = 2
# Layout (little-endian), docs/formats.md §7.
HEADER = struct.Struct("<8sIiiiq32s64siiiiiii")  # at 0; version 2 adds the history's size, offset
SLOT = struct.Struct("<QqqiiqqQ")  # at SLOT_OFFSETS, 56 bytes each
SLOT_OFFSETS = (256, 320)
EXIT = struct.Struct("<iiq496s")  # at EXIT_OFFSET: status, length, time, message
EXIT_OFFSET = 512
PROGRAM_OFFSET = 1024
OP = struct.Struct("<bbhi")  # kind, 0, stage, microbatch
# The last ops ended, a ring after the program: seq, step, op index, 0, begin ns, end ns, seq
# again. The n-th op done in the rank's life goes to entry n % HISTORY_SIZE.
HISTORY_ENTRY = struct.Struct("<QqiiqqQ")
ENTRY_SIZE = HISTORY_ENTRY.size
HISTORY_SIZE = 64

#: phases of a slot
PHASE_NAMES = ("starting", "in-op", "op-done", "iteration-done", "exited", "raised")
STARTING, IN_OP, OP_DONE, ITERATION_DONE, EXITED, RAISED = range(6)
#: who runs the program
SOURCE_EXECUTOR, SOURCE_TORCH_RUNTIME = 0, 1
# The environment variable that turns the record on, and the job id a user may set (job_id).
DIR_VARIABLE = "ZBKIT_PROGRESS_DIR"
JOB_VARIABLE = "ZBKIT_PROGRESS_JOB"


def job_id() -> str:
    """What identifies this job's ranks: $ZBKIT_PROGRESS_JOB if the user gave one, else torchrun's
    run id and rendezvous address (the same on every rank of one launch, on every host)."""
    given = os.environ.get(JOB_VARIABLE)
    if given:
        return given
    parts = [os.environ.get(name, "") for name in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR",
                                                    "MASTER_PORT")]  # fmt: skip
    return ":".join(parts)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _warn(message: str) -> None:
    print(f"zbkit: warning: {message}; no progress record", file=sys.stderr, flush=True)


class ProgressRecord:
    """One rank's progress file, mapped. Create it once per process with the rank's program
    (``(kind, stage, microbatch)`` per op, kind one of zbkit.actions.KINDS), then mark as the rank goes.
    Every mark is one write into the mapping; none raises once the record exists."""

    def __init__(
        self,
        directory: str,
        rank: int,
        world: int,
        program: Sequence[Tuple[str, int, int]],
        microbatches: int,
        stages: int,
        source: int = SOURCE_EXECUTOR,
    ) -> None:
        self.path = os.path.join(directory, f"rank{rank}.progress")
        program_end = PROGRAM_OFFSET + OP.size * max(1, len(program))
        self._history_offset = (program_end + 63) // 64 * 64
        size = self._history_offset + HISTORY_ENTRY.size * HISTORY_SIZE
        size = (size + 4095) // 4096 * 4096
        staging = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(staging, "w+b") as handle:
                handle.truncate(size)
                self._map = mmap.mmap(handle.fileno(), size)
            self._write_header(rank, world, program, microbatches, stages, source)
        except BaseException:
            _remove_quietly(staging)  # nothing half made stays behind
            raise
        self._seq = 0
        self._iteration = -1
        self._op = -1
        self._done = 0
        self._begin_ns = 0  # when the current op began (its history entry is written at its end)
        self._pack_slot = SLOT.pack_into  # bound once: each mark is on the training's path
        self._pack_entry = HISTORY_ENTRY.pack_into
        # torch's runtime marks only beginnings: an op ends when the next one begins.
        self._marks_beginnings = source == SOURCE_TORCH_RUNTIME
        self._write(STARTING)
        # Readers see the file only once header and program are whole.
        os.replace(staging, self.path)
        atexit.register(self.exited)

    def _write_header(self, rank, world, program, microbatches, stages, source) -> None:
        host = socket.gethostname().encode()[:63]
        HEADER.pack_into(self._map, 0, MAGIC, VERSION, rank, world, os.getpid(), time.time_ns(),
                         job_id().encode()[:31], host, len(program), microbatches, source,
                         stages, int(os.environ.get("LOCAL_WORLD_SIZE", world)), HISTORY_SIZE,
                         self._history_offset)  # fmt: skip
        for i, (kind, stage, microbatch) in enumerate(program):
            OP.pack_into(self._map, PROGRAM_OFFSET + OP.size * i, actions.CODES[kind], 0, stage,
                         microbatch)  # fmt: skip

    def _write(self, phase: int, now: int = 0) -> None:
        self._seq = seq = self._seq + 1
        self._pack_slot(self._map, SLOT_OFFSETS[seq & 1], seq, self._iteration, self._op, phase,
                        0, now or time.time_ns(), self._done, seq)  # fmt: skip

    def _op_ended(self, now: int) -> None:
        """The current op ended at `now`: one more op done, and its history entry (the n-th op
        done goes to entry n % HISTORY_SIZE), framed by a sequence number of its own so that a
        half-written entry never reads as whole."""
        self._done = done = self._done + 1
        self._seq = seq = self._seq + 1
        self._pack_entry(self._map, self._history_offset + ENTRY_SIZE * (done % HISTORY_SIZE),
                         seq, self._iteration, self._op, 0, self._begin_ns, now, seq)  # fmt: skip

    # ---- marks -------------------------------------------------------------------------------

    def iteration_begin(self) -> None:
        self._iteration += 1
        self._op = -1
        self._write(STARTING)

    def begin(self, index: int) -> None:
        """Op `index` of the program begins (now)."""
        self._op = index
        self._begin_ns = now = time.time_ns()
        self._write(IN_OP, now)

    def end(self, index: int) -> None:
        """Op `index` ended."""
        now = time.time_ns()
        self._op = index
        self._op_ended(now)
        self._write(OP_DONE, now)

    def action(self, index: int) -> None:
        """For a runtime that marks only beginnings (torch's): op `index` begins, so the one
        before it has ended."""
        now = time.time_ns()
        if self._op >= 0:
            self._op_ended(now)
        self._op = index
        self._begin_ns = now
        self._write(IN_OP, now)

    def iteration_end(self) -> None:
        now = time.time_ns()
        if self._op >= 0 and self._marks_beginnings:
            self._op_ended(now)
        self._write(ITERATION_DONE, now)

    def raised(self, error: BaseException) -> None:
        """The rank's step raised `error` (written before the phase, so a reader that sees the
        phase sees the message)."""
        text = f"{type(error).__name__}: {error}".splitlines()
        message = (text[0] if text else type(error).__name__).encode(errors="replace")[:496]
        EXIT.pack_into(self._map, EXIT_OFFSET, RAISED, len(message), time.time_ns(), message)
        self._write(RAISED)

    def exited(self) -> None:
        """The process leaves normally (atexit): a rank that raised stays `raised`."""
        if self._map.closed:
            return
        status = EXIT.unpack_from(self._map, EXIT_OFFSET)[0]
        if status == 0:
            EXIT.pack_into(self._map, EXIT_OFFSET, EXITED, 0, time.time_ns(), b"")
            self._write(EXITED)

    def close(self) -> None:
        if not self._map.closed:
            self._map.close()


def open_from_environment(
    rank: int,
    world: int,
    program: Iterable[Tuple[str, int, int]],
    microbatches: int,
    stages: int,
    source: int = SOURCE_EXECUTOR,
) -> Optional[ProgressRecord]:
    """The rank's record in $ZBKIT_PROGRESS_DIR, or None when it is unset or the record cannot be
    made (one warning: the job must not suffer for its record)."""
    directory = os.environ.get(DIR_VARIABLE)
    if not directory:
        return None
    try:
        os.makedirs(directory, exist_ok=True)
        record = ProgressRecord(directory, rank, world, list(program), microbatches, stages,
                                source)  # fmt: skip
    except (OSError, KeyError, struct.error, ValueError) as error:
        _warn(f"rank {rank}: cannot write the progress record in {directory}: {error}")
        return None
    return record

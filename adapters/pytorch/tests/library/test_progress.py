# SPDX-License-Identifier: Apache-2.0
"""The progress record (zbkit.progress) as `zb doctor` reads it: the op a SIGKILLed rank began is
the one read back, with the ops before it and their times; a reader racing a writer never gets a
torn state or history entry; a record that cannot be made is one warning and the job goes on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from launch import zb_binary

PYTORCH_DIR = Path(__file__).resolve().parents[2]


def run_python(code: str, env_dir: Path, **kwargs) -> subprocess.Popen:
    script = f"import sys; sys.path.insert(0, {str(PYTORCH_DIR)!r})\n" + textwrap.dedent(code)
    return subprocess.Popen([sys.executable, "-c", script], cwd=env_dir, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)  # fmt: skip


def doctor(run_dir: Path) -> dict:
    done = subprocess.run([str(zb_binary()), "doctor", str(run_dir), "--json"],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_state_after_sigkill_is_the_last_op_begun(tmp_path):
    # One rank of a 1-rank program: 500 ops, killed by SIGKILL right after op 337 began.
    code = """
        import os, signal
        from zbkit.progress import ProgressRecord
        program = [("F", 0, i) for i in range(500)]
        record = ProgressRecord(".", 0, 1, program, 500, 1)
        record.iteration_begin()
        for i in range(500):
            record.begin(i)
            if i == 337:
                os.kill(os.getpid(), signal.SIGKILL)
            record.end(i)
    """
    process = run_python(code, tmp_path)
    process.communicate(timeout=60)
    assert process.returncode == -9
    rank = doctor(tmp_path)["ranks"][0]
    assert (rank["op_index"], rank["phase"], rank["process"]) == (337, "in-op", "dead")
    assert rank["op"] == "F stage 0 mb 337"
    # The last HISTORY_SIZE (64) ops it ended, oldest first (273..336), then the one it died in.
    recent = rank["recent"]
    assert [entry["op_index"] for entry in recent] == list(range(273, 338))
    assert all(entry["ms"] is not None and entry["ms"] >= 0 for entry in recent[:-1])
    assert recent[-1]["ms"] is None and recent[-1]["op"] == "F stage 0 mb 337"
    began = [entry["began_s"] for entry in recent]
    assert began == sorted(began, reverse=True)  # seconds before the diagnosis: the oldest first


def test_a_reader_racing_a_writer_never_reads_a_torn_state(tmp_path):
    code = """
        from zbkit.progress import ProgressRecord
        program = [("F", 0, i % 4) for i in range(64)]
        record = ProgressRecord(".", 0, 1, program, 4, 1)
        step = 0
        while True:
            record.iteration_begin()
            for i in range(64):
                record.begin(i)
                record.end(i)
            if step == 0:
                print("ready", flush=True)  # one whole step: a full history
            step += 1
    """
    process = run_python(code, tmp_path)
    try:
        assert process.stdout.readline().strip() == "ready"
        seen = set()
        for _ in range(40):
            rank = doctor(tmp_path)["ranks"][0]
            assert rank["phase"] in ("starting", "in-op", "op-done"), rank
            assert -1 <= rank["op_index"] < 64
            seen.add(rank["op_index"])
            # The history is read while it is written: at most the entry being written is left
            # out, and every entry read is whole (an op of the program, a time that makes sense).
            recent = rank["recent"]
            assert len(recent) >= 63, len(recent)
            for entry in recent:
                assert 0 <= entry["op_index"] < 64 and entry["began_s"] >= 0, entry
                assert entry["ms"] is None or 0 <= entry["ms"] < 60_000, entry
        assert len(seen) > 1  # the writer moved on between reads
    finally:
        process.kill()
        process.communicate()


def test_a_record_that_cannot_be_made_is_one_warning(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    code = f"""
        import os
        os.environ["ZBKIT_PROGRESS_DIR"] = {str(blocked / "run")!r}
        from zbkit.progress import open_from_environment
        record = open_from_environment(0, 2, [("F", 0, 0)], 1, 2)
        print("record", record)
    """
    process = run_python(code, tmp_path)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0 and out.strip() == "record None"
    assert err.count("\n") == 1 and err.startswith("zbkit: warning: rank 0: cannot write"), err

# SPDX-License-Identifier: Apache-2.0
"""Real multi-process pipelines for the tests: `world` pipeline_worker.py processes over one gloo
group, started at once and collected with a bound."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import torch

WORKER = Path(__file__).with_name("pipeline_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    """`world` worker processes (default two) running one job; started at once, collected
    (bounded) on demand. Each runs ``WORKER [MODE] RANK WORLD PORT JOB.pkl FOLDER`` (`worker`
    defaults to pipeline_worker.py; `mode` None passes none) and leaves FOLDER/rank{RANK}.pt."""

    def __init__(
        self,
        mode: Optional[str],
        job: Dict[str, Any],
        folder: Path,
        timeout: float = 90,
        world: int = 2,
        worker: Path = WORKER,
    ) -> None:
        self.mode, self.job, self.folder, self.timeout = mode, job, folder, timeout
        folder.mkdir(parents=True, exist_ok=True)
        job_path = folder / "job.pkl"
        job_path.write_bytes(pickle.dumps(job))
        port = _free_port()
        env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        self.started = time.monotonic()
        self.procs = [
            subprocess.Popen(
                [sys.executable, str(worker), *([mode] if mode else []), str(r), str(world)]
                + [str(port), str(job_path), str(folder)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for r in range(world)
        ]
        self._results: List[Any] = []

    def results(self) -> List[Any]:
        """Each rank's result dict (None for a rank that died on purpose)."""
        if self._results:
            return self._results
        deadline = self.started + self.timeout
        worker_name = Path(self.procs[0].args[1]).stem
        logs = []
        for p in self.procs:
            try:
                out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in self.procs:
                    q.kill()
                pytest.fail(
                    f"{self.mode or worker_name} workers did not finish within {self.timeout} s"
                )
            logs.append(out)
        for r in range(len(self.procs)):
            path = self.folder / f"rank{r}.pt"
            self._results.append(torch.load(path, weights_only=False) if path.exists() else None)
            if self._results[-1] is None and self.job.get("die", {}).get(r) is None:
                code = self.procs[r].returncode
                pytest.fail(f"rank {r} wrote no result (exit {code}):\n{logs[r]}")
        return self._results

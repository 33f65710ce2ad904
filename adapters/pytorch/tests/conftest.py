# SPDX-License-Identifier: Apache-2.0
"""Test set-up for every folder (library/, harness/, project/): this folder and tests/job_scripts/ on
sys.path, so that test files import the support module `launch` and the job modules by name
(launch also puts the package on sys.path and defaults zb and libzbrt to this checkout's build);
and the fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
for _path in (TESTS, TESTS / "job_scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from launch import ZbTuner, zb_binary  # noqa: E402


@pytest.fixture(scope="session")
def zb_tuner(tmp_path_factory: pytest.TempPathFactory) -> ZbTuner:
    binary = zb_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        msg = f"zb binary not built at {binary} (set ZBKIT_ZB_BINARY or build the repository)"
        print(f"SKIP: {msg}")
        pytest.skip(msg)
    return ZbTuner(binary, tmp_path_factory.mktemp("zb"))

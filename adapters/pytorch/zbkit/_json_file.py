# SPDX-License-Identifier: Apache-2.0
"""Reading a JSON file into a one-line error of the caller's family (plain Python, no torch)."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import ZbkitError


def read_json(path: str | Path, error: type[ZbkitError], unreadable: str = "cannot read") -> object:
    """The document in `path`; `error` naming the file when it cannot be read
    (`"<path>: <unreadable> (<strerror>)"`) or is not JSON (`"<path>: not JSON (<detail>)"`)."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as problem:
        raise error(f"{path}: {unreadable} ({problem.strerror})") from None
    except ValueError as problem:
        raise error(f"{path}: not JSON ({problem})") from None

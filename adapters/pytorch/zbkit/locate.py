# SPDX-License-Identifier: Apache-2.0
"""Where zbkit's other parts are: the one place the package and the harness look them up.

Each part is named by an environment variable, which `zb` sets for every Python process it starts
(`zb replay`, `zb profile --torch`, `zb demo`, `zb rehearse`: this build's own paths). Without it:

- `zb`: the `zb` on PATH (an installed zbkit);
- libzbrt: beside that `zb`, where the build tree (`<build>/runtime/libzbrt.so` next to
  `<build>/zb/zb`) or an installation (`<prefix>/lib/libzbrt.so` next to `<prefix>/bin/zb`)
  puts it;
- the bundled examples: none (only `zb demo` uses them, and it names them);
- the Python interpreter: this one.

Nothing here climbs from the package's own folder to a checkout: an installed package has none.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Optional

__all__ = [
    "EXAMPLES_ENV",
    "PYTHON_ENV",
    "ZBRT_ENV",
    "ZBVIEW_ENV",
    "ZB_ENV",
    "examples_dir",
    "hook_dir",
    "package_root",
    "python",
    "zb_binary",
    "zbrt_library",
    "zbview_binary",
]

ZB_ENV = "ZBKIT_ZB_BINARY"
ZBRT_ENV = "ZBKIT_ZBRT_LIBRARY"
ZBVIEW_ENV = "ZBKIT_ZBVIEW_BINARY"
EXAMPLES_ENV = "ZBKIT_TORCH_EXAMPLES"
PYTHON_ENV = "ZBKIT_PYTHON"


def _configured(name: str) -> Optional[str]:
    value = os.environ.get(name, "")
    return value or None


def zb_binary() -> str:
    """$ZBKIT_ZB_BINARY, else the `zb` on PATH, else the bare name "zb" (whose failure to start
    the caller reports)."""
    return _configured(ZB_ENV) or shutil.which("zb") or "zb"


def zbrt_library() -> Path:
    """$ZBKIT_ZBRT_LIBRARY, else libzbrt.so beside the `zb` that `zb_binary` finds (build tree or
    installation), else the bare name (the loader's own search)."""
    configured = _configured(ZBRT_ENV)
    if configured:
        return Path(configured)
    zb = shutil.which(zb_binary())
    if zb:
        prefix = Path(zb).resolve().parent.parent
        for candidate in (prefix / "runtime" / "libzbrt.so", prefix / "lib" / "libzbrt.so"):
            if candidate.is_file():
                return candidate
    return Path("libzbrt.so")


def zbview_binary() -> str:
    """$ZBKIT_ZBVIEW_BINARY, else the `zbview` on PATH, else "" (no GUI: pictures are skipped)."""
    return _configured(ZBVIEW_ENV) or shutil.which("zbview") or ""


def examples_dir() -> Optional[Path]:
    """$ZBKIT_TORCH_EXAMPLES (the bundled jobs, adapters/pytorch/examples), else None."""
    configured = _configured(EXAMPLES_ENV)
    return Path(configured) if configured else None


def python() -> str:
    """$ZBKIT_PYTHON, else the interpreter running this."""
    return _configured(PYTHON_ENV) or sys.executable


def package_root() -> Path:
    """The folder that holds the `zbkit` package: what a child process needs on PYTHONPATH."""
    return Path(__file__).resolve().parent.parent


def hook_dir() -> Path:
    """The folder whose sitecustomize installs the shim (zbkit/_hook): first on PYTHONPATH of a
    job run under `zb replay` or `zb profile --torch`."""
    return Path(__file__).resolve().parent / "_hook"

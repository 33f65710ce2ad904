# SPDX-License-Identifier: Apache-2.0
"""zbkit's startup hook. Only `zb replay` (and a user who wants the same) puts this directory on
PYTHONPATH; Python then imports this module at startup in every process of the job, torchrun's
workers included (they inherit the environment). It does nothing unless ZBKIT_SCHEDULE,
ZBKIT_TORCH_PROFILE, ZBKIT_MEMORY_REPORT or ZBKIT_BLOCKS_DIR is set (see zbkit/pipelining/__init__.py),
and then only registers an import hook.

Taking the name sitecustomize hides any other sitecustomize further down the path (Debian ships
one), so that one is run afterwards, as Python would have run it.
"""

import os
import sys


def _run_next_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _activate() -> None:
    # The names of pipelining.ACTIVATING, repeated: importing the shim to read them would cost every
    # Python process on the path the import.
    names = ("ZBKIT_SCHEDULE", "ZBKIT_TORCH_PROFILE", "ZBKIT_MEMORY_REPORT", "ZBKIT_BLOCKS_DIR",
             "ZBKIT_PROGRESS_DIR")  # fmt: skip
    if not any(os.environ.get(name) for name in names):
        return
    # <adapters/pytorch>/zbkit/_hook/sitecustomize.py: make the zbkit package importable.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if package_root not in sys.path:
        sys.path.append(package_root)
    from zbkit import pipelining

    pipelining.install()


try:
    _run_next_sitecustomize()
except Exception as error:  # a broken foreign hook must not stop the job
    sys.stderr.write(f"zbkit: the next sitecustomize failed: {error}\n")
try:
    _activate()
except Exception as error:
    # Running the script's own order while the user asked for zbkit's would be a silent lie.
    sys.stderr.write(f"zbkit: cannot activate the schedule shim: {error}\n")
    if os.environ.get("ZBKIT_SCHEDULE"):
        sys.stderr.flush()
        os._exit(1)

# SPDX-License-Identifier: Apache-2.0
"""ctypes declarations of libzbrt's C ABI (runtime/include/zbrt.h) and the loading of the library.

Private: `zbkit.libzbrt` is the public face. Everything here mirrors zbrt.h exactly; a change
there that bumps ZBRT_ABI_VERSION must be mirrored here with ABI_VERSION.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Optional

from . import locate
from .errors import STATUS_NAMES, ZbrtError

ABI_VERSION = 1  # ZBRT_ABI_VERSION this binding speaks

# zbrt_status
OK = 0

# zbrt_op_kind and zbrt_placement, by value
OP_KIND_NAMES = ("F", "B", "W", "BW")
PLACEMENT_NAMES = ("loop", "v")


class zbrt_op(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int32),
        ("stage", ctypes.c_int32),
        ("microbatch", ctypes.c_int32),
        ("chunk", ctypes.c_int32),
        ("start_ns", ctypes.c_int64),
        ("end_ns", ctypes.c_int64),
    ]


_c_int = ctypes.c_int  # zbrt_status is a C enum: int
_ptr = ctypes.c_void_p  # opaque handles
_i32p = ctypes.POINTER(ctypes.c_int32)
_i64p = ctypes.POINTER(ctypes.c_int64)

# name: (restype, argtypes)
_SIGNATURES = {
    "zbrt_abi_version": (ctypes.c_int32, []),
    "zbrt_last_error": (ctypes.c_char_p, []),
    "zbrt_status_name": (ctypes.c_char_p, [ctypes.c_int32]),
    "zbrt_now_ns": (ctypes.c_int64, []),
    "zbrt_schedule_open_file": (_c_int, [ctypes.c_char_p, ctypes.POINTER(_ptr)]),
    "zbrt_schedule_open_store": (
        _c_int,
        [ctypes.c_char_p, ctypes.c_int64, ctypes.POINTER(_ptr)],
    ),
    "zbrt_schedule_close": (_c_int, [_ptr]),
    "zbrt_schedule_ranks": (_c_int, [_ptr, _i32p]),
    "zbrt_schedule_microbatches": (_c_int, [_ptr, _i32p]),
    "zbrt_schedule_chunks": (_c_int, [_ptr, _i32p]),
    "zbrt_schedule_placement": (_c_int, [_ptr, _i32p]),
    "zbrt_schedule_family": (_c_int, [_ptr, ctypes.POINTER(ctypes.c_char_p)]),
    "zbrt_schedule_id": (_c_int, [_ptr, _i64p]),
    "zbrt_schedule_makespan_ns": (_c_int, [_ptr, _i64p, _i32p]),
    "zbrt_rank_stages": (_c_int, [_ptr, ctypes.c_int32, _i32p, ctypes.c_int32, _i32p]),
    "zbrt_rank_op_count": (_c_int, [_ptr, ctypes.c_int32, _i64p]),
    "zbrt_rank_op": (
        _c_int,
        [_ptr, ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(zbrt_op)],
    ),
    "zbrt_recorder_open": (
        _c_int,
        [_ptr, ctypes.c_int32, ctypes.c_char_p, ctypes.POINTER(_ptr)],
    ),
    "zbrt_op_begin": (_c_int, [_ptr, ctypes.c_int64]),
    "zbrt_op_end": (_c_int, [_ptr, ctypes.c_int64]),
    "zbrt_op_record": (_c_int, [_ptr, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]),
    "zbrt_iteration_begin": (_c_int, [_ptr, ctypes.c_int64]),
    "zbrt_iteration_end": (_c_int, [_ptr]),
    "zbrt_record_memory": (_c_int, [_ptr, ctypes.c_int64]),
    "zbrt_recorder_close": (_c_int, [_ptr]),
    "zbrt_merge_run": (
        _c_int,
        [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_char_p, _i64p],
    ),
}


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded library, declared and version-checked; loaded on first use."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            _lib = _load()
    return _lib


def _load() -> ctypes.CDLL:
    path = locate.zbrt_library()
    configured = os.environ.get(locate.ZBRT_ENV)
    if not path.is_file():
        where = (
            f"{locate.ZBRT_ENV}={configured}"
            if configured
            else f"{locate.ZBRT_ENV} is not set and no libzbrt.so is beside the zb on PATH"
        )
        raise ZbrtError(
            f"libzbrt not found at {path} ({where}): build zbkit (scripts/build.sh) and point "
            f"{locate.ZBRT_ENV} at libzbrt.so, or put its zb on PATH"
        )  # fmt: skip
    try:
        handle = ctypes.CDLL(str(path))
    except OSError as error:
        raise ZbrtError(f"cannot load libzbrt from {path}: {error}") from None
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            function = getattr(handle, name)
        except AttributeError:
            raise ZbrtError(f"{path}: libzbrt has no symbol {name}") from None
        function.restype = restype
        function.argtypes = argtypes
    version = handle.zbrt_abi_version()
    if version != ABI_VERSION:
        raise ZbrtError(f"{path}: libzbrt ABI version {version}, this binding speaks {ABI_VERSION}")
    return handle


def last_error() -> str:
    message = lib().zbrt_last_error()
    return message.decode("utf-8", "replace") if message else ""


def check(code: int) -> None:
    """Raises ZbrtError with the library's message unless `code` is ZBRT_OK."""
    if code != OK:
        raise ZbrtError(last_error() or STATUS_NAMES.get(code, f"zbrt status {code}"), code)


def fspath(path) -> bytes:
    return os.fsencode(os.fspath(path))

# SPDX-License-Identifier: Apache-2.0
"""The one error family of the zbkit package: every error it raises is a `ZbkitError`, whose
message is one line naming where (rank, op, file or field) and what is wrong. Catch `ZbkitError`
for all of them, or one subclass for one component. Plain Python (no torch), so that the schedule
values and the runtime binding import it without torch."""

from __future__ import annotations

from typing import Optional

__all__ = [
    "BackwardSplitError",
    "ScheduleError",
    "ScheduleRefused",
    "ZbkitError",
    "ZbkitPipelineError",
    "ZbkitPostValidationError",
    "ZbrtError",
]


# zbrt_status (runtime/include/zbrt.h): the names a ZbrtError reports. Here rather than with the
# ctypes declarations (zbkit._libzbrt_abi, which imports this module) so that the errors import
# nothing of the package.
STATUS_NAMES = {
    0: "ZBRT_OK",
    1: "ZBRT_ERROR_INVALID_ARGUMENT",
    2: "ZBRT_ERROR_OUT_OF_RANGE",
    3: "ZBRT_ERROR_STATE",
    4: "ZBRT_ERROR_NOT_FOUND",
    5: "ZBRT_ERROR_INVALID_INPUT",
    6: "ZBRT_ERROR_IO",
    7: "ZBRT_ERROR_STORE",
    8: "ZBRT_ERROR_INTERNAL",
}


class ZbkitError(RuntimeError):
    """Base of every error zbkit raises."""


class ZbkitPipelineError(ZbkitError):
    """The executor: a schedule that cannot run here, or a peer that died, timed out or
    disagreed."""


class ZbkitPostValidationError(ZbkitError):
    """Post-validation: a peer that died, timed out or disagreed, or an optimizer that cannot be
    rolled back."""


class BackwardSplitError(ZbkitError):
    """zbkit.bw_split used out of order (record, seal, B before W), or on a stage whose output
    does not depend on anything that requires grad."""


class ScheduleError(ZbkitError):
    """A schedule value asked for something it does not hold (an unknown placement, a stage on
    no rank)."""


class ScheduleRefused(ZbkitError):
    """The shim: a schedule that cannot run on the stages the script built, or that PyTorch's
    runtime would run wrong (docs/formats.md §4.1)."""


class ZbrtError(ZbkitError):
    """A libzbrt call failed (or the library could not be loaded). `code` is the zbrt_status
    (None for loading problems), `status` its name."""

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.code = code

    @property
    def status(self) -> Optional[str]:
        return STATUS_NAMES.get(self.code, "ZBRT_ERROR_UNKNOWN") if self.code is not None else None


class SplitError(ZbkitError):
    """zbkit.split: a layer split file (zb-split/1) that is malformed, names a module the model
    does not have, or does not match the schedule the script runs."""

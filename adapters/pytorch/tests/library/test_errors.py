# SPDX-License-Identifier: Apache-2.0
"""One error family (zbkit.errors) for both packages, and one tag space (zbkit._p2p)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import zbkit  # noqa: E402
import zbkit_harness  # noqa: E402
from zbkit import _p2p as p2p  # noqa: E402
from zbkit import errors  # noqa: E402
from zbkit._schedule_checks import validate_schedule  # noqa: E402
from zbkit.schedule import Schedule  # noqa: E402


def test_every_error_the_package_defines_is_a_zbkit_error():
    seen = set()
    for package in (zbkit, zbkit_harness):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for _, value in inspect.getmembers(module, inspect.isclass):
                if issubclass(value, BaseException) and value.__module__.startswith("zbkit"):
                    assert issubclass(value, errors.ZbkitError), (
                        f"{module.__name__}.{value.__name__}"
                    )
                    seen.add(value.__name__)
    assert {
        "ZbkitPipelineError",
        "ZbkitPostValidationError",
        "ScheduleRefused",
        "ZbrtError",
        "RehearsalError",
        "JobError",
    } <= seen
    from zbkit import pipelining

    assert pipelining.Refusal is errors.ScheduleRefused


def test_data_tags_stay_below_the_post_validation_tags():
    n, m = 4, 1000
    highest = p2p.data_tag(p2p.GRAD, n - 1, m - 1, 1, n, m)
    assert highest == 4 * n * m - 1 and p2p.data_tags_fit(n, m)
    assert highest < p2p.TAG_PARTIAL < p2p.TAG_GLOBAL
    # The largest microbatch count whose tags fit, and one more, which is refused.
    fit = p2p.TAG_PARTIAL // (4 * 2)
    assert p2p.data_tags_fit(2, fit) and not p2p.data_tags_fit(2, fit + 1)
    assert p2p.data_tag(p2p.GRAD, 1, fit - 1, 1, 2, fit) < p2p.TAG_PARTIAL


def test_a_schedule_whose_tags_would_collide_is_refused():
    fit = p2p.TAG_PARTIAL // (4 * 2)
    # Refused before any op is looked at (the op lists of such a schedule are not even built).
    huge = Schedule(2, fit + 1, 1, "loop", ((0,), (1,)), ((), ()))
    with pytest.raises(errors.ZbkitPipelineError, match="overflow the message tags"):
        validate_schedule(huge)

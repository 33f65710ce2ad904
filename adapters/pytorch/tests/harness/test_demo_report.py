# SPDX-License-Identifier: Apache-2.0
"""The demo report's verdicts: a target is judged only when the rounds agree on its side."""

from __future__ import annotations

from zbkit_harness.demo_report import UNDECIDED, _judged, _undecided_note
from zbkit_harness.torchrun_jobs import median


def test_rounds_on_both_sides_of_a_target_claim_nothing():
    # Rounds measured here once: 0.967, 1.010 and 1.389 of the best torch schedule's time. Their
    # median passes ">= 1", but one round fails it: the effect is inside the noise.
    ratios = [0.967, 1.010, 1.389]
    assert median(ratios) >= 1
    assert _judged(median(ratios), ratios, lambda r: r >= 1) == UNDECIDED
    assert "zb rehearse" in _undecided_note([UNDECIDED])


def test_rounds_that_agree_are_judged_on_the_median():
    assert _judged(1.05, [1.02, 1.05, 1.11], lambda r: r >= 1) == "met"
    assert _judged(0.95, [0.93, 0.95, 0.99], lambda r: r >= 1) == "NOT met"
    # One round, or none (a figure without rounds): judged on the figure.
    assert _judged(1.2, [1.2], lambda r: r >= 1) == "met"
    assert _judged(0.8, [], lambda r: r >= 1) == "NOT met"
    assert _undecided_note(["met", "NOT met"]) == ""

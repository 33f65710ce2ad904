# SPDX-License-Identifier: Apache-2.0
"""zbkit_harness.torchrun_jobs: the one checked reader of zb-job-summary/1 (docs/formats.md §3.1), the merge of a
job's ranks into one measurement, the median and the paired ratios the demo's report uses, and a
failing job named with its log."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from zbkit.errors import ZbkitError
from zbkit_harness.torchrun_jobs import (
    JobError,
    Jobs,
    Measurement,
    median,
    paired_ratios,
    read_summary,
)


def write(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_a_summary_is_read_with_its_optional_fields(tmp_path):
    summary = read_summary(
        write(tmp_path / "r1.json", {
            "format": "zb-job-summary/1", "rank": 1, "iter_s": [0.5, 0.25],
            "peak_activation_bytes": 1024, "barrier_s": [0.1, 0.0], "rollbacks": 2, "run_id": 7,
            "schedule": "zb-v",  # informative fields are ignored
        })
    )  # fmt: skip
    assert (summary.rank, summary.iter_s, summary.peak_activation_bytes) == (1, [0.5, 0.25], 1024)
    assert (summary.barrier_s, summary.rollbacks, summary.run_id) == ([0.1, 0.0], 2, 7)


@pytest.mark.parametrize(
    "doc, problem",
    [
        ({"rank": 0, "iter_s": [1.0]}, "format is None, expected 'zb-job-summary/1'"),
        (
            {"format": "zb-job-summary/2", "rank": 0, "iter_s": [1.0]},
            "format is 'zb-job-summary/2'",
        ),
        ({"format": "zb-job-summary/1", "iter_s": [1.0]}, "no field 'rank'"),
        ({"format": "zb-job-summary/1", "rank": 0, "iter_s": []}, "field 'iter_s' is empty"),
        ({"format": "zb-job-summary/1", "rank": 0, "iter_s": [1.0, "x"]}, "field 'iter_s' holds"),
        ({"format": "zb-job-summary/1", "rank": True, "iter_s": [1.0]}, "field 'rank' is True"),
        (
            {"format": "zb-job-summary/1", "rank": 0, "iter_s": [1.0], "run_id": "7"},
            "field 'run_id'",
        ),
        ([1, 2], "format is 'list'"),
    ],
)
def test_a_bad_summary_names_the_file_and_the_field(tmp_path, doc, problem):
    path = write(tmp_path / "rank0.json", doc)
    with pytest.raises(JobError) as caught:
        read_summary(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message
    assert isinstance(caught.value, ZbkitError)


def test_a_missing_or_cut_summary_is_one_line(tmp_path):
    with pytest.raises(JobError, match="no job summary"):
        read_summary(tmp_path / "absent.json")
    (tmp_path / "cut.json").write_text('{"format": "zb-job-summary/1", "rank": 0, "iter_')
    with pytest.raises(JobError, match="not JSON"):
        read_summary(tmp_path / "cut.json")


def test_a_jobs_measurement_is_the_slowest_rank_per_iteration(tmp_path):
    docs = [
        {"format": "zb-job-summary/1", "rank": 0, "iter_s": [1.0, 3.0], "barrier_s": [0.5, 0.5],
         "peak_activation_bytes": 10, "rollbacks": 1},
        {"format": "zb-job-summary/1", "rank": 1, "iter_s": [2.0, 1.0], "barrier_s": [0.0, 0.0],
         "peak_activation_bytes": 30},
    ]  # fmt: skip
    summaries = [read_summary(write(tmp_path / f"r{d['rank']}.json", d)) for d in docs]
    measured = Measurement.of(summaries)
    assert measured.iteration_s == [2.0, 3.0]
    assert measured.peak_bytes == [10.0, 30.0] and measured.fuller_rank_peak() == 30.0
    assert measured.barrier_share(0) == pytest.approx(0.25) and measured.barrier_share(1) == 0
    assert measured.rollbacks == 1
    total = Measurement()
    total.add(measured)
    total.add(measured)
    assert total.iteration_s == [2.0, 3.0, 2.0, 3.0] and total.barrier_share(0) == pytest.approx(
        0.25
    )


def test_one_median_and_paired_ratios():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5  # the mean of the middle two, everywhere
    assert median([]) == 0.0
    assert paired_ratios([2.0, 3.0], [1.0, 0.0]) == [2.0]


def test_a_failing_job_is_one_line_naming_it_and_its_log(tmp_path):
    jobs = Jobs(tmp_path, 1, sys.executable, "/nonexistent/zb", {})
    code = jobs.run("ok", [sys.executable, "-c", "print('hello')"])
    assert code == 0 and "hello" in jobs.log("ok").read_text()
    with pytest.raises(JobError) as caught:
        jobs.check("boom", [sys.executable, "-c", "import sys; sys.exit(3)"])
    assert str(caught.value) == f"boom exited with 3; see {jobs.log('boom')}"
    with pytest.raises(JobError, match="cannot run /nonexistent/zb"):
        jobs.zb("tune", "tune")

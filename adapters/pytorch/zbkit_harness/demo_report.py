# SPDX-License-Identifier: Apache-2.0
"""The report of `zb demo` (zbkit_harness.demo): the table of every schedule's measured and predicted
iteration time and memory, the lines judging each target with the figure it is judged on, and the
closing JSON line (its keys are the demo's contract with its callers)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Protocol, Sequence

from .torchrun_jobs import median, paired_ratios


class Demo(Protocol):
    """What the report reads of a finished demo (zbkit_harness.demo.Demo): its measured rows by
    name, the names of torch's schedules and of the tuned rows, and its settings."""

    rows: Dict[str, Any]
    torch_names: Sequence[str]
    shim_row: str
    executor_row: str
    pv_sync_row: str
    pv_row: str
    s: Any


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The first column left-aligned, the others right-aligned, two spaces apart (as zb's
    tables)."""
    width = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [cells[0].ljust(width[0])] + [c.rjust(w) for c, w in zip(cells[1:], width[1:])]
        return "  ".join(parts) + "\n"

    return (
        line(header) + "-" * (sum(width) + 2 * (len(width) - 1)) + "\n" + "".join(map(line, rows))
    )


def mib(value: float) -> str:
    return f"{value / (1024.0 * 1024.0):.1f} MiB"


def fixed(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


class Report:
    """The demo's table, its verdict lines and its JSON line."""

    def __init__(self, demo: Demo, outcome: Dict[str, Any], span: Dict[str, Any], results_match: bool,
                 pv_equal: bool) -> None:  # fmt: skip
        self.d, self.outcome, self.span = demo, outcome, span
        self.results_match, self.pv_equal = results_match, pv_equal
        rows = demo.rows
        tuned_rows = [demo.shim_row, demo.executor_row, demo.pv_sync_row, demo.pv_row]
        self.order = [*demo.torch_names, *tuned_rows]
        self.best_torch = min((rows[name].median_ms(), name) for name in demo.torch_names)[1]
        samples = demo.s.batch
        self.base, self.shim = rows["1F1B"], rows[demo.shim_row]
        self.throughput_1f1b = samples / (self.base.median_ms() / 1e3)
        self.throughput_tuned = samples / (self.shim.median_ms() / 1e3)
        self.throughput_torch = samples / (rows[self.best_torch].median_ms() / 1e3)
        self.predicted_tuned = outcome["file"]["predicted"]["makespan"]
        base_predicted = self.base.predicted_ms
        self.predicted_gain = base_predicted / self.predicted_tuned - 1 if base_predicted else 0.0
        self.measured_gain = self.throughput_tuned / self.throughput_1f1b - 1
        self.peak_tuned = self.shim.measured.fuller_rank_peak()
        self.peak_torch = rows[self.best_torch].measured.fuller_rank_peak()

    def table(self) -> str:
        header = ["schedule", "iter_ms", "samples/s", "peak act. r0", "peak act. r1", "predicted_ms",
                  "measured/pred"]  # fmt: skip
        cells = []
        for name in self.order:
            row = self.d.rows[name]
            peaks = row.measured.peak_bytes
            line = [
                name,
                fixed(row.median_ms(), 1),
                fixed(self.d.s.batch / (row.median_ms() / 1e3), 1),
            ]
            line += [
                mib(peaks[r]) if len(peaks) == self.d.jobs.ranks else "-"
                for r in range(self.d.jobs.ranks)
            ]
            line.append(fixed(row.predicted_ms, 1) if row.predicted_ms else "-")
            line.append(fixed(row.median_ms() / row.predicted_ms, 2) if row.predicted_ms else "-")
            cells.append(line)
        return render_table(header, cells)

    def text(self) -> str:
        s, tuned = self.d.s, self.outcome["file"]
        out = (f"zb demo: the bundled GPT on {self.d.jobs.ranks} ranks, {s.microbatches} microbatches of "
               f"{s.batch // s.microbatches} samples; {s.rounds} rounds of {s.iters - s.warmup} "
               f"measured iterations per schedule (the slowest rank's time; median)\n")  # fmt: skip
        out += self.table()
        out += (f"tuned: {tuned['family']} (schedule {self.outcome['schedule_id']}, cap "
                f"{self.outcome['mem_limit']}), predicted gain over 1F1B "
                f"{fixed(self.predicted_gain * 100, 1)}%, measured {fixed(self.measured_gain * 100, 1)}%; "
                f"best torch schedule: {self.best_torch}\n")  # fmt: skip
        chosen = [c for c in self.outcome["candidates"] if c["family"] == self.outcome["best"]]
        fused = chosen[0].get("fused_backwards", 0) if chosen else 0
        if fused > 0:
            out += f"tuned: {fused} backwards fused (the profile's fused backward is shorter than B + W)\n"
        return out + self.targets() + self.post_validation_text()

    def targets(self) -> str:
        """The runtime's targets, each with the figure it is judged on; throughput and gain on
        the paired per-round ratios. A target whose rounds fall on both sides of it is not
        judged: the effect is not told apart from the machine's noise (see `_judged`)."""
        rows = self.d.rows
        ratios = paired_ratios(rows[self.best_torch].round_median_s, self.shim.round_median_s)
        speed = median(ratios) if ratios else self.throughput_tuned / self.throughput_torch
        gains = paired_ratios(self.base.round_median_s, self.shim.round_median_s)
        paired_gain = median(gains) - 1 if gains else self.measured_gain
        share = paired_gain / self.predicted_gain if self.predicted_gain > 0 else 0.0
        accuracy = self.shim.median_ms() / self.predicted_tuned if self.predicted_tuned > 0 else 0.0
        round_accuracy = [t * 1e3 / self.predicted_tuned for t in self.shim.round_median_s
                          if self.predicted_tuned > 0]  # fmt: skip
        per_round = ", ".join(fixed(r, 3) for r in ratios)
        verdicts = [
            _judged(speed, ratios, lambda r: r >= 1),
            _met(self.peak_tuned <= self.peak_torch),
            _judged(
                share,
                [(g - 1) / self.predicted_gain for g in gains] if self.predicted_gain > 0 else [],
                lambda x: self.predicted_gain <= 0 or x >= 0.7,
            ),  # fmt: skip
            _judged(accuracy, round_accuracy, lambda a: 0.9 <= a <= 1.1),
        ]
        line = (f"targets: throughput {fixed(speed, 3)}x {self.best_torch}'s (median of the rounds' "
                f"ratios {per_round}; {verdicts[0]}), peak {mib(self.peak_tuned)} vs "
                f"{mib(self.peak_torch)} ({verdicts[1]}), measured gain "
                f"(paired) {fixed(paired_gain * 100, 1)}% = {fixed(share * 100, 0)}% of predicted "
                f"({verdicts[2]}), measured/predicted {fixed(accuracy, 2)} ({verdicts[3]})\n")  # fmt: skip
        return line + _undecided_note(verdicts)

    def post_validation(self) -> Dict[str, Any]:
        rows = self.d.rows
        sync, pv = rows[self.d.pv_sync_row], rows[self.d.pv_row]
        ratios = paired_ratios(pv.round_median_s, sync.round_median_s)
        ratio = median(ratios) if ratios else pv.median_ms() / sync.median_ms()
        predicted = self.span["file"]["predicted"]
        return {
            "schedule": self.span["file"]["family"], "iter_ms_sync": sync.median_ms(),
            "iter_ms_pv": pv.median_ms(), "measured_drop": 1 - ratio,
            # Without the barrier an iteration shortens from the makespan to the span at most.
            "predicted_drop": 1 - predicted["span"] / predicted["makespan"],
            # What removing the barrier can win: the wait of rank 0, which holds stage 0 and so
            # starts the next iteration's forwards (docs/post-validation.md §5).
            "barrier_share": sync.measured.barrier_share(0),
            "rollbacks": pv.measured.rollbacks, "equal": self.pv_equal,
            "_ratios": ratios,
        }  # fmt: skip

    def post_validation_text(self) -> str:
        pv = self.post_validation()
        rows = self.d.rows
        sync_row, pv_row = rows[self.d.pv_sync_row], rows[self.d.pv_row]
        per_round = ", ".join(f"{fixed((1 - r) * 100, 1)}%" for r in pv["_ratios"])
        equal = "equal" if self.pv_equal else "NOT equal"
        drops = [1 - r for r in pv["_ratios"]]
        verdict = _judged(pv["measured_drop"], drops, lambda d: d >= pv["barrier_share"])
        return (f"post-validation: {pv['schedule']} (loop placement, tuned by span; schedule "
                f"{self.span['schedule_id']}), AdamW clipped at 1.0, an Inf in iteration 2: "
                f"{fixed(pv['iter_ms_sync'], 1)} ms per iteration with the all-reduce barrier, "
                f"{fixed(pv['iter_ms_pv'], 1)} ms post-validated ({fixed(pv['measured_drop'] * 100, 1)}% "
                f"less, paired per round: {per_round}; predicted, makespan to span: "
                f"{fixed(pv['predicted_drop'] * 100, 1)}%); the barrier held rank 0 (stage 0) "
                f"{fixed(pv['barrier_share'] * 100, 1)}% of its iteration time (rank 1 "
                f"{fixed(sync_row.measured.barrier_share(1) * 100, 1)}%; post-validated, waiting for "
                f"the partial state: {fixed(pv_row.measured.barrier_share(0) * 100, 1)}% / "
                f"{fixed(pv_row.measured.barrier_share(1) * 100, 1)}%); {pv['rollbacks']} rollbacks; "
                f"final parameters and optimizer state {equal} to the barrier run's (bit for bit)\n"
                f"targets: post-validation {fixed(pv['measured_drop'] * 100, 1)}% less time >= the "
                f"{fixed(pv['barrier_share'] * 100, 1)}% the barrier took "
                f"({verdict}), results equal ({_met(self.pv_equal)})\n"
                + _undecided_note([verdict]))  # fmt: skip

    def line(self) -> Dict[str, Any]:
        pv = {k: v for k, v in self.post_validation().items() if not k.startswith("_")}
        return {
            "schedule": self.outcome["file"]["family"], "throughput_1f1b": self.throughput_1f1b,
            "throughput_tuned": self.throughput_tuned, "best_torch_schedule": self.best_torch,
            "throughput_best_torch": self.throughput_torch, "predicted_gain": self.predicted_gain,
            "measured_gain": self.measured_gain, "grads_match": self.results_match,
            "peak_tuned_bytes": self.peak_tuned, "peak_best_torch_bytes": self.peak_torch,
            "post_validation": pv,
        }  # fmt: skip


def _met(met: bool) -> str:
    return "met" if met else "NOT met"


UNDECIDED = "undecided: the rounds disagree"


def _judged(figure: float, rounds: Sequence[float], passes: Callable[[float], bool]) -> str:
    """ "met" or "NOT met" on `figure` (the median of the rounds) when every round agrees with
    it, else UNDECIDED: when one round passes and another fails, the effect is within what this
    machine's drift between rounds can make, and no claim is made either way."""
    if len({passes(value) for value in rounds}) > 1:
        return UNDECIDED
    return _met(passes(figure))


def _undecided_note(verdicts: Sequence[str]) -> str:
    if UNDECIDED not in verdicts:
        return ""
    return ("note: where the rounds disagree nothing is claimed; `zb rehearse` measures the "
            "same schedules on emulated compute, where the effect stands out of the noise\n")  # fmt: skip

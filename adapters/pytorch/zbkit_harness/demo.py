# SPDX-License-Identifier: Apache-2.0
"""`zb demo`: the whole loop on the bundled PyTorch job (adapters/pytorch/examples), 2 ranks on CPU
(gloo, one thread each) or one GPU each. `zb demo` runs this module (`python -m zbkit_harness.demo`).

1. profile: train_pipelining.py under torch's own Schedule1F1B, unmodified, through
   `zb profile --torch` (the adapter's torch.profiler hook), which stores the per-stage F/B/W,
   comm and activation memory as a profile run;
2. memory: each of torch's built-in schedules once with the hook's saved-tensor accounting
   (ZBKIT_MEMORY_REPORT), for its peak activation memory per rank;
3. tune (`zb tune`, after scaling the profile's M_B to the measured Schedule1F1B peaks): every
   family and placement under the cap (default "auto": a per-rank byte budget, the fastest torch
   schedule's measured peak on its fuller rank), stored;
4. replay and measure: R rounds, each running every schedule once in turn (so that machine noise
   hits all alike): torch's built-ins (with --quick, their timing that ranked them for step 3's
   cap stands for the one round), the tuned schedule through the shim in the unmodified
   script and through zbkit's executor (train_zbkit.py), whose first round is recorded through
   libzbrt and stored as a measured run of the tuned schedule. Post-validation: each round also
   runs the loop schedule tuned by span under the paper's ZB-2p budget (2x) through the executor
   twice (`post_validation_pair`), AdamW clipped at 1.0 with one injected Inf: once with the
   all-reduce barrier before every step, once post-validated;
5. check: the tuned schedule's final parameters and losses, through the shim and through the
   executor, against one unpipelined process (reference.py --compare), and the post-validated
   run's parameters and optimizer state against the barrier run's (compare_runs.py);
6. report: per schedule, median iteration time over every measured iteration (the slowest
   rank's), throughput, peak activation memory per rank, predicted time and the ratio; a line
   judges each target with its figure; zbview draws predicted against measured; one JSON line ends
   the output.

Every job's own output goes to DIR/logs/<job>.log. Exit 0 when everything ran and the results
are equal, 1 when a job failed (one line naming it and its log) or they differ, 2 for usage.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from zbkit import locate
from zbkit.errors import ZbkitError

from .demo_report import Report, mib
from .torchrun_jobs import JobError, Jobs, Measurement, median, read_memory_report

RANKS = 2
TUNED = "zbkit"  # the tuned schedule's row prefix
JOB_NAME = "bundled-gpt"

# torch's built-in schedules the bundled job runs (train_pipelining.py --schedule), and the row of
# `zb tune --torch-orders` that predicts each: the class's own order, taken from the installed torch
# (zbkit_harness.torch_orders) and simulated under the demo's costs.
TORCH_SCHEDULES: Tuple[Tuple[str, str], ...] = (
    ("1F1B", "torch:Schedule1F1B"),
    ("Interleaved1F1B", "torch:ScheduleInterleaved1F1B"),
    ("InterleavedZeroBubble", "torch:ScheduleInterleavedZeroBubble"),
    ("ZBVZeroBubble", "torch:ScheduleZBVZeroBubble"),
    ("DualPipeV", "torch:ScheduleDualPipeV"),
)

# The post-validation runs: AdamW, the customary clip norm (the bundled job's gradient norm is
# about half of it, so only the injected Inf makes a step wrong), an Inf on the last rank in
# iteration 2. The snapshot rollback: one copy per step, and bit-for-bit the barrier run's state
# (the in-place one drifts from it after an undone Adam step; docs/post-validation.md §4).
POST_VALIDATION_STEP = ["--optimizer", "adamw", "--lr", "0.001", "--clip-norm", "1.0",
                        "--rollback", "snapshot"]  # fmt: skip
POST_VALIDATION_INJECT = ["--inject-inf", "2:1"]
QUICK_MODEL = ["--layers", "4", "--dim", "32", "--heads", "2", "--seq", "16", "--vocab", "64"]


@dataclass
class Settings:
    store: str = "zbkit-demo.db"
    dir: Path = Path("zbkit-demo")
    iters: int = 6
    warmup: int = 1
    rounds: int = 3
    mem_limit: str = "auto"
    model_flags: List[str] = field(default_factory=list)
    microbatches: int = 4
    batch: int = 16
    json: bool = False
    # --quick: torch's schedules are timed once, in the round that ranks them for the "auto" cap,
    # and that round is also the report's (a smoke test: five fewer jobs, figures less paired).
    time_torch_once: bool = False


@dataclass
class Row:
    """One schedule of the report: its measurements over the rounds, and its prediction."""

    predicted_ms: Optional[float] = None
    measured: Measurement = field(default_factory=Measurement)
    round_median_s: List[float] = field(default_factory=list)  # one per timed job

    def median_ms(self) -> float:
        return median(self.measured.iteration_s) * 1e3


def note(text: str) -> None:
    sys.stderr.write(f"zb demo: {text}\n")
    sys.stderr.flush()


STEPS = ("sync", "post-validation")


def post_validation_pair(
    jobs: Jobs, script: Path, model: Sequence[str], counts: Sequence[str], source: Sequence[str],
    extra: Sequence[str], round_: int, dumps: Optional[Path],
) -> Dict[str, Measurement]:  # fmt: skip
    """One round of the post-validation comparison: `script` (train_zbkit.py) on the schedule
    `source` names
    with the all-reduce step and post-validated (POST_VALIDATION_STEP), in alternating order so
    that the machine's drift within a round favours neither; with `dumps`, each run's final state
    goes to dumps/dump-<step>. Each step's measurement."""
    measured = {}
    for step in STEPS if round_ % 2 else STEPS[::-1]:
        args = [*model, *source, "--optimizer-step", step, *POST_VALIDATION_STEP, *extra, *counts]
        if dumps is not None:
            args += ["--dump", str(dumps / f"dump-{step}")]
        measured[step] = Measurement.of(jobs.torchrun(f"step-{step}-round{round_}", script, args))
    return measured


def verdict(jobs: Jobs, tag: str, command: Sequence[str], result: Path) -> bool:
    """Runs a comparison script that writes {"equal": ..., "problem": ...} to `result`. Exit 1
    means "not equal", with the verdict written; anything else without one failed."""
    code = jobs.run(tag, command)
    try:
        found = json.loads(result.read_text())
        equal = found["equal"]
    except (OSError, ValueError, KeyError, TypeError):
        raise JobError(f"{tag} exited with {code} and no verdict; see {jobs.log(tag)}") from None
    if not equal:
        note(f"{tag}: {found.get('problem', 'not equal')}")
    return bool(equal)


class Demo:
    def __init__(self, settings: Settings, environment: Dict[str, str]) -> None:
        self.s = settings
        self.examples = Path(environment["examples"])
        self.zbview = environment.get("zbview", "")
        env = {"OMP_NUM_THREADS": "1", "ZBKIT_ZB_BINARY": environment["zb"]}
        if environment.get("zbrt"):
            env["ZBKIT_ZBRT_LIBRARY"] = environment["zbrt"]
        self.jobs = Jobs(settings.dir, RANKS, environment["python"], environment["zb"], env)
        self.hook_path = {
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(locate.hook_dir()), os.environ.get("PYTHONPATH")])
            )
        }
        self.torch_names = [name for name, _ in TORCH_SCHEDULES]
        self.rows: Dict[str, Row] = {name: Row() for name in self.torch_names}
        self.measured_timeline: Optional[int] = None

    # ---- jobs ------------------------------------------------------------------------------

    def script(self, name: str) -> Path:
        return self.examples / name

    def bundled(self, tag: str, script: str, args: Sequence[str], env=None):
        """The bundled job `script` on the ranks, with the demo's model flags."""
        return self.jobs.torchrun(tag, self.script(script), [*self.s.model_flags, *args], env)

    def timed(
        self, row: str, tag: str, script: str, args: Sequence[str], env=None, iters=0
    ) -> None:
        """Runs `script` with the demo's iteration counts and adds what it measured to `row`."""
        measured = Measurement.of(self.bundled(tag, script, [*args, *self.counts()], env))
        kept = self.rows.setdefault(row, Row())
        kept.measured.add(measured)
        kept.round_median_s.append(median(measured.iteration_s))

    def memory_peaks(self, tag: str, script: str, args: Sequence[str], env=None) -> List[float]:
        """Each rank's peak activation bytes, by the shim's saved-tensor accounting."""
        report = {
            "ZBKIT_MEMORY_REPORT": str(self.jobs.summaries(tag)),
            **self.hook_path,
            **(env or {}),
        }
        self.bundled(tag, script, [*args, "--iters", "2", "--warmup", "1"], report)
        return [
            read_memory_report(self.jobs.summaries(tag) / f"memory.rank{r}.json")
            for r in range(RANKS)
        ]

    # ---- 1-3: profile, memory, tune ----------------------------------------------------------

    def profile(self) -> Path:
        traces, costs = self.s.dir / "profile", self.s.dir / "costs-profiled.json"
        if traces.exists():
            for item in traces.iterdir():
                item.unlink()
        skip, window = 1, 3
        note(
            f"1/6 profiling the bundled job under torch's Schedule1F1B (torch.profiler, {window} iterations)"
        )
        command = [
            self.jobs.zb_binary, "profile", "--torch", "--torch-skip", str(skip),
            "--torch-iters", str(window), "--shard-dir", str(traces), "--store", self.s.store,
            "--cluster", "local", "--name", JOB_NAME, "--pp", str(RANKS), "--out", str(costs),
            "--", *self.jobs.torchrun_command(self.script("train_pipelining.py")),
            *self.s.model_flags, "--schedule", "1F1B", "--iters", str(skip + window), "--warmup", "0",
        ]  # fmt: skip
        self.jobs.check("profile-1F1B", command)
        stages = len(_read_costs(costs)["stages"])
        if stages != RANKS:
            raise JobError(f"{costs}: the profile has {stages} stages, expected {RANKS}")
        return costs

    def measure_torch_memory(self) -> None:
        note("2/6 peak activation memory of torch's built-in schedules")
        for name, _ in TORCH_SCHEDULES:
            peaks = self.memory_peaks(f"memory-{name}", "train_pipelining.py", ["--schedule", name])
            self.rows[name].measured.peak_bytes = peaks

    def time_torch_schedules(self, round_: int) -> None:
        for name, _ in TORCH_SCHEDULES:
            self.timed(name, f"{name}-round{round_}", "train_pipelining.py", ["--schedule", name])

    def calibrate_memory(self, profiled: Path) -> Path:
        """The profile's M_B is the net allocation inside each forward, which frees of unrelated
        memory in the same range can bias low; the memory round measured what Schedule1F1B, the
        profiled schedule, really holds per rank. Each stage's M_B (and M_W, in proportion) is
        scaled until zbkit's 1F1B peak (as `zb tune` models it) is the measured one."""
        costs = _read_costs(profiled)
        measured = self.rows["1F1B"].measured.peak_bytes
        report = self.jobs.zb_json(
            "tune-calibration", "tune", "--costs", str(profiled), "-m", str(self.s.microbatches),
            "--mem-limit", "none", "--family", "1f1b",
        )  # fmt: skip
        modelled = report["candidates"][0]["peak_memory"]
        text = "memory: the profile's M_B scaled to Schedule1F1B's measured peaks:"
        for r, stage in enumerate(costs["stages"]):
            if r < len(measured) and modelled[r] > 0 and measured[r] > 0:
                scale = measured[r] / modelled[r]
                stage["M_B"] *= scale
                stage["M_W"] *= scale
                text += f" stage {r} x{scale:.2f}"
        note(text)
        costs["name"] = f"{JOB_NAME} (zb demo profile, memory calibrated)"
        calibrated = self.s.dir / "costs.json"
        calibrated.write_text(json.dumps(costs, indent=1) + "\n")
        return calibrated

    def auto_cap(self) -> Tuple[int, str]:
        """The fastest torch schedule (by the first timed round) and its fuller rank's peak."""
        timed = [(self.rows[name].median_ms(), name) for name, _ in TORCH_SCHEDULES
                 if self.rows[name].measured.iteration_s]  # fmt: skip
        best = min(timed)[1]
        peaks = self.rows[best].measured.peak_bytes
        if len(peaks) != RANKS:
            raise JobError("no peak memory was measured; pass --mem-limit")
        return math.floor(max(peaks)), best  # never above what it used

    def tune(self, costs: Path, by_span: bool) -> Dict[str, Any]:
        """`zb tune` into the store; the report, with the chosen schedule file under "file"."""
        cap, why = self.s.mem_limit, ""
        if by_span:
            # The paper measures post-validation on ZB-2p; the auto cap (a torch schedule's peak)
            # can leave loop placement no order but the slowest.
            cap, why = "2x", " (the paper's ZB-2p budget, where it measures post-validation)"
        elif cap == "auto":
            budget, best = self.auto_cap()
            cap, why = str(budget), f" bytes per rank ({mib(budget)}, {best}'s measured peak)"
        objective = "span" if by_span else "makespan"
        what = "every family of loop placement" if by_span else "every family and placement"
        note(
            f"3/6 {'(post-validation) ' if by_span else ''}tuning {what} by {objective} under --mem-limit {cap}{why}"
        )
        out = self.s.dir / ("tuned-span.json" if by_span else "tuned.json")
        args = ["tune", "--costs", str(costs), "-m", str(self.s.microbatches), "--mem-limit", cap,
                "--objective", objective, "--store", self.s.store, "--cluster", "local",
                "--job", JOB_NAME, "--out", str(out),
                # The bundled script builds whatever layout the order needs (--schedule,
                # --stages-per-rank), so the profiled one (Schedule1F1B's) does not bind it.
                "--layout", "any"]  # fmt: skip
        # Post-validation wins what the barrier makes the rank holding stage 0 wait. In V
        # placement that rank also holds the last stage and ends last: nothing to win.
        if by_span:
            # Only zbkit's executor runs it: tuned and predicted in its cost model, where the
            # first stage's backward splits like any other (not torch's, docs/formats.md §4.1).
            args += ["--placement", "loop", "--runtime", "zbkit"]
        else:
            args += ["--torch-orders", str(self.torch_orders())]
        report = self.jobs.zb_json("tune-span" if by_span else "tune", *args)
        if report.get("schedule_id") is None:
            raise JobError(f"no schedule fits --mem-limit {cap}")
        report["file"] = json.loads(out.read_text())
        report["cap"] = cap
        if not by_span:
            by_family = {c["family"]: c for c in report["candidates"] if c.get("ok")}
            for name, row in TORCH_SCHEDULES:
                if row in by_family:
                    self.rows[name].predicted_ms = by_family[row]["makespan"]
        return report

    def torch_orders(self) -> Path:
        """The installed torch's orders of its classes for the bundled job's layout (2 stages per
        rank for the interleaved ones, train_pipelining.py's default)."""
        out = self.s.dir / "torch-orders"
        command = [self.jobs.python, "-m", "zbkit_harness.torch_orders", "--ranks", str(RANKS),
                   "--microbatches", str(self.s.microbatches), "--stages-per-rank", "2",
                   "--out", str(out)]  # fmt: skip
        self.jobs.check("torch-orders", command, {"PYTHONPATH": str(locate.package_root())})
        return out

    # ---- 4: rounds ---------------------------------------------------------------------------

    def shim_args(self, tuned: Dict[str, Any]) -> List[str]:
        """train_pipelining.py's stage layout for the tuned schedule's placement."""
        if tuned["placement"] == "v":
            return ["--schedule", "ZBVZeroBubble"]
        if tuned["chunks"] == 1:
            return ["--schedule", "1F1B"]
        return ["--schedule", "Interleaved1F1B", "--stages-per-rank", str(tuned["chunks"])]

    def measure_round(
        self, round_: int, tuned: Dict[str, Any], schedule_id: int, span_id: int
    ) -> None:
        if not self.s.time_torch_once:
            self.time_torch_schedules(round_)
        suffix = f"-round{round_}"
        args = self.shim_args(tuned)
        if round_ == 1:
            args += ["--dump", str(self.s.dir / "dump-shim")]
        shim_env = {"ZBKIT_SCHEDULE": str(self.tuned_csv), **self.hook_path}
        self.timed(self.shim_row, f"shim{suffix}", "train_pipelining.py", args, shim_env)
        args = ["--store", self.s.store, "--schedule-id", str(schedule_id)]
        if round_ == 1:
            record = self.s.dir / "record"
            if record.exists():
                for item in record.iterdir():
                    item.unlink()
            args += ["--record-dir", str(record), "--dump", str(self.s.dir / "dump-executor")]
        self.timed(self.executor_row, f"executor{suffix}", "train_zbkit.py", args)
        if round_ == 1:
            summary = self.jobs.summaries(f"executor{suffix}") / "rank0.json"
            run_id = json.loads(summary.read_text()).get("run_id")
            if run_id is not None:
                self.measured_timeline = _timeline_of(self.s.store, run_id)
        self.post_validation_round(round_, span_id)

    def post_validation_round(self, round_: int, span_id: int) -> None:
        """The span-tuned schedule through the executor with the barrier step and post-validated."""
        source = ["--store", self.s.store, "--schedule-id", str(span_id)]
        dumps = self.s.dir if round_ == 1 else None
        # Twice the iterations: the effect is a few per cent, the drift tens of per cent.
        measured = post_validation_pair(self.jobs, self.script("train_zbkit.py"), self.s.model_flags,
                                        self.counts(2), source, POST_VALIDATION_INJECT, round_,
                                        dumps)  # fmt: skip
        for row, step in ((self.pv_sync_row, "sync"), (self.pv_row, "post-validation")):
            kept = self.rows.setdefault(row, Row())
            kept.measured.add(measured[step])
            kept.round_median_s.append(median(measured[step].iteration_s))

    def counts(self, factor: int = 1) -> List[str]:
        return ["--iters", str(factor * self.s.iters), "--warmup", str(self.s.warmup)]

    # ---- 5: checks ---------------------------------------------------------------------------

    def check_results(self) -> bool:
        note("5/6 comparing the tuned schedule's parameters and losses with one process")
        equal = True
        for dump in ("dump-shim", "dump-executor"):
            tag, result = f"compare-{dump}", self.s.dir / f"compare-{dump}.json"
            command = [self.jobs.python, str(self.script("reference.py")), *self.s.model_flags,
                       "--iters", str(self.s.iters), "--compare", str(self.s.dir / dump),
                       "--compare-out", str(result)]  # fmt: skip
            equal = verdict(self.jobs, tag, command, result) and equal
        return equal

    def check_post_validation(self) -> bool:
        tag, result = "compare-post-validation", self.s.dir / "compare-post-validation.json"
        command = [self.jobs.python, str(self.script("compare_runs.py")),
                   str(self.s.dir / "dump-sync"), str(self.s.dir / "dump-post-validation"),
                   "--out", str(result)]  # fmt: skip
        return verdict(self.jobs, tag, command, result)

    def draw(self, schedule_id: int) -> None:
        if self.measured_timeline is None or not self.zbview or not os.path.exists(self.zbview):
            return
        picture = self.s.dir / "predicted-vs-measured.png"
        command = [self.zbview, "--screenshot", str(picture), self.s.store, "--schedule",
                   f"s{schedule_id}", "--compare", f"t{self.measured_timeline}"]  # fmt: skip
        if self.jobs.run("zbview", command) == 0:
            note(f"zbview drew {picture}")

    # ---- the loop ----------------------------------------------------------------------------

    def run(self) -> int:
        profiled = self.profile()
        self.measure_torch_memory()
        self.time_torch_schedules(0)  # ranks torch's schedules for the "auto" cap
        costs = self.calibrate_memory(profiled)
        outcome = self.tune(costs, by_span=False)
        span = self.tune(costs, by_span=True)
        if not self.s.time_torch_once:
            for row in self.rows.values():  # only the alternating rounds below count
                row.measured.iteration_s.clear()
                row.round_median_s.clear()
        tuned, by_span = outcome["file"], span["file"]
        self.shim_row = f"{TUNED} {tuned['family']} (shim)"
        self.executor_row = f"{TUNED} {tuned['family']} (executor)"
        self.pv_sync_row = f"{TUNED} {by_span['family']} (executor, all-reduce step)"
        self.pv_row = f"{TUNED} {by_span['family']} (executor, post-validated)"
        self.tuned_csv = self.s.dir / "tuned.csv"
        self.jobs.zb("export", "export", str(self.s.dir / "tuned.json"), "--format", "torch-csv",
                     "-o", str(self.tuned_csv))  # fmt: skip
        note(f"4/6 {self.s.rounds} rounds over torch's schedules, the tuned {tuned['family']} (shim "
             f"and executor) and the span-tuned loop {by_span['family']} (executor: all-reduce step, "
             f"post-validated)")  # fmt: skip
        # The tuned schedule's peak memory through the shim, with the same accounting as torch's.
        shim_peaks = self.memory_peaks("memory-shim", "train_pipelining.py", self.shim_args(tuned),
                                       {"ZBKIT_SCHEDULE": str(self.tuned_csv)})  # fmt: skip
        for round_ in range(1, self.s.rounds + 1):
            self.measure_round(round_, tuned, outcome["schedule_id"], span["schedule_id"])
        self.rows[self.shim_row].measured.peak_bytes = shim_peaks
        predicted = tuned["predicted"]["makespan"]
        self.rows[self.shim_row].predicted_ms = predicted
        self.rows[self.executor_row].predicted_ms = predicted
        # With a barrier an iteration takes the makespan; without, the next one's warm-up overlaps
        # this one's tail and it takes the span (docs/bubbles.md).
        self.rows[self.pv_sync_row].predicted_ms = by_span["predicted"]["makespan"]
        self.rows[self.pv_row].predicted_ms = by_span["predicted"]["span"]
        results_match = self.check_results()
        pv_equal = self.check_post_validation()
        note("6/6 report")
        self.draw(outcome["schedule_id"])
        report = Report(self, outcome, span, results_match, pv_equal)
        sys.stdout.write(report.text() if not self.s.json else "")
        sys.stdout.write(json.dumps(report.line()) + "\n")
        sys.stdout.flush()
        if not results_match:
            raise JobError("the tuned schedule's parameters differ from the unpipelined reference; "
                           f"see {self.s.dir / 'compare-dump-shim.json'}")  # fmt: skip
        if not pv_equal:
            raise JobError("the post-validated run ends elsewhere than the barrier run; see "
                           f"{self.s.dir / 'compare-post-validation.json'}")  # fmt: skip
        return 0


def _read_costs(path: Path) -> Dict[str, Any]:
    """A zb-costs/1 file with one entry per stage (a collapsed uniform profile expanded)."""
    try:
        costs = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise JobError(f"{path}: no readable cost profile ({error})") from None
    if (
        not isinstance(costs, dict)
        or costs.get("format") != "zb-costs/1"
        or not costs.get("stages")
    ):
        raise JobError(f"{path}: not a zb-costs/1 profile with stages")
    count = costs.pop("count", None)
    if count is not None:
        costs["stages"] = [dict(costs["stages"][0]) for _ in range(count)]
    return costs


def _timeline_of(store: str, run_id: int) -> Optional[int]:
    """The measured timeline of a replay run (schemas/store.sql), read-only."""
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            found = db.execute("SELECT id FROM timelines WHERE run_id = ? ORDER BY id LIMIT 1",
                               (run_id,)).fetchone()  # fmt: skip
    except sqlite3.Error:
        return None
    return found[0] if found else None


def parse_args(argv: Optional[Sequence[str]]) -> Settings:
    parser = argparse.ArgumentParser(
        prog="zb demo",
        description="profile -> tune -> replay -> measure on the bundled PyTorch job",
        epilog="example: zb demo --quick --store demo.db --dir out/demo  (a short run: fewer "
        "iterations, a smaller model)",
    )
    parser.add_argument(
        "--store",
        default="zbkit-demo.db",
        help="the SQLite store: profile, tuned schedule and measured run go here",
    )
    parser.add_argument(
        "--dir",
        default="zbkit-demo",
        help="working directory: traces, summaries, logs of every job, the picture",
    )
    parser.add_argument(
        "--iters",
        type=int,
        default=None,
        help="iterations per job, the first is warm-up (default 6)",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="timed rounds over all schedules (default 3)"
    )
    parser.add_argument(
        "--mem-limit",
        default="auto",
        help="the tuning cap (1x, 1.5x, 24MiB, none), or auto: the fastest torch schedule's peak",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tiny model, 3 iterations, 1 round, torch's schedules timed once (in the round that "
        "picks the auto cap): a smoke test",
    )
    parser.add_argument(
        "--json", action="store_true", help="print only the final JSON line on stdout"
    )
    args = parser.parse_args(argv)
    settings = Settings(
        store=args.store, dir=Path(args.dir), mem_limit=args.mem_limit, json=args.json
    )
    settings.iters = args.iters if args.iters is not None else (3 if args.quick else 6)
    settings.rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    if args.quick:
        settings.batch, settings.microbatches, settings.model_flags = 8, 4, list(QUICK_MODEL)
        settings.time_torch_once = True
    if settings.iters < 2 or settings.rounds < 1:
        parser.exit(2, "zb demo: --iters must be >= 2 and --rounds >= 1\n")
    settings.model_flags += [
        "--batch",
        str(settings.batch),
        "--microbatches",
        str(settings.microbatches),
    ]
    return settings


def environment() -> Dict[str, str]:
    """Where the parts are (zbkit.locate: what `zb demo` set, else PATH)."""
    examples = locate.examples_dir()
    return {
        "python": locate.python(),
        "examples": str(examples) if examples else "",
        "zb": locate.zb_binary(),
        "zbrt": str(locate.zbrt_library()),
        "zbview": locate.zbview_binary(),
    }


def bench_post_validation(argv: Optional[Sequence[str]] = None) -> int:
    """The post-validation benchmark on its own (examples/bench_post_validation.py): one
    zb-schedule/1 file through train_zbkit.py with the all-reduce step and post-validated, side by
    side, R rounds, the same runs as the demo's post-validation rows (post_validation_pair: AdamW
    clipped at 1.0, snapshot rollback); per round the slowest rank's median iteration time and each
    rank's share of it spent waiting for the step, then the median of the rounds' paired drops.
    Exit 1 when a run fails or the two runs end in different states (round 1)."""
    parser = argparse.ArgumentParser(
        prog="bench_post_validation", description=bench_post_validation.__doc__.splitlines()[0]
    )
    parser.add_argument("--schedule-file", required=True, help="a zb-schedule/1 file for 2 ranks")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--dir", default="zbkit-bench-post-validation", help="logs, summaries and dumps"
    )
    args, extra = parser.parse_known_args(argv)
    env = environment()
    jobs = Jobs(Path(args.dir), RANKS, env["python"], env["zb"], {"OMP_NUM_THREADS": "1"})
    script = Path(env["examples"]) / "train_zbkit.py"
    try:
        predicted = json.loads(Path(args.schedule_file).read_text()).get("predicted") or {}
        print(
            f"schedule {args.schedule_file}: predicted makespan {predicted.get('makespan')} ms, span {predicted.get('span')} ms"
        )
        drops = []
        for round_ in range(1, args.rounds + 1):
            dumps = jobs.directory if round_ == 1 else None
            got = post_validation_pair(
                jobs, script, [], [], ["--schedule-file", args.schedule_file], extra, round_, dumps
            )
            sync, pv = got["sync"], got["post-validation"]
            sync_ms, pv_ms = median(sync.iteration_s) * 1e3, median(pv.iteration_s) * 1e3
            drops.append(1 - pv_ms / sync_ms)
            print(f"round {round_}: all-reduce step {sync_ms:.1f} ms (waiting r0 {sync.barrier_share(0):.1%}, "
                  f"r1 {sync.barrier_share(1):.1%}), post-validated {pv_ms:.1f} ms (r0 {pv.barrier_share(0):.1%}, "
                  f"r1 {pv.barrier_share(1):.1%}, {pv.rollbacks} rollbacks): {drops[-1]:+.1%} less", flush=True)  # fmt: skip
            if round_ == 1:
                result = jobs.directory / "compare-post-validation.json"
                command = [env["python"], str(Path(env["examples"]) / "compare_runs.py"),
                           str(jobs.directory / "dump-sync"), str(jobs.directory / "dump-post-validation"),
                           "--out", str(result)]  # fmt: skip
                equal = verdict(jobs, "compare-post-validation", command, result)
                print(f"state after round 1: {result.read_text().strip()}")
                if not equal:
                    return 1
    except ZbkitError as error:
        sys.stderr.write(f"bench_post_validation: {error}\n")
        return 1
    print(f"median paired drop over {args.rounds} rounds: {median(drops):+.1%}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    settings = parse_args(argv)
    env = environment()
    if not env["examples"] or not (Path(env["examples"]) / "train_pipelining.py").exists():
        where = env["examples"] or f"{locate.EXAMPLES_ENV} is not set"
        sys.stderr.write(f"zb demo: {where}: the bundled job (train_pipelining.py) is not there; "
                         f"set {locate.EXAMPLES_ENV} to adapters/pytorch/examples\n")  # fmt: skip
        return 1
    try:
        settings.dir.mkdir(parents=True, exist_ok=True)
        return Demo(settings, env).run()
    except ZbkitError as error:
        sys.stderr.write(f"zb demo: {error}\n")
        return 1
    except OSError as error:
        sys.stderr.write(f"zb demo: {error.filename or settings.dir}: {error.strerror}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())

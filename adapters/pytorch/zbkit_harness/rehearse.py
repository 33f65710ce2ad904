# SPDX-License-Identifier: Apache-2.0
"""`zb rehearse`: schedules run on a real process group with emulated compute, measured against
their predictions (docs/rehearse.md). `zb rehearse` runs this module (`python -m zbkit_harness.rehearse`).

    zb rehearse --costs FILE -m M --mem-limit L [--schedules LIST] [--iters K] [--rounds R]
                [--store DB [--cluster C]] [--dir DIR] [--message-bytes N]
                [--comm measured|profile] [--device async|sync] [--dp N] [--json]

1. probe: the per-hop time of a --message-bytes tensor between neighbouring ranks (gloo);
2. predict: the profile with that hop time as its comm (`--comm profile` keeps the profile's),
   torch's built-in orders from the installed torch (zbkit_harness.torch_orders) and `zb tune` for each
   zbkit schedule of LIST, so every row is predicted by the same simulator under the same costs;
3. run: R rounds, each running every row once in turn (rows alternate direction between rounds,
   so the machine's drift favours none): torch's classes as a plain script runs them, each zbkit
   schedule through the shim in that script (the class of its layout) and through zbkit's
   executor; the stages are `zbkit_harness.emulated_stages` modules taking the profile's F, B and W as sleeps.
   A profile of a pipeline inside data parallelism is rehearsed with its collectives (each
   stage's reduction and FSDP all-gather, zbkit_harness.emulated_collectives), on `--dp` N
   replicas of the pipeline (P x N processes; the reductions are real collectives among them),
   and each zbkit order is also run as tuned without the collectives (`<family>/dp-oblivious`);
4. report: per row the median iteration time (the slowest rank's) over every measured iteration,
   the prediction and their ratio, the peak activation memory (fuller rank, profile units)
   against the predicted one, and the time per op the prediction does not explain; a line per
   target; `--json` ends with one zb-rehearse/1 object.

Exit 0 when every row ran and every zbkit order ran as scheduled, 1 otherwise (the others still
run and are reported), 2 for usage. With --store the hop times are stored as a measurement of
--cluster (`zb tune --comm cluster` uses them), the tuned schedules are stored (`zb tune
--store`) and the first round of each through the shim and the executor is recorded through
libzbrt, with the emulated device's times, as a measured run of it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from zbkit import locate
from zbkit._json_file import read_json
from zbkit.errors import ZbkitError

from .emulated_collectives import has_collectives
from .emulated_stages import DEVICES, RehearsalError, read_costs, read_reduce_wait, split_stages
from .rehearse_report import report
from .rehearse_rows import OBLIVIOUS, Row, Settings, UsageError, note, parse_schedules
from .torch_orders import CLASSES
from .torchrun_jobs import JobError, Jobs, Measurement, median

PACKAGE_DIR = Path(__file__).resolve().parent
JOB_SCRIPT = PACKAGE_DIR / "rehearsal_job.py"
AS_SCHEDULED = "as scheduled"
# A zb-costs/1 stage's collectives (C++ `CostProfile::WithoutDataParallelWork` clears the same).
DATA_PARALLEL_KEYS = ("reduce", "unshard", "unsharded", "reduced")
Step = Tuple[str, int, int]  # kind, global stage, microbatch


def expected_order(schedule: Dict[str, Any], runtime: str) -> List[List[Step]]:
    """Per rank, the computations a zb-schedule/1 order runs, as the emulated stages record them:
    a fused BW as its B then its W. Under torch's runtime (the shim) the first stage's B runs
    inside its W (torch's `backward_one_chunk` skips it for the first stage and
    `backward_weight_one_chunk` runs the whole backward; docs/rehearse.md §3)."""
    orders = []
    for program in sorted(schedule["ranks"], key=lambda p: p["rank"]):
        order: List[Step] = []
        for op in program["ops"]:
            stage, kind, mb = program["stages"][op.get("chunk", 0)], op["type"], op["mb"]
            if runtime == "shim" and stage == 0 and kind == "B":
                continue
            if kind == "BW" or (runtime == "shim" and stage == 0 and kind == "W"):
                order += [("B", stage, mb), ("W", stage, mb)]
            else:
                order.append((kind, stage, mb))
        orders.append(order)
    return orders


def first_divergence(expected: Sequence[Step], ran: Sequence[Step]) -> str:
    """Where `ran` first departs from `expected`, in words; "" when they are equal."""
    for i, (want, got) in enumerate(zip(expected, ran)):
        if want != got:
            return (f"op {i}: ran {got[0]} of stage {got[1]} microbatch {got[2]}, the schedule "
                    f"has {want[0]} of stage {want[1]} microbatch {want[2]}")  # fmt: skip
    if len(ran) != len(expected):
        return f"ran {len(ran)} computations, the schedule has {len(expected)}"
    return ""


def torch_class_for(chunks: int, placement: str) -> Tuple[str, List[str]]:
    """The torch class a pipelining script uses for a schedule's layout, and the job flags that
    build that layout (the shim then replays the zbkit order in it)."""
    for name, class_placement, fixed in CLASSES:
        if class_placement != placement:
            continue
        if fixed == chunks:
            return name, []
        if fixed is None and chunks > 1:
            return name, ["--stages-per-rank", str(chunks)]
    raise RehearsalError(f"no torch schedule class builds {chunks} stages per rank in {placement}")


def check_with_zb(command: List[str]) -> None:
    """Runs a zb command that judges the request before anything runs: its usage error (exit 2)
    is a UsageError, any other failure a RehearsalError, with zb's own last line."""
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        raise RehearsalError(f"cannot run {command[0]}: {error.strerror}") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        said = said.removeprefix(f"zb {command[1]}: ")
        raise (UsageError if done.returncode == 2 else RehearsalError)(said)


def make_jobs(directory: Path, ranks: int, environment: Dict[str, str], replicas: int = 1) -> Jobs:
    """The rehearsal's jobs: one thread each, this build's zb and libzbrt, the package first on
    PYTHONPATH."""
    env = {"OMP_NUM_THREADS": "1", "ZBKIT_ZB_BINARY": environment["zb"]}
    if environment.get("zbrt"):
        env["ZBKIT_ZBRT_LIBRARY"] = environment["zbrt"]
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(locate.package_root()), os.environ.get("PYTHONPATH")])
    )
    return Jobs(directory, ranks, environment["python"], environment["zb"], env, replicas)


def located() -> Dict[str, str]:
    """zbkit.locate: what `zb rehearse` set, else PATH."""
    return {"python": locate.python(), "zb": locate.zb_binary(),
            "zbrt": str(locate.zbrt_library())}  # fmt: skip


class Rehearsal:
    def __init__(self, settings: Settings, environment: Dict[str, str]) -> None:
        self.s = settings
        stages, self.profile_comm = read_costs(settings.costs)
        self.checkpoint_groups = checkpoint_groups(settings.costs, settings.ac_param_groups)
        self.ranks = len(stages)
        self.max_memory = max((st.m_b for st in stages), default=0.0)
        self.check_request(environment["zb"])
        self.collectives = has_collectives(stages)
        # The longest reduction in units of its stage's B: the DP target applies from 1 on.
        self.reduction_over_b = max((st.reduce_ms / st.b_ms for st in stages if st.b_ms > 0),
                                    default=0.0)  # fmt: skip
        self.note_replicas()
        self.jobs = make_jobs(settings.dir, self.ranks, environment, settings.dp)
        self.costs_path = settings.costs  # the rehearsed costs once predict() has written them
        self.hop_ms: Dict[str, float] = {}
        self.rows: List[Row] = []
        self.failed = False

    # ---- 1: probe ----------------------------------------------------------------------------

    def common_args(self) -> List[str]:
        # Activation tensors of at most 1 MiB each: the account stays in profile units.
        memory_scale = min(1.0, float(1 << 20) / self.max_memory) if self.max_memory else 1.0
        return ["--costs", str(self.costs_path), "--microbatches", str(self.s.microbatches),
                "--message-bytes", str(self.s.message_bytes), "--memory-scale", repr(memory_scale),
                "--device", self.s.device, "--hop-ms", repr(self.comm_ms()),
                "--checkpoint-groups", str(self.checkpoint_groups),
                "--dp", str(self.s.dp)]  # fmt: skip

    def note_replicas(self) -> None:
        """What of data parallelism is rehearsed, said once."""
        profiled = read_json(self.s.costs, RehearsalError).get("data_parallel", 1)
        if self.collectives:
            note(f"the profile's reductions and all-gathers are emulated on {self.s.dp} "
                 f"replica(s) of the pipeline ({self.ranks * self.s.dp} processes; "
                 "docs/rehearse.md §7)")  # fmt: skip
        elif self.s.dp > 1:
            note(f"the profile has no reductions or all-gathers: its {self.s.dp} replicas run "
                 "side by side without meeting")  # fmt: skip
        if isinstance(profiled, int) and profiled > self.s.dp:
            note(f"the profiled job ran {profiled} replicas of its pipeline; --dp {profiled} "
                 f"rehearses them all ({self.ranks * profiled} processes)")  # fmt: skip

    def check_request(self, zb: str) -> None:
        """`zb tune` judges the costs, m and the cap before anything runs or is written: its
        usage errors (exit 2) are this command's, its other failures too (exit 1)."""
        # A check of the inputs, not of a layout: 1f1b under any layout the profile recorded.
        check_with_zb([zb, "tune", "--costs", str(self.s.costs), "-m", str(self.s.microbatches),
                       "--mem-limit", self.s.mem_limit, "--family", "1f1b",
                       "--layout", "any"])  # fmt: skip

    def probe(self) -> None:
        folder = self.jobs.summaries("probe")
        folder.mkdir(parents=True, exist_ok=True)
        command = [*self.jobs.torchrun_command(JOB_SCRIPT, self.ranks), *self.common_args(), "--probe",
                   "--summary-out", str(folder / "rank{rank}.json")]  # fmt: skip
        self.jobs.check("probe", command)
        for r in range(self.ranks):
            try:
                doc = json.loads((folder / f"rank{r}.json").read_text())
                self.hop_ms.update({k: float(v) for k, v in doc["hop_ms"].items()})
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                raise JobError(
                    f"probe: rank {r} left no hop times; see {self.jobs.log('probe')}"
                ) from None

    def record_hops(self) -> None:
        """With --store: the hop times as a measurement of the cluster (zb-hops/1, `zb costs
        record-hops`), for `zb tune --comm cluster`."""
        if not self.s.store or not self.hop_ms:
            return
        hops = []
        for pair, ms in sorted(self.hop_ms.items()):
            low, high = (int(r) for r in pair.split("-"))
            hops.append({"from": low, "to": high, "ms": round(ms, 6)})
        path = self.s.dir / "hops.json"
        path.write_text(json.dumps({"format": "zb-hops/1", "message_bytes": self.s.message_bytes,
                                    "source": "zb rehearse", "hops": hops}) + "\n")  # fmt: skip
        said = self.jobs.zb("record-hops", "costs", "record-hops", "--store", self.s.store,
                            "--cluster", self.s.cluster, str(path))  # fmt: skip
        note(said.strip())

    def hop(self) -> float:
        return median(list(self.hop_ms.values())) if self.hop_ms else 0.0

    def comm_ms(self) -> float:
        """The per-hop time the predictions use and the async device emulates."""
        return round(self.hop(), 4) if self.s.comm == "measured" and self.hop_ms else \
            self.profile_comm  # fmt: skip

    # ---- 2: predict --------------------------------------------------------------------------

    def rehearsed_costs(self) -> Path:
        """The profile as rehearsed: its durations (F, B, W, a measured BW, the collectives)
        times --time-scale, and the measured hop time as its comm (unless --comm profile). The
        jobs run these costs and the predictions are made from them, so both sides see the same
        numbers."""
        doc = json.loads(self.s.costs.read_text())
        doc["comm"] = self.comm_ms()
        for stage in doc["stages"]:
            for key in ("F", "B", "W", "BW", "reduce", "unshard"):
                if key in stage:
                    stage[key] = stage[key] * self.s.time_scale
        path = self.s.dir / "costs-rehearsed.json"
        path.write_text(json.dumps(doc) + "\n")
        return path

    def oblivious_costs(self) -> Path:
        """The rehearsed costs without the collectives: what a tuner that ignores data
        parallelism sees (docs/data-parallel.md §5)."""
        doc = json.loads(self.costs_path.read_text())
        doc.pop("reduce_wait", None)
        for stage in doc["stages"]:
            for key in DATA_PARALLEL_KEYS:
                stage.pop(key, None)
        path = self.s.dir / "costs-dp-oblivious.json"
        path.write_text(json.dumps(doc) + "\n")
        return path

    def torch_split_costs(self) -> Path:
        """The rehearsed costs as torch's own split runs a fully checkpointed stage: its B
        recomputes the forward once (as the profile's B does), its W once more per parameter
        group (W + groups x F); it holds what the profile says from B to W (the recomputation's
        tensors W reads stay with the checkpoint until the graph goes). Every stage is charged
        so, the first too, which torch runs whole in its W with one recomputation: an over-
        estimate of groups x F per microbatch on the first stage (docs/rehearse.md §6)."""
        doc = json.loads(self.costs_path.read_text())
        for stage in doc["stages"]:
            # A fused backward (1F1B's, DualPipeV's overlapped pairs) recomputes once.
            stage["BW"] = stage.get("BW", stage["B"] + stage["W"])
            stage["W"] = stage["W"] + self.checkpoint_groups * stage["F"]
        path = self.s.dir / "costs-torch-split.json"
        path.write_text(json.dumps(doc) + "\n")
        return path

    def tune(self, tag: str, family: str, extra: Sequence[str] = (), store: bool = True,
             costs: Optional[Path] = None) -> Dict[str, Any]:  # fmt: skip
        args = ["tune", "--costs", str(costs or self.costs_path), "-m", str(self.s.microbatches),
                "--mem-limit", self.s.mem_limit, "--family", family, *extra]  # fmt: skip
        if family == "search":
            args += ["--time-limit", str(self.s.search_time)]
        if store and self.s.store:
            args += ["--store", self.s.store, "--cluster", self.s.cluster, "--job",
                     self.s.costs.stem]  # fmt: skip
        return self.jobs.zb_json(tag, *args)

    def predict(self) -> None:
        self.costs_path = self.rehearsed_costs()
        orders = self.s.dir / "torch-orders"
        self.jobs.check("torch-orders", [self.jobs.python, "-m", "zbkit_harness.torch_orders", "--ranks",
                                         str(self.ranks), "--microbatches",
                                         str(self.s.microbatches), "--out", str(orders)])  # fmt: skip
        index = json.loads((orders / "index.json").read_text())["schedules"]
        refused = {entry["name"]: entry["error"] for entry in index if "error" in entry}
        split = {f"torch:{entry['name']}" for entry in index if entry.get("splits_backward")}
        wanted_torch = [n for n in self.s.schedules if n.startswith("torch:")]
        report = self.tune("tune-torch", "1f1b", ["--torch-orders", str(orders)], store=False)
        by_family = {row["family"]: row for row in report["candidates"]}
        if self.checkpoint_groups:
            # torch's split classes recompute in B and again per parameter group in W.
            split_costs = self.torch_split_costs()
            report = self.tune("tune-torch-split", "1f1b", ["--torch-orders", str(orders)],
                               store=False, costs=split_costs)  # fmt: skip
            for row in report["candidates"]:
                if row["family"] in split:
                    by_family[row["family"]] = row
        for name in wanted_torch:
            cls = name.split(":", 1)[1]
            if cls in refused:
                note(f"{name}: torch refuses this layout ({refused[cls]}); not rehearsed")
                continue
            row = Row(name, "torch", ["--schedule", cls])
            self.predicted(row, by_family.get(name))
            self.rows.append(row)
        # Each zbkit order is also tuned blind to the collectives, all from one such profile.
        oblivious = self.oblivious_costs() if self.collectives else None
        for name in (n for n in self.s.schedules if n.startswith("zbkit:")):
            family = name.split(":", 1)[1]
            path = self.s.dir / f"schedule-{family}.json"
            # torch's orders seed the search (never slower than a built-in that fits).
            try:
                report = self.tune(f"tune-{family}", family,
                                   ["--out", str(path), "--torch-orders", str(orders)])  # fmt: skip
            except JobError as error:  # e.g. nothing of the family fits the cap: say so, go on
                self.failed_rows(name, error)
                continue
            schedule = json.loads(path.read_text())
            best = next(r for r in report["candidates"] if r["family"] == report["best"])
            for runtime in ("shim", "executor"):
                if runtime == "shim":
                    row = self.shim_row(name, path, schedule)
                else:
                    row = Row(name, runtime, ["--schedule-file", str(path)])
                row.schedule_id = report.get("schedule_id")
                row.schedule_file = path
                if runtime == "shim":
                    self.predicted(row, best)
                else:
                    self.predicted(row, self.executor_prediction(schedule, family))
                self.rows.append(row)
            if oblivious is not None:
                self.oblivious_rows(name, family, orders, oblivious)

    def failed_rows(self, name: str, error: JobError) -> None:
        """A zbkit schedule that could not be tuned: its rows say why, the rest runs."""
        for runtime in ("shim", "executor"):
            self.rows.append(Row(name, runtime, [], error=str(error)))
        self.failed = True
        note(f"{name}: {error}")

    def oblivious_rows(self, name: str, family: str, orders: Path, costs: Path) -> None:
        """The family's order as a tuner blind to data parallelism makes it (tuned without the
        collectives), run and predicted with them: what the DP-aware order is measured against
        (docs/data-parallel.md §5)."""
        label, tag = name + OBLIVIOUS, f"{family}-dp-oblivious"
        path = self.s.dir / f"schedule-{tag}.json"
        try:
            self.tune(f"tune-{tag}", family, ["--out", str(path), "--torch-orders", str(orders)],
                      store=False, costs=costs)  # fmt: skip
        except JobError as error:
            self.failed_rows(label, error)
            return
        schedule = json.loads(path.read_text())
        shim, executor = self.shim_row(label, path, schedule), Row(label, "executor",
                                                                   ["--schedule-file", str(path)])  # fmt: skip
        as_run = dict(schedule, costs=self.with_collectives(schedule["costs"], schedule["chunks"]))
        as_run.pop("predicted", None)
        shown = self.s.dir / f"schedule-{tag}-shim.json"
        shown.write_text(json.dumps(as_run) + "\n")
        self.predicted(shim, self.shown(f"show-{tag}-shim", shown))
        self.predicted(executor, self.executor_prediction(schedule, tag))
        for row in (shim, executor):
            row.schedule_file = path
            self.rows.append(row)

    def with_collectives(self, costs: Dict[str, Any], chunks: int) -> Dict[str, Any]:
        """A schedule's costs (as scheduled: one entry per stage) given the rehearsed
        collectives of each stage and when they are waited for."""
        stages, _ = read_costs(self.costs_path)
        parts = split_stages(stages, int(chunks))
        entries = costs["stages"] * int(costs.get("count", 1)) if len(costs["stages"]) == 1 \
            else costs["stages"]  # fmt: skip
        out = {key: value for key, value in costs.items() if key not in ("stages", "count")}
        out["stages"] = [{**entry, "reduce": part.reduce_ms, "unshard": part.unshard_ms}
                         for entry, part in zip(entries, parts)]  # fmt: skip
        out["reduce_wait"] = read_reduce_wait(self.costs_path)
        return out

    def shown(self, tag: str, path: Path) -> Dict[str, Any]:
        """`zb show`'s prediction of a schedule file: its makespan and per-rank peaks."""
        shown = self.jobs.zb_json(tag, "show", str(path))
        return {"makespan": shown["makespan"],
                "peak_memory": [rank["peak_memory"] for rank in shown["ranks"]]}  # fmt: skip

    def shim_row(self, name: str, path: Path, schedule: Dict[str, Any],
                 extra: Sequence[str] = ()) -> Row:  # fmt: skip
        """A row that replays the order of `path` through the shim: a plain pipelining script
        builds the stages of the order's layout and steps the torch class of that layout."""
        cls, layout = torch_class_for(schedule["chunks"], schedule["placement"])
        hooked = os.pathsep.join([str(locate.hook_dir()), self.jobs.env["PYTHONPATH"]])
        return Row(name, "shim", ["--schedule", cls, *layout, *extra],
                   env={"ZBKIT_SCHEDULE": str(path), "PYTHONPATH": hooked})  # fmt: skip

    def executor_prediction(self, schedule: Dict[str, Any], family: str) -> Dict[str, Any]:
        """The order as zbkit's executor runs it: zb tune predicted it as torch's runtime runs it
        (the first stage's backward all in its W, docs/formats.md §4.1), the executor splits the
        first stage like any other, so the same order is simulated (`zb show`) with the costs as
        the jobs run them."""
        stages, _ = read_costs(self.costs_path)
        chunks = split_stages(stages, int(schedule["chunks"]))
        copy = dict(schedule)
        copy.pop("predicted", None)
        copy["costs"] = {
            "comm": self.comm_ms(),
            "stages": [{"F": c.f_ms, "B": c.b_ms, "W": c.w_ms, "M_B": c.m_b, "M_W": c.m_w}
                       for c in chunks],
        }  # fmt: skip
        if self.collectives:
            copy["costs"] = self.with_collectives(copy["costs"], schedule["chunks"])
        path = self.s.dir / f"schedule-{family}-executor.json"
        path.write_text(json.dumps(copy) + "\n")
        return self.shown(f"show-{family}-executor", path)

    def predicted(self, row: Row, candidate: Optional[Dict[str, Any]]) -> None:
        if candidate is None:
            raise RehearsalError(f"{row.schedule}: zb tune predicted no such row")
        row.predicted_ms = float(candidate["makespan"])
        row.predicted_peak = max(candidate.get("peak_memory") or [0.0])

    # ---- 3: run ------------------------------------------------------------------------------

    def run(self) -> None:
        counts = ["--iters", str(self.s.iters), "--warmup", str(self.s.warmup)]
        for round_ in range(self.s.rounds):
            order = self.rows if round_ % 2 == 0 else self.rows[::-1]
            note(
                f"round {round_ + 1}/{self.s.rounds}: {len(order)} schedules on {self.ranks} ranks"
            )
            for row in order:
                if row.error:
                    continue
                args = [*row.job_args, *self.common_args(), *counts]
                tag = f"{row.tag}-round{round_}"
                folder = self.jobs.summaries(tag)
                args += ["--timeline-out", str(folder / "timeline.rank{rank}.json")]
                recorded = row.schedule_file is not None and row.schedule_id is not None
                if recorded and self.s.store and round_ == 0:
                    args += ["--record-dir", str(folder / "shards"), "--record-schedule",
                             str(row.schedule_file), "--store", self.s.store,
                             "--schedule-id", str(row.schedule_id)]  # fmt: skip
                try:
                    summaries = self.jobs.torchrun(tag, JOB_SCRIPT, args, row.env)
                except JobError as error:
                    row.error = str(error)
                    self.failed = True
                    note(f"{row.label}: {error}")
                    continue
                row.measured.add(Measurement.of(summaries))
                if all(s.host_bound_s for s in summaries):
                    row.host_bound_s += [max(values) for values in
                                         zip(*(s.host_bound_s for s in summaries))]  # fmt: skip
                row.run_id = row.run_id or next((s.run_id for s in summaries if s.run_id), None)
                if not row.ops_per_rank:
                    row.ops_per_rank = self.ops_per_rank(folder)
                if row.schedule_file is not None and not row.order:
                    row.order = self.check_order(row, folder)
                    if row.order != AS_SCHEDULED:
                        self.failed = True
                        note(f"{row.label}: {row.order}")

    def check_order(self, row: Row, folder: Path) -> str:
        """The order each rank ran (the emulated ops' records of the job's last iteration)
        against the schedule's."""
        expected = expected_order(json.loads(row.schedule_file.read_text()), row.runtime)
        for r in range(self.ranks):
            ops = json.loads((folder / f"timeline.rank{r}.json").read_text())["ops"]
            ran = [(op["type"], op["stage"], op["mb"]) for op in
                   sorted(ops, key=lambda op: op["start_ns"])]  # fmt: skip
            divergence = first_divergence(expected[r], ran)
            if divergence:
                return f"rank {r} {divergence}"
        return AS_SCHEDULED

    def ops_per_rank(self, folder: Path) -> int:
        """The most ops one rank ran in an iteration (a fused backward counts once)."""
        most = 0
        for r in range(self.ranks):
            try:
                ops = json.loads((folder / f"timeline.rank{r}.json").read_text())["ops"]
            except (OSError, ValueError, KeyError):
                return 0
            most = max(most, sum(1 for op in ops if op["type"] in ("F", "B")) + sum(
                1 for op in ops if op["type"] == "W"))  # fmt: skip
        return most


def checkpoint_groups(costs: Path, param_groups: int) -> int:
    """The parameter groups each emulated stage is checkpointed with (0: none): `param_groups`
    where the profile says its job checkpoints every block fully ("full"); for the other modes a
    note that they are not emulated (docs/rehearse.md §6)."""
    mode = read_json(costs, RehearsalError).get("checkpointing", "none")
    if mode == "full" and param_groups > 0:
        note(f"stages checkpointed as the profile's job does (full): torch's split recomputes "
             f"once per each of {param_groups} parameter groups in W (--ac-param-groups)")  # fmt: skip
        return param_groups
    if mode not in ("none", "full"):
        note(f"the profile checkpoints {mode!r}, which is not emulated: stages run without "
             "recomputation, so torch's classes' extra recomputations are not rehearsed")  # fmt: skip
    return 0


def rehearse(argv, parse_args, make, predicting: str, write_report) -> int:
    """The command's steps, whatever its rows: probe, predict, run, report; its exit code."""
    try:
        settings, environment = parse_args(argv)
        rehearsal = make(settings, environment)
        note(f"1/3 probing the hop time of {settings.message_bytes} B between {rehearsal.ranks} "
             "ranks")  # fmt: skip
        rehearsal.probe()
        rehearsal.record_hops()
        note(f"2/3 predicting ({predicting})")
        rehearsal.predict()
        rehearsal.run()
    except UsageError as error:
        sys.stderr.write(f"zb rehearse: {error}\n")
        return 2
    except ZbkitError as error:
        sys.stderr.write(f"zb rehearse: {error}\n")
        return 1
    write_report(rehearsal, sys.stdout)
    return 1 if rehearsal.failed else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    return rehearse(argv, parse, Rehearsal, "zb tune, torch's orders", report)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of how the rows run, the same with --costs and --layers."""
    parser.add_argument("--iters", type=int, default=4, help="measured iterations per job")
    parser.add_argument("--warmup", type=int, default=1, help="iterations before the measured")
    parser.add_argument("--rounds", type=int, default=2,
                        help="each runs every row once, alternating the order")  # fmt: skip
    parser.add_argument("--dir", default="zbkit-rehearse", help="logs, schedules, timelines")
    parser.add_argument("--message-bytes", type=int, default=4096,
                        help="bytes each hop carries per microbatch")  # fmt: skip
    parser.add_argument("--comm", choices=("measured", "profile"), default="measured",
                        help="the per-hop time predicted and emulated: the probed one or the "
                        "costs file's")  # fmt: skip
    parser.add_argument("--device", choices=DEVICES, default="async",
                        help="async: a GPU stream the host enqueues to; sync: the host waits")  # fmt: skip
    parser.add_argument("--time-scale", type=float, default=1.0, help="factor on every duration")
    parser.add_argument("--json", action="store_true", help="end with one zb-rehearse/1 object")

    def fail(message: str) -> None:
        raise UsageError(message)

    parser.error = fail  # type: ignore[method-assign]


def parse(argv: Optional[Sequence[str]]) -> Tuple[Settings, Dict[str, str]]:
    parser = argparse.ArgumentParser(
        prog="zb rehearse",
        description="Run torch's schedule classes and zbkit's tuned schedules (through the shim "
        "and the executor) on real ranks whose stages take the profile's F, B and W as timed "
        "waits, and report each measured against its prediction (docs/rehearse.md).",
        epilog="example: zb rehearse --costs tuner/data/paper/1.5B-p8-m24.json -m 24 "
        "--mem-limit 1x --rounds 2 --iters 4 --store zbkit.db",
    )
    parser.add_argument("--costs", required=True, help="zb-costs/1 profile, one stage per rank")
    parser.add_argument("-m", "--microbatches", type=int, required=True)
    parser.add_argument("--mem-limit", required=True, help="as zb tune: Nx, a size, none")
    parser.add_argument("--schedules", default="torch,zbkit:search",
                        help="torch, torch:<Class>, zbkit, zbkit:<family>, comma-separated")  # fmt: skip
    parser.add_argument("--store", default="", help="SQLite store: hops, schedules, runs")
    parser.add_argument("--cluster", default="local", help="cluster name in the store")
    parser.add_argument("--search-time", type=float, default=3.0, help="seconds for the search")
    parser.add_argument("--ac-param-groups", type=int, default=9,
                        help="a profile of a fully checkpointed job: the parameter groups torch's "
                        "split recomputes each stage for in W (9: torchtitan's Llama 3 block); "
                        "0: no checkpointing emulated")  # fmt: skip
    parser.add_argument("--dp", type=int, default=1,
                        help="replicas of the pipeline a profile inside data parallelism runs "
                        "(its reductions are then real collectives among them)")  # fmt: skip
    add_run_options(parser)
    args = parser.parse_args(argv)
    for name in ("microbatches", "iters", "rounds", "message_bytes", "dp"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0 or not args.time_scale > 0 or args.search_time < 0:
        raise UsageError("--warmup and --search-time must be >= 0, --time-scale > 0")
    if args.ac_param_groups < 0:
        raise UsageError("--ac-param-groups must be >= 0")
    if not Path(args.costs).is_file():
        raise UsageError(f"--costs {args.costs}: no such file")
    try:
        schedules = parse_schedules(args.schedules)
    except RehearsalError as error:
        raise UsageError(str(error)) from None
    settings = Settings(
        costs=Path(args.costs), microbatches=args.microbatches, mem_limit=args.mem_limit,
        schedules=schedules, iters=args.iters, warmup=args.warmup, rounds=args.rounds,
        store=args.store, cluster=args.cluster, dir=Path(args.dir), message_bytes=args.message_bytes, comm=args.comm,
        device=args.device,
        time_scale=args.time_scale, search_time=args.search_time, json=args.json,
        ac_param_groups=args.ac_param_groups, dp=args.dp,
    )  # fmt: skip
    return settings, located()


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""`zb rehearse --layers FILE -p P`: every layer split `zb partition` compares, each with its best
order, run by zbkit's executor and/or by torch's own schedule class through the shim on P real
ranks whose stages take their blocks' F, B and W (the sums over the split's blocks) as timed
waits, measured against the prediction (docs/partition.md §5, docs/rehearse.md).

    zb rehearse --layers FILE -p P -m M [--layout loop:1|loop:V|v] [--mem-limit SIZE|none]
                [--runtime executor|shim|both] [--iters K] [--rounds R] [--dir DIR]
                [--evaluations N] [--splits N] [--json]

1. probe the hop time between neighbouring ranks, as `zb rehearse --costs` does;
2. predict: `zb partition` on the per-block costs with that hop time as their comm, once per
   runtime rehearsed: `--runtime zbkit` for the executor (it runs the first stage's backward as
   any other), `--runtime torch` for the shim (torch's runtime runs it all in its W), each
   compared split's order written with its own per-stage costs (`--orders-dir`);
3. run: R rounds, each running every split once in turn (alternating direction);
4. report: per split the measured iteration time against the predicted one, and how much of each
   predicted gain of the co-tuned split over the others the measurement realises.

Exit 0 when every split ran as scheduled, 1 otherwise, 2 for usage."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

from zbkit._json_file import read_json

from .emulated_stages import RehearsalError
from .rehearse import Rehearsal, add_run_options, check_with_zb, located, make_jobs, rehearse
from .rehearse_report import WITHIN, document, table, targets
from .rehearse_rows import Row, UsageError, note


@dataclass
class SplitSettings:
    layers: Path
    ranks: int
    microbatches: int
    layout: str = "loop:1"
    mem_limit: str = "none"
    iters: int = 4
    warmup: int = 1
    rounds: int = 2
    dir: Path = Path("zbkit-rehearse")
    message_bytes: int = 4096
    comm: str = "measured"
    device: str = "async"
    time_scale: float = 1.0
    evaluations: int = 2000
    splits: int = 300
    runtimes: Tuple[str, ...] = ("executor",)  # "executor" and/or "shim"
    json: bool = False
    store: str = ""  # the rows record nothing in a store
    # The memory plan (docs/memory-plan.md): zb partition's --checkpointing, and --derive-full.
    checkpointing: str = "as-run"
    derive_full: bool = False

    @property
    def costs(self) -> Path:  # what the report names as the costs rehearsed
        return self.layers


class SplitRehearsal(Rehearsal):
    """A rehearsal whose rows are the splits of one layout: the probe, the runs, the order check
    and the report are Rehearsal's; the costs and predictions come from `zb partition`."""

    def __init__(self, settings: SplitSettings, environment: Dict[str, str]) -> None:
        self.s = settings  # type: ignore[assignment]
        doc = read_json(settings.layers, RehearsalError)
        if not isinstance(doc, dict) or doc.get("format") != "zb-layers/1":
            raise UsageError(f"--layers {settings.layers}: not a zb-layers/1 file")
        self.layers_doc = doc
        self.profile_comm = float(doc.get("comm", 0.0))
        self.ranks = settings.ranks
        settings.dir.mkdir(parents=True, exist_ok=True)
        self.jobs = make_jobs(settings.dir, self.ranks, environment)
        self.hop_ms: Dict[str, float] = {}
        self.rows: List[Row] = []
        self.failed = False
        self.max_memory = 0.0
        self.collectives = False  # a per-layer profile has none (docs/rehearse.md §7)
        # Each split's stages' blocks, by row: its name for the executor's rows, "<name> (shim)"
        # for the shim's (torch's runtime may co-tune another split).
        self.split_stages: Dict[str, List[List[str]]] = {}
        self.split_plans: Dict[str, List[str]] = {}  # by row: each block's checkpointing mode
        self.check_request(environment["zb"])

    def common_args(self) -> List[str]:
        # Activation tensors of at most 1 MiB each: the account stays in the costs' units.
        memory_scale = min(1.0, float(1 << 20) / self.max_memory) if self.max_memory else 1.0
        return ["--microbatches", str(self.s.microbatches), "--message-bytes",
                str(self.s.message_bytes), "--memory-scale", repr(memory_scale), "--device",
                self.s.device, "--hop-ms", repr(self.comm_ms())]  # fmt: skip

    def partition_args(self, layers: Path, runtime: str = "executor") -> List[str]:
        return ["partition", "--layers", str(layers), "-p", str(self.ranks), "-m",
                str(self.s.microbatches), "--layout", self.s.layout, "--mem-limit",
                self.s.mem_limit, "--runtime",
                "zbkit" if runtime == "executor" else "torch",
                "--checkpointing", self.s.checkpointing,
                *(["--derive-full"] if self.s.derive_full else [])]  # fmt: skip

    def check_request(self, zb: str) -> None:
        """`zb partition` judges the file, p, m, the layout and the cap before anything runs: its
        usage errors (exit 2) are this command's, its other failures too (exit 1)."""
        check_with_zb([zb, *self.partition_args(self.s.layers), "--evaluations", "0", "--splits",
                       "1"])  # fmt: skip

    def partition(self, layers: Path, orders: Path, runtime: str) -> Dict[str, Any]:
        return self.jobs.zb_json(f"partition-{runtime}", *self.partition_args(layers, runtime),
                                 "--evaluations", str(self.s.evaluations), "--splits",
                                 str(self.s.splits), "--orders-dir", str(orders))  # fmt: skip

    def rehearsed_layers(self) -> Path:
        """The per-block costs as rehearsed: times --time-scale, the probed hop time as comm."""
        doc = json.loads(json.dumps(self.layers_doc))
        doc["comm"] = self.comm_ms()
        for layer in doc.get("layers", []):
            for figures in [layer, *layer.get("options", [])]:  # every checkpointing mode's
                for key in ("F", "B", "W"):
                    figures[key] = figures.get(key, 0.0) * self.s.time_scale
        path = self.s.dir / "layers-rehearsed.json"
        path.write_text(json.dumps(doc) + "\n")
        return path

    def predict(self) -> None:
        layers = self.rehearsed_layers()
        for runtime in self.s.runtimes:
            # The executor's orders where they always were; the shim's beside them.
            orders = self.s.dir / ("orders" if runtime == "executor" else f"orders-{runtime}")
            for entry in self.partition(layers, orders, runtime)["rows"]:
                self.add_split_row(runtime, entry)
        if not self.rows:
            raise RehearsalError("no compared split has an order that fits --mem-limit")

    def add_split_row(self, runtime: str, entry: Dict[str, Any]) -> None:
        """The row of one split `zb partition` reported, run by `runtime` with the split's order
        and per-stage costs (the order file carries both)."""
        name = f"split:{entry['split']}"
        if not entry.get("ok"):
            note(f"{name} ({runtime}): {entry.get('reason', 'no order')}; not rehearsed")
            return
        path = Path(entry["order_file"])
        schedule = json.loads(path.read_text())
        if runtime == "executor":
            row = Row(name, runtime, ["--schedule-file", str(path), "--costs", str(path)])
        else:
            row = self.shim_row(name, path, schedule, ["--costs", str(path)])
        row.schedule_file = path
        row.predicted_ms = float(entry["iteration_ms"])
        key = name if runtime == "executor" else row.label
        self.split_stages[key] = entry["stages"]
        self.split_plans[key] = entry.get("checkpointing", [])
        row.predicted_peak = max(schedule.get("predicted", {}).get("peak_memory") or [0.0])
        self.max_memory = max(
            [self.max_memory] + [float(st.get("M_B", 0)) for st in schedule["costs"]["stages"]]
        )
        self.rows.append(row)


def gains(rows: List[Row]) -> List[str]:
    """How much of the co-tuned split's predicted gain over each other split was measured, on
    each runtime (a runtime's rows are compared among themselves; the executor's lines name no
    runtime, as before the shim's rows)."""
    lines = []
    for runtime in dict.fromkeys(row.runtime for row in rows):
        ran = {row.schedule: row for row in rows
               if row.runtime == runtime and not row.error and row.measured.iteration_s}  # fmt: skip
        chosen = ran.get("split:co-tuned")
        suffix = "" if runtime == "executor" else f" ({runtime})"
        for name, row in ran.items():
            if chosen is None or row is chosen or row.predicted_ms <= chosen.predicted_ms:
                continue
            predicted = 1 - chosen.predicted_ms / row.predicted_ms
            measured = 1 - chosen.measured_ms() / row.measured_ms()
            lines.append(f"split:co-tuned vs {name}{suffix}: {measured:.1%} faster measured, "
                         f"{predicted:.1%} predicted")  # fmt: skip
    return lines


def report(rehearsal: SplitRehearsal, out: IO[str]) -> None:
    s = rehearsal.s
    out.write(
        f"p={rehearsal.ranks} m={s.microbatches} layout={s.layout} mem-limit={s.mem_limit} "
        f"runtime={'+'.join(s.runtimes)} "
        f"layers={s.layers} comm={rehearsal.comm_ms():.3f} ms ({s.comm}) device={s.device} "
        f"time-scale={s.time_scale:g} iterations={s.iters}x{s.rounds} rounds\n"
    )
    out.write("\n".join(table(rehearsal.rows)) + "\n\n")
    out.write("\n".join(targets(rehearsal.rows, WITHIN, 0.0) + gains(rehearsal.rows)) + "\n")
    out.write(f"logs, orders and timelines: {s.dir}\n")
    if s.json:
        doc = document(rehearsal)
        doc.update(layout=s.layout, layers=str(s.layers), gains=gains(rehearsal.rows),
                   splits=rehearsal.split_stages, plans=rehearsal.split_plans)  # fmt: skip
        out.write(json.dumps(doc) + "\n")
    out.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    return rehearse(argv, parse, SplitRehearsal, "zb partition", report)


def parse(argv: Optional[Sequence[str]]) -> Tuple[SplitSettings, Dict[str, str]]:
    parser = argparse.ArgumentParser(
        prog="zb rehearse --layers",
        description="Run every layer split zb partition compares, with its order, on real ranks "
        "whose stages take their blocks' F, B and W as timed waits, through zbkit's executor "
        "and/or torch's schedule class (the shim), and report each measured against its "
        "prediction (docs/partition.md).",
        epilog="example: zb rehearse --layers tests/data/layers/llm19.json -p 4 -m 8 --layout v",
    )
    parser.add_argument("--layers", required=True, help="zb-layers/1: per-block costs")
    parser.add_argument("-p", "--ranks", type=int, required=True)
    parser.add_argument("-m", "--microbatches", type=int, required=True)
    parser.add_argument("--layout", default="loop:1", help="loop:1, loop:V or v (one layout)")
    parser.add_argument("--mem-limit", default="none", help="as zb partition: a size, or none")
    parser.add_argument("--evaluations", type=int, default=2000,
                        help="order-search simulations per split (zb partition)")  # fmt: skip
    parser.add_argument("--splits", type=int, default=300, help="splits the co-tuning judges")
    parser.add_argument("--runtime", choices=("executor", "shim", "both"), default="executor",
                        help="who runs each split's order: zbkit's executor, torch's schedule "
                        "class through the shim (orders tuned for torch's runtime), or both")  # fmt: skip
    parser.add_argument("--checkpointing", default="as-run",
                        help="as zb partition: as-run, plan or the modes the memory plan may use "
                        "(docs/memory-plan.md)")  # fmt: skip
    parser.add_argument(
        "--derive-full",
        action="store_true",
        help="as zb partition: a derived full-checkpointing option per block",
    )
    add_run_options(parser)
    args = parser.parse_args(argv)
    for name in ("ranks", "microbatches", "iters", "rounds", "message_bytes", "splits"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1")
    if args.layout == "all":
        raise UsageError("--layout: one layout (loop:1, loop:V or v): its splits run side by side")
    if args.warmup < 0 or args.evaluations < 0 or not args.time_scale > 0:
        raise UsageError("--warmup and --evaluations must be >= 0, --time-scale > 0")
    if not Path(args.layers).is_file():
        raise UsageError(f"--layers {args.layers}: no such file")
    settings = SplitSettings(
        layers=Path(args.layers), ranks=args.ranks, microbatches=args.microbatches,
        layout=args.layout, mem_limit=args.mem_limit, iters=args.iters, warmup=args.warmup,
        rounds=args.rounds, dir=Path(args.dir), message_bytes=args.message_bytes, comm=args.comm,
        device=args.device, time_scale=args.time_scale, evaluations=args.evaluations,
        splits=args.splits, json=args.json, checkpointing=args.checkpointing,
        derive_full=args.derive_full,
        runtimes=("executor", "shim") if args.runtime == "both" else (args.runtime,),
    )  # fmt: skip
    return settings, located()


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""Every zbkit family of one stage per rank replayed in a pipeline inside data parallelism (PP2 x
DP2 on 4 CPU ranks, pp_dp_job.py, stages wrapped in DDP or FSDP2), once each, through `zb replay`
(the shim) and, on FSDP2, the compute+comms CSV `zb export` writes: whether the job ran, was
refused before its first step (a split order on DDP stages, pytorch #144530) or failed, and whether
the two replicas of each pipeline rank ended with equal parameters (docs/data-parallel.md §2 quotes
the table). Too long for the suite (15 torchrun jobs, about 4 minutes on 2 cores); the tests run one
fused order on DDP, one split order on FSDP2 and the refusal.

    .venv/bin/python adapters/pytorch/tests/job_scripts/data_parallel_matrix.py

Exit 1 when any replicas diverged or a job failed otherwise than by zbkit's refusal.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from launch import (  # noqa: E402
    HOOK_DIR,
    JOBS,
    PYTORCH_DIR,
    job_env,
    require_zb,
    run,
    torchrun_command,
    tune_uniform,
    zb,
)

FAMILIES = ("1f1b", "zb-h1", "zb-h2", "zb-auto", "search")
REFUSAL = "runs under DistributedDataParallel"


def tuned(folder: Path, family: str) -> Path:
    """`family`'s order for the job's layout, one stage per rank (the search would otherwise
    also try a V layout, which pp_dp_job.py does not build and the shim refuses)."""
    if family != "search":
        return tune_uniform(folder, family)[0]
    tune_uniform(folder, "1f1b")  # writes the uniform costs.json
    out = folder / "search.json"
    done = zb("tune", "--costs", str(folder / "costs.json"), "-m", "4", "--mem-limit", "none",
              "--family", "search", "--layout", "loop:1", "-o", str(out))  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return out


def replicas_equal(prefix: Path) -> bool:
    """Ranks (dp 0, pp p) and (dp 1, pp p) hold the same parameters (pp_dp_job.py's dumps)."""
    import torch  # noqa: PLC0415

    dumps = [torch.load(f"{prefix}.rank{rank}.pt") for rank in range(4)]
    by_stage = {}
    for dump in dumps:
        by_stage.setdefault(dump["pp"], []).append(dump["params"])
    return all(
        torch.equal(first[name], second[name])
        for first, second in by_stage.values()
        for name in first
    )


def outcome(done, prefix: Path) -> str:
    if done.returncode == 0:
        return "equal" if replicas_equal(prefix) else "DIVERGED"
    if REFUSAL in done.stderr and not list(prefix.parent.glob(f"{prefix.name}.rank*.pt")):
        return "refused"
    return f"FAILED ({(done.stderr.strip().splitlines() or ['?'])[-1][:120]})"


def main() -> int:
    binary = str(require_zb())
    bad = 0
    print(f"{'family':8} {'wrap':5} {'zb replay':>10} {'comms CSV':>10}")
    for family in FAMILIES:
        for wrap in ("ddp", "fsdp"):
            with tempfile.TemporaryDirectory() as directory:
                folder = Path(directory)
                schedule = tuned(folder, family)
                job = torchrun_command("--wrap", wrap, "--dump", str(folder / "shim"), ranks=4,
                                       script=JOBS / "pp_dp_job.py")  # fmt: skip
                shim = outcome(run([binary, "replay", str(schedule), "--", *job], job_env(),
                                   timeout=600), folder / "shim")  # fmt: skip
                comms = "-"
                if wrap == "fsdp":
                    csv = folder / "comms.csv"
                    exported = run([binary, "export", str(schedule), "--format", "torch-csv-comms",
                                    "-o", str(csv)], job_env())  # fmt: skip
                    env = job_env(ZBKIT_SCHEDULE=str(csv),
                                  PYTHONPATH=str(HOOK_DIR) + os.pathsep + str(PYTORCH_DIR))  # fmt: skip
                    comms = "FAILED (export)" if exported.returncode else outcome(
                        run(torchrun_command("--wrap", wrap, "--dump", str(folder / "comms"),
                                             ranks=4, script=JOBS / "pp_dp_job.py"), env,
                            timeout=600), folder / "comms")  # fmt: skip
                bad += sum(o.startswith(("DIVERGED", "FAILED")) for o in (shim, comms))
                print(f"{family:8} {wrap:5} {shim:>10} {comms:>10}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

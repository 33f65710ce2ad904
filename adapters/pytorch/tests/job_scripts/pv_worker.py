# SPDX-License-Identifier: Apache-2.0
"""One rank of the post-validation tests: the same training run with the synchronous step and
with the post-validated one, from the same initial weights, for several optimizers.

    python pv_worker.py RANK WORLD PORT JOB.pkl OUT_DIR

JOB.pkl (made by test_post_validation.py): schedule, iters, max_norm, the optimizer configs,
burst iterations (targets x BURST: large gradients, clipped) and Inf injections {iteration: rank}.
Results go to OUT_DIR/rank{RANK}.pt: per config and mode, the final parameters, optimizer state,
the step counts and the executor's restarts.
"""

from __future__ import annotations

import os
import pickle
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

D = 8
MB_SIZE = 2
BURST = 25.0  # target scale on burst iterations


def make_stage(stage: int) -> nn.Module:
    torch.manual_seed(500 + stage)
    return nn.Sequential(nn.Linear(D, 2 * D), nn.LayerNorm(2 * D), nn.GELU(), nn.Linear(2 * D, D))


def batch(iteration: int, microbatches: int, bursts: List[int]) -> Tuple[List[Any], List[Any]]:
    g = torch.Generator().manual_seed(10_000 + iteration)
    x = torch.randn(microbatches * MB_SIZE, D, generator=g)
    y = torch.randn(microbatches * MB_SIZE, D, generator=g)
    if iteration in bursts:
        y = y * BURST
    return list(x.split(MB_SIZE)), list(y.split(MB_SIZE))


def make_optimizer(name: str, params: List[Any], kwargs: Dict[str, Any]) -> Any:
    return {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name](
        params, **kwargs
    )


def train(job: Dict[str, Any], rank: int, config: Dict[str, Any], mode: str) -> Dict[str, Any]:
    from zbkit.executor import PipelineExecutor
    from zbkit.post_validation import PostValidatedOptimizer, SynchronousGradientStep

    schedule = job["schedule"]
    world = schedule.ranks
    modules = {s: make_stage(s) for s in schedule.stages[rank]}
    params = [p for m in modules.values() for p in m.parameters()]
    optimizer = make_optimizer(config["optimizer"], params, config["kwargs"])
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.8)
    if mode == "sync":
        stepper = SynchronousGradientStep(optimizer, rank, world, max_norm=job["max_norm"])
        executor = PipelineExecutor(schedule, rank, modules, nn.functional.mse_loss, timeout_s=30)
    else:
        stepper = PostValidatedOptimizer(
            optimizer, rank, world, max_norm=job["max_norm"], rollback=config["rollback"]
        )
        executor = PipelineExecutor(
            schedule, rank, modules, nn.functional.mse_loss, timeout_s=30, post_validation=stepper
        )
    losses = []
    for iteration in range(job["iters"]):
        stepper.zero_grad()
        xs, ys = batch(iteration, schedule.microbatches, job["bursts"])
        losses.append([float(v) for v in executor.step(xs, ys)])
        if job["inject"].get(iteration) == rank:
            params[0].grad.view(-1)[0] = float("inf")
        stepper.step()
        scheduler.step()
    stepper.finish()
    names = {id(p): f"{s}.{n}" for s, m in modules.items() for n, p in m.named_parameters()}
    state = {
        f"{names[id(p)]}:{k}": (v.clone() if isinstance(v, torch.Tensor) else torch.tensor(v))
        for p, st in optimizer.state.items()
        for k, v in st.items()
    }
    counts = stepper.counts
    return {
        "params": {names[id(p)]: p.detach().clone() for p in params},
        "state": state,
        "losses": losses,
        "counts": {
            "steps": counts.steps,
            "clipped": counts.clipped,
            "skipped": counts.skipped,
            "rollbacks": counts.rollbacks,
            "restarts": counts.restarts,
        },
        "executor_restarts": executor.restarts,
    }


def main() -> None:
    rank, world, port, job_path, out_dir = sys.argv[1:6]
    rank, world = int(rank), int(world)
    job = pickle.loads(Path(job_path).read_bytes())
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=60),
    )
    result: Dict[str, Any] = {}
    for name, config in job["configs"].items():
        result[name] = {mode: train(job, rank, config, mode) for mode in ("sync", "pv")}
    path = Path(out_dir) / f"rank{rank}.pt"
    torch.save(result, str(path) + ".tmp")
    os.replace(str(path) + ".tmp", path)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

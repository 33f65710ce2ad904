# SPDX-License-Identifier: Apache-2.0
"""A pipeline inside data parallelism, as users write it: PP2 x DP2 on 4 ranks (gloo, CPU), a
(dp, pp) device mesh, each stage wrapped in DDP (`--wrap ddp`) or FSDP2's `fully_shard`
(`--wrap fsdp`) over its data-parallel group, torch's Schedule1F1B over its pipeline group. The two
replicas train on different data, so their parameters stay equal only when the gradients are
really reduced. Nothing in here knows about zbkit.

    torchrun --nproc-per-node 4 pp_dp_job.py --wrap ddp --dump /tmp/params

`--dump PREFIX` writes PREFIX.rank<R>.pt: {"pp": p, "dp": d, "losses": [...], "params": {...}}.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, schedules

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)
from gpt_model import Gpt, GptConfig, lm_loss, split_stages, synthetic_batch  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wrap", choices=("ddp", "fsdp", "none"), default="ddp")
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--dump", default="")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "pp"))
    pp, dp = mesh["pp"].get_local_rank(), mesh["dp"].get_local_rank()
    config = GptConfig(vocab=64, seq=16, dim=32, heads=2, layers=4)
    model = Gpt(config, seed=0)
    piece = split_stages(model, 2)[pp]
    parameters = list(piece.parameters())
    names = {id(p): name for name, p in model.named_parameters()}
    param_names = [names[id(p)] for p in parameters]
    if args.wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel  # noqa: PLC0415

        module = DistributedDataParallel(piece, process_group=mesh["dp"].get_group())
    elif args.wrap == "fsdp":
        from torch.distributed.fsdp import fully_shard  # noqa: PLC0415

        module = fully_shard(piece, mesh=mesh["dp"])
    else:
        module = piece
    stage = PipelineStage(module, pp, 2, torch.device("cpu"), group=mesh["pp"].get_group())
    schedule = schedules.Schedule1F1B(stage, n_microbatches=args.microbatches, loss_fn=lm_loss)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    losses = []
    for iteration in range(args.iters):
        # Each replica its own data: seed by the data-parallel rank.
        tokens, targets = synthetic_batch(config, args.batch, iteration, seed=1 + dp)
        optimizer.zero_grad(set_to_none=True)
        if pp == 0:
            schedule.step(tokens)
        else:
            parts = []
            schedule.step(target=targets, losses=parts)
            losses.append(torch.stack([part.detach() for part in parts]).mean().item())
            print(f"rank {dist.get_rank()} iter {iteration} loss {losses[-1]:.6f}", flush=True)
        optimizer.step()
    if args.dump:
        full = [p.full_tensor() if hasattr(p, "full_tensor") else p for p in module.parameters()]
        params = {name: p.detach().clone() for name, p in zip(param_names, full)}
        torch.save(
            {"pp": pp, "dp": dp, "losses": losses, "params": params},
            f"{args.dump}.rank{dist.get_rank()}.pt",
        )
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

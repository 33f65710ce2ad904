# SPDX-License-Identifier: Apache-2.0
"""A plain torch.distributed.pipelining training job: the bundled GPT (gpt_model.py) on P ranks.

Nothing in here knows about zbkit; it is the kind of script zbkit must run unmodified. Run with

    OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 train_pipelining.py --schedule ZBVZeroBubble

Each rank builds the whole model from the seed, cuts it into stages and keeps its own: one stage
per rank for 1F1B, `--stages-per-rank` (default 2) in loop placement (stage s on rank s % P) for
Interleaved1F1B and InterleavedZeroBubble, two stages in V placement (rank r holds r and 2P-1-r)
for ZBVZeroBubble and DualPipeV. Every iteration prints its time and, on the rank with the last
stage, the mean microbatch loss; the last line of every rank is one JSON object with the median
iteration time after `--warmup` iterations (and those times themselves, `iter_s`), which
`--summary-out PATH` also writes to PATH with `{rank}` replaced by the rank. `--dump PREFIX` writes PREFIX.rank<R>.pt
with the losses, the rank's final parameters (named as in the whole model) for comparisons and
how often each of its blocks ran forward after the first iteration (`forward_calls`: a
checkpointed block's recomputations included; the first iteration also runs torch's one-time
shape inference). `--ac` checkpoints the blocks' activations (gpt_model.CHECKPOINTING).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, schedules

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_model import (  # noqa: E402
    CHECKPOINTING,
    Gpt,
    GptConfig,
    add_job_arguments,
    checkpoint_blocks,
    count_forwards,
    init_distributed,
    lm_loss,
    split_stages,
    synthetic_batch,
)

SCHEDULES = {
    # name: (class, placement, stages per rank or None for --stages-per-rank)
    "1F1B": (schedules.Schedule1F1B, "loop", 1),
    "Interleaved1F1B": (schedules.ScheduleInterleaved1F1B, "loop", None),
    "InterleavedZeroBubble": (schedules.ScheduleInterleavedZeroBubble, "loop", None),
    "ZBVZeroBubble": (schedules.ScheduleZBVZeroBubble, "v", 2),
    "DualPipeV": (schedules.ScheduleDualPipeV, "v", 2),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedule", choices=sorted(SCHEDULES), default="1F1B")
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--stages-per-rank", type=int, default=2, help="for the interleaved ones")
    parser.add_argument(
        "--ac", choices=CHECKPOINTING, default="none", help="activation checkpointing of the blocks"
    )
    add_job_arguments(parser)
    return parser.parse_args(argv)


def local_stage_ids(placement: str, ranks: int, rank: int, per_rank: int):
    if placement == "v":
        return [rank, 2 * ranks - 1 - rank]
    return [rank + chunk * ranks for chunk in range(per_rank)]


def main(argv=None) -> int:
    args = parse_args(argv)
    rank, ranks, device = init_distributed(args.pg_timeout_s)

    schedule_class, placement, per_rank = SCHEDULES[args.schedule]
    per_rank = per_rank or args.stages_per_rank
    num_stages = ranks * per_rank
    config = GptConfig(
        vocab=args.vocab, seq=args.seq, dim=args.dim, heads=args.heads, layers=args.layers
    )
    model = Gpt(config, seed=args.seed)
    pieces = split_stages(model, num_stages)
    mine = local_stage_ids(placement, ranks, rank, per_rank)
    forward_calls = count_forwards(model)
    checkpoint_blocks([pieces[s] for s in mine], args.ac)
    stages = [
        PipelineStage(pieces[s].to(device), s, num_stages, device, group=dist.group.WORLD)
        for s in mine
    ]
    if per_rank == 1:
        schedule = schedule_class(stages[0], n_microbatches=args.microbatches, loss_fn=lm_loss)
    else:
        schedule = schedule_class(stages, n_microbatches=args.microbatches, loss_fn=lm_loss)

    parameters = [p for s in mine for p in pieces[s].parameters()]
    optimizer = torch.optim.SGD(parameters, lr=args.lr)
    has_first, has_last = 0 in mine, num_stages - 1 in mine
    times, losses = [], []
    for iteration in range(args.iters):
        tokens, targets = synthetic_batch(config, args.batch, iteration, seed=args.seed)
        tokens, targets = tokens.to(device), targets.to(device)
        optimizer.zero_grad(set_to_none=True)
        start = time.perf_counter()
        microbatch_losses = [] if has_last else None
        step_args = (tokens,) if has_first else ()
        step_kwargs = {"target": targets, "losses": microbatch_losses} if has_last else {}
        schedule.step(*step_args, **step_kwargs)
        optimizer.step()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        line = f"rank {rank} iter {iteration} time_s {elapsed:.4f}"
        if has_last:
            loss = torch.stack([part.detach() for part in microbatch_losses]).mean().item()
            losses.append(loss)
            line += f" loss {loss:.6f}"
        # One write per line: the ranks share the terminal (or pipe) and must not interleave.
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if iteration == 0:  # the first step also runs the stages' one-time shape inference
            after_first = dict(forward_calls)

    if args.dump:
        names = {id(p): name for name, p in model.named_parameters()}
        params = {names[id(p)]: p.detach().cpu().clone() for p in parameters}
        calls = {name: n - after_first[name] for name, n in forward_calls.items() if n}
        dump = {"rank": rank, "losses": losses, "params": params, "forward_calls": calls}
        torch.save(dump, f"{args.dump}.rank{rank}.pt")
    measured = times[args.warmup :] or times
    summary = {
        "format": "zb-job-summary/1",  # docs/formats.md §3.1, read by zbkit_harness.torchrun_jobs.read_summary
        "rank": rank,
        "schedule": args.schedule,
        "class": type(schedule).__name__,
        "ranks": ranks,
        "stages": num_stages,
        "microbatches": args.microbatches,
        "iters": len(measured),
        "median_iter_s": statistics.median(measured),
        "iter_s": measured,
    }
    sys.stdout.write(json.dumps(summary) + "\n")
    sys.stdout.flush()
    if args.summary_out:
        # str.replace, not format: a path may hold other braces.
        path = args.summary_out.replace("{rank}", str(rank))
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as handle:
            handle.write(json.dumps(summary) + "\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

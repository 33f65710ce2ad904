# SPDX-License-Identifier: Apache-2.0
"""The bundled GPT job (gpt_model.py) on P ranks, driven by zbkit's PipelineExecutor.

The same job as train_pipelining.py (same model, data, optimizer and output), but the pipeline
order is a zbkit schedule replayed by `zbkit.executor.PipelineExecutor` with a real B/W split,
instead of one of torch.distributed.pipelining's schedule classes. Make a schedule, then run:

    zb tune --costs costs.json -m 8 --mem-limit 2x --family zb-h1 --store zbkit.db -o zb-h1.json
    OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 train_zbkit.py --schedule-file zb-h1.json
    # or from the store, recording every op and storing the run (rank 0 prints its id):
    OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 train_zbkit.py \
        --store zbkit.db --schedule-id 1 --record-dir shards

Each rank builds the whole model from the seed, cuts it into the schedule's number of stages
(`split_stages`) and keeps the stages the schedule puts on it (`schedule.stages[rank]`: loop or V
placement). Every iteration prints `rank R iter I time_s T` (plus `loss L` on the rank with the
last stage); the last line of every rank is one JSON summary: median iteration time after
`--warmup`, the iteration times themselves and the peak activation bytes of the rank's stages.
`--dump PREFIX` writes PREFIX.rank<R>.pt (losses and the rank's final parameters, named as in the
whole model, and the optimizer state): reference.py trains the same model in one process and must
end with them.

The optimizer step (`--optimizer`, `--clip-norm`, `--optimizer-step`): `plain` steps each rank's
optimizer on its own (no clipping, no Inf/NaN check: nothing global); `sync` clips the global
gradient norm and skips Inf/NaN steps after one all-reduce barrier over the pipeline
(zbkit.post_validation.SynchronousGradientStep); `post-validation` does the same without the
barrier (PostValidatedOptimizer: partial reduction, speculative step, validated during the next
iteration's warm-up, rolled back and redone when wrong). `--inject-inf ITER:RANK,...` puts an Inf in
one gradient of RANK at iteration ITER, to see the step skipped. The summary then also has the
per-iteration time spent waiting on the other ranks for the step (`barrier_s`) and the counts of
clipped, skipped and rolled-back steps and restarted iterations.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # the zbkit package (adapters/pytorch), uninstalled
from gpt_model import (  # noqa: E402
    Gpt,
    GptConfig,
    add_job_arguments,
    init_distributed,
    lm_loss,
    split_stages,
    synthetic_batch,
)

from zbkit import libzbrt  # noqa: E402
from zbkit.executor import PipelineExecutor  # noqa: E402
from zbkit.post_validation import (  # noqa: E402
    ROLLBACKS,
    PostValidatedOptimizer,
    SynchronousGradientStep,
)

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
STEPS = ("plain", "sync", "post-validation")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--schedule-file", metavar="FILE", help="zb-schedule/1 (zb tune --out)")
    source.add_argument("--store", metavar="DB", help="zbkit store; with --schedule-id")
    parser.add_argument("--schedule-id", type=int, metavar="N", help="schedule id in --store")
    parser.add_argument(
        "--microbatches", type=int, default=None,
        help="must equal the schedule's (default: the schedule's)",
    )  # fmt: skip
    add_job_arguments(parser)
    parser.add_argument("--timeout-s", type=float, default=300, help="per receive, see executor")
    parser.add_argument("--record-dir", metavar="D", help="record ops into D/rank<R>.zbshard")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd", help="momentum: 0.9")
    parser.add_argument("--optimizer-step", choices=STEPS, default="plain", help="see above")
    parser.add_argument("--clip-norm", type=float, metavar="X", help="clip the global grad norm")
    parser.add_argument("--rollback", choices=ROLLBACKS, default="snapshot")
    parser.add_argument("--inject-inf", metavar="ITER:RANK,...", default="", type=parse_injections)
    args = parser.parse_args(argv)
    if args.optimizer_step == "plain" and (args.clip_norm is not None or args.inject_inf):
        parser.error("--clip-norm and --inject-inf need --optimizer-step sync or post-validation")
    if args.store is not None and args.schedule_id is None:
        parser.error("--store needs --schedule-id")
    if args.schedule_id is not None and args.store is None:
        parser.error("--schedule-id needs --store")
    return args


def parse_injections(text: str):
    """ "3:1,7:0" -> {3: 1, 7: 0}: iteration -> rank whose gradient gets an Inf."""
    injections = {}
    for item in filter(None, text.split(",")):
        try:
            iteration, rank = (int(v) for v in item.split(":"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not ITER:RANK") from None
        injections[iteration] = rank
    return injections


def make_optimizer(args, parameters):
    if args.optimizer in ("sgd", "momentum"):
        momentum = 0.9 if args.optimizer == "momentum" else 0.0
        return torch.optim.SGD(parameters, lr=args.lr, momentum=momentum)
    if args.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=args.lr)
    return torch.optim.AdamW(parameters, lr=args.lr)


def make_stepper(args, optimizer, rank: int, ranks: int):
    """The object whose step() ends an iteration: the optimizer itself, or a global step."""
    if args.optimizer_step == "sync":
        return SynchronousGradientStep(
            optimizer, rank, ranks, max_norm=args.clip_norm, timeout_s=args.timeout_s
        )
    if args.optimizer_step == "post-validation":
        return PostValidatedOptimizer(
            optimizer,
            rank,
            ranks,
            max_norm=args.clip_norm,
            rollback=args.rollback,
            timeout_s=args.timeout_s,
        )
    return optimizer


def load_schedule(args):
    """The schedule through zbkit.libzbrt (libzbrt), so that a Recorder can record it."""
    if args.schedule_file:
        return libzbrt.load_schedule(args.schedule_file)
    return libzbrt.load_schedule_from_store(args.store, args.schedule_id)


def check_fits(args, schedule, ranks: int) -> None:
    m = schedule.microbatches
    problems = []
    if schedule.ranks != ranks:
        problems.append(f"the schedule is for {schedule.ranks} ranks, torchrun started {ranks}")
    if args.microbatches is not None and args.microbatches != m:
        problems.append(f"--microbatches {args.microbatches}, the schedule has {m}")
    if args.batch % m:
        problems.append(f"--batch {args.batch} is not divisible by the schedule's {m} microbatches")
    if problems:
        raise SystemExit(f"train_zbkit: {'; '.join(problems)}")


class ActivationPeak:
    """A recorder for PipelineExecutor: keeps the peak of its `memory(bytes)` samples and passes
    every call on to an optional zbkit.libzbrt.Recorder.

    The executor calls memory() after each op with the bytes its B/W splits hold for this rank's
    stages: the storages autograd saved in each pending F (parameters excluded, each storage once;
    SplitStats.saved_bytes), and between B and W what W still needs (retained saved tensors plus
    the output gradients B captured; SplitStats.w_bytes). That is the definition of "bytes of
    tensors autograd saved, parameters excluded" a saved_tensors_hooks profile of a torch schedule
    measures, so peaks are comparable. memory_stats has the same figures per (stage, microbatch)
    after a step, but only the live sum over microbatches gives the peak, hence the callback."""

    def __init__(self, inner=None):
        self.inner = inner
        self.peak = 0

    def begin(self, op_index: int) -> None:
        if self.inner is not None:
            self.inner.begin(op_index)

    def end(self, op_index: int) -> None:
        if self.inner is not None:
            self.inner.end(op_index)

    def memory(self, nbytes: int) -> None:
        self.peak = max(self.peak, nbytes)
        if self.inner is not None:
            self.inner.memory(nbytes)


def build_stages(args, schedule, rank: int, device):
    """The whole model from the seed, cut into the schedule's stages; this rank's stages."""
    config = GptConfig(
        vocab=args.vocab, seq=args.seq, dim=args.dim, heads=args.heads, layers=args.layers
    )
    model = Gpt(config, seed=args.seed)
    pieces = split_stages(model, schedule.num_stages)
    modules = {s: pieces[s].to(device) for s in schedule.stages[rank]}
    return config, model, modules


def train(args, schedule, rank, config, modules, device, recorder):
    """Runs the iterations; returns (iteration times, mean losses (empty without the last
    stage), the optimizer, the stepper, per iteration the time spent waiting for the step)."""
    parameters = [p for module in modules.values() for p in module.parameters()]
    optimizer = make_optimizer(args, parameters)
    stepper = make_stepper(args, optimizer, rank, schedule.ranks)
    executor = PipelineExecutor(
        schedule,
        rank,
        modules,
        lm_loss,
        recorder=recorder,
        timeout_s=args.timeout_s,
        post_validation=stepper if isinstance(stepper, PostValidatedOptimizer) else None,
    )
    m = schedule.microbatches
    times, losses = [], []
    waited = getattr(stepper, "waited_s", None)
    barrier_s = []  # per iteration: the time inside it spent waiting on other ranks for the step
    for iteration in range(args.iters):
        tokens, targets = synthetic_batch(config, args.batch, iteration, seed=args.seed)
        stepper.zero_grad(set_to_none=True)
        waited_before = waited() if waited else 0.0
        start = time.perf_counter()
        if recorder.inner is not None:
            recorder.inner.iteration_begin(iteration)
        # The executor scales each microbatch loss by 1/m (its default loss_scale), like torch's
        # scale_grads: the gradients are those of the mean loss over the whole batch.
        microbatch_losses = executor.step(tokens.chunk(m), targets.chunk(m))
        if recorder.inner is not None:
            recorder.inner.iteration_end()
        if args.inject_inf.get(iteration) == rank:
            parameters[0].grad.view(-1)[0] = float("inf")
        stepper.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        if waited:
            # Inside the iteration's window: a post-validated step's wait falls in the next one.
            barrier_s.append(waited() - waited_before)
        line = f"rank {rank} iter {iteration} time_s {elapsed:.4f}"
        if microbatch_losses:
            loss = torch.stack(microbatch_losses).mean().item()
            losses.append(loss)
            line += f" loss {loss:.6f}"
        # One write per line: the ranks share the terminal (or pipe) and must not interleave.
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    if stepper is not optimizer:
        stepper.finish()  # validates the last step
    return times, losses, optimizer, stepper, barrier_s


def dump(prefix: str, rank: int, model, modules, losses, optimizer) -> None:
    names = {id(p): name for name, p in model.named_parameters()}
    params = {
        names[id(p)]: p.detach().cpu().clone()
        for module in modules.values()
        for p in module.parameters()
    }
    state = {
        f"{names[id(p)]}:{key}": torch.as_tensor(value).detach().cpu().clone()
        for p, per_param in optimizer.state.items()
        for key, value in per_param.items()
        if value is not None
    }
    torch.save(
        {"rank": rank, "losses": losses, "params": params, "optimizer_state": state},
        f"{prefix}.rank{rank}.pt",
    )


def open_recorder(args, schedule, rank: int):
    if not args.record_dir:
        return None
    os.makedirs(args.record_dir, exist_ok=True)
    return libzbrt.Recorder(schedule, rank, os.path.join(args.record_dir, f"rank{rank}.zbshard"))


def merge(args, rank: int):
    """Once every rank has written its shard, rank 0 stores them as one replay run."""
    dist.barrier()
    if rank != 0 or not args.store:
        return None
    command = shlex.join([os.path.basename(sys.executable), *sys.argv])
    return libzbrt.record_run(args.store, args.schedule_id, args.record_dir, command)


def main(argv=None) -> int:
    args = parse_args(argv)
    rank, ranks, device = init_distributed(args.pg_timeout_s)

    schedule = load_schedule(args)
    check_fits(args, schedule, ranks)
    config, model, modules = build_stages(args, schedule, rank, device)
    recorder = ActivationPeak(open_recorder(args, schedule, rank))
    try:
        times, losses, optimizer, stepper, barrier_s = train(
            args, schedule, rank, config, modules, device, recorder
        )
    finally:
        if recorder.inner is not None:
            recorder.inner.close()  # writes D/rank<R>.zbshard
    if args.dump:
        dump(args.dump, rank, model, modules, losses, optimizer)
    run_id = merge(args, rank) if args.record_dir else None

    measured = times[args.warmup :] or times
    summary = {
        "format": "zb-job-summary/1",  # docs/formats.md §3.1, read by zbkit_harness.torchrun_jobs.read_summary
        "rank": rank,
        "schedule": schedule.family,
        "class": PipelineExecutor.__name__,
        "ranks": ranks,
        "stages": schedule.num_stages,
        "microbatches": schedule.microbatches,
        "iters": len(measured),
        "median_iter_s": statistics.median(measured),
        "iter_s": measured,
        "peak_activation_bytes": recorder.peak,
        "optimizer": args.optimizer,
        "optimizer_step": args.optimizer_step,
    }
    if stepper is not optimizer:
        counts = stepper.counts
        summary["barrier_s"] = barrier_s[args.warmup :] or barrier_s
        summary["grad_norms"] = [n if math.isfinite(n) else None for n in counts.norms]
        summary.update(
            clipped=counts.clipped,
            skipped=counts.skipped,
            rollbacks=counts.rollbacks,
            restarts=counts.restarts,
        )
    if run_id is not None:
        summary["run_id"] = run_id
    if args.summary_out:
        with open(args.summary_out.replace("{rank}", str(rank)), "w") as out:
            json.dump(summary, out)
    sys.stdout.write(json.dumps(summary) + "\n")
    sys.stdout.flush()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

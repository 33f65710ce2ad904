#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small PyTorch job on CUDA for scripts/gpu-check.sh.

Each worker (one pipeline stage per GPU; one worker when the machine has one GPU) runs a stack of
bf16 Linear layers and, per step and microbatch, the zero-bubble split of the ZB Megatron fork:
F (forward), B (input gradient only) and W (weight gradient), inside the fork's NVTX names
(`iter_{rank}_{step}` around `F{mb}.0.0`, `B{mb}.0.0`, `W{mb}.0.0`) through torch.cuda.nvtx. It
times every phase with CUDA events recorded around it on the stream, and every step with a
device synchronize, and writes them as JSON to OUT.rank<R>.json. It prints nothing on stdout.

  gpu_check_job.py --out PREFIX [--steps 30] [--microbatches 4] [--hidden 4096]
                   [--tokens 8192] [--layers 6] [--workers N]

With --workers N > 1 and no RANK in the environment it launches N copies of itself with RANK,
LOCAL_RANK and WORLD_SIZE set (like torchrun) and waits; worker r uses cuda:r and has
layers + 2r layers, so that the stages differ.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON output prefix: PREFIX.rank<R>.json")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--microbatches", type=int, default=4)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--tokens", type=int, default=8192, help="rows of a microbatch")
    p.add_argument("--layers", type=int, default=6, help="layers of stage 0")
    p.add_argument("--workers", type=int, default=1)
    return p.parse_args()


def launch(args):
    procs = []
    for r in range(args.workers):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.workers))
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    codes = [p.wait() for p in procs]
    return 0 if all(c == 0 for c in codes) else 1


def worker(args, rank):
    import torch

    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    torch.manual_seed(rank)
    layers = args.layers + 2 * rank
    weights = [
        (
            torch.randn(args.hidden, args.hidden, device=device, dtype=torch.bfloat16) * 0.01
        ).requires_grad_()
        for _ in range(layers)
    ]
    inputs = [
        torch.randn(args.tokens, args.hidden, device=device, dtype=torch.bfloat16)
        for _ in range(args.microbatches)
    ]
    nvtx = torch.cuda.nvtx
    stream = torch.cuda.current_stream()
    phases = {"F": [], "B": [], "W": []}
    step_times = []

    def forward(x):
        for w in weights:
            x = torch.relu(x @ w)
        return x

    for step in range(args.steps):
        torch.cuda.synchronize()
        started = time.perf_counter()
        events = []  # (phase, start event, end event)
        nvtx.range_push(f"iter_{rank}_{step}")
        saved = []
        for mb in range(args.microbatches):
            x = inputs[mb].detach().requires_grad_()
            nvtx.range_push(f"F{mb}.0.0")
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record(stream)
            loss = forward(x).float().pow(2).mean()
            end.record(stream)
            nvtx.range_pop()
            events.append(("F", begin, end))
            saved.append((x, loss))
        for mb, (x, loss) in enumerate(saved):
            # B: the input gradient only (what the next stage down waits for)...
            nvtx.range_push(f"B{mb}.0.0")
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record(stream)
            (grad_x,) = torch.autograd.grad(loss, [x], retain_graph=True)
            end.record(stream)
            nvtx.range_pop()
            events.append(("B", begin, end))
            # ...W: the weight gradients, deferred (zero-bubble's split).
            nvtx.range_push(f"W{mb}.0.0")
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record(stream)
            grads = torch.autograd.grad(loss, weights)
            end.record(stream)
            nvtx.range_pop()
            events.append(("W", begin, end))
            del grad_x, grads
        nvtx.range_pop()
        torch.cuda.synchronize()
        step_times.append(time.perf_counter() - started)
        for phase, begin, end in events:
            phases[phase].append(begin.elapsed_time(end))  # ms

    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(
            {
                "format": "zbkit-gpu-check-job/1",
                "rank": rank,
                "device": torch.cuda.get_device_name(device),
                "layers": layers,
                "microbatches": args.microbatches,
                "step_times_s": step_times,
                "phase_ms": phases,
            },
            f,
        )
    return 0


def main():
    args = parse_args()
    rank = os.environ.get("RANK")
    if rank is None and args.workers > 1:
        return launch(args)
    return worker(args, int(rank or 0))


if __name__ == "__main__":
    sys.exit(main())

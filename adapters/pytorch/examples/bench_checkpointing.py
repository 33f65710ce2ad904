# SPDX-License-Identifier: Apache-2.0
"""What activation checkpointing costs and saves per block, and what torch's own split pays for it:
one block of the bundled GPT measured as `zb profile` measures blocks (zbkit.pipelining.measure.
blocks: F, B and W of the recompute-once split, M_B, M_W), with no checkpointing, full and per-op
selective; and the same block's B and W as torch's split runs them alone (`stage_backward_input`,
`stage_backward_weight`: W recomputes the block again per parameter group; SAC fails there),
with the forward calls each makes. The modes alternate within each round, so the machine's drift
favours none. docs/activation-checkpointing.md §4 quotes its output.

    OMP_NUM_THREADS=1 python bench_checkpointing.py [--dim 256 --seq 128 --batch 4 --rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpt_model import Gpt, GptConfig, checkpoint_blocks, count_forwards, split_stages  # noqa: E402

from zbkit.pipelining.measure import blocks  # noqa: E402

MODES = ("none", "full", "sac")


def block_of(mode: str, args):
    model = Gpt(GptConfig(vocab=64, seq=args.seq, dim=args.dim, heads=4, layers=2), seed=0)
    calls = count_forwards(model)
    stage = split_stages(model, 2)[1]
    checkpoint_blocks([stage], mode)
    return stage.blocks[0], calls


def torch_split_ms(block, x) -> tuple:
    """(B ms, W ms) of torch's own split of one forward of `block`, or the error W raised."""
    from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight

    h = x.detach().requires_grad_()
    out = block(h)
    params = [p for p in block.parameters() if p.requires_grad]
    start = time.perf_counter()
    _, groups = stage_backward_input([out], [torch.ones_like(out)], [h], iter(params))
    b = time.perf_counter() - start
    start = time.perf_counter()
    try:
        stage_backward_weight(iter(params), groups)
    except RuntimeError as error:
        return b * 1e3, str(error).strip().splitlines()[0][:60]
    finally:
        for p in params:
            p.grad = None
    return b * 1e3, (time.perf_counter() - start) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.batch, args.seq, args.dim, requires_grad=True)
    built = {mode: block_of(mode, args) for mode in MODES}
    zbkit = {mode: [] for mode in MODES}
    torch_alone = {mode: [] for mode in MODES}
    calls = {}
    for round_index in range(args.rounds):
        order = MODES if round_index % 2 == 0 else MODES[::-1]
        for mode in order:
            block, counter = built[mode]
            zbkit[mode].append(blocks.measure_block(block, ((x,), {}), repeats=1))
            before = counter["blocks.1"]
            torch_alone[mode].append(torch_split_ms(block, x))
            calls[mode] = counter["blocks.1"] - before
    print(f"one GPT block, dim {args.dim}, seq {args.seq}, batch {args.batch}; medians of "
          f"{args.rounds} rounds, modes alternating (ms, MiB)")  # fmt: skip
    print(f"{'mode':6} {'F':>7} {'B':>7} {'W':>7} {'M_B':>7} {'M_W':>7}   torch alone: "
          f"{'B':>7} {'W':>7} forward calls")  # fmt: skip
    for mode in MODES:
        row = {k: statistics.median(m[k] for m in zbkit[mode]) for k in ("F", "B", "W")}
        mem = {k: zbkit[mode][0][k] / 2**20 for k in ("M_B", "M_W")}
        tb = statistics.median(b for b, _ in torch_alone[mode])
        ws = [w for _, w in torch_alone[mode]]
        tw = f"{statistics.median(ws):7.2f}" if all(isinstance(w, float) for w in ws) else ws[0]
        print(f"{mode:6} {row['F']:7.2f} {row['B']:7.2f} {row['W']:7.2f} {mem['M_B']:7.2f} "
              f"{mem['M_W']:7.2f}   torch alone: {tb:7.2f} {tw:>7} {calls[mode]}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

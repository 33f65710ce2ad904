# SPDX-License-Identifier: Apache-2.0
"""The bundled job without a pipeline: the whole GPT in one process, same data, same optimizer.

Every correct pipeline schedule computes the same gradients (up to floating-point summation
order), so a pipelined run of train_pipelining.py must end with these parameters and print these
losses. `python reference.py [the model flags of train_pipelining.py]` prints one loss per line.

`python reference.py --compare PREFIX [--compare-out FILE] [flags]` checks instead the dumps
PREFIX.rank<R>.pt that a pipelined run wrote with `--dump PREFIX` (train_pipelining.py or
train_zbkit.py, same flags): every parameter of the model present once and close to the
reference's (rtol 1e-4, atol 1e-5: the summation order differs), the losses within 1e-5, and
prints (or writes to FILE) one JSON line {"equal": ..., "max_abs_diff": ..., "problem": ...}.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from typing import Dict, List, Tuple

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_model import Gpt, GptConfig, lm_loss, synthetic_batch  # noqa: E402
from train_pipelining import parse_args  # noqa: E402


def train_reference(argv=None) -> Tuple[List[float], Dict[str, torch.Tensor]]:
    """Losses per iteration and the final parameters, by name, for train_pipelining's flags."""
    args = parse_args(argv)
    config = GptConfig(
        vocab=args.vocab, seq=args.seq, dim=args.dim, heads=args.heads, layers=args.layers
    )
    model = Gpt(config, seed=args.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    losses = []
    for iteration in range(args.iters):
        tokens, targets = synthetic_batch(config, args.batch, iteration, seed=args.seed)
        optimizer.zero_grad(set_to_none=True)
        loss = lm_loss(model(tokens), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, {name: p.detach().clone() for name, p in model.named_parameters()}


def compare_dumps(prefix: str, argv=None) -> dict:
    """The verdict on PREFIX.rank*.pt against train_reference(argv)."""
    ref_losses, ref_params = train_reference(argv)
    paths = sorted(glob.glob(f"{glob.escape(prefix)}.rank*.pt"))
    if not paths:
        return {"equal": False, "max_abs_diff": None, "problem": f"no {prefix}.rank*.pt"}
    seen, losses, worst, problem = set(), None, 0.0, None
    for path in paths:
        dump = torch.load(path)
        if dump["losses"]:
            losses = dump["losses"]
        for name, value in dump["params"].items():
            if name in seen or name not in ref_params:
                problem = problem or f"{path}: parameter {name} twice or unknown"
                continue
            seen.add(name)
            reference = ref_params[name]
            worst = max(worst, (value - reference).abs().max().item())
            if not torch.allclose(value, reference, rtol=1e-4, atol=1e-5):
                problem = problem or f"{path}: parameter {name} differs"
    if seen != set(ref_params):
        problem = problem or f"{len(set(ref_params) - seen)} parameters missing from the dumps"
    if losses is None or len(losses) != len(ref_losses):
        problem = problem or "the losses are missing or of another length"
    elif any(abs(a - b) > 1e-5 * max(1.0, abs(b)) for a, b in zip(losses, ref_losses)):
        problem = problem or f"losses differ: {losses} vs {ref_losses}"
    return {"equal": problem is None, "max_abs_diff": worst, "problem": problem}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--compare", metavar="PREFIX")
    parser.add_argument("--compare-out", metavar="FILE")
    own, rest = parser.parse_known_args(argv)
    if own.compare is None:
        for value in train_reference(rest)[0]:
            print(f"{value:.6f}")
        return 0
    verdict = compare_dumps(own.compare, rest)
    line = json.dumps(verdict)
    if own.compare_out:
        with open(own.compare_out, "w") as handle:
            handle.write(line + "\n")
    print(line)
    return 0 if verdict["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())

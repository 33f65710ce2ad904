# SPDX-License-Identifier: Apache-2.0
"""The bundled job without a pipeline: the whole GPT in one process, same data, same optimizer.

Every correct pipeline schedule computes the same gradients (up to floating-point summation
order), so a pipelined run of train_pipelining.py must end with these parameters and print these
losses. `python reference.py [the model flags of train_pipelining.py]` prints one loss per line.
"""

from __future__ import annotations

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


if __name__ == "__main__":
    for value in train_reference()[0]:
        print(f"{value:.6f}")

# SPDX-License-Identifier: Apache-2.0
"""A small GPT-style language model for the bundled pipeline-parallel job, and its stage split.

The model: token + learned positional embedding, N pre-LN transformer blocks (causal multi-head
self-attention and a GELU MLP, each with a residual), a final LayerNorm and a linear LM head; the
loss is token-level cross-entropy (`lm_loss`, passed to the schedule as its loss_fn). Weights are
initialized from a seed only, so every rank that builds the model with the same config and seed
gets identical weights, and `split_stages` cuts that same model into consecutive stages, so a
single-process reference and a pipelined run start from the same parameters.

The attention is written out (no fused kernel) so that torch.distributed.pipelining can split its
backward into input- and weight-gradient parts: every op is a plain autograd op.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
from dataclasses import dataclass
from typing import List, Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class GptConfig:
    vocab: int = 256
    seq: int = 32
    dim: int = 64
    heads: int = 4
    layers: int = 4
    mlp_ratio: int = 4


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GptConfig):
        super().__init__()
        self.heads = config.heads
        self.qkv = nn.Linear(config.dim, 3 * config.dim)
        self.proj = nn.Linear(config.dim, config.dim)
        mask = torch.tril(torch.ones(config.seq, config.seq, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=-1)
        shape = (batch, seq, self.heads, dim // self.heads)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(dim // self.heads)
        scores = scores.masked_fill(~self.mask[:seq, :seq], float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, seq, dim))


class Block(nn.Module):
    def __init__(self, config: GptConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.dim)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.dim)
        self.mlp = nn.Sequential(
            nn.Linear(config.dim, config.mlp_ratio * config.dim),
            nn.GELU(),
            nn.Linear(config.mlp_ratio * config.dim, config.dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Embedding(nn.Module):
    def __init__(self, config: GptConfig):
        super().__init__()
        self.tokens = nn.Embedding(config.vocab, config.dim)
        self.positions = nn.Embedding(config.seq, config.dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return self.tokens(tokens) + self.positions(positions)


class Head(nn.Module):
    def __init__(self, config: GptConfig):
        super().__init__()
        self.ln = nn.LayerNorm(config.dim)
        self.out = nn.Linear(config.dim, config.vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.ln(x))


class Gpt(nn.Module):
    """The whole model as one module: the single-process reference."""

    def __init__(self, config: GptConfig, seed: int = 0):
        super().__init__()
        self.config = config
        # Build under a private generator state so that the weights depend on the seed only.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed = Embedding(config)
            self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
            self.head = Head(config)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class Stage(nn.Module):
    """Consecutive pieces of a Gpt: optionally the embedding, some blocks, optionally the head."""

    def __init__(self, embed, blocks: List[nn.Module], head):
        super().__init__()
        self.embed = embed
        self.blocks = nn.ModuleList(blocks)
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.embed is not None:
            x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        if self.head is not None:
            x = self.head(x)
        return x


def split_stages(model: Gpt, num_stages: int) -> List[Stage]:
    """Cuts `model` into `num_stages` consecutive stages (blocks spread as evenly as possible,
    earlier stages get the extra ones); the first holds the embedding, the last the head. The
    stages share the model's parameters (no copy)."""
    layers = len(model.blocks)
    if num_stages < 1 or num_stages > layers:
        raise ValueError(f"cannot cut {layers} blocks into {num_stages} stages (need 1..{layers})")
    stages = []
    start = 0
    for index in range(num_stages):
        count = layers // num_stages + (1 if index < layers % num_stages else 0)
        stages.append(
            Stage(
                model.embed if index == 0 else None,
                list(model.blocks[start : start + count]),
                model.head if index == num_stages - 1 else None,
            )
        )
        start += count
    return stages


# Activation checkpointing as users turn it on (--ac): every block, every second block, per-op
# selective (matmul outputs saved, the rest recomputed, as torchtitan's op-level SAC), or the
# reentrant checkpoint.
CHECKPOINTING = ("none", "full", "every2", "sac", "reentrant")


def _save_matmuls(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy  # noqa: PLC0415

    saved = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default)
    return CheckpointPolicy.MUST_SAVE if op in saved else CheckpointPolicy.PREFER_RECOMPUTE


def checkpoint_blocks(stages: List["Stage"], mode: str) -> None:
    """Wraps the stages' blocks in torch's checkpoint_wrapper as `mode` says (CHECKPOINTING); the
    wrapped block keeps its parameters (the same tensors)."""
    if mode == "none":
        return
    import functools  # noqa: PLC0415

    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (  # noqa: PLC0415
        CheckpointImpl,
        checkpoint_wrapper,
    )
    from torch.utils.checkpoint import create_selective_checkpoint_contexts  # noqa: PLC0415

    index = 0
    for stage in stages:
        for position, block in enumerate(stage.blocks):
            if mode == "full" or (mode == "every2" and index % 2 == 0):
                stage.blocks[position] = checkpoint_wrapper(block)
            elif mode == "sac":
                context = functools.partial(create_selective_checkpoint_contexts, _save_matmuls)
                stage.blocks[position] = checkpoint_wrapper(block, context_fn=context)
            elif mode == "reentrant":
                stage.blocks[position] = checkpoint_wrapper(
                    block, checkpoint_impl=CheckpointImpl.REENTRANT
                )
            index += 1


def count_forwards(model: "Gpt") -> dict:
    """{block name: forward calls so far}, counted by a pre-hook on each block (a checkpointed
    block's recomputation calls its forward again, so the count shows how often it ran)."""
    counts = {f"blocks.{i}": 0 for i in range(len(model.blocks))}

    def hook(name):
        def count(module, args):
            counts[name] += 1

        return count

    for i, block in enumerate(model.blocks):
        block.register_forward_pre_hook(hook(f"blocks.{i}"))
    return counts


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean token-level cross-entropy."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def synthetic_batch(config: GptConfig, batch: int, iteration: int, seed: int = 0):
    """Tokens and next-token targets of one iteration, from a generator seeded by (seed,
    iteration): every rank and the reference draw the same batch. The sequence follows a simple
    rule (each token is the previous plus a per-row step, mod vocab) so the loss can fall."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + iteration)
    start = torch.randint(0, config.vocab, (batch, 1), generator=generator)
    step = torch.randint(1, 8, (batch, 1), generator=generator)
    positions = torch.arange(config.seq + 1).unsqueeze(0)
    sequence = (start + step * positions) % config.vocab
    return sequence[:, :-1].contiguous(), sequence[:, 1:].contiguous()


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every version of the bundled job takes alike (model size, data, optimizer and
    output), so that the same flags give the same model and data under any driver."""
    parser.add_argument("--batch", type=int, default=16, help="samples per iteration")
    parser.add_argument("--iters", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=1, help="iterations left out of the median")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dump", metavar="PREFIX", help="write PREFIX.rank<R>.pt at the end")
    parser.add_argument(
        "--summary-out", metavar="PATH", help="also write the summary to PATH ({rank}: the rank)"
    )
    parser.add_argument(
        "--pg-timeout-s",
        type=float,
        help="process group timeout: how long a rank waits for a peer that stopped answering "
        "(default: torch's)",
    )


def init_distributed(timeout_s: Optional[float] = None):
    """Joins the job's process group (torchrun's env://): NCCL with one GPU per rank where CUDA
    is available, else gloo on CPU. `timeout_s` bounds every wait on a peer (None: torch's
    default). Returns (rank, world size, this rank's device)."""
    use_cuda = torch.cuda.is_available()
    timeout = {} if timeout_s is None else {"timeout": datetime.timedelta(seconds=timeout_s)}
    dist.init_process_group(backend="nccl" if use_cuda else "gloo", **timeout)
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    return dist.get_rank(), dist.get_world_size(), device

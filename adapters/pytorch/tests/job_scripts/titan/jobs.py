# SPDX-License-Identifier: Apache-2.0
"""The torchtitan command lines zbkit's tests and benchmark run on CPUs (through launch.py, with
the local assets of assets.py): 2 pipeline ranks of the llama3 debug model (or another flavor),
and a seed checkpoint that makes runs of different splits start from the same weights."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import List

LAUNCH = Path(__file__).resolve().parent / "launch.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def titan_command(out: Path, assets: List[str], *extra: str, flavor: str = "debugmodel",
                  batch: int = 8, microbatches: int = 4, steps: int = 4, seq: int = 32,
                  ranks: int = 2, fsdp: int = 1) -> List[str]:  # fmt: skip
    """torchrun of torchtitan's trainer: `flavor` of llama3 on `ranks` pipeline ranks, each
    pipeline `fsdp` times (FSDP2, `data_parallel_shard_degree`), `batch` samples of `seq` tokens
    per replica in `microbatches` microbatches, `steps` steps, fixed seed."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks * fsdp),
        "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(LAUNCH),
        "--model.name", "llama3", "--model.flavor", flavor, *assets,
        "--training.dataset", "c4_test", "--training.local_batch_size", str(batch),
        "--training.seq_len", str(seq), "--training.steps", str(steps),
        "--parallelism.pipeline_parallel_degree", str(ranks),
        "--parallelism.data_parallel_shard_degree", str(fsdp),
        "--parallelism.pipeline_parallel_microbatch_size", str(batch // microbatches),
        "--activation_checkpoint.mode", "none", "--debug.seed", "42", "--metrics.log_freq", "1",
        "--comm.init_timeout_seconds", "60", "--job.dump_folder", str(out), *extra,
    ]  # fmt: skip


def seed_checkpoint_command(out: Path, assets: List[str], flavor: str, seq: int = 32) -> List[str]:
    """One process, no parallelism: torchtitan writes the model's initial weights to
    out/checkpoint/step-0 (`--checkpoint.create_seed_checkpoint`)."""
    return titan_command(out, assets, "--checkpoint.enable", "--checkpoint.create_seed_checkpoint",
                         flavor=flavor, seq=seq, ranks=1)  # fmt: skip


def from_seed_checkpoint(out: Path) -> List[str]:
    """The flags that make a run start from seed_checkpoint_command's weights, saving nothing."""
    return ["--checkpoint.enable", "--checkpoint.load_only", "--checkpoint.initial_load_path",
            str(out / "checkpoint" / "step-0")]  # fmt: skip

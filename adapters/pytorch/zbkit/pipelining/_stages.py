# SPDX-License-Identifier: Apache-2.0
"""What the shim's features share about the script's pipeline: its local stages and its rank."""

from __future__ import annotations

import os


def local_stages(schedule) -> list:
    """The stages of this rank that `schedule` (any pipelining schedule object) runs."""
    stages = getattr(schedule, "_stages", None)
    return list(stages) if stages is not None else [schedule._stage]


def process_rank() -> int:
    """This process's rank: the process group's when it is up, else $RANK, else 0."""
    try:
        import torch.distributed as dist  # noqa: PLC0415

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except Exception:
        pass
    return int(os.environ.get("RANK", "0"))

# SPDX-License-Identifier: Apache-2.0
"""A 2-rank gloo job that hangs in a collective rank 1 never joins, with torch's flight recorder on
(TORCH_FR_BUFFER_SIZE), for `zb doctor --flight-recorder` (test_stalls.py).

    torchrun --nproc-per-node 2 fr_hang_job.py PREFIX

Both ranks all-reduce twice; rank 0 then all-reduces a third time, which rank 1 never joins. Each
rank dumps its flight recorder to PREFIX<rank> from a thread two seconds into the hang, as NCCL's
TORCH_NCCL_DUMP_ON_TIMEOUT does on a timeout (gloo has no such dump), then waits to be killed.
"""

from __future__ import annotations

import sys
import threading
import time

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _dump_fr_trace


def dump_later(path: str) -> None:
    def dump():
        time.sleep(2)
        data = _dump_fr_trace()
        with open(path + ".tmp", "wb") as handle:
            handle.write(data)
        import os

        os.replace(path + ".tmp", path)

    threading.Thread(target=dump, daemon=True).start()


def main() -> int:
    prefix = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    tensor = torch.ones(4)
    for _ in range(2):
        dist.all_reduce(tensor)
    dump_later(f"{prefix}{rank}")
    if rank == 0:
        dist.all_reduce(tensor)  # rank 1 never joins: hangs here
    time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes per-rank Chrome (Kineto-style) traces of a 32-rank pipeline with zbkit range names, for
the measured-style zbview picture of docs/usage.md (docs/zbview.md §6, §8, §9).

The traces are synthetic but go through the real path: `zb import DIR --format chrome --store DB`
attributes the kernels to the ranges, derives costs, and stores a measured timeline whose ops
keep their busy time, kernel count, range name and iteration; `zbview --screenshot` draws it.
Each op's kernels cover 55-90 % of its range (launch gaps, host work), so ops show as fill levels.

    python3 scripts/make_measured_demo.py OUT_DIR [--ranks 32] [--microbatches 64] [--iters 2]
"""

import argparse
import json
import os
import random


def schedule_1f1b(ranks, microbatches):
    """Per rank, the op order of 1F1B with W right after B: [(kind, microbatch), ...]."""
    orders = []
    for r in range(ranks):
        warmup = min(ranks - r - 1, microbatches)
        order = [("F", j) for j in range(warmup)]
        f, b = warmup, 0
        while b < microbatches:
            if f < microbatches:
                order.append(("F", f))
                f += 1
            order += [("B", b), ("W", b)]
            b += 1
        orders.append(order)
    return orders


def time_ops(orders, costs, hop, rng):
    """Start/end (us) of every op: after the rank's previous op and its dependency."""
    ranks = len(orders)
    done = {}
    position = [0] * ranks
    clock = [0.0] * ranks
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for r in range(ranks):
            while position[r] < len(orders[r]):
                kind, j = orders[r][position[r]]
                if kind == "F":
                    dep = done.get((r - 1, "F", j)) if r > 0 else 0.0
                elif kind == "B":
                    dep = done.get((r + 1, "B", j)) if r < ranks - 1 else done.get((r, "F", j))
                else:
                    dep = done.get((r, "B", j))
                if dep is None:
                    break
                start = max(clock[r], dep + (hop if kind != "W" and dep > 0 else 0))
                end = start + costs[kind] * rng.uniform(0.93, 1.12)
                done[(r, kind, j)] = end
                clock[r] = end
                yield r, kind, j, start, end
                position[r] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise RuntimeError("the order deadlocks")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--microbatches", type=int, default=64)
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)
    costs = {"F": 1000.0, "B": 1100.0, "W": 700.0}  # us
    events = [[] for _ in range(args.ranks)]
    correlation = 0
    offset = 0.0
    orders = schedule_1f1b(args.ranks, args.microbatches)
    for iteration in range(args.iters):
        ops = list(time_ops(orders, costs, 40.0, rng))
        end = max(op[4] for op in ops)
        for r in range(args.ranks):
            events[r].append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"zb:iter:{iteration}",
                    "pid": r,
                    "tid": 1,
                    "ts": offset,
                    "dur": end + 1,
                }
            )
        for r, kind, j, start, stop in ops:
            start += offset
            stop += offset
            events[r].append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"zb:{kind}:s{r}:mb{j}",
                    "pid": r,
                    "tid": 1,
                    "ts": start,
                    "dur": stop - start,
                }
            )
            # Three kernels covering 55-90 % of the range, launched from inside it.
            busy = (stop - start) * rng.uniform(0.55, 0.9)
            t = start + (stop - start - busy) * rng.uniform(0.1, 0.6)
            for k in range(3):
                correlation += 1
                length = busy / 3
                events[r].append(
                    {
                        "ph": "X",
                        "cat": "cuda_runtime",
                        "name": "cudaLaunchKernel",
                        "pid": r,
                        "tid": 1,
                        "ts": t - 5,
                        "dur": 2,
                        "args": {"correlation": correlation},
                    }
                )
                events[r].append(
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": f"gemm_{kind}_{k}",
                        "pid": 100 + r,
                        "tid": 7,
                        "ts": t,
                        "dur": length,
                        "args": {"correlation": correlation, "device": r, "stream": 7},
                    }
                )
                t += length
        offset += end + 500.0
    for r in range(args.ranks):
        path = os.path.join(args.out_dir, f"rank{r}.json")
        with open(path, "w") as out:
            json.dump(
                {
                    "distributedInfo": {"rank": r, "world_size": args.ranks},
                    "traceEvents": events[r],
                },
                out,
            )
    print(f"wrote {args.ranks} traces to {args.out_dir}")


if __name__ == "__main__":
    main()

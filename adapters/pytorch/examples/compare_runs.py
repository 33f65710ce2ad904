# SPDX-License-Identifier: Apache-2.0
"""Two runs of the same job must end in the same state: `python compare_runs.py A B [--out FILE]
[--rounding]` compares the dumps A.rank<R>.pt and B.rank<R>.pt that train_zbkit.py --dump wrote
(e.g. with --optimizer-step sync and post-validation): the same parameters, optimizer state and
losses, bit for bit; with --rounding (an in-place rollback), allclose with rtol 1e-6 and an
absolute tolerance of 1e-4 of each tensor's largest element (docs/post-validation.md). Prints (or
writes to FILE) one JSON line {"equal": ..., "max_rel_diff": ..., "problem": ...}; exit 0 when
equal, 1 when not."""

from __future__ import annotations

import argparse
import glob
import json
import sys

import torch

ROUNDING_ATOL = 1e-4  # of the tensor's largest element


def compare(a: str, b: str, rounding: bool) -> dict:
    paths = sorted(glob.glob(f"{glob.escape(a)}.rank*.pt"))
    if not paths:
        return {"equal": False, "max_rel_diff": None, "problem": f"no {a}.rank*.pt"}
    worst, problem = 0.0, None
    for path in paths:
        other = b + path[len(a) :]
        try:
            left, right = torch.load(path), torch.load(other)
        except (OSError, RuntimeError) as error:
            return {"equal": False, "max_rel_diff": None, "problem": f"{other}: {error}"}
        if left["losses"] != right["losses"] and not rounding:
            problem = problem or f"{other}: losses differ"
        for kind in ("params", "optimizer_state"):
            if set(left[kind]) != set(right[kind]):
                problem = problem or f"{other}: {kind} has other names"
                continue
            for name, x in left[kind].items():
                y = right[kind][name]
                scale = x.abs().max().item() if x.numel() else 0.0
                diff = (x.double() - y.double()).abs().max().item() if x.numel() else 0.0
                worst = max(worst, diff / scale if scale > 0 else diff)
                same = (
                    torch.allclose(x, y, rtol=1e-6, atol=ROUNDING_ATOL * scale)
                    if rounding
                    else torch.equal(x, y)
                )
                if not same:
                    problem = problem or f"{other}: {kind} {name} differs"
    return {"equal": problem is None, "max_rel_diff": worst, "problem": problem}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--out", metavar="FILE")
    parser.add_argument("--rounding", action="store_true")
    args = parser.parse_args(argv)
    verdict = compare(args.a, args.b, args.rounding)
    line = json.dumps(verdict)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(line + "\n")
    print(line)
    return 0 if verdict["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""Benchmark: the bundled GPT through train_zbkit.py with the all-reduce step and post-validated,
side by side, R rounds (each round runs both, in alternating order, so the machine's drift hits
both alike); prints per round the slowest rank's median iteration time and each rank's share of
its iteration spent waiting for the step, then the median of the rounds' paired drops.

    python bench_post_validation.py --schedule-file S.json [--rounds 5] [--dir D] [train_zbkit.py flags]

The same runs as `zb demo`'s post-validation rows (zbkit_harness.demo.post_validation_pair: AdamW, lr
1e-3, clipped at 1.0, snapshot rollback); extra flags go to train_zbkit.py (model size, --iters,
--warmup, --rollback in-place ...). Exit 1 when a run fails or the two runs end in different
states (compare_runs.py on the first round's dumps).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zbkit_harness.demo import bench_post_validation  # noqa: E402

if __name__ == "__main__":
    sys.exit(bench_post_validation())

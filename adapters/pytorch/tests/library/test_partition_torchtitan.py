# SPDX-License-Identifier: Apache-2.0
"""zb partition's `even` and `torchtitan` rows are the splits torchtitan itself builds: checked
against torchtitan's own generate_llm_fqn_per_model_part (0.2.2, installed by scripts/setup.sh),
so that the comparison zb partition prints is against what a torchtitan user really runs."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

if importlib.util.find_spec("torchtitan") is None:
    pytest.skip(
        "torchtitan is not installed (scripts/setup.sh installs the pinned 0.2.2)",
        allow_module_level=True,
    )

from launch import zb_partition  # noqa: E402
from torchtitan.distributed.pipeline_parallel import generate_llm_fqn_per_model_part  # noqa: E402


def _llm_layers(path, n_layers: int) -> None:
    """torchtitan's llama names; a head worth three blocks, an embedding worth a fifth of one."""

    def block(name, scale, state):
        return {
            "name": name,
            "F": scale,
            "B": scale * 1.1,
            "W": scale * 0.9,
            "M_B": 4 * scale,
            "M_W": scale,
            "state": state,
            "send": 1,
        }

    layers = [block("tok_embeddings", 0.2, 12)]
    layers += [block(f"layers.{i}", 1.0, 3) for i in range(n_layers)]
    layers += [block("norm", 0.05, 0.01), block("output", 3.0, 12)]
    path.write_text(json.dumps({"format": "zb-layers/1", "comm": 0.1, "layers": layers}))


@pytest.mark.parametrize(
    ("n_layers", "ranks", "layout"),
    [(8, 2, "loop:1"), (16, 4, "loop:1"), (16, 2, "loop:2"), (30, 4, "v"), (6, 2, "v")],
)
def test_even_and_torchtitan_rows_are_torchtitans_own_splits(tmp_path, n_layers, ranks, layout):
    _llm_layers(tmp_path / "layers.json", n_layers)
    done = zb_partition(
        tmp_path / "layers.json",
        "-p",
        str(ranks),
        "-m",
        str(2 * ranks),
        "--layout",
        layout,
        "--evaluations",
        "0",
        "--splits",
        "30",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    rows = {row["split"]: row for row in json.loads(done.stdout)["rows"]}
    stages = ranks * (1 if layout == "loop:1" else 2)
    assert rows["even"]["stages"] == generate_llm_fqn_per_model_part(stages, n_layers, 1, 1)
    knobs = re.fullmatch(
        r"first_stage_less_layers=(\d+), last_stage_less_layers=(\d+)", rows["torchtitan"]["detail"]
    )
    assert knobs, rows["torchtitan"]["detail"]
    first, last = int(knobs[1]), int(knobs[2])
    assert rows["torchtitan"]["stages"] == generate_llm_fqn_per_model_part(
        stages, n_layers, first, last
    )
    # The co-tuned split is a split torchtitan can build: every module once, in model order.
    flat = [name for stage in rows["co-tuned"]["stages"] for name in stage]
    assert flat == ["tok_embeddings", *[f"layers.{i}" for i in range(n_layers)], "norm", "output"]
    assert rows["co-tuned"]["iteration_ms"] <= rows["torchtitan"]["iteration_ms"]

# SPDX-License-Identifier: Apache-2.0
"""torchtitan (0.2.2, installed by scripts/setup.sh), unedited, on 2 CPU ranks over gloo through the
test launcher (tests/job_scripts/titan/launch.py: the two CPU patches) with a local tokenizer and dataset
(tests/job_scripts/titan/assets.py): its llama3 debug model profiled by `zb profile --torch`, the tuned order
every order `zb tune` proposes for the profiled layout (each family that fits, and the search)
exported with `zb export --for torchtitan` and run by torchtitan itself from the printed flags,
one replayed through the shim by `zb replay`, and the V families under torchtitan's V split; the
losses equal those of torchtitan's own schedule of the same layout (docs/formats.md §4.2)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from launch import JOBS, job_env, require_zb, run

pytest.importorskip("torch")
if __import__("importlib").util.find_spec("torchtitan") is None:
    pytest.skip(
        "torchtitan is not installed (scripts/setup.sh installs the pinned 0.2.2)",
        allow_module_level=True,
    )

sys.path.insert(0, str(JOBS / "titan"))
import jobs  # noqa: E402
from assets import make_assets  # noqa: E402
from torchtitan.distributed.pipeline_parallel import generate_llm_fqn_per_model_part  # noqa: E402

STEPS = 4
BATCH = 8
MICROBATCHES = 4
LOSS = re.compile(r"step:\s*(\d+)\s+(?:\x1b\[[0-9;]*m)*loss:\s*(-?[0-9.]+)")


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> List[str]:
    tokenizer, dataset = make_assets(tmp_path_factory.mktemp("titan-assets"))
    return ["--model.hf_assets_path", str(tokenizer), "--training.dataset_path", str(dataset)]


def titan_command(out: Path, assets: List[str], *extra: str, flavor: str = "debugmodel") -> list:
    """torchrun of torchtitan's trainer (tests/job_scripts/titan/jobs.py): 2 pipeline ranks, BATCH samples
    in MICROBATCHES microbatches, STEPS steps, fixed seed."""
    return jobs.titan_command(out, assets, *extra, flavor=flavor, batch=BATCH,
                              microbatches=MICROBATCHES, steps=STEPS)  # fmt: skip


def losses(output: str) -> List[float]:
    """The loss of each step, as the last stage's rank logs it: the others log -1, summed over
    their data-parallel replicas (-2 for two); a cross-entropy is never negative."""
    by_step = {}
    for step, value in LOSS.findall(output):
        if float(value) >= 0:
            by_step[int(step)] = float(value)
    return [by_step[step] for step in sorted(by_step)]


def train(
    tmp_path: Path,
    name: str,
    assets: List[str],
    *extra: str,
    command=(),
    flavor: str = "debugmodel",
) -> List[float]:
    done = run([*command, *titan_command(tmp_path / name, assets, *extra, flavor=flavor)],
               job_env())  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    found = losses(done.stdout + done.stderr)
    assert len(found) == STEPS, (done.stdout + done.stderr)[-3000:]
    return found


def train_order(
    tmp_path: Path,
    family: str,
    assets: List[str],
    flags: List[str],
    trained: Dict[tuple, List[float]],
) -> List[float]:
    """torchtitan's losses under the order `zb export` wrote for `family` (the CSV its `flags`
    name), trained once per distinct order: families that tune to the same order (the search
    often finds a family's, zb-auto is one of them) export the same CSV and the same other flags,
    and a second run of it would check nothing new. `trained` keeps what ran, by order."""
    csv = Path(flags[flags.index("--parallelism.pipeline_parallel_schedule_csv") + 1])
    others = tuple(f for f in flags if f != str(csv))
    key = (csv.read_text(), others)
    if key not in trained:
        trained[key] = train(tmp_path, f"csv-{family}", assets, *flags)
    return trained[key]


def export_for_titan(tmp_path: Path, schedule: Path, name: str) -> List[str]:
    """`zb export --for torchtitan`: the CSV, and the command-line flags it prints."""
    csv = tmp_path / f"{name}.csv"
    done = run([str(require_zb()), "export", str(schedule), "--format", "torch-csv", "-o",
                str(csv), "--for", "torchtitan", "--local-batch-size", str(BATCH)],
               job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    flags = done.stdout.split("or on its command line: ", 1)[1].split()
    assert flags[flags.index("--parallelism.pipeline_parallel_schedule_csv") + 1] == str(csv)
    return flags


def fitting_families(costs: Path, *layout: str) -> List[str]:
    """The families (and the search) that `zb tune` finds fitting the layout under 2x."""
    done = run([str(require_zb()), "tune", "--costs", str(costs), "-m", str(MICROBATCHES),
                "--mem-limit", "2x", "--family", "search", *SEARCH, *layout, "--json"],
               job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return [c["family"] for c in report["candidates"]
            if c["ok"] and c["fits"] and not c["other_layout"] and not c["reference"]]  # fmt: skip


def tuned(tmp_path: Path, costs: Path, family: str, *layout: str) -> Path:
    schedule = tmp_path / f"{family}.json"
    done = run([str(require_zb()), "tune", "--costs", str(costs), "-m", str(MICROBATCHES),
                "--mem-limit", "2x", "--family", family, *SEARCH, *layout, "--out",
                str(schedule)], job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    return schedule


def partition_for_titan(tmp_path: Path, layers: Path) -> tuple:
    """`zb partition --for torchtitan` on 2 ranks, one stage each: its [parallelism] section
    written as a torchtitan config file, and the module_fqns_per_model_part in it."""
    done = run([str(require_zb()), "partition", "--layers", str(layers), "-p", "2", "-m",
                str(MICROBATCHES), "--layout", "loop:1", "--for", "torchtitan"], job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    section = done.stdout[done.stdout.index("[parallelism]") :]
    settings = [line for line in section.splitlines() if line and not line.startswith("#")]
    config = tmp_path / "split.toml"
    config.write_text("\n".join(settings) + "\n")
    fqns = next(line for line in settings if line.startswith("module_fqns_per_model_part"))
    return config, json.loads(fqns.split("=", 1)[1])


# A deterministic search (its orders can run the stages' forwards out of microbatch order).
SEARCH = ["--time-limit", "0", "--evaluations", "2000", "--seed", "3"]


def test_profile_tune_and_replay_torchtitan_unedited(tmp_path, assets):
    zb = str(require_zb())
    costs = tmp_path / "costs.json"
    layers = tmp_path / "layers.json"
    profile = run([zb, "profile", "--torch", "--torch-skip", "1", "--torch-iters", "2", "--pp",
                   "2", "--json", "--out", str(costs), "--store", str(tmp_path / "zb.db"),
                   "--layers-out", str(layers), "--",
                   *titan_command(tmp_path / "profiled", assets,
                                  "--parallelism.pipeline_parallel_schedule", "1F1B")],
                  job_env())  # fmt: skip
    assert profile.returncode == 0, profile.stderr[-4000:]
    lines = profile.stdout.splitlines()
    report = json.loads("\n".join(lines[max(i for i, line in enumerate(lines) if line == "{") :]))
    assert report["ranks"] == 2
    for stage in report["stages"]:
        for kind in ("F", "B", "W"):
            assert stage[kind]["samples"] > 0 and stage[kind]["median"] > 0, stage
    assert report["costs"]["layout"] == {
        "placement": "loop", "stages_per_rank": 1, "schedule": "Schedule1F1B",
    }  # fmt: skip
    listed = run([zb, "costs", "list", "--store", str(tmp_path / "zb.db"), "--json"], job_env())
    assert listed.returncode == 0 and json.loads(listed.stdout)["profiles"], listed.stderr
    # Per-block costs (docs/partition.md §4): torchtitan's own top-level modules, in model order,
    # each measured; AdamW keeps two moments per parameter, so the embedding and the head, of the
    # same shape, hold the same state.
    measured = json.loads(layers.read_text())
    assert measured == report["layers"]
    names = [layer["name"] for layer in measured["layers"]]
    blocks = [f"layers.{i}" for i in range(len(names) - 3)]
    assert names == ["tok_embeddings", *blocks, "norm", "output"], names
    assert all(layer["F"] > 0 for layer in measured["layers"]), measured
    by_name = {layer["name"]: layer for layer in measured["layers"]}
    assert by_name["tok_embeddings"]["B"] == 0  # token ids have no gradient
    assert by_name["tok_embeddings"]["state"] == by_name["output"]["state"] > 0

    # Every order zb tune proposes for the profiled layout (one stage per rank, the default),
    # run by torchtitan from the printed flags: the losses of its own 1F1B.
    families = fitting_families(costs)
    # zb-h2 fits or not by a few percent: M_W is measured as held from B to W (the gradients
    # torch's B captures for W included), no longer clamped to M_B.
    assert {"1f1b", "zb-h1", "search"} <= set(families), families
    own = train(tmp_path, "own", assets, "--parallelism.pipeline_parallel_schedule", "1F1B")
    trained = {}
    for family in families:
        flags = export_for_titan(tmp_path, tuned(tmp_path, costs, family), family)
        assert flags[flags.index("--parallelism.pipeline_parallel_schedule") + 1] == "1F1B"
        exported = train_order(tmp_path, family, assets, flags, trained)
        assert exported == pytest.approx(own, rel=1e-5), family
    # And through the shim, torchtitan's config unchanged.
    replayed = train(tmp_path, "shim", assets, "--parallelism.pipeline_parallel_schedule", "1F1B",
                     command=(zb, "replay", str(tmp_path / "search.json"), "--"))  # fmt: skip
    assert replayed == pytest.approx(own, rel=1e-5)


def test_v_orders_run_under_torchtitans_v_split(tmp_path, assets):
    # A V order needs torchtitan's V split, which only a V schedule name gives: the export says
    # ZBVZeroBubble, and each V family's losses are those of torchtitan's own ZBVZeroBubble.
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"format": "zb-costs/1", "count": 2, "stages": [
        {"F": 1.0, "B": 1.0, "W": 0.6, "M_B": 2.0, "M_W": 1.0}]}))  # fmt: skip
    families = fitting_families(costs, "--layout", "v")
    assert {"zb-v", "v-half", "v-min"} <= set(families), families
    own = train(tmp_path, "own", assets, "--parallelism.pipeline_parallel_schedule",
                "ZBVZeroBubble")  # fmt: skip
    trained = {}
    for family in families:
        flags = export_for_titan(tmp_path, tuned(tmp_path, costs, family, "--layout", "v"), family)
        assert flags[flags.index("--parallelism.pipeline_parallel_schedule") + 1] == "ZBVZeroBubble"
        exported = train_order(tmp_path, family, assets, flags, trained)
        assert exported == pytest.approx(own, rel=1e-5), family


# The debug model with a large vocabulary (tests/job_scripts/titan/launch.py): the embedding and the head cost
# several layers, so torchtitan's default split (each counts as one layer) is unbalanced.
BIG_VOCAB = "debugmodel_vocab32768"


def test_the_split_zb_partition_prints_trains_as_torchtitans_default_does(tmp_path, assets):
    # Profiled per block, torchtitan unedited under its own split; the split zb partition
    # chooses, run by torchtitan from the printed [parallelism] section as its config file: the
    # losses of its default split. The split moves blocks between the ranks, not the math
    # (torchtitan builds the whole model from the seed before it cuts it).
    layers = tmp_path / "layers.json"
    one_f_one_b = ("--parallelism.pipeline_parallel_schedule", "1F1B")
    profile = run([str(require_zb()), "profile", "--torch", "--torch-skip", "1", "--torch-iters",
                   "2", "--pp", "2", "--layers-out", str(layers), "--",
                   *titan_command(tmp_path / "profiled", assets, *one_f_one_b, flavor=BIG_VOCAB)],
                  job_env())  # fmt: skip
    assert profile.returncode == 0, profile.stderr[-4000:]
    by_name = {layer["name"]: layer for layer in json.loads(layers.read_text())["layers"]}
    head, layer = by_name["output"], by_name["layers.0"]
    assert head["F"] + head["B"] + head["W"] > 2 * (layer["F"] + layer["B"] + layer["W"])
    config, split = partition_for_titan(tmp_path, layers)
    default = generate_llm_fqn_per_model_part(2, len(by_name) - 3, 1, 1)
    assert split != default and split[1][-1] == "output", split
    assert len(split[1]) < len(default[1]), split  # the head's stage gets fewer layers
    # torchtitan initialises each rank's part from its own random stream, so two splits start
    # from different weights: both runs load the same seed checkpoint (torchtitan's own way).
    seed = seed_checkpoint(tmp_path, assets, BIG_VOCAB)
    own = train(tmp_path, "default", assets, *one_f_one_b, *seed, flavor=BIG_VOCAB)
    moved = train(tmp_path, "split", assets, *one_f_one_b, *seed, "--job.config_file",
                  str(config), flavor=BIG_VOCAB)  # fmt: skip
    assert moved == pytest.approx(own, rel=1e-5)

    # The memory plan (docs/memory-plan.md): every block was measured whole-checkpointed too;
    # under a cap between what full and no checkpointing everywhere need, zb partition chooses per
    # block, and zb replay applies it to torchtitan unedited (its blocks wrapped where torchtitan
    # built them) with the same losses.
    for name, block in by_name.items():
        assert [o["checkpointing"] for o in block.get("options", [])] == ["full"], (name, block)
    cap = plan_cap(tmp_path, layers)
    plan, order = tmp_path / "plan.json", tmp_path / "plan-order.json"
    done = run([str(require_zb()), "partition", "--layers", str(layers), "-p", "2", "-m",
                str(MICROBATCHES), "--layout", "loop:1", "--mem-limit", str(cap),
                "--checkpointing", "none,full", "--evaluations", "0", "--for", "torchtitan",
                "--split-out", str(plan), "--out", str(order)], job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    modes = json.loads(plan.read_text())["checkpointing"]
    assert "full" in modes.values(), (cap, done.stdout)
    section = done.stdout[done.stdout.index("[parallelism]") :]
    (tmp_path / "plan.toml").write_text(
        "\n".join(line for line in section.splitlines() if line and not line.startswith("#"))
    )
    planned = run([str(require_zb()), "replay", str(order), "--checkpointing-plan", str(plan),
                   "--", *titan_command(tmp_path / "planned", assets, *one_f_one_b, *seed,
                                        "--job.config_file", str(tmp_path / "plan.toml"),
                                        flavor=BIG_VOCAB)], job_env())  # fmt: skip
    output = planned.stdout + planned.stderr
    assert planned.returncode == 0, output[-4000:]
    assert "block(s) now 'full'" in output, output[-3000:]
    assert losses(output) == pytest.approx(own, rel=1e-5)


def plan_cap(tmp_path: Path, layers: Path) -> int:
    """A cap between the largest peaks of checkpointing none and full everywhere (their
    co-tuned splits, no cap): where a per-block plan is worth something."""
    done = run([str(require_zb()), "partition", "--layers", str(layers), "-p", "2", "-m",
                str(MICROBATCHES), "--layout", "loop:1", "--checkpointing", "none,full",
                "--evaluations", "0", "--json"], job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    peak = {row["split"]: max(row["peak_memory"]) for row in json.loads(done.stdout)["rows"]
            if row["ok"]}  # fmt: skip
    assert peak["uniform-full"] < peak["uniform-none"], peak
    return int((peak["uniform-full"] + peak["uniform-none"]) / 2)


def seed_checkpoint(tmp_path: Path, assets: List[str], flavor: str) -> List[str]:
    """torchtitan's seed checkpoint (one process, no parallelism) of the model, and the flags
    that make a run start from it without saving any of its own."""
    out = tmp_path / "seed"
    done = run(jobs.seed_checkpoint_command(out, assets, flavor), job_env())
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert (out / "checkpoint" / "step-0").is_dir(), (done.stdout + done.stderr)[-3000:]
    return jobs.from_seed_checkpoint(out)


def test_activation_checkpointing_stays_on_under_zb_profile_and_zb_replay(tmp_path, assets):
    """docs/activation-checkpointing.md: torchtitan with its per-op selective AC
    (`selective_ac_option = "op"`), which torch's own split cannot run, unedited: profiled by `zb
    profile` (whose window splits backwards) without harm, the profile recording "op" and per-block
    M_W above M_B; a split order (zb-h1) replayed through the shim with the losses of torchtitan's
    own 1F1B under the same AC; and `zb export` of that order for torchtitan alone refused in one
    line that names zb replay."""
    zb = str(require_zb())
    sac = ("--activation_checkpoint.mode", "selective",
           "--activation_checkpoint.selective_ac_option", "op")  # fmt: skip
    one_f_one_b = ("--parallelism.pipeline_parallel_schedule", "1F1B")
    costs = tmp_path / "costs.json"
    layers = tmp_path / "layers.json"
    profile = run([zb, "profile", "--torch", "--torch-skip", "1", "--torch-iters", "2", "--pp",
                   "2", "--out", str(costs), "--layers-out", str(layers), "--",
                   *titan_command(tmp_path / "profiled", assets, *one_f_one_b, *sac)],
                  job_env())  # fmt: skip
    assert profile.returncode == 0, profile.stderr[-4000:]
    assert json.loads(costs.read_text())["checkpointing"] == "op"
    blocks = [
        x for x in json.loads(layers.read_text())["layers"] if x["name"].startswith("layers.")
    ]
    assert blocks and all(x["M_W"] > x["M_B"] for x in blocks), blocks
    assert all(x["checkpointing"] == "op" for x in blocks), blocks

    # A split order whatever this run measured: `zb tune` fuses a B with its W where the measured
    # fused backward (BW) is the shorter, which under op SAC on a noisy CPU can be every one of them
    # (an order torch alone runs, so nothing to refuse); without BW it keeps them split.
    unfused = tmp_path / "costs-unfused.json"
    profiled = json.loads(costs.read_text())
    for stage in profiled["stages"]:
        stage.pop("BW", None)
    unfused.write_text(json.dumps(profiled))
    order = tmp_path / "zb-h1.json"
    done = run([zb, "tune", "--costs", str(unfused), "-m", str(MICROBATCHES), "--mem-limit",
                "none", "--family", "zb-h1", "--out", str(order)], job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    ops = [op for rank in json.loads(order.read_text())["ranks"] for op in rank["ops"]]
    assert any(op["type"] == "W" for op in ops), ops
    refused = run([zb, "export", str(order), "--format", "torch-csv", "-o",
                   str(tmp_path / "h1.csv"), "--for", "torchtitan"], job_env())  # fmt: skip
    assert refused.returncode == 1 and "run it with zb replay" in refused.stderr, refused.stderr
    assert not (tmp_path / "h1.csv").exists()

    own = train(tmp_path, "own", assets, *one_f_one_b, *sac)
    replayed = train(tmp_path, "shim", assets, *one_f_one_b, *sac,
                     command=(zb, "replay", str(order), "--"))  # fmt: skip
    assert replayed == pytest.approx(own, rel=1e-5)


def test_a_pipeline_inside_fsdp_profiled_and_replayed_unedited(tmp_path, assets):
    """docs/data-parallel.md §3 and §5: torchtitan PP2 x FSDP2 (`data_parallel_shard_degree` 2) on
    4 CPU ranks, unedited: `zb profile` folds the replicas into one pipeline of 2 stages, each
    with its measured reduce-scatter and all-gathers, the bytes FSDP gathers and the DP degree; the
    order tuned with them replays through the shim with the losses of torchtitan's own 1F1B."""
    zb = str(require_zb())
    one_f_one_b = ("--parallelism.pipeline_parallel_schedule", "1F1B")

    def command(name: str) -> List[str]:
        return jobs.titan_command(tmp_path / name, assets, *one_f_one_b, batch=BATCH,
                                  microbatches=MICROBATCHES, steps=STEPS, fsdp=2)  # fmt: skip

    costs = tmp_path / "costs.json"
    profile = run([zb, "profile", "--torch", "--torch-skip", "1", "--torch-iters", "2", "--pp",
                   "2", "--out", str(costs), "--", *command("profiled")], job_env())  # fmt: skip
    assert profile.returncode == 0, profile.stderr[-4000:]
    profiled = json.loads(costs.read_text())
    assert profiled["data_parallel"] == 2 and len(profiled["stages"]) == 2, profiled
    for stage in profiled["stages"]:
        assert stage["reduce"] > 0 and stage["unshard"] > 0 and stage["unsharded"] > 0, stage
        # torchtitan's mixed precision: FSDP gathers bf16 parameters and reduces fp32 gradients.
        assert stage["reduced"] == 2 * stage["unsharded"], stage

    order = tmp_path / "zb-h1.json"
    done = run([zb, "tune", "--costs", str(costs), "-m", str(MICROBATCHES), "--mem-limit", "none",
                "--family", "zb-h1", "--out", str(order)], job_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "data parallelism:" in done.stdout, done.stdout
    done = run([*command("own")], job_env())
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    own = losses(done.stdout + done.stderr)
    done = run([zb, "replay", str(order), "--", *command("shim")], job_env())
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert len(own) == STEPS and losses(done.stdout + done.stderr) == pytest.approx(own, rel=1e-5)

# SPDX-License-Identifier: Apache-2.0
"""What torchtitan's llama3 debug model reads besides its code, made locally (the wheel ships
neither, and the tests fetch nothing from a hub): a word-level tokenizer (tokenizer.json and
tokenizer_config.json with BOS/EOS, fewer words than the debug model's 2048-entry vocabulary) and
a synthetic text dataset (one JSON line per document, read as torchtitan's `c4_test` dataset from
`--training.dataset_path`). Deterministic: the same files every time."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Tuple

WORDS = 500
DOCUMENTS = 400


def make_assets(directory: Path) -> Tuple[Path, Path]:
    """Writes DIR/tokenizer and DIR/dataset; returns (tokenizer dir, dataset dir)."""
    from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: PLC0415

    words = [f"w{i}" for i in range(WORDS)]
    tokenizer_dir = directory / "tokenizer"
    tokenizer_dir.mkdir(parents=True, exist_ok=True)
    vocab = {"<unk>": 0, "<|begin_of_text|>": 1, "<|end_of_text|>": 2}
    for word in words:
        vocab[word] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tokenizer_dir / "tokenizer.json"))
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
    (tokenizer_dir / "tokenizer_config.json").write_text(json.dumps(config) + "\n")

    dataset_dir = directory / "dataset"
    dataset_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    with open(dataset_dir / "train.json", "w") as out:
        for _ in range(DOCUMENTS):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(40, 120)))
            out.write(json.dumps({"text": text}) + "\n")
    return tokenizer_dir, dataset_dir


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: assets.py DIR  (writes DIR/tokenizer and DIR/dataset)")
    made = make_assets(Path(sys.argv[1]))
    print(f"--model.hf_assets_path {made[0]} --training.dataset_path {made[1]}")

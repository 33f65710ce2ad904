#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a document names a repository file that does not exist (run by scripts/run-tests.sh).

Reads every tracked Markdown file for repository paths: words with a directory and a known ending
(`tuner/src/search.cpp`, `docs/formats.md`), and Markdown links to local files. A path counts as
existing relative to the repository root or the document's folder, or as the tail of a tracked
file's path (an include path `zbkit/tuner/search.h`, a package path `zbkit/_p2p.py`). Paths that
cannot be in the repository are passed over: absolute ones, URLs, placeholders (`<...>`, `*`,
`{...}`), build outputs (build/, out/, .venv/), other projects' files (torch/..., torchtitan/..., the paper's
scheduler/...). Prints `FILE:LINE: PATH does not exist` for each and exits 1; 0 when all exist.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENDINGS = ("cpp", "h", "py", "sql", "json", "md", "sh", "txt", "toml", "cmake", "csv")
PATH = re.compile(
    r"(?<![\w./:-])((?:\.\./|\./)?[A-Za-z0-9_][\w.-]*(?:/[\w.-]+)+\.(?:%s))(?![\w/])"
    % "|".join(ENDINGS)
)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
SKIP_PREFIXES = ("build/", "out/", ".venv/", "tmp/", "../shared/", "shared/", "zbkit-demo/",
                 "torch/", "torchtitan/", "scheduler/")  # fmt: skip


def tracked() -> list:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines()]


def candidates(text: str):
    for number, line in enumerate(text.splitlines(), 1):
        for match in PATH.finditer(line):
            yield number, match.group(1)
        for match in LINK.finditer(line):
            target = match.group(1)
            if "://" not in target and not target.startswith(("mailto:", "/")):
                yield number, target


def exists(document: Path, name: str, tails: set) -> bool:
    if any(ch in name for ch in "<>*{}$") or name.startswith(SKIP_PREFIXES):
        return True
    if (ROOT / name).exists() or (document.parent / name).exists():
        return True
    return name.lstrip("./") in tails


def main() -> int:
    files = tracked()
    tails = set()
    for path in files:
        parts = path.relative_to(ROOT).parts
        tails.update("/".join(parts[i:]) for i in range(1, len(parts)))
    missing = []
    for path in files:
        if path.suffix != ".md" or not path.is_file():
            continue
        for number, name in candidates(path.read_text(errors="replace")):
            if not exists(path, name, tails):
                missing.append(f"{path.relative_to(ROOT)}:{number}: {name} does not exist")
    for line in missing:
        print(line)
    if missing:
        print(f"check-doc-paths: {len(missing)} paths named in documents do not exist")
        return 1
    print("check-doc-paths: every repository path named in documents exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())

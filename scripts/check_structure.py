#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The limits the project sets itself on its own structure, checked on every test run
(scripts/run-tests.sh) so that they cannot slip unseen (ARCHITECTURE.md, "Checked limits"):

1. sizes: no source file over 700 lines, no function over 120 (C++ and Python), but for the
   few entries of ALLOWED, each with its reason;
2. Python imports: no import cycle in the `zbkit` and `zbkit_harness` packages (imports inside
   functions and under TYPE_CHECKING count), and `zbkit` (the trainer library) never imports
   `zbkit_harness` (the experiment harness);
3. C++ floors: no #include runs from a lower floor up to a higher one, nor between two components
   of one floor (LAYERS: the `zb` program on top, the commands, the kit they share and the GUI
   widgets, the runtime, the libraries, schemas at the bottom); and ARCHITECTURE.md's link table
   equals the `target_link_libraries` of the components' CMakeLists.txt;
4. ARCHITECTURE.md names every top-level folder, and every folder it names exists;
5. the Python packages' `__all__` lists exactly their public modules (files and subpackages not
   named `_...`), so that a new module is either public and listed or internal and named so;
6. one spelling per rule: what has one home (SPELLINGS: torch's action letters and the progress
   record's codes in `zbkit.actions`; CPP_SPELLINGS: torch's tokens in schemas/src/op_text.cpp)
   is not spelled again elsewhere, and the two languages' action tables are equal (names, torch
   tokens, codes).

Prints one line per finding and exits 1 when there is any; `--list` prints the measurements.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
SOURCE_DIRS = ("schemas", "tuner", "profiler", "doctor", "traces", "runtime", "gui", "cli", "zb",
               "adapters", "tests", "bench", "scripts")  # fmt: skip
CPP_SUFFIXES = {".cpp", ".h", ".cc", ".hpp"}
PY_PACKAGES = ("zbkit", "zbkit_harness")
PY_ROOT = ROOT / "adapters" / "pytorch"

# "path" (a file over the line limit) or "path:function" (a function over the line limit), with
# the reason it may be. At most three, each a table or generated text rather than logic.
ALLOWED: Dict[str, str] = {}

# C++ floors, highest first: (floor, component, folders). An #include may point to a lower floor,
# or within its own component; never up, and never to another component of its floor
# (ARCHITECTURE.md, "Components and the direction of dependencies").
LAYERS: List[Tuple[int, str, Tuple[str, ...]]] = [
    (6, "the zb program", ("zb/",)),
    (5, "the tuner's commands", ("tuner/cli/",)),
    (5, "the profiler's commands", ("profiler/cli/",)),
    (5, "the adapters' commands", ("adapters/cli/",)),
    (5, "the doctor's command", ("doctor/cli/",)),
    (5, "the zbview app", ("gui/app/",)),
    (4, "the command kit", ("cli/kit/",)),
    (4, "the GUI widgets", ("gui/src/", "gui/include/")),
    (3, "the runtime", ("runtime/",)),
    (3, "the timeline writers", ("traces/",)),
    (3, "the GUI model", ("gui/model/",)),
    (2, "the tuner", ("tuner/",)),
    (2, "the profiler", ("profiler/",)),
    (2, "the doctor", ("doctor/",)),
    (1, "schemas", ("schemas/",)),
]
# Includes between components of one floor that are allowed: none.
SIDEWAYS: Set[Tuple[str, str]] = set()


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def source_files(suffixes: Iterable[str]) -> List[Path]:
    wanted = set(suffixes)
    found = []
    for top in SOURCE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in wanted and path.is_file() and "__pycache__" not in path.parts:
                found.append(path)
    return found


# ---- 1: sizes ---------------------------------------------------------------------------------


def strip_cpp(text: str) -> str:
    """Comments, string and character literals blanked (newlines kept), so that braces in them
    do not count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2 : j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


_SCOPE = re.compile(r"^\s*(?:template\s*<.*>\s*)?(?:namespace\b|extern\s*\"\"|(?:class|struct|union|enum)\b)", re.S)  # fmt: skip


def cpp_functions(text: str) -> List[Tuple[str, int, int]]:
    """(name, first line, last line) of each function body at namespace or class scope: a brace
    whose header (the text since the last `;`, `{` or `}` of that scope) has a parameter list.
    Lambdas and local classes count toward the function that holds them."""
    # Preprocessor lines (and their continuations) are not code the braces belong to.
    code = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  strip_cpp(text), flags=re.M)  # fmt: skip
    functions = []
    # A stack of scopes: ("scope", header_start) for namespaces and classes, ("function", ...)
    # for bodies, ("data", ...) for braces inside a header (initializers, member brace-inits).
    stack: List[Tuple[str, int, str]] = []
    header_start = 0
    line_of = [0] * (len(code) + 1)
    line = 1
    for i, ch in enumerate(code):
        line_of[i] = line
        if ch == "\n":
            line += 1
    line_of[len(code)] = line
    i = 0
    while i < len(code):
        ch = code[i]
        in_function = any(kind == "function" for kind, _, _ in stack)
        if ch == "{":
            header = code[header_start:i]
            if in_function:
                stack.append(("inner", i, ""))
            elif _SCOPE.match(header) and "(" not in header.split("{")[0].split("=")[0]:
                stack.append(("scope", i, ""))
                header_start = i + 1
            elif (
                "(" in header
                and "=" not in header.split("(")[0]
                and not re.search(r"\)\s*:[^:].*[\w>]\s*$", header, re.S)
            ):
                name = re.findall(r"([~\w:<>]+)\s*\(", header)
                start = header_start + len(header) - len(header.lstrip())
                stack.append(("function", start, name[0] if name else "?"))
            else:  # an initializer, or a member brace-init in a constructor's initializer list
                stack.append(("data", i, ""))
        elif ch == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    functions.append((name, line_of[start], line_of[i]))
                if kind in ("scope", "function"):
                    header_start = i + 1
                elif kind == "data" and not any(k == "function" for k, _, _ in stack):
                    pass  # the header goes on (e.g. `Foo() : a_{1} {`)
        elif ch == ";" and not in_function and not (stack and stack[-1][0] == "data"):
            header_start = i + 1
        elif ch == ":" and not in_function and re.search(r"\b(public|private|protected|signals|slots)\s*$", code[header_start:i]):  # fmt: skip
            header_start = i + 1
        i += 1
    return functions


def python_functions(path: Path) -> List[Tuple[str, int, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [
        (node.name, node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def check_sizes(listing: bool) -> List[str]:
    findings = []
    for path in source_files(CPP_SUFFIXES | {".py"}):
        name = rel(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        if lines > MAX_FILE_LINES and name not in ALLOWED:
            findings.append(f"{name}: {lines} lines (limit {MAX_FILE_LINES})")
        functions = python_functions(path) if path.suffix == ".py" else cpp_functions(text)
        for function, first, last in functions:
            length = last - first + 1
            key = f"{name}:{function}"
            if listing and length > MAX_FUNCTION_LINES * 3 // 4:
                print(f"  {key} {length} lines (line {first})")
            if length > MAX_FUNCTION_LINES and key not in ALLOWED:
                findings.append(f"{name}:{first}: {function} is {length} lines (limit {MAX_FUNCTION_LINES})")  # fmt: skip
    return findings


# ---- 2: Python imports ------------------------------------------------------------------------


def python_modules() -> Dict[str, Path]:
    modules = {}
    for package in PY_PACKAGES:
        for path in sorted((PY_ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(PY_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if "_hook" in parts:  # not a package: the startup hook, run as sitecustomize
                continue
            modules[".".join(parts)] = path
    return modules


def imports_of(module: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            # The longest known module the target names (a name imported from a module is the
            # module).
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                found.add(target)
    return found


def check_imports() -> List[str]:
    modules = python_modules()
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    findings = []
    for module, targets in sorted(graph.items()):
        if module.split(".")[0] == "zbkit":
            for target in sorted(targets):
                if target.split(".")[0] == "zbkit_harness":
                    findings.append(f"{module} imports {target}: the trainer library must not "
                                    "import the harness")  # fmt: skip
    # A package's __init__ importing its own submodules is how a package is built, not a cycle.
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    for cycle in cycles(edges):
        findings.append("import cycle: " + " -> ".join(cycle + [cycle[0]]))
    return findings


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one node (Tarjan), each as a list."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# ---- 3: C++ layers ----------------------------------------------------------------------------


def layer_of(name: str) -> Optional[Tuple[int, str]]:
    """(floor, component) of a path; the longest folder that matches (tuner/cli/ before tuner/)."""
    best: Optional[Tuple[int, str, int]] = None
    for level, component, prefixes in LAYERS:
        for prefix in prefixes:
            if name.startswith(prefix) and (best is None or len(prefix) > best[2]):
                best = (level, component, len(prefix))
    return (best[0], best[1]) if best else None


def check_layers() -> List[str]:
    files = [p for p in source_files(CPP_SUFFIXES) if layer_of(rel(p))]
    by_suffix: Dict[str, List[Path]] = {}
    for path in files:
        parts = rel(path).split("/")
        for k in range(1, len(parts) + 1):
            by_suffix.setdefault("/".join(parts[-k:]), []).append(path)
    findings = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for path in files:
        here = layer_of(rel(path))
        for target_name in include.findall(path.read_text(encoding="utf-8", errors="replace")):
            candidates = by_suffix.get(target_name, [])
            beside = [c for c in candidates if c.parent == path.parent]
            target = (beside or candidates or [None])[0]
            if target is None:
                continue
            there = layer_of(rel(target))
            if there is None or here is None:
                continue
            up = there[0] > here[0]
            sideways = there[0] == here[0] and there[1] != here[1]
            if up or (sideways and (here[1], there[1]) not in SIDEWAYS):
                findings.append(f"{rel(path)} includes {rel(target)}: {there[1]} (floor "
                                f"{there[0]}) from {here[1]} (floor {here[0]})")  # fmt: skip
    return findings


# ---- 4b: the link table against CMake -----------------------------------------------------------

LINK_FOLDERS = ("schemas", "tuner", "profiler", "doctor", "traces", "runtime", "cli", "zb", "gui",
                "adapters")  # fmt: skip


def strip_cmake_comments(text: str) -> str:
    return re.sub(r"#[^\n]*", "", text)


def cmake_links() -> Dict[str, Set[str]]:
    """Every component target's zbkit links, by short name (zbkit::tuner_cli and zbkit_tuner_cli
    are "tuner_cli"; zbrt, zb and zbview as they are)."""
    texts = [strip_cmake_comments(p.read_text(encoding="utf-8"))
             for folder in LINK_FOLDERS for p in sorted((ROOT / folder).rglob("CMakeLists.txt"))]  # fmt: skip
    short: Dict[str, str] = {}
    for text in texts:
        for target in re.findall(r"add_(?:library|executable)\(\s*([\w:]+)", text):
            if "::" not in target:
                short[target] = target[len("zbkit_") :] if target.startswith("zbkit_") else target
        for alias, target in re.findall(r"add_library\(\s*(zbkit::\w+)\s+ALIAS\s+(\w+)", text):
            short[alias] = short.get(target, alias.split("::")[1])
    links: Dict[str, Set[str]] = {name: set() for name in short.values()}
    for text in texts:
        for target, body in re.findall(r"target_link_libraries\(\s*(\w+)([^)]*)\)", text):
            if target not in short:
                continue
            for token in body.split():
                if token in short and short[token] != short[target]:
                    links[short[target]].add(short[token])
    return links


def documented_links() -> Dict[str, Set[str]]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("### Links, as CMake has them", 1)[-1].split("###", 1)[0]
    table = {}
    for target, deps in re.findall(r"^\| `(\w+)` \| ([^|]*) \|$", section, re.M):
        table[target] = {d.strip() for d in deps.split(",") if d.strip() not in ("", "—")}
    return table


def check_links() -> List[str]:
    actual, documented = cmake_links(), documented_links()
    findings = []
    for target in sorted(set(actual) | set(documented)):
        if target not in documented:
            findings.append(f"ARCHITECTURE.md's link table has no row for the target {target} "
                            f"(CMake links it to {', '.join(sorted(actual[target])) or 'nothing'})")  # fmt: skip
        elif target not in actual:
            findings.append(
                f"ARCHITECTURE.md's link table names {target}, which CMake does not build"
            )
        elif actual[target] != documented[target]:
            findings.append(f"ARCHITECTURE.md says {target} links {sorted(documented[target])}, "
                            f"CMake links {sorted(actual[target])}")  # fmt: skip
    return findings


# ---- 4: ARCHITECTURE.md -----------------------------------------------------------------------


def tracked_top_folders() -> List[str]:
    """The top-level folders git tracks files in (build outputs such as build/, build-asan/ or
    out/ are not the tree's); every top-level folder but hidden ones where git is not there."""
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return sorted(e.name for e in ROOT.iterdir() if e.is_dir() and not e.name.startswith("."))
    return sorted({path.split("/")[0] for path in listed if "/" in path} - {".ci"})


def check_architecture() -> List[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    findings = []
    named = set(re.findall(r"`([\w./-]+/)`", text)) | set(re.findall(r"^([\w.-]+/)", text, re.M))
    for folder in sorted(named):
        if not (ROOT / folder).is_dir():
            findings.append(f"ARCHITECTURE.md names {folder}, which does not exist")
    for folder in tracked_top_folders():
        if f"{folder}/" not in text:
            findings.append(f"ARCHITECTURE.md does not name the top-level folder {folder}/")
    return findings


# ---- 5: the packages' __all__ ------------------------------------------------------------------


def declared_all(init: Path) -> Optional[List[str]]:
    """The names a package's __init__.py assigns to __all__, or None when it assigns none."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [ast.literal_eval(e) for e in node.value.elts]
    return None


def check_package_all() -> List[str]:
    findings = []
    for package in PY_PACKAGES:
        folder = PY_ROOT / package
        public = sorted(
            p.stem if p.is_file() else p.name
            for p in folder.iterdir()
            if not p.name.startswith("_")
            and ((p.is_file() and p.suffix == ".py") or (p / "__init__.py").is_file())
        )
        declared = declared_all(folder / "__init__.py")
        if declared is None:
            findings.append(f"adapters/pytorch/{package}/__init__.py has no __all__")
            continue
        for name in sorted(set(public) - set(declared)):
            findings.append(f"{package}.{name} is a public module missing from {package}.__all__ "
                            "(list it, or name it _" + name + " if it is internal)")  # fmt: skip
        for name in sorted(set(declared) - set(public)):
            findings.append(f"{package}.__all__ names {name}, which is not a public module of it")
    return findings


def strip_cpp_comments(text: str) -> str:
    """`text` with // comments blanked (line numbers kept): prose may name what code must not."""
    return re.sub(r"//[^\n]*", "", text)


# ---- 6: one spelling ---------------------------------------------------------------------------

# (what, its one home relative to adapters/pytorch, a pattern that spells it again)
SPELLINGS: List[Tuple[str, str, "re.Pattern[str]"]] = [
    ("torch's action letters against zbkit's kinds", "zbkit/actions.py",
     re.compile(r"""["']I["']\s*:\s*["']B["']|["']B["']\s*:\s*["']BW["']|["']BW["']\s*:\s*["']B["']""")),
    ("torch's computation type names", "zbkit/actions.py",
     re.compile(r"""["'](?:BACKWARD_INPUT|FULL_BACKWARD|BACKWARD_WEIGHT)["']""")),
    ("the progress record's kind codes", "zbkit/actions.py",
     re.compile(r"""["']RECV_B["']\s*:\s*\d""")),
    ("a PP: label built by hand", "zbkit/actions.py",
     re.compile(r"""f["']PP:\{[^}]*\}[FIWB]\{""")),
]  # fmt: skip


# C++: torch's tokens and the action names have their home in the vocabulary's table; elsewhere in
# library code they are spelled through it (ActionKindName, TorchToken). Tests are free to write
# the texts they expect.
CPP_VOCABULARY = "schemas/src/op_text.cpp"
CPP_SPELLINGS = re.compile(
    r"""["'](?:SEND_F|RECV_F|SEND_B|RECV_B|UNSHARD|RESHARD|OVERLAP_F_B)["']"""
)
CPP_LIBRARY_DIRS = ("schemas", "tuner", "profiler", "runtime", "gui", "cli")


def action_tables() -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """(name, torch token) of every action kind in code order: C++'s table, Python's."""
    cpp = (ROOT / CPP_VOCABULARY).read_text(encoding="utf-8")
    cpp_rows = re.findall(r'\{ActionKind::k\w+, "([A-Z_]+)", "([A-Z_]*)"\}', cpp)
    py = (PY_ROOT / "zbkit" / "actions.py").read_text(encoding="utf-8")
    py_rows = re.findall(r'Kind\("([A-Z_]+)", "([A-Z_]*)", (\d+)\)', py)
    ordered = [(name, token) for name, token, _ in sorted(py_rows, key=lambda r: int(r[2]))]
    return cpp_rows, ordered


def check_spellings() -> List[str]:
    findings = []
    cpp_rows, py_rows = action_tables()
    if not cpp_rows or cpp_rows != py_rows:
        findings.append(f"the action tables differ: {CPP_VOCABULARY} has {cpp_rows}, "
                        f"adapters/pytorch/zbkit/actions.py has {py_rows}")  # fmt: skip
    for path in source_files(CPP_SUFFIXES):
        name = rel(path)
        if name == CPP_VOCABULARY or not name.startswith(CPP_LIBRARY_DIRS):
            continue
        text = strip_cpp_comments(path.read_text(encoding="utf-8", errors="replace"))
        found = CPP_SPELLINGS.search(text)
        if found:
            line = text.count("\n", 0, found.start()) + 1
            findings.append(f"{name}:{line} spells an action name again ({found.group(0)}); use "
                            f"ActionKindName / TorchToken ({CPP_VOCABULARY})")  # fmt: skip
    for package in PY_PACKAGES:
        for path in sorted((PY_ROOT / package).rglob("*.py")):
            name = path.relative_to(PY_ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            for what, home, pattern in SPELLINGS:
                found = pattern.search(text)
                if found and name != home:
                    line = text.count("\n", 0, found.start()) + 1
                    findings.append(f"adapters/pytorch/{name}:{line} spells {what} again "
                                    f"({found.group(0)!r}); use adapters/pytorch/{home}")  # fmt: skip
    return findings


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print functions near the limit")
    args = parser.parse_args(argv)
    findings = (check_sizes(args.list) + check_imports() + check_layers() + check_links()
                + check_architecture()
                + check_package_all() + check_spellings())  # fmt: skip
    for finding in findings:
        print(f"check_structure: {finding}")
    if findings:
        print(f"check_structure: {len(findings)} finding(s); see scripts/check_structure.py")
        return 1
    print(
        "check_structure: sizes, imports, floors, links, ARCHITECTURE.md, __all__ and spellings within limits"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

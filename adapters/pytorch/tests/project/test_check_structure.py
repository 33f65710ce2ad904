# SPDX-License-Identifier: Apache-2.0
"""scripts/check_structure.py finds what it is there to find: long C++ functions (through
namespaces, classes, constructor initializer lists, comments and strings with braces), import
cycles, and the trainer library's imports of the harness; and the tree as it is passes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[4]
SCRIPT = REPO_ROOT / "scripts" / "check_structure.py"
spec = importlib.util.spec_from_file_location("check_structure", SCRIPT)
check_structure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_structure)


def test_cpp_functions_are_measured_from_header_to_closing_brace():
    body = "\n".join(f"  x += {i};" for i in range(130))
    code = f"""#include <string>
namespace zb {{
namespace {{
// a comment with a brace {{
const char* kText = "}} {{";
struct Holder {{
  int Method(int a) const {{
    return a;
  }}
}};
}}  // namespace
Foo::Foo(int a) : a_(a), b_{{a}} {{
  int x = 0;
{body}
}}
constexpr int kTable[] = {{1, 2, 3}};
}}  // namespace zb
"""
    found = {name: last - first + 1 for name, first, last in check_structure.cpp_functions(code)}
    assert found["Method"] == 3
    assert found["Foo::Foo"] == 133  # header, `int x`, 130 lines, closing brace
    assert "kTable" not in str(found)


def test_cycles_are_found_and_a_dag_has_none():
    assert check_structure.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]
    assert check_structure.cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_tree_is_within_its_limits():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "within limits" in done.stdout


def test_a_public_module_missing_from_all_is_found(tmp_path, monkeypatch):
    package = tmp_path / "zbkit"
    package.mkdir()
    (package / "__init__.py").write_text('__all__ = ["listed", "gone"]\n')
    for name in ("listed.py", "unlisted.py", "_internal.py"):
        (package / name).write_text("")
    (tmp_path / "zbkit_harness").mkdir()
    (tmp_path / "zbkit_harness" / "__init__.py").write_text("__all__ = []\n")
    monkeypatch.setattr(check_structure, "PY_ROOT", tmp_path)
    findings = check_structure.check_package_all()
    assert len(findings) == 2, findings
    assert findings[0].startswith("zbkit.unlisted is a public module missing from zbkit.__all__")
    assert findings[1] == "zbkit.__all__ names gone, which is not a public module of it"


def test_a_second_spelling_of_torchs_letters_is_found(tmp_path, monkeypatch):
    for package in ("zbkit", "zbkit_harness"):
        (tmp_path / package).mkdir()
    (tmp_path / "zbkit" / "actions.py").write_text('FROM_TORCH = {"I": "B"}\n')
    (tmp_path / "zbkit" / "mine.py").write_text('\n\nLETTERS = {"F": "F", "I": "B"}\n')
    (tmp_path / "zbkit_harness" / "label.py").write_text('x = f"PP:{stage}I{mb}"\n')
    monkeypatch.setattr(check_structure, "PY_ROOT", tmp_path)
    findings = [f for f in check_structure.check_spellings() if "tables differ" not in f]
    assert len(findings) == 2, findings
    assert findings[0].startswith("adapters/pytorch/zbkit/mine.py:3 spells torch's action letters")
    assert findings[1].startswith("adapters/pytorch/zbkit_harness/label.py:1 spells a PP: label")


def test_the_two_action_tables_must_be_equal(tmp_path, monkeypatch):
    real = (check_structure.PY_ROOT / "zbkit" / "actions.py").read_text()
    (tmp_path / "zbkit").mkdir()
    (tmp_path / "zbkit_harness").mkdir()
    (tmp_path / "zbkit" / "actions.py").write_text(real)
    monkeypatch.setattr(check_structure, "PY_ROOT", tmp_path)
    assert check_structure.check_spellings() == []
    (tmp_path / "zbkit" / "actions.py").write_text(
        real.replace('Kind("B", "I", 1)', 'Kind("B", "B", 1)')
    )
    findings = check_structure.check_spellings()
    assert len(findings) == 1 and findings[0].startswith("the action tables differ"), findings


def test_a_sideways_include_and_a_link_the_table_omits_are_found(tmp_path, monkeypatch):
    (tmp_path / "tuner" / "src").mkdir(parents=True)
    (tmp_path / "profiler" / "include" / "zbkit" / "profiler").mkdir(parents=True)
    (tmp_path / "tuner" / "src" / "a.cpp").write_text('#include "zbkit/profiler/b.h"\n')
    (tmp_path / "profiler" / "include" / "zbkit" / "profiler" / "b.h").write_text("\n")
    (tmp_path / "tuner" / "CMakeLists.txt").write_text(
        "add_library(zbkit_tuner a.cpp)\nadd_library(zbkit::tuner ALIAS zbkit_tuner)\n"
        "target_link_libraries(zbkit_tuner PUBLIC zbkit::profiler)  # a comment zbkit::schemas\n"
    )
    (tmp_path / "profiler" / "CMakeLists.txt").write_text(
        "add_library(zbkit_profiler b.cpp)\nadd_library(zbkit::profiler ALIAS zbkit_profiler)\n"
    )
    (tmp_path / "ARCHITECTURE.md").write_text(
        "### Links, as CMake has them\n\n| target | links |\n|---|---|\n| `tuner` | schemas |\n"
        "| `profiler` | — |\n\n### Next\n"
    )
    monkeypatch.setattr(check_structure, "ROOT", tmp_path)
    layers = check_structure.check_layers()
    assert layers == [
        "tuner/src/a.cpp includes profiler/include/zbkit/profiler/b.h: the profiler (floor 2) "
        "from the tuner (floor 2)"
    ]
    assert check_structure.check_links() == [
        "ARCHITECTURE.md says tuner links ['schemas'], CMake links ['profiler']"
    ]

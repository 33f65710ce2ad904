# SPDX-License-Identifier: Apache-2.0
"""scripts/check_structure.py finds what it is there to find: long C++ functions (through
namespaces, classes, constructor initializer lists, comments and strings with braces), import
cycles, and the trainer library's imports of the harness; and the tree as it is passes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
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

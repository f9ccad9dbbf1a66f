# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module and every public function, class and method of the core carries a docstring.

A maintainer reading the core should find, beside each name a caller may use, the reason it
exists; this test keeps that true as the code changes. It reads the source with `ast`, so it
needs no import and sees exactly what a reader sees.
"""

from __future__ import annotations

import ast
import os

CORE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "plugins", "module_utils", "_distributor",
)


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def _undocumented(path: str) -> list[str]:
    """`file:line name` for the module itself and each public definition without a docstring."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    where = os.path.relpath(path, CORE)
    missing = []
    if ast.get_docstring(tree) is None:
        missing.append(f"{where}:1 (module)")
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if not isinstance(node, definitions) or not _is_public(node.name):
            continue
        if ast.get_docstring(node) is None:
            missing.append(f"{where}:{node.lineno} {node.name}")
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if (isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and _is_public(member.name) and ast.get_docstring(member) is None):
                    missing.append(f"{where}:{member.lineno} {node.name}.{member.name}")
    return missing


def test_every_public_name_of_the_core_has_a_docstring():
    missing = []
    for directory, _dirs, files in sorted(os.walk(CORE)):
        for name in sorted(files):
            if name.endswith(".py"):
                missing.extend(_undocumented(os.path.join(directory, name)))
    assert not missing, "no docstring:\n" + "\n".join(missing)

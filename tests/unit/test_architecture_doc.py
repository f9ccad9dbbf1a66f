# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/internal/architecture.md is where a new maintainer starts: every name it quotes must exist.

A quoted dotted name (`module.function`, `storage.local.LocalStorage._directory`,
`Class.method`) is resolved against the core's source with `ast`; a quoted `file.py` must be a
file of the core. A rename that forgets the document fails here instead of misleading a reader.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORE = os.path.join(ROOT, "plugins", "module_utils", "_distributor")
DOCUMENT = os.path.join(ROOT, "docs", "internal", "architecture.md")
DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
FILE = re.compile(r"\b[a-z0-9_/]+\.py\b")


def _members(node) -> dict:
    """Names defined in a module or class body → the node (None for a plain assignment)."""
    names = {}
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[item.name] = item
        elif isinstance(item, ast.Assign):
            names.update((target.id, None) for target in item.targets if isinstance(target, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names[item.target.id] = None
    return names


def _modules() -> dict[str, dict]:
    """Dotted module name below the core (storage.local) → its top-level names."""
    modules = {}
    for directory, _dirs, files in os.walk(CORE):
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                path = os.path.join(directory, name)
                dotted = os.path.relpath(path, CORE)[:-3].replace(os.sep, ".")
                with open(path, encoding="utf-8") as handle:
                    modules[dotted] = _members(ast.parse(handle.read()))
    return modules


MODULES = _modules()
CLASSES = {name: node for names in MODULES.values() for name, node in names.items() if isinstance(node, ast.ClassDef)}


def _module(name: str) -> str | None:
    """The module a quoted module name means: its whole path below the core, or the end of one
    path alone (`local.storage` for storage.local.storage); None for none or several."""
    found = [known for known in MODULES if known == name or known.endswith("." + name)]
    return found[0] if len(found) == 1 else None


def _resolves(dotted: str) -> bool | None:
    """True or False for a name of the core; None for one that is not (os.rename, a field path)."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        known = _module(".".join(parts[:cut]))
        if known is not None:
            return _attribute(MODULES[known], parts[cut:])
    if parts[0] in CLASSES:
        return _attribute(_members(CLASSES[parts[0]]), parts[1:])
    return None


def _attribute(names: dict, chain: list) -> bool:
    for index, part in enumerate(chain):
        if part not in names:
            return False
        node = names[part]
        if index + 1 < len(chain):
            if not isinstance(node, ast.ClassDef):
                return False
            names = _members(node)
    return True


def _quoted() -> list[str]:
    """Quoted spans of the prose and tables; a fenced block (the layer picture) is read whole."""
    with open(DOCUMENT, encoding="utf-8") as handle:
        text = handle.read()
    fenced = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    return fenced + re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


def test_every_quoted_name_of_the_core_exists():
    missing = sorted({name for span in _quoted() for name in DOTTED.findall(span)
                      if not name.endswith((".py", ".md", ".json")) and _resolves(name) is False})
    assert not missing, "architecture.md names what the code does not define: %s" % ", ".join(missing)


def test_every_quoted_file_of_the_core_exists():
    files = {os.path.relpath(os.path.join(d, f), CORE) for d, _dirs, names in os.walk(CORE) for f in names}
    basenames = {os.path.basename(f) for f in files}
    missing = sorted({name for span in _quoted() for name in FILE.findall(span)
                      if name not in files and name not in basenames and not name.startswith(("plugins/", "tests/", "benchmarks/"))})
    assert not missing, "architecture.md names files the core does not have: %s" % ", ".join(missing)


@pytest.mark.parametrize("name, expected", [
    ("operations.publish.publish", True), ("local.storage.LocalStorage.lock", True), ("Storage.read_bytes", True),
    ("operations.publish._recover", False), ("sftp.paths._gone", False), ("records.manifest._publishable_path_problem", False),
    ("os.rename", None),
])
def test_names_are_resolved_against_the_code(name, expected):
    """The check itself: a stale name of the old document is caught, a name outside the core is not judged."""
    assert _resolves(name) is expected

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core's layering, stated once in LAYERS and checked against its imports.

A module imports only from its own layer or those below it, no imports form a cycle, and no
import of the core hides inside a function body (where a cycle would surface only when that
function first runs, perhaps only on one backend). The source is read with `ast`, so every
import counts: those under `if TYPE_CHECKING:` and those deferred into functions too.
Third-party and standard-library imports are not the core's layering and may be deferred
(boto3, paramiko and markdown are imported where they are needed, jsonschema only for a document
the plain checks cannot vouch for).
"""

from __future__ import annotations

import ast
import os

import pytest

CORE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "plugins", "module_utils", "_distributor",
)
PACKAGE = "ansible_collections.distributor.core.plugins.module_utils._distributor"
TOP = "_distributor"

# Bottom first: the core's packages are its layers. A module imports from its own package and the
# packages before it, never from a later one; the core's own top-level modules ("") are the bottom.
# Module names are paths below the core: storage/local/storage.py is storage.local.storage.
LAYERS = ("", "records", "planning", "storage", "execution", "releases", "operations")


class Import:
    """One import of a core module: where it is written and whether it runs only inside a function."""

    def __init__(self, source: str, target: str, line: int, deferred: bool):
        self.source, self.target, self.line, self.deferred = source, target, line, deferred

    def __str__(self) -> str:
        return "%s:%d imports %s" % (self.source, self.line, self.target)


def _module_names() -> dict[str, str]:
    """Module name → file, for every .py of the core; a package's __init__ is the package."""
    names = {}
    for directory, _dirs, files in os.walk(CORE):
        for name in files:
            if not name.endswith(".py"):
                continue
            parts = os.path.relpath(os.path.join(directory, name), CORE)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names[".".join(parts) or TOP] = os.path.join(directory, name)
    return names


def _package_of(module: str, path: str) -> list[str]:
    """The package a module's relative imports start from."""
    if module == TOP:
        return []
    parts = module.split(".")
    return parts if path.endswith("__init__.py") else parts[:-1]


def _targets(node: ast.AST, package: list[str], modules: dict) -> list[str]:
    """The core modules one import statement loads (the most specific module each name is in)."""
    def known(parts: list[str]) -> str | None:
        name = ".".join(parts) or TOP
        return name if name in modules else None

    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names if alias.name.startswith(PACKAGE + ".")]
        return [known(name[len(PACKAGE) + 1:].split(".")) for name in names]
    if node.level:
        base = package[:len(package) - (node.level - 1)]
    elif node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."):
        base = []
        node = ast.ImportFrom(module=node.module[len(PACKAGE) + 1:] or None, names=node.names, level=0)
    else:
        return []
    prefix = base + (node.module.split(".") if node.module else [])
    return [known(prefix + [alias.name]) or known(prefix) for alias in node.names]


def core_imports() -> list[Import]:
    """Every import of a core module by a core module, anywhere in its source."""
    modules = _module_names()
    found = []
    for module, path in sorted(modules.items()):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
        package = _package_of(module, path)

        def visit(node: ast.AST, deferred: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(child, package, modules):
                        assert target is not None, "%s:%d imports a module the core does not have" % (module, child.lineno)
                        found.append(Import(module, target, child.lineno, deferred))
                visit(child, deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return found


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the module's package (its first component); None for a package the
    table does not place."""
    package = module.split(".")[0] if "." in module or module in PACKAGES else ""
    return LAYERS.index(package) if package in LAYERS else None


def packages() -> list[str]:
    """The core's packages: the folders below it that hold an __init__.py."""
    return sorted(name for name in os.listdir(CORE) if os.path.isfile(os.path.join(CORE, name, "__init__.py")))


PACKAGES = packages()


def cycles(edges: dict[str, set]) -> list[tuple[list[str], list[str]]]:
    """Per strongly connected group of modules: one cycle through it (first module repeated at
    the end) and all its members, since breaking that one cycle may leave others."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1 or node in edges.get(node, ()):
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return [(_cycle_through(min(group), group, edges), sorted(group)) for group in sorted(groups, key=min)]


def _cycle_through(start: str, group: set, edges: dict) -> list[str]:
    """The shortest way from `start` back to itself inside its group."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    return paths[node] + [start]
                if nxt in group and nxt not in paths:
                    paths[nxt] = paths[node] + [nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError("no cycle through %s" % start)


IMPORTS = core_imports()


def test_every_package_of_the_core_is_a_layer():
    assert sorted(PACKAGES) == sorted(LAYERS[1:]), "LAYERS in tests/unit/test_layers.py lists the core's packages, bottom first"


def test_the_architecture_document_draws_the_layers():
    """docs/internal/architecture.md's picture: one row a layer, top first, naming each module of
    that package (a package's own folder with its modules: `storage/local: a.py b.py`)."""
    drawn = architecture_picture()
    assert list(drawn) == [name or "core" for name in reversed(LAYERS)], "the picture's layers, top first"
    for layer, files in drawn.items():
        package = "" if layer == "core" else layer
        on_disk = sorted(os.path.relpath(path, os.path.join(CORE, package)) for module, path in _module_names().items()
                         if layer_of(module) == LAYERS.index(package) and not path.endswith("__init__.py"))
        assert sorted(files) == on_disk, "layer %s of the picture names other files than %s/ holds" % (layer, package or "the core")


def architecture_picture() -> dict[str, list[str]]:
    """{layer: files below its package} as the document's fenced picture draws them."""
    document = os.path.join(os.path.dirname(os.path.dirname(CORE)), "..", "docs", "internal", "architecture.md")
    with open(document, encoding="utf-8") as handle:
        picture = handle.read().split("```\n", 2)[1]
    drawn, layer, folder = {}, None, ""
    for line in picture.splitlines():
        head, _gap, rest = line.partition("  ")
        if head.strip():
            layer, folder = head.strip(), ""
            drawn[layer] = []
        for word in rest.split():
            if word.endswith(":"):
                folder = word[:-1] + "/"
            elif word.endswith(".py"):
                drawn[layer].append(folder + word)
    return drawn


def test_the_core_has_no_import_cycle():
    edges = {}
    for found in IMPORTS:
        edges.setdefault(found.source, set()).add(found.target)
    found_cycles = cycles(edges)
    assert not found_cycles, "import cycles:\n" + "\n".join(
        "%s (modules in this tangle: %s)" % (" → ".join(cycle), ", ".join(members)) for cycle, members in found_cycles)


def test_no_layer_imports_from_a_layer_above_it():
    upward = [
        "%s (%s) from %s" % (found, LAYERS[layer_of(found.target)] or "core", LAYERS[layer_of(found.source)] or "core")
        for found in IMPORTS
        if None not in (layer_of(found.source), layer_of(found.target)) and layer_of(found.target) > layer_of(found.source)
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


# The places a core import waits for its function, since a module run through Ansible compiles every
# module it imports on every run: the backend a destination names is imported when it is opened
# (storage/select.py), and the releases package when a destination has releases (operations/publish.py).
# Their edges still count above, so a cycle through them is still found.
DEFERRED = {("storage.select", "storage.sftp.storage"), ("storage.select", "storage.s3.storage"),
            ("operations.publish", "releases.home"), ("operations.publish", "releases.publish"),
            ("operations.publish", "releases.rules")}


def test_no_import_of_the_core_is_deferred_into_a_function():
    deferred = [str(found) for found in IMPORTS if found.deferred and (found.source, found.target) not in DEFERRED]
    assert not deferred, "imports inside a function body (import at the top; a cycle is not hidden this way):\n" + "\n".join(deferred)


def test_the_walk_sees_the_imports_that_matter():
    """Guards the checks above against a walk that finds nothing: known edges of every kind."""
    seen = {(found.source, found.target) for found in IMPORTS}
    assert {("planning.decide", "planning.ownership"), ("records.attributes", "globs"), ("storage.judging", "errors"),
            ("operations.publish", "planning.report")} <= seen


@pytest.mark.parametrize("edges, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a", "b"}, "d": {"a"}}, [(["a", "b", "c", "a"], ["a", "b", "c"])]),
    ({"a": {"a"}}, [(["a", "a"], ["a"])]),
    ({"a": {"b"}, "b": {"c"}, "d": {"c"}}, []),
], ids=["three modules", "a module importing itself", "a diamond is no cycle"])
def test_cycles_are_found_and_named(edges, expected):
    assert cycles(edges) == expected

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue #32's playbook row: distributor_publish through `ansible-playbook` next to the module an
operator would otherwise reach for, `ansible.posix.synchronize` with `delete: true`.

    python benchmarks/playbook_sync.py [--files 10000] [--rounds 3] [--quick] [--posix DIR] [--seed N]

One bundle of N x 4 KiB files and a second version of it, 10% of the files rewritten (same size,
newer mtime, as a rebuild leaves them) and a newer manifest. Each round gives each tool a fresh
root and runs three one-task playbooks on localhost with `connection: local`, each timed whole
(wall and CPU of ansible-playbook and every process it waited for): the first publish, the same
bundle again (distributor's skip, rsync's no-op), the second version (replace 10%, every other
mtime kept) and, into a second root the first version has been published to (not measured), the
same change in a tree rebuilt whole (every mtime new: rsync must look into every file); and, once
a round, a playbook of one `debug` task, Ansible's fixed cost. (Until 2026-12-07 the rebuilt tree
went into the first root after the first version again: distributor skips an older version of a
bundle by default, `transfer.on_destination_newer`, so that phase measured it skipping a bundle it
already held.) The tools take turns going first from round to round, `os.sync()` before each run.
All run under
.venv's ansible-playbook (one ansible-core), with ANSIBLE_COLLECTIONS_PATH holding the distributor
collection and the ansible.posix that the `ansible` package installs into .build/bench-tools
(`--posix`, a directory holding ansible_collections/ansible/posix or a virtual environment with
one in its site-packages). synchronize on localhost with `connection: local` runs rsync locally,
its defaults as a user gets them (`--archive --compress --delete-after --delay-updates`); the
manifest is excluded, as distributor does not publish it. After the last phase both trees must
hold the same files with the same bytes. Reports medians and the median of per-round ratios;
--quick runs 2,000 files, 2 rounds. Writes benchmarks/results/<time>-playbook-sync.json and .md.

Three floors run in the same rounds, each a one-task playbook: the contract floor
(contract_floor.py, the smallest program found that does a publish's reads, checks, records and
durable writes, as rows.py runs it) as a module in the playbook's `library/`; the same floor
shipping the collection, its source with distributor_publish's own imports added in a block that
never runs, so that Ansible packs and sends distributor_publish's payload (every backend,
releases, shared roots) while the floor runs none of it; and the contract floor in the controller,
run by an action plugin in the task's worker process, with no payload and no module process. A
goal below the first floor's ratio is out of reach for any module process keeping the contract;
the second is what this collection's payload costs through AnsiballZ; the third bounds
distributor as it runs here since 2026-12-07: on localhost with the controller's Python, its
action plugin runs the module in the task's worker (plugins/plugin_utils/in_controller.py), so
distributor's row is that floor's path plus the collection's own work.
"""

from __future__ import annotations

import argparse
import ast
import filecmp
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

from bundles import BundleSpec, change, generate
from harness import BENCH_DIR, COLLECTIONS, REPO_ROOT, time_command, write_results
from rows import CONTRACT_TOOL

# (phase, bundle version, which of a round's two roots); "second root" publishes A there, unmeasured,
# for the regenerated replace.
PHASES = (("first", "A", 0), ("no-op", "A", 0), ("replace 10%", "B", 0), ("second root", "A", 1),
          ("replace 10%, regenerated", "C", 1))
SHIPPING = CONTRACT_TOOL + " shipping the collection"
IN_CONTROLLER = CONTRACT_TOOL + " in the controller"
FLOORS = (CONTRACT_TOOL, SHIPPING, IN_CONTROLLER)
TOOLS = ("distributor", "synchronize") + FLOORS
GOALS = {"first": 0.9, "no-op": 1.0, "replace 10%": 1.0, "replace 10%, regenerated": 0.5}
TASKS = {
    "distributor": {"name": "publish", "distributor.core.distributor_publish": {
        "source": "{{ source }}", "pipeline": {"id": "bench"},
        "destination": {"id": "bench", "storage": {"type": "local", "root": "{{ root }}"}, "path": "site"}}},
    "synchronize": {"name": "synchronize", "ansible.posix.synchronize": {
        "src": "{{ source }}/", "dest": "{{ root }}/site/", "delete": True, "rsync_opts": ["--exclude=/manifest.json"]}},
    CONTRACT_TOOL: {"name": "floor", "contract_floor": {"source": "{{ source }}", "root": "{{ root }}"}},
    SHIPPING: {"name": "floor shipping the collection", "contract_floor_shipping": {"source": "{{ source }}", "root": "{{ root }}"}},
    IN_CONTROLLER: {"name": "floor in the controller", "contract_floor_in_controller": {"source": "{{ source }}", "root": "{{ root }}"}},
    # Ansible's fixed cost: the same run with a task that ships no module.
    "debug": {"name": "debug", "ansible.builtin.debug": {"msg": "{{ source }}"}},
}


def posix_collections(where: str) -> str:
    """The directory that holds ansible_collections/ansible/posix: `where` itself or the
    site-packages of the virtual environment `where`."""
    found = [where] + sorted(glob.glob(os.path.join(where, "lib", "python3*", "site-packages")))
    for candidate in found:
        if os.path.isdir(os.path.join(candidate, "ansible_collections", "ansible", "posix")):
            return os.path.abspath(candidate)
    raise SystemExit("no ansible_collections/ansible/posix under %s: `make bench` installs the ansible package "
                     "into .build/bench-tools (benchmarks/requirements.txt), or pass --posix" % where)


def floor_modules(library: str) -> None:
    """contract_floor.py as two modules: as it is, and shipping the collection (above). The second
    names every collection import of distributor_publish's source, however written, so that its
    payload is the module's and changes with it; a module naming none would ship nothing extra."""
    os.makedirs(library)
    with open(os.path.join(BENCH_DIR, "contract_floor.py")) as handle:
        floor = handle.read()
    with open(os.path.join(COLLECTIONS, "ansible_collections", "distributor", "core", "plugins", "modules",
                           "distributor_publish.py")) as handle:
        tree = ast.parse(handle.read())
    imports = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
        "ansible_collections.") or isinstance(node, ast.Import) and node.names[0].name.startswith("ansible_collections.")]
    if not imports:
        raise RuntimeError("distributor_publish.py names no module_utils of the collection: the shipping floor would ship nothing")
    future = "from __future__ import annotations\n"
    shipping = floor.replace(future, future + 'if __name__ == "never":  # Ansible packs what these name; nothing runs it\n' +
                             "".join("    %s\n" % line for line in imports), 1)
    for name, text in (("contract_floor.py", floor), ("contract_floor_shipping.py", shipping)):
        with open(os.path.join(library, name), "w") as handle:
            handle.write(text)


# An action plugin that runs the contract floor in the task's worker process on the controller:
# what a module costs with no AnsiballZ payload and no process of its own, the path distributor's
# own action plugins take on localhost (plugins/plugin_utils/in_controller.py).
IN_CONTROLLER_PLUGIN = '''
import contextlib, io, json, sys
from ansible.plugins.action import ActionBase
sys.path.insert(0, %r)
import contract_floor


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            try:
                contract_floor.publish([self._task.args["source"], self._task.args["root"]])
            except SystemExit as ended:  # a refusal prints its failure and exits, as the module would
                result["rc"] = ended.code
        result.update(json.loads(printed.getvalue().strip().splitlines()[-1]))
        return result
'''


def playbooks(workdir: str) -> dict:
    floor_modules(os.path.join(workdir, "library"))
    os.makedirs(os.path.join(workdir, "action_plugins"))
    with open(os.path.join(workdir, "action_plugins", "contract_floor_in_controller.py"), "w") as handle:
        handle.write(IN_CONTROLLER_PLUGIN % BENCH_DIR)
    made = {}
    for tool, task in TASKS.items():
        made[tool] = os.path.join(workdir, "%s.yml" % tool)
        with open(made[tool], "w") as handle:
            yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}], handle, sort_keys=False)
    return made


def run(playbook: str, source: str, root: str, posix: str):
    """One ansible-playbook run: wall and CPU (user + sys of it and every process it waited for)."""
    binary = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.pathsep.join((COLLECTIONS, posix)), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_RETRY_FILES_ENABLED="0")
    return time_command([binary, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
                         "-e", "source=" + source, "-e", "root=" + root, playbook], env=env)


def same_trees(one: str, other: str, changed: list) -> None:
    """Both tools left the same files, and the rewritten ones with the new bytes."""
    def listing(top):
        return sorted(os.path.relpath(os.path.join(d, f), top) for d, _dirs, files in os.walk(top) for f in files)
    mine = [p for p in listing(one) if not p.startswith(".distributor")]
    if mine != listing(other):
        raise RuntimeError("%s and %s hold different files" % (one, other))
    _match, mismatch, errors = filecmp.cmpfiles(one, other, changed, shallow=False)
    if mismatch or errors:
        raise RuntimeError("%s and %s differ in %s" % (one, other, (mismatch + errors)[:5]))


def measure(files: int, rounds: int, workdir: str, seed: int, posix: str) -> list[dict]:
    spec = BundleSpec("playbook", "small", files, 4096)
    sources = {"A": generate(os.path.join(workdir, "A"), spec, seed), "B": os.path.join(workdir, "B")}
    built = time.time() - 3600  # the rewrite below must show in the mtime, which rsync compares in whole seconds
    for directory, _dirs, names in os.walk(sources["A"]):
        for name in names:
            os.utime(os.path.join(directory, name), (built, built))
    subprocess.run(["cp", "-a", sources["A"], sources["B"]], check=True)  # the same mtimes, as a rebuild keeps them
    changed = change(sources["B"], spec, seed)
    sources["C"] = os.path.join(workdir, "C")
    subprocess.run(["cp", "-r", sources["B"], sources["C"]], check=True)  # the same change rebuilt whole: every mtime new
    books = playbooks(workdir)
    rows = []
    for round_ in range(rounds):
        # Forward and backward by turns, shifted every second round: within four rounds each tool
        # goes first, and none always runs right after the same other one.
        base = TOOLS if round_ % 2 == 0 else TOOLS[::-1]
        order = base[round_ // 2 % len(TOOLS):] + base[:round_ // 2 % len(TOOLS)]
        # Named by each tool's place, not its name: `-e root=...` must hold no space.
        roots = {tool: [os.path.join(workdir, "root-%d-%d-%d" % (TOOLS.index(tool), round_, second)) for second in (0, 1)]
                 for tool in TOOLS}
        for pair in roots.values():
            for root in pair:
                os.makedirs(root)
        os.sync()
        fixed = run(books["debug"], sources["A"], roots["distributor"][0], posix)
        rows.append(dict(round=round_, phase="-", tool="debug", wall=fixed.seconds, cpu=fixed.cpu_seconds))
        for phase, version, second in PHASES:
            for tool in order:
                os.sync()
                timing = run(books[tool], sources[version], roots[tool][second], posix)
                if phase == "second root":
                    continue
                rows.append(dict(round=round_, phase=phase, tool=tool, wall=timing.seconds, cpu=timing.cpu_seconds))
                print("round %d %-24s %-38s %6.2f s (cpu %.2f)" % (round_, phase, tool, timing.seconds, timing.cpu_seconds),
                      flush=True)
        for tool in (tool for tool in TOOLS if tool != "synchronize"):
            for second in (0, 1):
                same_trees(os.path.join(roots[tool][second], "site"), os.path.join(roots["synchronize"][second], "site"), changed)
    return rows


def summary(rows: list[dict], files: int) -> list[dict]:
    """Per phase: each tool's median wall and CPU, and the median of its per-round ratios to
    synchronize, the rounds' own load cancelling out of each ratio ("ratio wall" is distributor's,
    as targets.py has always read it; "contract floor ratio wall" is a floor's)."""
    lines = []
    for phase in GOALS:
        by_tool = {tool: {r["round"]: r for r in rows if (r["phase"], r["tool"]) == (phase, tool)} for tool in TOOLS}
        theirs = by_tool["synchronize"]
        line = {"files": files, "phase": phase, "goal": GOALS[phase], "rounds": len(theirs)}
        for key in ("wall", "cpu"):
            for tool, mine in by_tool.items():
                line["%s %s" % (tool, key)] = statistics.median(r[key] for r in mine.values())
                if tool != "synchronize":
                    ratio = "ratio " + key if tool == "distributor" else "%s ratio %s" % (tool, key)
                    line[ratio] = statistics.median(mine[i][key] / theirs[i][key] for i in mine)
        lines.append(line)
    fixed = [r for r in rows if r["tool"] == "debug"]
    lines.append({"files": files, "phase": "one debug task", "distributor wall": statistics.median(r["wall"] for r in fixed),
                  "distributor cpu": statistics.median(r["cpu"] for r in fixed)})
    return lines


def markdown(lines: list[dict]) -> str:
    table = ["| files | phase | distributor wall s (CPU) | synchronize wall s (CPU) | wall ratio | CPU ratio | goal (wall) "
             "| %s wall s, ratio | %s wall s, ratio | %s wall s, ratio |" % FLOORS,
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for line in lines:
        if "goal" not in line:
            table.append("| {:,} | {} (Ansible's fixed cost) | {:.2f} ({:.2f}) | | | | | | | |".format(
                line["files"], line["phase"], line["distributor wall"], line["distributor cpu"]))
            continue
        table.append("| {:,} | {} | {:.2f} ({:.2f}) | {:.2f} ({:.2f}) | {:.2f}x | {:.2f}x | ≤ {:.1f}x | {} | {} | {} |".format(
            line["files"], line["phase"], line["distributor wall"], line["distributor cpu"], line["synchronize wall"],
            line["synchronize cpu"], line["ratio wall"], line["ratio cpu"], line["goal"],
            *("%.2f, %.2fx" % (line[floor + " wall"], line[floor + " ratio wall"]) for floor in FLOORS)))
    return "\n".join(table) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 files, 2 rounds")
    parser.add_argument("--posix", default=os.path.join(REPO_ROOT, ".build", "bench-tools"),
                        help="where ansible_collections/ansible/posix is (default: .build/bench-tools)")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    files, rounds = (min(args.files, 2000), min(args.rounds, 2)) if args.quick else (args.files, args.rounds)
    posix = posix_collections(args.posix)
    workdir = tempfile.mkdtemp(prefix="distributor-playbook-")
    try:
        rows = measure(files, rounds, workdir, args.seed, posix)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_results("playbook-sync", {"rows": rows, "summary": summary(rows, files), "posix": posix}, markdown(summary(rows, files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

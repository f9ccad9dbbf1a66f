# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue #32's playbook row: distributor_publish through `ansible-playbook` next to the module an
operator would otherwise reach for, `ansible.posix.synchronize` with `delete: true`.

    python benchmarks/playbook_sync.py [--files 10000] [--rounds 3] [--quick] [--posix DIR] [--seed N]

One bundle of N x 4 KiB files and a second version of it, 10% of the files rewritten (same size,
newer mtime, as a rebuild leaves them) and a newer manifest. Each round gives each tool a fresh
root and runs three one-task playbooks on localhost with `connection: local`, each timed whole
(wall and CPU of ansible-playbook and every process it waited for): the first publish, the same
bundle again (distributor's skip, rsync's no-op), the second version (replace 10%, every other
mtime kept) and, after going back to the first version (not measured), the same change in a tree
rebuilt whole (every mtime new: rsync must look into every file); and, once a round, a playbook of one `debug` task, Ansible's fixed cost. The tools
alternate which goes first from round to round, `os.sync()` before each run. Both run under
.venv's ansible-playbook (one ansible-core), with ANSIBLE_COLLECTIONS_PATH holding the distributor
collection and the ansible.posix that the `ansible` package installs into .build/bench-tools
(`--posix`, a directory holding ansible_collections/ansible/posix or a virtual environment with
one in its site-packages). synchronize on localhost with `connection: local` runs rsync locally,
its defaults as a user gets them (`--archive --compress --delete-after --delay-updates`); the
manifest is excluded, as distributor does not publish it. After the last phase both trees must
hold the same files with the same bytes. Reports medians and the median of per-round ratios;
--quick runs 2,000 files, 2 rounds. Writes benchmarks/results/<time>-playbook-sync.json and .md.
"""

from __future__ import annotations

import argparse
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
from harness import COLLECTIONS, REPO_ROOT, time_command, write_results

# (phase, bundle version); "back" returns each root to A, unmeasured, for the regenerated replace.
PHASES = (("first", "A"), ("no-op", "A"), ("replace 10%", "B"), ("back", "A"), ("replace 10%, regenerated", "C"))
TOOLS = ("distributor", "synchronize")
GOALS = {"first": 0.9, "no-op": 1.0, "replace 10%": 1.0, "replace 10%, regenerated": 0.5}
TASKS = {
    "distributor": {"name": "publish", "distributor.core.distributor_publish": {
        "source": "{{ source }}", "pipeline": {"id": "bench"},
        "destination": {"id": "bench", "storage": {"type": "local", "root": "{{ root }}"}, "path": "site"}}},
    "synchronize": {"name": "synchronize", "ansible.posix.synchronize": {
        "src": "{{ source }}/", "dest": "{{ root }}/site/", "delete": True, "rsync_opts": ["--exclude=/manifest.json"]}},
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


def playbooks(workdir: str) -> dict:
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
        order = TOOLS if round_ % 2 == 0 else TOOLS[::-1]
        roots = {tool: os.path.join(workdir, "%s-%d" % (tool, round_)) for tool in TOOLS}
        for root in roots.values():
            os.makedirs(root)
        os.sync()
        fixed = run(books["debug"], sources["A"], roots["distributor"], posix)
        rows.append(dict(round=round_, phase="-", tool="debug", wall=fixed.seconds, cpu=fixed.cpu_seconds))
        for phase, version in PHASES:
            for tool in order:
                os.sync()
                timing = run(books[tool], sources[version], roots[tool], posix)
                if phase == "back":
                    continue
                rows.append(dict(round=round_, phase=phase, tool=tool, wall=timing.seconds, cpu=timing.cpu_seconds))
                print("round %d %-12s %-12s %6.2f s (cpu %.2f)" % (round_, phase, tool, timing.seconds, timing.cpu_seconds),
                      flush=True)
        same_trees(os.path.join(roots["distributor"], "site"), os.path.join(roots["synchronize"], "site"), changed)
    return rows


def summary(rows: list[dict], files: int) -> list[dict]:
    """Per phase: each tool's median wall and CPU, and the median of the per-round ratios."""
    lines = []
    for phase in GOALS:
        mine = {r["round"]: r for r in rows if (r["phase"], r["tool"]) == (phase, "distributor")}
        theirs = {r["round"]: r for r in rows if (r["phase"], r["tool"]) == (phase, "synchronize")}
        line = {"files": files, "phase": phase, "goal": GOALS[phase], "rounds": len(mine)}
        for key in ("wall", "cpu"):
            line["distributor " + key] = statistics.median(r[key] for r in mine.values())
            line["synchronize " + key] = statistics.median(r[key] for r in theirs.values())
            line["ratio " + key] = statistics.median(mine[i][key] / theirs[i][key] for i in mine)
        lines.append(line)
    fixed = [r for r in rows if r["tool"] == "debug"]
    lines.append({"files": files, "phase": "one debug task", "distributor wall": statistics.median(r["wall"] for r in fixed),
                  "distributor cpu": statistics.median(r["cpu"] for r in fixed)})
    return lines


def markdown(lines: list[dict]) -> str:
    table = ["| files | phase | distributor wall s (CPU) | synchronize wall s (CPU) | wall ratio | CPU ratio | goal (wall) |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for line in lines:
        if "goal" not in line:
            table.append("| {:,} | {} (Ansible's fixed cost) | {:.2f} ({:.2f}) | | | | |".format(
                line["files"], line["phase"], line["distributor wall"], line["distributor cpu"]))
            continue
        table.append("| {:,} | {} | {:.2f} ({:.2f}) | {:.2f} ({:.2f}) | {:.2f}x | {:.2f}x | ≤ {:.1f}x |".format(
            line["files"], line["phase"], line["distributor wall"], line["distributor cpu"], line["synchronize wall"],
            line["synchronize cpu"], line["ratio wall"], line["ratio cpu"], line["goal"]))
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

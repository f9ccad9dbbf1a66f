# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The floor of issue #32's replace row: the smallest program doing a local replace's work, next
to distributor_publish (the module process) and `rsync -a`, interleaved, CPU of each process.

    python benchmarks/replace_floor.py [--files 10000] [--rounds 5] [--quick] [--tree NAME=PATH ...] [--seed N]

The floor (`--floor SOURCE ROOT [--ansible]`, run as a process of its own) reads the bundle's
manifest, `lstat`s every listed file (regular, the listed size), reads the state and finds the
files whose recorded digest or size differs, reads and hashes each of those (the verified read),
stages it next to its target, makes the staged files durable with one `syncfs`, renames them into
place, and writes the state again (every record, with the publication's time, durably: temporary
file, `fsync`, rename); when no file differs and the state holds the same manifest it writes
nothing (a skip), and into an empty root it is a first publish's floor. No path rules, no schema, no plan digest, no journal, no lock, no result
beyond counts. With `--ansible` it also parses its arguments with `AnsibleModule` and ends with
`exit_json`, the fixed cost of any Ansible module. Each round gives each tool a fresh root and
its first publish (not measured), then the replace of 10% of the files; `--tree` (as in
compare.py) runs the module of each checkout given, before and after a change. Prints the medians;
benchmarks/README.md quotes them. --quick: 2,000 files, 3 rounds.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time

STATE = ".distributor.json"
SITE = "site"


def floor(source: str, root: str, ansible: bool) -> None:
    """A replace's reads, checks and durable writes and nothing else: its CPU bounds what any
    Python program doing that work can reach, whatever else the module must do."""
    module = None
    if ansible:
        from ansible.module_utils import basic  # pylint: disable=import-outside-toplevel
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": {"source": source, "root": root}}).encode()
        basic._ANSIBLE_PROFILE = "legacy"
        module = basic.AnsibleModule(argument_spec={"source": {"type": "path"}, "root": {"type": "path"}})
    with open(os.path.join(source, "manifest.json"), "rb") as handle:
        manifest = json.loads(handle.read())
    files = manifest["files"]
    for entry in files:
        found = os.lstat(os.path.join(source, entry["path"]))
        if not stat.S_ISREG(found.st_mode) or found.st_size != entry["size"]:
            raise SystemExit("%s is not the listed file" % entry["path"])
    site = os.path.join(root, SITE)
    os.makedirs(site, exist_ok=True)
    try:
        with open(os.path.join(site, STATE), "rb") as handle:
            state = json.loads(handle.read())
    except FileNotFoundError:
        state = {"source": None, "outputs": []}
    recorded = {o["path"]: (o["sha256"], o["size"]) for o in state["outputs"]}
    staged = []
    for entry in files:
        if recorded.get(entry["path"]) == (entry["sha256"], entry["size"]):
            continue
        with open(os.path.join(source, entry["path"]), "rb") as handle:
            data = handle.read()
        if "sha256:" + hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise SystemExit("%s does not match the manifest" % entry["path"])
        target = os.path.join(site, entry["path"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd = os.open(target + ".staged", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.close(fd)
        staged.append(target)
    if not staged and state["source"] == {"manifest": manifest}:
        finish(module, {"changed": False, "written": 0})  # a skip writes nothing
        return
    fd = os.open(site, os.O_RDONLY)
    if ctypes.CDLL(None, use_errno=True).syncfs(fd) != 0:
        raise OSError(ctypes.get_errno(), "syncfs")
    os.close(fd)
    for target in staged:
        os.rename(target + ".staged", target)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    outputs = [{"path": e["path"], "kind": "source", "source_path": e["path"], "sha256": e["sha256"], "size": e["size"],
                "created_at": now, "updated_at": now} for e in files]
    state = {"schema_version": 2, "created_at": now, "updated_at": now, "source": {"manifest": manifest}, "outputs": outputs}
    fd = os.open(os.path.join(site, STATE + ".new"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, json.dumps(state, separators=(", ", ": ")).encode())
    os.fsync(fd)
    os.close(fd)
    os.rename(os.path.join(site, STATE + ".new"), os.path.join(site, STATE))
    finish(module, {"changed": bool(staged), "written": len(staged)})


def finish(module, result: dict) -> None:
    if module is not None:
        module.exit_json(**result)
    print(json.dumps(result))


def measure(trees: dict, files: int, rounds: int, workdir: str, seed: int) -> dict:
    # Here, not at the top: the floor's own process must not pay for the harness, which imports the collection.
    from bundles import BundleSpec, change, generate  # pylint: disable=import-outside-toplevel
    from harness import COLLECTIONS, module_from, time_command  # pylint: disable=import-outside-toplevel
    trees = trees or {"distributor module": COLLECTIONS}
    spec = BundleSpec("floor", "small", files, 4096)
    old = generate(os.path.join(workdir, "old"), spec, seed)
    built = time.time() - 3600  # the rewrite must show in the mtime, which rsync compares in whole seconds
    for directory, _dirs, names in os.walk(old):
        for name in names:
            os.utime(os.path.join(directory, name), (built, built))
    new = os.path.join(workdir, "new")
    subprocess.run(["cp", "-a", old, new], check=True)
    change(new, spec, seed)

    tools = {name: module_from(tree, SITE) for name, tree in trees.items()}
    tools.update({
        "floor": lambda source, root: time_command([sys.executable, __file__, "--floor", source, root]),
        "floor + AnsibleModule": lambda source, root: time_command([sys.executable, __file__, "--floor", source, root, "--ansible"]),
        "rsync -a": lambda source, root: time_command(["rsync", "-a", "--exclude=/manifest.json", source + "/",
                                                       os.path.join(root, SITE) + "/"]),
    })
    cpu = {tool: [] for tool in tools}
    loads = [os.getloadavg()[0]]
    for round_ in range(rounds):
        order = list(tools) if round_ % 2 == 0 else list(tools)[::-1]
        # Fresh roots, kept until the end: deleting a large tree just before a round inflates
        # the next one's syncfs (the disk discards).
        roots = {tool: os.path.join(workdir, "%d-%s" % (round_, tool.replace(" ", "_"))) for tool in tools}
        for tool in order:
            os.makedirs(roots[tool])
            tools[tool](old, roots[tool])
        for tool in order:
            os.sync()
            cpu[tool].append(tools[tool](new, roots[tool]).cpu_seconds)
        print("round %d: %s" % (round_, ", ".join("%s %.3f s" % (t, cpu[t][-1]) for t in tools)), flush=True)
        loads.append(os.getloadavg()[0])
    return {"files": files, "cpu": cpu, "load": loads, "median": {tool: statistics.median(values) for tool, values in cpu.items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--floor", nargs=2, metavar=("SOURCE", "ROOT"), help="run the floor program itself")
    parser.add_argument("--ansible", action="store_true", help="the floor with AnsibleModule and exit_json")
    parser.add_argument("--tree", action="append", default=[],
                        help="NAME=PATH of a directory holding ansible_collections (default: module=the harness's)")
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2,000 files, 3 rounds")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    if args.floor:
        floor(*args.floor, ansible=args.ansible)
        return 0
    files, rounds = (min(args.files, 2000), min(args.rounds, 3)) if args.quick else (args.files, args.rounds)
    workdir = tempfile.mkdtemp(prefix="distributor-floor-")
    try:
        measured = measure(dict(tree.split("=", 1) for tree in args.tree), files, rounds, workdir, args.seed)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rsync = measured["median"]["rsync -a"]
    for tool, value in measured["median"].items():
        print("%-22s median CPU %.3f s = %.2fx rsync -a" % (tool, value, value / rsync))
    print("load average %s over the rounds" % " ".join("%.1f" % load for load in measured["load"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

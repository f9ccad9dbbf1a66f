# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A shared root of many owners: what one owner's publish costs as the root grows.

    python benchmarks/shared_root.py [--outputs 1000,10000,100000] [--owners 50] [--repeat 3] [--quick]

The root's state is written directly (every owner with its manifest and its outputs, as a real
shared root records them); the owner under test then plans a publish of a changed bundle
(check mode: reading, parsing, deciding, planning, no writes) and publishes its unchanged one
(a skip). Output files of the other owners need not exist: neither a plan nor a skip opens them.
Each is timed `--repeat` times, interleaved, with the cyclic garbage collector off as the module
runs a publish (operations.adapter.run_module); the round with the least CPU is shown (wall, CPU in
brackets): this machine's other load moves wall time far more than CPU time.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import shutil
import sys
import tempfile
from dataclasses import replace

from harness import publish, time_call, write_results
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest import Manifest, ManifestFile, compute_digest
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import write_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import (
    Output, Owner, OwnerKey, State, serialize_state)

STAMP = "2026-06-04T12:00:00Z"


LATER = "2026-06-05T12:00:00Z"


def _content(owner: int, index: int) -> bytes:
    return b"%d/%d" % (owner, index)


def _manifest(owner: int, count: int, created: str) -> Manifest:
    files = tuple(ManifestFile("o%02d/f%06d.txt" % (owner, i), "sha256:" + hashlib.sha256(_content(owner, i)).hexdigest(),
                               len(_content(owner, i))) for i in range(count))
    return Manifest(1, "owner-%02d" % owner, compute_digest(files), created, files)


def _root(root: str, outputs: int, owners: int) -> Manifest:
    """The root's state; returns the manifest it records for owner p00."""
    per = outputs // owners
    records, owner_records = [], []
    manifests = [_manifest(owner, per, STAMP) for owner in range(owners)]
    for owner, m in enumerate(manifests):
        key = OwnerKey("p%02d" % owner, "shared")
        owner_records.append(Owner(key, "replace", m, None))
        records += [Output(f.path, "source", f.path, None, None, f.sha256, f.size, STAMP, STAMP, key, m.id, m.digest, m.created)
                    for f in m.files]
    state = State("shared_root", 3, STAMP, STAMP, None, "0.1.0", tuple(owner_records), tuple(records))
    os.makedirs(os.path.join(root, "site"))
    with open(os.path.join(root, "site", ".distributor.json"), "wb") as handle:
        handle.write(serialize_state(state))
    return manifests[0]


def _bundle(directory: str, m: Manifest) -> str:
    for i, f in enumerate(m.files):
        path = os.path.join(directory, f.path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(_content(0, i))
    write_manifest(directory, m)
    return directory


def as_the_module_runs(*args, **kwargs):
    """time_call of publish with the collector off, as distributor_publish runs it: its passes
    over 100,000 records are a cost no module run pays."""
    gc.collect()
    gc.disable()
    try:
        return time_call(publish, *args, **kwargs)
    finally:
        gc.enable()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--outputs", default="1000,10000,100000")
    parser.add_argument("--owners", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="rounds per case; the one with the least CPU is shown")
    parser.add_argument("--quick", action="store_true", help="up to 10,000 outputs")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.outputs.split(",") if not args.quick or int(c) <= 10000]
    lines = ["| outputs in the root | owners | state MiB | one owner's plan (check mode) s (CPU) | its skip s (CPU) |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    rows = []
    for count in counts:
        workdir = tempfile.mkdtemp(prefix="distributor-shared-")
        try:
            root = os.path.join(workdir, "root")
            mine = _root(root, count, args.owners)
            dest = {"id": "shared", "storage": {"type": "local", "root": root}, "path": "site", "state": {"mode": "shared_root"}}
            same = _bundle(os.path.join(workdir, "same"), mine)
            newer = _bundle(os.path.join(workdir, "newer"), replace(mine, created=LATER))
            plans, skips = [], []
            for _round in range(args.repeat):
                planned, result = as_the_module_runs(newer, {"id": "p00"}, dest, check_mode=True, full_result=False)
                assert result["action"] == "replace", result["reason"]
                plans.append(planned)
                skip, result = as_the_module_runs(same, {"id": "p00"}, dest, full_result=False)
                assert result["action"] == "skip", result["reason"]
                skips.append(skip)
            planned, skip = (min(timings, key=lambda t: t.cpu_seconds) for timings in (plans, skips))
            size = os.path.getsize(os.path.join(root, "site", ".distributor.json")) / 2**20
            rows.append({"outputs": count, "owners": args.owners, "state_mib": size, "plan": planned.seconds,
                         "plan_cpu": planned.cpu_seconds, "skip": skip.seconds, "skip_cpu": skip.cpu_seconds})
            lines.append("| {:,} | {} | {:.1f} | {:.2f} ({:.2f}) | {:.2f} ({:.2f}) |".format(
                count, args.owners, size, planned.seconds, planned.cpu_seconds, skip.seconds, skip.cpu_seconds))
            print(lines[-1], flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    write_results("shared", {"rows": rows}, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

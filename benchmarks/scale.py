# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time against files: first publish, skip and 10% replace of N tiny (4 KiB) files, local
destination, distributor in-process and as the module process Ansible runs, next to `rsync -a`.

    python benchmarks/scale.py [--counts 1000,10000,100000] [--quick] [--seed N]

Writes benchmarks/results/<time>-scale.json and .md; benchmarks/plot.py draws the png from it.
The 100,000-file run takes minutes on 2 cores: --quick stops at 10,000.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from bundles import BundleSpec, change, generate
from harness import BENCH_DIR, git_revision, pipeline, publish, run_module, time_call, time_command

RESULTS = os.path.join(BENCH_DIR, "results")


def _module(source: str, root: str, workdir: str):
    """The module as Ansible runs it (a process reading its arguments from a file)."""
    return run_module({"source": source, "pipeline": pipeline(False), "destination": _destination(root)},
                      os.path.join(workdir, "args.json"))


def _destination(root: str) -> dict:
    return {"id": "scale", "storage": {"type": "local", "root": root}, "path": "site"}


def _rsync(source: str, target: str):
    return time_command(["rsync", "-a", "--exclude=/manifest.json", source + "/", target + "/"])


def measure(count: int, workdir: str, seed: int) -> list[dict]:
    spec = BundleSpec("scale", "small", count, 4096)
    base = os.path.join(workdir, str(count))
    source = generate(os.path.join(base, "bundle"), spec, seed)
    rows = []

    def record(phase, tool, timing, **extra):
        rows.append(dict(files=count, phase=phase, tool=tool, wall=round(timing.seconds, 3),
                         cpu=round(timing.cpu_seconds, 3), **extra))
        print("%7d %-8s %-22s %7.2f s (cpu %.2f)" % (count, phase, tool, timing.seconds, timing.cpu_seconds), flush=True)

    roots = {name: os.path.join(base, name) for name in ("core", "module", "rsync")}
    for root in roots.values():
        os.makedirs(root)
    rsync_target = os.path.join(roots["rsync"], "site")
    for phase in ("first", "skip", "replace"):
        if phase == "replace":
            change(source, spec, seed)
        os.sync()  # the bundle's own dirty pages are not this phase's cost
        timing, result = time_call(publish, source, pipeline(False), _destination(roots["core"]), full_result=False)
        record(phase, "distributor", timing, action=result["action"], written=len(result["written"]))
        os.sync()
        record(phase, "distributor module", _module(source, roots["module"], base))
        os.sync()
        record(phase, "rsync -a", _rsync(source, rsync_target))
        os.sync()
    shutil.rmtree(base, ignore_errors=True)
    return rows


def markdown(rows: list[dict]) -> str:
    def wall(count, phase, tool):
        return next(r["wall"] for r in rows if (r["files"], r["phase"], r["tool"]) == (count, phase, tool))

    lines = ["| files | phase | distributor s | module process s | rsync -a s | distributor / rsync | module / rsync |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for count in sorted({r["files"] for r in rows}):
        for phase in ("first", "skip", "replace"):
            mine, module, theirs = (wall(count, phase, t) for t in ("distributor", "distributor module", "rsync -a"))
            lines.append("| {:,} | {} | {:.2f} | {:.2f} | {:.2f} | {:.1f}x | {:.1f}x |".format(
                count, phase, mine, module, theirs, mine / theirs, module / theirs))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--counts", default="1000,10000,100000")
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 files only")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    if args.quick:
        counts = [c for c in counts if c <= 10000]
    workdir = tempfile.mkdtemp(prefix="distributor-scale-")
    try:
        rows = [row for count in counts for row in measure(count, workdir, args.seed)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(RESULTS, exist_ok=True)
    stem = os.path.join(RESULTS, time.strftime("%Y%m%dT%H%M%S") + "-scale")
    meta = {"revision": git_revision(), "load": os.getloadavg(), "cpus": os.cpu_count()}
    with open(stem + ".json", "w") as handle:
        json.dump({"meta": meta, "rows": rows}, handle, indent=1)
    table = markdown(rows)
    with open(stem + ".md", "w") as handle:
        handle.write(table)
    print(table)
    print("wrote %s.json and .md" % stem)
    return 0


if __name__ == "__main__":
    sys.exit(main())

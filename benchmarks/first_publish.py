# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local first-publish targets, side by side and repeated: distributor_publish as Ansible
runs it (the module process) next to `rsync -a`, `rsync -a --fsync` and `cp -r` of the same
bundle into fresh roots, in one run, wall and CPU seconds of each.

    python benchmarks/first_publish.py [--cases 10000x4KiB,100000x4KiB,100x20MiB] [--repeat 3] [--quick]

On a shared machine single timings vary 2-3x, so each case is measured `--repeat` times, the
tools interleaved (distributor, then each baseline, `os.sync()` between any two so no tool pays
for another's dirty pages), and the report gives the median of each tool and the median of the
per-round ratios, of wall time and of CPU time. This disk's flush cost swings many times over
from one minute to the next, so issue #22 judges the Python cost per file by CPU against
`rsync -a`, and the wait for the disk by wall time against `rsync -a --fsync`, the one peer that
waits for it too. Writes benchmarks/results/<time>-first.json and .md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

from bundles import BundleSpec, generate
from harness import module_process, time_command, write_results

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20}
BASELINES = {
    "rsync -a": lambda source, target: ["rsync", "-a", "--exclude=/manifest.json", source + "/", target + "/"],
    "rsync -a --fsync": lambda source, target: ["rsync", "-a", "--fsync", "--exclude=/manifest.json",
                                                source + "/", target + "/"],
    "cp -r": lambda source, target: ["cp", "-r", source, target],
    # cp -r leaves its bytes in the page cache; sync -f (syncfs) then makes them durable, as
    # distributor must before it writes state: the fair peer for large files.
    "cp -r; sync -f": lambda source, target: ["sh", "-c", 'cp -r "$0" "$1" && sync -f "$1"', source, target],
}


def parse_case(text: str) -> BundleSpec:
    count, size = text.split("x")
    number, unit = size[:-3], size[-3:]
    return BundleSpec("first-%s" % text, "small", int(count), int(number) * UNITS[unit])


def measure(spec: BundleSpec, workdir: str, repeat: int, seed: int) -> list[dict]:
    base = os.path.join(workdir, spec.name)
    source = generate(os.path.join(base, "bundle"), spec, seed)
    rows = []
    for round_ in range(repeat):
        os.sync()
        root = os.path.join(base, "distributor-%d" % round_)
        destination = {"id": "first", "storage": {"type": "local", "root": root}, "path": "site"}
        timing = module_process(source, False, destination, base)
        rows.append(dict(case=spec.describe(), round=round_, tool="distributor", wall=timing.seconds, cpu=timing.cpu_seconds))
        shutil.rmtree(root)
        for tool, command in BASELINES.items():
            os.sync()
            target = os.path.join(base, "baseline-%d" % round_)
            os.makedirs(target)
            timing = time_command(command(source, os.path.join(target, "site")))
            rows.append(dict(case=spec.describe(), round=round_, tool=tool, wall=timing.seconds, cpu=timing.cpu_seconds))
            shutil.rmtree(target)
        print(" ".join("%s %.2f" % (r["tool"], r["wall"]) for r in rows if r["round"] == round_ and r["case"] == spec.describe()),
              flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """Per case: the median of each tool's wall and CPU seconds, and the medians of the
    per-round ratios (distributor over the tool)."""
    out = []
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = {r["round"]: r for r in rows if r["case"] == case and r["tool"] == "distributor"}
        line = {"case": case, "rounds": len(mine)}
        for tool in ("distributor",) + tuple(BASELINES):
            theirs = {r["round"]: r for r in rows if r["case"] == case and r["tool"] == tool}
            for measure_ in ("wall", "cpu"):
                line["%s %s" % (tool, measure_)] = statistics.median(r[measure_] for r in theirs.values())
                if tool != "distributor":
                    line["%s %s ratio" % (tool, measure_)] = statistics.median(
                        mine[k][measure_] / max(theirs[k][measure_], 1e-3) for k in mine)
        out.append(line)
    return out


def markdown(lines: list[dict]) -> str:
    head = "| case | distributor module s (cpu) | " + " | ".join(
        "%s s (cpu); ratio wall, cpu" % tool for tool in BASELINES) + " |"
    table = [head, "| --- | ---: |" + " ---: |" * len(BASELINES)]
    for line in lines:
        peers = " | ".join("%.2f (%.2f); %.2fx, %.2fx" % tuple(line[tool + suffix] for suffix in (
            " wall", " cpu", " wall ratio", " cpu ratio")) for tool in BASELINES)
        table.append("| %s | %.2f (%.2f) | %s |" % (line["case"], line["distributor wall"], line["distributor cpu"], peers))
    return "\n".join(table) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--cases", default="10000x4KiB,100000x4KiB,100x20MiB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a tenth of each case's files")
    parser.add_argument("--baselines", default=",".join(BASELINES),
                        help="which to run (rsync -a --fsync takes minutes at 100,000 files)")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    for name in set(BASELINES) - set(args.baselines.split(",")):
        del BASELINES[name]
    specs = [parse_case(text) for text in args.cases.split(",")]
    if args.quick:
        specs = [BundleSpec(s.name, s.kind, max(1, s.count // 10), s.size) for s in specs]
    workdir = tempfile.mkdtemp(prefix="distributor-first-")
    try:
        rows = [row for spec in specs for row in measure(spec, workdir, args.repeat, args.seed)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lines = summary(rows)
    write_results("first", {"rows": rows, "summary": lines}, markdown(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

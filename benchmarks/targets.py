# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue #42's targets (then the earlier issues' it does not restate), each next to its peer
from the same `make bench` run.

    python benchmarks/targets.py [--since STAMP]

Reads the newest result of each script in benchmarks/results (rows.py's runs merged, a later
run's lines replacing an earlier one's; run.py, first_publish.py, scale.py, shared_root.py,
s3_latency.py, jump_host.py, release_change.py, playbook_sync.py, fleet_switch.py;
with --since, only those written at or after the `YYYYmmddTHHMMSS` stamp `make bench` passes)
and prints one row per target: what was measured, the peer's figure, the ratio, the goal and
whether it is met, under a line with the date, the commits and the load average of the results.
A target whose case a run did not measure (a `--quick` run stops at 2,000 files) says so instead
of a figure. Writes benchmarks/results/<time>-targets.md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time

from playbook_sync import FLOORS as PLAYBOOK_FLOORS, IN_CONTROLLER
from rows import CONTRACT_TOOL, FLOORS

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def newest(kinds: tuple[str, ...], since: str) -> dict | None:
    """The newest results/<stamp>-<kind>.json for any of `kinds` written at or after `since`."""
    found = sorted(path for kind in kinds for path in glob.glob(os.path.join(RESULTS, "*-%s.json" % kind))
                   if os.path.basename(path)[:15] >= since)
    if not found:
        return None
    with open(found[-1]) as handle:
        return json.load(handle)


def rows_results(since: str) -> dict | None:
    """rows.py's results written at or after `since`, merged: a run of some rows and sizes
    (`--rows skip --files 100000`) replaces only those lines of the runs before it."""
    found = sorted(path for path in glob.glob(os.path.join(RESULTS, "*-rows.json")) if os.path.basename(path)[:15] >= since)
    merged, lines = None, {}
    for path in found:
        with open(path) as handle:
            merged = json.load(handle)
        lines.update({(line["row"], line["files"], line["module"], line["measure"], line["peer"]): line for line in merged["summary"]})
    return dict(merged, summary=list(lines.values())) if merged else None


class Figures:
    """One run's results, looked up by what each target names."""

    def __init__(self, since: str):
        self.run = newest(("full", "quick"), since)
        self.first = newest(("first",), since)
        self.scale = newest(("scale",), since)
        self.shared = newest(("shared",), since)
        self.latency = newest(("s3-latency",), since)
        self.awx = newest(("awx",), since)
        self.jump = newest(("jump",), since)
        self.release = newest(("release-change",), since)
        self.playbook = newest(("playbook-sync",), since)
        self.rows = rows_results(since)
        self.fleet = newest(("fleet",), since)

    def found(self) -> list[dict]:
        return [one for one in (self.run, self.first, self.scale, self.shared, self.latency, self.awx, self.jump, self.release,
                                self.playbook, self.rows, self.fleet) if one]

    def run_row(self, backend: str, bundle: str, phase: str, tool: str) -> dict | None:
        rows = (self.run or {}).get("measurements", [])
        return next((r for r in rows if (r["backend"], r["bundle"], r["phase"], r["tool"]) == (backend, bundle, phase, tool)), None)

    def scale_row(self, files: int, phase: str, tool: str) -> dict | None:
        rows = (self.scale or {}).get("rows", [])
        return next((r for r in rows if (r["files"], r["phase"], r["tool"]) == (files, phase, tool)), None)

    def proxied(self, phase: str) -> tuple[str, str, float | None]:
        """s3_latency.py's medians for `phase` through the proxy: the module process's wall (the
        core publish's in results from before it was measured), aws's wall, and the median of the
        per-round ratios, as that script reports them."""
        rounds = [[row for row in one if row["phase"] == phase] for one in (self.latency or {}).get("rounds", {}).get("proxied", [])]
        rows = [found[0] for found in rounds if found]
        if not rows:
            return "not measured", "-", None
        tool = "module" if "module" in rows[0] else "distributor"
        return ("%.2f s" % statistics.median(r[tool][0] for r in rows), "%.2f s" % statistics.median(r["aws"][0] for r in rows),
                statistics.median(r[tool][0] / r["aws"][0] for r in rows))

    def through_playbook(self, phase: str) -> tuple:
        """playbook_sync.py's medians of wall time for `phase` (distributor, synchronize, each floor
        its script ran) and their median per-round ratios. The floor in the controller bounds the
        row: distributor runs there too on localhost (plugins/plugin_utils/in_controller.py); the
        other two say what a module process and this collection's payload through AnsiballZ cost."""
        line = next((line for line in (self.playbook or {}).get("summary", []) if line["phase"] == phase), None)
        if not line:
            return "not measured", "-", None
        floors = [(floor, line[floor + " ratio wall"]) for floor in PLAYBOOK_FLOORS if floor + " ratio wall" in line]
        beside = "".join("; %s %.2f s = %.2fx" % (floor, line[floor + " wall"], ratio) for floor, ratio in floors)
        return "%.2f s" % line["distributor wall"], "%.2f s%s" % (line["synchronize wall"], beside), line["ratio wall"], *[
            floor for floor in floors if floor[0] == IN_CONTROLLER]

    def awx_row(self, files: int, phase: str) -> dict | None:
        return next((r for r in (self.awx or {}).get("rows", []) if (r["files"], r["phase"]) == (files, phase)), None)

    def through_jump_host(self) -> tuple[str, str, float | None]:
        """jump_host.py's medians (through one jump host, direct) and its median per-round ratio."""
        line = (self.jump or {}).get("summary")
        if not line:
            return "not measured", "-", None
        return "%.2f s" % line["one jump host wall"], "%.2f s" % line["direct wall"], line["ratio wall"]

    def fleet_switch(self) -> tuple[str, str, float | None]:
        """fleet_switch.py's median window (first rename to last), with the median wall of the
        whole switch call as its peer."""
        line = (self.fleet or {}).get("summary")
        if not line:
            return "not measured", "-", None
        size = "" if line["files"] == 2000 else " ({:,} files)".format(line["files"])
        return "%.4f s%s" % (line["window"], size), "switch call %.2f s" % line["wall"], line["window"]

    def first_line(self, case: str) -> dict | None:
        return next((line for line in (self.first or {}).get("summary", []) if line["case"] == case), None)


def pair(mine: dict | None, theirs: dict | None, key: str) -> tuple[str, str, float | None]:
    """(mine, theirs, ratio) of one measure (`seconds`, `cpu_seconds`, `wall` or `cpu`)."""
    if not mine or not theirs:
        return "not measured", "-", None
    return "%.2f s" % mine[key], "%.2f s" % theirs[key], mine[key] / max(theirs[key], 1e-3)


def rows_line(f: Figures, row: str, files: int, measure: str, peer: str) -> tuple[str, str, float | None]:
    """rows.py's medians (the module, its peer) and the median of the per-round ratios; of a run
    comparing trees (--tree), the last tree's."""
    module = list((f.rows or {}).get("trees") or ["module"])[-1]
    lines = [line for line in (f.rows or {}).get("summary", []) if (line["row"], line["measure"], line["module"]) == (
        row, measure, module) and line["peer"].startswith(peer)]
    # A --quick run measures 2,000 files: its figure is shown with its size rather than not at all.
    line = next((line for line in lines if line["files"] == files), max(lines, key=lambda line: line["files"], default=None))
    if not line:
        return "not measured", "-", None
    size = "" if line["files"] == files else " ({:,} files)".format(line["files"])
    if line["ratio"] is None:
        return "%.3f s" % line["mine"], "%.3f s (%s)" % (line["theirs"], line["peer"].strip()), line["mine"]
    floors = [other for other in (f.rows or {}).get("summary", []) if other["module"] in FLOORS and all(
        other[key] == line[key] for key in ("row", "measure", "peer", "files"))]
    beside = "".join("; %s %.3f s = %.2fx" % (
        "floor" if floor["module"] == FLOORS[0] else floor["module"], floor["mine"], floor["ratio"]) for floor in floors)
    # The contract floor's ratio bounds what any module keeping the contract can reach (markdown shows it).
    bound = [(CONTRACT_TOOL, floor["ratio"]) for floor in floors if floor["module"] == CONTRACT_TOOL]
    return ("%.3f s%s" % (line["mine"], size), "%.3f s%s" % (line["theirs"], beside), line["ratio"], *bound)


def targets(f: Figures) -> list[tuple[str, tuple, float]]:
    """(target, (measured, peer, ratio), goal): issue #42's table in its order, then the earlier
    issues' targets it does not restate."""
    rows = [
        ("local first 10,000 x 4 KiB, CPU, module process / `rsync -a`", rows_line(f, "first", 10000, "cpu", "rsync -a first"), 1.3),
        ("local first 100,000, CPU / `rsync -a`", rows_line(f, "first", 100000, "cpu", "rsync -a first"), 1.3),
        ("same, wall / `rsync -a --fsync`", rows_line(f, "first", 100000, "wall", "rsync -a --fsync"), 1.0),
        ("local skip 100,000, CPU / no-op `rsync -a`", rows_line(f, "skip", 100000, "cpu", "rsync -a skip"), 2.5),
        ("local skip / its first publish, 100,000 (CPU)", rows_line(f, "skip", 100000, "cpu", "its first publish"), 0.1),
        ("local replace 10% of 10,000, mtimes kept (rsync writes 1,000 files), CPU / `rsync -a`",
         rows_line(f, "replace", 10000, "cpu", "rsync -a"), 2.0),
        ("local replace 10% of 10,000, regenerated tree (every mtime new), CPU / `rsync -a`",
         rows_line(f, "regenerated", 10000, "cpu", "rsync -a"), 0.4),
        ("SFTP first, small bundle (2,000 x 4 KiB; 300 with --quick), wall / `rsync -a --fsync` over ssh to the same sshd",
         pair(f.run_row("sftp", "small", "first", "distributor"), f.run_row("sftp", "small", "first", "rsync -a --fsync -e ssh"), "seconds"),
         1.2),
    ]
    release = f.release
    rows.append(("a one-file change to a %s-file release, CPU / the same change in place" % (
        "{:,}".format(release["files"]) if release else "10,000"), (
        "%.2f s" % release["median_cpu"]["release"], "%.2f s" % release["median_cpu"]["in place"], release["ratio"],
        *([("release floor", release["bound"])] if "bound" in release else [])) if release else ("not measured", "-", None), 1.3))
    shared = (f.shared or {}).get("rows", [])
    largest = max(shared, key=lambda r: r["outputs"], default=None)
    for what in ("plan", "skip"):
        rows.append(("shared root %s / 50 owners: %s, CPU (goal in seconds)" % (
            "{:,}".format(largest["outputs"]) if largest else "100,000", what),
            ("%.2f s" % largest[what + "_cpu"], "-", largest[what + "_cpu"]) if largest else ("not measured", "-", None), 0.7))
    rows.append(("module start (skip of a 1-file bundle), CPU (goal in seconds)", rows_line(f, "start", 1, "cpu", "floor"), 0.2))
    files = (f.playbook or {}).get("summary", [{}])[0].get("files", 10000)
    for phase, goal in (("first", 0.9), ("no-op", 1.0), ("replace 10%, regenerated", 0.5), ("replace 10%", 1.0)):
        rows.append(("through `ansible-playbook`, {:,} files, {}: wall / `ansible.posix.synchronize` (`delete: true`)".format(
            files, phase + (", mtimes kept" if phase == "replace 10%" else "")), f.through_playbook(phase), goal))
    for phase, goal in (("first", 0.8), ("replace 10%", 1.0), ("no-op", 0.7)):
        rows.append(("S3 through a 20 ms proxy, %s, module process / `aws s3 sync` (wall)" % phase, f.proxied(phase), goal))
    rows.append(("fleet release, 3 SFTP destinations: first switch to last (goal in seconds; issue #40)", f.fleet_switch(), 1.0))
    rows.append(("Markdown, replace with 10% changed / first publish (CPU)",
                 pair(f.run_row("local", "markdown", "replace", "distributor"), f.run_row("local", "markdown", "first", "distributor"),
                      "cpu_seconds"), 0.2))
    rows.append(("SFTP first publish, 2,000 x 4 KiB, through one jump host / direct (wall, issue #33)", f.through_jump_host(), 1.3))
    rows.append(("SFTP replace 10% / `rsync -a -e ssh` (wall)",
                 pair(f.run_row("sftp", "small", "replace", "distributor"), f.run_row("sftp", "small", "replace", "rsync -e ssh"), "seconds"), 1.0))
    rows.append(("S3 first publish, small bundle / `aws s3 sync` (moto on loopback, wall)",
                 pair(f.run_row("s3", "small", "first", "distributor"), f.run_row("s3", "small", "first", "aws s3 sync"), "seconds"), 0.7))
    review = f.awx_row(50000, "check --diff")
    rows.append(("AWX review: `ansible-playbook --check --diff`, 50,000 files, wall (goal in seconds)",
                 ("%.2f s" % review["seconds"], "-", review["seconds"]) if review else ("not measured", "-", None), 60))
    rows.append(("AWX review: `ansible-playbook --check --diff`, 50,000 files, peak RSS of its largest process (goal in MiB)",
                 ("%d MiB" % review["rss_mib"], "-", review["rss_mib"]) if review else ("not measured", "-", None), 300))
    return rows


def header(f: Figures) -> str:
    """The run's date, the commits measured and the load average over the results read."""
    metas = [found["meta"] for found in f.found() if "meta" in found]
    loads = [float(meta["load"][0]) if meta.get("load") else float(meta["load_start"]) for meta in metas
             if meta.get("load") or "load_start" in meta]  # run.py writes its one-minute load as a string
    return "%s; commit %s; load average %s over the %d results read\n" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), ", ".join(sorted({meta.get("revision", "?") for meta in metas})) or "-",
        "%.1f-%.1f" % (min(loads), max(loads)) if loads else "-", len(metas))


def markdown(rows) -> str:
    """A ratio's goal reads `≤ 1.5x`; a target in seconds or MiB (no peer) reads `< 1 s`. A row
    not met whose floor (the contract floor of rows.py and playbook_sync.py, release_change.py's)
    is above the goal says so: out of reach."""
    lines = ["| target | measured | peer | ratio | goal | met |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    for name, (mine, theirs, value, *bound), goal in rows:
        unit = "MiB" if "(goal in MiB)" in name else "s"
        absolute = (theirs == "-" and value is not None) or "(goal in " in name
        shown = "-" if value is None else "%.3g %s" % (value, unit) if absolute else "%.2fx" % value
        met = "-" if value is None else "yes" if value <= goal else "no"
        if met == "no" and bound and bound[0][1] > goal:
            met = "no: the %s is at %.2fx" % bound[0]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            name, mine, theirs, shown, "< %g %s" % (goal, unit) if absolute else "≤ %.1fx" % goal, met))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--since", default="", help="only results written at or after this YYYYmmddTHHMMSS stamp")
    args = parser.parse_args(argv)
    figures = Figures(args.since)
    table = header(figures) + "\n" + markdown(targets(figures))
    print(table)
    with open(os.path.join(RESULTS, time.strftime("%Y%m%dT%H%M%S") + "-targets.md"), "w") as handle:
        handle.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a jump host costs: a first publish of 2,000 files of 4 KiB over SFTP, directly and
through one jump host, both on loopback (issue #33: at most 1.3x the direct one).

    python benchmarks/jump_host.py [--files 2000] [--repeat 3] [--quick]

Two sshd servers from tests/services.py: the SFTP server, and a jump host that forwards to it
(`storage.jump_hosts`). Through the jump host every packet of the SFTP connection is carried,
encrypted again, inside the jump host's connection, all in this process's Python, so the cost is
CPU here rather than the loopback's latency. The publishes are distributor's core `publish()` in
this process (no Ansible, like run.py's SFTP rows), direct and through the jump host alternating
in each round, each into a fresh root; the report gives the median of each and the median of the
per-round ratios, of wall and of CPU seconds. `--quick` makes one round. Writes
benchmarks/results/<time>-jump.json and .md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

from bundles import BundleSpec, generate
from harness import destination, pipeline, publish, services, time_call, write_results

KiB = 1 << 10
ROUTES = ("direct", "one jump host")


def measure(source: str, server, jump, workdir: str, repeat: int) -> list[dict]:
    rows = []
    for round_ in range(repeat):
        for route in ROUTES:
            root = os.path.join(workdir, "%s-%d" % (route.replace(" ", "-"), round_))
            hops = [jump.connection()] if route != "direct" else []
            storage = server.storage(root, jump_hosts=hops)
            timing, result = time_call(publish, source, pipeline(False), destination("sftp", storage), full_result=False)
            if result["action"] != "publish":
                raise RuntimeError("%s: expected a publish, got %s (%s)" % (route, result["action"], result["reason"]))
            rows.append({"round": round_, "route": route, "wall": timing.seconds, "cpu": timing.cpu_seconds,
                         "written": len(result["written"])})
            shutil.rmtree(root)
        print("round %d: %s" % (round_, "  ".join("%s %.2f s (cpu %.2f)" % (r["route"], r["wall"], r["cpu"])
                                                  for r in rows if r["round"] == round_)), flush=True)
    return rows


def summary(rows: list[dict], spec: BundleSpec) -> dict:
    """Medians of each route, and the median of the per-round ratios (jump host over direct)."""
    by_route = {route: {r["round"]: r for r in rows if r["route"] == route} for route in ROUTES}
    direct, hop = by_route["direct"], by_route["one jump host"]
    line = {"case": spec.describe(), "rounds": len(direct)}
    for measure_ in ("wall", "cpu"):
        for route in ROUTES:
            line["%s %s" % (route, measure_)] = statistics.median(r[measure_] for r in by_route[route].values())
        line["ratio %s" % measure_] = statistics.median(hop[k][measure_] / max(direct[k][measure_], 1e-3) for k in direct)
    return line


def markdown(line: dict) -> str:
    return "\n".join([
        "| case | rounds | direct s (cpu) | one jump host s (cpu) | ratio wall | ratio cpu |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        "| SFTP first publish, %s | %d | %.2f (%.2f) | %.2f (%.2f) | %.2fx | %.2fx |" % (
            line["case"], line["rounds"], line["direct wall"], line["direct cpu"], line["one jump host wall"],
            line["one jump host cpu"], line["ratio wall"], line["ratio cpu"]),
    ]) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    spec = BundleSpec("jump", "small", args.files, 4 * KiB)
    workdir = tempfile.mkdtemp(prefix="distributor-jump-")
    server = jump = None
    try:
        source = generate(os.path.join(workdir, "bundle"), spec, args.seed)
        server, jump = services.start_sshd(), services.start_sshd()
        rows = measure(source, server, jump, workdir, 1 if args.quick else args.repeat)
    finally:
        for running in (server, jump):
            if running is not None:
                running.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    line = summary(rows, spec)
    write_results("jump", {"rows": rows, "summary": line}, markdown(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())

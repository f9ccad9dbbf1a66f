# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One large file to S3 (moto on 127.0.0.1): distributor next to `aws s3 cp`, time and peak RSS.

    python benchmarks/s3_large.py [--size MiB] [--repeat 3] [--aws PATH]

Each round publishes the file with distributor in a fresh process (rss_probe.py: wall time and
the child's own peak RSS) and copies it with `aws s3 cp` (its peak RSS from `/usr/bin/time`),
each into a new bucket; the report gives the medians and the median of the per-round time
ratios. Writes benchmarks/results/<time>-s3-large.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import harness
from baselines import aws_env, find_aws
from bundles import BundleSpec, generate
from harness import Backends, destination, pipeline, time_command, write_results

MiB = 1024 * 1024


def _distributor(source: str, storage: dict) -> dict:
    probe = [sys.executable, os.path.join(harness.BENCH_DIR, "rss_probe.py"), source,
             json.dumps(pipeline(False)), json.dumps(destination("s3", storage))]
    completed = subprocess.run(probe, capture_output=True, text=True, timeout=harness.COMMAND_TIMEOUT, check=False)
    if completed.returncode != 0:
        raise RuntimeError("rss probe failed:\n" + completed.stdout + completed.stderr)
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    return {"wall": report["seconds"], "peak_mib": report["peak_kib"] / 1024, "floor_mib": report["floor_kib"] / 1024}


def _aws_cp(aws: str, server, path: str, bucket: str, workdir: str) -> dict:
    report = os.path.join(workdir, "aws-time.txt")
    timing = time_command(["/usr/bin/time", "-o", report, "-f", "%M", aws, "s3", "cp", path,
                           "s3://%s/site/%s" % (bucket, os.path.basename(path)), "--endpoint-url",
                           server.endpoint_url, "--only-show-errors", "--no-progress"], env=aws_env(workdir))
    with open(report) as handle:
        peak_kib = int(handle.read().split()[-1])
    return {"wall": timing.seconds, "peak_mib": peak_kib / 1024}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--size", type=int, default=2048, help="file size in MiB (default 2048)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--aws", help="the aws command (default: the first on PATH)")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    aws = find_aws(args.aws)
    if not aws:
        print("no aws command: nothing to compare with")
        return 1
    workdir = tempfile.mkdtemp(prefix="distributor-s3-large-")
    servers = Backends(workdir)
    rows = []
    try:
        servers.start(["s3"])
        spec = BundleSpec("s3-large", "large", 1, args.size * MiB)
        source = generate(os.path.join(workdir, "bundle"), spec, args.seed)
        (path,) = [os.path.join(source, p) for p in os.listdir(source) if p != "manifest.json"] or [None]
        if path is None or os.path.isdir(path):
            path = next(os.path.join(d, f) for d, _dirs, files in os.walk(source) for f in files if f != "manifest.json")
        for round_ in range(args.repeat):
            mine = _distributor(source, servers.fresh_root("s3", "mine")["storage"])
            theirs = _aws_cp(aws, servers.s3, path, servers.fresh_root("s3", "aws")["bucket"], workdir)
            rows.append({"round": round_, "distributor": mine, "aws s3 cp": theirs})
            print("round %d: distributor %.2f s, peak %.0f MiB; aws s3 cp %.2f s, peak %.0f MiB" % (
                round_, mine["wall"], mine["peak_mib"], theirs["wall"], theirs["peak_mib"]), flush=True)
    finally:
        servers.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    summary = {
        "size_mib": args.size,
        "distributor_s": statistics.median(r["distributor"]["wall"] for r in rows),
        "distributor_peak_mib": statistics.median(r["distributor"]["peak_mib"] for r in rows),
        "distributor_floor_mib": statistics.median(r["distributor"]["floor_mib"] for r in rows),
        "aws_s": statistics.median(r["aws s3 cp"]["wall"] for r in rows),
        "aws_peak_mib": statistics.median(r["aws s3 cp"]["peak_mib"] for r in rows),
        "ratio": statistics.median(r["distributor"]["wall"] / r["aws s3 cp"]["wall"] for r in rows),
    }
    table = ("| file | distributor s | peak RSS MiB (floor) | aws s3 cp s | aws peak RSS MiB | ratio |\n"
             "| --- | ---: | ---: | ---: | ---: | ---: |\n"
             "| {size_mib} MiB | {distributor_s:.2f} | {distributor_peak_mib:.0f} ({distributor_floor_mib:.0f}) | "
             "{aws_s:.2f} | {aws_peak_mib:.0f} | {ratio:.2f}x |\n").format(**summary)
    write_results("s3-large", {"rows": rows, "summary": summary}, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""S3 at an internet's latency: distributor next to `aws s3 sync`, with its requests counted.

    python benchmarks/s3_latency.py [--quick] [--count 2000] [--delay-ms 20] [--rounds 3] [--aws PATH]

moto (tests/services.py) runs on 127.0.0.1; latency_proxy.py, in a process of its own, holds
every chunk a client sends it for --delay-ms before forwarding it to moto. Each round publishes a
fresh bundle of small files (2,000 x 4 KiB) with distributor's core publish() in this process, and
copies it with `aws s3 sync`, each into a bucket of its own, interleaved, once straight to moto
(loopback) and once through the proxy: first publish, no-op republish, replace after 10% of the
files changed. The report gives medians of wall and CPU seconds (user + sys, of this process or
of the aws process) and of the per-round ratios, and the requests distributor made in each
phase of its work (counted with botocore's event hooks, in this script only), with the most it
had in flight at once and the wall time from the phase's first request to its last reply.
Writes benchmarks/results/<time>-s3-latency.json and .md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

import harness
from baselines import MANIFEST, aws_env, find_aws
from bundles import BundleSpec, change, generate
from harness import Backends, destination, pipeline, publish, time_call, time_command, write_results
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, LOCK_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

KiB = 1024
PHASES = (("first", "publish"), ("no-op", "skip"), ("replace 10%", "replace"))
# The order a publish works in; every request is counted under one of these.
STEPS = ("lock", "state read", "journal read", "listing", "lock confirm", "journal write", "writes", "deletes",
         "state write", "journal delete", "release", "other")


def _step(operation: str, params: dict) -> str:
    """Which step of a publish a request belongs to, from its operation and key."""
    name = params.get("Key", "").rpartition("/")[2]
    if name == LOCK_NAME:
        if operation == "PutObject":
            return "lock confirm" if "IfMatch" in params else "lock"
        return "release" if operation == "DeleteObject" else "lock"
    if name == STATE_NAME:
        return "state read" if operation == "GetObject" else "state write"
    if name == JOURNAL_NAME:
        return {"GetObject": "journal read", "PutObject": "journal write"}.get(operation, "journal delete")
    if operation.startswith("List"):
        return "listing"
    if operation in ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"):
        return "writes"
    return "deletes" if operation.startswith("Delete") else "other"


class RequestCounter:
    """Requests per step, the most in flight at once, and each step's span (first request sent to
    last reply), hooked into one boto3 client's events."""

    def __init__(self):
        self.mutex = threading.Lock()
        self.counts: dict = defaultdict(int)
        self.peak: dict = defaultdict(int)
        self.spans: dict = {}
        self.flying: dict = defaultdict(int)

    def attach(self, client) -> None:
        client.meta.events.register("provide-client-params.s3", self._sent)
        client.meta.events.register("after-call.s3", self._answered)
        client.meta.events.register("after-call-error.s3", self._answered)

    def _sent(self, params, model, context, **_kwargs):
        step = _step(model.name, params)
        context["bench_step"] = step
        with self.mutex:
            self.counts[step] += 1
            self.flying[step] += 1
            self.peak[step] = max(self.peak[step], self.flying[step])
            start, end = self.spans.get(step, (time.perf_counter(), 0.0))
            self.spans[step] = (start, end)

    def _answered(self, context, **_kwargs):
        step = context.get("bench_step")
        if step is None:
            return
        with self.mutex:
            self.flying[step] -= 1
            self.spans[step] = (self.spans[step][0], time.perf_counter())

    def report(self) -> dict:
        return {step: {"requests": self.counts[step], "in_flight": self.peak[step],
                       "seconds": round(self.spans[step][1] - self.spans[step][0], 3)}
                for step in STEPS if self.counts.get(step)}


def counting_opener(counter: RequestCounter):
    """publish()'s `opener`, with `counter` attached to the S3 storage's client."""
    def opener(storage, base, token):
        opened = open_storage(storage, base, token)
        counter.attach(opened.client)
        return opened
    return opener


class Proxy:
    """latency_proxy.py in its own process, forwarding to moto."""

    def __init__(self, target: str, delay_ms: float):
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(harness.BENCH_DIR, "latency_proxy.py"), "--target", target,
             "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True)
        self.endpoint_url = "http://127.0.0.1:%d" % int(self.process.stdout.readline())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def _distributor(source: str, storage: dict, expect: str) -> tuple:
    counter = RequestCounter()
    timing, result = time_call(publish, source, pipeline(False), destination("s3", storage), full_result=False,
                               opener=counting_opener(counter))
    if result["action"] != expect:
        raise RuntimeError("expected %s, got %s (%s)" % (expect, result["action"], result["reason"]))
    return timing, counter.report()


def _aws(aws: str, source: str, target: str, endpoint: str, workdir: str):
    return time_command([aws, "s3", "sync", source, target, "--endpoint-url", endpoint, "--exclude", MANIFEST,
                         "--only-show-errors", "--no-progress"], env=aws_env(workdir))


def one_round(servers: Backends, endpoint: str, spec: BundleSpec, pristine: str, workdir: str, aws: str, seed: int) -> list:
    """Every phase, distributor then aws, each into its own fresh bucket."""
    source = os.path.join(workdir, "round")
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(pristine, source)
    mine, theirs = servers.fresh_root("s3", "mine"), servers.fresh_root("s3", "aws")
    mine["storage"]["endpoint_url"] = endpoint
    rows = []
    for phase, expect in PHASES:
        if expect == "replace":
            time.sleep(1.5)  # aws s3 sync compares mtimes to the second
            change(source, spec, seed)
        timing, requests = _distributor(source, mine["storage"], expect)
        other = _aws(aws, source, theirs["target"], endpoint, workdir)
        rows.append({"phase": phase, "distributor": [timing.seconds, timing.cpu_seconds], "aws": [other.seconds, other.cpu_seconds],
                     "requests": requests})
        print("  %-12s distributor %6.2f s (cpu %5.2f)   aws s3 sync %6.2f s (cpu %5.2f)   ratio %.2f" % (
            phase, timing.seconds, timing.cpu_seconds, other.seconds, other.cpu_seconds, timing.seconds / other.seconds),
            flush=True)
    return rows


def _median(rows: list, tool: str, item: int) -> float:
    return statistics.median(row[tool][item] for row in rows)


def summary(where: str, rounds: list) -> list:
    lines = []
    for index, (phase, _expect) in enumerate(PHASES):
        rows = [r[index] for r in rounds]
        lines.append("| %s | %s | %.2f (%.2f) | %.2f (%.2f) | %.2fx |" % (
            where, phase, _median(rows, "distributor", 0), _median(rows, "distributor", 1), _median(rows, "aws", 0),
            _median(rows, "aws", 1), statistics.median(r["distributor"][0] / r["aws"][0] for r in rows)))
    return lines


def request_table(rounds: list) -> str:
    """The requests of the last round, one row per step."""
    last = rounds[-1]
    lines = ["| step | " + " | ".join("%s: requests, most in flight, s" % phase for phase, _e in PHASES) + " |",
             "| --- |" + " ---: |" * len(PHASES)]
    for step in STEPS:
        cells = []
        for row in last:
            seen = row["requests"].get(step)
            cells.append("%d, %d, %.2f" % (seen["requests"], seen["in_flight"], seen["seconds"]) if seen else "-")
        if any(cell != "-" for cell in cells):
            lines.append("| %s | %s |" % (step, " | ".join(cells)))
    totals = [sum(item["requests"] for item in row["requests"].values()) for row in last]
    lines.append("| all | %s |" % " | ".join(str(total) for total in totals))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--quick", action="store_true", help="300 files, one round")
    parser.add_argument("--count", type=int, help="files in the bundle (default 2000, --quick 300)")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="the proxy's hold of each client chunk")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3, --quick 1)")
    parser.add_argument("--aws", help="the aws command (default: the first on PATH)")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    aws = find_aws(args.aws)
    if not aws:
        print("no aws command: nothing to compare with (pass --aws or run `make bench`)")
        return 1
    spec = BundleSpec("small", "small", args.count or (300 if args.quick else 2000), 4 * KiB)
    rounds = args.rounds or (1 if args.quick else 3)
    import boto3  # noqa: F401  (imported once, before any measurement)
    workdir = tempfile.mkdtemp(prefix="distributor-s3-latency-")
    servers = Backends(workdir)
    proxy = None
    results = {"loopback": [], "proxied": []}
    try:
        servers.start(["s3"])
        proxy = Proxy("%s:%d" % (servers.s3.host, servers.s3.port), args.delay_ms)
        pristine = generate(os.path.join(workdir, "bundle"), spec, args.seed)
        for number in range(rounds):
            for where, endpoint in (("loopback", servers.s3.endpoint_url), ("proxied", proxy.endpoint_url)):
                print("round %d, %s (%s)" % (number + 1, where, spec.describe()), flush=True)
                results[where].append(one_round(servers, endpoint, spec, pristine, workdir, aws, args.seed))
    finally:
        if proxy is not None:
            proxy.stop()
        servers.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    table = ("S3, %s, medians of %d interleaved round(s); the proxy holds each client chunk %g ms\n\n"
             "| endpoint | phase | distributor s (cpu) | aws s3 sync s (cpu) | ratio |\n| --- | --- | ---: | ---: | ---: |\n"
             % (spec.describe(), rounds, args.delay_ms)
             + "\n".join(summary("moto, loopback", results["loopback"]) + summary("moto + %g ms proxy" % args.delay_ms, results["proxied"]))
             + "\n\nRequests distributor made through the proxy (last round):\n\n" + request_table(results["proxied"]))
    write_results("s3-latency", {"count": spec.count, "delay_ms": args.delay_ms, "rounds": results}, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

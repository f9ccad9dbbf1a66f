# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""S3 at an internet's latency: distributor next to `aws s3 sync`, with the requests of each counted.

    python benchmarks/s3_latency.py [--quick] [--count 2000] [--delay-ms 20] [--rounds 3] [--aws PATH] [--proxied-only]

moto (tests/services.py) runs on 127.0.0.1; latency_proxy.py, in a process of its own, holds
every chunk a client sends it for --delay-ms before forwarding it to moto. Each round publishes a
fresh bundle of small files (2,000 x 4 KiB) with distributor's core publish() in this process and
with the distributor_publish module in a process of its own (start-up and imports included, as
for aws), and copies it with `aws s3 sync`, each into a bucket of its own, interleaved, once
straight to moto (loopback) and once through the proxy: first publish, no-op republish, replace
after 10% of the files changed with content of the same size (aws notices by mtime), then
replace after another 10% changed with content one byte longer (aws notices by size too). The
report gives medians of wall and CPU seconds (user + sys, of this process or of the child) and
of the per-round ratios to aws (the module's is the row's: process against process), and, from
the proxy's log of the requests on the wire (latency_proxy.py --log-requests), each tool's
requests in each step of its work, with the most it had in flight at once and the seconds at
least one of them was in flight.
Writes benchmarks/results/<time>-s3-latency.json and .md.
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
import time
from urllib.parse import unquote

import harness
from baselines import MANIFEST, aws_env, find_aws
from bundles import BundleSpec, change, generate
from harness import Backends, destination, module_process, pipeline, publish, time_call, time_command, write_results
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, LOCK_NAME, STATE_NAME

KiB = 1024
# (phase, the action distributor must take, bytes added to each changed file (None: nothing
# changes) and the manifest's new `created`)
PHASES = (("first", "publish", None, None), ("no-op", "skip", None, None),
          ("replace 10%", "replace", 0, "2026-01-01T01:00:00Z"), ("replace 10%, +1 byte", "replace", 1, "2026-01-01T02:00:00Z"))
# distributor's core publish() in this process, the distributor_publish module in a process of its
# own (as Ansible runs it, and as aws runs: imports and start-up included), and `aws s3 sync`.
TOOLS = ("distributor", "module", "aws")
# The order a publish works in; every request is counted under one of these.
STEPS = ("lock", "state read", "journal read", "listing", "lock confirm", "journal write", "writes", "deletes",
         "state write", "journal delete", "release", "other")


def operation(request: dict) -> tuple[str, dict]:
    """The S3 operation of a request the proxy logged, and the parameters _step looks at
    (path-style addressing, as both tools use with an IP endpoint: /bucket/key?query)."""
    path, _mark, query = request["target"].partition("?")
    key = unquote(path.lstrip("/").partition("/")[2])
    names = {item.partition("=")[0] for item in query.split("&") if item}
    headers = request["headers"]
    params = {"Key": key, **({"IfMatch": headers["if-match"]} if "if-match" in headers else {})}
    method = request["method"]
    if method in ("GET", "HEAD") and not key:
        return ("ListObjectsV2" if "list-type" in names else "HeadBucket" if method == "HEAD" else "GetBucket"), params
    if method == "POST":
        return ("DeleteObjects" if "delete" in names else "CreateMultipartUpload" if "uploads" in names
                else "CompleteMultipartUpload"), params
    if method == "PUT":
        return ("UploadPart" if "partNumber" in names else "CopyObject" if "x-amz-copy-source" in headers
                else "PutObject"), params
    return {"GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(method, method), params


def _step(name: str, params: dict) -> str:
    """Which step of a publish a request belongs to, from its operation and key."""
    base = params.get("Key", "").rpartition("/")[2]
    if base == LOCK_NAME:
        if name == "PutObject":
            return "lock confirm" if "IfMatch" in params else "lock"
        return "release" if name == "DeleteObject" else "lock"
    if base == STATE_NAME:
        return "state read" if name == "GetObject" else "state write"
    if base == JOURNAL_NAME:
        return {"GetObject": "journal read", "PutObject": "journal write"}.get(name, "journal delete")
    if name.startswith("List"):
        return "listing"
    if name in ("PutObject", "CopyObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"):
        return "writes"
    return "deletes" if name.startswith("Delete") else "other"


def _busy(spans: list) -> tuple[float, int]:
    """Seconds during which at least one of `spans` (sent, answered) was in flight, and the
    most in flight at once."""
    edges = sorted([(start, 1) for start, _end in spans] + [(end, -1) for _start, end in spans])
    busy, flying, most, since = 0.0, 0, 0, 0.0
    for at, step in edges:
        if flying == 0 and step > 0:
            since = at
        flying += step
        most = max(most, flying)
        if flying == 0:
            busy += at - since
    return busy, most


def round_trips(requests: list) -> int:
    """The longest chain of requests each sent after the one before was answered: the round
    trips the work waited for one after another, whatever ran beside them (a request that waited
    for a 100 Continue counts two)."""
    events = sorted([(r["answered"], 0, r) for r in requests] + [(r["sent"], 1, r) for r in requests], key=lambda e: e[:2])
    chain: dict = {}
    longest = 0
    for _at, kind, request in events:
        if kind == 1:
            chain[id(request)] = longest + (2 if request.get("continued") else 1)
        else:
            longest = max(longest, chain[id(request)])
    return longest


def requests_of(log: list, started: float, ended: float) -> dict:
    """Per step, and for `all`: the requests sent between `started` and `ended` (epoch seconds),
    the most in flight at once, the seconds at least one was in flight, and how many waited for a
    100 Continue (a round trip more) before sending their body; for `all` also the seconds from
    `started` to the first request and from the last reply to `ended`."""
    chosen = [r for r in log if started <= r["sent"] <= ended and r.get("answered")]
    steps: dict = {}
    for request in chosen:
        steps.setdefault(_step(*operation(request)), []).append(request)
    report = {}
    for step, requests in sorted(steps.items(), key=lambda item: STEPS.index(item[0])) + [("all", chosen)]:
        busy, most = _busy([(r["sent"], r["answered"]) for r in requests])
        report[step] = {"requests": len(requests), "in_flight": most, "seconds": round(busy, 3),
                        "continued": sum(1 for r in requests if r.get("continued"))}
    if chosen:
        report["all"].update(round_trips=round_trips(chosen), before=round(min(r["sent"] for r in chosen) - started, 3),
                             after=round(ended - max(r["answered"] for r in chosen), 3))
    return report


class RequestLog:
    """The proxy's log of requests (latency_proxy.py --log-requests), read as it grows."""

    def __init__(self, path: str):
        self.path = path
        self.seen: list = []
        self._offset = 0

    def between(self, started: float, ended: float) -> dict:
        """requests_of what was logged so far, between the two epoch times."""
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete = data[:data.rfind(b"\n") + 1]
        self._offset += len(complete)
        self.seen.extend(json.loads(line) for line in complete.splitlines())
        return requests_of(self.seen, started, ended)


class Proxy:
    """latency_proxy.py in its own process, forwarding to moto, logging requests to `log`."""

    def __init__(self, target: str, delay_ms: float, log: str):
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(harness.BENCH_DIR, "latency_proxy.py"), "--target", target,
             "--delay-ms", str(delay_ms), "--log-requests", log], stdout=subprocess.PIPE, text=True)
        self.endpoint_url = "http://127.0.0.1:%d" % int(self.process.stdout.readline())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def _distributor(source: str, storage: dict, expect: str):
    timing, result = time_call(publish, source, pipeline(False), destination("s3", storage), full_result=False)
    if result["action"] != expect:
        raise RuntimeError("expected %s, got %s (%s)" % (expect, result["action"], result["reason"]))
    return timing


def _aws(aws: str, source: str, target: str, endpoint: str, workdir: str):
    return time_command([aws, "s3", "sync", source, target, "--endpoint-url", endpoint, "--exclude", MANIFEST,
                         "--only-show-errors", "--no-progress"], env=aws_env(workdir))


def _counted(log: RequestLog | None, run) -> tuple:
    """run()'s timing, and the requests the proxy saw while it ran (None on loopback)."""
    started = time.time()
    timing = run()
    return timing, (log.between(started, time.time()) if log is not None else None)


def one_round(servers: Backends, endpoint: str, spec: BundleSpec, pristine: str, workdir: str, aws: str, seed: int,
              log: RequestLog | None) -> list:
    """Every phase, distributor (core, then module process) then aws, each into its own fresh bucket."""
    source = os.path.join(workdir, "round")
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(pristine, source)
    mine, module, theirs = (servers.fresh_root("s3", label) for label in ("mine", "module", "aws"))
    for root in (mine, module):
        root["storage"]["endpoint_url"] = endpoint
    rows = []
    for number, (phase, expect, grow, created) in enumerate(PHASES):
        if grow is not None:
            time.sleep(1.5)  # aws s3 sync compares mtimes to the second
            change(source, spec, seed + number, grow=grow, created=created)
        runs = {"distributor": lambda: _distributor(source, mine["storage"], expect),
                "module": lambda: module_process(source, False, destination("s3", module["storage"]), workdir),
                "aws": lambda: _aws(aws, source, theirs["target"], endpoint, workdir)}
        row = {"phase": phase, "requests": {}}
        for tool in TOOLS:
            timing, row["requests"][tool] = _counted(log, runs[tool])
            row[tool] = [timing.seconds, timing.cpu_seconds]
        rows.append(row)
        print("  %-20s distributor %6.2f s (cpu %5.2f)   module %6.2f s (cpu %5.2f)   aws s3 sync %6.2f s (cpu %5.2f)"
              "   ratios %.2f, %.2f" % (phase, *row["distributor"], *row["module"], *row["aws"],
                                        row["distributor"][0] / row["aws"][0], row["module"][0] / row["aws"][0]), flush=True)
    return rows


def _median(rows: list, tool: str, item: int) -> float:
    return statistics.median(row[tool][item] for row in rows)


def summary(where: str, rounds: list) -> list:
    lines = []
    for index, (phase, *_change) in enumerate(PHASES):
        rows = [r[index] for r in rounds]
        lines.append("| %s | %s | %s | %.2fx | %.2fx |" % (
            where, phase, " | ".join("%.2f (%.2f)" % (_median(rows, tool, 0), _median(rows, tool, 1)) for tool in TOOLS),
            *(statistics.median(r[tool][0] / r["aws"][0] for r in rows) for tool in TOOLS[:2])))
    return lines


def _cell(seen: dict | None) -> str:
    if not seen:
        return "-"
    continued = " (%d x 100 Continue)" % seen["continued"] if seen["continued"] else ""
    return "%d, %d, %.2f%s" % (seen["requests"], seen["in_flight"], seen["seconds"], continued)


def request_table(rounds: list) -> str:
    """The requests of the last round through the proxy, per phase and tool, a column per step,
    then the round trips waited for one after another and the seconds before the first request
    and after the last reply."""
    last = rounds[-1]
    lines = ["| phase | tool | " + " | ".join(STEPS) + " | all | round trips | before, after s |",
             "| --- | --- |" + " ---: |" * (len(STEPS) + 3)]
    for row in last:
        for tool in TOOLS:
            counted = row["requests"][tool] or {}
            edges = counted.get("all", {})
            lines.append("| %s | %s | %s | %s | %s |" % (
                row["phase"], tool, " | ".join(_cell(counted.get(step)) for step in STEPS + ("all",)),
                edges.get("round_trips", "-"), "%.2f, %.2f" % (edges["before"], edges["after"]) if "before" in edges else "-"))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--quick", action="store_true", help="300 files, one round")
    parser.add_argument("--count", type=int, help="files in the bundle (default 2000, --quick 300)")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="the proxy's hold of each client chunk")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3, --quick 1)")
    parser.add_argument("--aws", help="the aws command (default: the first on PATH)")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--proxied-only", action="store_true",
                        help="no rounds straight to moto (to compare two revisions through the proxy sooner)")
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
        log = os.path.join(workdir, "requests.jsonl")
        proxy = Proxy("%s:%d" % (servers.s3.host, servers.s3.port), args.delay_ms, log)
        requests = RequestLog(log)
        pristine = generate(os.path.join(workdir, "bundle"), spec, args.seed)
        for number in range(rounds):
            for where, endpoint, counted in (("loopback", servers.s3.endpoint_url, None), ("proxied", proxy.endpoint_url, requests)):
                if where == "loopback" and args.proxied_only:
                    continue
                print("round %d, %s (%s)" % (number + 1, where, spec.describe()), flush=True)
                results[where].append(one_round(servers, endpoint, spec, pristine, workdir, aws, args.seed, counted))
    finally:
        if proxy is not None:
            proxy.stop()
        servers.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    table = ("S3, %s, medians of %d interleaved round(s); the proxy holds each client chunk %g ms\n\n"
             "| endpoint | phase | distributor s (cpu) | module process s (cpu) | aws s3 sync s (cpu) | ratio | module ratio |\n"
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n"
             % (spec.describe(), rounds, args.delay_ms)
             + "\n".join((summary("moto, loopback", results["loopback"]) if results["loopback"] else [])
                         + summary("moto + %g ms proxy" % args.delay_ms, results["proxied"]))
             + "\n\nRequests through the proxy (last round), per step: requests, most in flight at once, seconds at least "
             "one was in flight:\n\n" + request_table(results["proxied"]))
    write_results("s3-latency", {"count": spec.count, "delay_ms": args.delay_ms, "rounds": results}, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Publish one bundle in a fresh process and report its peak resident set size.

    python benchmarks/rss_probe.py SOURCE PIPELINE_JSON DESTINATION_JSON

Prints one JSON object: the peak RSS once everything is imported (the process's floor) and the
peak over the whole publish, in KiB, with the publish's wall time and action. run.py calls it for
a small and a large file: if publishing streams, both peaks are the same whatever the file size.

Why the fork: Linux carries a process's ru_maxrss across exec, and a child starts with its
parent's resident pages, so getrusage() in a process started by the (large) benchmark reports the
benchmark's size. This probe, still small when it starts, forks at once; the forked child does
the work and its ru_maxrss, read here through wait4(), is its own.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _work(source: str, pipeline: dict, destination: dict) -> dict:
    from harness import publish  # noqa: E402  (sets up the import path)

    # The backends import their SDK when opened; import it now so the floor includes it.
    kind = destination["storage"]["type"]
    if kind == "s3":
        import boto3  # noqa: F401
    elif kind == "sftp":
        import paramiko  # noqa: F401
    floor = _peak_kib()
    started = time.perf_counter()
    result = publish(source, pipeline, destination)
    return {"floor_kib": floor, "seconds": time.perf_counter() - started,
            "action": result["action"], "written": len(result["written"])}


def main(argv: list) -> int:
    source, pipeline, destination = argv[1], json.loads(argv[2]), json.loads(argv[3])
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        status = 0
        try:
            report = _work(source, pipeline, destination)
        except BaseException as exc:  # reported by the parent; the child must not return
            report, status = {"error": "%s: %s" % (type(exc).__name__, exc)}, 1
        with os.fdopen(write_end, "w") as pipe:
            pipe.write(json.dumps(report))
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        report = json.loads(pipe.read() or '{"error": "the child died without a report"}')
    _pid, status, usage = os.wait4(pid, 0)
    report["peak_kib"] = usage.ru_maxrss
    print(json.dumps(report))
    return 1 if "error" in report or os.waitstatus_to_exitcode(status) != 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readers of a bundle path that is switched between generations, each a process of its own.

Every generation n holds `generation_files(n)`: `marker.txt` names n and `assets/app.css` carries
n in its first line and is long enough (16 KiB) that a file torn between two generations shows. A
reader loops until SIGTERM (or its deadline), then prints one JSON line of counts: `reads` (of
both files), `requests` (HTTP), `mismatches` (bytes that are no whole generation's, or a pair from
two generations where one is promised), `errors` (each also counted by kind in `error_kinds`:
`ENOENT`, `404`, ...) and `generations` (how many distinct ones it saw: a reader that saw one
proves nothing).

    python3 readers.py descriptor BUNDLE_PATH SECONDS
    python3 readers.py by_name BUNDLE_PATH SECONDS
    python3 readers.py http URL SECONDS
    python3 readers.py by_release URL SECONDS

- descriptor: opens the bundle path as a directory, then reads the marker and the asset through
  that descriptor (`dir_fd=`): both must come from the same generation, always;
- by_name: opens each file by its path through the bundle path: a file every generation holds is
  never absent;
- http: GETs both from a web server serving the bundle path, on one kept-alive connection: every
  answer is 200 with one whole generation's bytes;
- by_release: GETs the marker, on one kept-alive connection to a load balancer in front of several
  web servers, and counts each response by the generation it carries (`by_generation`), with a
  `timeline` of runs, consecutive responses of one kind (a generation, `mismatch` or `error`) as
  `[kind, count, first request's start, last request's start]` (time.time()): what was served
  after a moment (a switch) is read off it.

It prints `ready` once its first read succeeded, so a test starts switching only then
(`conftest.under_readers` runs all three around a switcher). Standard library only.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import signal
import sys
import time
import urllib.parse
from collections import Counter

MARKER = "marker.txt"
ASSET = "assets/app.css"


def marker_bytes(n: int) -> bytes:
    return b"%d\n" % n


def asset_bytes(n: int) -> bytes:
    head = b"/* generation %d */\n" % n
    return head + b"body { margin: 0 }\n" * ((16384 - len(head)) // 19)


def generation_files(n: int) -> dict:
    """{path: bytes} of generation n: what a bundle publishes or a stand-in switcher writes."""
    return {MARKER: marker_bytes(n), ASSET: asset_bytes(n)}


def marker_generation(data: bytes) -> int | None:
    """n when `data` is exactly generation n's marker, else None."""
    try:
        n = int(data)
    except ValueError:
        return None
    return n if data == marker_bytes(n) else None


def asset_generation(data: bytes) -> int | None:
    """n when `data` is exactly generation n's asset (whole, not torn), else None."""
    first = data.split(b"\n", 1)[0]
    if not (first.startswith(b"/* generation ") and first.endswith(b" */")):
        return None
    try:
        n = int(first[len(b"/* generation "):-len(b" */")])
    except ValueError:
        return None
    return n if data == asset_bytes(n) else None


class Counts:
    def __init__(self, reader: str):
        self.reader = reader
        self.reads = 0
        self.requests = 0
        self.mismatches = 0
        self.error_kinds = Counter()
        self.seen = set()
        self.by_generation = Counter()
        self.timeline = []

    def error(self, kind: str) -> None:
        self.error_kinds[kind] += 1

    def tally(self, kind: str, started: float) -> None:
        """One response of `kind` to a request started at `started`, in the timeline."""
        self.reads += 1
        if self.timeline and self.timeline[-1][0] == kind:
            self.timeline[-1][1] += 1
            self.timeline[-1][3] = started
        else:
            self.timeline.append([kind, 1, started, started])

    def report(self) -> dict:
        report = {"reader": self.reader, "reads": self.reads, "mismatches": self.mismatches,
                  "errors": sum(self.error_kinds.values()), "error_kinds": dict(self.error_kinds),
                  "generations": len(self.seen)}
        if self.timeline:
            report.update(by_generation=dict(self.by_generation), timeline=self.timeline)
        return dict(report, requests=self.requests) if self.requests else report


def _os_error_kind(error: OSError) -> str:
    return errno.errorcode.get(error.errno, str(error.errno))


def _read_at(name: str, dir_fd: int | None) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _judge(counts: Counts, marker: bytes, asset: bytes, same_generation: bool) -> bool:
    """Counts one read of both files; True when it was a good one."""
    counts.reads += 1
    ns = (marker_generation(marker), asset_generation(asset))
    if None in ns or (same_generation and ns[0] != ns[1]):
        counts.mismatches += 1
        return False
    counts.seen.update(ns)
    return True


def read_by_descriptor(bundle_path: str, counts: Counts) -> bool:
    try:
        directory = os.open(bundle_path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        counts.error(_os_error_kind(error))
        return False
    try:
        return _judge(counts, _read_at(MARKER, directory), _read_at(ASSET, directory), same_generation=True)
    except OSError as error:
        counts.error(_os_error_kind(error))
        return False
    finally:
        os.close(directory)


def read_by_name(bundle_path: str, counts: Counts) -> bool:
    try:
        marker = _read_at(os.path.join(bundle_path, MARKER), None)
        asset = _read_at(os.path.join(bundle_path, ASSET), None)
    except OSError as error:
        counts.error(_os_error_kind(error))
        return False
    return _judge(counts, marker, asset, same_generation=False)


class HttpReader:
    """One kept-alive connection; http.client opens a new one when the server closed it."""

    def __init__(self, url: str):
        parsed = urllib.parse.urlsplit(url)
        self.prefix = parsed.path.rstrip("/")
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)

    def get(self, path: str, counts: Counts) -> bytes | None:
        counts.requests += 1
        try:
            self.connection.request("GET", "%s/%s" % (self.prefix, path))
            response = self.connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.connection.close()
            counts.error(type(error).__name__)
            return None
        if response.status != 200:
            counts.error(str(response.status))
            return None
        return body

    def __call__(self, _url: str, counts: Counts) -> bool:
        marker = self.get(MARKER, counts)
        asset = self.get(ASSET, counts)
        if marker is None or asset is None:
            return False
        return _judge(counts, marker, asset, same_generation=False)


class ReleaseTally:
    """The `by_release` reader: one kept-alive connection through the load balancer."""

    def __init__(self, url: str):
        self.http = HttpReader(url)

    def __call__(self, _url: str, counts: Counts) -> bool:
        started = time.time()
        body = self.http.get(MARKER, counts)
        n = None if body is None else marker_generation(body)
        if n is not None:
            counts.seen.add(n)
            counts.by_generation[str(n)] += 1
        elif body is not None:
            counts.mismatches += 1
        counts.tally("error" if body is None else "mismatch" if n is None else str(n), started)
        return n is not None


READERS = {"descriptor": read_by_descriptor, "by_name": read_by_name}
# Seconds a reader waits between two requests. The fleet's reader counts responses by release
# through a load balancer, over playbooks that run for tens of seconds: a few hundred requests a
# second show what is served around each switch (a window of milliseconds) without taking a core
# from the playbook and the tests beside it, as a loop without a pause does.
PAUSES = {"by_release": 0.002}


def run(kind: str, target: str, seconds: float) -> dict:
    """Reads until SIGTERM or `seconds`, whichever first; the counts."""
    read = HttpReader(target) if kind == "http" else ReleaseTally(target) if kind == "by_release" else READERS[kind]
    counts = Counts(kind)
    stopped = []
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stopped.append(True))
    deadline = time.monotonic() + seconds
    ready = False
    pause = PAUSES.get(kind, 0)
    while not stopped and time.monotonic() < deadline:
        if read(target, counts) and not ready:
            ready = True
            print("ready", flush=True)
        if pause:
            time.sleep(pause)
    return counts.report()


def main() -> None:
    kind, target, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if kind not in ("http", "by_release", *READERS):
        sys.exit("readers.py: unknown reader %r (descriptor, by_name, http or by_release)" % kind)
    print(json.dumps(run(kind, target, seconds)), flush=True)


if __name__ == "__main__":
    main()

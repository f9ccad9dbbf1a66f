# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real racing process against local storage: an account that can write the web root but
nothing else swaps directories of the bundle path with links to a root-only directory outside
it, in a tight loop, while root runs every operation that touches a destination: publishes,
replaces (deletes) and reviews with --check --diff, with directory_mode 0777 and owner/group set
to that account, and force (so that publishes also delete what the swapper leaves in their way);
every publish verifies its outputs' digests (verify: sha256); each round then prunes (deleting
outputs under the swapped directories), reconciles the state and ends with a state_info that
measures every output. The directory outside must never change (mode, owner, entries, content:
nothing written, truncated, created or deleted there), none of its files may be read (their
access times stay where the test put them: the outputs are as long as the secret there, so a
measure that followed a link would hash it), and nothing read there may reach a diff. Each run
ends, within a deadline, in a result or a reason; a run after which the outside differs is a win
for the swapper, counted run by run. The same test against the by-name storage of 0.1.0 fails
within seconds (its outside directory is chmodded, chowned, written into or emptied)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info

from hangs import no_hang

SWAPPER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "swapper.py")
RACE_SECONDS = float(os.environ.get("DISTRIBUTOR_RACE_SECONDS", "12"))
SECRET = b"SECRET outside the root"
BUNDLES = {
    name: {path: data.ljust(len(SECRET), b".") for path, data in files.items()} for name, files in {
        "first": {"docs/a.html": b"a1", "docs/sub/b.html": b"b1", "docs/sub/deeper/c.html": b"c1", "top.html": b"t1"},
        "changed": {"docs/a.html": b"a2", "docs/sub/b.html": b"b2", "docs/sub/deeper/c.html": b"c2", "top.html": b"t2"},
        "other": {"docs/x.html": b"x1", "docs/sub/y.html": b"y1", "top.html": b"t3"},
    }.items()
}
SWAPPED = ["docs", "docs/sub", "docs/sub/deeper"]
RUN_DEADLINE = 60  # seconds one run may take: lock_timeout is 5, a local run takes milliseconds


def _snapshot(top: str) -> dict:
    """Everything an attacker would want changed: each entry's mode, owner and content."""
    found = {}
    for directory, dirs, files in os.walk(top):
        for name in [""] + dirs + files:
            path = os.path.join(directory, name) if name else directory
            info = os.lstat(path)
            digest = None
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            found[os.path.relpath(path, top)] = (info.st_mode, info.st_uid, info.st_gid, digest)
    return found


def _unread(top: str) -> None:
    """Access times of every file under `top` set to the epoch: a read (relatime) moves them."""
    for directory, _dirs, files in os.walk(top):
        for name in files:
            path = os.path.join(directory, name)
            os.utime(path, (0, os.lstat(path).st_mtime), follow_symlinks=False)


def _read_since(top: str) -> list:
    """The files under `top` read since _unread."""
    return sorted(os.path.join(directory, name) for directory, _dirs, files in os.walk(top) for name in files
                  if os.lstat(os.path.join(directory, name)).st_atime != 0)


def _attacker() -> tuple[list, int, int]:
    """(command prefix, uid, gid) of the account that races: nobody when the tests run as root."""
    if os.geteuid() != 0:
        return [sys.executable], os.geteuid(), os.getegid()
    if not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs setpriv and /usr/bin/python3 to race as an unprivileged account")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3"], 65534, 65534


@pytest.fixture
def arena():
    """/tmp/race-*/: www (root-owned root) holding `site`, the bundle path the attacker may
    write, and `outside`, a root-only 0700 directory holding a secret at each output's name."""
    top = tempfile.mkdtemp(prefix="race-", dir="/tmp")
    os.chmod(top, 0o755)
    command, uid, gid = _attacker()
    outside = os.path.join(top, "outside")
    os.mkdir(outside, 0o700)
    for name in ("a.html", "b.html", "c.html", "x.html", "y.html"):
        with open(os.path.join(outside, name), "wb") as handle:
            handle.write(SECRET)
    site = os.path.join(top, "www", "site")
    os.makedirs(site)
    os.chmod(site, 0o777)
    os.chown(site, uid, gid)
    bundles, swapper = bundles_and_swapper(top)
    yield dict(top=top, site=site, outside=outside, bundles=bundles, command=command + [swapper], uid=uid, gid=gid)
    shutil.rmtree(top, ignore_errors=True)


@dataclass
class Race:
    outcomes: Counter  # "publish ok", "check storage_error", "prune ok", ...
    swaps: int  # exchanges the swapper made
    tries: int  # exchanges it tried
    rounds: int
    shown: int  # diffs that showed content from outside the root
    wins: Counter  # runs after which the directory outside differed or had a file read, by operation
    changed: Counter  # runs that wrote or deleted something (`changed`), by operation


def _stopped(swapper: subprocess.Popen, targets: list):
    """The swapper stopped (SIGSTOP, and seen stopped), each exchange it left undone, parents
    first (a child is exchanged only while its parent is in place), and its links removed (it
    makes them again): the tree as published."""
    swapper.send_signal(signal.SIGSTOP)
    while _process_state(swapper.pid) not in "TtZX":
        time.sleep(0.001)
    for target in targets:
        moved = target + "-evil"
        if os.path.islink(target) and os.path.isdir(moved) and not os.path.islink(moved):
            os.unlink(target)
            os.rename(moved, target)
        if os.path.islink(moved):
            os.unlink(moved)


def _process_state(pid: int) -> str:
    try:
        with open("/proc/%d/stat" % pid) as stat_file:
            return stat_file.read().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return "X"


def _round(arena: dict, destination: dict, created: datetime, settle):
    """One round's runs, in order, as (name, call). The first publishes `first` with the swapper
    stopped (`settle`), so that every round's raced runs find outputs under the swapped
    directories: a republish of the same bundle that verifies (measures, then repairs) them, a
    --check --diff of `changed` (reads them), prune (deletes three of them), a publish of `other`
    (replaces them), reconcile-state and state_info's verify."""
    def published(name, check=False, stamp=1):
        stamped = (created + timedelta(seconds=stamp)).strftime("%Y-%m-%dT%H:%M:%SZ")
        create_manifest(arena["bundles"][name], "race", stamped, sorted(BUNDLES[name]))
        return publish(arena["bundles"][name], {"id": "p"}, destination, check_mode=check, force=True,
                       diff_contents=check, lock_timeout=5, verify="sha256")

    yield "settle", lambda: settle(lambda: published("first"))
    yield "republish", lambda: published("first")
    yield "check", lambda: published("changed", check=True, stamp=2)
    yield "prune", lambda: prune("p", destination, lock_timeout=5)
    yield "publish", lambda: published("other", stamp=3)
    yield "reconcile", lambda: reconcile_state("p", destination, lock_timeout=5)
    yield "state_info", lambda: state_info(destination, pipeline_id="p", verify="sha256")


def race(arena: dict, destination: dict) -> Race:
    """Rounds of every operation (see _round) for RACE_SECONDS while the swapper races them as
    the attacker's account. Prune keeps one output of four, so three of its deletes go through
    the swapped directories. After each run the directory outside is looked at: a run that
    changed or read it is a win."""
    destination = dict(destination, retention={"max_outputs": 1})
    pause = os.environ.get("DISTRIBUTOR_RACE_PAUSE", "0.0005")
    targets = [os.path.join(arena["site"], d) for d in SWAPPED]
    before = _snapshot(arena["outside"])
    _unread(arena["outside"])
    swapper = subprocess.Popen(arena["command"] + [str(RACE_SECONDS), pause, arena["outside"]] + targets,
                               stdout=subprocess.PIPE, text=True)
    outcomes, wins, changed, shown, rounds = Counter(), Counter(), Counter(), 0, 0
    created = datetime(2026, 6, 4, tzinfo=timezone.utc)
    deadline = time.monotonic() + RACE_SECONDS

    def settle(run):
        _stopped(swapper, targets)
        try:
            return run()
        finally:
            swapper.send_signal(signal.SIGCONT)
    try:
        while time.monotonic() < deadline:
            rounds += 1
            created += timedelta(seconds=4)
            for kind, call in _round(arena, destination, created, settle):
                with no_hang(RUN_DEADLINE, "a %s run under the race" % kind):
                    try:
                        result = call()
                    except DistributorError as error:
                        assert error.message and "Traceback" not in error.message, error.message
                        outcomes["%s %s" % (kind, error.reason)] += 1
                    else:
                        outcomes[kind + " ok"] += 1
                        changed[kind] += bool(result.get("changed"))
                        shown += SECRET.decode() in repr(result.get("diff"))
                if _read_since(arena["outside"]) or _snapshot(arena["outside"]) != before:
                    wins[kind] += 1
                    before = _snapshot(arena["outside"])
                _unread(arena["outside"])
    finally:
        swaps, tries = (int(n) for n in swapper.communicate(timeout=RACE_SECONDS + 30)[0].split() or (0, 0))
    assert swaps > 1000, "the swapper did not race (%d swaps)" % swaps
    return Race(outcomes, swaps, tries, rounds, shown, wins, changed)


def test_a_racing_swapper_never_moves_an_operation_outside_the_bundle_path(arena):
    destination = {
        "id": "web",
        "storage": {"type": "local", "root": os.path.join(arena["top"], "www"), "directory_mode": "0777",
                    "file_mode": "0666", "owner": str(arena["uid"]), "group": str(arena["gid"])},
        "path": "site",
    }
    before = _snapshot(arena["outside"])
    result = race(arena, destination)
    print("\nlocal race: %d rounds, %d runs, swapper %d exchanges of %d tried, %d wins; outcomes %s; changed %s"
          % (result.rounds, sum(result.outcomes.values()), result.swaps, result.tries, sum(result.wins.values()),
             dict(result.outcomes), dict(result.changed)))
    assert not result.wins, "runs changed or read the directory outside the root: %s" % dict(result.wins)
    assert _snapshot(arena["outside"]) == before, "the directory outside the root changed"
    assert result.shown == 0, "a diff showed content from outside the root"
    assert sum(result.outcomes.values()) >= 30, result.outcomes
    operations = {"settle", "republish", "check", "prune", "publish", "reconcile", "state_info"}
    assert {kind.split()[0] for kind in result.outcomes} == operations
    assert all(outcome.endswith((" ok", " storage_error", " unmanaged")) for outcome in result.outcomes), \
        result.outcomes


def bundles_and_swapper(top: str) -> tuple[dict, str]:
    """The race's bundles (BUNDLES, written under `top`) and a copy of the swapper any account can read."""
    bundles = {}
    for name, files in BUNDLES.items():
        bundles[name] = os.path.join(top, "bundle-" + name)
        for path, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(bundles[name], path)), exist_ok=True)
            with open(os.path.join(bundles[name], path), "wb") as handle:
                handle.write(data)
    swapper = os.path.join(top, "swapper.py")
    shutil.copy(SWAPPER, swapper)
    os.chmod(swapper, 0o644)
    return bundles, swapper

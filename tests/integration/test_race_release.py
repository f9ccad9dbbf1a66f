# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The racing swapper of test_race_local.py against release mode (#30 item 9): an account that
owns the destination root and every directory distributor makes there (directory_mode 0777,
owner and group set to it) exchanges, in a tight loop, the bundle path's link, each
generation's directory, directories inside the generations, and their files, with symbolic
links to a root-only directory outside and its secret files, or with hard links to a file of
its own outside, while root publishes releases (verify: sha256), reviews with --check --diff,
prunes, rolls back and forward with distributor_release, reconciles and inspects the state.

Nothing outside the release home and the link may be read, written or deleted: the outside
directories must stay as they were (mode, owner, entries, content), none of their files read
(access times), and no result may hold the secret's bytes. A name in another generation is
distributor's own only where that generation's record names the path with the same digest and
it is the very same file (st_dev, st_ino): a file two generations share is read like any other,
and the swapper's file given as many names is not; any other link is refused, never followed
(test_release_storage.py and tests/unit/test_release_links.py show both on a quiet destination).

A conversion (issue 38) is raced by an account that can write the destination root but not the
plain bundle path, and is none of the accounts distributor trusts: it exchanges the plain
directory with a link or a directory of its own while root converts it. Only the directory root
looked at may become a release (tests/unit/test_release_adoption.py makes the swap every time).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.regular import kind_of
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.switch import switch_release

from generations import HOME, NAME
from hangs import no_hang
from test_race_local import BUNDLES, RACE_SECONDS, RUN_DEADLINE, SECRET, _attacker, _process_state, _read_since
from test_race_local import _snapshot, _unread, bundles_and_swapper

GENERATIONS = os.path.join(HOME, "2*")
# A rollback, or a switch forward whose round made no release (it then asks for `previous`), may
# find nothing to switch to once the swapper has made the round's publishes fail: no_release.
OUTCOMES = (" ok", " storage_error", " unmanaged", " invalid_state", "rollback no_release", "forward no_release")
OPERATIONS = {"settle", "republish", "check", "prune", "publish", "rollback", "forward", "reconcile", "state_info"}


@pytest.fixture
def arena():
    """/tmp/race-*/: `www`, the destination root, owned by the attacker; `outside`, a root-only
    0700 directory holding a secret at each output's name; `theirs`, the attacker's own
    directory with a file holding the secret (0600: a hard link to it is the attacker's to
    make); `twins`, where the swapper keeps what it exchanged (nothing is added beside a
    target, so a generation holds no name of the swapper's while it is not exchanged). `beside`
    runs it with each twin beside its target instead: only there can it exchange a directory it
    cannot write (one moved to another directory would need its `..` changed)."""
    top = tempfile.mkdtemp(prefix="race-", dir="/tmp")
    os.chmod(top, 0o755)
    command, uid, gid = _attacker()
    outside = os.path.join(top, "outside")
    os.mkdir(outside, 0o700)
    for name in ("a.html", "b.html", "c.html", "x.html", "y.html", "top.html"):
        with open(os.path.join(outside, name), "wb") as handle:
            handle.write(SECRET)
    theirs, www, twins = os.path.join(top, "theirs"), os.path.join(top, "www"), os.path.join(top, "twins")
    for directory in (theirs, www, twins):
        os.mkdir(directory)
        os.chmod(directory, 0o755)
    with open(os.path.join(theirs, "mine.html"), "wb") as handle:
        handle.write(SECRET)
    os.chmod(os.path.join(theirs, "mine.html"), 0o600)
    for path in (theirs, os.path.join(theirs, "mine.html"), www, twins):
        os.chown(path, uid, gid)
    bundles, swapper = bundles_and_swapper(top)
    yield dict(top=top, www=www, outside=outside, theirs=theirs, twins=twins, bundles=bundles, uid=uid, gid=gid,
               command=command + [swapper, "--twins=" + twins], beside=command + [swapper])
    shutil.rmtree(top, ignore_errors=True)


def targets(arena: dict, what: str) -> list:
    """What the swapper exchanges: directories and files inside the generations, or the link
    and each generation's directory."""
    www, outside = arena["www"], arena["outside"]
    generations = os.path.join(www, GENERATIONS)
    if what == "the link and the generations":
        return [os.path.join(www, NAME), generations]
    return [os.path.join(generations, d) for d in ("docs", "docs/sub", "docs/sub/deeper")] + [
        os.path.join(generations, "top.html") + "=" + os.path.join(outside, "top.html"),
        os.path.join(generations, "docs", "sub", "b.html") + "=" + os.path.join(outside, "b.html"),
        os.path.join(generations, "docs", "a.html") + "=hard:" + os.path.join(arena["theirs"], "mine.html"),
    ]


def evil(arena: dict, path: str) -> bool:
    """Whether `path` is one of the swapper's own links (symbolic, or a hard link to its file)."""
    if os.path.islink(path):
        target = os.readlink(path)
        return target == arena["outside"] or target.startswith(arena["outside"] + "/")
    return os.path.isfile(path) and os.lstat(path).st_ino == os.lstat(os.path.join(arena["theirs"], "mine.html")).st_ino


def stopped(swapper: subprocess.Popen, arena: dict) -> None:
    """The swapper stopped (SIGSTOP, and seen stopped) and every exchange it left undone, parents
    first: the tree as distributor made it, the swapper's links gone (it makes them again)."""
    _halted(swapper)
    for name in sorted(os.listdir(arena["twins"]), key=len):
        twin = os.path.join(arena["twins"], name)
        target = urllib.parse.unquote(name)
        if not evil(arena, twin) and os.path.lexists(target) and evil(arena, target):
            os.unlink(target)
            os.rename(twin, target)
        elif evil(arena, twin):
            os.unlink(twin)


def moved_away(arena: dict) -> None:
    """What the live generation holds that its record does not name, removed as an operator
    would: a file a raced reconcile-state forgot (its directory was a link when it looked)
    makes every later release publish refuse (unmanaged), as it must."""
    live = os.path.join(arena["www"], NAME)
    if not os.path.isdir(live):
        return
    with open(os.path.join(live, ".distributor.json"), "rb") as handle:
        named = {output["path"] for output in json.load(handle)["outputs"]}
    for directory, _dirs, files in os.walk(live):
        for name in files:
            path = os.path.relpath(os.path.join(directory, name), live)
            if path not in named and not name.startswith(".distributor"):
                os.unlink(os.path.join(directory, name))


def released(arena: dict, destination: dict, created: datetime, settle):
    """One round's runs, in order, as (name, call): a release of `first` built and switched to
    with the swapper stopped (`settle`), so that every raced run finds generations to race in;
    the same bundle again, verified (reads every output); a --check --diff of `changed` (reads
    the live generation's content); prune (deletes in the live generation); a release of
    `other` (links from the live generation, writes, switches, clears); a rollback and a switch
    forward again (distributor_release); reconcile-state; state_info's verify."""
    made = []

    def published(name, check=False, stamp=1):
        stamped = (created + timedelta(seconds=stamp)).strftime("%Y-%m-%dT%H:%M:%SZ")
        create_manifest(arena["bundles"][name], "race", stamped, sorted(BUNDLES[name]))
        result = publish(arena["bundles"][name], {"id": "p"}, destination, check_mode=check, diff_contents=check,
                         lock_timeout=5, verify="sha256")
        made.extend([result["release"]["id"]] if result.get("release", {}).get("status") == "active" else [])
        return result

    def forward():
        return switch_release("p", destination, made[-1] if made else "previous", lock_timeout=5)
    yield "settle", lambda: settle(lambda: published("first"))
    yield "republish", lambda: published("first")
    yield "check", lambda: published("changed", check=True, stamp=2)
    yield "prune", lambda: prune("p", destination, lock_timeout=5)
    yield "publish", lambda: published("other", stamp=3)
    yield "rollback", lambda: switch_release("p", destination, "previous", lock_timeout=5)
    yield "forward", forward
    yield "reconcile", lambda: reconcile_state("p", destination, lock_timeout=5)
    yield "state_info", lambda: state_info(destination, pipeline_id="p", verify="sha256")


@dataclass
class Race:
    outcomes: Counter  # "publish ok", "rollback storage_error", ...
    changed: Counter  # runs that changed something, by operation
    wins: Counter  # runs after which what is outside differed or had a file read, by operation
    shown: int  # results that held the secret
    rounds: int
    swaps: int
    tries: int

    def __str__(self) -> str:
        return "%d rounds, %d runs, swapper %d exchanges of %d tried, %d wins %s; outcomes %s; changed %s" % (
            self.rounds, sum(self.outcomes.values()), self.swaps, self.tries, sum(self.wins.values()), dict(self.wins),
            dict(self.outcomes), dict(self.changed))


def race(arena: dict, storage: dict, what: str) -> Race:
    """Rounds of every operation (see released) for RACE_SECONDS while the swapper races them
    as the attacker's account, exchanging `what` (see targets). After each run, the directories
    outside are looked at: a run that changed or read them is a win."""
    destination = {"id": "web", "path": NAME, "releases": {"keep": 2}, "retention": {"max_outputs": 1},
                   "storage": dict(storage, directory_mode="0777", file_mode="0666", owner=str(arena["uid"]),
                                   group=str(arena["gid"]))}
    watched = (arena["outside"], arena["theirs"])
    before = {top: _snapshot(top) for top in watched}
    for top in watched:
        _unread(top)
    pause = os.environ.get("DISTRIBUTOR_RACE_PAUSE", "0.0005")
    swapper = subprocess.Popen(arena["command"] + [str(RACE_SECONDS), pause, arena["outside"]] + targets(arena, what),
                               stdout=subprocess.PIPE, text=True)
    found = Race(Counter(), Counter(), Counter(), 0, 0, 0, 0)
    created = datetime(2026, 6, 4, tzinfo=timezone.utc)
    deadline = time.monotonic() + RACE_SECONDS

    def settle(run):
        stopped(swapper, arena)
        moved_away(arena)
        try:
            return run()
        finally:
            swapper.send_signal(signal.SIGCONT)
    try:
        while time.monotonic() < deadline:
            found.rounds += 1
            created += timedelta(seconds=4)
            for kind, call in released(arena, destination, created, settle):
                with no_hang(RUN_DEADLINE, "a %s run under the race" % kind):
                    try:
                        result = call()
                    except DistributorError as error:
                        assert error.message and "Traceback" not in error.message, error.message
                        found.shown += SECRET.decode() in error.message
                        found.outcomes["%s %s" % (kind, error.reason)] += 1
                    else:
                        found.outcomes[kind + " ok"] += 1
                        found.changed[kind] += bool(result.get("changed"))
                        found.shown += SECRET.decode() in repr(result)
                if any(_read_since(top) or _snapshot(top) != before[top] for top in watched):
                    found.wins[kind] += 1
                    before = {top: _snapshot(top) for top in watched}
                for top in watched:
                    _unread(top)
    finally:
        swapper.send_signal(signal.SIGCONT)
        found.swaps, found.tries = (int(n) for n in swapper.communicate(timeout=RACE_SECONDS + 30)[0].split() or (0, 0))
    assert found.swaps > 1000, "the swapper did not race (%d swaps)" % found.swaps
    return found


@pytest.mark.parametrize("what", ["inside the generations", "the link and the generations"])
def test_a_racing_swapper_never_moves_a_release_operation_outside_the_release_home(arena, what):
    found = race(arena, {"type": "local", "root": arena["www"]}, what)
    print("\nrelease race on local storage, %s: %s" % (what, found))
    assert not found.wins, "runs changed or read what is outside the release home: %s" % dict(found.wins)
    assert found.shown == 0, "a result showed the secret"
    assert {kind.split()[0] for kind in found.outcomes} == OPERATIONS
    assert all(outcome.endswith(OUTCOMES) for outcome in found.outcomes), found.outcomes
    raced = sum(n for outcome, n in found.outcomes.items() if outcome.endswith(" ok") and not outcome.startswith("settle"))
    assert raced > 0, "no raced run got through: %s" % found.outcomes
    if what == "inside the generations":
        assert found.outcomes["publish ok"] and found.outcomes["rollback ok"] and found.outcomes["forward ok"], found


def test_sftp_release_operations_raced_by_a_swapper_never_show_or_chmod_what_is_outside(arena, sshd_server):
    """The same race over SFTP, inside the generations. A path-based protocol cannot promise
    what local storage does (test_sftp_confinement.py: it re-checks right before each act, and
    docs/untrusted-destinations.md says what is left open); what it must keep: the directories outside keep
    their mode and owner, and no result shows the secret."""
    watched = (arena["outside"], arena["theirs"])
    before = {top: _snapshot(top)["."][:3] for top in watched}
    found = race(arena, sshd_server.storage(arena["www"]), "inside the generations")
    print("\nrelease race over SFTP, inside the generations: %s" % found)
    assert found.shown == 0, "a result showed the secret"
    assert {top: _snapshot(top)["."][:3] for top in watched} == before, "the mode or owner of a directory outside changed"
    assert all(outcome.endswith(OUTCOMES) for outcome in found.outcomes), found.outcomes
    assert sum(found.outcomes.values()) >= 10, found.outcomes


def adopted(arena: dict) -> list:
    """The releases the index records that root's conversion or build did not make: a link, a
    directory of another account's or nothing at the release's name, or an active release whose
    files do not hold the bytes its record names (issue 38: the swapper's link or directory was
    recorded as the active release, and served)."""
    home = os.path.join(arena["www"], HOME)
    try:
        with open(os.path.join(home, ".distributor-releases.json"), "rb") as handle:
            releases = json.load(handle)["releases"]
    except FileNotFoundError:
        return []
    found = []
    for release in releases:
        generation = os.path.join(home, release["id"])
        info = os.lstat(generation) if os.path.lexists(generation) else None
        if info is None or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            found.append("%s: %s" % (release["status"], "missing" if info is None else "another account's"
                                     if stat.S_ISDIR(info.st_mode) else kind_of(info.st_mode)))
        elif release["status"] == "active":
            with open(os.path.join(generation, ".distributor.json"), "rb") as handle:
                outputs = json.load(handle)["outputs"]
            if any(_digest(os.path.join(generation, output["path"])) != output["sha256"] for output in outputs):
                found.append("active serving other bytes")
    return found


def _digest(path: str) -> str | None:
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    with open(path, "rb") as handle:
        return "sha256:" + hashlib.sha256(handle.read()).hexdigest()


def _removed(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _halted(swapper: subprocess.Popen) -> None:
    """The swapper stopped (SIGSTOP), and seen stopped."""
    swapper.send_signal(signal.SIGSTOP)
    while _process_state(swapper.pid) not in "TtZX":
        time.sleep(0.001)


def convert_race(arena: dict, twin: str) -> Race:
    """Rounds of a plain publish with the swapper stopped, then a publish with releases.convert
    while it exchanges the plain bundle path with `twin` (a link to the root-only directory
    outside, or a directory of its own), for half of RACE_SECONDS. The attacker can write the
    destination root, not the bundle path, and is none of the accounts distributor trusts. After
    each conversion: every release the index records must be a directory root made, the active
    one holding the bytes its record names (wins: `adopted`), and outside must be as it was."""
    www = arena["www"]
    plain = {"id": "web", "path": NAME, "storage": {"type": "local", "root": www}}
    converting = dict(plain, releases={"keep": 2, "convert": True})
    evil = os.path.join(arena["top"], "evil-site")
    for path, data in BUNDLES["first"].items():
        os.makedirs(os.path.dirname(os.path.join(evil, path)), exist_ok=True)
        with open(os.path.join(evil, path), "wb") as handle:
            handle.write(data.replace(b"1", b"X"))
    watched = (arena["outside"], arena["theirs"])
    before = {top: _snapshot(top) for top in watched}
    for top in watched:
        _unread(top)
    seconds = RACE_SECONDS / 2
    exchanged = os.path.join(www, NAME) + "=" + (arena["outside"] if twin == "a link" else "dir:" + evil)
    pause = os.environ.get("DISTRIBUTOR_RACE_PAUSE", "0.0005")
    swapper = subprocess.Popen(arena["beside"] + [str(seconds), pause, arena["outside"], exchanged], stdout=subprocess.PIPE, text=True)
    found = Race(Counter(), Counter(), Counter(), 0, 0, 0, 0)
    created = datetime(2026, 6, 4, tzinfo=timezone.utc)
    deadline = time.monotonic() + seconds

    def published(name, destination):
        stamped = (created + timedelta(seconds=1 if name == "first" else 2)).strftime("%Y-%m-%dT%H:%M:%SZ")
        create_manifest(arena["bundles"][name], "race", stamped, sorted(BUNDLES[name]))
        return publish(arena["bundles"][name], {"id": "p"}, destination, lock_timeout=5)
    try:
        while time.monotonic() < deadline:
            found.rounds += 1
            created += timedelta(seconds=4)
            _halted(swapper)
            for name in (NAME, NAME + "-evil", ".distributor-releases"):
                _removed(os.path.join(www, name))
            published("first", plain)
            swapper.send_signal(signal.SIGCONT)
            with no_hang(RUN_DEADLINE, "a conversion under the race"):
                try:
                    result = published("changed", converting)
                except DistributorError as error:
                    assert error.message and "Traceback" not in error.message, error.message
                    found.outcomes["convert " + error.reason] += 1
                else:
                    found.outcomes["convert ok"] += 1
                    found.changed["convert"] += bool(result["release"]["converted"])
                    found.shown += SECRET.decode() in repr(result)
            _halted(swapper)
            found.wins.update(adopted(arena))
            if any(_read_since(top) or _snapshot(top) != before[top] for top in watched):
                found.wins["outside"] += 1
                before = {top: _snapshot(top) for top in watched}
            for top in watched:
                _unread(top)
            swapper.send_signal(signal.SIGCONT)
    finally:
        swapper.send_signal(signal.SIGCONT)
        found.swaps, found.tries = (int(n) for n in swapper.communicate(timeout=seconds + 30)[0].split() or (0, 0))
    return found


@pytest.mark.parametrize("twin", ["a link", "a directory of its own"])
def test_a_conversion_raced_by_a_swapper_of_the_plain_directory_records_only_the_directory_it_looked_at(arena, twin):
    found = convert_race(arena, twin)
    print("\nconversion race on local storage, the plain directory swapped with %s: %s" % (twin, found))
    assert not found.wins, "releases recorded that root did not make, or outside changed: %s" % dict(found.wins)
    assert found.shown == 0, "a result showed the secret"
    assert found.swaps > 100, "the swapper did not race (%d swaps)" % found.swaps
    assert set(found.outcomes) <= {"convert ok", "convert storage_error", "convert invalid_state", "convert unmanaged"}, found

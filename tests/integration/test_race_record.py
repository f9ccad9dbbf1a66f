# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 38's planted record as a race, on local storage and over OpenSSH's SFTP: uid 65534,
which can write the site's top directory but not uid 1000's `reports/` beneath it, renames a
valid record of its own (the site plus uid 1000's 20 reports, published by it to a scratch root:
tests/integration/planting.py) over the real `.distributor.json` (tests/planter.py) during each
of root's runs, for DISTRIBUTOR_RACE_SECONDS: publishes that replace (they delete the outputs the
other bundle lacks), reviews with --check --diff, prunes, and reconcile-state repairs.

Each run starts from root's own record (made with the planter idle) and the rename lands at a
random instant of it: before the run reads the record (the run must refuse it: invalid_state
naming uid 65534), between its read and its write (the run acts on root's own record and writes
its own over the planted one), or after it. Whatever the order, no run may delete or rewrite a
file distributor did not write: uid 1000's reports are checked after every run, and every run
ends within a deadline in a result or a reason. Against the code before issue 38's item 1, the
first replacing publish that reads the planted record deletes all 20 reports.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state

from conftest import REPO_ROOT
from hangs import no_hang
from planting import ATTACKER, RECORD, REPORTS, attacker_home, attacker_record, reports_lost, victim_reports
from test_race_local import BUNDLES, RUN_DEADLINE, _attacker, bundles_and_swapper

PLANTER = os.path.join(REPO_ROOT, "tests", "planter.py")
RACE_SECONDS = float(os.environ.get("DISTRIBUTOR_RACE_SECONDS", "15"))
OUTPUT = os.path.join(REPO_ROOT, "tests", "output")
SOURCE_ID, PIPELINE = "race", {"id": "p"}
KINDS = ("publish", "check", "prune", "reconcile")


@pytest.fixture(params=["local", "sftp"])
def arena(request):
    """/tmp/race-record-*/: `www`, the root-owned root (its `site` made by the first publish),
    test_race_local's bundles, and a copy of the planter every account can read."""
    command, _uid, _gid = _attacker()
    top = tempfile.mkdtemp(prefix="race-record-", dir="/tmp")
    os.chmod(top, 0o755)
    www = os.path.join(top, "www")
    os.mkdir(www, 0o755)
    storage = {"type": "local", "root": www} if request.param == "local" else request.getfixturevalue("sshd_server").storage(www)
    bundles, _swapper = bundles_and_swapper(top)
    planter = os.path.join(top, "planter.py")
    shutil.copy(PLANTER, planter)
    os.chmod(planter, 0o644)
    yield dict(backend=request.param, top=top, site=os.path.join(www, "site"), bundles=bundles, command=command + [planter],
               destination={"id": "web", "storage": storage, "path": "site", "state": {"mode": "shared_root"},
                            "retention": {"max_outputs": 1}})
    shutil.rmtree(top, ignore_errors=True)


def stamped(arena: dict, name: str, created: datetime) -> str:
    create_manifest(arena["bundles"][name], SOURCE_ID, created.strftime("%Y-%m-%dT%H:%M:%SZ"), sorted(BUNDLES[name]))
    return arena["bundles"][name]


def settle(arena: dict, kind: str, created: datetime) -> None:
    """Root's own record again, the planter idle: everything in the site but uid 1000's
    `reports/` removed (root's outputs, and the planted record if it is there), bundle `first`
    published (a shared root leaves the reports it does not manage alone) and, before a
    reconcile, one output removed behind distributor's back so that the repair writes."""
    for name in os.listdir(arena["site"]):
        path = os.path.join(arena["site"], name)
        if name != "reports":
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    publish(stamped(arena, "first", created), PIPELINE, arena["destination"], lock_timeout=5)
    if kind == "reconcile":
        os.unlink(os.path.join(arena["site"], "top.html"))


def raced(arena: dict, kind: str, created: datetime):
    """The run the planter races: a publish of `other` replacing `first` (it deletes three of its
    four outputs), its review with --check --diff, prune (keeps one output), reconcile-state."""
    destination = arena["destination"]
    if kind in ("publish", "check"):
        return lambda: publish(stamped(arena, "other", created + timedelta(seconds=1)), PIPELINE, destination,
                               check_mode=kind == "check", diff_contents=kind == "check", lock_timeout=5)
    if kind == "prune":
        return lambda: prune(PIPELINE["id"], destination, lock_timeout=5)
    return lambda: reconcile_state(PIPELINE["id"], destination, lock_timeout=5)


def plant(planter: subprocess.Popen, delays: list) -> None:
    planter.stdin.write(" ".join("%.6f" % delay for delay in delays) + "\n")
    planter.stdin.flush()


def planted_at(planter: subprocess.Popen) -> list:
    """The monotonic times of the renames the planter made for its last line (None: failed)."""
    return [None if word == "failed" else float(word) for word in planter.stdout.readline().split()]


def test_a_record_planted_during_runs_never_deletes_another_accounts_file(arena):
    """A quarter of the runs start with the planted record in place (each must refuse it); the
    others get three renames at random instants over one and a half times a run's length (the
    first anywhere in it, so that it lands after the run's read as often as before)."""
    created = datetime(2026, 6, 4, tzinfo=timezone.utc)
    started = time.monotonic()
    assert publish(stamped(arena, "first", created), PIPELINE, arena["destination"])["changed"]
    typical = time.monotonic() - started  # how long a run takes here, to spread the renames over one
    victim_reports(arena["site"])
    planted = attacker_record(attacker_home(arena["top"]), arena["site"], {
        "source_id": SOURCE_ID, "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"), "destination_id": "web",
        "pipeline_id": PIPELINE["id"], "state_mode": "shared_root"})
    with open(planted) as handle:
        assert set(REPORTS) <= {output["path"] for output in json.load(handle)["outputs"]}, "the record names uid 1000's files"

    planter = subprocess.Popen(arena["command"] + [planted, os.path.join(arena["site"], RECORD)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    race = Race()
    deadline = time.monotonic() + RACE_SECONDS
    try:
        while time.monotonic() < deadline:
            race.rounds += 1
            for kind in KINDS:
                created += timedelta(seconds=2)
                with no_hang(RUN_DEADLINE, "the settling publish before a %s" % kind):
                    settle(arena, kind, created)
                before = random.random() < 0.25
                with no_hang(RUN_DEADLINE, "a %s run under the race" % kind):
                    if before:
                        plant(planter, [0])
                        times = planted_at(planter)
                    else:
                        first = random.uniform(0, 1.5 * typical)
                        plant(planter, [first] + sorted(random.uniform(first, 1.5 * typical) for _draw in range(2)))
                    started = time.monotonic()
                    outcome = race.run(kind, raced(arena, kind, created))
                    ended = time.monotonic()
                    if not before:
                        times = planted_at(planter)
                typical = 0.8 * typical + 0.2 * (ended - started)
                race.count(kind, outcome, times, ended, before)
                lost = reports_lost(arena["site"])
                if lost:
                    race.deleting[kind] += len(lost)
                    shutil.rmtree(os.path.join(arena["site"], "reports"), ignore_errors=True)
                    victim_reports(arena["site"])  # back as they were, so that a later deletion counts too
    finally:
        planter.stdin.close()
        planter.wait(timeout=30)
    race.report(arena["backend"])
    assert not race.deleting, "runs deleted or rewrote uid 1000's files: %s" % dict(race.deleting)
    assert not race.unexplained, "invalid_state for another reason than the planted record: %s" % race.unexplained[:3]
    assert not race.accepted, "runs that started with the planted record in place did not refuse it: %s" % race.accepted[:3]
    assert {outcome.split()[0] for outcome in race.outcomes} == set(KINDS)
    assert race.renames["failed"] == 0 and race.renames["inside a run that succeeded"] > 0, \
        "no rename landed inside a run after its read: %s" % dict(race.renames)


@dataclass
class Race:
    rounds: int = 0
    outcomes: Counter = field(default_factory=Counter)  # "publish ok", "prune invalid_state", ...
    renames: Counter = field(default_factory=Counter)  # "before a run", "inside a run", "inside a run that succeeded", "after"
    deleting: Counter = field(default_factory=Counter)  # uid 1000's files lost, by the run after which they were
    unexplained: list = field(default_factory=list)  # invalid_state messages that do not name the planted record's owner
    accepted: list = field(default_factory=list)  # runs that started on the planted record and did not refuse it

    def run(self, kind: str, call) -> str:
        """The run's outcome: ok, or the reason it failed with (anything else fails the test)."""
        try:
            call()
        except DistributorError as error:
            assert error.message and "Traceback" not in error.message, error.message
            if error.reason == "invalid_state" and "is owned by uid %d, not by " % ATTACKER not in error.message:
                self.unexplained.append(error.message)
            return error.reason
        return "ok"

    def count(self, kind: str, outcome: str, times: list, ended: float, before: bool) -> None:
        self.outcomes["%s %s" % (kind, outcome)] += 1
        if before:
            self.renames["before a run"] += 1
            if outcome != "invalid_state":
                self.accepted.append("%s %s" % (kind, outcome))
            return
        for at in times:
            where = "failed" if at is None else "inside a run" if at < ended else "after a run"
            self.renames[where] += 1
            self.renames["inside a run that succeeded"] += where == "inside a run" and outcome == "ok"

    def report(self, backend: str) -> None:
        """The counts, printed (pytest -s) and written to tests/output/race-record-<backend>.json."""
        refused = sum(n for outcome, n in self.outcomes.items() if outcome.endswith(" invalid_state"))
        summary = {"backend": backend, "seconds": RACE_SECONDS, "rounds": self.rounds, "runs": sum(self.outcomes.values()),
                   "refused_invalid_state": refused, "renames": dict(self.renames),
                   "deletions_outside_what_distributor_wrote": sum(self.deleting.values()),
                   "outcomes": dict(sorted(self.outcomes.items()))}
        print("\nplanted-record race (%s): %d rounds, %d runs (%d refused invalid_state), renames by uid %d %s, "
              "%d deletions outside what distributor wrote; outcomes %s"
              % (backend, self.rounds, summary["runs"], refused, ATTACKER, summary["renames"],
                 summary["deletions_outside_what_distributor_wrote"], summary["outcomes"]))
        os.makedirs(OUTPUT, exist_ok=True)
        with open(os.path.join(OUTPUT, "race-record-%s.json" % backend), "w") as handle:
            json.dump(summary, handle, indent=1)

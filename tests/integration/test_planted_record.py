# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 38 as an operator meets it, through the real ansible-playbook, on local storage and
over OpenSSH's SFTP. uid 65534, which can write the site's top directory only, renames a valid
record of its own (the site plus uid 1000's `reports/q*.pdf`, published to a scratch root) over
the real one (tests/integration/planting.py plays it, as uid 65534). Root's publish of the next
version (check mode with --diff, then the run), its prune, and a release-mode publish asked to
convert the plain directory each fail with invalid_state naming the record and uid 65534: all 20
of uid 1000's files stay, nothing in the site is written, moved or made. Beside it, the
migration the option is for: a record (and outputs) left by a previous publishing account, uid
1000, is refused until `storage.trusted_owners: ["1000"]` names it, then taken over.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from planting import ATTACKER, RECORD, VICTIM, attack, attacker_home, reports_lost, victim_reports
from test_race_local import _snapshot

PUBLISH = "distributor.core.distributor_publish"
PRUNE = "distributor.core.distributor_prune"
SITE = {"index.html": b"<p>site</p>", "about.html": b"<p>about</p>"}
FIRST, NEXT = "2026-06-04T11:55:00Z", "2026-06-05T11:55:00Z"
PIPELINE = {"id": "reports"}
BACKENDS = ("local", "sftp")


@pytest.fixture
def roots(sshd_server):
    """{backend: (its storage, its root)}: /tmp/planted-*/<backend>, which every account may
    enter (pytest's own directories are root's alone), served locally or by the test sshd as
    root. Both are attacked and run in the same two playbook runs."""
    top = tempfile.mkdtemp(prefix="planted-", dir="/tmp")
    os.chmod(top, 0o755)
    found = {}
    for backend in BACKENDS:
        root = os.path.join(top, backend)
        os.mkdir(root, 0o755)
        found[backend] = ({"type": "local", "root": root} if backend == "local" else sshd_server.storage(root), root)
    yield found
    shutil.rmtree(top, ignore_errors=True)


def destination(storage, path, **extra) -> dict:
    return dict({"id": "archive", "storage": storage, "path": path}, **extra)


def chown_tree(top: str, uid: int) -> None:
    for directory, _dirs, files in os.walk(top):
        for path in [directory] + [os.path.join(directory, name) for name in files]:
            os.chown(path, uid, uid)


def attacked(storage, root: str, first: str) -> None:
    """`site` published by root, then uid 1000's reports in it and uid 65534's record renamed
    over root's; `moved` published by root and handed to uid 1000, the previous publishing
    account of a migration (its record and outputs)."""
    for path in ("site", "moved"):
        assert publish(first, PIPELINE, destination(storage, path))["changed"]
    chown_tree(os.path.join(root, "moved"), VICTIM)
    site = os.path.join(root, "site")
    victim_reports(site)
    done = attack(attacker_home(os.path.dirname(root), os.path.basename(root) + "-attacker"), site, {
        "source_id": "reports.example", "created": FIRST, "destination_id": "archive", "pipeline_id": "reports"})
    assert done["rm"] == "Permission denied", "uid 65534 cannot delete uid 1000's reports itself"
    assert os.stat(os.path.join(site, RECORD)).st_uid == ATTACKER


def tasks(storage, nxt: str) -> list:
    """Root's runs on one root: on the attacked site the next version's publish, prune, and a
    release-mode publish asked to convert the plain directory; on the migrated root a publish
    that does not name the previous account, and one that does."""
    trusted = dict(storage, trusted_owners=[str(VICTIM)])
    return [
        {PUBLISH: {"source": nxt, "pipeline": PIPELINE, "destination": destination(storage, "site")}},
        {PRUNE: {"pipeline_id": "reports", "destination": destination(storage, "site", retention={"max_outputs": 1})}},
        {PUBLISH: {"source": nxt, "pipeline": PIPELINE,
                   "destination": destination(storage, "site", releases={"keep": 2, "convert": True})}},
        {PUBLISH: {"source": nxt, "pipeline": PIPELINE, "destination": destination(storage, "moved")}},
        {PUBLISH: {"source": nxt, "pipeline": PIPELINE, "destination": destination(trusted, "moved")}},
    ]


def test_a_record_planted_by_another_account_is_refused_and_a_trusted_previous_publisher_is_taken_over(
        roots, playbook, make_bundle):
    first = make_bundle(SITE, created=FIRST)
    for storage, root in roots.values():
        attacked(storage, root, first)
    nxt = make_bundle(dict(SITE, **{"index.html": b"<p>site v2</p>"}), created=NEXT)
    every = [task for storage, _root in roots.values() for task in tasks(storage, nxt)]
    before = {backend: _snapshot(root) for backend, (_storage, root) in roots.items()}
    review = playbook.run(every, check=True, diff=True)
    assert {backend: _snapshot(root) for backend, (_storage, root) in roots.items()} == before, "check mode wrote nothing"
    ran = playbook.run(every)

    for n, (backend, (_storage, root)) in enumerate(roots.items()):
        for results in (review, ran):
            publish_site, prune_site, convert, untrusted, migration = results[5 * n:5 * n + 5]
            for result in (publish_site, prune_site, convert):
                assert result.get("failed") and result["reason"] == "invalid_state", (backend, result)
                assert "Traceback" not in str(result) and "module_stderr" not in result, result
                assert os.path.join("site", RECORD) in result["msg"], result["msg"]
                assert "is owned by uid %d, not by " % ATTACKER in result["msg"], result["msg"]
                assert "storage.trusted_owners" in result["msg"], result["msg"]
                assert not result.get("deleted") and not result.get("written"), result
            assert untrusted.get("failed") and untrusted["reason"] == "invalid_state", (backend, untrusted)
            assert "is owned by uid %d, not by " % VICTIM in untrusted["msg"], untrusted["msg"]
            assert not migration.get("failed") and migration["changed"] and migration["action"] == "replace", migration
        site = os.path.join(root, "site")
        assert reports_lost(site) == [], backend
        assert {path: entry for path, entry in _snapshot(root).items() if path.split("/")[0] == "site"} == \
            {path: entry for path, entry in before[backend].items() if path.split("/")[0] == "site"}, \
            "nothing in the site was written, moved or made (%s)" % backend
        assert os.path.isdir(site) and not os.path.islink(site)
        home = os.path.join(root, ".distributor-releases", "site")
        assert not os.path.exists(home) or os.listdir(home) == [], "no release, no index: only the lock's directory"

        assert ran[5 * n + 4]["written"] == ["index.html"], ran[5 * n + 4]
        with open(os.path.join(root, "moved", "index.html"), "rb") as handle:
            assert handle.read() == b"<p>site v2</p>"
        assert os.stat(os.path.join(root, "moved", RECORD)).st_uid == os.geteuid(), "the record is the publishing account's now"

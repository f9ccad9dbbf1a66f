# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP against an account that can write the destination: a planted tree of any depth, the
warning about directories others can write (through ansible-playbook), and a race in which an
unprivileged swapper exchanges a directory of the bundle path with a link to a root-only directory
outside the root while real publishes, replaces and `--check --diff` runs go on.

SFTP is a path-based protocol, so what the race may do is bounded by docs/operations.md ("SFTP:
what a path-based protocol leaves open"): the outside directory's own mode and owner never change,
no file that was there has its mode or owner changed, and no diff shows a file there (each differs
from the outputs in mode and owner); the rest (a directory made there, a file moved between the two
lookups of one rename) is counted and printed, not forbidden.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time

import pytest

from deep_tree import plant_tree, remove_tree
from hostile import assert_refused
from race import Swapper, swapper_ids

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import DEPTH_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.publish import publish

RACE_SECONDS = 15.0
SECRET = b"VICTIM-SECRET"


def test_a_deep_tree_planted_in_the_bundle_path_is_storage_error_without_a_traceback(playbook, make_bundle, sshd_server,
                                                                                     tmp_path):
    root = tmp_path / "sftp-root"
    (root / "site" / "planted").mkdir(parents=True)
    plant_tree(root / "site" / "planted", 1500)
    destination = {"id": "archive", "storage": sshd_server.storage(str(root)), "path": "site"}
    try:
        result = playbook.publish(source=make_bundle({"index.html": b"v1"}), pipeline={"id": "reports"},
                                  destination=destination)
    finally:
        remove_tree(root / "site" / "planted")
    assert_refused(result, "storage_error", "/site/planted/d/", "more than %d directories deep" % DEPTH_LIMIT)
    assert not (root / "site" / "index.html").exists()


def test_a_shared_directory_is_a_warning_of_the_run_and_a_refusal_with_require_private_directories(
        playbook, make_bundle, sshd_server, tmp_path):
    root = tmp_path / "sftp-root"
    (root / "site").mkdir(parents=True)
    os.chmod(root / "site", 0o777)
    destination = {"id": "archive", "storage": sshd_server.storage(str(root)), "path": "site"}
    bundle = make_bundle({"index.html": b"v1"})
    result = playbook.publish(source=bundle, pipeline={"id": "reports"}, destination=destination)
    assert result["changed"], result
    assert any("/site is writable by every account (mode 0777)" in warning and "ChrootDirectory" in warning
               for warning in result["warnings"]), result
    destination["storage"]["require_private_directories"] = True
    for check in (True, False):
        refused = playbook.publish(check=check, source=make_bundle({"index.html": b"v2"}, created="2026-06-05T11:55:00Z"),
                                   pipeline={"id": "reports"}, destination=destination)
        assert_refused(refused, "storage_error", "/site is writable by every account", "require_private_directories")
    assert (root / "site" / "index.html").read_bytes() == b"v1"


# -- the race -------------------------------------------------------------------------------------


def entries(top: str) -> dict:
    """{relative name: (kind, mode, uid, gid, bytes or None)} of everything below `top`."""
    found = {}
    for directory, dirs, files in os.walk(top):
        for name in dirs + files:
            full = os.path.join(directory, name)
            info = os.lstat(full)
            data = None
            if stat.S_ISREG(info.st_mode):
                with open(full, "rb") as handle:
                    data = handle.read()
            found[os.path.relpath(full, top)] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid,
                                                 info.st_gid, data)
    return found


@pytest.fixture
def race_place(sshd_server, make_bundle):
    """A root the swapper's account can reach, whose `site` it owns (as a web account owns a web
    root), and a root-only directory `victim` beside the root holding files named like outputs."""
    top = tempfile.mkdtemp(prefix="distributor-race-")
    os.chmod(top, 0o755)
    uid, gid = swapper_ids()
    site = os.path.join(top, "root", "site")
    os.makedirs(site)
    os.chown(site, uid, gid)
    victim = os.path.join(top, "victim")
    os.mkdir(victim, 0o700)
    for name in ("keep.html", "page-0.html", "page-1.html"):
        with open(os.path.join(victim, name), "wb") as handle:
            handle.write(SECRET + b" " + name.encode())
    os.symlink(victim, os.path.join(site, "docs.link"))
    storage = sshd_server.storage(os.path.join(top, "root"), directory_mode="0777", file_mode="0666", owner=uid, group=gid)
    yield top, site, victim, {"id": "archive", "storage": storage, "path": "site/current"}
    shutil.rmtree(top)


def test_sftp_publishes_raced_by_a_swapped_directory_never_change_the_outside_directory(race_place, make_bundle):
    """Publishes (docs made anew each time), replaces (docs emptied and removed) and check-mode
    content diffs, round after round, while `site/current/docs` is exchanged with a link to
    `victim` as fast as the swapper can."""
    top, site, victim, destination = race_place
    with_docs = {"index.html": b"index", "docs/keep.html": b"keep", **{"docs/page-%d.html" % i: b"page %d" % i
                                                                        for i in range(3)}}
    bundles = [make_bundle(with_docs, created="2026-06-04T11:55:00Z"),
               make_bundle({"index.html": b"index without docs"}, created="2026-06-05T11:55:00Z")]
    reviewed = make_bundle(dict(with_docs, **{"docs/page-0.html": b"page 0, changed"}), created="2026-06-06T11:55:00Z")
    victim_itself = os.lstat(victim)
    before = entries(victim)
    assert publish(bundles[0], {"id": "reports"}, destination)["changed"]
    runs, failures, reads = 0, {}, 0
    swapper = Swapper(os.path.join(site, "current", "docs"), os.path.join(site, "docs.link"), RACE_SECONDS + 10)
    with swapper:
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            for source, check in ((reviewed, True), (bundles[1], False), (bundles[0], False)):
                runs += 1
                try:
                    result = publish(source, {"id": "reports"}, destination, check_mode=check, diff_contents=check,
                                     lock_timeout=5)
                except DistributorError as error:
                    failures[error.reason] = failures.get(error.reason, 0) + 1
                    continue
                reads += SECRET.decode() in repr(result.get("diff"))
    after = entries(victim)
    now = os.lstat(victim)
    created = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    replaced = sorted(name for name in set(before) & set(after) if before[name][4] != after[name][4])
    print("\nSFTP race: %d runs in %.0fs, %d swaps; failures by reason %s; outside: %d created %s, %d removed %s, "
          "%d replaced %s, %d diffs showing outside content"
          % (runs, RACE_SECONDS, swapper.swaps, failures, len(created), created[:8], len(removed), removed, len(replaced),
             replaced, reads))
    assert swapper.swaps > 1000 and runs > 10
    assert reads == 0, "a diff showed a file whose mode and owner differ from the output's"
    assert (stat.S_IMODE(now.st_mode), now.st_uid, now.st_gid) == (
        stat.S_IMODE(victim_itself.st_mode), victim_itself.st_uid, victim_itself.st_gid)
    for name in set(before) & set(after):
        if name not in replaced:
            assert after[name][:4] == before[name][:4], name
    assert set(failures) <= {"storage_error", "unmanaged", "invalid_state", "locked"}, failures

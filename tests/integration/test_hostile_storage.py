# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A hostile neighbour who can write into the destination plants files where distributor reads
and writes, through ansible-playbook on local and SFTP: symbolic links at output names, output
directories and staging names, before and during a publish; FIFOs at bundle files and reserved
names; a directory distributor cannot list; names that are not UTF-8 (test_hostile_state.py).
Each run fails with a reason and no traceback (or succeeds), never hangs, changes nothing
outside the bundle path, and the next plain run converges once the obstacle is gone."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

from conftest import Backend, Playbook
from services import DROP_ROOT_PERMISSIONS
from snapshots import snapshot
from test_hostile_state import assert_refused

NEIGHBOUR = {"outside.txt": b"neighbour's file", "other/keep.html": b"another pipeline's page"}
VICTIM = {"index.html": b"the victim's index", "docs/page-0.html": b"the victim's page", "a.html": b"victim's a"}


class Place:
    """A root holding a neighbour's files beside the bundle path `site`, and a victim directory
    outside the root that planted links point at."""

    def __init__(self, backend: Backend, victim):
        self.backend = backend
        self.site = os.path.join(str(backend.local_root), "site")
        self.victim = str(victim)
        for path, data in NEIGHBOUR.items():
            backend.put(path, data)
        for path, data in VICTIM.items():
            os.makedirs(os.path.dirname(os.path.join(self.victim, path)), exist_ok=True)
            with open(os.path.join(self.victim, path), "wb") as handle:
                handle.write(data)
        self.before = self.untouchable()

    def untouchable(self) -> tuple:
        return snapshot(self.backend.local_root, skip=("site",)), snapshot(self.victim)

    def destination(self) -> dict:
        return {"id": "archive", "storage": self.backend.storage, "path": "site"}

    def assert_nothing_outside_changed(self) -> None:
        assert self.untouchable() == self.before


def make_place(request, tmp_path, sshd_fixture="sshd_server") -> Place:
    if request.param == "local":
        backend = Backend("local", {"type": "local", "root": str(tmp_path / "root")}, local_root=tmp_path / "root")
    else:
        server = request.getfixturevalue(sshd_fixture)
        backend = Backend("sftp", server.storage(str(tmp_path / "sftp-root")), local_root=tmp_path / "sftp-root")
    return Place(backend, tmp_path / "victim")


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return make_place(request, tmp_path)


@pytest.fixture(params=["local", "sftp"])
def unprivileged_place(request, tmp_path):
    return make_place(request, tmp_path, "unprivileged_sshd")


class UnprivilegedPlaybook(Playbook):
    """ansible-playbook as an account that permissions apply to (root without its override)."""

    @staticmethod
    def command(playbook, check=False, diff=False, extra=()):
        prefix = list(DROP_ROOT_PERMISSIONS) if os.geteuid() == 0 else []
        return prefix + Playbook.command(playbook, check, diff, extra)


PAGES = 300


def pages(version: bytes, count: int = 3) -> dict:
    return dict({"index.html": b"<p>" + version + b"</p>"},
                **{"docs/page-%d.html" % i: version * 2000 for i in range(count)})


def publish(playbook, place, bundle, **extra) -> dict:
    return playbook.publish(source=bundle, pipeline={"id": "reports"}, destination=place.destination(), **extra)


def converges(playbook, place, bundle) -> None:
    """The next plain run publishes the bundle, and the one after has nothing to do."""
    result = publish(playbook, place, bundle)
    assert not result.get("failed"), result
    assert publish(playbook, place, bundle)["action"] == "skip"
    place.assert_nothing_outside_changed()


# -- symbolic links -----------------------------------------------------------------------


@pytest.mark.parametrize("planted", ["index.html", "docs"])
def test_a_link_planted_at_an_output_or_its_directory_is_refused(place, playbook, make_bundle, tmp_path, planted):
    """A link at a managed output is no file distributor wrote, so the publish that would write
    over it refuses first (authorship.py); a link where an output directory was is content no
    state records (the bundle path's listing shows it). Both are `unmanaged`."""
    first = make_bundle(pages(b"v1"))
    assert publish(playbook, place, first)["changed"]
    target = os.path.join(place.site, planted)
    away = str(tmp_path / "away")
    os.rename(target, away)
    os.symlink(os.path.join(place.victim, planted), target)
    place.before = place.untouchable()
    result = publish(playbook, place, make_bundle(pages(b"v2"), created="2026-06-05T11:55:00Z"))
    assert_refused(result, "unmanaged")
    assert planted in result["msg"]
    place.assert_nothing_outside_changed()
    os.unlink(target)
    os.rename(away, target)
    converges(playbook, place, make_bundle(pages(b"v2"), created="2026-06-05T11:55:00Z"))


def publish_while(playbook, place, bundle, interfere) -> dict:
    """Publish while a neighbour interferes: once the journal is written (it names the attempt's
    token), interfere(token, stop) runs in a thread; `stop` is set when the publish is over. A
    run someone interferes with may finish first or fail, but never without a reason."""
    stop = threading.Event()

    def watch():
        journal = os.path.join(place.site, ".distributor.journal.json")
        while not stop.is_set():
            try:
                with open(journal, "rb") as handle:
                    token = handle.read().split(b'"token": "')[1].split(b'"')[0].decode()
            except (OSError, IndexError):
                time.sleep(0.001)
                continue
            interfere(token, stop)
            return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        result = publish(playbook, place, bundle)
    finally:
        stop.set()
        thread.join()
    if result.get("failed"):
        assert_refused(result, result.get("reason"))
        assert result.get("reason"), result
    return result


def test_links_planted_at_staging_names_during_a_publish_are_not_followed(place, playbook, make_bundle):
    """The neighbour reads the attempt's token from the journal and races to plant links where
    it will stage: the staging directory itself (mkdir refuses it) and, if it wins the race into
    a directory it can write, nothing inside ours (only distributor's account can write there)."""
    assert publish(playbook, place, make_bundle(pages(b"v1")))["changed"]
    bundle = make_bundle(pages(b"v2", PAGES), created="2026-06-05T11:55:00Z")

    def plant(token, _stop):
        for directory in (place.site, os.path.join(place.site, "docs")):
            staging = os.path.join(directory, ".distributor.tmp." + token)
            try:
                os.symlink(place.victim, staging)
            except OSError:
                pass

    publish_while(playbook, place, bundle, plant)
    place.assert_nothing_outside_changed()
    for directory, _dirs, names in os.walk(place.site):
        for name in names + _dirs:
            if name.startswith(".distributor.tmp.") and os.path.islink(os.path.join(directory, name)):
                os.unlink(os.path.join(directory, name))
    converges(playbook, place, bundle)


def test_a_directory_swapped_for_a_link_while_a_large_publish_runs_changes_nothing_outside(place, playbook, make_bundle):
    assert publish(playbook, place, make_bundle(pages(b"v1")))["changed"]
    bundle = make_bundle(pages(b"v2", PAGES), created="2026-06-05T11:55:00Z")
    docs = os.path.join(place.site, "docs")

    def swap(_token, stop):
        """Once a third of the pages are in place: docs is then a directory seen and checked.
        (Landing between two files, the swap led the old SFTP backend's next write outside.)"""
        while not os.path.exists(os.path.join(docs, "page-%d.html" % (PAGES // 3))):
            if stop.is_set():
                return
        os.rename(docs, docs + ".moved")
        os.symlink(os.path.join(place.victim, "docs"), docs)

    publish_while(playbook, place, bundle, swap)
    assert os.path.islink(docs), "the swap did not happen during the publish"
    place.assert_nothing_outside_changed()
    os.unlink(docs)
    os.rename(docs + ".moved", docs)
    converges(playbook, place, bundle)


# -- FIFOs: refused, never opened for reading ---------------------------------------------


def test_a_fifo_at_a_bundle_file_is_invalid_manifest_without_hanging(place, playbook, make_bundle):
    bundle = make_bundle(pages(b"v1"))
    page = os.path.join(bundle, "docs", "page-1.html")
    os.unlink(page)
    os.mkfifo(page)
    result = publish(playbook, place, bundle)
    assert_refused(result, "invalid_manifest")
    assert "docs/page-1.html" in result["msg"] and "FIFO" in result["msg"]
    place.assert_nothing_outside_changed()
    os.unlink(page)
    with open(page, "wb") as handle:
        handle.write(b"v1" * 2000)
    converges(playbook, place, bundle)


@pytest.mark.parametrize("name", [".distributor.json", ".distributor.journal.json", ".distributor.lock"])
def test_a_fifo_at_a_reserved_name_is_storage_error_without_hanging(place, playbook, make_bundle, name):
    bundle = make_bundle(pages(b"v1"))
    assert publish(playbook, place, bundle)["changed"]
    second = make_bundle(pages(b"v2"), created="2026-06-05T11:55:00Z")
    reserved = os.path.join(place.site, name)
    kept = place.backend.files("site").get(name)
    if kept is not None:
        os.unlink(reserved)
    os.mkfifo(reserved)
    result = publish(playbook, place, second)
    assert_refused(result, "storage_error")
    assert name in result["msg"] and "FIFO" in result["msg"]
    place.assert_nothing_outside_changed()
    os.unlink(reserved)
    if kept is not None:
        place.backend.put("site/" + name, kept)
    converges(playbook, place, second)


def test_every_module_ends_in_a_reason_naming_a_fifo_at_the_lock_never_in_a_hang(place, playbook, make_bundle):
    """Each task has a timeout, so one that hangs fails without a reason rather than holding the
    run. Check mode takes no lock; everything else that locks or reads the lock stops on it.
    (Every name and kind, in every operation: tests/unit/test_hostile_files.py.)"""
    bundle = make_bundle(pages(b"v1"))
    assert publish(playbook, place, bundle)["changed"]
    os.mkfifo(os.path.join(place.site, ".distributor.lock"))
    destination = dict(place.destination(), retention={"max_outputs": 3})
    owner = {"pipeline_id": "reports", "destination": destination}
    results = playbook.run([dict(task, timeout=60) for task in (
        {"distributor.core.distributor_publish": dict(source=make_bundle(pages(b"v2"), created="2026-06-05T11:55:00Z"),
                                                      pipeline={"id": "reports"}, destination=destination),
         "check_mode": True, "diff": True},
        {"distributor.core.distributor_state_info": dict(owner, verify="sha256")},
        {"distributor.core.distributor_reconcile_state": owner},
        {"distributor.core.distributor_publish": dict(source=bundle, pipeline={"id": "reports"},
                                                      destination=destination, verify="sha256")},
        {"distributor.core.distributor_prune": owner},
    )])
    assert not results[0].get("failed") and results[0]["changed"], results[0]
    for result in results[1:]:
        assert_refused(result, "storage_error", "/site/.distributor.lock is a FIFO (named pipe), not a regular file")
    place.assert_nothing_outside_changed()


# -- a directory that cannot be listed ----------------------------------------------------


def test_an_unlistable_directory_is_storage_error_and_its_files_are_not_overwritten(
        unprivileged_place, make_bundle, tmp_path):
    place = unprivileged_place
    playbook = UnprivilegedPlaybook(str(tmp_path))
    assert publish(playbook, place, make_bundle({"index.html": b"v1"}))["changed"]
    hidden = os.path.join(place.site, "hidden")
    os.mkdir(hidden)
    with open(os.path.join(hidden, "page.html"), "wb") as handle:
        handle.write(b"a neighbour's page")
    os.chmod(hidden, 0o300)  # writable, not listable: a write there would land unseen
    second = make_bundle({"index.html": b"v2", "hidden/page.html": b"ours"}, created="2026-06-05T11:55:00Z")
    try:
        result = publish(playbook, place, second)
    finally:
        os.chmod(hidden, 0o755)
    assert_refused(result, "storage_error")
    assert "cannot list" in result["msg"] and "hidden" in result["msg"]
    with open(os.path.join(hidden, "page.html"), "rb") as handle:
        assert handle.read() == b"a neighbour's page"
    place.assert_nothing_outside_changed()
    seen = publish(playbook, place, second)
    assert_refused(seen, "unmanaged")
    assert "hidden/page.html" in seen["msg"]
    shutil.rmtree(hidden)
    converges(playbook, place, second)

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 38 item 3: a conversion adopts only what an account distributor trusts owns, and only
the very directory it looked at; a switch goes only to a release directory distributor built.

On the real local filesystem and the real sshd: uid 1000 owns `reports/` in the plain bundle
path, uid 65534 can write the directory the bundle path is in. The swap between the look and the
rename, which a racing account wins now and then (tests/integration/test_race_release.py), is
made here every time: a hook swaps the bundle path right before the backend's rename.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import INDEX_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.local.links import LocalLinks
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.links import SftpLinks
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.switch import switch_release

import builders
from builders import LATER, NOW, write_bundle
from test_release_publish import HOME, PIPELINE, bundle, destination, look, opener, publish_files, statuses
from memory_storage import MemoryStorage

VICTIM_UID = 1000
ATTACKER_UID = 65534
LATER_BUNDLE = "2026-06-05T11:55:00Z"
SITE = {"index.html": b"<p>site</p>", "about.html": b"<p>about</p>"}
REPORTS = {"reports/q%03d.pdf" % i: b"%%PDF quarter %d" % i for i in range(5)}


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return builders.Place(request.param, tmp_path, request)


def converting(place, **releases) -> dict:
    return dict(place.destination, releases=dict({"keep": 2, "convert": True}, **releases))


def tree(top) -> dict:
    """Every entry below `top`: (owner, content or None)."""
    found = {}
    for directory, _dirs, files in os.walk(top):
        for name in [""] + files:
            path = os.path.join(directory, name) if name else directory
            found[os.path.relpath(path, top)] = (os.lstat(path).st_uid, None if os.path.isdir(path) else open(path, "rb").read())
    return found


def releases_recorded(place) -> list:
    index = place.root / HOME / INDEX_NAME
    return json.loads(index.read_bytes())["releases"] if index.exists() else []


def generations(place) -> list:
    home = place.root / HOME
    return sorted(name for name in os.listdir(home) if not name.startswith(".")) if home.exists() else []


def test_a_plain_directory_holding_a_directory_of_another_account_is_not_converted_and_nothing_moves(place, tmp_path):
    """Root published the site and the reports in place, and handed `reports/` to uid 1000, who
    replaced the files; uid 1000 also keeps an empty `drafts/` there. The record is root's and
    names every report, the files are where it says: only their owner tells they are not
    distributor's to adopt (and, once a release, to delete)."""
    publish(write_bundle(tmp_path / "plain", dict(SITE, **REPORTS)), PIPELINE, place.destination, now=NOW)
    site = place.root / "site"
    for path in [site / "reports", site / "drafts"] + [site / path for path in REPORTS]:
        path.mkdir() if not path.exists() else None
        os.chown(path, VICTIM_UID, VICTIM_UID)
    before = tree(site)
    changed = write_bundle(tmp_path / "next", dict(SITE, **REPORTS, **{"index.html": b"<p>site v2</p>"}), created=LATER_BUNDLE)
    for check_mode in (True, False):
        with pytest.raises(DistributorError) as refused:
            publish(changed, PIPELINE, converting(place), now=LATER, check_mode=check_mode)
        assert refused.value.reason == "unmanaged", refused.value.message
        assert "7 entries distributor cannot vouch for: drafts, reports, reports/q000.pdf" in refused.value.message
        assert "(drafts is owned by uid %d, not by " % VICTIM_UID in refused.value.message
        assert "nothing was moved" in refused.value.message and "storage.trusted_owners" in refused.value.message
    assert not os.path.islink(site) and tree(site) == before
    assert releases_recorded(place) == [] and generations(place) == []


def test_a_plain_directory_of_another_account_is_not_converted(place, tmp_path):
    publish(write_bundle(tmp_path / "plain", SITE), PIPELINE, place.destination, now=NOW)
    os.chown(place.root / "site", ATTACKER_UID, ATTACKER_UID)
    with pytest.raises(DistributorError) as refused:
        publish(write_bundle(tmp_path / "next", dict(SITE, **{"index.html": b"v2"}), created=LATER_BUNDLE), PIPELINE,
                converting(place), now=LATER)
    assert refused.value.reason == "unmanaged"
    assert "(the directory itself is owned by uid %d, not by " % ATTACKER_UID in refused.value.message
    assert os.path.isdir(place.root / "site") and not os.path.islink(place.root / "site") and generations(place) == []


def swapped_in(kind: str, site, outside):
    """What the racing account puts at the bundle path: a link to a directory outside, or a
    directory holding the site's record and other bytes, of its own or of the publishing account
    (when that account is trusted, storage.owner say, only the directory's identity tells:
    locally its inode, over SFTP its attributes, see docs/releases.md)."""
    if kind == "a link":
        os.symlink(outside, site)
        return
    os.mkdir(site)
    (site / "index.html").write_bytes(b"<p>not the site</p>")
    (site / "about.html").write_bytes(SITE["about.html"])
    shutil.copyfile(outside.parent / "real" / STATE_NAME, site / STATE_NAME)
    if kind == "a directory of uid 65534":
        for path in (site, site / "index.html", site / "about.html", site / STATE_NAME):
            os.chown(path, ATTACKER_UID, ATTACKER_UID)
    else:  # SFTP tells directories by their attributes: this one was last changed in another second
        os.utime(site, (0, os.lstat(site).st_mtime - 3600))


@pytest.mark.parametrize("kind", ["a link", "a directory of uid 65534", "a directory of the publishing account"])
def test_what_is_swapped_in_between_the_look_and_the_rename_is_put_back_and_no_release_records_it(place, tmp_path, monkeypatch,
                                                                                                  kind):
    publish(write_bundle(tmp_path / "plain", SITE), PIPELINE, place.destination, now=NOW)
    site, real, outside = place.root / "site", place.root / "real", place.root / "outside"
    outside.mkdir()
    (outside / "index.html").write_bytes(b"root only")
    os.chmod(outside, 0o700)
    renames = []

    def rename(original):
        def racing(self, source, target):
            renames.append((source, target))
            if len(renames) == 1:
                os.rename(site, real)
                swapped_in(kind, site, outside)
            return original(self, source, target)
        return racing
    for backend in (LocalLinks, SftpLinks):
        monkeypatch.setattr(backend, "rename", rename(backend.rename))
    with pytest.raises(DistributorError) as refused:
        publish(write_bundle(tmp_path / "next", dict(SITE, **{"index.html": b"v2"}), created=LATER_BUNDLE), PIPELINE,
                converting(place), now=LATER)
    assert refused.value.reason == "storage_error", refused.value.message
    assert "is not the directory it looked at before" in refused.value.message
    assert "it was put back at " in refused.value.message and "no release records it" in refused.value.message
    assert len(renames) == 2 and renames[1] == (renames[0][1], renames[0][0]), "put back where it came from"
    if kind == "a link":
        assert os.readlink(site) == str(outside)
    else:
        assert (site / "index.html").read_bytes() == b"<p>not the site</p>"
    assert releases_recorded(place) == [] and generations(place) == []
    assert (real / "index.html").read_bytes() == SITE["index.html"], "the plain directory is where the swap left it"
    assert (outside / "index.html").read_bytes() == b"root only"


def test_a_rollback_or_activation_of_a_release_directory_of_another_account_is_refused(place, tmp_path):
    """The index names the release; the directory at its name is uid 65534's: no switch, no record."""
    (place.root / "site").rmdir()
    released = dict(place.destination, releases={"keep": 3})
    for n in (1, 2):
        publish(write_bundle(tmp_path / ("v%d" % n), dict(SITE, **{"index.html": b"v%d" % n}), created="2026-06-04T0%d:00:00Z" % n),
                PIPELINE, released, now=NOW.replace(hour=n))
    staged = publish(write_bundle(tmp_path / "v3", dict(SITE, **{"index.html": b"v3"}), created="2026-06-04T03:00:00Z"), PIPELINE,
                     dict(released, releases={"keep": 3, "activate": False}), now=NOW.replace(hour=3))["release"]["id"]
    previous = [r["id"] for r in releases_recorded(place) if r["status"] == "superseded"][-1]
    link, index = os.readlink(place.root / "site"), (place.root / HOME / INDEX_NAME).read_bytes()
    for release, chosen in ((previous, "previous"), (staged, staged)):
        os.chown(place.root / HOME / release, ATTACKER_UID, ATTACKER_UID)
        for check_mode in (True, False):
            with pytest.raises(DistributorError) as refused:
                switch_release(PIPELINE["id"], released, chosen, check_mode=check_mode)
            assert refused.value.reason == "invalid_state", refused.value.message
            assert "%s is owned by uid %d" % (release, ATTACKER_UID) in refused.value.message
            assert "not a release distributor built" in refused.value.message
        assert os.readlink(place.root / "site") == link and (place.root / HOME / INDEX_NAME).read_bytes() == index
    os.chown(place.root / HOME / previous, os.geteuid(), os.getegid())
    assert switch_release(PIPELINE["id"], released, "previous")["changed"] is True


# -- on the memory double: the steps a test cannot time on disk ------------------------------------------


def test_what_the_rename_moved_stays_where_it_is_when_its_name_was_taken_again_and_no_release_records_it(tmp_path):
    """The racing account swaps its directory in before the rename, and takes the bundle path's
    name again before distributor can put its directory back: that directory stays in the release
    home, named in the error, and the index records no release."""
    store = {}
    plain = {"id": "web", "storage": builders.MEMORY_STORAGE, "path": "site"}
    publish(bundle(tmp_path, "plain", {"index.html": b"one"}), PIPELINE, plain, now=NOW, opener=opener(store))

    def racing(op, path):
        if op == "rename" and path == "site":
            for key in [k for k in store if k.startswith("site/")]:
                store["real/" + key[len("site/"):]] = store.pop(key)
            store["site/index.html"] = b"theirs"
        if op == "directory" and path:  # the look at what the rename moved
            store["site/again.html"] = b"theirs again"
    with pytest.raises(DistributorError) as refused:
        publish(bundle(tmp_path, "two", {"index.html": b"two"}, LATER_BUNDLE), PIPELINE, destination(convert=True), now=LATER,
                opener=lambda cfg, base, token: MemoryStorage(store, base, token, racing))
    assert refused.value.reason == "storage_error" and "it was left at memory:/%s/" % HOME in refused.value.message
    assert statuses(store) == {}
    left = [k for k in store if k.startswith(HOME + "/2")]
    assert len(left) == 1 and left[0].endswith("/index.html") and store[left[0]] == b"theirs"
    assert store["site/again.html"] == b"theirs again" and store["real/index.html"] == b"one"


def test_a_generation_changed_between_its_build_and_the_switch_is_not_switched_to(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"})
    first = look(store).entry("site")[1]
    directories = []

    def fault(op, path):
        if op == "directory":
            directories.append(path)
            if len(directories) == 2:
                key = next(k for k in store if k.startswith("%s/%s/" % (HOME, path)) and k.endswith("index.html"))
                store[key] = bytes(b"swapped")
    with pytest.raises(DistributorError) as refused:
        publish_files(tmp_path, store, "two", {"index.html": b"two"}, now=LATER, cut=fault)
    assert refused.value.reason == "storage_error" and "is not the directory this run built there" in refused.value.message
    assert look(store).entry("site")[1] == first and list(statuses(store).values()).count("active") == 1


def test_a_release_linked_by_a_switch_whose_record_died_is_not_recorded_active_when_another_account_owns_it(tmp_path):
    store, foreign = {}, set()
    publish_files(tmp_path, store, "one", {"index.html": b"one"}, now=NOW.replace(hour=1))
    seen = []

    def after_the_switch(op, path):
        seen.append(op)
        if op == "write" and "switch" in seen:
            raise Exception("killed before the switch was recorded")
    with pytest.raises(Exception):
        publish_files(tmp_path, store, "two", {"index.html": b"two"}, now=NOW.replace(hour=2), cut=after_the_switch)
    linked = look(store).entry("site")[1]
    foreign.add(linked)
    with pytest.raises(DistributorError) as refused:
        publish(bundle(tmp_path, "three", {"index.html": b"three"}), PIPELINE, destination(), now=NOW.replace(hour=3),
                opener=lambda cfg, base, token: MemoryStorage(store, base, token, foreign=foreign))
    assert refused.value.reason == "invalid_state" and "is owned by another account" in refused.value.message
    assert statuses(store)[linked.rpartition("/")[2]] == "staged"

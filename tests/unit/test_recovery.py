# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recovery deletes only what the dead attempt provably wrote: a journaled path whose file is the
one the journal describes (size, digest) and belongs to the account distributor writes as.
Whatever a journal names beyond that stays, named in a warning; recovery's deletes count toward
transfer.max_deletes and are listed in `recovered`, in check mode too. Empty staging directories
of dead attempts go, and are listed in `staging_removed`.

The memory double plays other accounts with its `foreign` keys; the local and SFTP tests plant
files of real other accounts (the tests run as root)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.journal import parse_journal
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

import builders
from builders import LATER, MEMORY_STORAGE, NOW, sha, write_bundle
from memory_storage import MemoryStorage
from planted import SECRET, fingerprint, plant_secret

PIPELINE = {"id": "reports"}
JOURNAL = "site/" + JOURNAL_NAME


class Killed(BaseException):
    """SIGKILL: from the cut on, every storage call fails and no clean-up runs."""


def memory(store, foreign=None, cut=None):
    return lambda cfg, base, token: MemoryStorage(store, base, token, cut, foreign=foreign)


def dest(**extra):
    return dict({"id": "archive", "storage": MEMORY_STORAGE, "path": "site"}, **extra)


def entry(path: str, data: bytes) -> dict:
    return {"path": path, "sha256": sha(data), "size": len(data)}


def plant_journal(store, *writes, token="dead"):
    store[JOURNAL] = json.dumps({"token": token, "writes": list(writes)}).encode()


@pytest.fixture
def published(tmp_path):
    store = {}
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>"})
    publish(bundle, PIPELINE, dest(), now=NOW, opener=memory(store))
    return store, bundle


# -- what recovery deletes, and what it leaves --------------------------------------------


def test_recovery_deletes_a_leftover_that_is_what_the_journal_says_and_lists_it(published):
    store, bundle = published
    store["site/stray.html"] = b"left by a killed run"
    plant_journal(store, entry("stray.html", b"left by a killed run"))
    checked = publish(bundle, PIPELINE, dest(), now=LATER, check_mode=True, opener=memory(store))
    assert checked["recovered"] == ["stray.html"] and "site/stray.html" in store
    real = publish(bundle, PIPELINE, dest(), now=LATER, opener=memory(store))
    assert (real["action"], real["recovered"], real["deleted"]) == ("skip", ["stray.html"], [])
    assert "site/stray.html" not in store and JOURNAL not in store


def test_recovery_leaves_a_file_whose_digest_differs_from_the_journal(published):
    store, bundle = published
    store["site/page.html"] = b"someone else's page"
    plant_journal(store, entry("page.html", b"what the attempt wrote"))
    result = publish(bundle, PIPELINE, dest(), now=LATER, opener=memory(store))
    assert result["recovered"] == [] and store["site/page.html"] == b"someone else's page"
    assert ("page.html (is 19 bytes, not the 22 the interrupted publish wrote)" in result["warnings"][1])
    assert JOURNAL not in store


def test_recovery_leaves_a_file_of_the_same_size_and_another_digest(published):
    store, bundle = published
    store["site/page.html"] = b"theirs"
    plant_journal(store, entry("page.html", b"ours!!"))
    result = publish(bundle, PIPELINE, dest(), now=LATER, opener=memory(store))
    assert result["recovered"] == [] and store["site/page.html"] == b"theirs"
    assert "page.html (holds other bytes than the interrupted publish wrote)" in result["warnings"][1]


def test_recovery_leaves_a_file_of_another_account_even_with_the_journaled_digest(published):
    store, bundle = published
    store["site/theirs.html"] = b"their page"
    foreign = {"site/theirs.html"}
    plant_journal(store, entry("theirs.html", b"their page"))
    for check_mode in (True, False):
        result = publish(bundle, PIPELINE, dest(), now=LATER, check_mode=check_mode, opener=memory(store, foreign))
        assert result["recovered"] == [] and store["site/theirs.html"] == b"their page"
        assert "theirs.html (is owned by another account)" in result["warnings"][1]


def test_a_journal_without_digests_deletes_nothing_names_its_files_and_is_cleared(published):
    """The first format named paths only: nothing vouches for what is there now."""
    store, bundle = published
    store["site/stray.html"] = b"left by a killed run of an earlier version"
    store[JOURNAL] = json.dumps({"token": "old", "writes": ["stray.html", "index.html"]}).encode()
    checked = publish(bundle, PIPELINE, dest(), now=LATER, check_mode=True, opener=memory(store))
    real = publish(bundle, PIPELINE, dest(), now=LATER, opener=memory(store))
    for result in (checked, real):
        assert result["recovered"] == []
        assert result["warnings"][1] == (
            "1 file(s) that the journal of the interrupted publish (attempt old) names are left alone, as distributor "
            "cannot vouch it wrote them: stray.html (is named by a journal of an earlier distributor, which recorded no "
            "digest). Remove them by hand if that publish left them")
    assert store["site/stray.html"].startswith(b"left by") and JOURNAL not in store


def test_the_journal_a_publish_writes_records_each_write_with_its_digest_and_size(tmp_path):
    store = {}
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>", "a.png": b"png"})
    journals = []

    def watch(op, path):
        if op == "write" and path != JOURNAL_NAME and JOURNAL in store and not journals:
            journals.append(parse_journal(store[JOURNAL], "journal"))
    publish(bundle, PIPELINE, dest(), now=NOW, opener=memory(store, cut=watch))
    assert sorted((e.path, e.sha256, e.size) for e in journals[0].writes) == [
        ("a.png", sha(b"png"), 3), ("index.html", sha(b"<p>hi</p>"), 9)]


def test_a_failed_forced_publish_cleans_up_only_what_it_wrote(tmp_path):
    """The attempt's own clean-up judges its planned paths like the next run would: an unmanaged
    file force had already replaced holds the attempt's bytes and goes; one it had not reached
    yet is someone else's content still, and stays."""
    store = {"site/a.png": b"their a", "site/b.png": b"their b"}
    bundle = write_bundle(tmp_path / "b", {"a.png": b"our a", "b.png": b"our b"})

    failed = []

    def fail_b_once(op, path):
        if (op, path) == ("write", "b.png") and not failed:
            failed.append(path)
            raise DistributorError("storage_error", "lost connection")
    with pytest.raises(DistributorError):
        publish(bundle, PIPELINE, dest(), force=True, now=NOW, opener=memory(store, cut=fail_b_once))
    assert store == {"site/b.png": b"their b"}


# -- the attack, on the memory double -----------------------------------------------


def test_a_planted_journal_naming_300_files_of_another_account_deletes_none(published):
    store, bundle = published
    theirs = {"data/f%03d.txt" % i: b"row %d" % i for i in range(300)}
    store.update({"site/" + path: data for path, data in theirs.items()})
    foreign = {"site/" + path for path in theirs}
    plant_journal(store, *(entry(path, data) for path, data in theirs.items()))
    for check_mode in (True, False):
        result = publish(bundle, PIPELINE, dest(transfer={"max_deletes": 5}), now=LATER, check_mode=check_mode,
                         opener=memory(store, foreign))
        assert (result["action"], result["deleted"], result["recovered"], result["changed"]) == ("skip", [], [], False)
        assert result["warnings"][1].startswith("300 file(s) that the journal of the interrupted publish (attempt dead) "
                                                "names are left alone")
        assert "data/f000.txt (is owned by another account)" in result["warnings"][1]
    assert all(store["site/" + path] == data for path, data in theirs.items())


# -- the delete guard counts recovery ---------------------------------------------------------


@pytest.mark.parametrize("check_mode", [False, True])
def test_recovery_deletes_count_toward_max_deletes_in_check_mode_too(published, check_mode):
    store, bundle = published
    leftovers = {"stray%d.html" % i: b"left %d" % i for i in range(4)}
    store.update({"site/" + path: data for path, data in leftovers.items()})
    plant_journal(store, *(entry(path, data) for path, data in leftovers.items()))
    before = dict(store)
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, dest(transfer={"max_deletes": 3}), now=LATER, check_mode=check_mode, opener=memory(store))
    assert caught.value.reason == "delete_limit"
    assert "delete 4 output(s) (4 of them left by an interrupted publish), more than transfer.max_deletes (3)" in caught.value.message
    assert store == before
    assert publish(bundle, PIPELINE, dest(transfer={"max_deletes": 4}), now=LATER, opener=memory(store))["recovered"] == sorted(leftovers)


def test_leftovers_a_republish_writes_again_are_replaced_not_deleted_nor_counted(tmp_path):
    """A killed first publish of many files, run again: its files are what the run writes anyway,
    so recovery leaves them to be replaced, and a guard of 0 deletes does not stop the run."""
    store = {}
    bundle = write_bundle(tmp_path / "b", {"f%02d.png" % i: b"%d" % i for i in range(20)})
    cut = Cutter(at=30)
    with pytest.raises(Killed):
        publish(bundle, PIPELINE, dest(), now=NOW, opener=memory(store, cut=cut))
    assert JOURNAL in store and STATE_NAME not in store and "site/f05.png" in store
    result = publish(bundle, PIPELINE, dest(transfer={"max_deletes": 0}), now=NOW, opener=memory(store))
    assert (result["action"], result["recovered"], len(result["written"])) == ("publish", [], 20)
    assert "this publish writes" in result["warnings"][0]
    assert sorted(store) == sorted(["site/" + STATE_NAME] + ["site/f%02d.png" % i for i in range(20)])


class Cutter:
    """Counts storage operations and kills the run at operation `at` (None: never)."""

    def __init__(self, at=None):
        self.at, self.count = at, 0

    def __call__(self, op, path):
        self.count += 1
        if self.at is not None and self.count > self.at:
            raise Killed("cut at %s %s" % (op, path))


def test_a_recovering_publish_cut_at_any_storage_operation_converges(tmp_path):
    """An attempt killed mid-write leaves a journal; the run that recovers it, killed at any of
    its own operations, leaves a root the next plain run finishes: nothing the attempts wrote
    stays unrecorded, whether recovery deleted it or left it for its own rewrite."""
    v1 = write_bundle(tmp_path / "v1", {"a.md": b"# A1\n", "b.png": b"b1"}, created="2026-06-03T00:00:00Z")
    v2 = write_bundle(tmp_path / "v2", {"a.md": b"# A2\n", "b.png": b"b2", "d.png": b"d", "x.png": b"x"},
                      created="2026-06-04T00:00:00Z")
    v3 = write_bundle(tmp_path / "v3", {"a.md": b"# A3\n", "b.png": b"b3", "d.png": b"d"}, created="2026-06-05T00:00:00Z")
    pipeline = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}

    def killed_v2():
        store = {}
        publish(v1, pipeline, dest(), now=NOW, opener=memory(store))
        with pytest.raises(Killed):
            publish(v2, pipeline, dest(), now=LATER, opener=memory(store, cut=Cutter(at=13)))
        assert {"site/d.png", "site/x.png", JOURNAL} <= set(store), sorted(store)
        return store

    expected = killed_v2()
    publish(v3, pipeline, dest(), now=LATER, opener=memory(expected))
    counted = Cutter()
    publish(v3, pipeline, dest(), now=LATER, opener=memory(killed_v2(), cut=counted))
    assert counted.count > 10
    for at in range(counted.count):
        store = killed_v2()
        with pytest.raises(Killed):
            publish(v3, pipeline, dest(), now=LATER, opener=memory(store, cut=Cutter(at)))
        publish(v3, pipeline, dest(), now=LATER, opener=memory(store))
        assert store == expected, "a recovering run cut after %d operations did not converge" % at


# -- the attack on real storage: files of another account -----------------------------

OTHER_UID = 1000  # the account whose files the journal names
PLANTER_UID = 65534  # the account that planted the journal


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return builders.Place(request.param, tmp_path, request)


def test_a_journal_naming_files_of_another_account_deletes_none_of_them(place, tmp_path):
    """A journal in the bundle path names 300 files of uid 1000 in a directory the publisher did
    not make, with their true digests and sizes. Planted by uid 65534 it is no record of
    distributor's (test_record_authorship); owned by distributor's own account (a journal of an
    earlier run that named them), the run is still a skip that deletes nothing, warns naming the
    files, and says so in its result."""
    site = place.root / "site"
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>"})
    publish(bundle, PIPELINE, place.destination, now=NOW)
    data = site / "data"
    data.mkdir()
    theirs = {}
    for i in range(300):
        path = data / ("f%03d.txt" % i)
        path.write_bytes(b"row %d of uid %d" % (i, OTHER_UID))
        os.chown(path, OTHER_UID, OTHER_UID)
        theirs["data/" + path.name] = path.read_bytes()
    os.chown(data, OTHER_UID, OTHER_UID)
    os.chmod(data, 0o755)
    os.chmod(site, 0o777)
    plant_journal_file = site / JOURNAL_NAME
    plant_journal_file.write_text(json.dumps({"token": "planted", "writes": [entry(p, d) for p, d in theirs.items()]}))
    os.chown(plant_journal_file, PLANTER_UID, PLANTER_UID)
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, place.destination, now=LATER)
    assert caught.value.reason == "invalid_state" and "is owned by uid %d" % PLANTER_UID in caught.value.message
    os.chown(plant_journal_file, 0, 0)
    strict = dict(place.destination, transfer={"max_deletes": 5})
    for check_mode in (True, False):
        result = publish(bundle, PIPELINE, strict, now=LATER, check_mode=check_mode)
        assert (result["action"], result["deleted"], result["recovered"], result["changed"]) == ("skip", [], [], False)
        [left] = [w for w in result["warnings"] if "left alone" in w]
        assert left.startswith("300 file(s) that the journal of the interrupted publish (attempt planted) names are left alone")
        assert "data/f000.txt (is owned by uid 1000, not by " in left and "and 280 more" in left
    assert {"data/" + p.name: p.read_bytes() for p in data.iterdir()} == theirs
    assert not plant_journal_file.exists(), "the journal is resolved: nothing it names will ever be deleted"


def test_recovery_keeps_a_file_with_a_second_name_elsewhere_and_says_why(place, tmp_path):
    """As in issue 38: a journal planted in the bundle path names an unmanaged file of the
    account distributor writes as (root), with a second name outside the root, its size and an
    all-zero digest. A file a publish writes in place has one name: local storage sees the
    other name is not one distributor made; SFTP, without inode numbers, cannot tell whose it
    is, so (unlike in a dead release build of its own, test_release_links) the file stays, named
    with why. Neither reads it."""
    site = place.root / "site"
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>"})
    publish(bundle, PIPELINE, place.destination, now=NOW)
    secret = plant_secret(tmp_path)
    (site / "downloads").mkdir()
    os.link(secret, site / "downloads" / "release.iso")
    before = fingerprint(secret)
    zeros = {"path": "downloads/release.iso", "sha256": "sha256:" + "0" * 64, "size": len(SECRET)}
    (site / JOURNAL_NAME).write_text(json.dumps({"token": "planted", "writes": [zeros]}))
    result = publish(bundle, PIPELINE, place.destination, now=LATER)
    assert (result["action"], result["deleted"], result["recovered"]) == ("skip", [], [])
    [left] = [w for w in result["warnings"] if "left alone" in w]
    why = ("has 2 links, and over SFTP distributor cannot tell whether the other names are its own" if place.kind == "sftp"
           else "has 2 links, and a file distributor writes has one")
    assert "downloads/release.iso (%s)" % why in left
    assert "removed 0 output(s) left by an interrupted publish (attempt planted)" in result["warnings"]
    assert fingerprint(secret) == before, "the secret was read"
    assert os.stat(site / "downloads" / "release.iso").st_ino == before[0] and os.stat(secret).st_nlink == 2


# -- staging directories of dead attempts ------------------------------------------------------


def test_empty_staging_directories_of_dead_attempts_go_and_others_are_named(place, tmp_path):
    site = place.root / "site"
    v1 = write_bundle(tmp_path / "v1", {"index.html": b"v1", "docs/a.html": b"a"}, created="2026-06-03T00:00:00Z")
    v2 = write_bundle(tmp_path / "v2", {"index.html": b"v2", "docs/a.html": b"a"})
    publish(v1, PIPELINE, place.destination, now=NOW)
    for name in ("docs/.distributor.tmp.dead01", ".distributor.tmp.dead02", "docs/.distributor.tmp.full", ".distributor.tmp.theirs"):
        (site / name).mkdir()
    (site / "docs/.distributor.tmp.full/a.html").write_bytes(b"staged, never renamed")
    os.chown(site / ".distributor.tmp.theirs", PLANTER_UID, PLANTER_UID)
    checked = publish(v2, PIPELINE, place.destination, now=LATER, check_mode=True)
    assert checked["staging_removed"] == [".distributor.tmp.dead02", "docs/.distributor.tmp.dead01"]
    assert (site / ".distributor.tmp.dead02").is_dir()
    real = publish(v2, PIPELINE, place.destination, now=LATER)
    assert real["staging_removed"] == [".distributor.tmp.dead02", "docs/.distributor.tmp.dead01"]
    assert [w for w in real["warnings"] if not w.startswith("sftp://")] == [
        "removed 2 empty staging director(ies) of interrupted publishes: .distributor.tmp.dead02, docs/.distributor.tmp.dead01",
        "2 staging director(ies) of interrupted publishes are left: .distributor.tmp.theirs (is owned by uid 65534, not by %s), "
        "docs/.distributor.tmp.full (is not empty). Remove them by hand once you know what they hold"
        % ("uid 0" if place.kind == "local" else "root")]
    assert sorted(p.name for p in site.iterdir() if p.name.startswith(".distributor.tmp")) == [".distributor.tmp.theirs"]
    assert sorted(p.name for p in (site / "docs").iterdir()) == [".distributor.tmp.full", "a.html"]
    assert checked["warnings"][-2].startswith("a real run first removes 2 empty staging director(ies)")

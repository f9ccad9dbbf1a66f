# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every delete and overwrite checks the file, not only the record (issue 38, item 2).

root's own record is trusted, but a file it names may since belong to someone else: an account
that could write the directory renamed a file of uid 1000 over the output (here: chowned after
the publish). A run that would delete or write over it fails `unmanaged`, naming it and its
owner, in check mode too, and changes nothing; an account named in storage.trusted_owners is
one distributor acts for. On real disk and a real sshd; the rule itself on the memory backend.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.authorship import (
    check_authorship, overwritten_or_deleted)
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.decide import Decision
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import Content, Plan, Write
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey

import builders
from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

PIPELINE = {"id": "reports"}
OTHER_UID = 1000  # the account whose file now sits at an output's name
SITE = {"index.html": b"<p>site</p>", "report.pdf": b"%PDF root's report"}
LATER_CREATED = "2026-06-05T11:55:00Z"


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return builders.Place(request.param, tmp_path, request)


def published(place, tmp_path) -> os.PathLike:
    """The site published by root, then its report.pdf given to uid 1000 (as if that account had
    renamed a file of its own over it)."""
    publish(write_bundle(tmp_path / "v1", SITE), PIPELINE, place.destination, now=NOW)
    report = place.root / "site" / "report.pdf"
    os.chown(report, OTHER_UID, OTHER_UID)
    return report


def refused(bundle, destination, **kwargs) -> DistributorError:
    """The check run and the real run of `bundle` fail alike; the message of the real one."""
    messages = []
    for check_mode in (True, False):
        with pytest.raises(DistributorError) as caught:
            publish(bundle, PIPELINE, destination, now=LATER, check_mode=check_mode, **kwargs)
        messages.append((caught.value.reason, caught.value.message, caught.value.details))
    assert messages[0] == messages[1], "check mode predicts the very failure"
    return caught.value


def trusting(destination: dict, *accounts: str) -> dict:
    return dict(destination, storage=dict(destination["storage"], trusted_owners=list(accounts)))


@pytest.mark.parametrize("change", ["delete", "overwrite"])
def test_a_replace_that_would_delete_or_overwrite_a_file_of_another_account_fails_unmanaged(place, tmp_path, change):
    report = published(place, tmp_path)
    files = {"index.html": b"<p>site v2</p>"}
    if change == "overwrite":
        files["report.pdf"] = b"%PDF root's new report"
    bundle = write_bundle(tmp_path / "v2", files, created=LATER_CREATED)
    error = refused(bundle, place.destination)
    assert error.reason == "unmanaged"
    assert "1 file(s) this publish would delete or write over are not distributor's to touch" in error.message
    assert "report.pdf (is owned by uid %d, not by " % OTHER_UID in error.message
    assert "storage.trusted_owners" in error.message
    assert error.details == {"unvouched": [{"path": "report.pdf", "why": error.details["unvouched"][0]["why"]}]}
    assert report.read_bytes() == SITE["report.pdf"] and os.stat(report).st_uid == OTHER_UID
    site = place.root / "site"
    assert (site / "index.html").read_bytes() == SITE["index.html"], "nothing was written"
    assert not (site / JOURNAL_NAME).exists(), "refused before the journal"


def test_an_account_named_in_trusted_owners_is_one_distributor_deletes_and_overwrites_for(place, tmp_path):
    report = published(place, tmp_path)
    bundle = write_bundle(tmp_path / "v2", {"index.html": b"<p>site v2</p>"}, created=LATER_CREATED)
    result = publish(bundle, PIPELINE, trusting(place.destination, str(OTHER_UID)), now=LATER)
    assert (result["action"], result["deleted"]) == ("replace", ["report.pdf"])
    assert not report.exists()


def test_forced_replacement_keeps_an_unmanaged_file_of_another_account(place, tmp_path):
    """force replaces what distributor does not manage, but never with rights its owner lacks."""
    site = place.root / "site"
    (site / "theirs.pdf").write_bytes(b"uid 1000's")
    os.chown(site / "theirs.pdf", OTHER_UID, OTHER_UID)
    error = refused(write_bundle(tmp_path / "v1", SITE), place.destination, force=True)
    assert error.reason == "unmanaged" and "theirs.pdf (is owned by uid %d" % OTHER_UID in error.message
    assert (site / "theirs.pdf").read_bytes() == b"uid 1000's" and not (site / STATE_NAME).exists()


def test_a_takeover_of_outputs_another_trusted_account_wrote_goes_on(place, tmp_path):
    """A migration: the outputs of pipeline `old`, written by uid 1000, taken over by root."""
    published(place, tmp_path)
    os.chown(place.root / "site" / "index.html", OTHER_UID, OTHER_UID)
    destination = dict(trusting(place.destination, str(OTHER_UID)), takeover={"mode": "managed"})
    bundle = write_bundle(tmp_path / "v2", {"index.html": b"<p>new owner</p>"}, id="other.example")
    result = publish(bundle, {"id": "newsletter"}, destination, now=LATER)
    assert result["action"] == "takeover" and result["deleted"] == ["report.pdf"]
    assert (place.root / "site" / "index.html").read_bytes() == b"<p>new owner</p>"


def test_a_change_of_storage_owner_names_the_former_owner_for_the_run_that_moves_the_outputs(tmp_path, request):
    """The record and the outputs storage.owner 1000 was given are another account's once
    storage.owner is 65534 (the record is refused first: test_record_authorship): the run that
    gives the outputs their new owner names 1000 in storage.trusted_owners."""
    place = builders.Place("local", tmp_path, request)
    bundle = write_bundle(tmp_path / "v1", SITE)
    storage = dict(place.destination["storage"], owner=str(OTHER_UID))
    publish(bundle, PIPELINE, dict(place.destination, storage=storage), now=NOW)
    moved = dict(place.destination, storage=dict(storage, owner="65534"))
    assert "is owned by uid %d, not by uid 0 or uid 65534 (storage.owner)" % OTHER_UID in refused(bundle, moved).message
    result = publish(bundle, PIPELINE, trusting(moved, str(OTHER_UID)), now=LATER)
    assert result["resettled"] == ["index.html", "report.pdf"]
    assert os.stat(place.root / "site" / "report.pdf").st_uid == 65534


def test_a_file_with_a_second_hard_link_is_kept(tmp_path, request):
    """Local storage counts the names: a second one, anywhere, is not distributor's."""
    place = builders.Place("local", tmp_path, request)
    publish(write_bundle(tmp_path / "v1", SITE), PIPELINE, place.destination, now=NOW)
    report = place.root / "site" / "report.pdf"
    os.link(report, tmp_path / "elsewhere.pdf")
    error = refused(write_bundle(tmp_path / "v2", {"index.html": b"v2"}, created=LATER_CREATED), place.destination)
    assert "report.pdf (has 2 links, and a file distributor writes has one)" in error.message
    assert report.read_bytes() == SITE["report.pdf"] and os.stat(report).st_nlink == 2


def test_prune_keeps_a_file_of_another_account_and_deletes_nothing(place, tmp_path):
    """Retention keeps the newest output (index.html sorts first among equals): report.pdf expires."""
    report = published(place, tmp_path)
    destination = dict(place.destination, retention={"max_outputs": 1})
    for check_mode in (True, False):
        with pytest.raises(DistributorError) as caught:
            prune(PIPELINE["id"], destination, now=LATER, check_mode=check_mode)
        assert caught.value.reason == "unmanaged"
        assert "1 file(s) prune would delete are not distributor's to touch" in caught.value.message
        assert "report.pdf (is owned by uid %d" % OTHER_UID in caught.value.message
    assert report.read_bytes() == SITE["report.pdf"]
    assert prune(PIPELINE["id"], trusting(destination, str(OTHER_UID)), now=LATER)["deleted"] == ["report.pdf"]


def test_clearing_keeps_a_release_generation_that_holds_a_file_of_another_account(place, tmp_path):
    """keep 1: the third release clears the first (the second is `previous`), unless a file of
    it is no longer distributor's: then it stays whole, and the result says why."""
    destination = dict(place.destination, path="web", releases={"keep": 1})
    home = place.root / ".distributor-releases" / "web"
    released = []
    for n in range(3):
        bundle = write_bundle(tmp_path / ("v%d" % n), {"index.html": b"release %d" % n, "notes.txt": b"shared"},
                              created="2026-06-04T11:%02d:00Z" % n)
        if n == 2:
            os.chown(home / released[0]["id"] / "index.html", OTHER_UID, OTHER_UID)
        released.append(publish(bundle, PIPELINE, destination, now=NOW)["release"])
    first = released[0]["id"]
    [kept] = released[2]["kept"]
    assert kept["id"] == first and kept["why"].startswith("index.html is owned by uid %d, not by " % OTHER_UID)
    assert first not in released[2]["removed"]
    assert (home / first / "index.html").read_bytes() == b"release 0" and (home / first / "notes.txt").exists()


# -- the rule, on the memory backend -------------------------------------------------------------

def test_the_refusal_names_each_file_with_why_grouped_and_counted_from_one_batched_look():
    answers = {"a.html": None, "b.pdf": "is owned by uid 1000, not by uid 0", "c.pdf": "is a symbolic link",
               "d.pdf": "is owned by uid 1000, not by uid 0"}
    asked = []

    def doubt_files(paths):
        asked.append(paths)
        return [answers[path] for path in paths]
    with pytest.raises(DistributorError) as caught:
        check_authorship(sorted(answers), doubt_files, "/srv/site", "this publish would delete or write over")
    assert caught.value.reason == "unmanaged" and asked == [sorted(answers)]
    assert caught.value.message.startswith(
        "/srv/site: 3 file(s) this publish would delete or write over are not distributor's to touch, so it changed "
        "nothing: b.pdf, d.pdf (is owned by uid 1000, not by uid 0); c.pdf (is a symbolic link). ")
    assert [entry["path"] for entry in caught.value.details["unvouched"]] == ["b.pdf", "c.pdf", "d.pdf"]
    check_authorship([], lambda paths: pytest.fail("nothing to judge asks storage nothing"), "/srv/site", "prune would delete")


def test_only_the_paths_present_that_a_run_deletes_or_writes_over_are_judged():
    content = Content("sha256:" + "0" * 64, 1)
    writes = tuple(Write(path, path, content) for path in ("new.html", "old.html", "drifted.css", "mode.png"))
    the_plan = Plan(Decision("replace", "a newer source"), OwnerKey("reports", "archive"), "site", writes[:2],
                    ("gone.pdf", "omitted.pdf"), None, None, (), repairs=writes[2:3], resettles=writes[3:])
    present = frozenset({"old.html", "drifted.css", "mode.png", "omitted.pdf", "kept.txt"})
    assert overwritten_or_deleted(the_plan, present) == ["drifted.css", "mode.png", "old.html", "omitted.pdf"]


class Judged(MemoryStorage):
    """A MemoryStorage that notes the paths of each doubt_files call."""

    def __init__(self, log, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = log

    def doubt_files(self, paths):
        self.log.append(list(paths))
        return super().doubt_files(paths)


def test_a_skip_or_a_first_publish_asks_storage_nothing_and_a_replace_one_look_at_what_it_replaces(tmp_path):
    store, log = {}, []

    def opener(cfg, base, token):
        return Judged(log, store, base, token)
    destination = {"id": "archive", "storage": MEMORY_STORAGE, "path": "site"}
    v1 = write_bundle(tmp_path / "v1", {"a.txt": b"a", "b.txt": b"b", "c.txt": b"c"})
    publish(v1, PIPELINE, destination, now=NOW, opener=opener)
    assert publish(v1, PIPELINE, destination, now=LATER, opener=opener)["action"] == "skip"
    assert log == []
    v2 = write_bundle(tmp_path / "v2", {"a.txt": b"a", "b.txt": b"b2", "d.txt": b"d"}, created=LATER_CREATED)
    assert publish(v2, PIPELINE, destination, now=LATER, opener=opener)["deleted"] == ["c.txt"]
    assert log == [["b.txt", "c.txt"]]


def test_a_file_the_memory_double_marks_foreign_is_refused(tmp_path):
    store = {}
    destination = {"id": "archive", "storage": MEMORY_STORAGE, "path": "site"}
    publish(write_bundle(tmp_path / "v1", SITE), PIPELINE, destination, now=NOW,
            opener=lambda cfg, base, token: MemoryStorage(store, base, token))
    before = dict(store)

    def opener(cfg, base, token):
        return MemoryStorage(store, base, token, foreign={"site/report.pdf"})

    error = refused(write_bundle(tmp_path / "v2", {"index.html": b"v2"}, created=LATER_CREATED), destination, opener=opener)
    assert "report.pdf (is owned by another account)" in error.message and store == before

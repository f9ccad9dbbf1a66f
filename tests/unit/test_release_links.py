# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 30 item 9, links of its own, on the real local filesystem and the real sshd: a file the
releases share has a name in each of them, and those names are distributor's only where each
release holds that very file. A count is no evidence: a neighbour who can write the destination
replaces the live release's file by a hard link to a file outside and gives that file exactly as
many names as the releases gave theirs. Local storage sees the other releases hold another file
(st_dev, st_ino) and never reads it; SFTP, which has no inode numbers, reads no shared file.

The file outside is root-only with an access time older than its modification time (planted.py),
so that any read of it would move the access time."""

from __future__ import annotations

import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.releases import build as release_build
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases import home as release_root
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp import storage as sftp_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.switch import switch_release

import builders
from builders import write_bundle
from planted import SECRET, fingerprint, plant_secret
from test_crash_safety import Killed

PIPELINE = {"id": "reports", "outputs": [{"match": "*.txt"}]}


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return builders.Place(request.param, tmp_path, request)


def released(place) -> dict:
    return dict(place.destination, path="web", releases={"keep": 3})


def publish_notes(place, tmp_path, n: int, notes: bytes = b"notes\n", **kwargs) -> dict:
    files = {"index.txt": b"release %d\n" % n, "notes.txt": notes}
    bundle = write_bundle(tmp_path / ("v%d-%d" % (n, len(os.listdir(tmp_path)))), files,
                          created="2026-06-04T11:%02d:00Z" % n)
    return publish(bundle, PIPELINE, released(place), **kwargs)


def diffs(result: dict) -> dict:
    return {entry["after_header"].rpartition("/")[2]: entry for entry in result["diff"][1:]}


def test_a_file_the_releases_share_is_shown_in_a_diff_on_local_storage_and_not_over_sftp(place, tmp_path):
    for n in range(3):
        publish_notes(place, tmp_path, n)
    assert os.stat(place.root / "web" / "notes.txt").st_nlink == 3
    shown = diffs(publish_notes(place, tmp_path, 3, b"new notes\n", check_mode=True, diff_contents=True))["notes.txt"]
    drifted = state_info(released(place), pipeline_id="reports", verify="sha256")["drifted"]
    repaired = publish_notes(place, tmp_path, 2, verify="sha256")["repaired"]
    if place.kind == "local":
        assert (shown["before"], shown["after"]) == ("notes\n", "new notes\n")
        assert drifted == repaired == []
    else:
        assert "before" not in shown, shown
        assert ("old content not shown: the file has 3 links (the releases share it) and SFTP cannot tell they are "
                "distributor's own") in shown["prepared"]
        assert drifted == repaired == ["notes.txt"], "over SFTP verify cannot read it, and writes it again"


def test_a_release_file_replaced_by_a_link_given_as_many_names_as_the_releases_made_is_never_read(place, tmp_path):
    """notes.txt has three names, one per release. The neighbour replaces the live one by a hard
    link to the secret and gives the secret a third name of its own: three names, as many as
    distributor made. A diff does not show it, verify counts it as drifted and a publish with
    verify renames the bundle's notes over it; the secret is never read."""
    secret = plant_secret(tmp_path)
    for n in range(3):
        publish_notes(place, tmp_path, n)
    live = place.root / "web" / "notes.txt"
    assert os.stat(live).st_nlink == 3
    os.link(secret, secret.parent / "a-third-name")
    os.unlink(live)
    os.link(secret, live)
    before = fingerprint(secret)
    assert before[0] == os.stat(live).st_ino and os.stat(live).st_nlink == 3

    shown = diffs(publish_notes(place, tmp_path, 3, b"new notes\n", check_mode=True, diff_contents=True))["notes.txt"]
    assert fingerprint(secret) == before, "the secret was read"
    assert "before" not in shown and "old content not shown: the file has 3 links" in shown["prepared"], shown
    info = state_info(released(place), pipeline_id="reports", verify="sha256")
    assert (info["drifted"], info["missing"]) == (["notes.txt"], [])
    assert fingerprint(secret) == before
    repaired = publish_notes(place, tmp_path, 2, verify="sha256")
    assert repaired["repaired"] == ["notes.txt"] and SECRET.decode() not in str(repaired)
    assert (place.root / "web" / "notes.txt").read_bytes() == b"notes\n"
    assert os.stat(place.root / "web" / "notes.txt").st_ino != before[0]
    assert fingerprint(secret)[3] == before[3], "the secret was read"
    assert secret.read_bytes() == SECRET


def test_a_diff_that_reads_no_file_with_several_names_reads_no_other_release(tmp_path, monkeypatch):
    """Every output changed in the last release, so none has a second name: the diff reads the
    live release's files, and no other release's record."""
    place = builders.Place("local", tmp_path, None)
    for n in range(2):
        publish_notes(place, tmp_path, n, b"notes %d\n" % n)
    assert os.stat(place.root / "web" / "notes.txt").st_nlink == 1

    def unread(_self):
        raise AssertionError("another release's record was read")
    monkeypatch.setattr(release_root.SharedLinks, "_load", unread)
    shown = diffs(publish_notes(place, tmp_path, 2, b"notes 2\n", check_mode=True, diff_contents=True))["notes.txt"]
    assert (shown["before"], shown["after"]) == ("notes 1\n", "notes 2\n")


def test_releases_whose_files_are_shared_are_staged_and_rolled_back_to_on_both_backends(place, tmp_path):
    """A release is checked whole before it is offered or switched to: by size, which reads no
    file, where SFTP cannot read the files the releases share; so neither is refused for them."""
    first = publish_notes(place, tmp_path, 0)["release"]["id"]
    publish_notes(place, tmp_path, 1)
    back = switch_release("reports", released(place), "previous")
    assert (back["changed"], os.readlink(place.root / "web").rpartition("/")[2]) == (True, first)
    bundle = write_bundle(tmp_path / "staged", {"index.txt": b"staged\n", "notes.txt": b"notes\n"},
                          created="2026-06-04T11:30:00Z")
    staged = publish(bundle, PIPELINE, dict(released(place), releases={"keep": 3, "activate": False}))
    assert staged["release"]["status"] == "staged"
    assert os.stat(place.root / ".distributor-releases" / "web" / staged["release"]["id"] / "notes.txt").st_nlink == 3


def dead_build_with_a_link_to(secret, place, tmp_path, monkeypatch) -> str:
    """A release built from one whose notes.txt has the secret's size, killed once its files are
    linked; the neighbour then puts a hard link to the secret at its notes.txt. Its id."""
    notes = b"n" * (len(SECRET) - 1) + b"\n"
    publish_notes(place, tmp_path, 0, notes)

    def killed(*_args, **_kwargs):
        raise Killed("killed once the unchanged files were linked")
    with monkeypatch.context() as patched:
        patched.setattr(release_build, "execute", killed)
        with pytest.raises(Killed):
            publish_notes(place, tmp_path, 1, notes)
    home = place.root / ".distributor-releases" / "web"
    [dead] = [n for n in os.listdir(home) if (home / n / "notes.txt").exists() and not (home / n / "index.txt").exists()]
    planted = home / dead / "notes.txt"
    planted.unlink()
    os.link(secret, planted)
    return dead


def test_a_dead_build_whose_file_is_a_link_to_a_file_of_the_sftp_account_is_cleared_without_reading_it(
        tmp_path, request, monkeypatch):
    """The link planted in the dead build has the recorded size and two names: SFTP cannot tell
    its other name is not the live release's, so it is never read; removing that one name
    destroys no bytes, so the dead build is cleared and the secret keeps its own name."""
    place = builders.Place("sftp", tmp_path, request)
    secret = plant_secret(tmp_path)
    dead = dead_build_with_a_link_to(secret, place, tmp_path, monkeypatch)
    before = fingerprint(secret)
    result = publish_notes(place, tmp_path, 2)["release"]
    assert fingerprint(secret) == before, "the secret was read"
    assert (result["status"], result["failed"], result["kept"]) == ("active", [dead], [])
    assert dead in result["removed"] and not (place.root / ".distributor-releases" / "web" / dead).exists()
    assert secret.read_bytes() == SECRET and os.stat(secret).st_nlink == 1


def test_a_dead_build_over_a_server_that_does_not_count_links_is_kept_unread_and_the_publish_goes_on(
        tmp_path, request, monkeypatch):
    place = builders.Place("sftp", tmp_path, request)
    secret = plant_secret(tmp_path)
    dead = dead_build_with_a_link_to(secret, place, tmp_path, monkeypatch)
    before = fingerprint(secret)
    monkeypatch.setattr(sftp_module, "link_count", lambda _longname: None)
    result = publish_notes(place, tmp_path, 2)["release"]
    assert fingerprint(secret) == before, "the secret was read"
    assert (result["status"], result["failed"]) == ("active", [dead]), result
    assert result["kept"] == [{"id": dead, "why": "notes.txt may have other names (hard links): the server's listing "
                               "does not say how many, and distributor reads no file that may have a name elsewhere"}]
    assert (place.root / ".distributor-releases" / "web" / dead / "notes.txt").exists()
    assert secret.read_bytes() == SECRET

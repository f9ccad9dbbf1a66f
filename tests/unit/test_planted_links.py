# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hard links planted at a destination, on the real local filesystem and the real sshd: nothing is
written, truncated, read or hashed through a name distributor did not make, and a root publisher
on a host whose kernel allows such links is told which directories others can write there.

The planted links point at a root-only 0600 file outside the root whose access time is older than
its modification time, so that any read of it would move the access time (relatime). Hard links
to it are made as root, which fs.protected_hardlinks lets link anything; the attacker of the
issue does the same on hosts where that setting is 0."""

from __future__ import annotations

import os
import pwd

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.regular import (
    ForeignLinks, links_not_ours)
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp import storage as sftp_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.local.storage import LocalStorage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import holder_record
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.private import unprotected_links
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.lock import SftpLock
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.wire import link_count

import builders
from builders import write_bundle
from planted import MODIFIED, OLD, SECRET, fingerprint, plant_secret

PIPELINE = {"id": "reports", "outputs": [{"match": "*.txt"}]}
NOBODY = pwd.getpwnam("nobody").pw_uid


@pytest.fixture
def secret(tmp_path):
    return plant_secret(tmp_path)


def untouched(path, before: tuple) -> bool:
    """The file is as it was: same inode, size and times (checked before its bytes are read),
    then the same bytes."""
    return fingerprint(path) == before and path.read_bytes() == SECRET


def plant(secret, at) -> tuple:
    """`at` replaced by a hard link to `secret`; the secret's fingerprint after the link (the link
    changes its ctime and link count, nothing distributor is asked about)."""
    if os.path.lexists(at):
        os.unlink(at)
    os.link(secret, at)
    return fingerprint(secret)


def expect_error(reason: str, call, *args, **kwargs) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        call(*args, **kwargs)
    assert caught.value.reason == reason, caught.value.message
    return caught.value


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return builders.Place(request.param, tmp_path, request)


def destination(place, **extra) -> dict:
    return dict(place.destination, retention={"max_outputs": 1}, **extra)


# -- the one rule ----------------------------------------------------------------------------


def test_a_file_with_more_names_than_distributor_made_is_not_ours():
    assert not links_not_ours(1) and links_not_ours(2)
    assert not links_not_ours(0), "a name removed since the open leaves no other way to the file"
    assert not links_not_ours(3, ours=3) and links_not_ours(4, ours=3), "names distributor makes are counted by the caller"


# -- item 1: no write or truncation through a link -------------------------------------------


def test_a_lock_hard_linked_to_a_file_outside_is_refused_by_publish_prune_and_reconcile_and_left_as_it_was(tmp_path, secret):
    place = builders.Place("local", tmp_path, None)
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    publish(bundle, PIPELINE, destination(place))
    lock = place.root / "site" / LOCK_NAME
    before = plant(secret, lock)
    for operation in (lambda: publish(bundle, PIPELINE, destination(place)),
                      lambda: prune("reports", destination(place)),
                      lambda: reconcile_state("reports", destination(place))):
        error = expect_error("storage_error", operation)
        assert "%s has 2 links" % lock in error.message
    assert untouched(secret, before)
    assert os.stat(lock).st_ino == before[0], "the planted name is left where it was"


def test_a_lock_of_another_account_is_refused_and_left_as_it_was(tmp_path):
    place = builders.Place("local", tmp_path, None)
    lock = place.root / "site" / LOCK_NAME
    lock.write_bytes(SECRET)
    os.chown(lock, NOBODY, NOBODY)
    os.utime(lock, ns=(OLD, MODIFIED))
    before = fingerprint(lock)
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    error = expect_error("storage_error", publish, bundle, PIPELINE, destination(place))
    assert "%s is owned by uid %d, not by uid 0" % (lock, NOBODY) in error.message
    assert fingerprint(lock) == before and lock.read_bytes() == SECRET


def test_a_lock_left_by_this_account_is_taken_again(tmp_path):
    """A run killed while it held the lock leaves its file (the kernel drops only the flock)."""
    place = builders.Place("local", tmp_path, None)
    (place.root / "site" / LOCK_NAME).write_bytes(b"a dead holder's record")
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    assert publish(bundle, PIPELINE, destination(place))["action"] == "publish"
    assert not (place.root / "site" / LOCK_NAME).exists()


def test_an_sftp_lock_replaced_by_another_accounts_file_is_not_renewed_and_left_as_it_was(tmp_path, request):
    """SFTP renews its lock in place: the handle's attributes are judged before the write."""
    place = builders.Place("sftp", tmp_path, request)
    storage = open_storage(place.destination["storage"], "site", "t1")
    try:
        lock = SftpLock(storage)
        version = lock.create(holder_record(0.0, 600.0, "t1"))
        path = place.root / "site" / LOCK_NAME
        planted = place.root / "site" / "planted"
        planted.write_bytes(version)
        os.chown(planted, NOBODY, NOBODY)
        os.utime(planted, ns=(OLD, MODIFIED))
        os.rename(planted, path)
        before = fingerprint(path)
        error = expect_error("storage_error", lock.replace, version, holder_record(1.0, 600.0, "t1", renewal=1))
        assert "the file there is owned by uid %d" % NOBODY in error.message and LOCK_NAME in error.message
        assert fingerprint(path) == before and path.read_bytes() == version
        lock.close()
    finally:
        storage.close()


# -- item 2: no content read through a link --------------------------------------------------


def test_a_diff_never_shows_an_output_replaced_by_a_hard_link_to_a_file_outside(place, tmp_path, secret):
    publish(write_bundle(tmp_path / "v1", {"a.txt": b"a\n", "b.txt": b"b\n"}), PIPELINE, destination(place))
    before = plant(secret, place.root / "site" / "a.txt")
    v2 = write_bundle(tmp_path / "v2", {"a.txt": b"a, again\n", "b.txt": b"b, again\n"}, created="2026-06-05T11:55:00Z")
    if place.kind == "local":  # it counts the names: the run, which would write over it, refuses first (authorship.py)
        error = expect_error("unmanaged", publish, v2, PIPELINE, destination(place), check_mode=True, diff_contents=True)
        assert "a.txt (has 2 links, and a file distributor writes has one)" in error.message
        assert SECRET.decode() not in error.message and untouched(secret, before)
        return
    result = publish(v2, PIPELINE, destination(place), check_mode=True, diff_contents=True)
    entries = {entry["before_header"].rpartition("/")[2]: entry for entry in result["diff"][1:]}
    assert "old content not shown: the file has 2 links" in entries["a.txt"]["prepared"]
    assert entries["b.txt"]["before"] == "b\n", "an output of one name is shown as before"
    assert SECRET.decode() not in str(result)
    assert untouched(secret, before)


@pytest.mark.parametrize("verify", ["size", "sha256"])
def test_verify_counts_a_hard_linked_output_as_drifted_and_replaces_it_by_rename(place, tmp_path, secret, verify):
    """The output has the planted file's size: only the link count tells them apart unread.
    Local storage, which counts the names before it writes over one, refuses instead and leaves
    the planted name (authorship.py); SFTP, which cannot count them there, renames over it."""
    ours = b"x" * (len(SECRET) - 1) + b"\n"
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": ours, "b.txt": b"b\n"})
    publish(bundle, PIPELINE, destination(place))
    output = place.root / "site" / "a.txt"
    before = plant(secret, output)
    info = state_info(destination(place), pipeline_id="reports", verify=verify)
    assert (info["drifted"], info["missing"]) == (["a.txt"], [])
    if place.kind == "local":
        for check_mode in (True, False):
            error = expect_error("unmanaged", publish, bundle, PIPELINE, destination(place), check_mode=check_mode,
                                 verify=verify)
            assert "a.txt (has 2 links, and a file distributor writes has one)" in error.message
        assert os.stat(output).st_nlink == 2 and untouched(secret, before)
        return
    checked = publish(bundle, PIPELINE, destination(place), check_mode=True, diff_contents=True, verify=verify)
    assert checked["repaired"] == ["a.txt"] and SECRET.decode() not in str(checked)
    repaired = publish(bundle, PIPELINE, destination(place), verify=verify)
    assert (repaired["action"], repaired["repaired"]) == ("skip", ["a.txt"])
    assert output.read_bytes() == ours and os.stat(output).st_nlink == 1
    assert os.stat(secret).st_nlink == 1, "the rename took the planted name away"
    assert (fingerprint(secret)[:2], fingerprint(secret)[3:]) == (before[:2], before[3:])
    assert secret.read_bytes() == SECRET


def test_a_record_hard_linked_to_a_file_outside_is_refused_unread(tmp_path, secret):
    place = builders.Place("local", tmp_path, None)
    before = plant(secret, place.root / "site" / STATE_NAME)
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    error = expect_error("storage_error", publish, bundle, PIPELINE, destination(place), check_mode=True)
    assert "%s has 2 links" % (place.root / "site" / STATE_NAME) in error.message
    assert untouched(secret, before)


def test_an_sftp_output_swapped_for_a_link_after_its_directory_was_counted_is_not_read(tmp_path, request, secret):
    """The counts come from a listing kept for the run; the file looked at must be the entry
    counted, so a swap after the listing is seen and the directory listed again."""
    place = builders.Place("sftp", tmp_path, request)
    publish(write_bundle(tmp_path / "bundle", {"a.txt": b"a\n", "b.txt": b"b\n"}), PIPELINE, destination(place))
    storage = open_storage(place.destination["storage"], "site", "t1")
    try:
        assert storage.measure("b.txt", 2, True)[0] == 2
        assert storage.read_bytes("a.txt", 100) == b"a\n"
        before = plant(secret, place.root / "site" / "a.txt")
        with pytest.raises(ForeignLinks) as caught:
            storage.read_bytes("a.txt", 100)
        assert caught.value.links == 2
        with pytest.raises(ForeignLinks):
            storage.measure("a.txt", len(SECRET), True)
    finally:
        storage.close()
    assert untouched(secret, before)


def test_an_sftp_server_whose_listing_gives_no_link_count_has_no_output_read(tmp_path, request, monkeypatch):
    place = builders.Place("sftp", tmp_path, request)
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    publish(bundle, PIPELINE, destination(place))
    monkeypatch.setattr(sftp_module, "link_count", lambda _longname: None)
    assert state_info(destination(place), pipeline_id="reports", verify="size")["drifted"] == ["a.txt"]
    v2 = write_bundle(tmp_path / "v2", {"a.txt": b"a, again\n"}, created="2026-06-05T11:55:00Z")
    [entry] = publish(v2, PIPELINE, destination(place), check_mode=True, diff_contents=True)["diff"][1:]
    assert "old content not shown: the server does not say how many links the file has" in entry["prepared"]


@pytest.mark.parametrize("longname,count", [
    ("-rw-r--r--    1 root     root            2 Jun  4 12:00 a.txt", 1),
    ("-rw-------   12 deploy   www-data   123456 Jan  1  2025 name with spaces", 12),
    ("-rw-r--r--+   2 u g 1 Jun 4 12:00 acl", 2),
    ("a.txt", None), ("", None), (None, None), ("-rw-r--r-- x root root 2 Jun 4 a.txt", None),
    ("drwxr-xr-x 1", None),
])
def test_the_link_count_is_read_only_from_a_long_name_written_as_ls_writes_it(longname, count):
    assert link_count(longname) == count


# -- item 3: hosts that allow the attack are named -------------------------------------------


def sysctl(hardlinks: int | None, symlinks: int | None):
    values = {"fs.protected_hardlinks": hardlinks, "fs.protected_symlinks": symlinks}
    return values.__getitem__


def opener_with(read):
    return lambda storage, base, token: LocalStorage(storage["root"], base, token, storage, sysctl=read)


@pytest.mark.parametrize("euid,hardlinks,symlinks,named", [
    (0, 0, 1, ["fs.protected_hardlinks"]), (0, 1, 0, ["fs.protected_symlinks"]),
    (0, 0, 0, ["fs.protected_hardlinks", "fs.protected_symlinks"]), (0, 1, 1, []), (0, None, 2, []),
    (1000, 0, 0, []),
])
def test_the_link_protections_a_host_turned_off_are_named_for_a_root_publisher_only(euid, hardlinks, symlinks, named):
    assert unprotected_links(euid, sysctl(hardlinks, symlinks)) == named


def test_a_root_publisher_is_warned_of_directories_others_can_write_where_the_kernel_allows_links(tmp_path):
    place = builders.Place("local", tmp_path, None)
    os.chmod(place.root / "site", 0o777)
    (place.root / "site" / "docs").mkdir()
    os.chown(place.root / "site" / "docs", NOBODY, NOBODY)
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n", "docs/b.txt": b"b\n"})
    pipeline = {"id": "reports", "outputs": [{"match": "**/*.txt"}]}
    [warning] = publish(bundle, pipeline, destination(place), opener=opener_with(sysctl(0, 1)))["warnings"]
    assert "%s is writable by every account (mode 0777)" % (place.root / "site") in warning
    assert "%s is owned by uid %d" % (place.root / "site" / "docs", NOBODY) in warning
    assert "on this host fs.protected_hardlinks is 0" in warning and "a hard link to any file" in warning
    assert "require_private_directories" in warning
    assert publish(bundle, pipeline, destination(place), opener=opener_with(sysctl(1, 1)))["warnings"] == []


def test_require_private_directories_refuses_them_before_anything_is_written(tmp_path):
    place = builders.Place("local", tmp_path, None)
    os.chmod(place.root / "site", 0o770)
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    strict = destination(place)
    strict["storage"] = dict(strict["storage"], require_private_directories=True)
    for check_mode in (True, False):
        error = expect_error("storage_error", publish, bundle, PIPELINE, strict, check_mode=check_mode,
                             opener=opener_with(sysctl(1, 0)))
        assert "%s is writable by its group (mode 0770)" % (place.root / "site") in error.message
        assert "fs.protected_symlinks is 0" in error.message
    assert os.listdir(place.root / "site") == []
    assert publish(bundle, PIPELINE, strict, opener=opener_with(sysctl(1, 1)))["action"] == "publish"


def test_settings_that_give_new_directories_to_others_are_named_before_they_are_made(tmp_path):
    place = builders.Place("local", tmp_path, None)
    shared = destination(place)
    shared["storage"] = dict(shared["storage"], directory_mode="0775", require_private_directories=True)
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a\n"})
    error = expect_error("storage_error", publish, bundle, PIPELINE, shared, opener=opener_with(sysctl(0, 1)))
    assert "the directories distributor creates (storage.directory_mode) is writable by its group" in error.message
    assert os.listdir(place.root / "site") == []

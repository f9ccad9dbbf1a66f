# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage contract every backend keeps, run against the real things: a local directory,
OpenSSH sshd over SFTP and moto's S3 server (plus the memory backend the fast tests rely on).

Select one backend with `-k local`, `-k memory`, `-k sftp` or `-k s3`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import paramiko
import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError, MissingLibrary
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import STATE_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.s3 import storage as s3_backend
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.base import Storage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.confined import ConfinedStorage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

from builders import sha
from memory_storage import MemoryStorage, hard_link

BASE = "reports/2024-05-01"
SECRET = "hunter2-do-not-print-me"
TOKEN = "Ses5ion-T0ken-do-not-print-me"


@dataclass
class Backend:
    """One destination root on one backend; `open()` gives a fresh Storage on it, as a second
    publisher would."""

    name: str
    opener: Callable[..., Storage]
    root: Path | None = None
    server: object = None
    bucket: str | None = None
    opened: list = field(default_factory=list)

    def open(self, base: str = BASE, token: str = "t1", **overrides) -> Storage:
        storage = self.opener(base, token, **overrides)
        self.opened.append(storage)
        return storage

    def base_dir(self) -> Path:
        return self.root / BASE


def _local(request, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    return Backend("local", lambda base, token, **kw: open_storage({"type": "local", "root": str(root), **kw}, base, token), root)


def _memory(request, tmp_path):
    store: dict = {}
    return Backend("memory", lambda base, token, **kw: MemoryStorage(store, base, token))


def _sftp(request, tmp_path):
    server = request.getfixturevalue("sshd_server")
    root = tmp_path / "root"
    root.mkdir()
    return Backend("sftp", lambda base, token, **kw: open_storage({**server.storage(str(root)), **kw}, base, token), root, server)


def _s3(request, tmp_path):
    server = request.getfixturevalue("s3_server")
    bucket = server.create_bucket()
    return Backend(
        "s3",
        lambda base, token, **kw: open_storage({**server.storage(bucket, prefix="site"), **kw}, base, token),
        server=server,
        bucket=bucket,
    )


BACKENDS = {"local": _local, "memory": _memory, "sftp": _sftp, "s3": _s3}


@pytest.fixture(params=list(BACKENDS))
def backend(request, tmp_path):
    made = BACKENDS[request.param](request, tmp_path)
    yield made
    for storage in made.opened:
        storage.close()


def only(*names):
    """Run a test on some backends only."""
    return pytest.mark.parametrize("backend", names, indirect=True)


def failing_chunks(*chunks: bytes):
    """A source that fails verification after some bytes went out, as a changed bundle file does."""
    yield from chunks
    raise DistributorError("verification_failed", "page.html changed while it was read")


def expect_error(reason: str, call, *args, **kwargs) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        call(*args, **kwargs)
    assert caught.value.reason == reason, caught.value.message
    return caught.value


# -- settings changed in place -------------------------------------------------------------

# The settings each backend is resettled from and to: a file mode, or an S3 object's headers.
SETTINGS = {"local": ({"file_mode": "0640"}, {"file_mode": "0604"}), "sftp": ({"file_mode": "0640"}, {"file_mode": "0604"}),
            "s3": ({"cache_control": "max-age=60"}, {"cache_control": "no-cache"}), "memory": ({}, {})}


def settings_seen(backend: Backend, path: str):
    """(the setting resettle changes, the file's identity) as the backend itself keeps them."""
    if backend.name in ("local", "sftp"):
        found = os.stat(backend.base_dir() / path)
        return "%04o" % (found.st_mode & 0o7777), found.st_ino
    if backend.name == "s3":
        head = backend.server.client().head_object(Bucket=backend.bucket, Key="site/%s/%s" % (BASE, path))
        return head.get("CacheControl"), head["ContentLength"]
    return None, None


def test_resettle_gives_the_recorded_bytes_new_settings_without_writing_them(backend):
    before, after = SETTINGS[backend.name]
    backend.open(**before).write("docs/a.txt", [b"alpha"])
    storage = backend.open(**after)
    if backend.name == "s3":
        puts = []
        storage.client.meta.events.register("before-call.s3.PutObject", lambda **kw: puts.append(kw))
    old, identity = settings_seen(backend, "docs/a.txt")
    assert storage.resettle_many([("docs/a.txt", sha(b"alpha"), 5)]) == []
    new, same = settings_seen(backend, "docs/a.txt")
    assert (old, new) == {"local": ("0640", "0604"), "sftp": ("0640", "0604"), "s3": ("max-age=60", "no-cache")}.get(
        backend.name, (None, None))
    assert same == identity and storage.read_bytes("docs/a.txt", STATE_LIMIT) == b"alpha"
    if backend.name == "s3":
        assert puts == []


def test_resettle_leaves_a_file_that_is_not_the_recorded_one_to_be_written_again(backend):
    before, after = SETTINGS[backend.name]
    backend.open(**before).write("docs/a.txt", [b"alpha"])
    storage = backend.open(**after)
    old = settings_seen(backend, "docs/a.txt")
    assert storage.resettle_many([("docs/a.txt", sha(b"ALPHA"), 5), ("docs/gone.txt", sha(b"x"), 1)]) == [
        "docs/a.txt", "docs/gone.txt"]
    assert settings_seen(backend, "docs/a.txt") == old


# -- reading and writing ------------------------------------------------------------------


def test_written_file_reads_back_and_overwrite_replaces_it(backend):
    storage = backend.open()
    storage.write("docs/page.html", [b"<p>one", b"</p>"])
    assert storage.read_bytes("docs/page.html", STATE_LIMIT) == b"<p>one</p>"
    storage.write_bytes("docs/page.html", b"two")
    assert storage.read_bytes("docs/page.html", STATE_LIMIT) == b"two"
    assert storage.list_files() == ["docs/page.html"]


def test_empty_file_is_written(backend):
    storage = backend.open()
    storage.write("empty.txt", [])
    assert storage.read_bytes("empty.txt", STATE_LIMIT) == b""


def test_large_file_streams_in_chunks(backend):
    chunks = [os.urandom(1024 * 1024) for _chunk in range(6)]
    storage = backend.open()
    storage.write("big.bin", iter(chunks))
    assert storage.read_bytes("big.bin", STATE_LIMIT) == b"".join(chunks)


def test_missing_file_reads_as_none(backend):
    assert backend.open().read_bytes("nothing/here.txt", STATE_LIMIT) is None


def test_failed_source_stream_leaves_target_untouched_and_nothing_staged(backend):
    storage = backend.open()
    storage.write_bytes("docs/page.html", b"published")
    error = expect_error("verification_failed", storage.write, "docs/page.html", failing_chunks(b"half of a new "))
    assert "changed while it was read" in error.message
    assert storage.read_bytes("docs/page.html", STATE_LIMIT) == b"published"
    expect_error("verification_failed", storage.write, "docs/new.html", failing_chunks(b"partial"))
    assert not storage.exists("docs/new.html")
    assert storage.list_files() == ["docs/page.html"]


def test_exists_tells_present_from_missing(backend):
    storage = backend.open()
    storage.write_bytes("a/b.txt", b"x")
    assert storage.exists("a/b.txt")
    assert not storage.exists("a/c.txt")
    assert not storage.exists("z/b.txt")


def test_storages_on_different_bases_do_not_see_each_other(backend):
    backend.open(base="one").write_bytes("f.txt", b"1")
    other = backend.open(base="two")
    assert other.list_files() == []
    assert other.read_bytes("f.txt", STATE_LIMIT) is None


# -- deleting -----------------------------------------------------------------------------


def test_delete_of_missing_file_reports_false(backend):
    storage = backend.open()
    assert storage.delete("never/written.txt") is False
    storage.write_bytes("kept.txt", b"k")
    assert storage.delete("gone.txt") is False
    assert storage.list_files() == ["kept.txt"]


def test_delete_removes_the_file_and_reports_true(backend):
    storage = backend.open()
    storage.write_bytes("a/b.txt", b"x")
    assert storage.delete("a/b.txt") is True
    assert not storage.exists("a/b.txt")
    assert storage.list_files() == []


@only("local", "sftp")
def test_delete_removes_directories_it_emptied_but_keeps_the_base(backend):
    storage = backend.open()
    storage.write_bytes("a/b/c.txt", b"1")
    storage.write_bytes("a/d.txt", b"2")
    storage.delete("a/b/c.txt")
    assert sorted(os.listdir(backend.base_dir() / "a")) == ["d.txt"]
    storage.delete("a/d.txt")
    assert os.listdir(backend.base_dir()) == []


def test_delete_many_reports_only_files_that_existed(backend):
    storage = backend.open()
    for name in ("a.txt", "b/c.txt", "d.txt"):
        storage.write_bytes(name, b"x")
    assert storage.delete_many(["b/c.txt", "missing.txt", "a.txt"]) == ["b/c.txt", "a.txt"]
    assert storage.list_files() == ["d.txt"]


def test_delete_many_removes_every_directory_the_batch_emptied_and_keeps_one_still_holding_a_file(backend):
    storage = backend.open()
    for name in ("a/x.txt", "a/b/c/d.txt", "a/b/e.txt", "g/h.txt", "g/keep.txt"):
        storage.write_bytes(name, b"x")
    assert storage.delete_many(["a/x.txt", "a/b/c/d.txt", "a/b/e.txt", "g/h.txt"]) == [
        "a/x.txt", "a/b/c/d.txt", "a/b/e.txt", "g/h.txt"]
    assert storage.list_files() == ["g/keep.txt"]
    if backend.root is not None:
        assert sorted(os.listdir(backend.base_dir())) == ["g"]


@only("local")
def test_local_delete_many_tries_each_directory_it_emptied_once_not_once_per_file(backend, monkeypatch):
    """Removing a release generation deletes 10,000 files: an rmdir attempt after each was most
    of the cost of keep-N (issue #30's cost row)."""
    storage = backend.open()
    names = ["many/%02d.txt" % number for number in range(40)]
    for name in names:
        storage.write_bytes(name, b"x")
    tried = []
    real_rmdir = os.rmdir

    def rmdir(name, **kwargs):
        tried.append(name)
        real_rmdir(name, **kwargs)
    monkeypatch.setattr(os, "rmdir", rmdir)
    assert storage.delete_many(names) == names
    assert tried == ["many"] and os.listdir(backend.base_dir()) == []


# -- listing ------------------------------------------------------------------------------


def test_list_files_is_sorted_recursive_and_includes_reserved_names(backend):
    storage = backend.open()
    for name in ("z.txt", "a/b/c.txt", "a/a.txt", ".distributor.json", "m/n.html"):
        storage.write_bytes(name, b"x")
    assert storage.list_files() == [".distributor.json", "a/a.txt", "a/b/c.txt", "m/n.html", "z.txt"]


def test_list_files_of_a_base_never_written_is_empty(backend):
    assert backend.open(base="not/yet/published").list_files() == []


# -- what recovery may delete (Storage.doubt) --------------------------------------------


def test_doubt_vouches_only_for_the_file_written_with_that_size_and_digest(backend):
    storage = backend.open()
    storage.write_bytes("docs/page.html", b"ours")
    assert storage.doubt("docs/page.html", 4, sha(b"ours")) is None
    assert storage.doubt("docs/page.html", 4, sha(b"else")) == "holds other bytes than the interrupted publish wrote"
    assert storage.doubt("docs/page.html", 5, sha(b"ours!")) == "is 4 bytes, not the 5 the interrupted publish wrote"
    assert storage.doubt("docs/gone.html", 4, sha(b"ours")) == "is gone"
    assert storage.doubt("nowhere/page.html", 4, sha(b"ours")) == "is gone"


def test_doubt_many_answers_each_in_order(backend):
    storage = backend.open()
    names = ["p%02d.html" % i for i in range(40)]
    for name in names:
        storage.write_bytes(name, name.encode())
    asked = [(name, 8, sha(name.encode() if i % 3 else b"other!!!")) for i, name in enumerate(names)] + [("gone.html", 1, sha(b"g"))]
    assert storage.doubt_many(asked) == [storage.doubt(*item) for item in asked] == storage.doubt_many(asked, own_build=True)
    assert storage.doubt_many(asked)[:4] == ["holds other bytes than the interrupted publish wrote", None, None,
                                             "holds other bytes than the interrupted publish wrote"]


@only("local", "sftp")
def test_doubt_refuses_a_file_of_another_account_whatever_its_content(backend):
    storage = backend.open()
    storage.write_bytes("docs/page.html", b"ours")
    os.chown(backend.base_dir() / "docs" / "page.html", 1000, 1000)
    assert storage.doubt("docs/page.html", 4, sha(b"ours")).startswith("is owned by uid 1000, not by ")
    assert storage.doubt("docs/page.html").startswith("is owned by uid 1000")


@only("local", "sftp")
def test_doubt_accepts_the_configured_owner(backend):
    if backend.name == "sftp":
        storage = backend.open(owner=1000)
    else:
        storage = open_storage({"type": "local", "root": str(backend.root), "owner": 1000}, BASE, "t2")
        backend.opened.append(storage)
    storage.write_bytes("page.html", b"ours")
    assert os.stat(backend.base_dir() / "page.html").st_uid == 1000
    assert storage.doubt("page.html", 4, sha(b"ours")) is None
    os.chown(backend.base_dir() / "page.html", 1001, 1001)
    assert "is owned by uid 1001, not by " in storage.doubt("page.html", 4, sha(b"ours"))


@only("local", "sftp")
def test_doubt_refuses_a_file_with_a_second_name_and_only_sftp_vouches_for_it_unread_in_its_own_release_build(backend, tmp_path):
    """In place a file distributor wrote has one name. SFTP cannot tell whose another name is:
    it keeps such a file, unless the caller clears a dead release build of its own, whose names
    are links distributor made (then by its size, unread: the digest asked is no file's).
    Local storage tells by identity, whoever asks."""
    storage = backend.open()
    storage.write_bytes("page.html", b"ours")
    os.link(backend.base_dir() / "page.html", tmp_path / "elsewhere")
    unread = "sha256:" + "0" * 64
    if backend.name == "sftp":
        why = "has 2 links, and over SFTP distributor cannot tell whether the other names are its own"
        assert (storage.doubt("page.html", 4, unread, own_build=True), storage.doubt_many([("page.html", 4, unread)], own_build=True)) == (None, [None])
    else:
        why = "has 2 links, and a file distributor writes has one"
        assert storage.doubt("page.html", 4, sha(b"ours"), own_build=True) == why
    assert (storage.doubt("page.html", 4, sha(b"ours")), storage.doubt_many([("page.html", 4, unread)])) == (why, [why])


@only("local", "sftp")
def test_doubt_refuses_a_link_and_a_directory_where_a_file_was_written(backend, tmp_path):
    (backend.base_dir() / "dir.html").mkdir(parents=True)
    (backend.base_dir() / "link.html").symlink_to(tmp_path)
    storage = backend.open()
    assert storage.doubt("dir.html", 4, sha(b"ours")) == "is a directory"
    assert storage.doubt("link.html", 4, sha(b"ours")) == "is a symbolic link"


@only("local", "sftp")
def test_an_empty_staging_directory_is_listed_and_removed_and_one_holding_a_file_stays(backend):
    base = backend.base_dir()
    (base / "docs" / ".distributor.tmp.dead").mkdir(parents=True)
    (base / "docs" / ".distributor.tmp.full").mkdir()
    (base / "docs" / ".distributor.tmp.full" / "a.html").write_bytes(b"staged")
    (base / "docs" / "plain").mkdir()
    storage = backend.open()
    assert storage.list_files() == ["docs/.distributor.tmp.dead", "docs/.distributor.tmp.full/a.html"]
    assert storage.doubt("docs/.distributor.tmp.dead") is None
    assert storage.delete_many(["docs/.distributor.tmp.dead", "docs/.distributor.tmp.full"]) == ["docs/.distributor.tmp.dead"]
    assert sorted(os.listdir(base / "docs")) == [".distributor.tmp.full", "plain"]
    os.chown(base / "docs" / ".distributor.tmp.full", 65534, 65534)
    assert storage.doubt("docs/.distributor.tmp.full").startswith("is owned by uid 65534")


# -- locking ------------------------------------------------------------------------------


def test_lock_excludes_a_second_publisher_until_released(backend):
    first, second = backend.open(token="t1"), backend.open(token="t2")
    with first.lock(timeout=5):
        started = time.monotonic()
        expect_error("locked", _hold, second, 0.6)
        assert time.monotonic() - started < 0.6 + 20, "gave up at its lock_timeout, not the holder's 600 s lease"
    with second.lock(timeout=0):
        pass
    with first.lock(timeout=0):
        pass


@only("local", "sftp", "s3", "memory")
def test_lock_refusal_names_the_holder_and_the_location(backend):
    first, second = backend.open(token="t1"), backend.open(token="t2")
    with first.lock(timeout=5):
        error = expect_error("locked", _hold, second, 0.3)
    assert "%s:%d" % (socket.gethostname(), os.getpid()) in error.message
    assert second.describe() in error.message


def test_lock_is_released_when_the_holder_fails(backend):
    first, second = backend.open(token="t1"), backend.open(token="t2")
    with pytest.raises(RuntimeError):
        with first.lock(timeout=5):
            raise RuntimeError("publish failed")
    with second.lock(timeout=0):
        pass


def _hold(storage: Storage, timeout: float) -> None:
    with storage.lock(timeout=timeout):
        pass


def _write_lock_record(storage: Storage, expires_in: float, **fields) -> None:
    now = time.time()
    record = {"holder": "crashed-host:4242", "acquired_at": now - 600, "expires_at": now + expires_in, **fields}
    storage.write_bytes(LOCK_NAME, json.dumps(record).encode())


@only("local", "sftp", "s3")
def test_lock_left_by_a_dead_holder_is_taken_after_its_expiry(backend):
    """Expiry is judged on the storage's clock: a lock file last written an hour ago (its mtime,
    on the server) is dead at once; moto's LastModified cannot be set back, so on S3 the record
    declares a one-second lease instead."""
    storage = backend.open()
    _write_lock_record(storage, expires_in=-1, **({"expiry": 1} if backend.name == "s3" else {}))
    if backend.root is not None:
        old = time.time() - 3600
        os.utime(backend.base_dir() / LOCK_NAME, (old, old))
    with storage.lock(timeout=5 if backend.name == "s3" else 1):
        assert b"crashed-host" not in storage.read_bytes(LOCK_NAME, STATE_LIMIT)
    assert not storage.exists(LOCK_NAME)


@only("sftp", "s3")
def test_lock_of_a_live_holder_is_respected_until_its_expiry(backend):
    storage = backend.open()
    _write_lock_record(storage, expires_in=300)
    error = expect_error("locked", _hold, storage, 0.3)
    assert "crashed-host:4242" in error.message
    assert storage.exists(LOCK_NAME)


@only("memory", "sftp", "s3")
def test_a_live_holder_keeps_its_lock_for_several_expiries(backend):
    """The heartbeat renews the record well before it expires: a contender that waits three
    expiries long never finds it expired, and the holder still holds it afterwards."""
    holder, contender = backend.open(token="t1"), backend.open(token="t2")
    with holder.lock(timeout=5, expiry=1) as lease:
        first = json.loads(holder.read_bytes(LOCK_NAME, STATE_LIMIT))
        expect_error("locked", contender.lock(timeout=3.5, expiry=1).__enter__)
        renewed = json.loads(holder.read_bytes(LOCK_NAME, STATE_LIMIT))
        lease.confirm("checking")
    assert renewed["token"] == first["token"] and renewed["acquired_at"] == first["acquired_at"]
    assert renewed["expires_at"] > first["expires_at"] + 2
    with contender.lock(timeout=0):
        pass


@only("memory", "local", "sftp", "s3")
def test_a_holder_whose_lock_was_taken_finds_out_and_leaves_the_new_lock_alone(backend):
    """A lock deleted by hand and taken by the next publisher: the first holder's confirmation
    fails as `locked` naming the lock file and the new holder, its heartbeat notices without
    being asked, and its release leaves the new holder's lock in place."""
    holder, thief = backend.open(token="t1"), backend.open(token="t2")
    held = holder.lock(timeout=5, expiry=1)
    lease = held.__enter__()
    thief.delete(LOCK_NAME)
    with thief.lock(timeout=5):
        if backend.name != "local":
            time.sleep(1)  # three beats: the heartbeat finds the lock taken by itself
            expect_error("locked", lease.check, "writing page.html")
        error = expect_error("locked", lease.confirm, "writing .distributor.json")
        assert holder.describe(LOCK_NAME) in error.message
        assert 'now held by "%s:%d"' % (socket.gethostname(), os.getpid()) in error.message
        assert "stopped before writing .distributor.json" in error.message
        held.__exit__(None, None, None)
        assert json.loads(thief.read_bytes(LOCK_NAME, STATE_LIMIT))["token"] == "t2"


@only("sftp")
def test_lock_being_created_is_not_mistaken_for_a_dead_one(backend):
    """Between its exclusive create and its first write a lock file is empty: only its age may
    say the holder is gone."""
    storage = backend.open()
    storage.write_bytes(LOCK_NAME, b"")
    expect_error("locked", _hold, storage, 0.3)
    old = time.time() - 3600
    os.utime(backend.base_dir() / LOCK_NAME, (old, old))
    with storage.lock(timeout=2, expiry=600):
        assert b"expires_at" in storage.read_bytes(LOCK_NAME, STATE_LIMIT)


# -- symlinks -----------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path):
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("not yours")
    return place


@only("local", "sftp")
def test_symlinked_directory_inside_root_is_never_followed(backend, outside):
    storage = backend.open()
    storage.write_bytes("real.txt", b"x")
    os.symlink(outside, backend.base_dir() / "link")
    calls = ((storage.write_bytes, ("link/new.txt", b"y")), (storage.read_bytes, ("link/secret.txt", STATE_LIMIT)),
             (storage.delete, ("link/secret.txt",)))
    for call, args in calls:
        error = expect_error("storage_error", call, *args)
        assert "symbolic link" in error.message
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert storage.list_files() == ["link", "real.txt"]


@only("local", "sftp")
def test_symlinked_file_inside_root_is_never_followed(backend, outside):
    storage = backend.open()
    storage.write_bytes("keep.txt", b"x")
    os.symlink(outside / "secret.txt", backend.base_dir() / "page.html")
    expect_error("storage_error", storage.read_bytes, "page.html", STATE_LIMIT)
    expect_error("storage_error", storage.write_bytes, "page.html", b"overwrite")
    assert (outside / "secret.txt").read_text() == "not yours"


@only("local", "sftp")
def test_a_link_planted_in_a_directory_an_earlier_write_made_is_refused(backend, outside):
    """Local storage skips the look at a name only in a directory the same batch made: one made
    by an earlier write is looked at again."""
    storage = backend.open()
    storage.write_many([("new/first.txt", lambda: [b"x"])])
    os.symlink(outside / "secret.txt", backend.base_dir() / "new" / "page.html")
    error = expect_error("storage_error", storage.write_many, [("new/page.html", lambda: [b"overwrite"])])
    assert "symbolic link" in error.message
    assert (backend.base_dir() / "new" / "page.html").is_symlink()
    assert (outside / "secret.txt").read_text() == "not yours"


@only("local", "sftp")
def test_symlinked_bundle_path_is_refused(backend, outside):
    os.makedirs(backend.root / "reports")
    os.symlink(outside, backend.base_dir())
    storage = backend.open()
    expect_error("storage_error", storage.write_bytes, "x.txt", b"y")
    expect_error("storage_error", storage.list_files)
    assert sorted(os.listdir(outside)) == ["secret.txt"]


# -- sftp: host keys and credentials ------------------------------------------------------


@only("sftp")
def test_sftp_unknown_host_key_is_refused_with_policy_reject(backend, tmp_path):
    known_hosts = tmp_path / "empty_known_hosts"
    storage = backend.open(known_hosts_file=str(known_hosts))
    error = expect_error("storage_error", storage.list_files)
    assert "127.0.0.1:%d" % backend.server.port in error.message
    assert str(known_hosts) in error.message and "accept_new" in error.message
    assert not known_hosts.exists()


@only("sftp")
def test_sftp_accept_new_trusts_an_unknown_host_and_remembers_it(backend, tmp_path):
    known_hosts = tmp_path / "ssh" / "known_hosts"
    backend.open(known_hosts_file=str(known_hosts), host_key_policy="accept_new").write_bytes("a.txt", b"1")
    assert known_hosts.read_text() == backend.server.known_hosts_line()
    later = backend.open(known_hosts_file=str(known_hosts), host_key_policy="reject")
    assert later.read_bytes("a.txt", STATE_LIMIT) == b"1"


@only("sftp")
def test_sftp_changed_host_key_is_refused_even_with_accept_new(backend, tmp_path):
    with open(backend.server.other_key_file + ".pub") as handle:
        kind, key = handle.read().split()[:2]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("[127.0.0.1]:%d %s %s\n" % (backend.server.port, kind, key))
    storage = backend.open(known_hosts_file=str(known_hosts), host_key_policy="accept_new")
    error = expect_error("storage_error", storage.list_files)
    assert "does not match" in error.message


@only("sftp")
def test_sftp_wrong_credentials_give_storage_error_without_the_password(backend):
    storage = backend.open(private_key_file=None, password=SECRET)
    error = expect_error("storage_error", storage.write_bytes, "a.txt", b"x")
    assert "sftp://%s@127.0.0.1:%d" % (backend.server.username, backend.server.port) in error.message
    assert SECRET not in error.message and SECRET not in repr(error.__cause__)
    error = expect_error("storage_error", backend.open(private_key_file=backend.server.other_key_file).list_files)
    assert "uthentication" in error.message


@only("sftp")
def test_sftp_unreachable_server_gives_storage_error(backend):
    storage = backend.open(port=_closed_port())
    error = expect_error("storage_error", storage.read_bytes, "a.txt", STATE_LIMIT)
    assert "cannot connect to sftp://" in error.message


@only("sftp")
def test_sftp_writes_over_several_channels_and_settles_for_the_ones_granted(backend, monkeypatch):
    """A server that grants fewer sessions (MaxSessions) makes write_many slower, never fail."""
    storage = backend.open()
    storage.write_bytes("first.txt", b"connects")
    granted = []
    real_open = storage._client.open_sftp

    def open_one_more():
        if granted:
            raise paramiko.ChannelException(2, "administratively prohibited")
        granted.append(real_open())
        return granted[-1]

    monkeypatch.setattr(storage._client, "open_sftp", open_one_more)
    storage.write_many(("f%d.txt" % i, lambda i=i: [b"%d" % i]) for i in range(10))
    assert len(granted) == 1 and granted[0].sock.closed
    assert storage.list_files() == ["f%d.txt" % i for i in range(10)] + ["first.txt"]


@only("sftp")
def test_sftp_prefers_an_aead_cipher_the_server_offers(backend):
    storage = backend.open()
    storage.write_bytes("a.txt", b"x")
    transport = storage._client.get_transport()
    assert transport.local_cipher == transport.remote_cipher == "aes128-gcm@openssh.com"


@only("sftp")
def test_sftp_relative_root_is_a_config_error(backend):
    expect_error("invalid_config", backend.open, BASE, "t1", root="relative/dir")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- s3 -----------------------------------------------------------------------------------


@only("s3")
def test_s3_missing_bucket_gives_storage_error_naming_it_without_secrets(backend):
    storage = backend.open(bucket="distributor-no-such-bucket", secret_key=SECRET, session_token=TOKEN)
    for call, args in ((storage.write_bytes, ("a.txt", b"x")), (storage.list_files, ()), (storage.read_bytes, ("a.txt", STATE_LIMIT))):
        error = expect_error("storage_error", call, *args)
        assert "s3://distributor-no-such-bucket/site/%s" % BASE in error.message
        assert "NoSuchBucket" in error.message
        assert SECRET not in error.message and TOKEN not in error.message


@only("s3")
def test_s3_unreachable_endpoint_gives_storage_error(backend, monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    storage = backend.open(endpoint_url="http://127.0.0.1:%d" % _closed_port())
    error = expect_error("storage_error", storage.read_bytes, "a.txt", STATE_LIMIT)
    assert "s3://%s/site/%s/a.txt" % (backend.bucket, BASE) in error.message


@only("s3")
def test_s3_objects_carry_the_content_type_of_their_path(backend):
    storage = backend.open()
    expected = {"index.html": "text/html; charset=utf-8", "data.json": "application/json", "blob": "application/octet-stream"}
    for path in expected:
        storage.write_bytes(path, b"x")
    client = backend.server.client()
    for path, kind in expected.items():
        assert client.head_object(Bucket=backend.bucket, Key="site/%s/%s" % (BASE, path))["ContentType"] == kind


@only("s3")
def test_s3_large_upload_is_multipart_and_keeps_its_content_type(backend):
    data = os.urandom(s3_backend.PART_SIZE + 1024)
    storage = backend.open()
    storage.write("video/big.html", (data[i:i + 1024 * 1024] for i in range(0, len(data), 1024 * 1024)))
    assert storage.read_bytes("video/big.html", STATE_LIMIT) == data
    head = backend.server.client().head_object(Bucket=backend.bucket, Key="site/%s/video/big.html" % BASE)
    assert head["ContentType"] == "text/html; charset=utf-8"
    assert head["ETag"].endswith('-2"')


@only("s3")
def test_s3_failed_large_upload_leaves_no_object_and_no_pending_upload(backend):
    storage = backend.open()
    expect_error("verification_failed", storage.write, "big.bin", failing_chunks(*[b"x" * 1024 * 1024] * 9))
    assert storage.list_files() == []
    assert "Uploads" not in backend.server.client().list_multipart_uploads(Bucket=backend.bucket)


@only("s3")
def test_s3_parts_of_one_file_are_in_flight_together_and_bounded(backend, monkeypatch):
    storage = backend.open()
    peak = _in_flight(monkeypatch, storage.client, "upload_part", 0.2)
    data = os.urandom(5 * s3_backend.PART_SIZE + 1)
    storage.write("big.bin", (data[i:i + 1024 * 1024] for i in range(0, len(data), 1024 * 1024)))
    assert storage.read_bytes("big.bin", STATE_LIMIT) == data
    assert 1 < peak[0] <= s3_backend.PARTS_IN_FLIGHT, peak[0]
    expect_error("verification_failed", storage.write, "bad.bin", failing_chunks(*[b"x" * 1024 * 1024] * 20))
    assert "Uploads" not in backend.server.client().list_multipart_uploads(Bucket=backend.bucket)
    assert all(storage._part_slots.acquire(blocking=False) for _slot in range(s3_backend.PARTS_IN_FLIGHT)), "a part slot leaked"


@only("s3")
@pytest.mark.parametrize("size, chunk, parts", [
    (2 * s3_backend.PART_SIZE, 3 * 1024 * 1024 + 1, 2),  # an exact multiple: no empty last part
    (2 * s3_backend.PART_SIZE + 7, 5 * 1024 * 1024 - 3, 3),  # chunks that straddle part boundaries
    (s3_backend.PART_SIZE + 1, s3_backend.PART_SIZE + 1, 2),  # one chunk larger than a part
])
def test_s3_parts_are_cut_exactly_from_any_chunking_and_reuse_their_buffers(backend, size, chunk, parts):
    data = os.urandom(size)
    storage = backend.open()
    for name in ("one.bin", "two.bin"):
        storage.write(name, (data[i:i + chunk] for i in range(0, len(data), chunk)))
        assert storage.read_bytes(name, STATE_LIMIT) == data
        head = backend.server.client().head_object(Bucket=backend.bucket, Key="site/%s/%s" % (BASE, name))
        assert head["ETag"].endswith('-%d"' % parts)
    assert len(storage._part_buffers) <= s3_backend.PARTS_IN_FLIGHT, "part buffers are allocated per part, not reused"


@only("s3", "sftp")
def test_concurrent_write_many_writes_every_file_into_new_directories(backend):
    """Several writers meet each new directory at once: each directory and (SFTP) its staging
    directory is made once, and nothing staged is left."""
    names = sorted("d%d/sub/f%02d.txt" % (i % 3, i) for i in range(40))
    storage = backend.open()
    storage.write_many((name, lambda name=name: [name.encode()]) for name in names)
    assert storage.list_files() == sorted(names)
    assert all(storage.read_bytes(name, STATE_LIMIT) == name.encode() for name in names[:5])


@only("local", "sftp")
def test_a_failure_while_staging_leaves_every_old_output_of_the_batch_as_it_was(backend):
    """Staged, all of them, before the first rename: a source failing last undoes nothing
    because nothing was replaced yet (S3 has no rename: each object lands when uploaded)."""
    storage = backend.open()
    storage.write_many([("a.txt", lambda: [b"old a"]), ("d/m.txt", lambda: [b"old m"]), ("z.txt", lambda: [b"old z"])])
    items = [("a.txt", lambda: [b"new a"]), ("d/m.txt", lambda: [b"new m"]), ("z.txt", lambda: failing_chunks(b"new z"))]
    expect_error("verification_failed", storage.write_many, items)
    assert [storage.read_bytes(name, STATE_LIMIT) for name in ("a.txt", "d/m.txt", "z.txt")] == [b"old a", b"old m", b"old z"]
    assert storage.list_files() == ["a.txt", "d/m.txt", "z.txt"]


@only("s3", "sftp")
def test_concurrent_write_many_raises_the_first_failure(backend):
    storage = backend.open()
    items = [("ok%d.txt" % i, lambda: [b"ok"]) for i in range(5)] + [("bad.txt", lambda: failing_chunks(b"x"))]
    expect_error("verification_failed", storage.write_many, items)
    assert "bad.txt" not in storage.list_files()
    assert not [name for name in storage.list_files() if name.startswith(".distributor")]


@only("s3")
@pytest.mark.parametrize("workers", [s3_backend.WORKERS, 2])
def test_s3_delete_many_deletes_in_batches(backend, monkeypatch, workers):
    """A few paths are looked up with a HEAD each, many with one listing; either way only those
    that existed are reported."""
    monkeypatch.setattr(s3_backend, "DELETE_BATCH", 2)
    monkeypatch.setattr(s3_backend, "WORKERS", workers)
    storage = backend.open()
    storage.write_many(("f%d.txt" % i, lambda: [b"x"]) for i in range(5))
    listings = []
    list_files = storage.list_files
    monkeypatch.setattr(storage, "list_files", lambda: listings.append(1) or list_files())
    assert storage.delete_many(["f%d.txt" % i for i in range(6)]) == ["f%d.txt" % i for i in range(5)]
    assert len(listings) == (0 if workers >= 6 else 1)
    assert list_files() == []


def _in_flight(monkeypatch, client, operation: str, seconds: float) -> list:
    """Wrap one client operation so that each call lasts `seconds`; returns [most at once]."""
    lock, running, peak = threading.Lock(), [0], [0]
    call = getattr(client, operation)

    def counting(**kwargs):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            time.sleep(seconds)
            return call(**kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(client, operation, counting)
    return peak


@only("s3")
def test_s3_small_files_are_uploaded_workers_at_a_time(backend, monkeypatch):
    """Small files are latency bound: many PUTs overlap, never more than WORKERS."""
    storage = backend.open()
    peak = _in_flight(monkeypatch, storage.client, "put_object", 0.1)
    names = ["f%03d.txt" % i for i in range(3 * s3_backend.WORKERS)]
    storage.write_many((name, lambda name=name: [name.encode()]) for name in names)
    assert storage.list_files() == names
    assert 8 < peak[0] <= s3_backend.WORKERS, peak[0]


@only("s3")
def test_s3_bodies_over_small_body_are_held_large_bodies_at_a_time(backend, monkeypatch):
    """Memory stays bounded with many workers: only LARGE_BODIES files over SMALL_BODY are read
    whole at once; smaller ones in the same batch do not wait for them."""
    monkeypatch.setattr(s3_backend, "SMALL_BODY", 1024)
    monkeypatch.setattr(s3_backend, "LARGE_BODIES", 2)
    storage = backend.open()
    peak = _in_flight(monkeypatch, storage.client, "put_object", 0.1)
    items = [("big%d.bin" % i, lambda: [b"x" * 1000, b"y" * 1000]) for i in range(6)]
    storage.write_many(items)
    assert peak[0] == 2, peak[0]
    items += [("small%d.txt" % i, lambda: [b"z" * 100]) for i in range(6)]
    storage.write_many(items)
    assert peak[0] > 2, peak[0]
    assert storage.read_bytes("big0.bin", STATE_LIMIT) == b"x" * 1000 + b"y" * 1000
    assert all(storage._large_bodies.acquire(blocking=False) for _slot in range(2)), "a body slot leaked"


@only("s3")
def test_s3_missing_bucket_name_is_a_config_error(backend):
    expect_error("invalid_config", backend.open, BASE, "t1", bucket="")


# -- releases: links and renames ------------------------------------------------------------


RELEASING = ("local", "sftp", "memory")


def _mode(backend: Backend, path: str) -> int:
    return os.stat(backend.base_dir() / path).st_mode & 0o7777


def _names(backend: Backend, storage: Storage, path: str) -> int:
    """The link count of the file at `path` as the backend itself counts it (SFTP: the `ls -l`
    field of its listing, the count every check of SftpStorage reads)."""
    if backend.name == "local":
        return os.stat(backend.base_dir() / path, follow_symlinks=False).st_nlink
    if backend.name == "sftp":
        directory, _slash, name = storage._remote(path, look_at_name=False).rpartition("/")
        return storage._counted_in(directory, True)[name][0]
    return storage.files[storage._key(path)].links(storage.files)


@only(*RELEASING)
def test_entry_tells_each_kind_and_never_follows_a_link(backend):
    storage = backend.open()
    storage.write_bytes("gen/a.txt", b"a")
    storage.switch("current", "gen", "tmp-link")
    assert [storage.entry(path) for path in ("gen/a.txt", "gen", "current", "missing", "gone/missing")] == [
        ("file", None), ("directory", None), ("link", "gen"), ("absent", None), ("absent", None)]
    error = expect_error("storage_error", storage.entry, "current/a.txt")
    assert "symbolic link" in error.message


@only("local", "sftp")
def test_entry_reads_any_link_target_as_it_is_and_names_other_kinds(backend, tmp_path):
    base = backend.base_dir()
    base.mkdir(parents=True)
    os.symlink(b"../../outside/\xff-not-utf8", bytes(base / "odd"))
    os.symlink(tmp_path, base / "absolute")
    os.mkfifo(base / "pipe")
    storage = backend.open()
    assert storage.entry("odd") == ("link", "../../outside/\udcff-not-utf8")
    assert storage.entry("absolute") == ("link", str(tmp_path))
    assert storage.entry("pipe") == ("other", "a FIFO (named pipe)")


@only(*RELEASING)
def test_switch_makes_a_link_over_nothing_then_over_a_link_holding_exactly_its_target(backend):
    storage = backend.open()
    storage.write_bytes(".distributor-releases/site/one/index.html", b"one")
    storage.write_bytes(".distributor-releases/site/two/index.html", b"two")
    storage.switch("site", ".distributor-releases/site/one", ".distributor-releases/site/.distributor.switch.a")
    assert storage.entry("site") == ("link", ".distributor-releases/site/one")
    storage.switch("site", ".distributor-releases/site/two", ".distributor-releases/site/.distributor.switch.b")
    assert storage.entry("site") == ("link", ".distributor-releases/site/two")
    assert storage.list_files() == [".distributor-releases/site/one/index.html",
                                    ".distributor-releases/site/two/index.html", "site"]
    if backend.root is not None:
        assert os.readlink(backend.base_dir() / "site") == ".distributor-releases/site/two"
        assert (backend.base_dir() / "site" / "index.html").read_bytes() == b"two"


@only(*RELEASING)
@pytest.mark.parametrize("occupant", ["directory", "file"])
def test_switch_refuses_a_directory_or_a_file_at_the_path_and_leaves_no_temporary(backend, occupant):
    storage = backend.open()
    storage.write_bytes("site/index.html" if occupant == "directory" else "site", b"theirs")
    error = expect_error("storage_error", storage.switch, "site", "gen", "tmp-link")
    assert storage.describe("site") in error.message and "a " + occupant in error.message
    assert storage.entry("site") == (occupant, None)
    assert storage.entry("tmp-link") == ("absent", None)


@only(*RELEASING)
def test_switch_refuses_a_temporary_name_that_is_taken(backend):
    storage = backend.open()
    storage.write_bytes("tmp-link", b"someone's")
    error = expect_error("storage_error", storage.switch, "site", "gen", "tmp-link")
    assert storage.describe("tmp-link") in error.message
    assert storage.entry("site") == ("absent", None) and storage.read_bytes("tmp-link", 100) == b"someone's"


@only(*RELEASING)
def test_switch_removes_its_temporary_link_when_the_rename_fails(backend, monkeypatch):
    storage = backend.open()
    storage.switch("site", "one", "tmp-link")
    if backend.name == "local":
        def failing(*args, **kwargs):
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(os, "replace", failing)
    elif backend.name == "sftp":
        session = storage._open()
        real = session._request

        def failing(command, *args):
            if args and args[0] == "posix-rename@openssh.com":
                raise OSError(5, "Input/output error")
            return real(command, *args)
        monkeypatch.setattr(session, "_request", failing)
    else:
        def failing(op, path):
            if op == "switch":
                raise DistributorError("storage_error", "lost connection")
        storage.fault = failing
    expect_error("storage_error", storage.switch, "site", "two", "tmp-link")
    monkeypatch.undo()
    assert storage.entry("tmp-link") == ("absent", None)
    assert storage.entry("site") == ("link", "one")


@only(*RELEASING)
def test_rename_moves_a_directory_into_parents_it_makes(backend):
    storage = backend.open(directory_mode="0750")
    storage.write_bytes("site/a.txt", b"a")
    storage.write_bytes("site/sub/b.txt", b"b")
    storage.rename("site", ".distributor-releases/site/first")
    assert storage.list_files() == [".distributor-releases/site/first/a.txt", ".distributor-releases/site/first/sub/b.txt"]
    assert storage.entry("site") == ("absent", None)
    assert storage.read_bytes(".distributor-releases/site/first/sub/b.txt", 10) == b"b"
    if backend.root is not None:
        assert _mode(backend, ".distributor-releases") == _mode(backend, ".distributor-releases/site") == 0o750


@only(*RELEASING)
def test_rename_refuses_a_target_that_exists_and_a_source_that_does_not(backend):
    storage = backend.open()
    storage.write_bytes("site/a.txt", b"a")
    storage.write_bytes("taken/x.txt", b"x")
    error = expect_error("storage_error", storage.rename, "site", "taken")
    assert storage.describe("taken") in error.message
    if backend.root is not None:
        (backend.base_dir() / "empty").mkdir()
        expect_error("storage_error", storage.rename, "site", "empty")
        assert os.listdir(backend.base_dir() / "empty") == []
    error = expect_error("storage_error", storage.rename, "nothing", "new")
    assert storage.describe("nothing") in error.message
    assert storage.list_files() == ["site/a.txt", "taken/x.txt"]


@only(*RELEASING)
def test_directory_at_tells_a_directory_by_an_identity_a_rename_keeps_and_sees_nothing_else_as_one(backend):
    storage = backend.open()
    storage.write_bytes("site/a.txt", b"same")
    storage.write_bytes("other/a.txt", b"same")
    storage.switch("current", "site", "tmp-link")
    seen = storage.directory_at("site")
    assert seen is not None and seen.doubt is None
    assert [storage.directory_at(path) for path in ("site/a.txt", "current", "missing", "gone/missing")] == [None] * 4
    if backend.root is not None:
        os.utime(backend.base_dir() / "other", (0, 0))  # SFTP tells directories by their attributes
    assert storage.directory_at("other") != seen
    storage.rename("site", ".distributor-releases/site/first")
    assert storage.directory_at(".distributor-releases/site/first") == seen


@only(*RELEASING)
def test_survey_names_each_entry_that_is_no_directory_or_file_of_an_account_distributor_trusts(backend):
    storage = backend.open()
    storage.write_bytes("site/a.txt", b"a")
    storage.write_bytes("site/theirs/b.txt", b"b")
    storage.write_bytes("site/mine/c.txt", b"c")
    storage.switch("site/mine/link", "../a.txt", "site/mine/tmp-link")
    if backend.root is not None:
        for path in ("site/theirs", "site/theirs/b.txt"):
            os.chown(backend.base_dir() / path, 1000, 1000)
    else:
        storage.foreign.update({"%s/site/theirs" % BASE, "%s/site/theirs/b.txt" % BASE})
    seen, strangers = storage.at("site").survey()
    assert seen == storage.directory_at("site")
    assert sorted(path for path, _why in strangers) == ["mine/link", "theirs", "theirs/b.txt"]
    assert dict(strangers)["mine/link"] == "is a symbolic link"
    assert dict(strangers)["theirs"].startswith("is owned by " + ("another account" if backend.root is None else "uid 1000"))
    assert storage.at("nothing").survey() == (None, [])


@only(*RELEASING)
def test_link_many_gives_the_file_a_second_name_in_directories_it_makes(backend):
    storage = backend.open(directory_mode="0750")
    storage.write_bytes("one/docs/a.txt", b"alpha")
    storage.write_bytes("one/b.txt", b"beta")
    assert storage.link_many([("one/docs/a.txt", "two/docs/a.txt"), ("one/b.txt", "two/b.txt")]) == []
    assert storage.list_files() == ["one/b.txt", "one/docs/a.txt", "two/b.txt", "two/docs/a.txt"]
    assert _names(backend, storage, "two/docs/a.txt") == _names(backend, storage, "one/docs/a.txt") == 2
    if backend.root is not None:
        base = backend.base_dir()
        assert os.stat(base / "two/docs/a.txt").st_ino == os.stat(base / "one/docs/a.txt").st_ino
        assert _mode(backend, "two") == _mode(backend, "two/docs") == 0o750
    else:
        assert storage.files[storage._key("two/b.txt")] is storage.files[storage._key("one/b.txt")]


@only(*RELEASING)
def test_link_many_refuses_a_link_a_directory_a_missing_source_and_a_taken_target(backend):
    storage = backend.open()
    storage.write_bytes("one/a.txt", b"a")
    storage.write_bytes("two/a.txt", b"theirs")
    storage.switch("alias.txt", "one/a.txt", "tmp-link")
    error = expect_error("storage_error", storage.link_many, [("alias.txt", "two/alias.txt")])
    assert "symbolic link" in error.message and storage.describe("alias.txt") in error.message
    for source, target in (("one", "two/one"), ("one/missing.txt", "two/missing.txt"), ("one/a.txt", "two/a.txt")):
        error = expect_error("storage_error", storage.link_many, [(source, target)])
        assert storage.describe(source if target != "two/a.txt" else target) in error.message
    assert storage.list_files() == ["alias.txt", "one/a.txt", "two/a.txt"]
    assert storage.read_bytes("two/a.txt", 100) == b"theirs"


def swap_b_for_planted_when_linked(base, monkeypatch):
    """os.link that puts planted.txt in the place of one/b.txt just before linking b.txt: the
    source swapped between distributor's look and its link."""
    real_link = os.link

    def link(source, target, **kwargs):
        if target == "b.txt":
            os.replace(base / "planted.txt", base / "one/b.txt")
        real_link(source, target, **kwargs)
    monkeypatch.setattr(os, "link", link)


@only("local")
def test_local_link_many_undoes_and_refuses_a_link_whose_source_was_swapped_between_the_look_and_the_link(backend, monkeypatch):
    """A source swapped for another file after distributor looked at it must not be left linked
    into the new release: the link is looked at once made, undone, and the batch refused."""
    storage = backend.open()
    for name in ("one/a.txt", "one/b.txt", "planted.txt"):
        storage.write_bytes(name, name.encode())
    swap_b_for_planted_when_linked(backend.base_dir(), monkeypatch)
    error = expect_error("storage_error", storage.link_many, [("one/a.txt", "two/a.txt"), ("one/b.txt", "two/b.txt")])
    assert "not the one linked" in error.message and storage.describe("two/b.txt") in error.message
    assert sorted(os.listdir(backend.base_dir() / "two")) == ["a.txt"]


@only("local")
def test_local_link_many_undoes_a_swapped_link_also_when_a_later_pair_is_refused(backend, monkeypatch):
    """Links are looked at after each directory's batch: a refusal in the middle of one still
    has every link made before it looked at, and a swapped one undone."""
    storage = backend.open()
    for name in ("one/a.txt", "one/b.txt", "planted.txt"):
        storage.write_bytes(name, name.encode())
    storage.switch("one/c.txt", "a.txt", "tmp-link")
    swap_b_for_planted_when_linked(backend.base_dir(), monkeypatch)
    pairs = [("one/%s.txt" % n, "two/%s.txt" % n) for n in "abc"]
    expect_error("storage_error", storage.link_many, pairs)
    assert sorted(os.listdir(backend.base_dir() / "two")) == ["a.txt"]


@only("local")
def test_local_link_many_links_where_directory_entries_number_files_otherwise_than_the_files(backend, monkeypatch):
    """The sources are looked at in their directory's entries, which on some filesystems give
    other inode numbers than the files do: there each is looked at on its own, and linked."""
    storage = backend.open()
    for name in ("one/a.txt", "one/b.txt"):
        storage.write_bytes(name, b"x")
    real_scandir = os.scandir

    class Renumbered:
        def __init__(self, entry):
            self.entry, self.name = entry, entry.name

        def inode(self):
            return self.entry.inode() + 1

        def is_file(self, follow_symlinks=True):
            return self.entry.is_file(follow_symlinks=follow_symlinks)

    @contextlib.contextmanager
    def scandir(fd):
        with real_scandir(fd) as entries:
            yield map(Renumbered, entries)
    monkeypatch.setattr(os, "scandir", scandir)
    assert storage.link_many([("one/a.txt", "two/a.txt"), ("one/b.txt", "two/b.txt")]) == []
    assert _names(backend, storage, "two/b.txt") == 2


@only("local")
def test_local_link_many_hands_back_what_the_filesystem_cannot_link_and_links_the_rest(backend, monkeypatch):
    """Another filesystem below the root (EXDEV) cannot hold a second name: the caller writes
    that file again, and every other pair is still linked."""
    storage = backend.open()
    for name in ("one/a.txt", "one/b.txt", "one/c.txt"):
        storage.write_bytes(name, b"x")
    real_link = os.link

    def link(source, target, **kwargs):
        if source == "b.txt":
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_link(source, target, **kwargs)
    monkeypatch.setattr(os, "link", link)
    pairs = [("one/%s.txt" % n, "two/%s.txt" % n) for n in "abc"]
    assert storage.link_many(pairs) == [("one/b.txt", "two/b.txt")]
    assert storage.list_files() == ["one/a.txt", "one/b.txt", "one/c.txt", "two/a.txt", "two/c.txt"]


@only("local")
def test_local_link_many_and_delete_many_refuse_an_unclean_path_before_acting_on_any(backend):
    """The backend's own check, under ConfinedStorage's: a `..` handed to a descriptor-relative
    call would climb out of the directory it is relative to."""
    storage = backend.open()
    storage.write_bytes("one/a.txt", b"a")
    for call, batch in ((storage.link_many, [("one/a.txt", "two/a.txt"), ("one/a.txt", "two/../../x.txt")]),
                        (storage.delete_many, ["one/a.txt", "one/../one/a.txt"])):
        error = expect_error("storage_error", call, batch)
        assert "'..'" in error.message
    assert storage.list_files() == ["one/a.txt"]


@only("local")
def test_local_delete_many_reports_what_it_removed_in_the_order_asked_across_directories(backend):
    storage = backend.open()
    names = ["a/1.txt", "b/1.txt", "a/2.txt", "3.txt", "b/2.txt"]
    for name in names:
        storage.write_bytes(name, b"x")
    assert storage.delete_many(names + ["a/1.txt", "c/none.txt"]) == names
    assert storage.list_files() == [] and os.listdir(backend.base_dir()) == []


@only("sftp", "memory")
def test_link_many_hands_back_what_the_server_cannot_link_and_a_switch_is_refused_before_anything(backend):
    """An SFTP server without hardlink@openssh.com: the caller writes those files again; one
    without posix-rename@openssh.com cannot switch a link in one step, and no fallback exists."""
    storage = backend.open()
    storage.write_bytes("one/a.txt", b"a")
    if backend.name == "sftp":
        storage._extensions = frozenset()
        server = "sftp://%s@127.0.0.1:%d" % (backend.server.username, backend.server.port)
    else:
        storage.lacks = frozenset({"link", "switch"})
        server = storage.describe()
    pairs = [("one/a.txt", "two/a.txt")]
    assert storage.link_many(pairs) == pairs
    for call, args in ((storage.require_switch, ()), (storage.switch, ("site", "one", "tmp-link"))):
        error = expect_error("storage_error", call, *args)
        assert server in error.message and "posix-rename@openssh.com" in error.message
        assert "no non-atomic fallback" in error.message
    assert storage.list_files() == ["one/a.txt"]


@only("local", "sftp")
def test_require_switch_passes_where_the_switch_is_atomic(backend):
    backend.open().require_switch()


@only(*RELEASING)
def test_a_file_the_generations_share_is_read_only_where_each_holds_that_very_file(backend):
    """g2's a.txt has a second name in its sibling g1, which shared_links names: local storage
    (and the double) finds the same file there and reads it; SFTP, which has no inode numbers,
    cannot tell and reads no such file. A third name no sibling accounts for is refused by all."""
    storage = backend.open()
    storage.write_bytes("g1/a.txt", b"alpha")
    storage.link_many([("g1/a.txt", "g2/a.txt")])
    generation = storage.at("g2")
    error = expect_error("storage_error", generation.read_bytes, "a.txt", 100)
    assert "has 2 links" in error.message
    expect_error("storage_error", generation.measure, "a.txt", 5, True)
    generation.shared_links = {"a.txt": ("g1",)}
    if backend.name == "sftp":
        error = expect_error("storage_error", generation.read_bytes, "a.txt", 100)
        assert "over SFTP distributor cannot tell whether they are the release generations' own" in error.message
        expect_error("storage_error", generation.measure, "a.txt", 5, True)
        assert generation.measure("a.txt", 5, False) == (5, None), "a size reads nothing of the file"
    else:
        assert generation.read_bytes("a.txt", 100) == b"alpha"
        assert generation.measure("a.txt", 5, True) == (5, sha(b"alpha"))
        assert generation.doubt("a.txt", 5, sha(b"alpha")) is None
    storage.link_many([("g1/a.txt", "g3/a.txt")])
    error = expect_error("storage_error", generation.read_bytes, "a.txt", 100)
    assert "has 3 links" in error.message
    expect_error("storage_error", generation.measure, "a.txt", 5, True)
    expect_error("storage_error", generation.measure, "a.txt", 5, False)
    if backend.name != "sftp":
        assert generation.doubt("a.txt", 5, sha(b"alpha")) == "has 3 links, and distributor made 2"


def test_measure_many_answers_as_measure_does_file_by_file(backend):
    """Over more files than an SFTP window, in several directories: each answer is measure's,
    and a refusal that drift judges file by file (a file with a name distributor did not make)
    is given as the error instead of being raised."""
    storage = backend.open()
    storage.write_many([("d%d/f%03d.txt" % (index % 3, index), lambda index=index: [b"x" * index]) for index in range(70)])
    asked = sorted(("d%d/f%03d.txt" % (index % 3, index), 5 if index == 1 else index) for index in range(70))
    asked += [("gone.txt", 1), ("nowhere/gone.txt", 1)]
    if backend.name in RELEASING:
        storage.link_many([("d2/f002.txt", "elsewhere/f002.txt")])
    for digest in (False, True):
        found = storage.measure_many(asked, digest)
        for path, size in asked:
            try:
                expected = storage.measure(path, size, digest)
            except DistributorError as refused:
                expected = type(refused)
            assert (type(found[path]) if isinstance(found[path], Exception) else found[path]) == expected, path
        assert found["d1/f001.txt"] == (1, None) and found["gone.txt"] is None
        assert found["d2/f002.txt"].reason == "storage_error" if backend.name in RELEASING else found["d2/f002.txt"][0] == 2


@only("local", "memory")
def test_a_file_given_as_many_names_as_the_generations_share_is_refused_unless_they_hold_that_very_file(backend):
    """g2's a.txt, shared with g1 by the records, is replaced by a hard link to a file of
    someone else's that has exactly two names, as many as distributor made: the count matches,
    the file is not g1's. It is neither read, nor measured, nor vouched for."""
    storage = backend.open()
    storage.write_bytes("g1/a.txt", b"alpha")
    storage.link_many([("g1/a.txt", "g2/a.txt")])
    storage.write_bytes("theirs/a.txt", b"alpha")
    if backend.name == "local":
        os.unlink(backend.base_dir() / "g2/a.txt")
        os.link(backend.base_dir() / "theirs/a.txt", backend.base_dir() / "g2/a.txt")
    else:
        del storage.files[storage._key("g2/a.txt")]
        hard_link(storage.files, storage._key("theirs/a.txt"), storage._key("g2/a.txt"))
    assert _names(backend, storage, "g2/a.txt") == 2
    generation = storage.at("g2")
    generation.shared_links = {"a.txt": ("g1",)}
    error = expect_error("storage_error", generation.read_bytes, "a.txt", 100)
    assert "has 2 links" in error.message
    expect_error("storage_error", generation.measure, "a.txt", 5, True)
    assert generation.doubt("a.txt", 5, sha(b"alpha")) == "has 2 links, and a file distributor writes has one"


@only(*RELEASING)
def test_views_at_another_base_act_below_it_only(backend):
    storage = ConfinedStorage(backend.open())
    backend.opened.append(storage)
    home = storage.at(".distributor-releases/site")
    generation = home.at("one")
    generation.write_bytes("docs/a.txt", b"a")
    assert generation.list_files() == ["docs/a.txt"]
    assert home.entry("one/docs") == ("directory", None)
    assert storage.list_files() == [".distributor-releases/site/one/docs/a.txt"]
    assert generation.describe("docs/a.txt") == storage.describe(".distributor-releases/site/one/docs/a.txt")
    for call, args in ((storage.at, ("../up",)), (home.at, ("/abs",)), (generation.read_bytes, ("../two/x", 10)),
                       (generation.entry, ("../one",)), (home.switch, ("site", "../../elsewhere", "tmp")),
                       (home.link_many, ([("one/docs/a.txt", "../x")],)), (home.rename, ("one", "../moved"))):
        expect_error("invalid_state", call, *args)
    generation.close()
    assert storage.read_bytes(".distributor-releases/site/one/docs/a.txt", 10) == b"a"


@only(*RELEASING)
def test_a_lock_taken_through_a_view_guards_the_changes_made_through_every_view(backend):
    storage = ConfinedStorage(backend.open(token="t1"))
    thief = backend.open(base=BASE + "/home", token="t2")
    backend.opened.append(storage)
    home = storage.at("home")
    generation = home.at("one")
    with home.lock(timeout=5):
        generation.write_bytes(".distributor.json", b"{}")
        thief.delete(LOCK_NAME)
        with thief.lock(timeout=5):
            expect_error("locked", generation.write_bytes, ".distributor.json", b"{}")
            expect_error("locked", home.switch, "current", "one", "tmp-link")
    assert home.entry("current") == ("absent", None)


@only("sftp")
def test_views_share_the_one_sftp_connection_which_closes_with_the_storage(backend, monkeypatch):
    storage = backend.open()
    connects = []
    real = storage._chain.connect
    monkeypatch.setattr(storage._chain, "connect", lambda: connects.append(1) or real())
    view = storage.at("one")
    view.write_bytes("a.txt", b"a")
    inner = view.at("two")
    inner.write_bytes("b.txt", b"b")
    assert storage.list_files() == ["one/a.txt", "one/two/b.txt"]
    assert len(connects) == 1 and view._client is storage._client is inner._client
    view.close()
    assert storage.read_bytes("one/a.txt", 10) == b"a" and inner.read_bytes("b.txt", 10) == b"b"
    transport = storage._client.get_transport()
    storage.close()
    assert not transport.is_active()
    expect_error("storage_error", inner.read_bytes, "b.txt", 10)


@only("s3")
def test_s3_offers_no_links_or_renames_and_says_so(backend):
    storage = backend.open()
    calls = ((storage.at, ("one",)), (storage.entry, ("site",)), (storage.switch, ("site", "one", "tmp")),
             (storage.require_switch, ()), (storage.rename, ("site", "one")), (storage.link_many, ([("a", "b")],)))
    for call, args in calls:
        error = expect_error("storage_error", call, *args)
        assert "releases need" in error.message and "s3://" in error.message


# -- missing libraries --------------------------------------------------------------------


@pytest.mark.parametrize(
    "library, storage",
    [
        ("paramiko", {"type": "sftp", "host": "127.0.0.1", "root": "/srv"}),
        ("boto3", {"type": "s3", "bucket": "b"}),
    ],
    ids=["sftp", "s3"],
)
def test_missing_sdk_is_reported_as_missing_library(monkeypatch, library, storage):
    monkeypatch.setitem(sys.modules, library, None)
    with pytest.raises(MissingLibrary) as caught:
        open_storage(storage, BASE, "t1")
    assert caught.value.library == library
    assert "ImportError" in caught.value.traceback or "ModuleNotFoundError" in caught.value.traceback


def test_a_backend_missing_a_method_of_the_interface_fails_when_it_is_made():
    """The interface's abstract methods: a backend without `measure` is refused at construction,
    before any run could reach the call."""
    class Partial(MemoryStorage):
        measure = Storage.measure

    with pytest.raises(TypeError, match="measure"):
        Partial({}, "", "t")

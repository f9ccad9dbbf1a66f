# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files a hostile neighbour puts where distributor reads or writes, on the real local
filesystem and the real sshd: FIFOs, devices and links where a regular file belongs, staging
names taken in advance, directories swapped for links mid-write, directories that cannot be
listed, names that are not UTF-8. Each is refused with a reason, never hangs, and nothing
outside the bundle path changes."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import STATE_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.bundle import Bundle
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import (
    JOURNAL_NAME, LOCK_NAME, STATE_NAME)
from ansible_collections.distributor.core.plugins.module_utils._distributor.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.regular import NotRegularFile, open_regular
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.base import staging_dir
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

from builders import write_bundle
from snapshots import snapshot

BASE = "site"
TOKEN = "t1"


@contextmanager
def no_hang(seconds: int = 10):
    """A read that blocks on a FIFO fails the test instead of hanging the run."""
    def hung(_signum, _frame):
        raise AssertionError("blocked for %ds: something opened a FIFO for reading" % seconds)

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def expect_error(reason: str, call, *args) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        call(*args)
    assert caught.value.reason == reason, caught.value.message
    return caught.value


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    """(storage opener, root, outside): a root, and a neighbour's directory outside it that a
    planted link points at."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / BASE).mkdir(parents=True)
    outside.mkdir()
    (outside / "a.html").write_bytes(b"the neighbour's a.html")
    if request.param == "local":
        config = {"type": "local", "root": str(root)}
    else:
        config = request.getfixturevalue("sshd_server").storage(str(root))
    opened = []

    def open_one():
        opened.append(open_storage(config, BASE, TOKEN))
        return opened[-1]

    yield open_one, root, outside
    for storage in opened:
        storage.close()


# -- no hangs: only regular files are read ------------------------------------------------


def test_open_regular_refuses_a_fifo_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with no_hang(), pytest.raises(NotRegularFile) as caught:
        open_regular(str(tmp_path / "pipe"))
    assert caught.value.kind == "a FIFO (named pipe)"


def test_open_regular_refuses_a_fifo_swapped_in_after_the_look(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "file").write_bytes(b"x")
    regular = os.lstat(tmp_path / "file")
    monkeypatch.setattr(os, "lstat", lambda path: regular)
    with no_hang(), pytest.raises(NotRegularFile):
        open_regular(str(tmp_path / "pipe"))


def test_open_regular_refuses_links_and_devices(tmp_path):
    os.symlink("/etc/hostname", tmp_path / "link")
    for path, kind in ((tmp_path / "link", "a symbolic link"), ("/dev/zero", "a character device")):
        with pytest.raises(NotRegularFile) as caught:
            open_regular(str(path))
        assert caught.value.kind == kind


def test_a_bundle_file_swapped_for_a_fifo_after_load_is_invalid_manifest(tmp_path):
    bundle = Bundle.load(write_bundle(tmp_path / "b", {"page.html": b"<p>hi</p>"}))
    (tmp_path / "b" / "page.html").unlink()
    os.mkfifo(tmp_path / "b" / "page.html")
    with no_hang():
        error = expect_error("invalid_manifest", bundle.read, "page.html")
    assert "page.html is a FIFO (named pipe), not a regular file" in error.message


def test_a_fifo_listed_in_a_bundle_or_as_its_manifest_is_refused_at_load(tmp_path):
    write_bundle(tmp_path / "b", {"page.html": b"<p>hi</p>"})
    (tmp_path / "b" / "page.html").unlink()
    os.mkfifo(tmp_path / "b" / "page.html")
    with no_hang():
        assert "is a FIFO (named pipe), not a regular file" in expect_error("invalid_manifest", Bundle.load, str(tmp_path / "b")).message
    (tmp_path / "b" / "manifest.json").unlink()
    os.mkfifo(tmp_path / "b" / "manifest.json")
    with no_hang():
        assert "manifest.json is a FIFO" in expect_error("invalid_manifest", Bundle.load, str(tmp_path / "b")).message


@pytest.mark.parametrize("name", [STATE_NAME, JOURNAL_NAME])
def test_a_fifo_at_a_reserved_name_is_storage_error_without_blocking(place, name):
    open_one, root, _outside = place
    os.mkfifo(root / BASE / name)
    with no_hang():
        error = expect_error("storage_error", open_one().read_bytes, name, STATE_LIMIT)
    assert name in error.message and "is a FIFO (named pipe), not a regular file" in error.message


@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir], ids=["fifo", "directory"])
def test_a_fifo_or_directory_at_the_lock_is_storage_error_without_blocking(place, make):
    open_one, root, _outside = place
    make(root / BASE / LOCK_NAME)
    with no_hang():
        with pytest.raises(DistributorError) as caught:
            with open_one().lock(timeout=1):
                pass
    assert caught.value.reason == "storage_error" and LOCK_NAME in caught.value.message, caught.value.message


# -- staged files: exclusive, in a directory of the attempt's own -------------------------


@pytest.mark.parametrize("plant", ["link", "directory"])
def test_a_staging_directory_planted_in_advance_is_refused_and_nothing_outside_changes(place, plant):
    open_one, root, outside = place
    planted = root / BASE / staging_dir("a.html", TOKEN)
    if plant == "link":
        os.symlink(outside, planted)
    else:
        planted.mkdir()
        os.symlink(outside / "a.html", planted / "a.html")
    before = snapshot(outside)
    error = expect_error("storage_error", open_one().write_bytes, "a.html", b"ours")
    assert ".distributor.tmp.%s" % TOKEN in error.message
    assert snapshot(outside) == before
    assert not (root / BASE / "a.html").exists()


def test_staged_files_leave_no_staging_directory_behind(place):
    open_one, root, _outside = place
    storage = open_one()
    storage.write_many([("a.html", lambda: [b"a"]), ("docs/b.html", lambda: [b"b"])])
    storage.write_bytes("docs/c.html", b"c")
    assert sorted(os.listdir(root / BASE)) == ["a.html", "docs"]
    assert sorted(os.listdir(root / BASE / "docs")) == ["b.html", "c.html"]


def test_a_directory_swapped_for_a_link_mid_write_is_refused_and_nothing_outside_changes(place):
    """docs is seen and written into, then swapped while another directory's file is written;
    the next write into docs must not go through the link, although docs was checked before.
    The events keep that order where writes run concurrently (SFTP channels)."""
    open_one, root, outside = place
    storage = open_one()
    docs = root / BASE / "docs"
    sent, swapped = threading.Event(), threading.Event()

    def send_then_tell():
        yield b"ours"
        sent.set()

    def swap_then_send():
        assert sent.wait(10)
        os.rename(docs, root / BASE / "moved")
        os.symlink(outside, docs)
        swapped.set()
        yield b"ours"

    def after_the_swap():
        assert swapped.wait(10)
        return [b"ours"]

    before = snapshot(outside)
    items = [("docs/x.html", send_then_tell), ("other/b.html", swap_then_send), ("docs/a.html", after_the_swap)]
    expect_error("storage_error", storage.write_many, items)
    assert snapshot(outside) == before


def test_a_directory_swapped_for_a_link_before_a_delete_deletes_nothing_outside(place):
    open_one, root, outside = place
    storage = open_one()
    storage.write_bytes("docs/a.html", b"ours")
    assert storage.list_files() == ["docs/a.html"]
    docs = root / BASE / "docs"
    os.rename(docs, root / BASE / "moved")
    os.symlink(outside, docs)
    before = snapshot(outside)
    expect_error("storage_error", storage.delete, "docs/a.html")
    assert snapshot(outside) == before


def test_recovery_removes_the_empty_staging_directory_a_dead_attempt_left(place):
    open_one, root, _outside = place
    (root / BASE / staging_dir("docs/a.html", "dead")).mkdir(parents=True)
    (root / BASE / "docs" / "a.html").write_bytes(b"renamed before the attempt died")
    storage = open_one()
    assert storage.delete_many(["docs/a.html", "docs/.distributor.tmp.dead/a.html"]) == ["docs/a.html"]
    assert os.listdir(root / BASE) == []


# -- listings: nothing hidden, any name ---------------------------------------------------


def test_an_unlistable_directory_is_storage_error_not_empty_local(tmp_path, monkeypatch):
    """Root reads any directory, so the refusal the kernel gives other accounts is simulated."""
    (tmp_path / "root" / BASE / "hidden").mkdir(parents=True)
    (tmp_path / "root" / BASE / "hidden" / "page.html").write_bytes(b"theirs")
    real_scandir = os.scandir

    def scandir(path):
        if (os.readlink("/proc/self/fd/%d" % path) if isinstance(path, int) else str(path)).endswith("hidden"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    storage = open_storage({"type": "local", "root": str(tmp_path / "root")}, BASE, TOKEN)
    error = expect_error("storage_error", storage.list_files)
    assert "cannot list %s" % (tmp_path / "root" / BASE / "hidden") in error.message


def test_a_directory_removed_while_listing_is_no_error(tmp_path):
    storage = open_storage({"type": "local", "root": str(tmp_path / "root")}, "missing/base", TOKEN)
    assert storage.list_files() == []


def test_sftp_lists_and_deletes_names_that_are_not_utf8(place):
    open_one, root, _outside = place
    site = os.path.join(str(root), BASE).encode()
    os.mkdir(os.path.join(site, b"d\xff"))
    with open(os.path.join(site, b"d\xff", b"caf\xe9.html"), "wb") as handle:
        handle.write(b"theirs")
    storage = open_one()
    name = b"d\xff/caf\xe9.html".decode("utf-8", "surrogateescape")
    assert storage.list_files() == [name]
    assert storage.exists(name)
    assert storage.delete(name)
    assert os.listdir(site) == []


@pytest.mark.parametrize("backend", ["local", "sftp"])
def test_force_removes_names_that_are_not_utf8_and_invalidates_the_urls_of_their_bytes(backend, tmp_path, request):
    """A listed name that is not UTF-8 is never an output, so force deletes it; with a base_url
    the CDN path of each deleted file is made from its bytes (quote refused the surrogate escapes
    that carry them: a traceback without a reason)."""
    site = os.path.join(str(tmp_path / "root"), BASE).encode()
    os.makedirs(os.path.join(site, b"d\xff"))
    for name in (b"caf\xe9.txt", b"d\xff/caf\xe9.html"):
        with open(os.path.join(site, name), "wb") as handle:
            handle.write(b"theirs")
    storage = ({"type": "local", "root": str(tmp_path / "root")} if backend == "local"
               else request.getfixturevalue("sshd_server").storage(str(tmp_path / "root")))
    destination = {"id": "archive", "storage": storage, "path": BASE, "links": {"base_url": "https://cdn.example.com/site/"}}
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>v1</p>"})
    expect_error("unmanaged", lambda: publish(bundle, {"id": "reports"}, destination))
    result = publish(bundle, {"id": "reports"}, destination, force=True)
    assert sorted(result["deleted"]) == ["caf\udce9.txt", "d\udcff/caf\udce9.html"]
    assert result["invalidation_paths"] == ["/site/", "/site/caf%E9.txt", "/site/d%FF/caf%E9.html", "/site/index.html"]
    assert sorted(os.listdir(site)) == [b".distributor.json", b"index.html"]

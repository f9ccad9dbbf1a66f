# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files a hostile neighbour puts where distributor reads or writes, on the real local
filesystem and the real sshd: FIFOs, devices and links where a regular file belongs, staging
names taken in advance, directories swapped for links mid-write, directories that cannot be
listed, names that are not UTF-8. Each is refused with a reason, never hangs, and nothing
outside the bundle path changes."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import threading

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import STATE_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.bundle import Bundle
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import (
    JOURNAL_NAME, LOCK_NAME, STATE_NAME)
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.regular import (
    NotRegularFile, kind_of, open_regular)
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp import storage as sftp
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp import lock as sftp_lock
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.base import staging_dir
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

from builders import write_bundle
from hangs import no_hang
from snapshots import snapshot

BASE = "site"
TOKEN = "t1"


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


@pytest.mark.parametrize("content,problem", [
    (b"<p>hi</p>!", "size mismatch (manifest 9 bytes, file more than 9 bytes)"),
    (b"<p>hi</p", "size mismatch (manifest 9 bytes, file 8 bytes)"),
    (b"<p>HI</p>", "sha256 mismatch"),
])
def test_a_bundle_file_changed_after_load_is_verification_failed_before_a_byte_is_handed_on(tmp_path, content, problem):
    bundle = Bundle.load(write_bundle(tmp_path / "b", {"page.html": b"<p>hi</p>"}))
    (tmp_path / "b" / "page.html").write_bytes(content)
    assert problem in expect_error("verification_failed", bundle.read, "page.html").message


def test_a_bundle_file_swapped_for_a_link_after_load_is_invalid_manifest_and_not_followed(tmp_path):
    """The read does not look at the name again (load did): the open itself refuses the link."""
    (tmp_path / "secret").write_bytes(b"<p>no</p>")
    bundle = Bundle.load(write_bundle(tmp_path / "b", {"page.html": b"<p>hi</p>"}))
    (tmp_path / "b" / "page.html").unlink()
    os.symlink(tmp_path / "secret", tmp_path / "b" / "page.html")
    error = expect_error("invalid_manifest", bundle.read, "page.html")
    assert "page.html is a symbolic link, not a regular file" in error.message


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


# -- FIFOs, sockets and devices at every name, in every operation --------------------------


def _socket_at(path) -> None:
    """Bound at a short name, then moved: a socket's path may hold only 107 bytes."""
    with tempfile.TemporaryDirectory(dir="/tmp") as short, socket.socket(socket.AF_UNIX) as bound:
        bound.bind(os.path.join(short, "s"))
        os.rename(os.path.join(short, "s"), path)


SPECIAL = {
    "fifo": (os.mkfifo, "a FIFO (named pipe)"),
    "socket": (_socket_at, "a socket"),
    # /dev/zero's numbers: read, it never ends. Only root may make one (tests run as root).
    "device": (lambda path: os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5)), "a character device"),
}
OPERATIONS = ("publish", "check_diff", "verify", "prune", "reconcile_state", "state_info")
ENDED = dict.fromkeys(OPERATIONS, "ok")
REFUSED = dict.fromkeys(OPERATIONS, "storage_error")
# How each operation ends with something other than a regular file at each name: a result, or
# the reason of a refusal naming it. At an output it is drift, and no run deletes or writes over
# it: `unmanaged` (see the next test; authorship.py); at a staging
# name the attempt's own staging directory cannot be made, which every write needs (the state's
# too), and SFTP parks the files it deletes there.
ENDS = {
    "a.html": dict(ENDED, publish="unmanaged", check_diff="unmanaged", verify="unmanaged", prune="unmanaged"),
    "docs": dict(ENDED, publish="unmanaged", check_diff="unmanaged", verify="storage_error", prune="storage_error"),
    "": REFUSED,
    STATE_NAME: REFUSED,
    JOURNAL_NAME: REFUSED,
    LOCK_NAME: dict(REFUSED, check_diff="ok"),  # check mode takes no lock
    staging_dir("a.html", TOKEN): dict(ENDED, publish="storage_error", prune="storage_error"),
    staging_dir("docs/b.html", TOKEN): dict(ENDED, publish="storage_error",
                                            prune={"local": "ok", "sftp": "storage_error"}),
}
# Every kind at every name locally; over SFTP, where each run costs round trips and the kinds
# differ only in the st_mode the server reports, FIFOs (what would hang) everywhere.
PLANTINGS = ([("local", kind, name) for kind in SPECIAL for name in ENDS]
             + [("sftp", "fifo", name) for name in ENDS]
             + [("sftp", kind, STATE_NAME) for kind in ("socket", "device")])
PIPELINE = {"id": "reports"}
FIRST = {"a.html": b"<p>a1</p>", "docs/b.html": b"<p>b1</p>"}


def operations(destination: dict, first: str, second: str) -> dict:
    """Each operation as a call, its attempt token fixed: a staging name planted ahead is its own."""
    fixed = dict(opener=lambda config, base, _token: open_storage(config, base, TOKEN))
    return {
        "publish": lambda: publish(second, PIPELINE, destination, lock_timeout=1, **fixed),
        "check_diff": lambda: publish(second, PIPELINE, destination, check_mode=True, diff_contents=True, **fixed),
        "verify": lambda: publish(first, PIPELINE, destination, lock_timeout=1, verify="sha256", **fixed),
        "prune": lambda: prune("reports", destination, lock_timeout=1, **fixed),
        "reconcile_state": lambda: reconcile_state("reports", destination, lock_timeout=1, **fixed),
        "state_info": lambda: state_info(destination, pipeline_id="reports", verify="sha256", **fixed),
    }


@pytest.fixture
def published(request, tmp_path):
    """A factory: (destination, root, the two bundles) on `backend`, the first published, with
    `retention` expiring every output (so that prune deletes)."""
    def publish_on(backend: str):
        root = tmp_path / "root"
        (root / BASE).mkdir(parents=True)
        storage = {"type": "local", "root": str(root)}
        if backend == "sftp":
            storage = request.getfixturevalue("sshd_server").storage(str(root))
        destination = {"id": "archive", "storage": storage, "path": BASE, "retention": {"max_outputs": 0}}
        first = write_bundle(tmp_path / "first", FIRST)
        second = write_bundle(tmp_path / "second", {"a.html": b"<p>a2</p>", "docs/b.html": b"<p>b2</p>"},
                              created="2026-06-05T11:55:00Z")
        publish(first, PIPELINE, destination)
        return destination, root, first, second
    return publish_on


def plant(path, kind: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    SPECIAL[kind][0](path)


@pytest.mark.parametrize("backend, kind, name", PLANTINGS)
def test_a_fifo_socket_or_device_anywhere_ends_every_operation_in_a_result_or_a_reason_naming_it(
        published, tmp_path, backend, kind, name):
    if kind == "device" and os.geteuid() != 0:
        pytest.skip("only root makes device nodes")
    destination, root, first, second = published(backend)
    kept = tmp_path / "kept"
    shutil.copytree(root / BASE, kept)
    outside = snapshot(tmp_path, skip=("root", "kept"))
    where = os.path.join(BASE, name) if name else BASE
    for operation, call in operations(destination, first, second).items():
        plant(root / BASE, "fifo")  # whatever the last operation left there goes
        os.unlink(root / BASE)
        shutil.copytree(kept, root / BASE)
        plant(root / where, kind)
        with no_hang(20, "%s with %s at %s" % (operation, kind, where)):
            try:
                call()
                ended = "ok"
            except DistributorError as error:
                ended = error.reason
                assert (name or BASE) in error.message, error.message
                assert kind_of(os.lstat(root / where).st_mode) == SPECIAL[kind][1], "refused, yet not left as it was"
                if name in (STATE_NAME, JOURNAL_NAME, LOCK_NAME):
                    assert SPECIAL[kind][1] in error.message, error.message
        expected = ENDS[name][operation]
        assert ended == (expected[backend] if isinstance(expected, dict) else expected), (operation, ended)
        assert snapshot(tmp_path, skip=("root", "kept")) == outside


@pytest.mark.parametrize("backend", ["local", "sftp"])
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_fifo_socket_or_device_at_an_output_is_drift_never_opened(published, backend, kind):
    """Not what the record says, so it has drifted: state_info lists it. Not a file distributor
    wrote either, so no run writes over it (authorship.py): a check with --diff, a publish and
    verify refuse, `unmanaged`, naming it, and leave it as it is, unopened."""
    if kind == "device" and os.geteuid() != 0:
        pytest.skip("only root makes device nodes")
    destination, root, first, second = published(backend)
    plant(root / BASE / "a.html", kind)
    calls = operations(destination, first, second)
    with no_hang(20):
        assert calls["state_info"]()["drifted"] == ["a.html"]
        for operation in ("check_diff", "publish", "verify"):
            error = expect_error("unmanaged", calls[operation])
            assert "a.html (is %s)" % SPECIAL[kind][1] in error.message, (operation, error.message)
    assert kind_of(os.lstat(root / BASE / "a.html").st_mode) == SPECIAL[kind][1]


@pytest.mark.parametrize("backend", ["local", "sftp"])
def test_a_link_at_an_output_stays_refused_in_every_operation_that_reads_it(published, tmp_path, backend):
    """A link is refused wherever it is: a look at its content (verify) refuses it, and a run
    that would write over it refuses before that (authorship.py), naming it."""
    destination, root, first, second = published(backend)
    os.unlink(root / BASE / "a.html")
    os.symlink(tmp_path / "first" / "a.html", root / BASE / "a.html")
    calls = operations(destination, first, second)
    for operation in ("publish", "check_diff"):
        error = expect_error("unmanaged", calls[operation])
        assert "a.html (is a symbolic link)" in error.message, (operation, error.message)
    for operation in ("verify", "state_info"):
        error = expect_error("storage_error", calls[operation])
        assert "/site/a.html is a symbolic link" in error.message, (operation, error.message)
    assert os.path.islink(root / BASE / "a.html")


def test_sftp_gives_up_an_open_that_a_fifo_swapped_in_after_the_look_holds(request, tmp_path, monkeypatch):
    """SFTP has no non-blocking open: the server blocks opening a FIFO. One swapped in between
    the look and the open ends the read with a reason after OPEN_TIMEOUT, not a hang."""
    monkeypatch.setattr(sftp, "OPEN_TIMEOUT", 1)
    root = tmp_path / "root"
    (root / BASE).mkdir(parents=True)
    os.mkfifo(root / "pipe")
    config = request.getfixturevalue("sshd_server").storage(str(root))
    for read in (lambda storage: storage.read_bytes("a.html", 100), lambda storage: storage.measure("a.html", 4, True)):
        storage = open_storage(config, BASE, TOKEN)
        storage.write_bytes("a.html", b"ours")
        counted = storage._alone

        def count_then_swap(*looked_at):
            """Right after the look at a.html (an lstat, its link count), right before its open."""
            counted(*looked_at)
            os.rename(root / "pipe", root / BASE / "a.html")

        monkeypatch.setattr(storage, "_alone", count_then_swap)
        try:
            with no_hang(10, "the server's open of a FIFO held the run"):
                error = expect_error("storage_error", read, storage)
        finally:
            release = os.open(root / BASE / "a.html", os.O_WRONLY | os.O_NONBLOCK)  # the server's open returns
            os.close(release)
            os.rename(root / BASE / "a.html", root / "pipe")
            storage.close()
        assert "/site/a.html: the server did not open it within 1 seconds" in error.message, error.message


def test_sftp_gives_up_reading_a_lock_that_a_fifo_was_swapped_for_after_the_look(request, tmp_path, monkeypatch):
    """The same window on the lock's own channel: a contender reads the holder's record."""
    monkeypatch.setattr(sftp, "OPEN_TIMEOUT", 1)
    root = tmp_path / "root"
    (root / BASE).mkdir(parents=True)
    (root / BASE / LOCK_NAME).write_bytes(b'{"holder": "another run"}')
    os.mkfifo(root / "pipe")
    storage = open_storage(request.getfixturevalue("sshd_server").storage(str(root)), BASE, TOKEN)
    judged = sftp_lock.kind_of

    def judge_then_swap(mode):
        """Right after the look at the record (an lstat), right before its open."""
        if os.path.exists(root / "pipe"):
            os.rename(root / "pipe", root / BASE / LOCK_NAME)
        return judged(mode)

    monkeypatch.setattr(sftp_lock, "kind_of", judge_then_swap)
    try:
        with no_hang(10, "the server's open of a FIFO held the run"):
            error = expect_error("storage_error", lambda: storage.lock(timeout=5).__enter__())
    finally:
        release = os.open(root / BASE / LOCK_NAME, os.O_WRONLY | os.O_NONBLOCK)  # the server's open returns
        os.close(release)
        storage.close()
    assert "/site/.distributor.lock: the server did not open it within 1 seconds" in error.message, error.message


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

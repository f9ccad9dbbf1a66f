# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP writes in windows of requests sent ahead of their replies (sftp_batch): what the checks
guarantee must hold across windows and channels, not only for a file or two. A batch of several
windows is all staged before any file is renamed; a link planted at the target of the batch's last
file is refused before the first rename; a large file's writes (more than a channel may have in
flight) all arrive, in order; and every request of a publish is one SFTP request, fewer than the
ten a file took when each was waited for, a sync of each file among them where the server offers
one (and a release switch warned of it where it does not). Deletes and the looks at a release
checked whole go in windows the same way."""

from __future__ import annotations

import os
import struct

import paramiko
import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp import batch as sftp_batch
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp import wire as sftp_wire
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

from services import without_extension

LIMIT = 1 << 24
COUNT = sftp_batch.WINDOW * 2 + 5  # three windows


@pytest.fixture
def place(tmp_path, sshd_server):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "last.txt").write_bytes(b"the neighbour's")
    storage = open_storage(sshd_server.storage(str(root)), "site", "t1")
    yield storage, root / "site", outside
    storage.close()


def names() -> list[str]:
    return ["d%d/f%03d.txt" % (index % 3, index) for index in range(COUNT)] + ["last.txt"]


def failing(data: bytes):
    yield data
    raise DistributorError("verification_failed", "the source changed")


def test_a_failure_in_the_last_window_leaves_every_old_output_of_the_batch(place):
    storage, site, _outside = place
    storage.write_many((name, lambda name=name: [b"old " + name.encode()]) for name in names())
    items = [(name, lambda name=name: [b"new"]) for name in names()[:-1]] + [("last.txt", lambda: failing(b"new"))]
    with pytest.raises(DistributorError) as caught:
        storage.write_many(items)
    assert caught.value.reason == "verification_failed"
    assert all(storage.read_bytes(name, LIMIT) == b"old " + name.encode() for name in names())
    assert storage.list_files() == sorted(names())


def test_a_link_at_the_last_target_of_a_batch_is_refused_before_any_rename(place):
    storage, site, outside = place
    storage.write_many((name, lambda name=name: [b"old"]) for name in names()[:-1])
    os.symlink(outside / "last.txt", site / "last.txt")
    with pytest.raises(DistributorError) as caught:
        storage.write_many((name, lambda: [b"new"]) for name in names())
    assert caught.value.reason == "storage_error" and "symbolic link" in caught.value.message
    assert {storage.read_bytes(name, LIMIT) for name in names()[:-1]} == {b"old"}
    assert (outside / "last.txt").read_bytes() == b"the neighbour's"
    assert not [name for name in storage.list_files() if ".distributor" in name]


def test_a_large_file_arrives_whole_with_more_writes_than_a_channel_keeps_in_flight(place):
    storage, _site, _outside = place
    chunks = [bytes([index]) * (1 << 20) for index in range(3)]  # 96 writes of 32 KiB
    storage.write_many([("big.bin", lambda: chunks), ("small.txt", lambda: [b"s"])])
    assert storage.read_bytes("big.bin", LIMIT) == b"".join(chunks)
    assert storage.read_bytes("small.txt", LIMIT) == b"s"


def sent(monkeypatch) -> tuple[list, list]:
    """(requests, writes): every SFTP request the client writes from now on, as its command or,
    for an extended request, its name; and the size of each write to the channel."""
    requests, writes = [], []
    real = paramiko.SFTPClient._write_all

    def counting(session, out):
        writes.append(len(out))
        offset = 0
        while offset < len(out):
            command = out[offset + 4]
            if command == paramiko.sftp.CMD_EXTENDED:
                size = struct.unpack(">I", out[offset + 9:offset + 13])[0]
                command = out[offset + 13:offset + 13 + size].decode()
            requests.append(command)
            offset += 4 + struct.unpack(">I", out[offset:offset + 4])[0]
        return real(session, out)
    monkeypatch.setattr(paramiko.SFTPClient, "_write_all", counting)
    return requests, writes


def test_a_file_costs_eight_requests_sent_ahead_of_their_replies_and_written_together(place, monkeypatch):
    """lstat of the target, open, write, fsync, fstat, close, lstat of the staged name, rename;
    the directories on the way are looked at once a window. The requests go out many to a
    write: the sync costs no round trip of its own."""
    storage, _site, _outside = place
    storage.write_bytes("first.txt", b"connects, makes the root")
    requests, writes = sent(monkeypatch)
    storage.write_many(("f%03d.txt" % index, lambda: [b"x"]) for index in range(sftp_batch.WINDOW))
    assert 8 * sftp_batch.WINDOW <= len(requests) < 8.2 * sftp_batch.WINDOW
    assert requests.count(sftp_wire.FSYNC) == sftp_batch.WINDOW
    assert len(writes) < len(requests) / 20


def test_a_delete_costs_three_requests_a_file_sent_a_window_at_a_time(place, monkeypatch):
    """The lstat of each name, its rename into the staging directory and its remove there; the
    ways and the staging directories once a window. Each step of a window goes out together."""
    storage, _site, _outside = place
    storage.write_many((name, lambda: [b"x"]) for name in names())
    requests, writes = sent(monkeypatch)
    assert storage.delete_many(names()) == names()
    assert storage.list_files() == []
    assert requests.count(sftp_wire.POSIX_RENAME) == requests.count(paramiko.sftp.CMD_REMOVE) == len(names())
    assert len(writes) < len(requests) / 8


def test_a_release_checked_whole_is_looked_at_a_window_at_a_time(place, monkeypatch):
    """measure_many (releases.build.check_whole): the lstat of each name and of the directories on
    the ways of a window go out together, the listings that count the names once a directory."""
    storage, _site, _outside = place
    storage.write_many((name, lambda: [b"x"]) for name in names())
    requests, writes = sent(monkeypatch)
    found = storage.measure_many([(name, 1) for name in sorted(names())], False)
    assert set(found.values()) == {(1, None)} and len(found) == len(names())
    assert requests.count(paramiko.sftp.CMD_LSTAT) < len(names()) + 10
    assert len(writes) < len(names()) / 4


def test_a_server_without_fsync_gets_the_writes_of_today_and_a_release_switch_is_told_not_refused(
        place, monkeypatch):
    storage, _site, _outside = place
    without_extension(storage, sftp_wire.FSYNC)
    storage.write_bytes("first.txt", b"connects")
    requests, _writes = sent(monkeypatch)
    storage.write_many(("f%03d.txt" % index, lambda: [b"x"]) for index in range(3))
    assert sftp_wire.FSYNC not in requests and len(requests) >= 7 * 3
    assert storage.read_bytes("f002.txt", LIMIT) == b"x"
    assert storage.warnings == []
    storage.require_switch()
    storage.require_switch()
    [warning] = storage.warnings
    assert sftp_wire.FSYNC in warning and "durable as the server's filesystem" in warning
    assert storage.at("elsewhere").warnings == [warning]


def test_a_server_with_fsync_gives_a_release_switch_no_warning(place):
    storage, _site, _outside = place
    storage.require_switch()
    assert storage.warnings == []


@pytest.mark.parametrize("expected, limit, wanted", [
    (100_000, 1 << 20, 100_000),  # as large as seen: one round trip
    (10, 1 << 20, 100_000),       # grown since it was seen: read on to its end
    (500_000, 1 << 20, 100_000),  # shrunk since: its end ends the read
    (100_000, 50_001, 50_001),    # over the bound: never more than the bound asked for
    (0, 1, 1),
])
@pytest.mark.parametrize("at_once", [2, sftp_wire.READS_AT_ONCE])
def test_reads_sent_ahead_return_the_file_in_order_up_to_the_bound(place, expected, limit, wanted, at_once, monkeypatch):
    storage, site, _outside = place
    monkeypatch.setattr(sftp_wire, "READS_AT_ONCE", at_once)
    storage.write_bytes("f.bin", b"")
    content = os.urandom(100_000)
    (site / "f.bin").write_bytes(content)
    with storage._open().open(str(site / "f.bin"), "rb") as handle:
        assert b"".join(sftp_wire.read_ahead(handle.sftp, handle.handle, expected, limit)) == content[:wanted]

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local publishes are durable in the right order: each output's bytes before its rename, every
directory holding or created for an output before the state record, and the state record and
its directory last. A spy records the syncs, fsyncs and renames a real publish makes, once with
one syncfs(2) per batch (ext4, xfs, btrfs on Linux 5.8+) and once with an fsync per file (any
other filesystem)."""

from __future__ import annotations

import errno
import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.local import durability

from builders import NOW, write_bundle

FILES = {"a.txt": b"a", "deep/er/b.txt": b"b", "deep/c.txt": b"c", **{"many/%03d.txt" % i: b"%d" % i for i in range(40)}}
SYNCFS_AVAILABLE = durability.syncfs_usable(os.getcwd())
needs_syncfs = pytest.mark.skipif(not SYNCFS_AVAILABLE, reason="no syncfs(2) on this filesystem or kernel")


def full_name(path, dir_fd=None) -> str:
    """The path a call names, also when it names it relative to a directory descriptor."""
    if dir_fd is None:
        return os.fspath(path)
    return os.path.join(os.readlink("/proc/self/fd/%d" % dir_fd), os.fspath(path))


def spy(monkeypatch, strategy):
    """Events: ('stage', path) when a staged file is created, ('fsync', path), ('syncfs',),
    ('rename', src, dst). `strategy` forces the durability a publish uses; batches are small."""
    events = []
    real_fsync, real_replace, real_open, real_syncfs = os.fsync, os.replace, os.open, durability.syncfs
    names = {}

    def spy_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        names[fd] = full_name(path, kwargs.get("dir_fd"))
        if flags & os.O_CREAT and "/.distributor.tmp." in names[fd]:
            events.append(("stage", names[fd]))
        return fd

    def spy_fsync(fd):
        real_fsync(fd)
        events.append(("fsync", names.get(fd, os.readlink("/proc/self/fd/%d" % fd))))

    def spy_syncfs(fd):
        real_syncfs(fd)
        events.append(("syncfs",))

    def spy_replace(src, dst, src_dir_fd=None, dst_dir_fd=None):
        src, dst = full_name(src, src_dir_fd), full_name(dst, dst_dir_fd)
        real_replace(src, dst)
        events.append(("rename", src, dst))

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "replace", spy_replace)
    monkeypatch.setattr(durability, "syncfs", spy_syncfs)
    monkeypatch.setattr(durability, "syncfs_usable", lambda path: strategy == "syncfs")
    monkeypatch.setattr(durability.FsyncEach, "batch_files", 16)
    monkeypatch.setattr(durability.SyncFs, "batch_files", 16)
    return events


def _publish(tmp_path, bundle):
    root = str(tmp_path / "www" / "root")
    publish(bundle, {"id": "p"}, {"id": "d", "storage": {"type": "local", "root": root}, "path": "site/day"}, now=NOW)
    return root


@pytest.mark.parametrize("strategy", ["fsync", pytest.param("syncfs", marks=needs_syncfs)])
def test_outputs_and_their_directories_are_durable_before_state_and_state_after(tmp_path, monkeypatch, strategy):
    bundle = write_bundle(tmp_path / "bundle", FILES)
    events = spy(monkeypatch, strategy)
    root = _publish(tmp_path, bundle)

    def index(event):
        return events.index(event)

    def synced_between(start, end, staged):
        between = events[start:end]
        return ("syncfs",) in between if strategy == "syncfs" else ("fsync", staged) in between

    renames = [e for e in events if e[0] == "rename"]
    state_rename = next(i for i, e in enumerate(events) if e[0] == "rename" and e[2].endswith("/" + STATE_NAME))
    outputs = [e for e in renames if not os.path.basename(e[2]).startswith(".distributor")]
    assert sorted(os.path.relpath(e[2], os.path.join(root, "site/day")) for e in outputs) == sorted(FILES)
    for event in outputs:
        _op, staged, _target = event
        assert synced_between(index(("stage", staged)), index(event), staged), "renamed before its bytes were durable"
    after_outputs = max(index(e) for e in outputs)
    before_state = events[after_outputs:state_rename]
    if strategy == "syncfs":
        assert ("syncfs",) in before_state, "the renames and directories are not durable before the state record"
        output_fsyncs = [e for e in events[:state_rename] if e[0] == "fsync" and "/.distributor.tmp." in e[1]
                         and not e[1].endswith((JOURNAL_NAME, STATE_NAME))]
        assert not output_fsyncs, "an output was fsynced one by one although syncfs covers it"
    else:
        created = {os.path.join(root, "site/day", d) for d in ("", "deep", "deep/er", "many")} | {
            os.path.join(root, "site"), root, str(tmp_path / "www")}
        synced_dirs_before_state = {e[1] for e in before_state if e[0] == "fsync"}
        assert {os.path.normpath(d) for d in created} <= {os.path.normpath(d) for d in synced_dirs_before_state}, \
            "a directory written into or created is not durable before the state record"
    state_dir = os.path.join(root, "site", "day")
    assert ("fsync", state_dir) in events[state_rename + 1:], "the state record's rename is not made durable"
    assert os.path.exists(os.path.join(state_dir, STATE_NAME)) and not os.path.exists(os.path.join(state_dir, JOURNAL_NAME))


@needs_syncfs
@pytest.mark.parametrize("failing_call", [1, 2], ids=["batch sync", "directory sync"])
def test_a_failed_syncfs_fails_the_publish_before_the_state_is_written(tmp_path, monkeypatch, failing_call):
    """syncfs reports a writeback error like fsync does: the publish fails with a reason, no
    state is written, and no output of the attempt is left (its recovery or clean-up ran)."""
    calls = []

    def failing_syncfs(fd):
        calls.append(fd)
        if len(calls) == failing_call:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    bundle = write_bundle(tmp_path / "bundle", FILES)
    monkeypatch.setattr(durability, "syncfs", failing_syncfs)
    with pytest.raises(DistributorError) as raised:
        _publish(tmp_path, bundle)
    assert raised.value.reason == "storage_error"
    assert "syncfs" in str(raised.value) and "Input/output error" in str(raised.value)
    bundle_path = tmp_path / "www" / "root" / "site" / "day"
    assert not (bundle_path / STATE_NAME).exists()
    _publish(tmp_path, bundle)
    assert (bundle_path / STATE_NAME).exists(), "the next plain run does not recover"


@needs_syncfs
def test_a_file_on_another_filesystem_below_the_root_is_fsynced_on_its_own(tmp_path, monkeypatch):
    """A mount point below the root holds files that one syncfs of the root's filesystem misses."""
    bundle = write_bundle(tmp_path / "bundle", {"a.txt": b"a", "mnt/b.txt": b"b"})
    events = spy(monkeypatch, "syncfs")
    real_fstat, real_stat = os.fstat, os.stat
    elsewhere = set()

    def moved(result):
        fields = list(result[:10])
        fields[2] += 1  # st_dev: another filesystem
        return os.stat_result(fields)

    def fstat(fd):
        name = os.readlink("/proc/self/fd/%d" % fd)
        if "/mnt/.distributor.tmp." in name:
            elsewhere.add(name)
            return moved(real_fstat(fd))
        return real_fstat(fd)

    def stat(path, *args, dir_fd=None, follow_symlinks=True):
        result = real_stat(path, *args, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
        named = isinstance(path, (str, bytes, os.PathLike))
        return moved(result) if named and full_name(path, dir_fd) in elsewhere else result

    monkeypatch.setattr(os, "fstat", fstat)
    monkeypatch.setattr(os, "stat", stat)
    _publish(tmp_path, bundle)
    fsynced = [e[1] for e in events if e[0] == "fsync"]
    assert any("/mnt/" in name and name.endswith("b.txt") for name in fsynced)
    assert not any(name.endswith("a.txt") for name in fsynced)


def test_syncfs_is_used_only_where_it_is_known_to_be_reliable(monkeypatch, tmp_path):
    monkeypatch.setattr(durability, "filesystem_type", lambda path: "nfs")
    assert not durability.syncfs_usable(str(tmp_path))
    monkeypatch.setattr(durability, "filesystem_type", lambda path: "ext4")
    monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Linux", "h", "5.4.0-1", "#1", "x86_64")))
    assert not durability.syncfs_usable(str(tmp_path)), "before Linux 5.8 syncfs does not report writeback errors"

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local publishes are durable in the right order: each output's bytes before its rename, every
directory holding or created for an output before the state record, and the state record and
its directory last. A spy records the fsyncs and renames a real publish makes."""

from __future__ import annotations

import os

from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage import local

from builders import NOW, write_bundle

FILES = {"a.txt": b"a", "deep/er/b.txt": b"b", "deep/c.txt": b"c", **{"many/%03d.txt" % i: b"%d" % i for i in range(40)}}


def spy(monkeypatch):
    events = []
    real_fsync, real_replace, real_open = os.fsync, os.replace, os.open
    names = {}

    def spy_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        names[fd] = os.fspath(path)
        return fd

    def spy_fsync(fd):
        real_fsync(fd)
        events.append(("fsync", names.get(fd) if isinstance(fd, int) else None))

    def spy_replace(src, dst):
        real_replace(src, dst)
        events.append(("rename", os.fspath(src), os.fspath(dst)))

    monkeypatch.setattr(local.os, "open", spy_open)
    monkeypatch.setattr(local.os, "fsync", spy_fsync)
    monkeypatch.setattr(local.os, "replace", spy_replace)
    return events


def test_outputs_and_their_directories_are_durable_before_state_and_state_after(tmp_path, monkeypatch):
    bundle = write_bundle(tmp_path / "bundle", FILES)
    root = str(tmp_path / "www" / "root")
    events = spy(monkeypatch)
    monkeypatch.setattr(local, "SYNC_BATCH", 16)
    publish(bundle, {"id": "p"}, {"id": "d", "storage": {"type": "local", "root": root}, "path": "site/day"}, now=NOW)

    def index(event):
        return events.index(event)

    synced = [e[1] for e in events if e[0] == "fsync"]
    renames = [e for e in events if e[0] == "rename"]
    state_rename = next(i for i, e in enumerate(events) if e[0] == "rename" and e[2].endswith("/" + STATE_NAME))
    outputs = [e for e in renames if not os.path.basename(e[2]).startswith(".distributor")]
    assert sorted(os.path.relpath(e[2], os.path.join(root, "site/day")) for e in outputs) == sorted(FILES)
    for _op, staged, target in outputs:
        assert index(("fsync", staged)) < index(("rename", staged, target)), "renamed before its bytes were durable"
    after_outputs = max(index(e) for e in outputs)
    synced_dirs_before_state = {e[1] for e in events[after_outputs:state_rename] if e[0] == "fsync"}
    created = {os.path.join(root, "site/day", d) for d in ("", "deep", "deep/er", "many")} | {
        os.path.join(root, "site"), root, str(tmp_path / "www")}
    assert {os.path.normpath(d) for d in created} <= {os.path.normpath(d) for d in synced_dirs_before_state}, \
        "a directory written into or created is not durable before the state record"
    state_dir = os.path.join(root, "site", "day")
    assert ("fsync", state_dir) in events[state_rename + 1:], "the state record's rename is not made durable"
    assert os.path.exists(os.path.join(state_dir, STATE_NAME)) and not os.path.exists(os.path.join(state_dir, JOURNAL_NAME))
    assert synced.count(state_dir) >= 2

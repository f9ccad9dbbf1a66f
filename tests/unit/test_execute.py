# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The executor's ordering on a real filesystem: writes before deletes, unless a delete is in the way."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.execution.execute import find_leftovers
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.journal import Entry, Journal
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import LATER, NOW, sha, write_bundle
from memory_storage import MemoryStorage


def local(root):
    return {"id": "archive", "storage": {"type": "local", "root": str(root)}}


def test_a_file_that_becomes_a_directory_is_deleted_before_the_write(tmp_path):
    first = write_bundle(tmp_path / "b1", {"docs": b"plain file"}, created="2026-06-03T00:00:00Z")
    second = write_bundle(tmp_path / "b2", {"docs/index.html": b"<p>now a directory</p>"})
    publish(first, {"id": "reports"}, local(tmp_path / "www"), now=NOW)
    result = publish(second, {"id": "reports"}, local(tmp_path / "www"), now=LATER)
    assert result["deleted"] == ["docs"]
    assert (tmp_path / "www/docs/index.html").read_bytes() == b"<p>now a directory</p>"


def test_a_failed_write_leaves_every_old_output_in_place(tmp_path):
    first = write_bundle(tmp_path / "b1", {"old.png": b"old", "keep.png": b"k1"}, created="2026-06-03T00:00:00Z")
    second = write_bundle(tmp_path / "b2", {"keep.png": b"k2", "new.png": b"new!"})
    (tmp_path / "b2/new.png").write_bytes(b"bad!")
    publish(first, {"id": "reports"}, local(tmp_path / "www"), now=NOW)
    with pytest.raises(DistributorError) as caught:
        publish(second, {"id": "reports"}, local(tmp_path / "www"), now=LATER)
    assert caught.value.reason == "verification_failed"
    assert sorted(p.name for p in (tmp_path / "www").iterdir()) == [".distributor.json", "keep.png", "old.png"]
    assert (tmp_path / "www/old.png").read_bytes() == b"old"


def test_a_large_source_changed_after_its_manifest_is_never_put_in_place(tmp_path):
    """Read and hashed a chunk ahead of the write: the last chunk's mismatch still stops the
    rename, and nothing is left staged."""
    big = bytes(range(256)) * (3 * 4096 + 17)
    bundle = write_bundle(tmp_path / "b1", {"big.bin": big, "small.txt": b"s"})
    tampered = bytearray(big)
    tampered[-1] ^= 0xFF
    (tmp_path / "b1/big.bin").write_bytes(bytes(tampered))
    with pytest.raises(DistributorError) as caught:
        publish(bundle, {"id": "reports"}, local(tmp_path / "www"), now=NOW)
    assert caught.value.reason == "verification_failed"
    assert "big.bin: sha256 mismatch" in caught.value.message
    assert (tmp_path / "www").is_dir()
    assert sorted(p.name for p in (tmp_path / "www").rglob("*")) == []


def test_recovery_deletes_nothing_when_a_journaled_write_lies_under_a_path_listed_as_a_file():
    """The directory of an attempt's write now listed as a file (or a link) may hide that write:
    recovery refuses, naming the path in the way, and the journal stays for a later run."""
    store = {"docs": b"a file now", "index.html": b"i"}
    journal = Journal("t0k3n", (Entry("docs/a/page.html", sha(b"p"), 1), Entry("index.html", sha(b"i"), 1)))
    with pytest.raises(DistributorError) as caught:
        find_leftovers(MemoryStorage(store), journal, set(), frozenset(store))
    assert caught.value.reason == "storage_error"
    assert "docs/a/page.html cannot be looked at, because docs is not a directory now" in caught.value.message
    store = {"docs/a/page.html": b"p", "index.html": b"i"}
    found = find_leftovers(MemoryStorage(store), journal, set(), frozenset(store))
    assert found.deletes() == ["docs/a/page.html", "index.html"]

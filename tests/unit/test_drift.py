# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift verification and repair (publish's `verify`) on a real filesystem: a republish of the same
bundle is a `skip` by the contract, and `verify` finds what was edited, truncated or deleted by
hand and rewrites it, leaving everything else unread."""

from __future__ import annotations

from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.drift import find_drift
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import Output, OwnerKey

from builders import LATER, NOW, write_bundle

FILES = {"a.png": b"aaaa", "b.png": b"bbbb", "c.png": b"cccc", "d.png": b"dddd"}


def local(root):
    return {"id": "archive", "storage": {"type": "local", "root": str(root)}}


def drifted_site(tmp_path):
    bundle = write_bundle(tmp_path / "b", FILES)
    publish(bundle, {"id": "reports"}, local(tmp_path / "www"), now=NOW)
    www = tmp_path / "www"
    (www / "a.png").write_bytes(b"AAAA")   # same size
    (www / "b.png").write_bytes(b"bb")     # truncated
    (www / "c.png").unlink()               # deleted
    (www / "extra.txt").write_bytes(b"unmanaged")
    return bundle, www


def test_verify_none_keeps_the_contracts_skip_and_the_edits(tmp_path):
    bundle, www = drifted_site(tmp_path)
    result = publish(bundle, {"id": "reports"}, local(www), now=LATER)
    assert (result["action"], result["changed"], result["repaired"]) == ("skip", False, [])
    assert (www / "b.png").read_bytes() == b"bb"


def test_verify_size_repairs_truncated_and_missing_but_not_a_same_size_edit(tmp_path):
    bundle, www = drifted_site(tmp_path)
    result = publish(bundle, {"id": "reports"}, local(www), now=LATER, verify="size")
    assert (result["action"], result["changed"], result["repaired"]) == ("skip", True, ["b.png", "c.png"])
    assert [c["change"] for c in result["changes"]] == ["repair", "repair"]
    assert (www / "b.png").read_bytes() == b"bbbb" and (www / "c.png").read_bytes() == b"cccc"
    assert (www / "a.png").read_bytes() == b"AAAA", "a same-size edit is not found by size"
    assert (www / "extra.txt").read_bytes() == b"unmanaged"


def test_verify_sha256_also_repairs_a_same_size_edit_and_check_mode_writes_nothing(tmp_path):
    bundle, www = drifted_site(tmp_path)
    checked = publish(bundle, {"id": "reports"}, local(www), now=LATER, verify="sha256", check_mode=True)
    assert (checked["action"], checked["changed"], checked["repaired"]) == ("skip", True, ["a.png", "b.png", "c.png"])
    assert (www / "a.png").read_bytes() == b"AAAA" and not (www / "c.png").exists()
    result = publish(bundle, {"id": "reports"}, local(www), now=LATER, verify="sha256", expect_plan_digest=checked["plan_digest"])
    assert result["repaired"] == ["a.png", "b.png", "c.png"]
    assert {name: (www / name).read_bytes() for name in FILES} == FILES
    again = publish(bundle, {"id": "reports"}, local(www), now=LATER, verify="sha256")
    assert (again["action"], again["changed"], again["repaired"]) == ("skip", False, [])


def test_a_stale_bundle_repairs_nothing_it_does_not_produce_as_recorded(tmp_path):
    bundle, www = drifted_site(tmp_path)
    older = write_bundle(tmp_path / "old", {"a.png": b"old!", "b.png": b"bbbb"}, created="2026-06-01T00:00:00Z")
    result = publish(older, {"id": "reports"}, local(www), now=LATER, verify="sha256")
    assert (result["action"], result["repaired"]) == ("skip", ["b.png"])
    assert (www / "a.png").read_bytes() == b"AAAA"


def test_find_drift_measures_only_listed_records():
    key = OwnerKey("reports", "archive")
    records = [Output(path=p, kind="source", source_path=p, transform=None, url=None, sha256="sha256:" + "0" * 64,
                      size=4, created_at="", updated_at="", owner=key, source_id="", source_digest="", source_created="") for p in ("gone", "short", "same")]
    measured = []

    def measure(path, size, digest):
        measured.append((path, size, digest))
        return {"short": (2, None), "same": (4, None)}[path]

    assert find_drift(records, frozenset({"short", "same"}), measure, "size") == (["gone"], ["short"])
    assert measured == [("same", 4, False), ("short", 4, False)]


def test_repaired_outputs_are_invalidated_like_any_other_write(tmp_path):
    """A CDN cached the hand-edited bytes: a repair must reach the cache as a write would."""
    bundle = write_bundle(tmp_path / "b", FILES)
    site = dict(local(tmp_path / "www"), links={"base_url": "https://cdn.example.com/site/"})
    publish(bundle, {"id": "reports"}, site, now=NOW)
    (tmp_path / "www" / "b.png").write_bytes(b"bb")
    result = publish(bundle, {"id": "reports"}, site, now=LATER, verify="size")
    assert (result["action"], result["repaired"]) == ("skip", ["b.png"])
    assert result["invalidation_paths"] == ["/site/b.png"]

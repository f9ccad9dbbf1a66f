# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A hostile neighbour writes into the destination: planted journals and state that climb out,
deep JSON, hostile ids for base_url, names that are not UTF-8. Each run fails with a reason and
no traceback, nothing outside the bundle path changes, and the next run converges."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from conftest import tree
from hostile import OUTSIDE, assert_refused, destination, neighbour_root, outside


@pytest.fixture(params=["local", "sftp"])
def root(request, tmp_path):
    return neighbour_root(request, tmp_path)


@pytest.fixture
def published(root, playbook, make_bundle):
    bundle = make_bundle({"index.html": b"<p>v1</p>"})
    assert playbook.publish(source=bundle, pipeline={"id": "reports"}, destination=destination(root))["changed"]
    return bundle


@pytest.mark.parametrize("journal", [
    b'{"token": "dead", "writes": ["../outside.txt"]}',
    b'{"token": "dead", "writes": ["/etc/hostname"]}',
    b'{"token": "dead", "writes": ["index.html", "x/../../other/keep.html"]}',
    b'{"token": "../../other", "writes": ["keep.html"]}',
    b'{"token": "dead", "writes": [".distributor.json"]}',
    b"[" * 50000 + b"]" * 50000,
])
def test_a_planted_journal_is_refused_and_deletes_nothing(root, playbook, published, journal):
    root.put("site/.distributor.journal.json", journal)
    before = tree(root.local_root)
    result = playbook.publish(source=published, pipeline={"id": "reports"}, destination=destination(root))
    assert_refused(result, "invalid_state")
    assert ".distributor.journal.json" in result["msg"]
    assert tree(root.local_root) == before
    root.remove("site/.distributor.journal.json")  # the documented fix, after checking by hand
    again = playbook.publish(source=published, pipeline={"id": "reports"}, destination=destination(root))
    assert again["action"] == "skip" and outside(root) == OUTSIDE


def planted_state(root, path):
    state = root.state("site")
    state["outputs"][0]["path"] = path
    return json.dumps(state).encode()


@pytest.mark.parametrize("plant", [
    lambda root: planted_state(root, "../outside.txt"),
    lambda root: planted_state(root, "/etc/hostname"),
    lambda root: planted_state(root, ".distributor.lock"),
    lambda root: b'{"schema_version": 2, "x": ' + b"[" * 50000 + b"]" * 50000 + b"}",
])
def test_a_planted_state_is_invalid_state_and_force_converges(root, playbook, make_bundle, published, plant):
    root.put("site/.distributor.json", plant(root))
    second = make_bundle({"index.html": b"<p>v2</p>"}, created="2026-06-05T11:55:00Z")
    result = playbook.publish(source=second, pipeline={"id": "reports"}, destination=destination(root))
    assert_refused(result, "invalid_state")
    assert ".distributor.json" in result["msg"] and outside(root) == OUTSIDE
    forced = playbook.publish(source=second, pipeline={"id": "reports"}, destination=destination(root), force=True)
    assert forced["changed"] and forced["action"] == "force_replace", forced
    again = playbook.publish(source=second, pipeline={"id": "reports"}, destination=destination(root))
    assert again["action"] == "skip" and outside(root) == OUTSIDE


@pytest.mark.parametrize("url", ["https://docs.example.com/*", "https://docs.example.com/docs/site/../../admin/index.html"])
def test_a_state_whose_url_was_rewritten_is_invalid_state_and_invalidates_nothing(root, playbook, make_bundle, url):
    links = {"base_url": "https://docs.example.com/docs/site/"}
    first = make_bundle({"index.html": b"<p>v1</p>"})
    assert playbook.publish(source=first, pipeline={"id": "reports"}, destination=destination(root, links=links))["changed"]
    state = root.state("site")
    state["outputs"][0]["url"] = url
    root.put("site/.distributor.json", json.dumps(state).encode())
    second = make_bundle({"other.html": b"<p>v2</p>"}, created="2026-06-05T11:55:00Z")
    result = playbook.publish(source=second, pipeline={"id": "reports"}, destination=destination(root, links=links))
    assert_refused(result, "invalid_state")
    assert url in result["msg"] and "'index.html'" in result["msg"] and not result.get("invalidation_paths")


def test_a_hostile_source_id_stays_in_the_url_path_and_the_state_stays_valid(root, playbook, make_bundle):
    bundle = make_bundle({"index.html": b"<p>hi</p>"}, id="x@evil.example/.. ?#")  # a `..` segment is refused
    links = {"base_url": "https://docs.example.com/{source_id}/"}
    first = playbook.publish(source=bundle, pipeline={"id": "reports"}, destination=destination(root, links=links))
    assert first["changed"] and first["primary_url"].startswith("https://docs.example.com/x%40evil.example/"), first
    again = playbook.publish(source=bundle, pipeline={"id": "reports"}, destination=destination(root, links=links))
    assert again["action"] == "skip", again


def test_a_base_url_whose_host_a_producer_fills_is_refused_before_writing(root, playbook, make_bundle):
    bundle = make_bundle({"index.html": b"<p>hi</p>"}, id="evil.example")
    result = playbook.publish(source=bundle, pipeline={"id": "reports"},
                              destination=destination(root, links={"base_url": "https://{source_id}/"}))
    assert_refused(result, "invalid_config")
    assert tree(root.local_root) == OUTSIDE


def test_non_utf8_names_are_reported_readably_and_force_removes_them(root, playbook, make_bundle, published):
    site = os.path.join(str(root.local_root), "site").encode()
    with open(os.path.join(site, b"caf\xe9.html"), "wb") as handle:
        handle.write(b"someone else's")
    second = make_bundle({"index.html": b"<p>v2</p>"}, created="2026-06-05T11:55:00Z")
    refused = playbook.publish(source=second, pipeline={"id": "reports"}, destination=destination(root))
    assert_refused(refused, "unmanaged")
    assert "caf\\xe9.html" in refused["msg"]
    forced = playbook.publish(source=second, pipeline={"id": "reports"}, destination=destination(root), force=True)
    assert not forced.get("failed") and forced["changed"], forced
    assert forced["deleted"] == ["caf\\xe9.html"]
    assert sorted(os.listdir(site)) == [b".distributor.json", b"index.html"]
    assert outside(root) == OUTSIDE


def test_a_planted_journal_naming_another_accounts_files_deletes_none_of_them(root, playbook, published):
    """Issue 29: a journal names 300 files of uid 1000 in a directory the publisher did not make,
    with their true digests and sizes. Planted by uid 65534 it is no record of distributor's
    (issue 38: invalid_state). Owned by distributor's own account (a journal of an earlier run
    that named them), check mode and the real run are a skip that deletes nothing, under a
    guard of 5 deletes, and say so: `recovered` is empty and a warning names the files and why
    they stay."""
    data = root.local_root / "site" / "data"
    data.mkdir()
    writes = []
    for i in range(300):
        path = data / ("f%03d.txt" % i)
        path.write_bytes(b"uid 1000's row %d" % i)
        os.chown(path, 1000, 1000)
        writes.append({"path": "data/" + path.name, "sha256": "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest(),
                       "size": path.stat().st_size})
    os.chown(data, 1000, 1000)
    journal = root.local_root / "site" / ".distributor.journal.json"
    journal.write_text(json.dumps({"token": "planted", "writes": writes}))
    os.chown(journal, 65534, 65534)
    before = tree(root.local_root / "site" / "data")
    guarded = destination(root, transfer={"max_deletes": 5})
    assert_refused(playbook.publish(source=published, pipeline={"id": "reports"}, destination=guarded),
                   "invalid_state", ".distributor.journal.json", "is owned by uid 65534")
    os.chown(journal, 0, 0)
    for check in (True, False):
        result = playbook.publish(source=published, pipeline={"id": "reports"}, destination=guarded, check=check)
        assert not result.get("failed"), result
        assert (result["action"], result["changed"], result["deleted"], result["recovered"]) == ("skip", False, [], [])
        [left] = [w for w in result["warnings"] if "left alone" in w]
        assert "300 file(s) that the journal of the interrupted publish (attempt planted) names" in left
        assert "data/f000.txt (is owned by uid 1000, not by " in left
    assert tree(root.local_root / "site" / "data") == before and outside(root) == OUTSIDE
    assert not journal.exists()

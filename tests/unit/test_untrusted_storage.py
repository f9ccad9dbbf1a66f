# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What distributor reads back from a destination is untrusted: a planted journal, state or lock
record is refused with a reason naming it, and nothing outside the bundle path is touched."""

from __future__ import annotations

import json

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import STATE_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import (
    describe_holder, lock_is_expired)
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.storage import SftpStorage

from builders import LATER, MEMORY_STORAGE, NOW, sha, write_bundle
from memory_storage import MemoryStorage

JOURNAL = "site/.distributor.journal.json"
STATE = "site/.distributor.json"


def dest(**extra):
    return dict({"id": "archive", "storage": MEMORY_STORAGE, "path": "site"}, **extra)


def memory(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


@pytest.fixture
def published(tmp_path):
    store = {"outside.txt": b"neighbour", "site2/keep.txt": b"other"}
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>"})
    publish(bundle, {"id": "reports"}, dest(), now=NOW, opener=memory(store))
    return store, bundle


@pytest.mark.parametrize("writes,token,field", [
    (["../outside.txt"], "abc", "writes[0]"),
    (["/etc/passwd"], "abc", "writes[0]"),
    (["index.html", "a/../../site2/keep.txt"], "abc", "writes[1]"),
    ([".distributor.json"], "abc", "writes[0]"),
    (["x"], "../../outside", "token"),
    ("index.html", "abc", "writes"),
])
def test_a_planted_journal_is_invalid_state_naming_the_entry_and_deletes_nothing(published, writes, token, field):
    store, bundle = published
    store[JOURNAL] = json.dumps({"token": token, "writes": writes}).encode()
    before = dict(store)
    with pytest.raises(DistributorError) as failure:
        publish(bundle, {"id": "reports"}, dest(), now=LATER, opener=memory(store))
    assert failure.value.reason == "invalid_state"
    assert ".distributor.journal.json: " + field in failure.value.message
    assert store == before


def test_check_mode_names_the_outputs_a_real_run_recovers(published, tmp_path):
    store, bundle = published
    store["site/stray.html"] = b"left by a killed run"
    writes = [{"path": "stray.html", "sha256": sha(b"left by a killed run"), "size": 20},
              {"path": "index.html", "sha256": sha(b"<p>hi</p>"), "size": 9}]
    store[JOURNAL] = json.dumps({"token": "dead", "writes": writes}).encode()
    checked = publish(bundle, {"id": "reports"}, dest(), now=LATER, check_mode=True, opener=memory(store))
    real = publish(bundle, {"id": "reports"}, dest(), now=LATER, opener=memory(store))
    assert checked["warnings"] == ["a real run first removes 1 output(s) left by an interrupted publish (attempt dead): stray.html"]
    assert real["warnings"] == ["removed 1 output(s) left by an interrupted publish (attempt dead): stray.html"]
    assert "site/stray.html" not in store and store["outside.txt"] == b"neighbour"


def test_the_confining_wrapper_refuses_any_path_that_climbs_out(published):
    store, bundle = published
    from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.confined import ConfinedStorage
    storage = ConfinedStorage(MemoryStorage(store, "site", "t"))
    for path in ("../outside.txt", "/outside.txt", "a//b", ""):
        with pytest.raises(DistributorError) as failure:
            storage.delete_many(["index.html", path])
        assert failure.value.reason == "invalid_state"
    assert "site/index.html" in store and store["outside.txt"] == b"neighbour"


def test_a_batch_of_writes_holding_one_path_that_climbs_out_writes_nothing(published):
    store, _bundle = published
    from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.confined import ConfinedStorage
    storage = ConfinedStorage(MemoryStorage(store, "site", "t"))
    before = dict(store)
    for path in ("../outside.txt", "/outside.txt", "a//b", ""):
        with pytest.raises(DistributorError) as failure:
            storage.write_many([("first.html", lambda: [b"new"]), (path, lambda: [b"new"])])
        assert failure.value.reason == "invalid_state"
        assert repr(path) in failure.value.message
    assert store == before


def deep(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [40, 5000, 200000])
def test_deeply_nested_state_and_journal_are_invalid_state(published, depth):
    store, bundle = published
    for name, raw in ((STATE, '{"schema_version": 2, "x": %s}' % deep(depth)), (JOURNAL, deep(depth))):
        saved = dict(store)
        store[name] = raw.encode()
        with pytest.raises(DistributorError) as failure:
            publish(bundle, {"id": "reports"}, dest(), now=LATER, opener=memory(store))
        assert failure.value.reason == "invalid_state" and name.split("/")[1] in failure.value.message
        store.clear()
        store.update(saved)


def test_a_deep_manifest_inside_state_is_invalid_state():
    raw = json.dumps({"schema_version": 2, "source": {"manifest": {"files": json.loads(deep(900))}}})
    with pytest.raises(DistributorError) as failure:
        parse_state(raw.encode(), "memory:/site/.distributor.json")
    assert failure.value.reason == "invalid_state"


def test_a_deeply_nested_manifest_is_invalid_manifest(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"a.txt": b"a"})
    (tmp_path / "b/manifest.json").write_text('{"schema_version": 1, "files": %s}' % deep(990))
    with pytest.raises(DistributorError) as failure:
        publish(bundle, {"id": "reports"}, dest(), now=NOW, opener=memory({}))
    assert failure.value.reason == "invalid_manifest" and "manifest.json" in failure.value.message


@pytest.mark.parametrize("raw", [deep(100000).encode(), b'{"holder": "x", "acquired_at": 1e300, "expires_at": 1e300}',
                                 b'{"expires_at": NaN}', b'{"expires_at": Infinity}', b"\xff"])
def test_a_planted_lock_record_never_raises_and_never_holds_forever(raw):
    assert describe_holder(raw) == "an unknown holder"
    assert lock_is_expired(raw, 0.0) or b"1e300" in raw


@pytest.mark.parametrize("source_id", ["x@evil.example", "a b?c#d", "//evil.example/x", "é", "%2e%2e"])
def test_a_producer_id_is_percent_encoded_into_the_path_and_state_stays_valid(tmp_path, source_id):
    store = {}
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>"}, id=source_id)
    result = publish(bundle, {"id": "reports"}, dest(links={"base_url": "https://docs.example.com/{source_id}/"}),
                     now=NOW, opener=memory(store))
    assert result["primary_url"].startswith("https://docs.example.com/")
    assert "@" not in result["primary_url"] and " " not in result["primary_url"]
    parse_state(store[STATE], STATE)


@pytest.mark.parametrize("source_id", ["../../evil", "..", "a/./b"])
def test_a_producer_id_that_would_climb_out_of_the_urls_path_is_invalid_config(tmp_path, source_id):
    """`..` stays `..` when percent-encoded, and many servers decode `%2e%2e` too: a URL made
    from such an id would name another directory of the site."""
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>"}, id=source_id)
    with pytest.raises(DistributorError) as failure:
        publish(bundle, {"id": "reports"}, dest(links={"base_url": "https://docs.example.com/r/{source_id}/"}),
                now=NOW, opener=memory({}))
    assert failure.value.reason == "invalid_config" and "'.' or '..' segment" in failure.value.message
    assert repr(source_id) in failure.value.message


@pytest.mark.parametrize("base_url", ["https://{source_id}.example.com/", "https://example.com{source_id}/",
                                      "https://x@{created:%Y}/", "https://example.com/a b/", "ftp://example.com/",
                                      "https://[::1/"])
def test_a_base_url_a_producer_could_move_to_another_host_is_invalid_config(tmp_path, base_url):
    bundle = write_bundle(tmp_path / "b", {"index.html": b"<p>hi</p>"})
    with pytest.raises(DistributorError) as failure:
        publish(bundle, {"id": "reports"}, dest(links={"base_url": base_url}), now=NOW, opener=memory({}))
    assert failure.value.reason == "invalid_config" and "links.base_url" in failure.value.message


def test_deep_markdown_is_a_transform_error_naming_the_file(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"deep.md": b"*" * 5000 + b"x" + b"*" * 5000})
    with pytest.raises(DistributorError) as failure:
        publish(bundle, {"id": "reports", "outputs": [{"match": "**", "transform": "markdown_to_html"}]}, dest(),
                now=NOW, opener=memory({}))
    assert failure.value.reason == "invalid_manifest" and "deep.md" in failure.value.message


def test_an_sftp_root_of_slash_is_invalid_config():
    for root in ("/", "//", "/./"):
        with pytest.raises(DistributorError) as failure:
            SftpStorage({"type": "sftp", "host": "h", "root": root}, "", "t")
        assert failure.value.reason == "invalid_config"


@pytest.mark.parametrize("content", [b"host ssh-ed25519 AAAA!!!notbase64\n", b"\xff\xfe\n"])
def test_a_malformed_known_hosts_is_invalid_config_naming_file_and_line(tmp_path, content):
    known = tmp_path / "known_hosts"
    known.write_bytes(b"# comment\n" + content)
    storage = SftpStorage({"type": "sftp", "host": "127.0.0.1", "port": 1, "root": "/srv", "known_hosts_file": str(known)}, "", "t")
    with pytest.raises(DistributorError) as failure:
        storage.read_bytes("x", STATE_LIMIT)
    assert failure.value.reason == "invalid_config" and str(known) in failure.value.message
    if b"notbase64" in content:
        assert "line 2" in failure.value.message

# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan digest is a contract with approved jobs: a check-mode digest a reviewer approved
must still be accepted by the run that follows, whatever distributor version makes it. These
pin its value for fixed plans, so a faster way of writing the canonical form cannot change it."""

from __future__ import annotations

import hashlib
import json

from ansible_collections.distributor.core.plugins.module_utils._distributor.budget import Mapped
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.digest import (
    Records, Writes, canonical, explain, forget_facts, plan_digest)
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import Content, Write
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import Output, OwnerKey

from builders import MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

KEY = OwnerKey("reports", "archive")
SHA = "sha256:" + "ab" * 32


def _output(path, **fields):
    values = dict(path=path, kind="source", source_path=path, transform=None, url=None, sha256=SHA, size=7,
                  created_at="2026-06-04T12:00:00Z", updated_at="2026-06-04T12:00:00Z", owner=KEY,
                  source_id="reports.example", source_digest=SHA, source_created="2026-06-04T11:55:00Z")
    values.update(fields)
    return Output(**values)


RECORDS = (
    _output("a.txt"),
    _output("b/caf\u00e9 \u202e.html", kind="generated", source_path="b/caf\u00e9 \u202e.md", transform="markdown",
            url="https://example.org/b/caf%C3%A9.html", size=0, render_key=SHA),
    _output("c\udce9.bin", attributes=(("file_mode", "0644"), ("group", "www")), size=123456789012),
    _output('d/"quoted"\\\t.txt', owner=OwnerKey("events", "archive"), url="http://x/\u2028"),
)


def test_the_canonical_form_of_records_is_pinned():
    facts = forget_facts("prune", "site/\u00e9", KEY, None, [KEY], RECORDS, ["a.txt"])
    assert plan_digest(facts) == GOLDEN_FORGET
    assert canonical(facts).startswith(b'{"bundle_path":"site/\\u00e9","deletes":["a.txt"],"forgets":[{"attributes":[],')


def test_the_digest_of_a_publish_and_its_skip_is_pinned(tmp_path):
    files = {"index.html": b"<p>hi</p>", "docs/caf\u00e9.txt": b"x" * 10, "img/logo.png": b"\x89PNG"}
    source = write_bundle(tmp_path / "bundle", files)
    store = {}
    destination = {"id": "archive", "storage": dict(MEMORY_STORAGE, file_mode="0640"), "links": {"base_url": "https://example.org/{pipeline_id}"}}
    run = dict(source=source, pipeline={"id": "reports"}, destination=destination, now=NOW,
               opener=lambda cfg, base, token: MemoryStorage(store, base, token))
    first = publish(**run)
    again = publish(**run)
    assert (first["action"], again["action"]) == ("publish", "skip")
    assert (first["plan_digest"], again["plan_digest"]) == (GOLDEN_FIRST, GOLDEN_SKIP)


GOLDEN_FORGET = "sha256:1e7e9daef5c55834336eb76cbde323670d7ca737ba672d3b225ec847b9c60751"
GOLDEN_FIRST = "sha256:eb64b45e3cca564a6a38eb5f17c2f83fb9dd539dd775f6da2dff23ed26f72432"
GOLDEN_SKIP = "sha256:2553939b90df6a6958a7f0013d8022279cf9409581689c2ff05f7c9233334825"


def dumped_with_forgets(facts: dict, records) -> bytes:
    """json.dumps's canonical bytes of `facts` with its forgets as the records' plain dicts."""
    as_dicts = dict(facts, forgets=[{
        "path": o.path, "owner": str(o.owner), "kind": o.kind, "source_path": o.source_path, "transform": o.transform,
        "url": o.url, "sha256": o.sha256, "size": o.size, "attributes": [list(pair) for pair in o.attributes]}
        for o in sorted(records, key=lambda o: o.path)])
    return json.dumps(as_dicts, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def test_records_are_written_as_json_dumps_writes_their_dicts():
    """The canonical form is json.dumps's of plain data: records written straight from the
    Output objects must be byte for byte what their dicts would give."""
    facts = forget_facts("prune", "", KEY, None, [KEY], RECORDS, [])
    assert canonical(facts) == dumped_with_forgets(facts, RECORDS)
    assert canonical(dict(facts, forgets=Records())) == canonical(dict(facts, forgets=[]))


def test_records_of_many_batches_are_written_as_json_dumps_writes_their_dicts():
    """Records are written a batch at a time, a column at a time: across batches, with and
    without URLs in one batch, owners, kinds and attributes repeating, the bytes are still
    json.dumps's."""
    records = tuple(RECORDS[i % 4]._replace(path="p%05d/%s" % (i, RECORDS[i % 4].path),
                                            url=None if i % 7 < 3 or i >= 2000 else "https://e.org/%d" % i) for i in range(2501))
    facts = forget_facts("prune", "", KEY, None, [KEY], records, [])
    assert canonical(facts) == dumped_with_forgets(facts, records)


def test_long_lists_and_lists_made_when_read_are_written_as_json_dumps_writes_them():
    """The canonical form is written in pieces, lists a batch of entries at a time: the bytes
    and the digest are those of json.dumps over the whole, whatever the length."""
    entries = [{"path": "p%05d/\u00e9" % i, "size": i, "attributes": [["mode", "0644"]]} for i in range(2501)]
    facts = {"writes": Mapped(range(2501), entries.__getitem__), "deletes": ["a"] * 1000, "empty": [], "n": None}
    whole = json.dumps(dict(facts, writes=entries), sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    assert canonical(facts) == whole
    assert plan_digest(facts) == "sha256:" + hashlib.sha256(whole).hexdigest()


def test_a_refused_prune_names_the_records_it_would_forget():
    facts = forget_facts("prune", "", KEY, None, [KEY], RECORDS[:1], [])
    assert "forget 1 record(s): a.txt" in explain(facts)


def test_batches_of_records_sharing_all_but_their_own_fields_are_written_as_json_dumps_writes_them():
    """A batch whose records share attributes, kind, owner and transform (a publication of
    copies) is written by one format per record: a `%` in a shared value stays itself, and a
    path, digest, size, source path or url of each record is written as json.dumps writes it."""
    shared = dict(attributes=(("cache_control", "max-age=60, 100%"),), owner=OwnerKey("r%s", "a%d"))
    records = tuple(_output('p%05d/%%s "\u00e9\udce9\t.txt' % i, size=i, source_path="s%05d\u2028" % i if i % 3 else None,
                            url=None if i < 1000 else "https://e.org/%%d/%d" % i, **shared) for i in range(2500))
    records = tuple(r._replace(source_path=r.source_path or r.path) for r in records) + (RECORDS[2],)
    facts = forget_facts("prune", "", KEY, None, [KEY], records, [])
    assert canonical(facts) == dumped_with_forgets(facts, records)


def test_writes_are_written_as_json_dumps_writes_their_dicts():
    """A publish's writes are written from their columns, a batch at a time: across batches,
    with kinds of change and attributes repeating or not, a `%` or an escape in an owner, path
    or attribute, the bytes are json.dumps's of the entries the result and explain read."""
    contents = [Content(SHA, 7), Content("sha256:" + "0" * 64, 0, attributes=(("mode", "06%s"), ("group", "w\u00e9"))),
                Content(SHA, 123456789012, attributes=(("mode", "0644"),))]
    writes = tuple(Write('p%05d/%%s "\u00e9\udce9\t.txt' % i, "s", contents[i % 7 % 3]) for i in range(2501))
    changes = {w.path: ("create", "update", "force_overwrite")[i % 5 % 3] for i, w in enumerate(writes)}
    facts = {"writes": Writes(writes, changes, OwnerKey("r%s", "a\u00e9")), "n": None}
    whole = json.dumps(dict(facts, writes=list(facts["writes"])), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert canonical(facts) == whole.encode("ascii")
    assert canonical({"writes": Writes((), {}, KEY)}) == b'{"writes":[]}'

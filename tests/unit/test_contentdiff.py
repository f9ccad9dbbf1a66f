# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Content diffs under --diff, and a manifest handed to publish in place of manifest.json."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.contentdiff import (
    FILE_BOUND, STYLESHEET_NOTE, TASK_BOUND, content_diffs)
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError, Unreadable
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import build_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import Content, Write
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.ensure_manifest import ensure_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.transforms import BUILTIN_STYLESHEET, Page, render_markdown

from builders import LATER, MEMORY_STORAGE, NOW, sha, write_bundle
from memory_storage import MemoryStorage


class Record:
    """The one field of an output record content diffs look at."""

    def __init__(self, size):
        self.size = size


def write(path, data):
    return Write(path, path, Content(sha(data), len(data), data))


def diffs(writes, old: dict, unmanaged=()):
    """content_diffs over `old` ({path: bytes} managed at the destination), counting reads."""
    reads = []

    def read_old(path, limit):
        reads.append(path)
        return old[path][:limit + 1]

    managed = {path: Record(len(data)) for path, data in old.items()}
    present = frozenset(old) | frozenset(unmanaged)
    entries = content_diffs(writes, managed, present, read_old, lambda w: w.content.data, lambda p: "root/" + p)
    return entries, reads


def test_a_changed_text_output_shows_old_against_new_with_its_location_as_headers():
    [entry], reads = diffs([write("a.html", b"<p>new</p>\n")], {"a.html": b"<p>old</p>\n"})
    assert entry == {"before_header": "root/a.html", "after_header": "root/a.html",
                     "before": "<p>old</p>\n", "after": "<p>new</p>\n"}
    assert reads == ["a.html"]


def test_a_new_output_is_diffed_against_nothing_and_nothing_is_read():
    [entry], reads = diffs([write("a.txt", b"hello\n")], {})
    assert (entry["before"], entry["after"]) == ("", "hello\n") and reads == []


def skipped(entry) -> str:
    assert set(entry) == {"before_header", "after_header", "prepared"}
    assert entry["prepared"].count("\n") == 1
    return entry["prepared"]


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\0\0", b"caf\xe9\n"])
def test_binary_new_content_says_so_in_one_line_and_reads_nothing_old(data):
    [entry], reads = diffs([write("a.bin", data)], {"a.bin": b"old\n"})
    assert skipped(entry) == "diff skipped: root/a.bin: new content is binary\n" and reads == []


def test_binary_old_content_says_so_in_one_line():
    [entry] = diffs([write("a.txt", b"text\n")], {"a.txt": b"\0\1\2"})[0]
    assert skipped(entry) == "diff skipped: root/a.txt: old content is binary\n"


def test_content_over_the_file_bound_is_not_read():
    big = b"x" * (FILE_BOUND + 1)
    [new_big, old_big], reads = diffs([write("new.txt", big), write("old.txt", b"small\n")], {"old.txt": big})
    assert "new content is %d bytes, over the bound of %d bytes per file" % (FILE_BOUND + 1, FILE_BOUND) in skipped(new_big)
    assert "old content is %d bytes" % (FILE_BOUND + 1) in skipped(old_big)
    assert reads == []


def test_old_content_that_outgrew_its_record_is_read_to_the_bound_plus_one_byte_and_not_shown():
    managed = {"a.txt": Record(3)}
    limits = []

    def read_old(path, limit):
        limits.append(limit)
        return b"y" * (limit + 1)

    [entry] = content_diffs([write("a.txt", b"new\n")], managed, frozenset(["a.txt"]), read_old, lambda w: w.content.data, str)
    assert limits == [FILE_BOUND]
    assert "old content has grown past its record's 3 bytes, over the bound of %d bytes per file" % FILE_BOUND in skipped(entry)


def test_an_old_file_that_is_not_a_regular_file_is_named_not_opened():
    """A FIFO in a live release, where a check run in release mode diffs against it (in place,
    the run refuses before its diff: authorship.py)."""
    def read_old(path, limit):
        raise Unreadable("root/a.txt is a FIFO (named pipe)", "a FIFO (named pipe)")
    [entry] = content_diffs([write("a.txt", b"new\n")], {"a.txt": Record(3)}, frozenset(["a.txt"]), read_old,
                            lambda w: w.content.data, lambda p: "root/" + p)
    assert skipped(entry).endswith(": the old file is a FIFO (named pipe), not a regular file, which distributor does not open\n")


def test_unmanaged_content_in_the_way_is_never_read():
    [entry], reads = diffs([write("a.html", b"new\n")], {}, unmanaged=["a.html"])
    assert "does not manage" in skipped(entry) and reads == []


def test_after_the_task_bound_one_entry_counts_the_outputs_not_shown_and_none_of_them_is_read():
    page = b"y" * (FILE_BOUND - 1) + b"\n"
    writes = [write("p%02d.txt" % i, page) for i in range(TASK_BOUND // FILE_BOUND + 2)]
    entries, reads = diffs(writes, {p.path: page for p in writes})
    shown = [e for e in entries if "after" in e]
    assert len(shown) == TASK_BOUND // FILE_BOUND // 2 and entries[:len(shown)] == shown
    assert entries[len(shown):] == [{"prepared": "diff skipped: %d more output(s) written, not shown: the bound of %d bytes "
                                                 "of content diffs per task is reached\n" % (len(writes) - len(shown), TASK_BOUND)}]
    assert reads == [w.path for w in writes[:len(shown) + 1]]


def test_after_result_limit_entries_one_entry_counts_the_outputs_not_shown_and_nothing_more_is_read():
    writes = [write("p%d.txt" % i, b"new %d\n" % i) for i in range(7)]
    reads = []

    def read_old(path, limit):
        reads.append(path)
        return b"old\n"

    entries = content_diffs(writes, {w.path: Record(4) for w in writes}, frozenset(w.path for w in writes), read_old,
                            lambda w: w.content.data, str, limit=3)
    assert [e["after"] for e in entries[:3]] == ["new 0\n", "new 1\n", "new 2\n"]
    assert entries[3:] == [{"prepared": "diff skipped: 4 more output(s) written, not shown: result_limit is 3\n"}]
    assert reads == ["p0.txt", "p1.txt", "p2.txt"]


def test_the_built_in_stylesheet_is_one_line_naming_its_digest_in_every_page():
    page = Page()
    old, new = (render_markdown(b"# %s\n" % word, "a.md", page) for word in (b"Old", b"New"))
    [entry] = diffs([write("a.html", new)], {"a.html": old})[0]
    for text in (entry["before"], entry["after"]):
        assert BUILTIN_STYLESHEET not in text and text.count(STYLESHEET_NOTE) == 1
    assert len(entry["after"]) < len(new) - 3000
    assert entry["before"].replace("Old", "New").replace("old", "new") == entry["after"]


def test_a_stylesheet_that_changed_shows_in_full_against_the_note():
    old = b"<head><style>body{color:red}</style></head>\n"
    new = render_markdown(b"# New\n", "a.html", Page())
    [entry] = diffs([write("a.html", new)], {"a.html": old})[0]
    assert "body{color:red}" in entry["before"] and STYLESHEET_NOTE in entry["after"]


def test_a_page_carrying_the_notes_words_is_shown_as_it_is_beside_the_real_stylesheet():
    old = render_markdown(b"# Page\n", "a.md", Page())
    new = old.replace(BUILTIN_STYLESHEET.encode(), STYLESHEET_NOTE.encode())
    [entry] = diffs([write("a.html", new)], {"a.html": old})[0]
    assert BUILTIN_STYLESHEET in entry["before"] and entry["before"] != entry["after"]


PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.txt"}, {"match": "*.png"}]}


def memory(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


DEST = {"id": "archive", "storage": MEMORY_STORAGE}


def test_publish_diff_lists_outputs_first_then_content_diffs_of_what_it_writes(tmp_path):
    store = {}
    first = write_bundle(tmp_path / "v1", {"a.md": b"# One\n", "notes.txt": b"one\n", "logo.png": b"\x89PNG\0"},
                         created="2026-06-03T00:00:00Z")
    publish(first, PIPELINE, DEST, now=NOW, opener=memory(store))
    second = write_bundle(tmp_path / "v2", {"a.md": b"# Two\n", "notes.txt": b"two\n", "logo.png": b"\x89PNG\0\1"})
    before = dict(store)
    listing, *entries = publish(second, PIPELINE, DEST, check_mode=True, now=LATER, opener=memory(store),
                                diff_contents=True)["diff"]
    assert store == before
    assert "a.html" in listing["after"] and listing["before_header"] == "memory:/.distributor.json"
    by_path = {e["after_header"]: e for e in entries}
    assert sorted(by_path) == ["memory:/a.html", "memory:/logo.png", "memory:/notes.txt"]
    assert (by_path["memory:/notes.txt"]["before"], by_path["memory:/notes.txt"]["after"]) == ("one\n", "two\n")
    assert "<h1 id=\"one\">One</h1>" in by_path["memory:/a.html"]["before"]
    assert "<h1 id=\"two\">Two</h1>" in by_path["memory:/a.html"]["after"]
    assert "binary" in by_path["memory:/logo.png"]["prepared"]


def test_a_real_run_shows_the_content_it_replaced(tmp_path):
    store = {}
    publish(write_bundle(tmp_path / "v1", {"notes.txt": b"one\n"}, created="2026-06-03T00:00:00Z"), PIPELINE, DEST,
            now=NOW, opener=memory(store))
    result = publish(write_bundle(tmp_path / "v2", {"notes.txt": b"two\n"}), PIPELINE, DEST, now=LATER,
                     opener=memory(store), diff_contents=True)
    assert [(e["before"], e["after"]) for e in result["diff"][1:]] == [("one\n", "two\n")]
    assert store["notes.txt"] == b"two\n"


def test_without_diff_contents_the_diff_is_the_listing_alone(tmp_path):
    result = publish(write_bundle(tmp_path / "v1", {"notes.txt": b"one\n"}), PIPELINE, DEST, check_mode=True,
                     now=NOW, opener=memory({}))
    assert len(result["diff"]) == 1


def test_the_manifest_option_is_used_in_place_of_a_stale_manifest_json(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"notes.txt": b"one\n"})
    with open(os.path.join(bundle, "notes.txt"), "wb") as handle:
        handle.write(b"changed since the manifest was written\n")
    with pytest.raises(DistributorError) as stale:
        publish(bundle, PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}))
    assert stale.value.reason == "verification_failed"
    built = build_manifest(bundle, "reports.example", "2026-06-04T11:55:00Z").to_dict()
    result = publish(bundle, PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}), manifest_option=built)
    assert result["action"] == "publish" and result["state"]["source"]["manifest"] == built


def test_manifest_id_describes_the_bundle_as_it_is_now_as_distributor_manifest_would_write_it(tmp_path):
    """What the role's check passes in place of a manifest of every file (issue 41 item 1)."""
    bundle = write_bundle(tmp_path / "b", {"notes.txt": b"one\n"})
    with open(os.path.join(bundle, "notes.txt"), "wb") as handle:
        handle.write(b"changed since the manifest was written\n")
    result = publish(bundle, PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}), manifest_id="reports.example")
    wanted = ensure_manifest(bundle, manifest_id="reports.example", created=None, paths=None, check_mode=True)["manifest"]
    assert result["action"] == "publish" and result["state"]["source"]["manifest"] == wanted
    with pytest.raises(DistributorError) as both:
        publish(bundle, PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}), manifest_id="reports.example",
                manifest_option=wanted)
    assert both.value.reason == "invalid_config" and "manifest_id" in both.value.message


def test_a_manifest_cut_to_result_limit_is_refused_saying_how_to_publish_without_handing_it_on(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"a.txt": b"a\n", "b.txt": b"b\n"})
    whole = ensure_manifest(bundle, manifest_id="reports.example", created=None, paths=None, check_mode=True)["manifest"]
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}), manifest_option=dict(whole, files=whole["files"][:1]))
    assert caught.value.reason == "invalid_manifest"
    assert "does not match its files" in caught.value.message
    assert "give this publish manifest_id with the same id in place of manifest, or that task result_limit: -1" in caught.value.message


@pytest.mark.parametrize("field, value, words", [
    ("digest", "sha256:" + "0" * 64, ["manifest option", "digest", "does not match"]),
    ("files", [{"path": "../x", "sha256": "sha256:" + "0" * 64, "size": 1}], ["manifest option", "files[0].path"]),
    ("created", "yesterday", ["manifest option", "created"]),
])
def test_the_manifest_option_is_validated_like_manifest_json(tmp_path, field, value, words):
    bundle = write_bundle(tmp_path / "b", {"notes.txt": b"one\n"})
    with open(os.path.join(bundle, "manifest.json")) as handle:
        given = dict(json.load(handle), **{field: value})
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}), manifest_option=given)
    assert caught.value.reason == "invalid_manifest"
    for word in words:
        assert word in caught.value.message
